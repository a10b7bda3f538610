// The judge's own kernels on the cuda backend (never the candidate's): they
// write a timed block's inputs on the device inside the judge's timed
// window, and check a block's outputs and inputs without copying them to
// the host. Compiled by the harness like a task's reference and loaded into
// the judge, which runs them on its own stream of the primary context.
//
// Inputs are N(0, 1) values that are a pure function of (seed, index): a
// counter-based hash (splitmix64) gives two uniforms per element and the
// Box-Muller transform a normal, rounded to the tensor's dtype. So the
// judge can tell later, by generating again, whether an input changed.
#include <kevolve/task.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

static __device__ __forceinline__ uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// The value element I gets from SEED, before rounding to the dtype.
static __device__ __forceinline__ float normal_at(uint64_t seed, uint64_t i)
{
    uint64_t h = mix64(seed ^ ((i + 1) * 0x9e3779b97f4a7c15ull));
    float u1 = ((uint32_t)(h >> 40) + 1u) * (1.0f / 16777217.0f); // (0, 1]
    float u2 = (uint32_t)(h & 0xffffffu) * (1.0f / 16777216.0f);  // [0, 1)
    return sqrtf(-2.0f * __logf(u1)) * __cosf(6.2831853f * u2);
}

// The bits element I of dtype DT holds (16 or 32 bits).
static __device__ __forceinline__ uint32_t bits_at(int dt, uint64_t seed, uint64_t i)
{
    float v = normal_at(seed, i);
    switch (dt) {
    case KV_F32:
        return __float_as_uint(v);
    case KV_F16:
        return __half_as_ushort(__float2half_rn(v));
    case KV_BF16:
        return __bfloat16_as_ushort(__float2bfloat16_rn(v));
    default: // KV_I32: integers carrying the spread, as the host's fill does
        return (uint32_t)(int32_t)rintf(v * 8.0f);
    }
}

__global__ void gen_kernel(void *p, int dt, uint64_t n, uint64_t seed)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t b = bits_at(dt, seed, i);
        if (dt == KV_F16 || dt == KV_BF16)
            ((uint16_t *)p)[i] = (uint16_t)b;
        else
            ((uint32_t *)p)[i] = b;
    }
}

// res[0]: how many elements match (EQUAL) or differ (!EQUAL) from the
// reference bits; res[1]: the smallest such index.
__global__ void count_kernel(const void *p, int esize, uint64_t n, uint32_t pattern, int dt,
                             uint64_t seed, int equal, unsigned long long *res)
{
    unsigned long long mine = 0, first = ~0ull;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t got = esize == 2 ? ((const uint16_t *)p)[i] : ((const uint32_t *)p)[i];
        uint32_t want = equal ? pattern : bits_at(dt, seed, i);
        if ((got == want) == (equal != 0)) {
            mine++;
            if (i < first) first = i;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        mine += __shfl_xor_sync(0xffffffffu, mine, o);
        unsigned long long f = __shfl_xor_sync(0xffffffffu, first, o);
        first = f < first ? f : first;
    }
    if ((threadIdx.x & 31) == 0 && mine) {
        atomicAdd(&res[0], mine);
        atomicMin(&res[1], first);
    }
}

static int grid_for(uint64_t n)
{
    uint64_t g = (n + 255) / 256;
    return g > 4096 ? 4096 : (g ? (int)g : 1);
}

extern "C" int kvj_gen_normal(void *stream, void *p, int dt, unsigned long long n,
                              unsigned long long seed)
{
    gen_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(p, dt, n, seed);
    return (int)cudaGetLastError();
}

// RES: a device buffer of two counters, reset here.
static int count(void *stream, const void *p, int esize, unsigned long long n, uint32_t pattern,
                 int dt, unsigned long long seed, int equal, unsigned long long *res)
{
    cudaStream_t s = (cudaStream_t)stream;
    unsigned long long init[2] = {0, ~0ull};
    cudaMemcpyAsync(res, init, sizeof init, cudaMemcpyHostToDevice, s);
    count_kernel<<<grid_for(n), 256, 0, s>>>(p, esize, n, pattern, dt, seed, equal, res);
    return (int)cudaGetLastError();
}

extern "C" int kvj_count_equal(void *stream, const void *p, int esize, unsigned long long n,
                               unsigned int pattern, unsigned long long *res)
{
    return count(stream, p, esize, n, pattern, 0, 0, 1, res);
}

extern "C" int kvj_count_changed(void *stream, const void *p, int dt, unsigned long long n,
                                 unsigned long long seed, unsigned long long *res)
{
    int esize = dt == KV_F16 || dt == KV_BF16 ? 2 : 4;
    return count(stream, p, esize, n, 0, dt, seed, 0, res);
}
