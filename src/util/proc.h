/* Child processes that can be trusted to end. kv_proc is the one path by
 * which kevolve starts a process (evaluators, kernel workers, compilers).
 *
 * Each program runs under its own supervisor (util/supervise.h): a small
 * process, child subreaper, with a parent-death signal. When the program
 * ends, passes its time limit, is killed through this API, or when kevolve
 * itself dies (kill -9 included), the supervisor freezes and kills every
 * descendant of the program, processes that called setsid or double-forked
 * included, and only then reports the end. So once kv_proc_poll reports the
 * end, nothing the program started exists any more.
 *
 * The program runs in its own process group, with resource limits, stdin
 * from /dev/null, its stdout and stderr captured without blocking the
 * caller, the extra descriptors of the spec at 3, 4, ... and no other, and
 * a scrubbed environment (no API keys or tokens).
 *
 * One budget is passed down: a program with a time limit gets
 * KEVOLVE_TIMEOUT (seconds, counted from its start) in its environment (the
 * external evaluators' interface), and a process that was given a budget of
 * its own (kv_proc_set_budget: the kernel worker, from its job) never gives
 * the programs it starts more than what is left of it (less a small reserve
 * so that it can still report), whatever their spec says. A caller may stop
 * a program's clock while it waits for something that is not its work (a
 * device another evaluation holds): kv_proc_pause_clock.
 *
 * Process-wide effects of the first kv_proc_start: SIGPIPE is ignored (when
 * it had its default action), SIGCHLD is no longer ignored, and the caller
 * becomes a child subreaper (Linux): should a supervisor be killed, the
 * program's processes come back to the caller, which kills them. */
#ifndef KV_UTIL_PROC_H
#define KV_UTIL_PROC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct kv_proc_spec {
    char *const *argv; /* argv[0] is looked up in PATH when it has no '/' */
    const char *cwd;   /* NULL: inherit */
    char *const
        *extra_env;       /* "NAME=value" entries added to the scrubbed environment; may be NULL */
    double timeout_s;     /* wall-clock limit; <= 0: none */
    long memory_limit_mb; /* RLIMIT_AS; 0: none */
    long cpu_limit_s;     /* RLIMIT_CPU; 0: none */
    size_t max_output;    /* bytes kept of each of stdout and stderr (the tail beyond is
                             dropped, the head kept); 0: 1 MiB */
    const int *fds;       /* descriptors handed to the program as 3, 4, ... (in order); the
                             caller keeps its own and closes them when it likes */
    int n_fds;            /* how many (at most KV_PROC_MAX_FDS) */
} kv_proc_spec;

#define KV_PROC_MAX_FDS 16

typedef enum kv_proc_end {
    KV_PROC_EXITED = 0, /* exit_code holds its status */
    KV_PROC_SIGNALED,   /* killed by signal `signal` (not by us) */
    KV_PROC_TIMED_OUT,  /* we killed the group at the time limit */
    KV_PROC_SPAWN_FAILED,
    KV_PROC_KILLED /* we killed the group on request (kv_proc_kill, kv_proc_free) */
} kv_proc_end;

typedef struct kv_proc kv_proc;

/* Starts a process. Returns NULL with a malloc'd message in *err when it
 * cannot be started (no such program, not executable, fork failed). Returns
 * once the program has been exec'd. */
kv_proc *kv_proc_start(const kv_proc_spec *spec, char **err);
/* Reads what is ready and checks for the end, waiting at most WAIT_MS
 * (negative: until something happens; it may return earlier). Returns 1
 * when the process has ended (and every process it started is gone), 0
 * while it runs. */
int kv_proc_poll(kv_proc *p, int wait_ms);
/* Blocks until the process ends (honouring the timeout). */
void kv_proc_wait(kv_proc *p);
/* Kills the program and everything it started, now. */
void kv_proc_kill(kv_proc *p);
/* File descriptors to watch with poll(2) for readiness (stdout, stderr);
 * returns how many were written into fds (at most 2; 0 after the end). */
int kv_proc_fds(const kv_proc *p, int fds[2]);
/* A descriptor that becomes readable (POLLIN) when the process has ended
 * (its supervisor's report), or -1 once the end has been seen. */
int kv_proc_exit_fd(const kv_proc *p);
/* The longest a caller may sleep without calling kv_proc_poll, in ms (0:
 * call it now), or -1 when there is no limit or the process has ended. The
 * time limit itself is enforced by the supervisor, whose report makes
 * kv_proc_exit_fd readable; this is the later moment at which kv_proc stops
 * waiting for a supervisor that does not answer. */
int kv_proc_ms_to_deadline(const kv_proc *p);

/* After the end: */
kv_proc_end kv_proc_how(const kv_proc *p);
int kv_proc_exit_code(const kv_proc *p); /* -1 unless EXITED */
int kv_proc_signal(const kv_proc *p);    /* 0 unless SIGNALED */
double kv_proc_seconds(const kv_proc *p);
const char *kv_proc_stdout(const kv_proc *p); /* NUL-terminated */
size_t kv_proc_stdout_len(const kv_proc *p);
const char *kv_proc_stderr(const kv_proc *p);
size_t kv_proc_stderr_len(const kv_proc *p);
/* Bytes of each stream dropped beyond max_output. */
size_t kv_proc_stdout_dropped(const kv_proc *p);
size_t kv_proc_stderr_dropped(const kv_proc *p);
/* The program's own pid (what /proc/PID describes; not its supervisor's);
 * it is also the id of its process group. */
pid_t kv_proc_pid(const kv_proc *p);
/* One line describing the end: "exit 0", "killed by signal SIGSEGV", "timed out after
 * 5.0 s", "killed (cancelled)"; "running" before the end. Owned by P. */
const char *kv_proc_describe(const kv_proc *p);
void kv_proc_free(kv_proc *p);

/* 1 when an environment variable name looks like a secret (…KEY, …TOKEN,
 * …SECRET, …PASSWORD, OPENAI_*, ANTHROPIC_*, …): such names never reach a child. */
int kv_env_is_secret(const char *name);

/* Gives this process a budget of SECONDS from now (<= 0: none): what it
 * starts from then on never gets more than what is left of it. */
void kv_proc_set_budget(double seconds);
/* Moves the budget SECONDS later (time spent waiting, not working). */
void kv_proc_extend_budget(double seconds);
/* Seconds left of this process's budget, or -1 when it has none. Never
 * below 0. */
double kv_proc_time_left(void);

/* Stops P's clock: its time limit does not run until kv_proc_resume_clock,
 * which moves the limit later by the time stopped. For a program waiting
 * on its caller (a device slot): the wait is not its time. */
void kv_proc_pause_clock(kv_proc *p);
void kv_proc_resume_clock(kv_proc *p);

/* For tests: 1 makes kv_proc_start run supervisors in a fork of the caller,
 * the fallback used where the supervisor program cannot be executed; 0
 * restores the default. */
void kv_proc_test_fork_supervisor(int on);

/* Convenience: runs SPEC to the end. Returns the finished process (free it),
 * or NULL with *err when it could not start. */
kv_proc *kv_proc_run(const kv_proc_spec *spec, char **err);

#endif
