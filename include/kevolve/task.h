/* kevolve's kernel task ABI: how a task describes its work and how a
 * candidate kernel is called. This header is public: candidate sources
 * include it (C, OpenCL host code, CUDA C++), and built-in tasks are
 * written against it.
 *
 * A TASK names its shape symbols (e.g. rows, cols), its tensors (name,
 * dtype, input or output, shape as a list of symbols), its scenarios (named
 * bindings of the symbols with a weight and tags such as "decode"), held-out
 * shapes used only for correctness, tolerances per dtype, a reference
 * computed in double precision on the CPU, and a roofline model (bytes that
 * must move, flops) per shape.
 *
 * A CANDIDATE is one source file for one backend that exports
 *
 *     int kv_launch(const kv_launch_args *args);      (extern "C" in CUDA)
 *
 * returning 0 on success. The harness owns every allocation, fills the
 * inputs, owns the stream or queue and the clock; the candidate only
 * computes, on the buffers it is given, on the queue it is given, and is
 * done (as far as the harness's queue is concerned) when it returns:
 *
 *   cpu     C, compiled with the system cc (-O2 -march=native -shared -fPIC).
 *           tensors[i] are host pointers. All work must be finished when
 *           kv_launch returns (threads joined). Each buffer is 64-byte aligned
 *           and followed closely by an unmapped guard page.
 *   opencl  One file holding both halves: the device code between
 *           `#ifdef __OPENCL_VERSION__` ... `#else`, built by the harness
 *           with clBuildProgram, and the host launcher after `#else` ...
 *           `#endif`, compiled as C and linked with -lOpenCL. tensors[i] are
 *           cl_mem; `stream` is the harness's cl_command_queue (in order,
 *           profiling enabled); `cl_kernel(args, "name")` returns a kernel of
 *           the harness-built program. Enqueue on that queue only; the
 *           harness waits for it.
 *   cuda    CUDA C++ compiled by nvcc for the detected architecture
 *           (sm_90a on Hopper) into a shared object. tensors[i] are device
 *           pointers; `stream` is the harness's cudaStream_t (a CUstream of
 *           the device's primary context). Launch on that stream only.
 *           On failure return the CUDA runtime's error (cudaGetLastError()
 *           or the failing call's cudaError_t): the harness names it
 *           (out_of_memory, out_of_resources, misaligned_address, ...).
 *           The include path holds this header and the task headers
 *           (tasks/T/cuda/NAME.cuh as <T/cuda/NAME.cuh>).
 *
 * Work left running elsewhere (another thread, queue or stream), outputs not
 * fully written, modified inputs, results cached across calls, writes past a
 * buffer, answers right only on the published shapes, non-determinism and
 * times faster than the roofline allows are all detected and rejected.
 */
#ifndef KEVOLVE_TASK_H
#define KEVOLVE_TASK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KV_TASK_ABI_VERSION 2
#define KV_MAX_TENSORS 16 /* tensors per task (in-out tensors count twice in the judge) */
#define KV_MAX_SYMS 8     /* shape symbols per task */
#define KV_MAX_RANK 4     /* dimensions per tensor */

typedef enum kv_dtype { KV_F32 = 0, KV_F16, KV_BF16, KV_I32, KV_DTYPE_COUNT } kv_dtype;

/* What the candidate's kv_launch receives. */
typedef struct kv_launch_args {
    uint32_t abi_version; /* KV_TASK_ABI_VERSION */
    uint32_t num_tensors;
    /* In the task's tensor order: host pointers (cpu), cl_mem (opencl),
     * device pointers (cuda). */
    void *tensors[KV_MAX_TENSORS];
    uint32_t num_syms;
    int64_t syms[KV_MAX_SYMS]; /* the shape's symbol values, in the task's symbol order */
    void *stream;              /* cuda: cudaStream_t; opencl: cl_command_queue; cpu: NULL */
    void *context;             /* cuda: CUcontext; opencl: cl_context; cpu: NULL */
    void *device;              /* opencl: cl_device_id; else NULL */
    /* opencl: the kernel NAME of the program the harness built from the
     * candidate's device code (a cl_kernel), or NULL; else NULL. */
    void *(*cl_kernel)(const struct kv_launch_args *args, const char *name);
    void *harness; /* private to the harness */
} kv_launch_args;

/* The candidate's entry point: 0 on success, anything else is a failure. */
typedef int (*kv_launch_fn)(const kv_launch_args *args);

/* ---- Task description (used by the harness and built-in tasks) ---- */

/* KV_INOUT: read and written in place (rope rotates q and k where they
 * are). The judge keeps a hidden copy of its values as drawn, which the
 * candidate is never given: each call starts from it, the reference reads
 * it (REFERENCE gets the tensor's array filled with those values and
 * writes the answer over them), and the tensor is checked as an output.
 * A task with in-out tensors has a CPU reference only (no reference_cuda)
 * and at most KV_MAX_TENSORS tensors with their copies. */
typedef enum kv_tensor_role { KV_IN = 0, KV_OUT = 1, KV_INOUT = 2 } kv_tensor_role;

typedef struct kv_tensor_spec {
    const char *name;
    kv_dtype dtype;
    kv_tensor_role role;
    int rank;
    int shape[KV_MAX_RANK]; /* indices into kv_task.syms, outermost first */
    /* KV_I32 inputs that index a dimension (positions into a table, rows
     * to gather): 1 + that symbol's index in kv_task.syms, and every
     * element is drawn uniformly from [0, the symbol's value). 0: drawn
     * from the numeric distributions as any input. */
    int index_of;
} kv_tensor_spec;

/* A shape: a binding of every symbol. As a scenario it is timed and scored
 * with WEIGHT; as a held-out shape it is only checked for correctness. */
typedef struct kv_shape {
    const char *name;
    int64_t syms[KV_MAX_SYMS];
    double weight;    /* scenarios: weight in the geometric mean (> 0) */
    const char *tags; /* comma-separated: "decode", "prefill", ... */
} kv_shape;

/* An output element is right when
 *
 *     |out - ref| <= atol + rtol * |ref| + stol * scale
 *
 * where SCALE is a non-negative per-element error scale the task's
 * reference_scale provides (0 when the task provides none; a task that sets
 * stol must set reference_scale). It admits a kernel's roundings of
 * intermediate values whose error is proportional to a magnitude other than
 * |ref|: attention rounding its softmax weights p to bf16 before p.v errs by
 * a sum of independent terms p_j d_j v_j (|d_j| <= 2^-8), whose spread is
 * sqrt(sum p^2 v^2) / sum p, which positive and negative v that cancel make
 * much larger than |ref|. Designated initialisers leave stol at 0. */
typedef struct kv_tolerance {
    double atol;
    double rtol;
    double stol; /* scale tolerance: per unit of reference_scale's scale */
} kv_tolerance;

/* Work a shape needs at the least: the floor of its time on a machine. */
typedef struct kv_roofline {
    double bytes; /* that must move to or from memory */
    double flops;
} kv_roofline;

typedef struct kv_task {
    const char *name;
    const char *description;
    int num_syms;
    const char *syms[KV_MAX_SYMS];
    int num_tensors;
    kv_tensor_spec tensors[KV_MAX_TENSORS];
    int num_scenarios;
    const kv_shape *scenarios;
    int num_held_out;
    const kv_shape *held_out;
    kv_tolerance tol[KV_DTYPE_COUNT];
    /* Computes the outputs in double precision. TENSORS[i] holds tensor i's
     * elements as doubles (inputs filled, already rounded to their dtype;
     * outputs to be written), row-major. */
    void (*reference)(const int64_t *syms, double *const *tensors);
    /* Optional (NULL: every scale is 0). Computes the outputs exactly as
     * reference does (the same values, bit for bit) and also, for each
     * output tensor i, SCALES[i][k] >= 0: output element k's error scale,
     * the magnitude that kv_tolerance's stol multiplies. SCALES[i] is NULL
     * for inputs. When set, the harness calls it instead of reference. */
    void (*reference_scale)(const int64_t *syms, double *const *tensors, double *const *scales);
    kv_roofline (*roofline)(const int64_t *syms);
    /* The embedded baseline sources, one per backend the task runs on,
     * NULL-terminated; a backend takes the one whose suffix is its own
     * (".c" cpu, ".cl" opencl, ".cu" cuda), so the task does not depend on
     * how many backends there are. */
    const char *const *baselines;
    /* Optional: name of an embedded CUDA source that computes what
     * reference_scale computes (required with it), in double precision on
     * the GPU, for shapes too big for the CPU's reference. Its kv_launch gets
     * the task's tensors in order, each output as a double buffer of the
     * same shape, followed by each output's error scales (double). The cuda
     * backend uses it for scenarios; held-out shapes get both references,
     * and a disagreement fails the evaluation as a harness error. */
    const char *reference_cuda;
    /* Optional: the kind of call a shape is, as a C expression over the
     * shape's symbols s[0 .. num_syms) (an int64_t array, in the task's
     * symbol order) that yields one of the scenarios' first tags, e.g.
     * "s[3] == 1 ? \"decode\" : \"prefill\"". A library exported from a
     * run (kevolve export) sends a call to the nearest scenario of its kind.
     * NULL: every shape is of one kind. */
    const char *kind_of;
    /* Optional (0: 0.95): screening's threshold, the least fraction of its
     * parent's speed on the representative scenarios that a child needs to
     * be timed on the rest (how noisy the task's timings are decides it);
     * evaluator.screen_keep in a config overrides it. */
    double screen_keep;
    /* Optional: what a caller of an exported library needs beyond the
     * description to get the same answers, in plain text: the formula,
     * constants (scale, eps), alignment rules and how each tensor is laid
     * out. The export's header prints it under the entry point. */
    const char *maths;
    /* Optional: for a symbol that no input's shape holds (the bound below
     * which the judge draws an index input, say), a C expression over the
     * shape's symbols s[0 .. num_syms) that gives its value from the
     * others, so that an exported operator can tell it from its arguments
     * (kevolve export --torch). For such a bound it is the loosest any
     * call may take; a shape of the judge's may bind it tighter (a full
     * cache when timed), never looser. NULL: the symbol is in an input's
     * shape. */
    const char *derived[KV_MAX_SYMS];
} kv_task;

#ifdef __cplusplus
}
#endif

#endif
