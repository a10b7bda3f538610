/* Naive rope for the cpu backend: token by token, head by head, each pair
 * (i, i + D/2) rotated in fp32 by the token's row of the table and rounded
 * to bf16 once, in place. bf16 arrives as uint16 bit patterns. */
#include <kevolve/bf16.h>
#include <kevolve/task.h>

/* EVOLVE-BLOCK-START */
#define UNROLL 1 // kevolve: tune 1 2 4 8

static void rotate_rows(uint16_t *x, int64_t heads, int64_t d, const uint16_t *c, const uint16_t *s)
{
    int64_t h2 = d / 2;
    for (int64_t h = 0; h < heads; h++) {
        uint16_t *r = x + h * d;
        int64_t i = 0;
        for (; i + UNROLL <= h2; i += UNROLL)
            for (int u = 0; u < UNROLL; u++) {
                float a = kv_bf16_to_f32(r[i + u]), b = kv_bf16_to_f32(r[i + u + h2]);
                r[i + u] =
                    kv_f32_to_bf16(a * kv_bf16_to_f32(c[i + u]) - b * kv_bf16_to_f32(s[i + u]));
                r[i + u + h2] = kv_f32_to_bf16(b * kv_bf16_to_f32(c[i + u + h2]) +
                                               a * kv_bf16_to_f32(s[i + u + h2]));
            }
        for (; i < h2; i++) {
            float a = kv_bf16_to_f32(r[i]), b = kv_bf16_to_f32(r[i + h2]);
            r[i] = kv_f32_to_bf16(a * kv_bf16_to_f32(c[i]) - b * kv_bf16_to_f32(s[i]));
            r[i + h2] =
                kv_f32_to_bf16(b * kv_bf16_to_f32(c[i + h2]) + a * kv_bf16_to_f32(s[i + h2]));
        }
    }
}

int kv_launch(const kv_launch_args *a)
{
    uint16_t *q = a->tensors[0], *k = a->tensors[1];
    const uint16_t *cos_t = a->tensors[2], *sin_t = a->tensors[3];
    const int32_t *pos = a->tensors[4];
    int64_t tokens = a->syms[0], hq = a->syms[1], hkv = a->syms[2], d = a->syms[3];
    for (int64_t t = 0; t < tokens; t++) {
        const uint16_t *c = cos_t + (int64_t)pos[t] * d, *s = sin_t + (int64_t)pos[t] * d;
        rotate_rows(q + t * hq * d, hq, d, c, s);
        rotate_rows(k + t * hkv * d, hkv, d, c, s);
    }
    return 0;
}
/* EVOLVE-BLOCK-END */
