/* Red team, class THE JUDGE WITHIN REACH (issue 11), opencl, task softmax.
 *
 * The host half finds the judge's checking functions in its own process
 * and redirects them to functions that report every element right (as
 * cpu/reach_patch_checker.c); the device writes zeros.
 *
 * The judge must say: rejected (wrong_result): no checker runs in the
 * process that runs the candidate's host code. Today it does: "correct". */
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

/* ---- finding and patching the judge's code in this process ---- */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Where function NAME of the running executable is loaded: dlsym when it
 * is exported, else its .symtab entry (the binary is not stripped) plus
 * the executable's load address from /proc/self/maps. 0: not found. */
static uintptr_t rt_symbol(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (p) return (uintptr_t)p;
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return 0;
    exe[len] = 0;
    uintptr_t base = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4352];
    while (f && !base && fgets(line, sizeof line, f)) {
        unsigned long lo = 0, off = 1;
        char path[4096] = "";
        if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %4095s", &lo, &off, path) == 3 && off == 0 &&
            strcmp(path, exe) == 0)
            base = lo;
    }
    if (f) fclose(f);
    int fd = open(exe, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || !base) {
        if (fd >= 0) close(fd);
        return 0;
    }
    uintptr_t found = 0;
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && eh.e_shentsize == sizeof(Elf64_Shdr)) {
        for (int i = 0; i < eh.e_shnum && !found; i++) {
            Elf64_Shdr sh, strh;
            if (pread(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + (Elf64_Off)i * sizeof sh)) !=
                    (ssize_t)sizeof sh ||
                sh.sh_type != SHT_SYMTAB ||
                pread(fd, &strh, sizeof strh, (off_t)(eh.e_shoff + (Elf64_Off)sh.sh_link * sizeof sh)) !=
                    (ssize_t)sizeof strh)
                continue;
            for (Elf64_Xword k = 0; k < sh.sh_size / sizeof(Elf64_Sym) && !found; k++) {
                Elf64_Sym sym;
                char nm[128];
                if (pread(fd, &sym, sizeof sym, (off_t)(sh.sh_offset + k * sizeof sym)) !=
                        (ssize_t)sizeof sym ||
                    ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0)
                    continue;
                ssize_t m = pread(fd, nm, sizeof nm - 1, (off_t)(strh.sh_offset + sym.st_name));
                if (m <= 0) continue;
                nm[m] = 0;
                if (strcmp(nm, name) == 0)
                    found = (eh.e_type == ET_DYN ? base : 0) + (uintptr_t)sym.st_value;
            }
        }
    }
    close(fd);
    return found;
}

/* Overwrites the start of the function at AT with a jump to TO
 * (movabs rax, TO; jmp rax). Returns 0 on success. */
static int rt_redirect(uintptr_t at, const void *to)
{
#if defined(__x86_64__)
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t first = at & ~(uintptr_t)(pg - 1);
    if (!at || mprotect((void *)first, (size_t)(2 * pg), PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return -1;
    unsigned char code[12] = {0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0};
    uint64_t target = (uint64_t)(uintptr_t)to;
    memcpy(code + 2, &target, sizeof target);
    memcpy((void *)at, code, sizeof code);
    mprotect((void *)first, (size_t)(2 * pg), PROT_READ | PROT_EXEC);
    __builtin___clear_cache((char *)at, (char *)at + sizeof code);
    return 0;
#else
    (void)at;
    (void)to;
    return -1;
#endif
}

/* The judge's check record (src/backend/check.h), as a hostile kernel would
 * copy it. */
typedef struct rt_check {
    size_t n, unwritten, nonfinite, bad;
    double max_abs, max_rel, rel_l2;
    size_t worst;
    double worst_got, worst_want, worst_limit;
    size_t first_unwritten;
} rt_check;

/* What the patched checkers say: every element written, right and the
 * same in both runs. */
static void rt_fake_check_output(int dt, const void *out, const double *ref, const double *scale,
                                 size_t n, const void *poison, kv_tolerance tol, rt_check *c)
{
    (void)dt, (void)out, (void)ref, (void)scale, (void)poison, (void)tol;
    memset(c, 0, sizeof *c);
    c->n = n;
}

static size_t rt_fake_compare_runs(int dt, const void *a, const void *b, const double *ref,
                                   const double *scale, size_t n, kv_tolerance tol, int *bitwise,
                                   size_t *first)
{
    (void)dt, (void)a, (void)b, (void)ref, (void)scale, (void)n, (void)tol;
    *bitwise = 1;
    *first = 0;
    return 0;
}

/* Patches the judge's checkers where they are in this process; returns how
 * many it patched (0: none within reach). */
static int rt_patch_checkers(void)
{
    static int done = -1;
    if (done < 0)
        done = (rt_redirect(rt_symbol("kv_check_output"), (const void *)rt_fake_check_output) == 0) +
               (rt_redirect(rt_symbol("kv_compare_runs"), (const void *)rt_fake_compare_runs) == 0);
    return done;
}
/* ---- end of the patching ---- */

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
    rt_patch_checkers();
    return rt_enqueue(a, "zeros", NULL);
}
#endif
