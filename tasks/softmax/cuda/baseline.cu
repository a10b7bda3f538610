// Baseline softmax for the cuda backend: one block of 256 threads per row,
// block reductions in shared memory, exp computed twice.
#include <kevolve/task.h>
#include <cuda_runtime.h>
#include <math.h>

// EVOLVE-BLOCK-START
#define THREADS 256

__device__ float block_reduce(float v, float *red, bool is_max)
{
    int t = threadIdx.x;
    red[t] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = is_max ? fmaxf(red[t], red[t + s]) : red[t] + red[t + s];
        __syncthreads();
    }
    float r = red[0];
    __syncthreads();
    return r;
}

__global__ void softmax_rows(const float *x, float *y, long long rows, long long cols)
{
    __shared__ float red[THREADS];
    long long r = blockIdx.x;
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = -INFINITY;
    for (long long c = threadIdx.x; c < cols; c += THREADS)
        m = fmaxf(m, xr[c]);
    m = block_reduce(m, red, true);
    float sum = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += THREADS)
        sum += expf(xr[c] - m);
    sum = block_reduce(sum, red, false);
    for (long long c = threadIdx.x; c < cols; c += THREADS)
        yr[c] = expf(xr[c] - m) / sum;
}
// EVOLVE-BLOCK-END

extern "C" int kv_launch(const kv_launch_args *a)
{
    long long rows = a->syms[0], cols = a->syms[1];
    softmax_rows<<<(unsigned)rows, THREADS, 0, (cudaStream_t)a->stream>>>(
        (const float *)a->tensors[0], (float *)a->tensors[1], rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
