/* Baseline softmax for the opencl backend: one work-item per row, three
 * passes. The device half is built by the harness; the host half enqueues
 * it on the harness's queue. */
#ifdef __OPENCL_VERSION__

/* EVOLVE-BLOCK-START */
__kernel void softmax_rows(__global const float *x, __global float *y, long rows, long cols)
{
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + r * cols;
    __global float *yr = y + r * cols;
    float m = -INFINITY;
    for (long c = 0; c < cols; c++)
        m = fmax(m, xr[c]);
    float sum = 0.0f;
    for (long c = 0; c < cols; c++)
        sum += exp(xr[c] - m);
    for (long c = 0; c < cols; c++)
        yr[c] = exp(xr[c] - m) / sum;
}
/* EVOLVE-BLOCK-END */

#else
#include <kevolve/task.h>
#include <CL/cl.h>

int kv_launch(const kv_launch_args *a)
{
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "softmax_rows");
    if (!k) return 1;
    cl_mem x = (cl_mem)a->tensors[0], y = (cl_mem)a->tensors[1];
    cl_long rows = a->syms[0], cols = a->syms[1];
    clSetKernelArg(k, 0, sizeof x, &x);
    clSetKernelArg(k, 1, sizeof y, &y);
    clSetKernelArg(k, 2, sizeof rows, &rows);
    clSetKernelArg(k, 3, sizeof cols, &cols);
    size_t global = (size_t)rows;
    cl_int e = clEnqueueNDRangeKernel((cl_command_queue)a->stream, k, 1, NULL, &global, NULL, 0,
                                      NULL, NULL);
    return e == CL_SUCCESS ? 0 : 2;
}
#endif
