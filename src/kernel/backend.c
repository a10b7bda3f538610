/* Backend selection and helpers shared by the backends (see backend.h). */
#include "kernel/backend.h"
#include "util/clock.h"
#include "util/buf.h"

#include <dirent.h>
#include <stdlib.h>
#include <time.h>

kv_backend *kv_backend_new(kv_backend_kind kind, char **err)
{
    kv_backend *b = NULL;
    switch (kind) {
    case KV_BACKEND_CPU:
        b = kv_backend_cpu_new();
        break;
    case KV_BACKEND_OPENCL:
        b = kv_backend_opencl_new();
        break;
    case KV_BACKEND_CUDA:
        b = kv_backend_cuda_new();
        break;
    default:
        break;
    }
    if (!b)
        *err = kind == KV_BACKEND_OPENCL
                   ? kv_strdup("the opencl backend is not built into this binary (OpenCL "
                               "headers and ICD loader were not found at build time)")
                   : kv_strdup("unknown backend");
    return b;
}

void kv_backend_free(kv_backend *b)
{
    if (!b) return;
    if (b->close) b->close(b);
    if (b->device) json_decref(b->device);
    free(b);
}

int kv_thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}
