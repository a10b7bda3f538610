/* Naive swiglu for the cpu backend: row by row, UNROLL elements at a time,
 * silu(gate) * up in fp32 and rounded to bf16 once. bf16 arrives as uint16
 * bit patterns; gate_up's row holds the gate's INTER values, then the up's. */
#include <kevolve/bf16.h>
#include <kevolve/task.h>
#include <math.h>

/* EVOLVE-BLOCK-START */
#define UNROLL 1 // kevolve: tune 1 2 4 8

static float silu_mul(uint16_t g, uint16_t u)
{
    float x = kv_bf16_to_f32(g);
    return x / (1.0f + expf(-x)) * kv_bf16_to_f32(u);
}

int kv_launch(const kv_launch_args *a)
{
    const uint16_t *gu = a->tensors[0];
    uint16_t *out = a->tensors[1];
    int64_t rows = a->syms[0], inter = a->syms[2];
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *g = gu + r * 2 * inter, *u = g + inter;
        uint16_t *o = out + r * inter;
        int64_t c = 0;
        for (; c + UNROLL <= inter; c += UNROLL)
            for (int k = 0; k < UNROLL; k++)
                o[c + k] = kv_f32_to_bf16(silu_mul(g[c + k], u[c + k]));
        for (; c < inter; c++)
            o[c] = kv_f32_to_bf16(silu_mul(g[c], u[c]));
    }
    return 0;
}
/* EVOLVE-BLOCK-END */
