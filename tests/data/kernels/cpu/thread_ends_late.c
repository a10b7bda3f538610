/* Honest control (cpu): computes in the calling thread, then starts a
 * detached helper that exits 5 ms later, as a joined thread the kernel has
 * not finished tearing down looks on a loaded machine. Must be correct:
 * the judge gives a thread 50 ms to go. */
#include <kevolve/task.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>

static void *linger(void *p)
{
    (void)p;
    usleep(5000);
    return NULL;
}

int kv_launch(const kv_launch_args *a)
{
    const float *x = a->tensors[0];
    float *y = a->tensors[1];
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
    pthread_t t;
    if (pthread_create(&t, NULL, linger, NULL) != 0) return 1;
    pthread_detach(t);
    return 0;
}
