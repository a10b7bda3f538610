/* Red team, HONEST CONTROL, cpu, task rmsnorm.
 *
 * RMSNorm as PyTorch's Qwen3RMSNorm computes it: the variance in fp32, the
 * normalised x rounded to bf16, then multiplied by the weight in bf16
 * (rounded again). The standard kernel users call must pass the task's
 * tolerance.
 *
 * The judge must say: correct. */
#include <kevolve/bf16.h>
#include <kevolve/task.h>
#include <math.h>

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *x = a->tensors[0], *w = a->tensors[1];
    uint16_t *y = a->tensors[2];
    int64_t rows = a->syms[0], h = a->syms[1];
    for (int64_t r = 0; r < rows; r++) {
        float ss = 0.0f;
        for (int64_t c = 0; c < h; c++)
            ss += kv_bf16_to_f32(x[r * h + c]) * kv_bf16_to_f32(x[r * h + c]);
        float rstd = 1.0f / sqrtf(ss / (float)h + 1e-6f);
        for (int64_t c = 0; c < h; c++) {
            uint16_t n = kv_f32_to_bf16(kv_bf16_to_f32(x[r * h + c]) * rstd);
            y[r * h + c] = kv_f32_to_bf16(kv_bf16_to_f32(w[c]) * kv_bf16_to_f32(n));
        }
    }
    return 0;
}
