// Red team (cuda): launches 1024 threads of a kernel that needs more
// registers than a block of 1024 can have (cudaErrorLaunchOutOfResources).
#include <kevolve/task.h>
#include <cuda_runtime.h>

__global__ void greedy(const float *x, float *y, int n)
{
    float r[96];
#pragma unroll
    for (int i = 0; i < 96; i++) r[i] = x[(threadIdx.x * 7 + i * 13) % n];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++)
#pragma unroll
        for (int i = 0; i < 96; i++) s += r[i] * r[(i * 5 + k) % 96] + r[(i + k) % 96];
    y[threadIdx.x % n] = s;
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    greedy<<<1, 1024, 0, (cudaStream_t)a->stream>>>((const float *)a->tensors[0],
                                                    (float *)a->tensors[1], 1024);
    return (int)cudaGetLastError();
}
