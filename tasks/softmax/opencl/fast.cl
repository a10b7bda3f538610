/* An honest, faster softmax for the opencl backend: a work-group of 64 per
 * row, reductions in local memory, one exp per element. */
#ifdef __OPENCL_VERSION__
#define WG 64

/* EVOLVE-BLOCK-START */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
softmax_wg(__global const float *x, __global float *y, long rows, long cols)
{
    __local float red[WG];
    long r = get_group_id(0);
    int l = (int)get_local_id(0);
    __global const float *xr = x + r * cols;
    __global float *yr = y + r * cols;
    float m = -INFINITY;
    for (long c = l; c < cols; c += WG)
        m = fmax(m, xr[c]);
    red[l] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (l < s) red[l] = fmax(red[l], red[l + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = 0.0f;
    for (long c = l; c < cols; c += WG) {
        float e = exp(xr[c] - m);
        yr[c] = e;
        sum += e;
    }
    red[l] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (l < s) red[l] += red[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / red[0];
    for (long c = l; c < cols; c += WG)
        yr[c] *= inv;
}
/* EVOLVE-BLOCK-END */

#else
#include <kevolve/task.h>
#include <CL/cl.h>

int kv_launch(const kv_launch_args *a)
{
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "softmax_wg");
    if (!k) return 1;
    cl_mem x = (cl_mem)a->tensors[0], y = (cl_mem)a->tensors[1];
    cl_long rows = a->syms[0], cols = a->syms[1];
    clSetKernelArg(k, 0, sizeof x, &x);
    clSetKernelArg(k, 1, sizeof y, &y);
    clSetKernelArg(k, 2, sizeof rows, &rows);
    clSetKernelArg(k, 3, sizeof cols, &cols);
    size_t local = 64, global = (size_t)rows * local;
    cl_int e = clEnqueueNDRangeKernel((cl_command_queue)a->stream, k, 1, NULL, &global, &local, 0,
                                      NULL, NULL);
    return e == CL_SUCCESS ? 0 : 2;
}
#endif
