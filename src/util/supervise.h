/* The process supervisor behind kv_proc (see proc.h): a small process that
 * sits between kevolve and every program it runs, so that nothing the
 * program starts can outlive it.
 *
 * kevolve starts one supervisor per program. The supervisor is a child
 * subreaper (orphans of the program's tree, setsid and double forks
 * included, are reparented to it) with a parent-death signal, starts the
 * program, and when the program ends, its time limit passes, kevolve asks
 * (a byte on the control pipe) or kevolve dies (the parent-death signal, or
 * end of file on the control pipe), it freezes and kills every descendant
 * it has, found through /proc parent chains, until none is left. Then it
 * writes one record saying how the program ended and exits.
 *
 * The supervisor normally runs as its own small program (src/util/supervisor,
 * embedded in the library and started from a memfd); where that cannot be
 * executed, kv_supervise runs in a fork of the caller. It therefore calls
 * only async-signal-safe functions and never allocates with malloc. */
#ifndef KV_UTIL_SUPERVISE_H
#define KV_UTIL_SUPERVISE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What the supervisor is given. Descriptors 0, 1 and 2 are the program's
 * stdin, stdout and stderr, 3 .. 3+n_extra-1 its extra descriptors; the
 * control and status pipes lie above them. */
typedef struct kv_sup_args {
    const char *path;      /* resolved program */
    char *const *argv;     /* as given to the program */
    char *const *sh_argv;  /* "sh PATH ARGS...": for scripts without #! (ENOEXEC) */
    char *const *envp;     /* the program's environment */
    const char *cwd;       /* NULL: inherit */
    long memory_limit_mb;  /* RLIMIT_AS; 0: none */
    long cpu_limit_s;      /* RLIMIT_CPU; 0: none */
    long timeout_ms;       /* wall-clock limit from the supervisor's start; <= 0: none */
    int n_extra;           /* extra descriptors handed to the program */
    int ctl_fd, status_fd; /* control (read) and status (write) pipes */
    pid_t parent;          /* kevolve: its death ends everything */
} kv_sup_args;

/* Records on the status pipe, one write each (atomic: shorter than PIPE_BUF). */
enum {
    KV_SUP_STARTED = 1,  /* a: the program's pid */
    KV_SUP_START_FAILED, /* a: stage (below), b: errno */
    KV_SUP_ENDED         /* a: how (below), b: wait status, c: flags */
};
/* Stages of a start that failed. */
enum {
    KV_SUP_STAGE_STDIO = 1,
    KV_SUP_STAGE_CHDIR,
    KV_SUP_STAGE_RLIMIT,
    KV_SUP_STAGE_EXEC,
    KV_SUP_STAGE_SPAWN,     /* the supervisor could not create the process */
    KV_SUP_STAGE_SUPERVISOR /* the supervisor itself could not be executed */
};
/* How a program ended. */
enum {
    KV_SUP_END_EXITED = 1, /* b holds its wait status */
    KV_SUP_END_TIMED_OUT,
    KV_SUP_END_KILLED,     /* kevolve asked (a byte on the control pipe) */
    KV_SUP_END_PARENT_GONE /* kevolve died, or the supervisor was told to stop */
};
/* Flags of KV_SUP_ENDED. */
enum {
    KV_SUP_FLAG_SURVIVORS = 1 /* some descendants would not die within the limit */
};
/* The control byte that asks the supervisor to kill the program now. */
#define KV_SUP_KILL_BYTE 'K'
/* Control bytes that stop and restart the time limit's clock: the time
 * between them moves the limit later. */
#define KV_SUP_PAUSE_BYTE 'P'
#define KV_SUP_RESUME_BYTE 'R'
/* How long the supervisor keeps killing descendants that will not die
 * (uninterruptible sleep: a device driver tearing down a context). */
#define KV_SUP_KILL_LIMIT_S 10.0

typedef struct kv_sup_record {
    int32_t type, a, b, c;
} kv_sup_record;

/* Runs the supervisor described by A; never returns. */
_Noreturn void kv_supervise(const kv_sup_args *a);

/* The supervisor as a program: parses ARGV (written by kv_sup_argv) and
 * runs kv_supervise. Returns 2 when ARGV is not understood. */
int kv_sup_main(int argc, char **argv, char **envp);

/* Writes into OUT (room for N entries: A's argc + 14 at least) the argument
 * vector of the supervisor program for A, borrowing A's strings and writing
 * its numbers into NUMS (room for 192 bytes). Returns 0, or -1 when N is too
 * small. */
int kv_sup_argv(const kv_sup_args *a, char **out, size_t n, char *nums);

/* Freezes (SIGSTOP) and kills (SIGKILL) every descendant of this process,
 * found through the parent chains in /proc, sparing the N_SPARE processes in
 * SPARE and their descendants; reaps those that are its children, and
 * repeats until none is left or LIMIT_S seconds have passed. When the child
 * WATCH is reaped on the way, its wait status goes to *WATCH_STATUS and
 * *WATCH_REAPED is set (both may be NULL when WATCH is 0). Returns 0 when
 * none is left, -1 when some survived the limit. Without /proc it kills
 * only its own children. Async-signal-safe. */
int kv_sup_kill_descendants(const pid_t *spare, size_t n_spare, double limit_s, pid_t watch,
                            int *watch_status, int *watch_reaped);

#endif
