// Naive swiglu for the cuda backend: one thread per output element, blocks
// of THREADS, silu(gate) * up in fp32 and rounded to bf16 once. gate_up's
// row holds the gate's INTER values, then the up's; bf16 is handled as its
// bit patterns.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// EVOLVE-BLOCK-START
#define THREADS 256 // kevolve: tune 64 128 256 512 1024

__device__ __forceinline__ float bf(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

__global__ void swiglu_elems(const unsigned short *gu, unsigned short *out, long long rows,
                             long long inter)
{
    long long i = blockIdx.x * (long long)THREADS + threadIdx.x;
    if (i >= rows * inter) return;
    long long r = i / inter, c = i % inter;
    float g = bf(gu[r * 2 * inter + c]), u = bf(gu[r * 2 * inter + inter + c]);
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(g / (1.0f + expf(-g)) * u));
}
// EVOLVE-BLOCK-END

extern "C" int kv_launch(const kv_launch_args *a)
{
    long long rows = a->syms[0], inter = a->syms[2], n = rows * inter;
    if (n == 0) return 0;
    swiglu_elems<<<(unsigned)((n + THREADS - 1) / THREADS), THREADS, 0, (cudaStream_t)a->stream>>>(
        (const unsigned short *)a->tensors[0], (unsigned short *)a->tensors[1], rows, inter);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
