// Helpers of the CUDA bench programs (gqa_flagship.cu, stream_floor.cu): error
// checks, bf16 conversions on the host, random bf16 inputs drawn on the GPU,
// and the timing of a CUDA graph of calls the way bench/gqa_sdpa.py times
// PyTorch.
#ifndef KV_BENCH_GQA_BENCH_CUH
#define KV_BENCH_GQA_BENCH_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// Exits with the failing call and CUDA's message.
#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// The float a bf16 bit pattern holds.
static inline float bf2f(unsigned short h)
{
    unsigned u = (unsigned)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

// F rounded to bf16, to nearest even (F finite).
static inline unsigned short f2bf(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

// p[i] = normal(0, SCALE^2) rounded to bf16, from a hash of (i, seed).
__global__ void fill_kernel(unsigned short *p, size_t n, unsigned long long seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long z = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
        z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
        z ^= z >> 29;
        float u1 = ((z & 0xffffff) + 1) / 16777217.0f, u2 = ((z >> 24) & 0xffffff) / 16777216.0f;
        float g = scale * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
        p[i] = __bfloat16_as_ushort(__float2bfloat16_rn(g));
    }
}

// Median over 5 rounds of the microseconds per call of GE, a graph of
// CALLS calls, each round REPS replays back to back on stream ST.
static double graph_median_us(cudaGraphExec_t ge, cudaStream_t st, int calls, int reps)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<double> t;
    for (int round = 0; round < 5; round++) {
        CK(cudaEventRecord(e0, st));
        for (int r = 0; r < reps; r++)
            CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1e3 / ((double)reps * calls));
    }
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return t[2];
}

#endif
