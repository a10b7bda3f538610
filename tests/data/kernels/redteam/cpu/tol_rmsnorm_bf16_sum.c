/* Red team, class TOLERANCE, cpu, task rmsnorm.
 *
 * The naive kernel with its sum of squares kept in bf16 (rounded after
 * every addition), as a kernel that never widens its accumulator would:
 * past a few hundred elements the squares stop counting and y is tens of
 * percent off.
 *
 * The judge must say: wrong_result (or wrong_on_held_out_shape). */
#include <kevolve/bf16.h>
#include <kevolve/task.h>
#include <math.h>

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *x = a->tensors[0], *w = a->tensors[1];
    uint16_t *y = a->tensors[2];
    int64_t rows = a->syms[0], h = a->syms[1];
    for (int64_t r = 0; r < rows; r++) {
        uint16_t ss = 0; /* bf16 accumulator */
        for (int64_t c = 0; c < h; c++)
            ss = kv_f32_to_bf16(kv_bf16_to_f32(ss) +
                                kv_bf16_to_f32(x[r * h + c]) * kv_bf16_to_f32(x[r * h + c]));
        float rstd = 1.0f / sqrtf(kv_bf16_to_f32(ss) / (float)h + 1e-6f);
        for (int64_t c = 0; c < h; c++)
            y[r * h + c] =
                kv_f32_to_bf16(kv_bf16_to_f32(x[r * h + c]) * rstd * kv_bf16_to_f32(w[c]));
    }
    return 0;
}
