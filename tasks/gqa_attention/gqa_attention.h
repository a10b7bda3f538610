/* Shared pieces of the gqa_attention tasks (gqa_attention.c defines the
 * tasks and their shapes, gqa_reference.c the double-precision reference
 * and the roofline model). Symbols, in order: B (sequences), HQ (query
 * heads), HKV (key/value heads), SQ (query rows per sequence), L (keys per
 * sequence, the KV cache length), D (head dimension, 128). Tensors, all
 * bf16, row-major: q [B, HQ, SQ, D], k [B, HKV, L, D], v [B, HKV, L, D],
 * o [B, HQ, SQ, D]. Query row i of a sequence sits at position L - SQ + i
 * and attends to keys 0 .. L - SQ + i (causal, aligned to the bottom
 * right): decode is SQ = 1, prefill SQ = L, chunked prefill 1 < SQ < L.
 * Query head h reads KV head h / (HQ / HKV). Scores are scaled by
 * 1/sqrt(D). */
#ifndef KV_TASK_GQA_ATTENTION_H
#define KV_TASK_GQA_ATTENTION_H

#include <kevolve/task.h>

enum { GQA_B = 0, GQA_HQ, GQA_HKV, GQA_SQ, GQA_L, GQA_D, GQA_NSYMS };
/* The sliding window's symbol (attention_window only; a shape of the
 * other tasks leaves it 0, no window): row i attends only the last W of
 * its keys, L - SQ + i - W + 1 .. L - SQ + i. */
enum { GQA_W = GQA_NSYMS };

/* bf16 output of an fp32-accumulated kernel against float64, p rounded to
 * the output's type before p.v allowed: rtol 2.5 roundings of the output
 * (u = 2^-8), stol 8 u times the scale sqrt(sum p^2 v^2) / sum p, about 14
 * standard deviations of what independent roundings of p make; atol only
 * for outputs that are zero to double precision. bf16 accumulation errs by
 * u sqrt(L / 6) times the scale and fails from about L = 1000: README.md. */
#define GQA_TOL                                                                                    \
    .tol = {                                                                                       \
        [KV_F32] = {.atol = 1e-7, .rtol = 1e-5, .stol = 1.0 / (1 << 20)},                          \
        [KV_F16] = {.atol = 1e-6, .rtol = 3e-3, .stol = 1.0 / 128},                                \
        [KV_BF16] = {.atol = 1e-5, .rtol = 1e-2, .stol = 1.0 / 32},                                \
        [KV_I32] = {.atol = 0, .rtol = 0},                                                         \
    }

/* Writes o from q, k, v (see above), in double precision, using up to all
 * online CPUs for large shapes. */
void gqa_reference(const int64_t *syms, double *const *t);

/* gqa_reference (the same o, bit for bit) that also writes o's error
 * scales into SCALES[3] (kv_task.reference_scale; SCALES NULL or
 * SCALES[3] NULL: none): element (b, h, i, d) gets
 * sum_j p_j |v_jd| / sum_j p_j over the keys row i attends, p_j =
 * exp(s_j - max s), the magnitude a rounding of p scales with. */
void gqa_reference_scale(const int64_t *syms, double *const *t, double *const *scales);

/* Bytes that must move (q, k, v read once, o written once, bf16) and the
 * flops of the two matrix products over the causal keys only. */
kv_roofline gqa_roofline(const int64_t *syms);

#endif
