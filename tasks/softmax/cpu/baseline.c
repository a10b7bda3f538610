/* Baseline softmax for the cpu backend: three passes per row, exp in double
 * precision computed twice. Plain and correct; candidates should beat it. */
#include <kevolve/task.h>
#include <math.h>

/* EVOLVE-BLOCK-START */
int kv_launch(const kv_launch_args *a)
{
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1];
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            if (xr[c] > m) m = xr[c];
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++)
            sum += exp((double)xr[c] - m);
        for (int64_t c = 0; c < cols; c++)
            yr[c] = (float)(exp((double)xr[c] - m) / sum);
    }
    return 0;
}
/* EVOLVE-BLOCK-END */
