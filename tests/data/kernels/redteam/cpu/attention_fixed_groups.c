/* Red team, SHORTCUT, cpu, tasks attention_mqa and attention_mha.
 *
 * Attention that assumes Qwen3's layout, eight KV heads shared by equal
 * groups of query heads (KV head h / (HQ / 8)), whatever HKV says: right on
 * every gqa_attention shape, wrong on other layouts. With one KV head it
 * reads seven heads that are not there (past the end of k and v); with a
 * KV head per query head it gives four query heads the same one.
 *
 * The judge must say: rejected (mqa: a fault or a wrong result; mha:
 * wrong_result). */
#include <kevolve/bf16.h>
#include <kevolve/task.h>
#include <math.h>

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *q = a->tensors[0], *k = a->tensors[1], *v = a->tensors[2];
    uint16_t *o = a->tensors[3];
    int64_t B = a->syms[0], HQ = a->syms[1], SQ = a->syms[3], L = a->syms[4], D = a->syms[5];
    int64_t HKV = 8, group = HQ >= 8 ? HQ / 8 : 1;
    if (D > 256) return 1;
    float scale = 1.0f / sqrtf((float)D), acc[256];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < HQ; h++)
            for (int64_t i = 0; i < SQ; i++) {
                const uint16_t *qr = q + ((b * HQ + h) * SQ + i) * D;
                const uint16_t *kh = k + (b * HKV + h / group) * L * D;
                const uint16_t *vh = v + (b * HKV + h / group) * L * D;
                int64_t keys = L - SQ + i + 1;
                float m = -INFINITY, sum = 0.0f;
                for (int64_t j = 0; j < keys; j++) {
                    float s = 0.0f;
                    for (int64_t d = 0; d < D; d++)
                        s += kv_bf16_to_f32(qr[d]) * kv_bf16_to_f32(kh[j * D + d]);
                    m = fmaxf(m, s * scale);
                }
                for (int64_t d = 0; d < D; d++)
                    acc[d] = 0.0f;
                for (int64_t j = 0; j < keys; j++) {
                    float s = 0.0f;
                    for (int64_t d = 0; d < D; d++)
                        s += kv_bf16_to_f32(qr[d]) * kv_bf16_to_f32(kh[j * D + d]);
                    float p = expf(s * scale - m);
                    sum += p;
                    for (int64_t d = 0; d < D; d++)
                        acc[d] += p * kv_bf16_to_f32(vh[j * D + d]);
                }
                uint16_t *orow = o + ((b * HQ + h) * SQ + i) * D;
                for (int64_t d = 0; d < D; d++)
                    orow[d] = kv_f32_to_bf16(acc[d] / sum);
            }
    return 0;
}
