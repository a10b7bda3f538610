/* Dense matrix multiply C = A * B (n x n, row-major doubles): the program
 * kevolve evolves. The evaluator compiles it with harness.c, checks it against
 * a reference on random matrices, and times it side by side with the naive
 * triple loop. Only the code between the EVOLVE-BLOCK markers may change; the
 * `kevolve: tune` annotations declare the values the tune mutator may try. */
#include <stddef.h>

/* EVOLVE-BLOCK-START */
#define LOOP_ORDER 0 /* kevolve: tune 0 1 2 */
#define TILE 0       /* kevolve: tune 0 16 32 64 128 */
#define UNROLL 1     /* kevolve: tune 1 2 4 8 */

static void kernel_ijk(int n, const double *A, const double *B, double *C, int i0, int i1,
                       int k0, int k1, int j0, int j1)
{
    for (int i = i0; i < i1; i++)
        for (int j = j0; j < j1; j++) {
            double s = C[(size_t)i * n + j];
            for (int k = k0; k < k1; k++) s += A[(size_t)i * n + k] * B[(size_t)k * n + j];
            C[(size_t)i * n + j] = s;
        }
}

static void kernel_ikj(int n, const double *A, const double *B, double *C, int i0, int i1,
                       int k0, int k1, int j0, int j1)
{
    for (int i = i0; i < i1; i++)
        for (int k = k0; k < k1; k++) {
            double a = A[(size_t)i * n + k];
            const double *b = B + (size_t)k * n;
            double *c = C + (size_t)i * n;
            int j = j0;
            for (; j + UNROLL <= j1; j += UNROLL)
                for (int u = 0; u < UNROLL; u++) c[j + u] += a * b[j + u];
            for (; j < j1; j++) c[j] += a * b[j];
        }
}

static void kernel_jki(int n, const double *A, const double *B, double *C, int i0, int i1,
                       int k0, int k1, int j0, int j1)
{
    for (int j = j0; j < j1; j++)
        for (int k = k0; k < k1; k++) {
            double b = B[(size_t)k * n + j];
            for (int i = i0; i < i1; i++) C[(size_t)i * n + j] += A[(size_t)i * n + k] * b;
        }
}

static void block(int n, const double *A, const double *B, double *C, int i0, int i1, int k0,
                  int k1, int j0, int j1)
{
    if (LOOP_ORDER == 1)
        kernel_ikj(n, A, B, C, i0, i1, k0, k1, j0, j1);
    else if (LOOP_ORDER == 2)
        kernel_jki(n, A, B, C, i0, i1, k0, k1, j0, j1);
    else
        kernel_ijk(n, A, B, C, i0, i1, k0, k1, j0, j1);
}
/* EVOLVE-BLOCK-END */

void matmul(int n, const double *A, const double *B, double *C)
{
    for (size_t i = 0; i < (size_t)n * n; i++) C[i] = 0.0;
    int t = TILE > 0 ? TILE : n;
    for (int i0 = 0; i0 < n; i0 += t)
        for (int k0 = 0; k0 < n; k0 += t)
            for (int j0 = 0; j0 < n; j0 += t)
                block(n, A, B, C, i0, i0 + t < n ? i0 + t : n, k0, k0 + t < n ? k0 + t : n, j0,
                      j0 + t < n ? j0 + t : n);
}
