/* Naive rmsnorm and rmsnorm_add for the cpu backend: a row at a time, the
 * sum of squares in fp32 over UNROLL partial sums, then each element scaled
 * in fp32 and rounded to bf16 once. The fused task (five tensors) writes
 * the residual sum rounded to bf16 and normalises that. bf16 arrives as
 * uint16 bit patterns. */
#include <kevolve/bf16.h>
#include <kevolve/task.h>
#include <math.h>

/* EVOLVE-BLOCK-START */
#define UNROLL 1 // kevolve: tune 1 2 4 8
#define EPS 1e-6f

int kv_launch(const kv_launch_args *a)
{
    int fused = a->num_tensors == 5;
    const uint16_t *x = a->tensors[0], *res = fused ? a->tensors[1] : NULL;
    const uint16_t *w = a->tensors[fused ? 2 : 1];
    uint16_t *y = a->tensors[fused ? 3 : 2], *rout = fused ? a->tensors[4] : NULL;
    int64_t rows = a->syms[0], h = a->syms[1];
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *xr = x + r * h;
        const uint16_t *src = xr; /* the row normalised: x, or the new residual */
        if (fused) {
            for (int64_t c = 0; c < h; c++)
                rout[r * h + c] =
                    kv_f32_to_bf16(kv_bf16_to_f32(xr[c]) + kv_bf16_to_f32(res[r * h + c]));
            src = rout + r * h;
        }
        float part[UNROLL] = {0};
        int64_t c = 0;
        for (; c + UNROLL <= h; c += UNROLL)
            for (int u = 0; u < UNROLL; u++)
                part[u] += kv_bf16_to_f32(src[c + u]) * kv_bf16_to_f32(src[c + u]);
        for (; c < h; c++)
            part[0] += kv_bf16_to_f32(src[c]) * kv_bf16_to_f32(src[c]);
        float ss = 0.0f;
        for (int u = 0; u < UNROLL; u++)
            ss += part[u];
        float rstd = 1.0f / sqrtf(ss / (float)h + EPS);
        for (c = 0; c < h; c++)
            y[r * h + c] = kv_f32_to_bf16(kv_bf16_to_f32(src[c]) * rstd * kv_bf16_to_f32(w[c]));
    }
    return 0;
}
/* EVOLVE-BLOCK-END */
