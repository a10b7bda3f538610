/* The interface every backend (cpu, opencl, cuda) implements for the
 * harness: open a device, load a compiled candidate, allocate buffers with
 * canaries (and guard pages on the cpu), move data, launch on the harness's
 * stream, synchronise the stream or the whole device, and time one launch.
 * All of it runs inside the worker child. Functions that can fail return 0
 * or -1 with *ERR set to "code: detail", where code names the failure
 * ("illegal_address", "out_of_memory", "launch_failed", ...). */
#ifndef KV_KERNEL_BACKEND_H
#define KV_KERNEL_BACKEND_H

#include "kernel/compile.h"
#include "util/clock.h"

#include <kevolve/task.h>

#include <jansson.h>
#include <stddef.h>

typedef struct kv_dbuf {
    void *handle;     /* what goes into kv_launch_args.tensors */
    size_t bytes;     /* usable size */
    void *priv;       /* backend's own */
    const char *name; /* tensor name (static) */
} kv_dbuf;

/* A loaded candidate: its shared object and entry, plus the backend's own
 * state (the OpenCL program and kernels). */
typedef struct kv_module {
    void *so;
    kv_launch_fn fn;
    void *priv;
} kv_module;

typedef struct kv_backend kv_backend;
struct kv_backend {
    kv_backend_kind kind;
    const char *name;
    void *state;
    /* Device facts, filled by open: the bandwidth used for roofline
     * fractions, the fastest any kernel could plausibly reach (the floor
     * uses it), and the size of the last-level cache to outsize. */
    double bandwidth_gbps;
    double ceiling_gbps;
    size_t cache_bytes;
    json_t *device; /* {"name":..., ...} */
    int use_graph;  /* cuda: time by replaying a captured CUDA graph (set before timing) */

    int (*open)(kv_backend *b, char **err);
    void (*close)(kv_backend *b);
    /* Loads C; fills *BUILD_LOG (malloc'd, may be NULL) with a device build
     * log; on a device compile error returns -1 with "compile_error: ...". */
    int (*load)(kv_backend *b, const kv_compiled *c, kv_module **out, char **build_log, char **err);
    void (*unload)(kv_backend *b, kv_module *m);
    int (*alloc)(kv_backend *b, size_t bytes, const char *name, kv_dbuf *out, char **err);
    void (*release)(kv_backend *b, kv_dbuf *buf);
    int (*write)(kv_backend *b, kv_dbuf *buf, const void *src, char **err);
    int (*read)(kv_backend *b, kv_dbuf *buf, void *dst, char **err);
    /* 1 when the canaries around BUF are intact. */
    int (*canary_ok)(kv_backend *b, kv_dbuf *buf, char **err);
    /* Calls the candidate's entry with A (the backend fills stream, context,
     * device, cl_kernel). Returns 0, or -1 with *ERR (the candidate's own
     * non-zero return is "launch_failed: kv_launch returned N"). */
    int (*launch)(kv_backend *b, kv_module *m, kv_launch_args *a, char **err);
    int (*sync_stream)(kv_backend *b, char **err);
    int (*sync_device)(kv_backend *b, char **err);
    /* Launches once and returns its time in microseconds, measured by the
     * device's own clock where there is one, with device-wide sync. */
    int (*time_launch)(kv_backend *b, kv_module *m, kv_launch_args *a, double *us, char **err);
    /* Evicts the caches (writes a buffer larger than the cache); may be NULL. */
    int (*flush)(kv_backend *b, char **err);
    /* Extra readings for the benchmark record (NVML), or NULL. */
    json_t *(*telemetry)(kv_backend *b);
};

/* The backend of KIND, ready for open, or NULL with *ERR when it is not
 * built into this binary. Free with kv_backend_free (closes it). */
kv_backend *kv_backend_new(kv_backend_kind kind, char **err);
void kv_backend_free(kv_backend *b);

kv_backend *kv_backend_cpu_new(void);
kv_backend *kv_backend_opencl_new(void); /* NULL when not built */
kv_backend *kv_backend_cuda_new(void);

/* Threads of this process now (/proc/self/task), -1 when unknown. */
int kv_thread_count(void);

#endif
