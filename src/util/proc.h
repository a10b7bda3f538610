/* Child processes that can be trusted to end: each runs in its own process
 * group under a hard wall-clock limit that kills the whole group (SIGKILL),
 * with resource limits and a scrubbed environment (no API keys or tokens),
 * its stdout and stderr captured without blocking the caller.
 *
 * Process-wide effects of the first kv_proc_start: SIGPIPE is ignored (when
 * it had its default action), SIGCHLD is no longer ignored, and the caller
 * becomes a child subreaper (Linux), so that orphans of a group are
 * reparented to it and reaped when the group ends. */
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
} kv_proc_spec;

typedef enum kv_proc_end {
    KV_PROC_EXITED = 0, /* exit_code holds its status */
    KV_PROC_SIGNALED,   /* killed by signal `signal` (not by us) */
    KV_PROC_TIMED_OUT,  /* we killed the group at the time limit */
    KV_PROC_SPAWN_FAILED,
    KV_PROC_KILLED /* we killed the group on request (kv_proc_kill, kv_proc_free) */
} kv_proc_end;

typedef struct kv_proc kv_proc;

/* Starts a process. Returns NULL with a malloc'd message in *err when it
 * cannot be started (no such program, not executable, fork failed). */
kv_proc *kv_proc_start(const kv_proc_spec *spec, char **err);
/* Reads what is ready and checks the deadline, waiting at most WAIT_MS
 * (negative: until something happens; it may return earlier). Returns 1
 * when the process has ended (and its group has been reaped or killed), 0
 * while it runs. */
int kv_proc_poll(kv_proc *p, int wait_ms);
/* Blocks until the process ends (honouring the timeout). */
void kv_proc_wait(kv_proc *p);
/* Kills the whole group now (SIGKILL). */
void kv_proc_kill(kv_proc *p);
/* File descriptors to watch with poll(2) for readiness (stdout, stderr);
 * returns how many were written into fds (at most 2; 0 after the end). */
int kv_proc_fds(const kv_proc *p, int fds[2]);
/* A descriptor that becomes readable (POLLIN) when the process exits (a
 * pidfd), or -1 when the system has none or the process has ended. Without
 * it, callers must wake up now and then to notice an exit. */
int kv_proc_exit_fd(const kv_proc *p);
/* Milliseconds until the time limit (0 when passed), or -1 when there is
 * none or the process has ended: the longest a caller may sleep. */
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
/* The process id; it is also the id of its process group. */
pid_t kv_proc_pid(const kv_proc *p);
/* One line describing the end: "exit 0", "killed by signal SIGSEGV", "timed out after
 * 5.0 s", "killed (cancelled)"; "running" before the end. Owned by P. */
const char *kv_proc_describe(const kv_proc *p);
void kv_proc_free(kv_proc *p);

/* 1 when an environment variable name looks like a secret (…KEY, …TOKEN,
 * …SECRET, …PASSWORD, OPENAI_*, ANTHROPIC_*, …): such names never reach a child. */
int kv_env_is_secret(const char *name);

/* Convenience: runs SPEC to the end. Returns the finished process (free it),
 * or NULL with *err when it could not start. */
kv_proc *kv_proc_run(const kv_proc_spec *spec, char **err);

#endif
