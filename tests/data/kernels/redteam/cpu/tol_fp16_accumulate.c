/* Red team, class TOLERANCE (issue 11), cpu, task gqa_attention_small.
 *
 * Attention with the weighted sum p.v accumulated in fp16 (11 significant
 * bits): every partial sum (four interleaved ones) is rounded to fp16
 * precision after each addition; scores, maximum and the sum of the
 * weights stay in fp32. The error grows with the number of keys, more
 * slowly than in bf16.
 *
 * The judge must say: rejected (wrong_on_held_out_shape or wrong_result)
 * at the long decode: 32767 keys, a held-out shape of gqa_attention_small
 * (at 4099 keys it still has 0.3 of the tolerance left). */
#include <kevolve/task.h>

/* ---- gqa_attention on the CPU (layout: tasks/gqa_attention/gqa_attention.h) ---- */
#include <math.h>
#include <stdint.h>
#include <string.h>

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

/* F rounded to BITS significant bits, to nearest even (8: bf16; 11: fp16,
 * whose exponent range these values never leave). */
static float round_bits(float f, int bits)
{
    int e;
    float m = frexpf(f, &e);
    return ldexpf(rintf(ldexpf(m, bits)), e - bits);
}

/* Attention of every (sequence, query head, query row): scores in fp32, a
 * two-pass softmax, and p.v summed into LANES interleaved partial sums
 * (key j into lane j % LANES, as a kernel's threads would) that are merged
 * at the end. P_BITS > 0: each p rounded to that many bits before p.v
 * (0: not). ACC_BITS > 0: every partial sum rounded to that many bits after
 * each addition (0: fp32 accumulation). */
#define LANES 4
static int gqa(const kv_launch_args *a, int p_bits, int acc_bits)
{
    const uint16_t *q = (const uint16_t *)a->tensors[0], *k = (const uint16_t *)a->tensors[1];
    const uint16_t *v = (const uint16_t *)a->tensors[2];
    uint16_t *o = (uint16_t *)a->tensors[3];
    int64_t B = a->syms[0], HQ = a->syms[1], HKV = a->syms[2], SQ = a->syms[3], L = a->syms[4],
            D = a->syms[5];
    if (D != 128 || HKV <= 0 || HQ % HKV) return 1;
    float scale = 1.0f / sqrtf((float)D), qf[128], acc[LANES][128], l[LANES];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < HQ; h++)
            for (int64_t i = 0; i < SQ; i++) {
                const uint16_t *qr = q + ((b * HQ + h) * SQ + i) * D;
                const uint16_t *kh = k + (b * HKV + h / (HQ / HKV)) * L * D;
                const uint16_t *vh = v + (b * HKV + h / (HQ / HKV)) * L * D;
                int64_t keys = L - SQ + i + 1;
                for (int d = 0; d < 128; d++)
                    qf[d] = bf16_to_f32(qr[d]) * scale;
                float m = -INFINITY;
                for (int64_t j = 0; j < keys; j++) {
                    float s = 0;
                    for (int d = 0; d < 128; d++)
                        s += qf[d] * bf16_to_f32(kh[j * D + d]);
                    m = fmaxf(m, s);
                }
                memset(acc, 0, sizeof acc);
                memset(l, 0, sizeof l);
                for (int64_t j = 0; j < keys; j++) {
                    float s = 0;
                    for (int d = 0; d < 128; d++)
                        s += qf[d] * bf16_to_f32(kh[j * D + d]);
                    float p = expf(s - m);
                    int lane = (int)(j % LANES);
                    l[lane] += p;
                    if (p_bits) p = round_bits(p, p_bits);
                    for (int d = 0; d < 128; d++) {
                        float t = acc[lane][d] + p * bf16_to_f32(vh[j * D + d]);
                        acc[lane][d] = acc_bits ? round_bits(t, acc_bits) : t;
                    }
                }
                float lsum = 0;
                for (int w = 0; w < LANES; w++)
                    lsum += l[w];
                uint16_t *orow = o + ((b * HQ + h) * SQ + i) * D;
                for (int d = 0; d < 128; d++) {
                    float r = 0;
                    for (int w = 0; w < LANES; w++)
                        r += acc[w][d];
                    orow[d] = f32_to_bf16(r / lsum);
                }
            }
    return 0;
}
/* ---- end of gqa_attention ---- */

int kv_launch(const kv_launch_args *a)
{
    return gqa(a, 0, 11);
}
