/* Naive attention_window for the opencl backend: one work-item per query
 * row (sequence, head, row), a three-pass softmax in fp32 over the last W
 * keys of the row (the sliding window, symbol 6), work-groups of THREADS.
 * OpenCL has no bf16 type: bf16 is loaded as ushort. Layout:
 * gqa_attention.h. */

/* EVOLVE-BLOCK-START */
#define THREADS 64 // kevolve: tune 16 32 64 128
#define HEAD_DIM 128
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

inline float score(__global const ushort *q, __global const ushort *k, float scale)
{
    float s = 0.0f;
    for (int d = 0; d < HEAD_DIM; d++) s += bf(q[d]) * bf(k[d]);
    return s * scale;
}

__kernel void window_rows(__global const ushort *q, __global const ushort *k,
                          __global const ushort *v, __global ushort *o, int HQ, int HKV, int SQ,
                          long L, long W, long rows)
{
    long row = get_global_id(0);
    if (row >= rows) return;
    int i = (int)(row % SQ), h = (int)((row / SQ) % HQ);
    long b = row / SQ / HQ;
    __global const ushort *qr = q + row * HEAD_DIM;
    long kv = (b * HKV + h / (HQ / HKV)) * L * HEAD_DIM;
    long keys = L - SQ + i + 1, lo = W > 0 && keys > W ? keys - W : 0;
    float scale = rsqrt((float)HEAD_DIM), m = -INFINITY, sum = 0.0f, acc[HEAD_DIM];
    for (long j = lo; j < keys; j++) m = fmax(m, score(qr, k + kv + j * HEAD_DIM, scale));
    for (long j = lo; j < keys; j++) sum += exp(score(qr, k + kv + j * HEAD_DIM, scale) - m);
    for (int d = 0; d < HEAD_DIM; d++) acc[d] = 0.0f;
    for (long j = lo; j < keys; j++) {
        float p = exp(score(qr, k + kv + j * HEAD_DIM, scale) - m) / sum;
        for (int d = 0; d < HEAD_DIM; d++) acc[d] += p * bf(v[kv + j * HEAD_DIM + d]);
    }
    for (int d = 0; d < HEAD_DIM; d++) o[row * HEAD_DIM + d] = to_bf(acc[d]);
}
/* EVOLVE-BLOCK-END */

#else
#include <kevolve/task.h>
#include <CL/cl.h>

/* EVOLVE-BLOCK-START */
int kv_launch(const kv_launch_args *a)
{
    cl_command_queue queue = (cl_command_queue)a->stream;
    cl_int HQ = (cl_int)a->syms[1], HKV = (cl_int)a->syms[2], SQ = (cl_int)a->syms[3];
    cl_long L = (cl_long)a->syms[4], W = a->num_syms > 6 ? (cl_long)a->syms[6] : 0;
    cl_long rows = (cl_long)a->syms[0] * HQ * SQ;
    if (a->syms[5] != HEAD_DIM || HKV <= 0 || HQ % HKV != 0) return 1;
    if (rows == 0) return 0;
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "window_rows");
    if (!k) return 3;
    const void *val[10] = {&a->tensors[0], &a->tensors[1], &a->tensors[2], &a->tensors[3], &HQ,
                           &HKV, &SQ, &L, &W, &rows};
    size_t size[10] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_int),
                       sizeof(cl_int), sizeof(cl_int), sizeof(cl_long), sizeof(cl_long), sizeof(cl_long)};
    for (cl_uint i = 0; i < 10; i++)
        if (clSetKernelArg(k, i, size[i], val[i]) != CL_SUCCESS) return 4;
    size_t local = THREADS, global = ((size_t)rows + THREADS - 1) / THREADS * THREADS;
    return clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, &local, 0, NULL, NULL) == CL_SUCCESS
               ? 0
               : 5;
}
/* EVOLVE-BLOCK-END */
#endif
