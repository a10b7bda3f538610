/* Red team (opencl): the kernel never ends. */
#ifdef __OPENCL_VERSION__
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

__kernel void forever(__global float *y)
{
    volatile int spin = 1;
    while (spin)
        y[0] = 0.0f;
}

#else
#include <kevolve/task.h>
#include <CL/cl.h>
#include <string.h>

/* Enqueues softmax_rows over ROWS rows of COLS on QUEUE. */
static int run_rows(const kv_launch_args *a, cl_command_queue q, cl_mem x, cl_mem y, cl_long rows,
                    cl_long cols)
{
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "softmax_rows");
    if (!k) return 1;
    clSetKernelArg(k, 0, sizeof x, &x);
    clSetKernelArg(k, 1, sizeof y, &y);
    clSetKernelArg(k, 2, sizeof rows, &rows);
    clSetKernelArg(k, 3, sizeof cols, &cols);
    size_t global = (size_t)rows;
    return clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL) == CL_SUCCESS ? 0 : 2;
}

int kv_launch(const kv_launch_args *a)
{
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "forever");
    cl_mem y = (cl_mem)a->tensors[1];
    clSetKernelArg(k, 0, sizeof y, &y);
    size_t one = 1;
    clEnqueueNDRangeKernel((cl_command_queue)a->stream, k, 1, NULL, &one, NULL, 0, NULL, NULL);
    return 0;
}
#endif
