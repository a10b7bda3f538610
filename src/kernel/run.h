/* The worker child's side of an evaluation: opens the device, loads the
 * candidate (and the baseline), runs the correctness trials on every
 * scenario and held-out shape, times the scenarios side by side with the
 * baseline, and sends the result (or the first failure) to the parent. */
#ifndef KV_KERNEL_RUN_H
#define KV_KERNEL_RUN_H

#include "kernel/compile.h"
#include "kernel/harness.h"

typedef struct kv_run_ctx {
    const kv_task *task;
    const kv_kernel_opts *opts;
    kv_backend_kind kind;
    const kv_compiled *cand;
    const kv_compiled *base; /* NULL: correctness only */
    const kv_compiled *ref;  /* the task's device reference, or NULL: the CPU's */
    uint64_t seed;
    int probe_only; /* open the device, report it, stop */
} kv_run_ctx;

/* Worker entry (kv_worker_run's FN); CTX is a kv_run_ctx. Reports through
 * kv_worker_result / kv_worker_fail. */
void kv_run_child(void *ctx);

#endif
