/* Red team, class PROCESSES THAT OUTLIVE THE EVALUATION (issue 11): the
 * floating-point environment; cpu, task softmax.
 *
 * It computes a right answer in the default environment, and every call
 * leaves the process in a hostile one when it returns: rounding upward,
 * flush-to-zero and denormals-are-zero set in MXCSR, and traps enabled on
 * every exception (inexact included), so that any floating-point work done
 * after it in its process (a reference, a check, a statistic) either
 * traps or computes in the wrong mode.
 *
 * The judge must say: what it would say of any honest kernel, "correct"
 * (or a rejection that names the floating-point environment): the judge's
 * arithmetic runs elsewhere, or in a restored environment. Today the
 * worker's checks trap: "crash: SIGFPE" for a kernel whose answer is
 * right. */
#define _GNU_SOURCE
#include <kevolve/task.h>
#include <fenv.h>
#include <math.h>
#include <xmmintrin.h>

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

int kv_launch(const kv_launch_args *a)
{
    fesetenv(FE_DFL_ENV); /* its own work in the default environment */
    _mm_setcsr(_mm_getcsr() & ~0x8040u);
    rt_softmax_baseline((const float *)a->tensors[0], (float *)a->tensors[1], a->syms[0],
                        a->syms[1]);
    fesetround(FE_UPWARD);
    _mm_setcsr(_mm_getcsr() | 0x8040u); /* FTZ | DAZ */
    feclearexcept(FE_ALL_EXCEPT);
    feenableexcept(FE_ALL_EXCEPT);
    return 0;
}
