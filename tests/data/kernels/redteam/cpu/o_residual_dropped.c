/* Red team, SHORTCUT, cpu, task qwen3_decode_o.
 *
 * The output projection without the residual add.
 *
 * The judge must say: wrong_result. */
#include <kevolve/task.h>
#include <kevolve/bf16.h>
#include <math.h>
#include <stdint.h>

/* EVOLVE-BLOCK-START */
static float qd_round(float f) { return kv_bf16_to_f32(kv_f32_to_bf16(f)); }

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *attn = a->tensors[0], *wo = a->tensors[1], *res = a->tensors[2];
    (void)res;
    uint16_t *out = a->tensors[3];
    int64_t tok = a->syms[0], inner = a->syms[1], hid = a->syms[2];
    for (int64_t t = 0; t < tok; t++)
        for (int64_t n = 0; n < hid; n++) {
            float s = 0.0f;
            for (int64_t k = 0; k < inner; k++)
                s += kv_bf16_to_f32(wo[n * inner + k]) * kv_bf16_to_f32(attn[t * inner + k]);
            out[t * hid + n] = kv_f32_to_bf16(qd_round(s)); /* no residual */
        }
    return 0;
}
/* EVOLVE-BLOCK-END */
