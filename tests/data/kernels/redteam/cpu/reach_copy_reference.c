/* Red team, class THE JUDGE WITHIN REACH (issue 11), cpu, task softmax.
 *
 * It computes nothing. It searches its own address space (/proc/self/maps:
 * the heap and the anonymous mappings) for the judge's double-precision
 * reference of the very inputs it was handed (found by the ratios
 * y[1]/y[0] = exp(x[1] - x[0]) of row 0 and a row summing to 1) and copies
 * it into its output. Where there is no reference to find it writes zeros.
 *
 * The judge must say: rejected (wrong_result, or timed_output_wrong): the
 * candidate's process holds no reference. Today the reference lives in the
 * worker that runs the candidate: "correct". */
#define _GNU_SOURCE
#include <kevolve/task.h>
#include <math.h>
/* ---- reading this process's memory without faulting ---- */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* Copies LEN bytes at ADDR of process PID (this one: getpid()) into DST;
 * 0 when all of it was readable. Unmapped memory fails, it does not fault. */
static int rt_peek(int pid, uintptr_t addr, void *dst, size_t len)
{
    struct iovec l = {dst, len}, r = {(void *)addr, len};
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* Scratch memory of this candidate, left out of every scan (it holds
 * copies of what was scanned): RT_ARENA bytes from rt_arena(). */
#define RT_ARENA ((size_t)80 << 20)
static unsigned char *rt_arena(void)
{
    static unsigned char *a;
    if (!a) {
        void *m = mmap(NULL, RT_ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        a = m == MAP_FAILED ? NULL : (unsigned char *)m;
    }
    return a;
}

/* Calls FOUND(ctx, addr, words, n) for every chunk of the anonymous
 * read-write memory of this process (the heap and every private mapping
 * under 1 GiB: where the harness keeps its arrays), as 8-byte words, until
 * it returns nonzero; returns that address (0: not found). HINT, when not 0,
 * is searched first: the region of the last hit. */
typedef uintptr_t (*rt_scan_fn)(void *ctx, uintptr_t addr, const double *w, size_t n);
static uintptr_t rt_scan(rt_scan_fn fn, void *ctx, uintptr_t hint)
{
    enum { CHUNK = 1 << 20, OVERLAP = 4096 };
    unsigned char *arena = rt_arena();
    if (!arena) return 0;
    double *buf = (double *)arena; /* the first CHUNK + OVERLAP bytes of the arena */
    uintptr_t mine = (uintptr_t)arena, mine_end = mine + RT_ARENA;
    uintptr_t lo[4096], hi[4096];
    int n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char line[512];
    while (n < 4096 && fgets(line, sizeof line, f)) {
        unsigned long a = 0, b = 0;
        char perms[8] = "", path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &a, &b, perms, path) < 3) continue;
        if (perms[0] != 'r' || perms[1] != 'w' || (path[0] && strcmp(path, "[heap]") != 0))
            continue;
        if (b - a > (1ul << 30)) continue;
        /* Up to two pieces: the mapping less this candidate's own arena
         * (neighbouring mappings show up merged). */
        uintptr_t piece[2][2] = {{a, b < mine ? b : mine}, {a > mine_end ? a : mine_end, b}};
        if (b <= mine || a >= mine_end) piece[0][1] = b, piece[1][0] = b;
        for (int k = 0; k < 2 && n < 4096; k++) {
            if (piece[k][1] <= piece[k][0]) continue;
            lo[n] = piece[k][0];
            hi[n] = piece[k][1];
            if (hint >= lo[n] && hint < hi[n] && n > 0) { /* the last hit's region first */
                uintptr_t l0 = lo[0], h0 = hi[0];
                lo[0] = lo[n], hi[0] = hi[n];
                lo[n] = l0, hi[n] = h0;
            }
            n++;
        }
    }
    fclose(f);
    for (int i = 0; i < n; i++)
        for (uintptr_t a = lo[i]; a < hi[i]; a += CHUNK) {
            size_t len = hi[i] - a < (uintptr_t)CHUNK + OVERLAP ? hi[i] - a : CHUNK + OVERLAP;
            if (rt_peek(getpid(), a, buf, len) != 0) continue;
            uintptr_t hit = fn(ctx, a, buf, len / 8);
            if (hit) return hit;
        }
    return 0;
}
/* ---- end of the memory reading ---- */
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

typedef struct want {
    double ratio[3]; /* y[k] / y[0] for k = 1..3 in row 0 */
    int64_t rows, cols;
    const float *x;
} want;

/* The reference at W[k]: row 0's ratios right, and (checked only then)
 * every row summing to 1. It is left in the arena at REF. */
#define REF ((double *)(rt_arena() + (4u << 20)))
static uintptr_t match(void *ctx, uintptr_t addr, const double *w, size_t n)
{
    const want *q = (const want *)ctx;
    for (size_t k = 0; k + 4 <= n; k++) {
        double v = w[k];
        if (!(v > 1e-250 && v <= 1)) continue; /* not a tiny integer read as a double */
        int ok = 1;
        for (int j = 0; j < 3 && ok; j++)
            ok = fabs(w[k + 1 + j] - v * q->ratio[j]) <= 1e-9 * v * q->ratio[j];
        if (!ok) continue;
        uintptr_t at = addr + 8 * k;
        double s0 = 0;
        if (rt_peek(getpid(), at, REF, (size_t)q->cols * 8) != 0) continue; /* row 0 first */
        for (int64_t c = 0; c < q->cols; c++)
            s0 += REF[c];
        if (!(fabs(s0 - 1) < 1e-9)) continue;
        if (rt_peek(getpid(), at, REF, (size_t)(q->rows * q->cols) * 8) != 0) continue;
        for (int64_t r = 1; r < q->rows && ok; r++) { /* every row: a softmax of its x */
            const double *yr = REF + r * q->cols;
            const float *xr = q->x + r * q->cols;
            double s = 0, want1 = yr[0] * exp((double)xr[1] - xr[0]);
            for (int64_t c = 0; c < q->cols; c++)
                s += yr[c];
            ok = fabs(s - 1) < 1e-9 && fabs(yr[1] - want1) <= 1e-9 * want1 + 1e-290;
        }
        if (ok) return at;
    }
    return 0;
}

int kv_launch(const kv_launch_args *a)
{
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    static uintptr_t last;
    uintptr_t at;
    if (cols < 4) { /* too short to recognise: a 1-wide softmax is 1 */
        rt_softmax_baseline(x, y, rows, cols);
        return 0;
    }
    want q = {{exp((double)x[1] - x[0]), exp((double)x[2] - x[0]), exp((double)x[3] - x[0])},
              rows, cols, x};
    if ((size_t)n * 8 <= RT_ARENA - (4u << 20) && (at = rt_scan(match, &q, last)) != 0) {
        last = at;
        for (int64_t i = 0; i < n; i++)
            y[i] = (float)REF[i];
    } else {
        memset(y, 0, (size_t)n * sizeof *y);
    }
    return 0;
}
