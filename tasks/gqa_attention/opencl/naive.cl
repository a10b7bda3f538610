/* Naive gqa_attention for the opencl backend: the task's baseline, the
 * kernel of the published Metal experiment. Layout and causal rule:
 * tasks/gqa_attention/gqa_attention.h.
 *
 * One work-group of 128 work-items per (sequence, query head, query row); a
 * three-pass softmax (the maximum, the sum of exponentials, the weighted sum
 * of v rows: k read three times), every query head re-reading its KV head,
 * one bf16 per load, the probabilities of 32 keys at a time staged in local
 * memory for the weighted sum, reductions through local memory. The
 * evolution starts from opencl/seed.cl, this design with its axes declared
 * for the tune mutator. OpenCL has no bf16 type: bf16 is loaded as ushort
 * and shifted into a float. */

#define HEAD_DIM 128

#ifdef __OPENCL_VERSION__

/* EVOLVE-BLOCK-START */
#define THREADS 128 /* work-items per work-group: one per dimension of the output */
#define TILE_K 32   /* keys whose probabilities are staged at a time */
#define LOG2E 1.4426950408889634f

inline float bf(ushort h) { return as_float((uint)h << 16); }

inline ushort to_bf(float f)
{
    uint u = as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

/* (scaled q) . krow */
inline float dot(__local const float *qs, __global const ushort *krow)
{
    float s = 0.0f;
    for (int d = 0; d < HEAD_DIM; d++) s += qs[d] * bf(krow[d]);
    return s;
}

inline float reduce_max(float v, __local float *red)
{
    int t = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    red[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = fmax(red[t], red[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return red[0];
}

inline float reduce_sum(float v, __local float *red)
{
    int t = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    red[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return red[0];
}

/* One work-group: query row `row` of head h of sequence b. Work-item t
 * scores keys t, t + THREADS, ... and owns output dimension t. */
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void
gqa_attn(__global const ushort *q, __global const ushort *k, __global const ushort *v,
         __global ushort *o, int HQ, int HKV, int SQ, int L)
{
    __local float qs[HEAD_DIM];
    __local float ps[TILE_K];
    __local float red[THREADS];
    int t = get_local_id(0);
    int row = get_group_id(0), h = get_group_id(1), b = get_group_id(2);
    int kvh = h / (HQ / HKV);
    int nkeys = L - SQ + row + 1;
    float qscale = rsqrt((float)HEAD_DIM) * LOG2E; /* scores in log2 units: exp2 below */
    long orow = ((long)b * HQ + h) * SQ + row;
    qs[t] = bf(q[orow * HEAD_DIM + t]) * qscale;
    barrier(CLK_LOCAL_MEM_FENCE);
    __global const ushort *kb = k + ((long)b * HKV + kvh) * L * HEAD_DIM;
    __global const ushort *vb = v + ((long)b * HKV + kvh) * L * HEAD_DIM;
    float part_m = -INFINITY, part_l = 0.0f, acc = 0.0f;
    for (int j = t; j < nkeys; j += THREADS) /* pass 1: the maximum */
        part_m = fmax(part_m, dot(qs, kb + (long)j * HEAD_DIM));
    float m = reduce_max(part_m, red);
    for (int j = t; j < nkeys; j += THREADS) /* pass 2: the sum */
        part_l += exp2(dot(qs, kb + (long)j * HEAD_DIM) - m);
    float l = reduce_sum(part_l, red);
    for (int jt = 0; jt < nkeys; jt += TILE_K) { /* pass 3: the weighted sum of v */
        for (int jj = t; jj < TILE_K; jj += THREADS) {
            int j = jt + jj;
            ps[jj] = j < nkeys ? exp2(dot(qs, kb + (long)j * HEAD_DIM) - m) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        int n = min(TILE_K, nkeys - jt);
        for (int jj = 0; jj < n; jj++) acc += ps[jj] * bf(vb[(long)(jt + jj) * HEAD_DIM + t]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    o[orow * HEAD_DIM + t] = to_bf(acc / l);
}
/* EVOLVE-BLOCK-END */

#else
#include <kevolve/task.h>
#include <CL/cl.h>

/* EVOLVE-BLOCK-START */
int kv_launch(const kv_launch_args *a)
{
    cl_command_queue queue = (cl_command_queue)a->stream;
    cl_mem q = a->tensors[0], k = a->tensors[1], v = a->tensors[2], o = a->tensors[3];
    cl_int B = (cl_int)a->syms[0], HQ = (cl_int)a->syms[1], HKV = (cl_int)a->syms[2],
           SQ = (cl_int)a->syms[3], L = (cl_int)a->syms[4];
    if (a->syms[5] != HEAD_DIM || HKV <= 0 || HQ % HKV != 0) return 1;
    cl_kernel ka = (cl_kernel)a->cl_kernel(a, "gqa_attn");
    if (!ka) return 3;
    const void *val[8] = {&q, &k, &v, &o, &HQ, &HKV, &SQ, &L};
    for (cl_uint i = 0; i < 8; i++)
        if (clSetKernelArg(ka, i, i < 4 ? sizeof(cl_mem) : sizeof(cl_int), val[i]) != CL_SUCCESS)
            return 4;
    size_t global[3] = {(size_t)SQ * HEAD_DIM, (size_t)HQ, (size_t)B};
    size_t local[3] = {HEAD_DIM, 1, 1};
    return clEnqueueNDRangeKernel(queue, ka, 3, NULL, global, local, 0, NULL, NULL) == CL_SUCCESS
               ? 0
               : 5;
}
/* EVOLVE-BLOCK-END */
#endif
