/* Red team (cpu): hands the work to a detached thread and returns before it is done. */
#include <kevolve/task.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
static void softmax(const float *x, float *y, int64_t rows, int64_t cols);
static void *worker(void *p)
{
    const kv_launch_args *a = p;
    usleep(1000);
    softmax(a->tensors[0], a->tensors[1], a->syms[0], a->syms[1]);
    return NULL;
}

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
    static kv_launch_args copy;
    copy = *a;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, &copy) != 0) return 1;
    pthread_detach(t);
    return 0;
}
