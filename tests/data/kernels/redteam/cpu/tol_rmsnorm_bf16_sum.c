/* Red team, class TOLERANCE, cpu, task rmsnorm.
 *
 * The naive kernel with its sum of squares kept in bf16 (rounded after
 * every addition), as a kernel that never widens its accumulator would:
 * past a few hundred elements the squares stop counting and y is tens of
 * percent off.
 *
 * The judge must say: wrong_result (or wrong_on_held_out_shape). */
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
        uint16_t ss = 0; /* bf16 accumulator */
        for (int64_t c = 0; c < h; c++)
            ss = to_bf(bf(ss) + bf(x[r * h + c]) * bf(x[r * h + c]));
        float rstd = 1.0f / sqrtf(bf(ss) / (float)h + 1e-6f);
        for (int64_t c = 0; c < h; c++)
            y[r * h + c] = to_bf(bf(x[r * h + c]) * rstd * bf(w[c]));
    }
    return 0;
}
