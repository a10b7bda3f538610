/* Red team, SHORTCUT, cpu, task swiglu.
 *
 * A fused projection's halves read the other way round: silu(up) * gate.
 * Both halves are drawn from the same distribution, so only a judge that
 * knows which half is which (the task's layout: the gate first) can tell.
 *
 * The judge must say: rejected (wrong_result). */
#include <kevolve/bf16.h>
#include <kevolve/task.h>
#include <math.h>

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *gu = a->tensors[0];
    uint16_t *out = a->tensors[1];
    int64_t rows = a->syms[0], inter = a->syms[2];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < inter; c++) {
            float u = kv_bf16_to_f32(gu[r * 2 * inter + c]),
                  g = kv_bf16_to_f32(gu[r * 2 * inter + inter + c]);
            out[r * inter + c] = kv_f32_to_bf16(g / (1.0f + expf(-g)) * u);
        }
    return 0;
}
