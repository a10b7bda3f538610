/* Red team, class PROCESSES THAT OUTLIVE THE EVALUATION (issue 11),
 * opencl, task softmax.
 *
 * The host half switches the old in-process watchdog off (every signal it
 * can block blocked, SIGALRM and the termination signals ignored, the
 * interval timers disarmed) and hangs, spinning (two minutes at most).
 *
 * The judge must say: rejected (timeout), within the kernel timeout and
 * its slack. */
#ifdef __OPENCL_VERSION__

/* The task's baseline kernel, as it is: one work-item per row, three passes. */
__kernel void softmax_rows(__global const float *x, __global float *y, long rows, long cols)
{
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + r * cols;
    __global float *yr = y + r * cols;
    float m = -INFINITY;
    for (long c = 0; c < cols; c++)
        m = fmax(m, xr[c]);
    float sum = 0.0f;
    for (long c = 0; c < cols; c++)
        sum += exp(xr[c] - m);
    for (long c = 0; c < cols; c++)
        yr[c] = exp(xr[c] - m) / sum;
}

/* Zeros for y, reading x (the bytes the roofline expects). */
__kernel void zeros(__global const float *x, __global float *y, long n)
{
    long i = get_global_id(0);
    if (i < n) y[i] = x[i] * 0.0f;
}

#else
#include <kevolve/task.h>
#include <CL/cl.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

int kv_launch(const kv_launch_args *a)
{
    (void)a;
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    int ignored[] = {SIGALRM, SIGTERM, SIGINT, SIGHUP, SIGXCPU, SIGVTALRM, SIGPROF};
    for (unsigned i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        signal(ignored[i], SIG_IGN);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    setitimer(ITIMER_VIRTUAL, &off, NULL);
    setitimer(ITIMER_PROF, &off, NULL);
    volatile double v = 1;
    time_t end = time(NULL) + 120;
    while (time(NULL) < end)
        v = v * 1.0000001 + 1e-9;
    return 1;
}
#endif
