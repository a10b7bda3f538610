/* placeholder: replaced below */
#include "kernel/backend.h"
#include "util/buf.h"

static int cuda_open(kv_backend *b, char **err)
{
    (void)b;
    *err = kv_strdup("no CUDA device: not implemented yet");
    return -1;
}

kv_backend *kv_backend_cuda_new(void)
{
    kv_backend *b = kv_calloc(1, sizeof *b);
    b->kind = KV_BACKEND_CUDA;
    b->name = "cuda";
    b->open = cuda_open;
    return b;
}
