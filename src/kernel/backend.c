/* Backend selection (see backend.h). */
#include "kernel/backend.h"
#include "util/buf.h"

#include <stdlib.h>

static const char *not_built(kv_backend_kind kind)
{
    return kind == KV_BACKEND_OPENCL ? "the opencl backend is not built into this binary (OpenCL "
                                       "headers and ICD loader were not found at build time)"
                                     : "unknown backend";
}

kv_jdev *kv_jdev_new(kv_backend_kind kind, char **err)
{
    kv_jdev *b = kind == KV_BACKEND_CPU      ? kv_jdev_cpu_new()
                 : kind == KV_BACKEND_OPENCL ? kv_jdev_opencl_new()
                 : kind == KV_BACKEND_CUDA   ? kv_jdev_cuda_new()
                                             : NULL;
    if (!b) *err = kv_strdup(not_built(kind));
    return b;
}

void kv_jdev_free(kv_jdev *b)
{
    if (!b) return;
    if (b->close) b->close(b);
    if (b->device) json_decref(b->device);
    free(b);
}

kv_rdev *kv_rdev_new(kv_backend_kind kind, char **err)
{
    kv_rdev *b = kind == KV_BACKEND_CPU      ? kv_rdev_cpu_new()
                 : kind == KV_BACKEND_OPENCL ? kv_rdev_opencl_new()
                 : kind == KV_BACKEND_CUDA   ? kv_rdev_cuda_new()
                                             : NULL;
    if (!b) *err = kv_strdup(not_built(kind));
    return b;
}
