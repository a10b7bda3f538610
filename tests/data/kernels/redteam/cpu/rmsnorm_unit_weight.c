/* Red team, class SHORTCUT, cpu, task rmsnorm.
 *
 * Skips the weight, as if it were Qwen3's initial all-ones: half the reads
 * saved on the small shapes. The judge draws the weights like any input.
 *
 * The judge must say: wrong_result. */
#include <kevolve/bf16.h>
#include <kevolve/task.h>
#include <math.h>

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *x = a->tensors[0];
    uint16_t *y = a->tensors[2];
    int64_t rows = a->syms[0], h = a->syms[1];
    for (int64_t r = 0; r < rows; r++) {
        float ss = 0.0f;
        for (int64_t c = 0; c < h; c++)
            ss += kv_bf16_to_f32(x[r * h + c]) * kv_bf16_to_f32(x[r * h + c]);
        float rstd = 1.0f / sqrtf(ss / (float)h + 1e-6f);
        for (int64_t c = 0; c < h; c++)
            y[r * h + c] = kv_f32_to_bf16(kv_bf16_to_f32(x[r * h + c]) * rstd);
    }
    return 0;
}
