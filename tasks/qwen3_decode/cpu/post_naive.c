/* Naive qwen3_decode_post for the cpu backend: a token at a time, the
 * output projection and the residual into mid, then the post-attention
 * RMSNorm, the gate and up dot products, silu(g) * u rounded to bf16 into
 * act, the down projection and the residual add, rounded where PyTorch's
 * bf16 model rounds. */
#include <kevolve/task.h>
#include <kevolve/bf16.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* EVOLVE-BLOCK-START */
#define QWEN3_EPS 1e-6f

static float qd_round(float f) { return kv_bf16_to_f32(kv_f32_to_bf16(f)); }

/* bf16 row W of K values times the bf16 vector X, in fp32. */
static float qd_dot16(const uint16_t *w, const uint16_t *x, int64_t k)
{
    float s = 0.0f;
    for (int64_t i = 0; i < k; i++)
        s += kv_bf16_to_f32(w[i]) * kv_bf16_to_f32(x[i]);
    return s;
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
    const uint16_t *attn = a->tensors[0], *wo = a->tensors[1], *res = a->tensors[2],
                   *ln = a->tensors[3], *wg = a->tensors[4], *wu = a->tensors[5],
                   *wd = a->tensors[6];
    uint16_t *mid = a->tensors[7], *act = a->tensors[8], *out = a->tensors[9];
    int64_t tok = a->syms[0], inner = a->syms[1], hid = a->syms[2], inter = a->syms[3];
    float *h = malloc((size_t)(hid + inter) * sizeof *h), *av = h + hid;
    if (!h) return 1;
    for (int64_t t = 0; t < tok; t++) {
        uint16_t *m = mid + t * hid;
        for (int64_t n = 0; n < hid; n++)
            m[n] = kv_f32_to_bf16(kv_bf16_to_f32(res[t * hid + n]) +
                                  qd_round(qd_dot16(wo + n * inner, attn + t * inner, inner)));
        float ss = 0.0f;
        for (int64_t i = 0; i < hid; i++)
            ss += kv_bf16_to_f32(m[i]) * kv_bf16_to_f32(m[i]);
        float rstd = 1.0f / sqrtf(ss / (float)hid + QWEN3_EPS);
        for (int64_t i = 0; i < hid; i++)
            h[i] = qd_round(kv_bf16_to_f32(ln[i]) * qd_round(kv_bf16_to_f32(m[i]) * rstd));
        for (int64_t j = 0; j < inter; j++) {
            float g = qd_round(qd_dot(wg + j * hid, h, hid));
            float u = qd_round(qd_dot(wu + j * hid, h, hid));
            av[j] = qd_round(qd_round(g / (1.0f + expf(-g))) * u);
            act[t * inter + j] = kv_f32_to_bf16(av[j]);
        }
        for (int64_t n = 0; n < hid; n++)
            out[t * hid + n] =
                kv_f32_to_bf16(kv_bf16_to_f32(m[n]) + qd_round(qd_dot(wd + n * inter, av, inter)));
    }
    free(h);
    return 0;
}
/* EVOLVE-BLOCK-END */
