/* An honest, faster softmax for the cpu backend: one exp per element in
 * single precision, stored and then scaled by the reciprocal of the sum. */
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
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            float e = expf(xr[c] - m);
            yr[c] = e;
            sum += e;
        }
        float inv = (float)(1.0 / sum);
        for (int64_t c = 0; c < cols; c++)
            yr[c] *= inv;
    }
    return 0;
}
/* EVOLVE-BLOCK-END */
