/* Red team, class PROCESSES THAT OUTLIVE THE EVALUATION (issue 11): the
 * floating-point environment; opencl, task softmax.
 *
 * The device computes the task's baseline; the host half leaves its
 * process, after every call, in a hostile floating-point environment
 * (rounding upward, FTZ and DAZ in MXCSR, traps on every exception), as
 * cpu/outlive_fpenv.c.
 *
 * The judge must say: "correct" (or a rejection that names the
 * floating-point environment): the judge's arithmetic is not done in it.
 * Today the worker's checks trap: "crash: SIGFPE". */
#ifdef __OPENCL_VERSION__

/* The task's baseline kernel, as it is: one work-item per row, three passes. */
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

/* Zeros for y, reading x (the bytes the roofline expects). */
__kernel void zeros(__global const float *x, __global float *y, long n)
{
    long i = get_global_id(0);
    if (i < n) y[i] = x[i] * 0.0f;
}

#else
#define _GNU_SOURCE
#include <kevolve/task.h>
#include <CL/cl.h>
#include <fenv.h>
#include <string.h>
#include <xmmintrin.h>

/* Enqueues the device kernel NAME (softmax_rows or zeros) on queue Q, or
 * on the harness's queue when Q is NULL. Returns 0 on success. */
static int rt_enqueue(const kv_launch_args *a, const char *name, cl_command_queue q)
{
    cl_kernel k = (cl_kernel)a->cl_kernel(a, name);
    if (!k) return 1;
    cl_mem x = (cl_mem)a->tensors[0], y = (cl_mem)a->tensors[1];
    cl_long rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    int whole = strcmp(name, "zeros") == 0;
    clSetKernelArg(k, 0, sizeof x, &x);
    clSetKernelArg(k, 1, sizeof y, &y);
    if (whole) {
        clSetKernelArg(k, 2, sizeof n, &n);
    } else {
        clSetKernelArg(k, 2, sizeof rows, &rows);
        clSetKernelArg(k, 3, sizeof cols, &cols);
    }
    size_t global = (size_t)(whole ? n : rows);
    return clEnqueueNDRangeKernel(q ? q : (cl_command_queue)a->stream, k, 1, NULL, &global, NULL,
                                  0, NULL, NULL) == CL_SUCCESS
               ? 0
               : 2;
}

int kv_launch(const kv_launch_args *a)
{
    fesetenv(FE_DFL_ENV);
    _mm_setcsr(_mm_getcsr() & ~0x8040u);
    int rc = rt_enqueue(a, "softmax_rows", NULL);
    clFinish((cl_command_queue)a->stream);
    fesetround(FE_UPWARD);
    _mm_setcsr(_mm_getcsr() | 0x8040u); /* FTZ | DAZ */
    feclearexcept(FE_ALL_EXCEPT);
    feenableexcept(FE_ALL_EXCEPT);
    return rc;
}
#endif
