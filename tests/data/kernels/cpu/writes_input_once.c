/* Red team (cpu): right answer every time, but on its first call only it
 * scales x by 2 after reading it: a change a check after every second run
 * must still see. */
#include <kevolve/task.h>
#include <math.h>
#include <stdint.h>

int kv_launch(const kv_launch_args *a)
{
    static int calls;
    float *x = a->tensors[0], *y = a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1];
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
    if (calls++ == 0)
        for (int64_t i = 0; i < rows * cols; i++)
            x[i] *= 2;
    return 0;
}
