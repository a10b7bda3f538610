// qwen3_decode_attn for any shape, plainly: a warp per (sequence, token,
// q head), each lane holding head_dim / 32 of its dimensions (a strided
// share when 32 does not divide it, up to 256); for every row it may see
// the warp sums q . k across its lanes, keeps an online softmax and adds
// p v into each lane's share. The naive start is this; the fast seeds
// send the shapes they do not take here.
#ifndef QWEN3_DECODE_ATTN_GENERIC_CUH
#define QWEN3_DECODE_ATTN_GENERIC_CUH

#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

namespace qd_attn {

constexpr int MAX_PER_LANE = 8; // head_dim up to 256

__global__ void generic(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                        const int *free_rows, __nv_bfloat16 *o, int b_n, int q_n, int hq, int hkv,
                        int d, long long len)
{
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (warp >= (long long)b_n * q_n * hq) return;
    const int h = (int)(warp % hq), i = (int)((warp / hq) % q_n), b = (int)(warp / hq / q_n);
    const int g = hq / hkv;
    const long long first = len - free_rows[b] - q_n, n = first + i + 1;
    const __nv_bfloat16 *qr = q + warp * d;
    const __nv_bfloat16 *kr = k + ((long long)b * hkv + h / g) * len * d;
    const __nv_bfloat16 *vr = v + ((long long)b * hkv + h / g) * len * d;
    float qv[MAX_PER_LANE], acc[MAX_PER_LANE];
    for (int u = 0; u < MAX_PER_LANE; u++) {
        const int c = lane + 32 * u;
        qv[u] = c < d ? __bfloat162float(qr[c]) : 0.0f;
        acc[u] = 0.0f;
    }
    const float sc = rsqrtf((float)d);
    float m = -INFINITY, l = 0.0f;
    for (long long j = 0; j < n; j++) {
        float s = 0.0f;
        for (int u = 0; u < MAX_PER_LANE; u++) {
            const int c = lane + 32 * u;
            if (c < d) s += qv[u] * __bfloat162float(kr[j * d + c]);
        }
        for (int off = 16; off; off >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, off);
        s *= sc;
        const float mn = fmaxf(m, s), alpha = __expf(m - mn), p = __expf(s - mn);
        l = l * alpha + p;
        for (int u = 0; u < MAX_PER_LANE; u++) {
            const int c = lane + 32 * u;
            if (c < d) acc[u] = acc[u] * alpha + p * __bfloat162float(vr[j * d + c]);
        }
        m = mn;
    }
    for (int u = 0; u < MAX_PER_LANE; u++) {
        const int c = lane + 32 * u;
        if (c < d) o[warp * d + c] = __float2bfloat16(acc[u] / l);
    }
}

// Launches generic for the call A with THREADS threads a block.
static inline int launch_generic(const kv_launch_args *a, int threads)
{
    const int b_n = (int)a->syms[0], q_n = (int)a->syms[1], hq = (int)a->syms[2];
    const int hkv = (int)a->syms[3], d = (int)a->syms[4];
    if (d > 32 * MAX_PER_LANE || hkv < 1 || hq % hkv) return (int)cudaErrorInvalidValue;
    const long long warps = (long long)b_n * q_n * hq;
    generic<<<(unsigned)((warps * 32 + threads - 1) / threads), threads, 0,
              (cudaStream_t)a->stream>>>(
        (const __nv_bfloat16 *)a->tensors[0], (const __nv_bfloat16 *)a->tensors[1],
        (const __nv_bfloat16 *)a->tensors[2], (const int *)a->tensors[3],
        (__nv_bfloat16 *)a->tensors[4], b_n, q_n, hq, hkv, d, a->syms[5]);
    return (int)cudaGetLastError();
}

} // namespace qd_attn

#endif
