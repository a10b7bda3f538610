// Red team (cuda): the kernel never ends.
#include <kevolve/task.h>
#include <cuda_runtime.h>
#include <math.h>

__global__ void softmax_rows(const float *x, float *y, long long rows, long long cols)
{
    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = -INFINITY;
    for (long long c = 0; c < cols; c++)
        m = fmaxf(m, xr[c]);
    float s = 0.0f;
    for (long long c = 0; c < cols; c++)
        s += expf(xr[c] - m);
    for (long long c = 0; c < cols; c++)
        yr[c] = expf(xr[c] - m) / s;
}

/* Runs softmax_rows over ROWS rows on stream ST. */
static int run_rows(const void *x, void *y, long long rows, long long cols, cudaStream_t st)
{
    softmax_rows<<<(unsigned)((rows + 127) / 128), 128, 0, st>>>((const float *)x, (float *)y,
                                                                 rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

__global__ void forever(float *y)
{
    /* The compiler cannot prove the clock never goes backwards, so this loop
     * stays (a loop on a never-changing local was optimised away on sm_90a). */
    long long start = clock64();
    while (clock64() - start >= 0)
        y[0] = 0.0f;
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    forever<<<1, 1, 0, (cudaStream_t)a->stream>>>((float *)a->tensors[1]);
    return 0;
}
