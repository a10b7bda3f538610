/* Red team (opencl): enqueues the work on a queue of its own and returns without waiting. */
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

__kernel void spin(__global float *sink, long n)
{
    float v = 0.0f;
    for (long i = 0; i < n; i++)
        v = v * 0.999f + 1.0f;
    sink[0] = v;
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
    static cl_command_queue mine;
    static cl_mem sink;
    if (!mine) {
        mine = clCreateCommandQueue((cl_context)a->context, (cl_device_id)a->device, 0, NULL);
        sink = clCreateBuffer((cl_context)a->context, CL_MEM_READ_WRITE, 64, NULL, NULL);
    }
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "spin");
    cl_long n = 20000000;
    clSetKernelArg(k, 0, sizeof sink, &sink);
    clSetKernelArg(k, 1, sizeof n, &n);
    size_t one = 1;
    clEnqueueNDRangeKernel(mine, k, 1, NULL, &one, NULL, 0, NULL, NULL);
    int rc = run_rows(a, mine, (cl_mem)a->tensors[0], (cl_mem)a->tensors[1], a->syms[0], a->syms[1]);
    clFlush(mine);
    return rc;
}
#endif
