/* Red team, SHORTCUT, cpu, task swiglu.
 *
 * A fused projection's halves read the other way round: silu(up) * gate.
 * Both halves are drawn from the same distribution, so only a judge that
 * knows which half is which (the task's layout: the gate first) can tell.
 *
 * The judge must say: rejected (wrong_result). */
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
    const uint16_t *gu = a->tensors[0];
    uint16_t *out = a->tensors[1];
    int64_t rows = a->syms[0], inter = a->syms[2];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < inter; c++) {
            float u = bf(gu[r * 2 * inter + c]), g = bf(gu[r * 2 * inter + inter + c]);
            out[r * inter + c] = to_bf(g / (1.0f + expf(-g)) * u);
        }
    return 0;
}
