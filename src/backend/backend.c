/* The table of backends (see backend.h). A new backend is one folder under
 * src/backend with its two halves and its device list, and one row here. */
#include "backend/backend.h"
#include "runner/rdev.h"
#include "util/buf.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cpu_suffixes[] = {".c", NULL};
static const char *const cpu_libs[] = {"-lm", "-lpthread", NULL};
static const char *const opencl_suffixes[] = {".cl", NULL};
static const char *const opencl_cflags[] = {"-DCL_TARGET_OPENCL_VERSION=120", NULL};
static const char *const opencl_libs[] = {"-lOpenCL", "-lm", "-lpthread", NULL};
static const char *const cuda_suffixes[] = {".cu", ".cuh", NULL};

static const kv_backend table[] = {
    {
        .name = "cpu",
        .suffixes = cpu_suffixes,
        .caps = 0,
        .toolchain = KV_TOOLCHAIN_CC,
        .libs = cpu_libs,
        /* A thread pool winding down after a block; a few microseconds of
         * bookkeeping while inputs are shared. */
        .idle_floor_s = 0.003,
        .idle_per_gap = 0.05,
        .burst_floor_s = 0.0003,
        .per_burst = 0.05,
        /* The inputs the judge has just written sit in its caches, above
         * the DRAM bandwidth that sets the floor. */
        .roofline_slack = 0.2,
        .calib_bytes = 8u << 20,
        .torch_device = "cpu",
        .jdev_new = kv_jdev_cpu_new,
        .rdev_new = kv_rdev_cpu_new,
        .devices = kv_cpu_devices,
    },
    {
        .name = "opencl",
        .suffixes = opencl_suffixes,
        .caps = KV_CAP_STAGED | KV_CAP_DEVICE_CODE,
        .toolchain = KV_TOOLCHAIN_CC,
        .cflags = opencl_cflags,
        .libs = opencl_libs,
        /* PoCL's threads wind down for milliseconds after a block. */
        .idle_floor_s = 0.02,
        .idle_per_gap = 0.25,
        .burst_floor_s = 0.001,
        .per_burst = 0.1,
        .roofline_slack = 0.2,
        /* PoCL builds a kernel for each new launch shape at its first call. */
        .first_call_grace_s = 30,
        .calib_bytes = 8u << 20,
#ifdef KV_HAVE_OPENCL
        .jdev_new = kv_jdev_opencl_new,
        .rdev_new = kv_rdev_opencl_new,
        .devices = kv_opencl_devices,
#endif
        .not_built = "the opencl backend is not built into this binary (OpenCL headers and ICD "
                     "loader were not found at build time)",
    },
    {
        .name = "cuda",
        .suffixes = cuda_suffixes,
        .caps = KV_CAP_DEVICE_INPUTS | KV_CAP_RUNTIME_THREADS | KV_CAP_ARCH | KV_CAP_MEMCHECK |
                KV_CAP_DEVICE_REFERENCE | KV_CAP_GRAPH | KV_CAP_ARENA_PARTS | KV_CAP_IDLE_REPLY |
                KV_CAP_SWITCH | KV_CAP_TORCH_STANDARD,
        .toolchain = KV_TOOLCHAIN_NVCC,
        .helpers = "src/backend/cuda/judge_kernels.cu",
        .roofline_slack = 0.5,
        .calib_bytes = 256u << 20,
        .torch_device = "cuda",
        .visible_env = "CUDA_VISIBLE_DEVICES",
        .jdev_new = kv_jdev_cuda_new,
        .rdev_new = kv_rdev_cuda_new,
        .devices = kv_cuda_devices,
    },
};
#define N_TABLE (sizeof table / sizeof table[0])

const kv_backend *kv_backend_find(const char *name)
{
    for (size_t i = 0; name && i < N_TABLE; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

const kv_backend *kv_backend_at(size_t i)
{
    return i < N_TABLE ? &table[i] : NULL;
}

/* 1 when NAME ends with one of B's suffixes. */
static int has_suffix(const kv_backend *b, const char *name)
{
    for (const char *const *s = b->suffixes; name && s && *s; s++)
        if (kv_ends_with(name, *s)) return 1;
    return 0;
}

const kv_backend *kv_backend_for_path(const char *path)
{
    for (size_t i = 0; i < N_TABLE; i++)
        if (has_suffix(&table[i], path)) return &table[i];
    return &table[0];
}

int kv_backend_has(const kv_backend *b, unsigned caps)
{
    return b && (b->caps & caps) == caps;
}

const char *kv_backend_names(void)
{
    static char names[128];
    if (!names[0]) {
        size_t n = 0;
        for (size_t i = 0; i < N_TABLE && n < sizeof names; i++)
            n +=
                (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", table[i].name);
    }
    return names;
}

const char *kv_backend_source_for(const kv_backend *b, const char *const *names)
{
    for (const char *const *n = names; n && *n; n++)
        if (has_suffix(b, *n)) return *n;
    return NULL;
}

kv_jdev *kv_jdev_new(const kv_backend *b, int index, char **err)
{
    kv_jdev *d = b && b->jdev_new ? b->jdev_new() : NULL;
    if (!d) {
        *err = kv_strdup(b && b->not_built ? b->not_built : "unknown backend");
        return NULL;
    }
    d->backend = b;
    d->index = index;
    return d;
}

void kv_jdev_free(kv_jdev *b)
{
    if (!b) return;
    if (b->close) b->close(b);
    if (b->device) json_decref(b->device);
    free(b);
}

kv_rdev *kv_backend_rdev(const char *name, int index, char **err)
{
    return kv_rdev_new(kv_backend_find(name), index, err);
}

kv_rdev *kv_rdev_new(const kv_backend *b, int index, char **err)
{
    kv_rdev *d = b && b->rdev_new ? b->rdev_new() : NULL;
    if (!d) {
        *err = kv_strdup(b && b->not_built ? b->not_built : "unknown backend");
        return NULL;
    }
    d->name = b->name;
    d->visible_env = b->visible_env;
    d->index = index;
    return d;
}

int kv_arena_check(const kv_arena *a, size_t off, size_t n, kv_fail *err)
{
    if (off <= a->bytes && n <= a->bytes - off) return 0;
    kv_fail_set(err, KV_R_HARNESS_ERROR, "%zu bytes at %zu past an arena of %zu", n, off, a->bytes);
    return -1;
}

int kv_rdev_load_entry(const char *lib, void **so, kv_launch_fn *fn, const char *missing,
                       kv_fail *err)
{
    *so = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!*so) {
        kv_fail_set(err, KV_R_LOAD_ERROR, "%s", dlerror());
        return -1;
    }
    *fn = (kv_launch_fn)(uintptr_t)dlsym(*so, "kv_launch");
    if (!*fn) {
        kv_fail_set(err, KV_R_MISSING_ENTRY, "%s", missing);
        return -1;
    }
    return 0;
}

int kv_reply_fail(kv_rmsg_reply *reply, uint32_t call, kv_reason code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reply->detail, sizeof reply->detail, fmt, ap);
    va_end(ap);
    reply->code = code;
    reply->call = call;
    return -1;
}
