/* The kernel harness: evaluates one candidate kernel of a built-in task on
 * one backend and returns the external-evaluator JSON,
 * {"metrics": {...}, "artifacts": {...}}.
 *
 * The caller's process only compiles (in parallel with other evaluations,
 * cached by source hash). The verdict comes from the judge (judge.h), a
 * forked child that never runs candidate code; the candidate runs in a
 * sandboxed runner process the judge starts, watches and kills. Correctness
 * and timing hold an exclusive flock on $CACHE/gpu.lock (waited for at most
 * lock_wait_s: "device busy"), so concurrent evaluations never time at once.
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
 * ...). artifacts.reason_detail says where and how. */
#ifndef KV_KERNEL_HARNESS_H
#define KV_KERNEL_HARNESS_H

#include <kevolve/task.h>

#include <jansson.h>
#include <stdint.h>

typedef struct kv_kernel_opts {
    const char *task; /* built-in task name */
    kv_backend_kind backend;
    const char *candidate;     /* path of the candidate source */
    int stage;                 /* 0: everything; 1: correctness only (combined_score = correct);
                                  2: correctness and timing; 3: cuda compute-sanitizer memcheck */
    int quick;                 /* fewer trials and repetitions (tests, smoke runs) */
    double kernel_timeout_s;   /* the judge's limit per call; default 10 (quick: 5) */
    double total_timeout_s;    /* whole worker; default 900 */
    const char *cache_dir;     /* NULL: kv_cache_dir_default() */
    const char *arch;          /* cuda: "sm_90a"; NULL: detected */
    double ceiling_gbps;       /* > 0: overrides the device's bandwidth ceiling (tests) */
    int cpu_reference;         /* use the task's CPU reference even where it has a device one */
    uint64_t seed;             /* inputs; 0: from the clock (fresh every evaluation) */
    const char *self_exe;      /* the kevolve binary the runners re-execute; NULL:
                                  $KEVOLVE_BINARY, else /proc/self/exe */
    double baseline_max_age_s; /* a kept baseline older than this is timed again (900) */
    int fresh_baseline;        /* time the baseline now, whatever is kept */
    double lock_wait_s;        /* longest wait for the device lock (600) */
    /* Screening: with the parent's metrics (a file of its metrics object, as
     * $KEVOLVE_PARENT_METRICS names), the judge times one scenario of each
     * class first and stops a child slower than SCREEN_KEEP (0.95) times its
     * parent there: its combined_score is then the parent's times that
     * ratio, and metrics.screened_out 1. NULL: every scenario. */
    const char *parent_metrics;
    double screen_keep;
    int compile_only; /* compile and hash the candidate, judge nothing (with ARCH set, no
                         device is needed for cuda) */
} kv_kernel_opts;

void kv_kernel_opts_init(kv_kernel_opts *o);

/* Evaluates the candidate. Returns 0 with *RESULT (owned by the caller)
 * whenever the candidate was judged, correct or not; -1 with *ERR for
 * usage errors and harness failures (unknown task, unreadable file, no
 * compiler, no device: "no CUDA device: ..."). */
int kv_kernel_eval(const kv_kernel_opts *o, json_t **result, char **err);

/* "cpu", "opencl", "cuda". */
const char *kv_backend_kind_name(kv_backend_kind k);
/* Parses a backend name; returns 0 or -1. */
int kv_backend_kind_parse(const char *name, kv_backend_kind *out);
/* The backend a file's extension implies: .cu cuda, .cl opencl, else cpu. */
kv_backend_kind kv_backend_kind_for_path(const char *path);

/* Opens BACKEND in a worker child and reports its device ({"name",...} in
 * *INFO, owned). Returns 0 when a device is usable, -1 with *ERR ("no CUDA
 * device: ...", "no OpenCL platform: ...") otherwise. */
int kv_kernel_probe(kv_backend_kind backend, json_t **info, char **err);

#endif
