// qwen3_decode_o's naive start: a thread per output, its dot product read
// one element at a time, rounded as o_proj rounds, the residual added.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// EVOLVE-BLOCK-START
__global__ void o_naive(const __nv_bfloat16 *attn, const __nv_bfloat16 *wo, const __nv_bfloat16 *res,
                        __nv_bfloat16 *out, long long tok, long long inner, long long hid)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= tok * hid) return;
    long long t = i / hid, n = i % hid;
    float s = 0.0f;
    for (long long k = 0; k < inner; k++)
        s += __bfloat162float(wo[n * inner + k]) * __bfloat162float(attn[t * inner + k]);
    float p = __bfloat162float(__float2bfloat16(s));
    out[i] = __float2bfloat16(__bfloat162float(res[i]) + p);
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    long long tok = a->syms[0], inner = a->syms[1], hid = a->syms[2];
    long long n = tok * hid;
    o_naive<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)a->stream>>>(
        (const __nv_bfloat16 *)a->tensors[0], (const __nv_bfloat16 *)a->tensors[1],
        (const __nv_bfloat16 *)a->tensors[2], (__nv_bfloat16 *)a->tensors[3], tok, inner, hid);
    return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
