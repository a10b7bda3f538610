// Red team (cuda): reads a float4 at an address that is not 16-byte aligned
// (CUDA_ERROR_MISALIGNED_ADDRESS, a sticky error that ends the worker).
#include <kevolve/task.h>
#include <cuda_runtime.h>

__global__ void misaligned(const float *x, float *y)
{
    const float4 *p = (const float4 *)((const char *)x + 4);
    float4 v = p[threadIdx.x];
    y[threadIdx.x] = v.x + v.y + v.z + v.w;
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    misaligned<<<1, 32, 0, (cudaStream_t)a->stream>>>((const float *)a->tensors[0],
                                                      (float *)a->tensors[1]);
    return (int)cudaGetLastError();
}
