/* Red team (cpu): right answer, but subtracts the row maximum from x in place. */
#include <kevolve/task.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            m = fmaxf(m, x[r * cols + c]);
        double s = 0;
        for (int64_t c = 0; c < cols; c++)
            s += (y[r * cols + c] = expf(x[r * cols + c] - m));
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = (float)(y[r * cols + c] / s);
    }
}

int kv_launch(const kv_launch_args *a)
{
    float *x = a->tensors[0];
    int64_t rows = a->syms[0], cols = a->syms[1];
    for (int64_t r = 0; r < rows; r++) {
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            m = fmaxf(m, x[r * cols + c]);
        for (int64_t c = 0; c < cols; c++)
            x[r * cols + c] -= m;
    }
    softmax(x, a->tensors[1], rows, cols);
    return 0;
}
