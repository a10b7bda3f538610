/* Red team, HONEST CONTROL, cpu, task rmsnorm.
 *
 * RMSNorm as PyTorch's Qwen3RMSNorm computes it: the variance in fp32, the
 * normalised x rounded to bf16, then multiplied by the weight in bf16
 * (rounded again). The standard kernel users call must pass the task's
 * tolerance.
 *
 * The judge must say: correct. */
#include <kevolve/task.h>
#include <math.h>
#include <string.h>

static float bf(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t to_bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *x = a->tensors[0], *w = a->tensors[1];
    uint16_t *y = a->tensors[2];
    int64_t rows = a->syms[0], h = a->syms[1];
    for (int64_t r = 0; r < rows; r++) {
        float ss = 0.0f;
        for (int64_t c = 0; c < h; c++)
            ss += bf(x[r * h + c]) * bf(x[r * h + c]);
        float rstd = 1.0f / sqrtf(ss / (float)h + 1e-6f);
        for (int64_t c = 0; c < h; c++) {
            uint16_t n = to_bf(bf(x[r * h + c]) * rstd);
            y[r * h + c] = to_bf(bf(w[c]) * bf(n));
        }
    }
    return 0;
}
