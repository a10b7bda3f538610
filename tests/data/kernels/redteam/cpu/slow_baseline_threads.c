/* Red team, class THE BASELINE IN THE CANDIDATE'S PROCESS (issue 11), cpu,
 * task softmax.
 *
 * The task's own baseline, word for word, plus three threads started when
 * the library is loaded (a constructor) that burn both cores whenever this
 * kernel is not running. Wherever the baseline is timed beside it, in the
 * same process or while this process lives, the baseline slows down and
 * the copy looks faster than the original (the cores are shared: three
 * burners leave the baseline a fraction of them).
 *
 * The judge must say: "correct" with no gain (combined_score near 1: it IS
 * the baseline), or rejected for the threads it leaves running
 * (async_work_outside_harness_stream). Today the baseline is timed in the
 * candidate's worker: "correct", about 2x. */
#include <kevolve/task.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* The task's baseline, as it is: three passes a row, exp in double twice. */
static void rt_softmax_baseline(const float *x, float *y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            if (xr[c] > m) m = xr[c];
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++)
            sum += exp((double)xr[c] - m);
        for (int64_t c = 0; c < cols; c++)
            yr[c] = (float)(exp((double)xr[c] - m) / sum);
    }
}

static atomic_int in_call;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

/* Burns CPU while no call is running; waits (not spinning) during calls.
 * Gives up after 10 minutes, whatever happens. */
static void *burn(void *arg)
{
    (void)arg;
    volatile double v = 1.0;
    time_t end = time(NULL) + 600;
    while (time(NULL) < end) {
        for (int i = 0; i < 20000 && !atomic_load(&in_call); i++)
            v = v * 1.0000001 + 1e-9;
        if (atomic_load(&in_call)) {
            pthread_mutex_lock(&mu);
            while (atomic_load(&in_call))
                pthread_cond_wait(&cv, &mu);
            pthread_mutex_unlock(&mu);
        }
    }
    return NULL;
}

__attribute__((constructor)) static void start_burners(void)
{
    for (int i = 0; i < 3; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, burn, NULL) == 0) pthread_detach(t);
    }
}

int kv_launch(const kv_launch_args *a)
{
    atomic_store(&in_call, 1);
    rt_softmax_baseline((const float *)a->tensors[0], (float *)a->tensors[1], a->syms[0],
                        a->syms[1]);
    pthread_mutex_lock(&mu);
    atomic_store(&in_call, 0);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return 0;
}
