/* Red team, class TOLERANCE (issue 11), opencl, task gqa_attention_small.
 *
 * Attention with the weighted sum p.v accumulated in fp16 precision (11
 * significant bits; scores, maximum and the sum of the weights in fp32).
 *
 * The judge must say: rejected (wrong_on_held_out_shape or wrong_result)
 * at the long decode: 32767 keys, a held-out shape of gqa_attention_small
 * (at 4099 keys it still has 0.3 of the tolerance left). */
#ifdef __OPENCL_VERSION__

/* gqa_attention (layout: tasks/gqa_attention/gqa_attention.h), one
 * work-item per (sequence, query head, query row): scores in fp32, a
 * two-pass softmax, p.v summed into LANES interleaved partial sums (key j
 * into lane j % LANES) merged at the end. P_BITS > 0: each p rounded to
 * that many significant bits before p.v. ACC_BITS > 0: every partial sum
 * rounded to that many bits after each addition (0: fp32 accumulation). */
#define LANES 4

inline float bf(ushort h) { return as_float((uint)h << 16); }

inline ushort to_bf(float f)
{
    uint u = as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

inline float round_bits(float f, int bits)
{
    int e;
    float m = frexp(f, &e);
    return ldexp(rint(ldexp(m, bits)), e - bits);
}

__kernel void gqa_rows(__global const ushort *q, __global const ushort *k,
                       __global const ushort *v, __global ushort *o, int HQ, int HKV, int SQ,
                       int L, int p_bits, int acc_bits)
{
    long row = get_global_id(0); /* (b * HQ + h) * SQ + i */
    int i = (int)(row % SQ), h = (int)(row / SQ % HQ);
    long b = row / SQ / HQ;
    __global const ushort *qr = q + row * 128;
    __global const ushort *kh = k + (b * HKV + h / (HQ / HKV)) * (long)L * 128;
    __global const ushort *vh = v + (b * HKV + h / (HQ / HKV)) * (long)L * 128;
    int keys = L - SQ + i + 1;
    float qf[128], acc[LANES][128], l[LANES], scale = rsqrt(128.0f);
    for (int d = 0; d < 128; d++)
        qf[d] = bf(qr[d]) * scale;
    float m = -INFINITY;
    for (int j = 0; j < keys; j++) {
        float s = 0;
        for (int d = 0; d < 128; d++)
            s += qf[d] * bf(kh[(long)j * 128 + d]);
        m = fmax(m, s);
    }
    for (int w = 0; w < LANES; w++) {
        l[w] = 0;
        for (int d = 0; d < 128; d++)
            acc[w][d] = 0;
    }
    for (int j = 0; j < keys; j++) {
        float s = 0;
        for (int d = 0; d < 128; d++)
            s += qf[d] * bf(kh[(long)j * 128 + d]);
        float p = exp(s - m);
        int lane = j % LANES;
        l[lane] += p;
        if (p_bits) p = round_bits(p, p_bits);
        for (int d = 0; d < 128; d++) {
            float t = acc[lane][d] + p * bf(vh[(long)j * 128 + d]);
            acc[lane][d] = acc_bits ? round_bits(t, acc_bits) : t;
        }
    }
    float lsum = 0;
    for (int w = 0; w < LANES; w++)
        lsum += l[w];
    for (int d = 0; d < 128; d++) {
        float r = 0;
        for (int w = 0; w < LANES; w++)
            r += acc[w][d];
        o[row * 128 + d] = to_bf(r / lsum);
    }
}

#else
#include <kevolve/task.h>
#include <CL/cl.h>

/* Enqueues gqa_rows on the harness's queue. Returns 0 on success. */
static int rt_gqa(const kv_launch_args *a, cl_int p_bits, cl_int acc_bits)
{
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "gqa_rows");
    if (!k || a->syms[5] != 128 || a->syms[2] <= 0 || a->syms[1] % a->syms[2]) return 1;
    cl_int HQ = (cl_int)a->syms[1], HKV = (cl_int)a->syms[2], SQ = (cl_int)a->syms[3],
           L = (cl_int)a->syms[4];
    for (cl_uint i = 0; i < 4; i++)
        clSetKernelArg(k, i, sizeof(cl_mem), &a->tensors[i]);
    cl_int ints[6] = {HQ, HKV, SQ, L, p_bits, acc_bits};
    for (cl_uint i = 0; i < 6; i++)
        clSetKernelArg(k, 4 + i, sizeof(cl_int), &ints[i]);
    size_t global = (size_t)(a->syms[0] * a->syms[1] * a->syms[3]);
    return clEnqueueNDRangeKernel((cl_command_queue)a->stream, k, 1, NULL, &global, NULL, 0, NULL,
                                  NULL) == CL_SUCCESS
               ? 0
               : 2;
}

int kv_launch(const kv_launch_args *a)
{
    return rt_gqa(a, 0, 11);
}
#endif
