/* Red team (cpu): never returns. */
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
    volatile int spin = 1;
    while (spin) {
    }
    softmax(a->tensors[0], a->tensors[1], a->syms[0], a->syms[1]);
    return 0;
}
