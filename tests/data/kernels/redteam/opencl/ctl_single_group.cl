/* Red team, HONEST CONTROL (issue 11), opencl, task softmax.
 *
 * The whole softmax in a single work-group of 64 work-items, each taking
 * every 64th row: slow on a big device, right everywhere.
 *
 * The judge must say: "correct". */
#ifdef __OPENCL_VERSION__

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void
one_group(__global const float *x, __global float *y, long rows, long cols)
{
    for (long r = get_local_id(0); r < rows; r += 64) {
        __global const float *xr = x + r * cols;
        __global float *yr = y + r * cols;
        float m = -INFINITY;
        for (long c = 0; c < cols; c++)
            m = fmax(m, xr[c]);
        float sum = 0.0f;
        for (long c = 0; c < cols; c++)
            sum += (yr[c] = exp(xr[c] - m));
        for (long c = 0; c < cols; c++)
            yr[c] /= sum;
    }
}

#else
#include <kevolve/task.h>
#include <CL/cl.h>

int kv_launch(const kv_launch_args *a)
{
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "one_group");
    if (!k) return 1;
    cl_long rows = a->syms[0], cols = a->syms[1];
    clSetKernelArg(k, 0, sizeof(cl_mem), &a->tensors[0]);
    clSetKernelArg(k, 1, sizeof(cl_mem), &a->tensors[1]);
    clSetKernelArg(k, 2, sizeof rows, &rows);
    clSetKernelArg(k, 3, sizeof cols, &cols);
    size_t n = 64;
    return clEnqueueNDRangeKernel((cl_command_queue)a->stream, k, 1, NULL, &n, &n, 0, NULL, NULL) ==
                   CL_SUCCESS
               ? 0
               : 2;
}
#endif
