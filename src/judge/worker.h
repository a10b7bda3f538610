/* Worker processes: the judge runs in a forked child of `kevolve eval`, so
 * that a crash, a hang or a sticky device error of the judge's own ends
 * only that child. The parent waits with a hard deadline and reads what the
 * child says over a pipe (one JSON object per line: the phase it is in, its
 * result, or why it failed). The candidate never runs in this child: it
 * runs in a runner process (runner.h) the child starts. */
#ifndef KV_JUDGE_WORKER_H
#define KV_JUDGE_WORKER_H

#include "runner/reason.h"

#include <jansson.h>
#include <stddef.h>

typedef struct kv_worker_outcome {
    int exit_code;       /* the child's exit status, -1 when it did not exit */
    int signal;          /* the signal that killed it, else 0 */
    int timed_out;       /* 1 when the parent killed it at the deadline */
    json_t *result;      /* what kv_worker_result sent, or NULL */
    int failed;          /* 1 when kv_worker_failure (or a handler) sent a failure */
    kv_reason fail_code; /* its code (read back from its name) */
    int fail_arg;        /* the code's variable part (a crash's signal or status) */
    char *fail_detail;   /* its detail, or NULL */
    json_t *fail_extra;  /* extra JSON it sent with the failure, or NULL */
    char *phase;         /* the last phase reported, or NULL */
    double seconds;
} kv_worker_outcome;

void kv_worker_outcome_clear(kv_worker_outcome *o);

/* Runs FN(CTX) in a child process (its own process group, stdout sent to
 * stderr, killed when the parent dies) and waits at most TIMEOUT_S seconds.
 * Returns 0 with OUT filled (whatever the child did), -1 when the child
 * could not be started (*ERR). */
int kv_worker_run(void (*fn)(void *ctx), void *ctx, double timeout_s, kv_worker_outcome *out,
                  char **err);

/* The client of a long-lived judge (judge_server.h): reads what the judge
 * says for this job on FD, as kv_worker_run reads its child, until the
 * judge closes it. The job waits in line from the start (its limit stands
 * still) until the judge says it waited; WAIT_CAP_S bounds that wait, and
 * TIMEOUT_S the rest. A judge past either is killed (OUT's timed_out).
 * Returns 0 with OUT filled, 1 when the judge closed FD without a word (it
 * never started the job: the caller judges it itself). */
int kv_worker_follow(int fd, double timeout_s, double wait_cap_s, kv_worker_outcome *out);

/* ---- In the child ---- */

/* Reports the phase it is in ("correctness decode trial 2"); used in the
 * messages of timeouts and crashes. */
void kv_worker_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The phase last reported ("" before any). */
const char *kv_worker_current_phase(void);
/* Says the child starts waiting for something that is not its work (its
 * device): the parent's limit on it stands still until kv_worker_waited,
 * which says the wait took SECONDS (its own budget moves by them). */
void kv_worker_waiting(void);
void kv_worker_waited(double seconds);
/* Sends the result (does not take ownership). */
void kv_worker_result(const json_t *result);
/* Sends a failure (CODE with its variable part ARG, which travel as the
 * code's stable name, "wrong_result" or "crash: SIGSEGV"; EXTRA: more
 * JSON, may be NULL, not taken; a formatted detail). The child then ends,
 * or a long-lived judge goes on to its next job: nothing follows it for
 * this one. */
void kv_worker_failure(kv_reason code, int arg, const json_t *extra, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* In a long-lived judge: what follows goes to FD (a client's channel; -1:
 * none). */
void kv_worker_serve(int fd);
/* A long-lived judge's crash handlers, as a worker child's. */
void kv_worker_serve_setup(void);

/* Name of signal SIG ("SIGSEGV"). */
const char *kv_worker_signal_name(int sig);
/* 1 inside a worker child. */
int kv_worker_in_child(void);

#endif
