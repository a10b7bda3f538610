/* Red team, class THE JUDGE WITHIN REACH (issue 11), cpu, task softmax.
 *
 * It finds the judge's checking functions in its own process (dlsym, else
 * the executable's symbol table and its load address in /proc/self/maps),
 * makes their code writable and redirects them to functions that report
 * every element written, right and deterministic. Then it writes zeros
 * (reading the input twice, so the time stays above the roofline's floor).
 *
 * The judge must say: rejected (wrong_result): no checker runs in the
 * candidate's process. Today the checkers run in the worker that runs the
 * candidate: "correct", with a speedup for writing zeros. */
#define _GNU_SOURCE
#include <kevolve/task.h>
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

int kv_launch(const kv_launch_args *a)
{
    rt_patch_checkers();
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t n = a->syms[0] * a->syms[1];
    float sink = 0;
    for (int pass = 0; pass < 2; pass++) /* the input read twice: above the roofline's floor */
        for (int64_t i = 0; i < n; i++) {
            sink += x[i];
            y[i] = 0.0f;
        }
    __asm__ volatile("" : : "x"(sink));
    return 0;
}
