/* Red team, SHORTCUT, cpu, task rope.
 *
 * GPT-J's pairing, (2i, 2i + 1), where Qwen3 (and transformers'
 * rotate_half) pairs element i with i + D/2: a rotation of the wrong pairs,
 * right in every other way.
 *
 * The judge must say: wrong_result. */
#define ROPE_PAIR(i) ((i) ^ 1)
#define ROPE_ROW(k) pos[k]
#define ROPE_KEYS 1
#include <kevolve/bf16.h>
#include <kevolve/task.h>

static void rows(uint16_t *x, int64_t n, int64_t d, const uint16_t *c, const uint16_t *s)
{
    for (int64_t r = 0; r < n; r++) {
        uint16_t *v = x + r * d;
        for (int64_t i = 0; i < d; i++) {
            int64_t j = ROPE_PAIR(i);
            if (j < i) continue; /* each pair once, the lower element first */
            float a = kv_bf16_to_f32(v[i]), b = kv_bf16_to_f32(v[j]);
            v[i] = kv_f32_to_bf16(a * kv_bf16_to_f32(c[i]) - b * kv_bf16_to_f32(s[i]));
            v[j] = kv_f32_to_bf16(b * kv_bf16_to_f32(c[j]) + a * kv_bf16_to_f32(s[j]));
        }
    }
}

int kv_launch(const kv_launch_args *a)
{
    int64_t t = a->syms[0], hq = a->syms[1], hkv = a->syms[2], d = a->syms[3];
    const int32_t *pos = a->tensors[4];
    (void)pos;
    for (int64_t k = 0; k < t; k++) {
        const uint16_t *c = (const uint16_t *)a->tensors[2] + (int64_t)(ROPE_ROW(k)) * d,
                       *s = (const uint16_t *)a->tensors[3] + (int64_t)(ROPE_ROW(k)) * d;
        rows((uint16_t *)a->tensors[0] + k * hq * d, hq, d, c, s);
        if (ROPE_KEYS) rows((uint16_t *)a->tensors[1] + k * hkv * d, hkv, d, c, s);
    }
    return 0;
}
