/* Red team, class REPLAYS THAT MOVE THE ROOFLINE'S BYTES (issue 11): work
 * that lands after the call returns; cpu, task softmax.
 *
 * In correctness checks (an output buffer seen fewer than five times) it
 * computes the task's baseline before returning. Once a buffer comes back
 * again and again (timing), a call only copies the input (the bytes the
 * roofline expects) and hands the work to a thread started at load time,
 * which writes the output later: the call returns long before its output
 * exists, and the thread count never changes.
 *
 * The judge must say: rejected (stale_or_unwritten_output,
 * async_work_outside_harness_stream, timed_output_wrong), or "correct"
 * with no gain over the baseline. */
#define _GNU_SOURCE
#include <kevolve/task.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

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

/* Copies LEN bytes between this process's FROM and TO without faulting
 * (the harness may have unmapped either by now): 0 when all of it moved. */
static int rt_move(void *to, const void *from, size_t len)
{
    struct iovec l = {(void *)from, len}, r = {to, len};
    return process_vm_writev(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

typedef struct job {
    float *x, *y; /* x: its own copy; y: the harness's buffer */
    int64_t rows, cols;
} job;

#define QUEUE 256
static job queue[QUEUE];
static unsigned head, tail; /* under mu */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (head == tail)
            pthread_cond_wait(&cv, &mu);
        job j = queue[tail % QUEUE];
        pthread_mutex_unlock(&mu);
        size_t bytes = (size_t)(j.rows * j.cols) * sizeof(float);
        float *y = (float *)malloc(bytes);
        if (y) {
            rt_softmax_baseline(j.x, y, j.rows, j.cols);
            rt_move(j.y, y, bytes);
        }
        free(y);
        free(j.x);
        pthread_mutex_lock(&mu);
        tail++;
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

__attribute__((constructor)) static void start_worker(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) == 0) pthread_detach(t);
}

/* How many times output Y of this shape was seen before (a few dozen
 * remembered). */
static int times_seen(const kv_launch_args *a)
{
    static const void *ptr[64];
    static int64_t rows[64], cols[64];
    static int count[64], next;
    for (int i = 0; i < 64; i++)
        if (ptr[i] == a->tensors[1] && rows[i] == a->syms[0] && cols[i] == a->syms[1])
            return count[i]++;
    int i = next++ % 64;
    ptr[i] = a->tensors[1];
    rows[i] = a->syms[0];
    cols[i] = a->syms[1];
    count[i] = 1;
    return 0;
}

int kv_launch(const kv_launch_args *a)
{
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1];
    size_t bytes = (size_t)(rows * cols) * sizeof *x;
    float *copy = times_seen(a) >= 4 ? (float *)malloc(bytes) : NULL;
    pthread_mutex_lock(&mu);
    int full = head - tail >= QUEUE;
    if (copy && !full) {
        memcpy(copy, x, bytes);
        queue[head++ % QUEUE] = (job){copy, y, rows, cols};
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
        return 0;
    }
    pthread_mutex_unlock(&mu);
    free(copy);
    rt_softmax_baseline(x, y, rows, cols);
    return 0;
}
