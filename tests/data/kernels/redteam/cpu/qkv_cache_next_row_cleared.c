/* Red team, IN PLACE, cpu, task qwen3_decode_qkv.
 *
 * The naive start, but it also clears the v cache row after the new
 * token's: every row it should write is right, a row it must leave alone
 * is not.
 *
 * The judge must say: wrong_result. */
#include <kevolve/task.h>
#include <kevolve/bf16.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* EVOLVE-BLOCK-START */
#define QWEN3_EPS 1e-6f

static float qd_round(float f) { return kv_bf16_to_f32(kv_f32_to_bf16(f)); }

/* H = bf16(w * bf16(x / rms(x))) over N values: PyTorch's Qwen3RMSNorm. */
static void qd_norm(const uint16_t *x, const uint16_t *w, int64_t n, float *h)
{
    float ss = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float v = kv_bf16_to_f32(x[i]);
        ss += v * v;
    }
    float rstd = 1.0f / sqrtf(ss / (float)n + QWEN3_EPS);
    for (int64_t i = 0; i < n; i++)
        h[i] = qd_round(kv_bf16_to_f32(w[i]) * qd_round(kv_bf16_to_f32(x[i]) * rstd));
}

/* bf16 row W of K values times H, in fp32. */
static float qd_dot(const uint16_t *w, const float *h, int64_t k)
{
    float s = 0.0f;
    for (int64_t i = 0; i < k; i++)
        s += kv_bf16_to_f32(w[i]) * h[i];
    return s;
}

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *x = a->tensors[0], *ln = a->tensors[1], *cs = a->tensors[7],
                   *sn = a->tensors[8];
    const int32_t *start = a->tensors[9];
    uint16_t *q = a->tensors[10];
    int64_t nb = a->syms[0], nq_len = a->syms[1], hid = a->syms[2], nq = a->syms[3];
    int64_t nkv = a->syms[4], d = a->syms[5], len = a->syms[6];
    float *h = malloc((size_t)(hid + 2 * d) * sizeof *h), *p = h + hid, *r = p + d;
    if (!h) return 1;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < nq_len; i++) {
            int64_t t = b * nq_len + i, pos = start[b] + i;
            qd_norm(x + t * hid, ln, hid, h);
            for (int64_t head = 0; head < nq + 2 * nkv; head++) {
                int kind = head < nq ? 0 : head < nq + nkv ? 1 : 2;
                int64_t n = kind == 0 ? head : kind == 1 ? head - nq : head - nq - nkv;
                const uint16_t *w = (const uint16_t *)a->tensors[2 + kind] + n * d * hid;
                for (int64_t c = 0; c < d; c++)
                    p[c] = qd_round(qd_dot(w + c * hid, h, hid));
                uint16_t *out = kind == 0 ? q + (t * nq + n) * d
                                          : (uint16_t *)a->tensors[10 + kind] +
                                                ((b * nkv + n) * len + pos) * d;
                if (kind == 2) {
                    for (int64_t c = 0; c < d; c++)
                        out[c] = kv_f32_to_bf16(p[c]);
                    if (pos + 1 < len) /* and the next row cleared, as a ring buffer might */
                        for (int64_t c = 0; c < d; c++)
                            out[d + c] = 0;
                    continue;
                }
                const uint16_t *nw = a->tensors[kind == 0 ? 5 : 6];
                float ss = 0.0f;
                for (int64_t c = 0; c < d; c++)
                    ss += p[c] * p[c];
                float rstd = 1.0f / sqrtf(ss / (float)d + QWEN3_EPS);
                for (int64_t c = 0; c < d; c++)
                    r[c] = qd_round(kv_bf16_to_f32(nw[c]) * qd_round(p[c] * rstd));
                for (int64_t c = 0; c < d; c++) {
                    int64_t j = c < d / 2 ? c + d / 2 : c - d / 2;
                    float rot = c < d / 2 ? -r[j] : r[j];
                    float co = kv_bf16_to_f32(cs[t * d + c]), si = kv_bf16_to_f32(sn[t * d + c]);
                    out[c] = kv_f32_to_bf16(qd_round(r[c] * co) + qd_round(rot * si));
                }
            }
        }
    free(h);
    return 0;
}
/* EVOLVE-BLOCK-END */
