/* Test and timing harness for the matmul example, compiled together with a
 * candidate. It checks the candidate against a naive reference on fresh random
 * matrices (output poisoned first, every element compared), then times the
 * candidate and the naive reference side by side, alternating, and prints the
 * evaluator protocol's JSON: {"metrics": {...}, "artifacts": {...}}, or for
 * a wrong answer {"error": ..., "artifacts": {"reason": "wrong_result"}}.
 * Usage: harness N REPEATS */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void matmul(int n, const double *A, const double *B, double *C);

static void reference(int n, const double *A, const double *B, double *C)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += A[(size_t)i * n + k] * B[(size_t)k * n + j];
            C[(size_t)i * n + j] = s;
        }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 256;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    size_t nn = (size_t)n * n;
    double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B);
    double *C = malloc(nn * sizeof *C), *R = malloc(nn * sizeof *R);
    if (!A || !B || !C || !R) return 3;
    srand((unsigned)time(NULL));
    /* Correctness on an awkward size and the timed size, fresh inputs each. */
    int sizes[2] = {n - 3 > 1 ? n - 3 : 1, n};
    double max_err = 0;
    for (int t = 0; t < 2; t++) {
        int m = sizes[t];
        for (size_t i = 0; i < (size_t)m * m; i++) {
            A[i] = (double)rand() / RAND_MAX - 0.5;
            B[i] = (double)rand() / RAND_MAX - 0.5;
            C[i] = NAN; /* poison: an unwritten element fails */
        }
        matmul(m, A, B, C);
        reference(m, A, B, R);
        for (size_t i = 0; i < (size_t)m * m; i++) {
            double e = fabs(C[i] - R[i]);
            if (!(e <= 1e-9 * m)) {
                /* A failure, said as kevolve's protocol says it: "error" (why)
                 * and artifacts.reason (its code). A score of 0 would be a score. */
                printf("{\"error\": \"wrong result at n=%d, element %zu: %g instead of %g\", "
                       "\"metrics\": {\"correct\": 0}, \"artifacts\": {\"reason\": "
                       "\"wrong_result\"}}\n",
                       m, i, C[i], R[i]);
                return 0;
            }
            if (e > max_err) max_err = e;
        }
    }
    double *tc = malloc((size_t)reps * sizeof *tc), *tr = malloc((size_t)reps * sizeof *tr);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        matmul(n, A, B, C);
        double t1 = now();
        reference(n, A, B, R);
        double t2 = now();
        tc[r] = t1 - t0;
        tr[r] = t2 - t1;
    }
    qsort(tc, (size_t)reps, sizeof *tc, cmp_double);
    qsort(tr, (size_t)reps, sizeof *tr, cmp_double);
    double mc = tc[reps / 2], mr = tr[reps / 2];
    printf("{\"metrics\": {\"combined_score\": %.6f, \"speedup\": %.6f, \"time_ms\": %.4f, "
           "\"reference_ms\": %.4f, \"correct\": 1, \"max_abs_error\": %.3g}, "
           "\"artifacts\": {\"timing\": \"median of %d runs at n=%d, candidate and naive "
           "reference alternating\"}}\n",
           mr / mc, mr / mc, mc * 1e3, mr * 1e3, max_err, reps, n);
    free(tc);
    free(tr);
    free(A);
    free(B);
    free(C);
    free(R);
    return 0;
}
