/* Red team, TOLERANCE, cpu, task swiglu.
 *
 * The sigmoid of silu replaced by a straight line clamped to [0, 1]
 * (hard-sigmoid, 0.2 g + 0.5: the cheap activation some mobile networks
 * use), everything else in fp32 and rounded once. It skips the exponential
 * and is off by up to about 10% of a value near |g| = 2: far outside
 * 2^-6.
 *
 * The judge must say: rejected (wrong_result). */
#include <kevolve/bf16.h>
#include <kevolve/task.h>

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *gu = a->tensors[0];
    uint16_t *out = a->tensors[1];
    int64_t rows = a->syms[0], inter = a->syms[2];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < inter; c++) {
            float g = kv_bf16_to_f32(gu[r * 2 * inter + c]),
                  u = kv_bf16_to_f32(gu[r * 2 * inter + inter + c]);
            float s = 0.2f * g + 0.5f;
            s = s < 0.0f ? 0.0f : s > 1.0f ? 1.0f : s;
            out[r * inter + c] = kv_f32_to_bf16(g * s * u);
        }
    return 0;
}
