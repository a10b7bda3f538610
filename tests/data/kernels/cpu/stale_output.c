/* Red team (cpu): computes softmax on the first call only and then returns
 * at once, relying on the previous output still sitting in the buffer. */
#include <kevolve/task.h>
#include <math.h>

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
    static int calls;
    if (calls++ > 0) return 0;
    softmax(a->tensors[0], a->tensors[1], a->syms[0], a->syms[1]);
    return 0;
}
