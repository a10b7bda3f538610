/* The harness's reason codes: why a candidate was rejected, or why the
 * harness could not judge it. Their names are a stable vocabulary (the
 * store keeps them in artifacts.reason; kernel/harness.h, docs/evaluation.md
 * and docs/threat-model.md list them): code passes the enum, and only a
 * process boundary that carries a name (the worker's JSON) reads one back.
 *
 * A failure that travels is a kv_fail: its code, the variable part some
 * codes carry (a crash's signal or exit status) and its detail, never a
 * "code: detail" string parsed again. Here, at the runner, because the
 * runner, the backends and the judge all speak it. */
#ifndef KV_RUNNER_REASON_H
#define KV_RUNNER_REASON_H

#include <stddef.h>

/* X(ID, "name"): every code once. The variable part of "crash: SIGSEGV"
 * (the signal) and "crash: exit 3" (the status) is kv_fail's ARG. */
#define KV_REASONS(X)                                                                              \
    /* the harness's own: the candidate was not judged */                                          \
    X(HARNESS_ERROR, "harness_error")                                                              \
    X(NO_DEVICE, "no_device")                                                                      \
    X(NOT_BUILT, "not_built")                                                                      \
    /* building and loading the candidate */                                                       \
    X(COMPILE_ERROR, "compile_error")                                                              \
    X(LOAD_ERROR, "load_error")                                                                    \
    X(MISSING_ENTRY, "missing_entry")                                                              \
    /* its runs */                                                                                 \
    X(LAUNCH_FAILED, "launch_failed")                                                              \
    X(TIMEOUT, "timeout")                                                                          \
    X(CRASH, "crash")                                                                              \
    X(CRASH_EXIT, "crash: exit")                                                                   \
    X(CAPTURE_UNSUPPORTED, "capture_unsupported")                                                  \
    X(MEMCHECK_ERROR, "memcheck_error")                                                            \
    /* the judge's checks */                                                                       \
    X(STALE_OR_UNWRITTEN_OUTPUT, "stale_or_unwritten_output")                                      \
    X(ASYNC_WORK_OUTSIDE_HARNESS_STREAM, "async_work_outside_harness_stream")                      \
    X(INPUT_MODIFIED, "input_modified")                                                            \
    X(OUT_OF_BOUNDS, "out_of_bounds")                                                              \
    X(OUT_OF_BOUNDS_WRITE, "out_of_bounds_write")                                                  \
    X(NAN_OR_INF_OUTPUT, "nan_or_inf_output")                                                      \
    X(WRONG_RESULT, "wrong_result")                                                                \
    X(RESULT_CACHED_ACROSS_CALLS, "result_cached_across_calls")                                    \
    X(NONDETERMINISTIC, "nondeterministic")                                                        \
    X(WRONG_ON_HELD_OUT_SHAPE, "wrong_on_held_out_shape")                                          \
    X(TIMED_OUTPUT_WRONG, "timed_output_wrong")                                                    \
    X(FASTER_THAN_ROOFLINE, "faster_than_roofline")                                                \
    /* device errors by name (CUDA's, OpenCL's) */                                                 \
    X(ILLEGAL_ADDRESS, "illegal_address")                                                          \
    X(MISALIGNED_ADDRESS, "misaligned_address")                                                    \
    X(OUT_OF_RESOURCES, "out_of_resources")                                                        \
    X(OUT_OF_MEMORY, "out_of_memory")                                                              \
    X(ILLEGAL_INSTRUCTION, "illegal_instruction")                                                  \
    X(LAUNCH_TIMEOUT, "launch_timeout")                                                            \
    X(HARDWARE_STACK_ERROR, "hardware_stack_error")                                                \
    X(INVALID_PC, "invalid_pc")                                                                    \
    X(DEVICE_ASSERT, "device_assert")                                                              \
    X(INVALID_CONFIGURATION, "invalid_configuration")                                              \
    X(CUDA_ERROR, "cuda_error")                                                                    \
    X(OPENCL_ERROR, "opencl_error")

typedef enum kv_reason {
#define KV_REASON_ENUM(id, name) KV_R_##id,
    KV_REASONS(KV_REASON_ENUM)
#undef KV_REASON_ENUM
        KV_R_COUNT
} kv_reason;

/* The stable name of R ("wrong_result"; "crash" and "crash: exit" without
 * their variable part); "harness_error" for a value outside the enum. */
const char *kv_reason_name(kv_reason r);
/* The code named NAME exactly; KV_R_HARNESS_ERROR for a name it does not
 * know (the documented fallback). */
kv_reason kv_reason_of(const char *name);
/* R as the store holds it into BUF (CAP bytes): its name, or for a crash
 * with its ARG, "crash: SIGSEGV" / "crash: exit 3". Returns BUF. */
const char *kv_reason_format(kv_reason r, int arg, char *buf, size_t cap);
/* The inverse of kv_reason_format, for a code read from another process:
 * TEXT's code, *ARG its variable part (0 for none); unknown text is
 * KV_R_HARNESS_ERROR. */
kv_reason kv_reason_parse(const char *text, int *arg);
/* R, or KV_R_HARNESS_ERROR where R (read from another process) lies
 * outside the enum. */
kv_reason kv_reason_valid(unsigned r);

/* A failure that travels: a code, its variable part, a detail (which does
 * not repeat the code). Zero-initialised: unset. Owns DETAIL. */
typedef struct kv_fail {
    kv_reason code;
    int arg;      /* KV_R_CRASH: the signal; KV_R_CRASH_EXIT: the exit status; else 0 */
    char *detail; /* malloc'd; NULL while unset */
} kv_fail;

#define KV_FAIL_INIT                                                                               \
    {                                                                                              \
        KV_R_HARNESS_ERROR, 0, NULL                                                                \
    }

/* Sets F to CODE and the formatted detail (a detail set before is freed).
 * Returns -1, for `return kv_fail_set(...)` in a function that fails. */
int kv_fail_set(kv_fail *f, kv_reason code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with DETAIL (malloc'd, taken; NULL: "unknown error"), as a
 * message from a function of util's, which does not name codes. */
int kv_fail_take(kv_fail *f, kv_reason code, char *detail);
/* Puts the formatted PREFIX and ": " before F's detail, its code kept. */
void kv_fail_prefix(kv_fail *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What a device's open (or a runner's start) ends in is "no_device" or
 * "harness_error": F's code is made OTHER unless it is one of those two,
 * its old code named before its detail ("cuda_error: cuCtxCreate ..."). */
void kv_fail_recode(kv_fail *f, kv_reason other);
/* F's detail, "" while unset. */
const char *kv_fail_detail(const kv_fail *f);
/* F unset again, its detail freed. */
void kv_fail_clear(kv_fail *f);

#endif
