// Naive rope for the cuda backend: one thread per pair (i, i + D/2) of a
// head's row, q's rows then k's, blocks of THREADS; the pair rotated in
// fp32 by the token's row of the table and rounded to bf16 once, in place
// (each thread reads its pair before writing it, so no thread reads what
// another wrote). bf16 is handled as its bit patterns.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// EVOLVE-BLOCK-START
#define THREADS 256 // kevolve: tune 64 128 256 512 1024

__device__ __forceinline__ float bf(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
__device__ __forceinline__ unsigned short to_bf(float f)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__global__ void rope_pairs(unsigned short *q, unsigned short *k, const unsigned short *cos_t,
                           const unsigned short *sin_t, const int *pos, long long tokens,
                           long long hq, long long hkv, long long d)
{
    long long h2 = d / 2, nq = tokens * hq * h2, n = nq + tokens * hkv * h2;
    long long p = blockIdx.x * (long long)THREADS + threadIdx.x;
    if (p >= n) return;
    bool isq = p < nq;
    long long e = isq ? p : p - nq, heads = isq ? hq : hkv;
    long long row = e / h2, i = e % h2, t = row / heads;
    unsigned short *r = (isq ? q : k) + row * d;
    const unsigned short *c = cos_t + (long long)pos[t] * d, *s = sin_t + (long long)pos[t] * d;
    float a = bf(r[i]), b = bf(r[i + h2]);
    r[i] = to_bf(a * bf(c[i]) - b * bf(s[i]));
    r[i + h2] = to_bf(b * bf(c[i + h2]) + a * bf(s[i + h2]));
}
// EVOLVE-BLOCK-END

extern "C" int kv_launch(const kv_launch_args *a)
{
    long long tokens = a->syms[0], hq = a->syms[1], hkv = a->syms[2], d = a->syms[3];
    long long n = tokens * (hq + hkv) * (d / 2);
    if (n == 0) return 0;
    rope_pairs<<<(unsigned)((n + THREADS - 1) / THREADS), THREADS, 0, (cudaStream_t)a->stream>>>(
        (unsigned short *)a->tensors[0], (unsigned short *)a->tensors[1],
        (const unsigned short *)a->tensors[2], (const unsigned short *)a->tensors[3],
        (const int *)a->tensors[4], tokens, hq, hkv, d);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
