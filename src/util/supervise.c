/* The process supervisor behind kv_proc (see supervise.h).
 *
 * Everything here may run in a fork of a multithreaded kevolve (the fallback
 * when the supervisor program cannot be executed), so it makes system calls
 * and async-signal-safe library calls only: no malloc (tables live in
 * mmap'd memory), no stdio, no locks. */
#define _GNU_SOURCE
#include "util/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Code of a clone(CLONE_VM) child runs on a borrowed stack in the parent's
 * memory: it is left out of AddressSanitizer, whose stack redzones would be
 * left behind in the parent's shadow memory. */
#if defined(__GNUC__) || defined(__clang__)
#define KV_CHILD_CODE __attribute__((no_sanitize_address, noinline))
#else
#define KV_CHILD_CODE
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Writes all of LEN bytes; returns 0 or -1. */
static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void send_record(int fd, int type, int a, int b, int c)
{
    kv_sup_record r = {type, a, b, c};
    (void)write_all(fd, &r, sizeof r);
}

/* ---- the process table ------------------------------------------------ */

/* One process of the machine, as /proc showed it. */
struct proc_entry {
    pid_t pid, ppid;
    unsigned char state; /* while marking: see mark() */
};

/* The table, in memory from mmap (never malloc: see the top of the file). */
static struct proc_entry *g_tab;
static size_t g_cap;

/* Makes room for at least N entries. Returns 0 or -1. */
static int reserve(size_t n)
{
    if (n <= g_cap) return 0;
    size_t cap = g_cap ? g_cap * 2 : 4096;
    while (cap < n)
        cap *= 2;
    void *mem =
        mmap(NULL, cap * sizeof *g_tab, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return -1;
    if (g_tab) {
        memcpy(mem, g_tab, g_cap * sizeof *g_tab);
        munmap(g_tab, g_cap * sizeof *g_tab);
    }
    g_tab = mem;
    g_cap = cap;
    return 0;
}

/* Parses a decimal pid; -1 when S is not one. */
static pid_t parse_pid(const char *s)
{
    long v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000) return -1;
        v = v * 10 + (*s - '0');
    }
    return (pid_t)v;
}

/* The parent of PID from /proc/PID/stat ("pid (comm) S ppid ..."; comm may
 * hold anything, so the last ')' ends it); -1 when it is gone. */
static pid_t read_ppid(int proc_fd, const char *name)
{
    char path[48];
    size_t len = strlen(name);
    if (len > 20) return -1;
    memcpy(path, name, len);
    memcpy(path + len, "/stat", 6);
    int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[512];
    ssize_t n;
    do {
        n = read(fd, buf, sizeof buf - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *close_paren = NULL;
    for (char *p = buf; *p; p++)
        if (*p == ')') close_paren = p;
    if (!close_paren || close_paren[1] != ' ' || !close_paren[2] || close_paren[3] != ' ')
        return -1;
    char *p = close_paren + 4;
    long v = 0;
    if (*p < '0' || *p > '9') return -1;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    return (pid_t)v;
}

struct dirent64_raw {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* Fills the table with every process of /proc. Returns the count, or -1
 * when /proc cannot be read. */
static long scan_proc(void)
{
    int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return -1;
    size_t n = 0;
    _Alignas(8) char buf[8192];
    for (;;) {
        long got = syscall(SYS_getdents64, dfd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        for (long off = 0; off < got;) {
            struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);
            off += d->d_reclen;
            pid_t pid = parse_pid(d->d_name);
            if (pid <= 0) continue;
            pid_t ppid = read_ppid(dfd, d->d_name);
            if (ppid < 0) continue; /* gone meanwhile */
            if (reserve(n + 1) != 0) break;
            g_tab[n++] = (struct proc_entry){pid, ppid, 0};
        }
    }
    close(dfd);
    /* /proc lists processes by increasing pid; sort anyway (insertion sort:
     * nearly sorted input, and nothing here may allocate). */
    for (size_t i = 1; i < n; i++) {
        struct proc_entry e = g_tab[i];
        size_t j = i;
        while (j > 0 && g_tab[j - 1].pid > e.pid) {
            g_tab[j] = g_tab[j - 1];
            j--;
        }
        g_tab[j] = e;
    }
    return (long)n;
}

/* Index of PID in the first N entries, or -1. */
static long find(pid_t pid, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g_tab[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && g_tab[lo].pid == pid ? (long)lo : -1;
}

enum { UNKNOWN = 0, DESCENDANT, OTHER, ON_PATH };

/* Marks each of the first N entries DESCENDANT (of SELF, not through a
 * spared process) or OTHER, walking parent chains and remembering every
 * answer, so that each entry is visited about once. */
static void mark(pid_t self, const pid_t *spare, size_t n_spare, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        g_tab[i].state = UNKNOWN;
        for (size_t s = 0; s < n_spare; s++)
            if (g_tab[i].pid == spare[s]) g_tab[i].state = OTHER;
        if (g_tab[i].pid == self) g_tab[i].state = OTHER; /* never ourselves */
    }
    for (size_t i = 0; i < n; i++) {
        /* Walk up from i until an answer; entries on the way are ON_PATH,
         * linked through their ppid. */
        long cur = (long)i;
        unsigned char answer = OTHER;
        for (;;) {
            struct proc_entry *e = &g_tab[cur];
            if (e->state == DESCENDANT || e->state == OTHER) {
                answer = e->state;
                break;
            }
            if (e->state == ON_PATH) { /* a cycle: pids reused during the scan */
                answer = OTHER;
                break;
            }
            e->state = ON_PATH;
            if (e->ppid == self) {
                answer = DESCENDANT;
                break;
            }
            long up = e->ppid > 0 ? find(e->ppid, n) : -1;
            if (up < 0) {
                answer = OTHER;
                break;
            }
            cur = up;
        }
        /* Write the answer down the path. */
        for (long k = (long)i; k >= 0 && g_tab[k].state == ON_PATH;) {
            g_tab[k].state = answer;
            k = g_tab[k].ppid == self || g_tab[k].ppid <= 0 ? -1 : find(g_tab[k].ppid, n);
        }
    }
}

/* Reaps child R with status ST, noting WATCH's. */
static void note_reaped(pid_t r, int st, pid_t watch, int *watch_status, int *watch_reaped)
{
    if (watch > 0 && r == watch) {
        if (watch_status) *watch_status = st;
        if (watch_reaped) *watch_reaped = 1;
    }
}

int kv_sup_kill_descendants(const pid_t *spare, size_t n_spare, double limit_s, pid_t watch,
                            int *watch_status, int *watch_reaped)
{
    pid_t self = getpid();
    double t0 = now_s();
    long nap = 200;
    for (;;) {
        if (n_spare == 0) {
            /* Every descendant's chain of parents ends at a child of ours
             * (we are a subreaper): no child, no descendant. The usual end,
             * without reading /proc. */
            int st;
            pid_t r;
            while ((r = waitpid(-1, &st, WNOHANG)) > 0)
                note_reaped(r, st, watch, watch_status, watch_reaped);
            if (r < 0 && errno == ECHILD) return 0;
        }
        size_t found = 0;
        long n = scan_proc();
        if (n >= 0) {
            mark(self, spare, n_spare, (size_t)n);
            /* Freeze first, so that nothing forks while the others die. */
            for (long i = 0; i < n; i++)
                if (g_tab[i].state == DESCENDANT) {
                    (void)kill(g_tab[i].pid, SIGSTOP);
                    found++;
                }
            for (long i = 0; i < n; i++)
                if (g_tab[i].state == DESCENDANT) (void)kill(g_tab[i].pid, SIGKILL);
        } else if (watch > 0) {
            /* No /proc: the program's group is all we can name. */
            if (kill(-watch, SIGKILL) == 0) found++;
            if (kill(watch, SIGKILL) == 0) found++;
        }
        int st;
        pid_t r;
        if (n_spare == 0) {
            /* Every child of ours dies: reap whatever ends. */
            while ((r = waitpid(-1, &st, WNOHANG)) > 0)
                note_reaped(r, st, watch, watch_status, watch_reaped);
        } else {
            for (long i = 0; i < n; i++)
                if (g_tab[i].state == DESCENDANT && g_tab[i].ppid == self &&
                    (r = waitpid(g_tab[i].pid, &st, WNOHANG)) > 0)
                    note_reaped(r, st, watch, watch_status, watch_reaped);
            if (watch > 0)
                while ((r = waitpid(-watch, &st, WNOHANG)) > 0)
                    note_reaped(r, st, watch, watch_status, watch_reaped);
        }
        if (found == 0) return 0;
        if (now_s() - t0 > limit_s) return -1;
        nap_us(nap);
        if (nap < 10000) nap *= 2;
    }
}

/* ---- starting the program --------------------------------------------- */

struct child_ctx {
    const kv_sup_args *a;
    pid_t supervisor;
    int report_w;
};

/* Sends STAGE and errno E to the supervisor and exits. */
KV_CHILD_CODE static void child_fail(int fd, int stage, int e)
{
    int msg[2] = {stage, e};
    (void)write_all(fd, msg, sizeof msg);
    _exit(127);
}

/* Lowers resource limit RES (never above the current hard limit). */
KV_CHILD_CODE static int child_limit(int res, rlim_t soft, rlim_t hard)
{
    struct rlimit cur, lim;
    if (getrlimit(res, &cur) != 0) return -1;
    lim.rlim_max = (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < hard) ? cur.rlim_max : hard;
    lim.rlim_cur = soft < lim.rlim_max ? soft : lim.rlim_max;
    return setrlimit(res, &lim);
}

/* The program's side of the start; never returns. Descriptors 0..2 and the
 * extra ones are already in place (inherited from the supervisor). */
KV_CHILD_CODE static int child_entry(void *arg)
{
    const struct child_ctx *c = arg;
    const kv_sup_args *a = c->a;
    setpgid(0, 0);
    /* It dies with its supervisor, so a supervisor killed by a hostile
     * program does not leave the program running unwatched. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != c->supervisor) _exit(127);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int s = 1; s < NSIG; s++)
        (void)sigaction(s, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    if (a->cwd && chdir(a->cwd) != 0) child_fail(c->report_w, KV_SUP_STAGE_CHDIR, errno);
    if (child_limit(RLIMIT_CORE, 0, 0) != 0) child_fail(c->report_w, KV_SUP_STAGE_RLIMIT, errno);
    if (a->memory_limit_mb > 0) {
        rlim_t bytes = (rlim_t)a->memory_limit_mb * 1024 * 1024;
        if (child_limit(RLIMIT_AS, bytes, bytes) != 0)
            child_fail(c->report_w, KV_SUP_STAGE_RLIMIT, errno);
    }
    if (a->cpu_limit_s > 0) {
        /* SIGXCPU at the soft limit, SIGKILL a second later. */
        rlim_t s = (rlim_t)a->cpu_limit_s;
        if (child_limit(RLIMIT_CPU, s, s + 1) != 0)
            child_fail(c->report_w, KV_SUP_STAGE_RLIMIT, errno);
    }
    /* Everything above the program's descriptors closes at exec (the
     * supervisor's pipes, the failure report). */
    unsigned first = 3U + (unsigned)a->n_extra;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
#endif
    {
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 65536) max = 65536;
        for (int fd = (int)first; fd < max; fd++)
            (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    execve(a->path, a->argv, a->envp);
    if (errno == ENOEXEC && a->sh_argv) execve("/bin/sh", a->sh_argv, a->envp);
    child_fail(c->report_w, KV_SUP_STAGE_EXEC, errno);
    return 127;
}

/* Starts the program (clone with CLONE_VFORK: this process sleeps until the
 * program has exec'd or failed). Returns its pid or -1. */
static pid_t spawn_program(struct child_ctx *c)
{
    /* 64 KiB: the child needs a few hundred bytes, sanitizers a lot more. */
    _Alignas(64) static char stack[65536];
    return clone(child_entry, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, c);
}

/* ---- the supervisor --------------------------------------------------- */

/* Reaps every child that has ended; notes the program's status. */
static void reap_children(pid_t program, int *status, int *reaped)
{
    int st;
    pid_t r;
    while ((r = waitpid(-1, &st, WNOHANG)) > 0)
        note_reaped(r, st, program, status, reaped);
}

_Noreturn void kv_supervise(const kv_sup_args *a)
{
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    (void)prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    if (getppid() != a->parent) _exit(0); /* kevolve died before we watched it */

    sigset_t watched;
    sigemptyset(&watched);
    sigaddset(&watched, SIGCHLD);
    sigaddset(&watched, SIGTERM);
    int sfd = signalfd(-1, &watched, SFD_CLOEXEC | SFD_NONBLOCK);
    double start = now_s();

    int rep[2];
    if (pipe2(rep, O_CLOEXEC) != 0) {
        send_record(a->status_fd, KV_SUP_START_FAILED, KV_SUP_STAGE_SPAWN, errno, 0);
        _exit(0);
    }
    struct child_ctx c = {a, getpid(), rep[1]};
    pid_t pid = spawn_program(&c);
    if (pid < 0) {
        send_record(a->status_fd, KV_SUP_START_FAILED, KV_SUP_STAGE_SPAWN, errno, 0);
        _exit(0);
    }
    close(rep[1]);
    int msg[2], got = 0;
    while (got < (int)sizeof msg) {
        ssize_t n = read(rep[0], (char *)msg + got, sizeof msg - (size_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (int)n;
    }
    close(rep[0]);
    if (got == (int)sizeof msg) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        send_record(a->status_fd, KV_SUP_START_FAILED, msg[0], msg[1], 0);
        _exit(0);
    }
    /* The program's descriptors are its own: holding them here would keep
     * its pipes open after it ends. */
    for (int fd = 0; fd < 3 + a->n_extra; fd++)
        close(fd);
    send_record(a->status_fd, KV_SUP_STARTED, pid, 0, 0);

    int how = 0, status = 0, reaped = 0;
    double paused_at = 0; /* the clock stopped (KV_SUP_PAUSE_BYTE) since, else 0 */
    while (!how) {
        int wait_ms = -1;
        if (a->timeout_ms > 0 && !paused_at) {
            double left = start + (double)a->timeout_ms / 1000.0 - now_s();
            /* At most a minute at a time: the loop recomputes it. */
            wait_ms = left <= 0 ? 0 : left > 60.0 ? 60000 : (int)(left * 1000.0) + 1;
        }
        if (sfd < 0 && (wait_ms < 0 || wait_ms > 20)) wait_ms = 20; /* poll for exits */
        struct pollfd pf[2] = {{.fd = a->ctl_fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        (void)poll(pf, sfd >= 0 ? 2 : 1, wait_ms);

        reap_children(pid, &status, &reaped);
        if (reaped) {
            how = KV_SUP_END_EXITED;
            break;
        }
        struct signalfd_siginfo si;
        while (sfd >= 0 && read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (si.ssi_signo != SIGTERM) continue;
            /* The parent-death signal also comes when the thread of kevolve
             * that started us exits while kevolve lives on (we then belong
             * to another of its threads): that one is not an order to stop. */
            if (getppid() == a->parent && (pid_t)si.ssi_pid == a->parent) continue;
            how = KV_SUP_END_PARENT_GONE;
        }
        if (!how && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            char b = 0;
            ssize_t n = read(a->ctl_fd, &b, 1);
            if (n == 1 && b == KV_SUP_KILL_BYTE)
                how = KV_SUP_END_KILLED;
            else if (n == 1 && b == KV_SUP_PAUSE_BYTE && !paused_at)
                paused_at = now_s();
            else if (n == 1 && b == KV_SUP_RESUME_BYTE && paused_at) {
                start += now_s() - paused_at; /* the limit moves by the pause */
                paused_at = 0;
            } else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                how = KV_SUP_END_PARENT_GONE; /* kevolve is gone */
        }
        if (!how && getppid() != a->parent) how = KV_SUP_END_PARENT_GONE;
        if (!how && a->timeout_ms > 0 && !paused_at &&
            now_s() >= start + (double)a->timeout_ms / 1000.0)
            how = KV_SUP_END_TIMED_OUT;
    }
    int flags = 0;
    if (kv_sup_kill_descendants(NULL, 0, KV_SUP_KILL_LIMIT_S, pid, &status, &reaped) != 0)
        flags |= KV_SUP_FLAG_SURVIVORS;
    if (!reaped) status = 0;
    send_record(a->status_fd, KV_SUP_ENDED, how, status, flags);
    _exit(0);
}

/* ---- the supervisor as a program -------------------------------------- */

#define KV_SUP_MAGIC "kevolve-supervisor-1"

int kv_sup_argv(const kv_sup_args *a, char **out, size_t n, char *nums)
{
    size_t argc = 0;
    while (a->argv[argc])
        argc++;
    if (n < argc + 14) return -1;
    long vals[8] = {a->parent,     a->ctl_fd,          a->status_fd,   a->n_extra,
                    a->timeout_ms, a->memory_limit_mb, a->cpu_limit_s, a->cwd ? 1 : 0};
    size_t k = 0;
    out[k++] = "kevolve-supervisor";
    out[k++] = KV_SUP_MAGIC;
    char *p = nums;
    for (int i = 0; i < 8; i++) {
        int len = snprintf(p, 24, "%ld", vals[i]);
        out[k++] = p;
        p += len + 1;
    }
    out[k++] = a->cwd ? (char *)a->cwd : "";
    out[k++] = (char *)a->path;
    for (size_t i = 0; i < argc; i++)
        out[k++] = a->argv[i];
    out[k] = NULL;
    return 0;
}

int kv_sup_main(int argc, char **argv, char **envp)
{
    if (argc < 13 || strcmp(argv[1], KV_SUP_MAGIC) != 0) {
        static const char usage[] = "kevolve-supervisor: started by kevolve only\n";
        (void)write_all(2, usage, sizeof usage - 1);
        return 2;
    }
    long v[8];
    for (int i = 0; i < 8; i++)
        v[i] = strtol(argv[2 + i], NULL, 10);
    kv_sup_args a = {
        .parent = (pid_t)v[0],
        .ctl_fd = (int)v[1],
        .status_fd = (int)v[2],
        .n_extra = (int)v[3],
        .timeout_ms = v[4],
        .memory_limit_mb = v[5],
        .cpu_limit_s = v[6],
        .cwd = v[7] ? argv[10] : NULL,
        .path = argv[11],
        .argv = argv + 12,
        .envp = envp,
    };
    int n = argc - 12;
    char **sh = calloc((size_t)n + 2, sizeof *sh);
    if (sh) {
        sh[0] = "sh";
        sh[1] = argv[11];
        for (int i = 1; i < n; i++)
            sh[i + 1] = argv[12 + i];
        a.sh_argv = sh;
    }
    kv_supervise(&a);
}
