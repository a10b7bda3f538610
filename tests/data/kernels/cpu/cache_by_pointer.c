/* Red team (cpu): remembers the output for the last input pointer and replays it when called again
 * with the same buffers. */
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
    static const void *last_x;
    static int64_t last_n;
    static float *saved;
    int64_t n = a->syms[0] * a->syms[1];
    if (a->tensors[0] == last_x && n == last_n) {
        memcpy(a->tensors[1], saved, (size_t)n * sizeof(float));
        return 0;
    }
    softmax(a->tensors[0], a->tensors[1], a->syms[0], a->syms[1]);
    free(saved);
    saved = malloc((size_t)n * sizeof(float));
    memcpy(saved, a->tensors[1], (size_t)n * sizeof(float));
    last_x = a->tensors[0];
    last_n = n;
    return 0;
}
