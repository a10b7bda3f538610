/* Naive swiglu for the opencl backend: one work-item per output element,
 * work-groups of THREADS, silu(gate) * up in fp32 and rounded to bf16 once.
 * gate_up's row holds the gate's INTER values, then the up's. OpenCL has
 * no bf16 type: bf16 is loaded as ushort. */

/* EVOLVE-BLOCK-START */
#define THREADS 128 // kevolve: tune 32 64 128 256
/* EVOLVE-BLOCK-END */

#ifdef __OPENCL_VERSION__

/* EVOLVE-BLOCK-START */
inline float bf(ushort h) { return as_float((uint)h << 16); }

inline ushort to_bf(float f)
{
    uint u = as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

__kernel void swiglu_elems(__global const ushort *gu, __global ushort *out, long rows, long inter)
{
    long i = get_global_id(0);
    if (i >= rows * inter) return;
    long r = i / inter, c = i % inter;
    float g = bf(gu[r * 2 * inter + c]), u = bf(gu[r * 2 * inter + inter + c]);
    out[i] = to_bf(g / (1.0f + exp(-g)) * u);
}
/* EVOLVE-BLOCK-END */

#else
#include <kevolve/task.h>
#include <CL/cl.h>

/* EVOLVE-BLOCK-START */
int kv_launch(const kv_launch_args *a)
{
    cl_command_queue queue = (cl_command_queue)a->stream;
    cl_mem gu = a->tensors[0], out = a->tensors[1];
    cl_long rows = (cl_long)a->syms[0], inter = (cl_long)a->syms[2];
    if (rows * inter == 0) return 0;
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "swiglu_elems");
    if (!k) return 3;
    if (clSetKernelArg(k, 0, sizeof(cl_mem), &gu) != CL_SUCCESS ||
        clSetKernelArg(k, 1, sizeof(cl_mem), &out) != CL_SUCCESS ||
        clSetKernelArg(k, 2, sizeof(cl_long), &rows) != CL_SUCCESS ||
        clSetKernelArg(k, 3, sizeof(cl_long), &inter) != CL_SUCCESS)
        return 4;
    size_t n = (size_t)(rows * inter), local = THREADS;
    size_t global = (n + THREADS - 1) / THREADS * THREADS;
    return clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, &local, 0, NULL, NULL) == CL_SUCCESS
               ? 0
               : 5;
}
/* EVOLVE-BLOCK-END */
#endif
