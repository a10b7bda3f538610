/* Naive gqa_attention for the cpu backend: for every (sequence, query
 * head, query row), a three-pass softmax in fp32 (the maximum score, the
 * sum of exponentials, then the weighted sum of v rows), every query head
 * re-reading its KV head. bf16 arrives as uint16 bit patterns. Layout and
 * causal rule: tasks/gqa_attention/gqa_attention.h. */
#include <kevolve/task.h>
#include <math.h>
#include <string.h>

/* EVOLVE-BLOCK-START */
static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float f) /* round to nearest even */
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float score(const uint16_t *q, const uint16_t *k, int64_t d, float scale)
{
    float s = 0.0f;
    for (int64_t i = 0; i < d; i++)
        s += bf16_to_f32(q[i]) * bf16_to_f32(k[i]);
    return s * scale;
}

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *q = a->tensors[0], *k = a->tensors[1], *v = a->tensors[2];
    uint16_t *o = a->tensors[3];
    int64_t B = a->syms[0], HQ = a->syms[1], HKV = a->syms[2], SQ = a->syms[3], L = a->syms[4],
            D = a->syms[5];
    if (D > 256) return 1;
    float scale = 1.0f / sqrtf((float)D), acc[256];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < HQ; h++)
            for (int64_t i = 0; i < SQ; i++) {
                const uint16_t *qr = q + ((b * HQ + h) * SQ + i) * D;
                const uint16_t *kh = k + (b * HKV + h / (HQ / HKV)) * L * D;
                const uint16_t *vh = v + (b * HKV + h / (HQ / HKV)) * L * D;
                int64_t keys = L - SQ + i + 1;
                float m = -INFINITY, sum = 0.0f;
                for (int64_t j = 0; j < keys; j++)
                    m = fmaxf(m, score(qr, kh + j * D, D, scale));
                for (int64_t j = 0; j < keys; j++)
                    sum += expf(score(qr, kh + j * D, D, scale) - m);
                for (int64_t d = 0; d < D; d++)
                    acc[d] = 0.0f;
                for (int64_t j = 0; j < keys; j++) {
                    float p = expf(score(qr, kh + j * D, D, scale) - m) / sum;
                    for (int64_t d = 0; d < D; d++)
                        acc[d] += p * bf16_to_f32(vh[j * D + d]);
                }
                uint16_t *orow = o + ((b * HQ + h) * SQ + i) * D;
                for (int64_t d = 0; d < D; d++)
                    orow[d] = f32_to_bf16(acc[d]);
            }
    return 0;
}
/* EVOLVE-BLOCK-END */
