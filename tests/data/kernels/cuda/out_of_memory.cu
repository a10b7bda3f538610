// Red team (cuda): asks for a petabyte of device memory of its own and
// returns the runtime's error (cudaErrorMemoryAllocation).
#include <kevolve/task.h>
#include <cuda_runtime.h>

extern "C" int kv_launch(const kv_launch_args *a)
{
    (void)a;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, (size_t)1 << 50);
    if (e != cudaSuccess) return (int)e;
    cudaFree(p);
    return 0;
}
