/* Red team, HONEST CONTROL (issue 11), cpu, task softmax.
 *
 * A kernel with a workspace of its own: a buffer it allocates on its first
 * call (growing it when a bigger shape comes) and keeps for every later
 * call, holding each row's exponentials in double precision between the
 * passes. It carries no result from one call to the next.
 *
 * The judge must say: "correct". */
#include <kevolve/task.h>
#include <math.h>
#include <stdlib.h>

static double *work;
static size_t work_len;

int kv_launch(const kv_launch_args *a)
{
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1];
    if ((size_t)cols > work_len) {
        double *w = (double *)realloc(work, (size_t)cols * sizeof *w);
        if (!w) return 1;
        work = w;
        work_len = (size_t)cols;
    }
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            m = fmaxf(m, xr[c]);
        double sum = 0;
        for (int64_t c = 0; c < cols; c++)
            sum += (work[c] = exp((double)xr[c] - m));
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = (float)(work[c] / sum);
    }
    return 0;
}
