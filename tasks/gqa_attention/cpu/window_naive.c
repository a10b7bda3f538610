/* Naive attention_window for the cpu backend: gqa_attention's naive kernel
 * (a three-pass softmax in fp32 for every sequence, query head and row)
 * over the last W keys of each row only: the sliding window (symbol 6).
 * bf16 arrives as uint16 bit patterns. Layout: gqa_attention.h. */
#include <kevolve/bf16.h>
#include <kevolve/task.h>
#include <math.h>

/* EVOLVE-BLOCK-START */
static float score(const uint16_t *q, const uint16_t *k, int64_t d, float scale)
{
    float s = 0.0f;
    for (int64_t i = 0; i < d; i++)
        s += kv_bf16_to_f32(q[i]) * kv_bf16_to_f32(k[i]);
    return s * scale;
}

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *q = a->tensors[0], *k = a->tensors[1], *v = a->tensors[2];
    uint16_t *o = a->tensors[3];
    int64_t B = a->syms[0], HQ = a->syms[1], HKV = a->syms[2], SQ = a->syms[3], L = a->syms[4],
            D = a->syms[5], W = a->num_syms > 6 ? a->syms[6] : 0;
    if (D > 256) return 1;
    float scale = 1.0f / sqrtf((float)D), acc[256];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < HQ; h++)
            for (int64_t i = 0; i < SQ; i++) {
                const uint16_t *qr = q + ((b * HQ + h) * SQ + i) * D;
                const uint16_t *kh = k + (b * HKV + h / (HQ / HKV)) * L * D;
                const uint16_t *vh = v + (b * HKV + h / (HQ / HKV)) * L * D;
                int64_t keys = L - SQ + i + 1, lo = W > 0 && keys > W ? keys - W : 0;
                float m = -INFINITY, sum = 0.0f;
                for (int64_t j = lo; j < keys; j++)
                    m = fmaxf(m, score(qr, kh + j * D, D, scale));
                for (int64_t j = lo; j < keys; j++)
                    sum += expf(score(qr, kh + j * D, D, scale) - m);
                for (int64_t d = 0; d < D; d++)
                    acc[d] = 0.0f;
                for (int64_t j = lo; j < keys; j++) {
                    float p = expf(score(qr, kh + j * D, D, scale) - m) / sum;
                    for (int64_t d = 0; d < D; d++)
                        acc[d] += p * kv_bf16_to_f32(vh[j * D + d]);
                }
                uint16_t *orow = o + ((b * HQ + h) * SQ + i) * D;
                for (int64_t d = 0; d < D; d++)
                    orow[d] = kv_f32_to_bf16(acc[d]);
            }
    return 0;
}
/* EVOLVE-BLOCK-END */
