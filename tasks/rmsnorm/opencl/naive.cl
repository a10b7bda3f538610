/* Naive rmsnorm and rmsnorm_add for the opencl backend: one work-group of
 * THREADS work-items per row, the sum of squares in fp32 reduced through
 * local memory, each element scaled and rounded to bf16 once. The fused
 * task (five tensors) writes the residual sum rounded to bf16 and
 * normalises that. OpenCL has no bf16 type: bf16 is loaded as ushort. */

/* EVOLVE-BLOCK-START */
#define THREADS 128 // kevolve: tune 32 64 128 256
/* EVOLVE-BLOCK-END */

#ifdef __OPENCL_VERSION__

/* EVOLVE-BLOCK-START */
#define EPS 1e-6f

inline float bf(ushort h) { return as_float((uint)h << 16); }

inline ushort to_bf(float f)
{
    uint u = as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

/* One work-group per row; FUSED: RES holds the residual and ROUT gets the
 * sum, which is what is normalised. */
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void
rmsnorm_rows(__global const ushort *x, __global const ushort *res, __global const ushort *w,
             __global ushort *y, __global ushort *rout, long h, int fused)
{
    __local float red[THREADS];
    int t = get_local_id(0);
    long r = get_group_id(0);
    __global const ushort *src = x + r * h;
    if (fused) {
        for (long c = t; c < h; c += THREADS)
            rout[r * h + c] = to_bf(bf(x[r * h + c]) + bf(res[r * h + c]));
        barrier(CLK_GLOBAL_MEM_FENCE);
        src = rout + r * h;
    }
    float ss = 0.0f;
    for (long c = t; c < h; c += THREADS) ss += bf(src[c]) * bf(src[c]);
    red[t] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float rstd = rsqrt(red[0] / (float)h + EPS);
    for (long c = t; c < h; c += THREADS) y[r * h + c] = to_bf(bf(src[c]) * rstd * bf(w[c]));
}
/* EVOLVE-BLOCK-END */

#else
#include <kevolve/task.h>
#include <CL/cl.h>

/* EVOLVE-BLOCK-START */
int kv_launch(const kv_launch_args *a)
{
    cl_command_queue queue = (cl_command_queue)a->stream;
    cl_int fused = a->num_tensors == 5;
    cl_mem x = a->tensors[0], res = a->tensors[fused ? 1 : 0], w = a->tensors[fused ? 2 : 1];
    cl_mem y = a->tensors[fused ? 3 : 2], rout = a->tensors[fused ? 4 : 2];
    cl_long h = (cl_long)a->syms[1];
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "rmsnorm_rows");
    if (!k) return 3;
    const void *val[7] = {&x, &res, &w, &y, &rout, &h, &fused};
    size_t size[7] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem),
                      sizeof(cl_mem), sizeof(cl_long), sizeof(cl_int)};
    for (cl_uint i = 0; i < 7; i++)
        if (clSetKernelArg(k, i, size[i], val[i]) != CL_SUCCESS) return 4;
    size_t global = (size_t)a->syms[0] * THREADS, local = THREADS;
    return clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, &local, 0, NULL, NULL) == CL_SUCCESS
               ? 0
               : 5;
}
/* EVOLVE-BLOCK-END */
#endif
