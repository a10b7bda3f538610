/* Red team PROBE (not a cheat): tells the red-team tests which judge they
 * face. An honest softmax that fails (returns 1: launch_failed) when it
 * finds an interval timer armed in its own process while it runs: the old
 * judge's in-process watchdog, which issue 11 moves out of the candidate's
 * process. "correct" means the judge keeps its watchdog elsewhere: the
 * separated judge has landed, and the red team's hard assertions apply. */
#include <kevolve/task.h>
#include <math.h>
#include <sys/time.h>

int kv_launch(const kv_launch_args *a)
{
    struct itimerval it;
    if (getitimer(ITIMER_REAL, &it) == 0 && (it.it_value.tv_sec || it.it_value.tv_usec)) return 1;
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1];
    for (int64_t r = 0; r < rows; r++) {
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            m = fmaxf(m, x[r * cols + c]);
        double sum = 0;
        for (int64_t c = 0; c < cols; c++)
            sum += (y[r * cols + c] = expf(x[r * cols + c] - m));
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = (float)(y[r * cols + c] / sum);
    }
    return 0;
}
