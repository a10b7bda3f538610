/* Red team (cpu): computes in the calling thread but leaves a detached
 * thread behind that lives on for 0.4 s after the call returned. Must be
 * rejected (async_work_outside_harness_stream): a thread that outlives the
 * judge's 50 ms grace could work on the next inputs. */
#include <kevolve/task.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>

static void *linger(void *p)
{
    (void)p;
    usleep(400000);
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
