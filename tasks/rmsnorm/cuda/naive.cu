// Naive rmsnorm and rmsnorm_add for the cuda backend: one block of THREADS
// threads per row, the sum of squares in fp32 reduced through shared
// memory, each element scaled and rounded to bf16 once. The fused task
// (five tensors) writes the residual sum rounded to bf16 and normalises
// that. bf16 is handled as its bit patterns.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// EVOLVE-BLOCK-START
#define THREADS 256 // kevolve: tune 64 128 256 512 1024
#define EPS 1e-6f

__device__ __forceinline__ float bf(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
__device__ __forceinline__ unsigned short to_bf(float f)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__global__ void rmsnorm_rows(const unsigned short *x, const unsigned short *res,
                             const unsigned short *w, unsigned short *y, unsigned short *rout,
                             long long h)
{
    __shared__ float red[THREADS];
    long long r = blockIdx.x;
    const unsigned short *src = x + r * h;
    if (res) {
        for (long long c = threadIdx.x; c < h; c += THREADS)
            rout[r * h + c] = to_bf(bf(x[r * h + c]) + bf(res[r * h + c]));
        __syncthreads();
        src = rout + r * h;
    }
    float ss = 0.0f;
    for (long long c = threadIdx.x; c < h; c += THREADS)
        ss += bf(src[c]) * bf(src[c]);
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float rstd = rsqrtf(red[0] / (float)h + EPS);
    for (long long c = threadIdx.x; c < h; c += THREADS)
        y[r * h + c] = to_bf(bf(src[c]) * rstd * bf(w[c]));
}
// EVOLVE-BLOCK-END

extern "C" int kv_launch(const kv_launch_args *a)
{
    bool fused = a->num_tensors == 5;
    const unsigned short *x = (const unsigned short *)a->tensors[0];
    const unsigned short *res = fused ? (const unsigned short *)a->tensors[1] : nullptr;
    const unsigned short *w = (const unsigned short *)a->tensors[fused ? 2 : 1];
    unsigned short *y = (unsigned short *)a->tensors[fused ? 3 : 2];
    unsigned short *rout = fused ? (unsigned short *)a->tensors[4] : nullptr;
    rmsnorm_rows<<<(unsigned)a->syms[0], THREADS, 0, (cudaStream_t)a->stream>>>(x, res, w, y, rout,
                                                                                a->syms[1]);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
