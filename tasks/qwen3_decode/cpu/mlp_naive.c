/* Naive qwen3_decode_mlp for the cpu backend: a token at a time, the
 * post-attention RMSNorm, the gate and up dot products, silu(g) * u
 * rounded to bf16 into act, then the down projection and the residual
 * add, rounded where PyTorch's bf16 model rounds. */
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
    const uint16_t *x = a->tensors[0], *ln = a->tensors[1], *wg = a->tensors[2],
                   *wu = a->tensors[3], *wd = a->tensors[4];
    uint16_t *act = a->tensors[5], *out = a->tensors[6];
    int64_t tok = a->syms[0], hid = a->syms[1], inter = a->syms[2];
    float *h = malloc((size_t)(hid + inter) * sizeof *h), *av = h + hid;
    if (!h) return 1;
    for (int64_t t = 0; t < tok; t++) {
        qd_norm(x + t * hid, ln, hid, h);
        for (int64_t j = 0; j < inter; j++) {
            float g = qd_round(qd_dot(wg + j * hid, h, hid));
            float u = qd_round(qd_dot(wu + j * hid, h, hid));
            av[j] = qd_round(qd_round(g / (1.0f + expf(-g))) * u);
            act[t * inter + j] = kv_f32_to_bf16(av[j]);
        }
        for (int64_t n = 0; n < hid; n++) {
            float d = qd_round(qd_dot(wd + n * inter, av, inter));
            out[t * hid + n] = kv_f32_to_bf16(kv_bf16_to_f32(x[t * hid + n]) + d);
        }
    }
    free(h);
    return 0;
}
/* EVOLVE-BLOCK-END */
