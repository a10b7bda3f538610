/* Red team, class THE JUDGE WITHIN REACH (issue 11), opencl, task softmax.
 *
 * It computes nothing on the device. The host half reads the input back,
 * searches its own address space for the judge's double-precision
 * reference of that input (as cpu/reach_copy_reference.c) and writes it
 * into the output buffer; where there is no reference to find, zeros.
 *
 * The judge must say: rejected (wrong_result, or timed_output_wrong): the
 * runner that holds the device holds no reference. Today it does. */
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
#define _GNU_SOURCE
#include <kevolve/task.h>
#include <CL/cl.h>
#include <math.h>
#include <stdlib.h>

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

/* Enqueues the device kernel NAME (softmax_rows or zeros) on queue Q, or
 * on the harness's queue when Q is NULL. Returns 0 on success. */
static int rt_enqueue(const kv_launch_args *a, const char *name, cl_command_queue q)
{
    cl_kernel k = (cl_kernel)a->cl_kernel(a, name);
    if (!k) return 1;
    cl_mem x = (cl_mem)a->tensors[0], y = (cl_mem)a->tensors[1];
    cl_long rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    int whole = strcmp(name, "zeros") == 0;
    clSetKernelArg(k, 0, sizeof x, &x);
    clSetKernelArg(k, 1, sizeof y, &y);
    if (whole) {
        clSetKernelArg(k, 2, sizeof n, &n);
    } else {
        clSetKernelArg(k, 2, sizeof rows, &rows);
        clSetKernelArg(k, 3, sizeof cols, &cols);
    }
    size_t global = (size_t)(whole ? n : rows);
    return clEnqueueNDRangeKernel(q ? q : (cl_command_queue)a->stream, k, 1, NULL, &global, NULL,
                                  0, NULL, NULL) == CL_SUCCESS
               ? 0
               : 2;
}

typedef struct want {
    double ratio[3]; /* y[k] / y[0] for k = 1..3 in row 0 */
    int64_t rows, cols;
    const float *x;
} want;

/* The reference at W[k]: row 0's ratios right, and (checked only then)
 * every row a softmax of its x. It is left in the arena at REF. */
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
        for (int64_t r = 1; r < q->rows && ok; r++) {
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
    cl_command_queue queue = (cl_command_queue)a->stream;
    int64_t rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    static uintptr_t last;
    if (cols < 4 || (size_t)n * 8 > RT_ARENA - (4u << 20)) return rt_enqueue(a, "softmax_rows", NULL);
    float *x = (float *)malloc((size_t)n * sizeof *x), *y = (float *)malloc((size_t)n * sizeof *y);
    if (!x || !y ||
        clEnqueueReadBuffer(queue, (cl_mem)a->tensors[0], CL_TRUE, 0, (size_t)n * sizeof *x, x, 0,
                            NULL, NULL) != CL_SUCCESS) {
        free(x);
        free(y);
        return 1;
    }
    want q = {{exp((double)x[1] - x[0]), exp((double)x[2] - x[0]), exp((double)x[3] - x[0])},
              rows, cols, x};
    uintptr_t at = rt_scan(match, &q, last);
    if (at) last = at;
    for (int64_t i = 0; i < n; i++)
        y[i] = at ? (float)REF[i] : 0.0f;
    cl_int e = clEnqueueWriteBuffer(queue, (cl_mem)a->tensors[1], CL_TRUE, 0, (size_t)n * sizeof *y,
                                    y, 0, NULL, NULL);
    free(x);
    free(y);
    return e == CL_SUCCESS ? 0 : 2;
}
#endif
