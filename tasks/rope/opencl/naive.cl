/* Naive rope for the opencl backend: one work-item per pair (i, i + D/2)
 * of a head's row, q's rows then k's, work-groups of THREADS; the pair
 * rotated in fp32 by the token's row of the table and rounded to bf16
 * once, in place. OpenCL has no bf16 type: bf16 is loaded as ushort. */

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

__kernel void rope_pairs(__global ushort *q, __global ushort *k, __global const ushort *cos_t,
                         __global const ushort *sin_t, __global const int *pos, long tokens,
                         long hq, long hkv, long d)
{
    long h2 = d / 2, nq = tokens * hq * h2, n = nq + tokens * hkv * h2;
    long p = get_global_id(0);
    if (p >= n) return;
    int isq = p < nq;
    long e = isq ? p : p - nq, heads = isq ? hq : hkv;
    long row = e / h2, i = e % h2, t = row / heads;
    __global ushort *r = (isq ? q : k) + row * d;
    __global const ushort *c = cos_t + (long)pos[t] * d, *s = sin_t + (long)pos[t] * d;
    float a = bf(r[i]), b = bf(r[i + h2]);
    r[i] = to_bf(a * bf(c[i]) - b * bf(s[i]));
    r[i + h2] = to_bf(b * bf(c[i + h2]) + a * bf(s[i + h2]));
}
/* EVOLVE-BLOCK-END */

#else
#include <kevolve/task.h>
#include <CL/cl.h>

/* EVOLVE-BLOCK-START */
int kv_launch(const kv_launch_args *a)
{
    cl_command_queue queue = (cl_command_queue)a->stream;
    cl_mem q = a->tensors[0], k = a->tensors[1], c = a->tensors[2], s = a->tensors[3],
           pos = a->tensors[4];
    cl_long tokens = (cl_long)a->syms[0], hq = (cl_long)a->syms[1], hkv = (cl_long)a->syms[2],
            d = (cl_long)a->syms[3];
    cl_long n = tokens * (hq + hkv) * (d / 2);
    if (n == 0) return 0;
    cl_kernel kern = (cl_kernel)a->cl_kernel(a, "rope_pairs");
    if (!kern) return 3;
    if (clSetKernelArg(kern, 0, sizeof(cl_mem), &q) != CL_SUCCESS ||
        clSetKernelArg(kern, 1, sizeof(cl_mem), &k) != CL_SUCCESS ||
        clSetKernelArg(kern, 2, sizeof(cl_mem), &c) != CL_SUCCESS ||
        clSetKernelArg(kern, 3, sizeof(cl_mem), &s) != CL_SUCCESS ||
        clSetKernelArg(kern, 4, sizeof(cl_mem), &pos) != CL_SUCCESS ||
        clSetKernelArg(kern, 5, sizeof(cl_long), &tokens) != CL_SUCCESS ||
        clSetKernelArg(kern, 6, sizeof(cl_long), &hq) != CL_SUCCESS ||
        clSetKernelArg(kern, 7, sizeof(cl_long), &hkv) != CL_SUCCESS ||
        clSetKernelArg(kern, 8, sizeof(cl_long), &d) != CL_SUCCESS)
        return 4;
    size_t global = (size_t)((n + THREADS - 1) / THREADS * THREADS), local = THREADS;
    return clEnqueueNDRangeKernel(queue, kern, 1, NULL, &global, &local, 0, NULL, NULL) ==
                   CL_SUCCESS
               ? 0
               : 5;
}
/* EVOLVE-BLOCK-END */
#endif
