/* The judge: the process that decides a verdict and every number in it.
 * It runs in a forked child of `kevolve eval` (worker.h: a crash or a
 * sticky device error of the judge's own ends only that child) and never
 * loads candidate code: the candidate runs in a runner process
 * (runner_client.h) that holds only its inputs, outputs and workspace.
 *
 * The judge opens the device for itself, draws the inputs, computes the
 * reference, poisons the outputs, hands the runner the memory and asks it
 * for blocks of calls; it then reads the outputs and inputs with its own
 * eyes and checks them, and times each block with its own clock, from the
 * request to the reply. The baseline is timed the same way in a runner of
 * its own, never beside the candidate's (baseline.h keeps it between
 * evaluations). */
#ifndef KV_JUDGE_JUDGE_H
#define KV_JUDGE_JUDGE_H

#include "backend/backend.h"
#include "util/eval_job.h"

#include <kevolve/task.h>

/* Code the judge is handed, built by its worker (kernel/compile.h): the
 * shared object, and its build's key. */
typedef struct kv_judge_code {
    const char *lib_path;
    const char *key; /* or NULL */
} kv_judge_code;

typedef struct kv_judge_ctx {
    const kv_task *task; /* the task, its scenarios cut to the job's set */
    const kv_job *job;   /* quick, limits, screening (job->parent), ceiling */
    const kv_backend *backend;
    int device; /* the backend's device the judge and its runners open (bound, not yet held) */
    const kv_judge_code *cand;
    const kv_judge_code *base;    /* NULL: correctness only */
    const kv_judge_code *ref;     /* the task's device reference, or NULL: the CPU's */
    const kv_judge_code *helpers; /* the judge's helper kernels (the backend's), or NULL */
    const char *self_exe;         /* the kevolve binary, for the runners */
    /* The file that keeps the baseline's timings for the run (baseline.h),
     * or NULL: nothing kept (no Landlock). The judge reads it once it holds
     * the device and writes a baseline it timed before it lets go, so the
     * evaluations in flight together time it once, not each. */
    const char *baseline_path;
    const char *device_src; /* KV_CAP_DEVICE_CODE: a file with the candidate's device code */
    const char *base_device_src;
    int memcheck;          /* correctness only, the runner under compute-sanitizer memcheck */
    const char *sanitizer; /* MEMCHECK: compute-sanitizer, as the worker found it; NULL: none */
    uint64_t seed;
    const char *cache; /* where the device's lock lives (device_hold.h) */
    int slot_asked;    /* the job's device slot was asked for (judge_server.h), */
    double asked_at;   /* then (kv_now_s: the host's monotonic clock) */
} kv_judge_ctx;

/* Worker entry (kv_worker_run's FN); CTX is a kv_judge_ctx. Reports through
 * kv_worker_result / kv_worker_failure: the result holds "scenarios",
 * "held_out", "device", "isolation", "profile_seconds" and, when the
 * baseline was timed here, "baseline" (kept at CTX's baseline_path unless
 * the device reported errors; "baseline_not_kept" says why it was not). */
void kv_judge_main(void *ctx);

#endif
