/* A long-lived judge per device: one process that serves the children of a
 * run one after another, each candidate still in a runner of its own, and
 * keeps what every child would otherwise pay for again: the device's
 * context and the judge's kernels, the task's reference, the slab of
 * arenas, the clock's calibration and the device's bandwidth (both taken
 * before any candidate's code was loaded). It keeps no input and no
 * reference: every child's correctness inputs, held-out shapes and timed
 * blocks are drawn for it alone, so none can be answered in advance by an
 * earlier child. Nothing it keeps is ever mapped into a runner but the
 * slab: a part is canaries again when it is given back, and after each
 * runner the judge counts the bytes outside the parts in use that are not
 * canaries (a write beyond what it was given fails that child) and makes
 * every byte a canary again. The runner's sandbox (sandbox.h) leaves the
 * candidate nothing else that outlives its process. *
 * The evaluator starts it (`kevolve __judge_server`, one per device in
 * rotation) and hands it, over its control channel, one end of a socket
 * pair per job; the job's worker holds the other (the job's judge_fd). The
 * worker sends its job there once compiled, with its device-slot channel,
 * and asks for the device: the judge starts the job's runner at once and
 * serves the jobs in the order the evaluator grants the device. It answers
 * each as a worker child does (worker.h). A verdict that fails the
 * candidate unwinds the job and the judge goes on; one that may leave the
 * judge itself in doubt (a harness error, a device error, a crash of its
 * own) ends it, and the evaluator starts another. A job the judge never
 * started (it ended first) is judged by its worker as before. */
#ifndef KV_JUDGE_JUDGE_SERVER_H
#define KV_JUDGE_JUDGE_SERVER_H

#include "judge/judge.h"
#include "judge/worker.h"

/* `kevolve __judge_server`: serves the jobs whose channels come over
 * CONTROL_FD until it closes. Returns the exit status. */
int kv_judge_server_main(int control_fd);

/* What a long-lived judge's kept state (the device's context, the
 * reference, the slab, the calibration) was made for: the jobs whose keys
 * are equal, field by field, share it; a job of another key has the judge
 * drop it first. */
typedef struct kv_judge_key {
    const char *run_dir; /* the run's folder, or NULL */
    const char *backend;
    int device;
    const char *task;
    const char *scenario_set; /* "all" or the hash of the names (eval.c's set_key) */
    int quick;
    double call_s; /* limits.call_s */
    int cpu_reference;
    const char *reference; /* the device reference's build key, or NULL: none */
    const char *helpers;   /* the judge's kernels' build key, or NULL: none */
    const char *self_exe;  /* the binary the runners run, or NULL */
} kv_judge_key;

/* A worker's side: hands CTX's job (KEY: what the judge keeps for it) to
 * the judge on the job's judge_fd and follows it as kv_worker_follow does.
 * Returns 0 with *W filled; 1 when the judge did not take the job (nothing
 * of it ran: the caller judges it itself). */
int kv_judge_ask_server(const kv_judge_ctx *ctx, const kv_judge_key *key, double timeout_s,
                        kv_worker_outcome *w);

#endif
