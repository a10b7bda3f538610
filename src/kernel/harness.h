/* The kernel harness: evaluates one candidate kernel of a built-in task on
 * one backend and returns the external-evaluator JSON,
 * {"metrics": {...}, "artifacts": {...}}.
 *
 * The caller's process only compiles (in parallel with other evaluations,
 * cached by source hash). The verdict comes from the judge (judge.h), a
 * forked child that never runs candidate code; the candidate runs in a
 * sandboxed runner process the judge starts, watches and kills. Correctness
 * and timing hold the device: in a run, the evaluator hands it out (the
 * job's slot channel), one job per device; then an exclusive flock on
 * $CACHE/device-BACKEND-N-HOST.lock keeps out other processes (waited for at most
 * limits.device_wait_s: "device busy"), so no two evaluations time on one
 * device at once.
 *
 * Verdicts: "correct" = 1 and combined_score = the weighted geometric mean
 * of speedups over the task's baseline (timed by the same judge in a runner
 * of its own, kept between evaluations: baseline.h), or "correct" = 0,
 * combined_score = 0 and artifacts.reason naming
 * why: compile_error, load_error, missing_entry, launch_failed,
 * stale_or_unwritten_output, async_work_outside_harness_stream,
 * input_modified, out_of_bounds, out_of_bounds_write, nan_or_inf_output,
 * wrong_result, result_cached_across_calls, nondeterministic,
 * wrong_on_held_out_shape, timed_output_wrong, faster_than_roofline,
 * timeout, "crash: SIGSEGV" (and other signals), and the CUDA errors by name
 * (illegal_address, misaligned_address, out_of_resources, out_of_memory,
 * ...). The list is kept once, as the enum kv_reason (runner/reason.h),
 * whose names these are. artifacts.reason_detail says where and how. */
#ifndef KV_KERNEL_HARNESS_H
#define KV_KERNEL_HARNESS_H

#include "util/eval_job.h"

#include <kevolve/task.h>

#include <jansson.h>
#include <stdint.h>

/* Evaluates the candidate JOB describes (util/eval_job.h). Returns 0 with
 * *RESULT (owned by the caller) whenever the candidate was judged, correct
 * or not; -1 with *ERR for usage errors and harness failures (unknown task
 * or backend, unreadable file, no compiler, no device: "no_device: no CUDA
 * device: ..."), a message for people that no code reads back. */
int kv_kernel_eval(const kv_job *job, json_t **result, char **err);

/* Lists BACKEND's devices from a worker child (a driver that crashes ends
 * only the child): a JSON array (owned) in *LIST, or -1 with *ERR ("no
 * CUDA device: ...", "the opencl backend is not built ..."). */
int kv_kernel_devices(const char *backend, json_t **list, char **err);

#endif
