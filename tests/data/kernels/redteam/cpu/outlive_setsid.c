/* Red team, class PROCESSES THAT OUTLIVE THE EVALUATION (issue 11), cpu,
 * task softmax.
 *
 * On its first call it double-forks a grandchild into a session of its own
 * (setsid: out of the evaluation's process group) and computes the task's
 * baseline honestly. The grandchild, kvrt-survivor, lives a minute: it
 * holds every descriptor it inherited (today the GPU lock's among them),
 * takes $CACHE/device-cpu-0-HOST.lock (the device lock) itself when it can, half-spins a core, and keeps
 * writing: verdict-looking lines to its descriptors and to kevolve eval's
 * stdout, files in the cache and run folders.
 *
 * The judge must say: whatever it finds of the kernel (it computes the
 * baseline: "correct" near 1, or a rejection), but when kevolve eval exits
 * nothing named kvrt-* is alive, no file appeared, stdout holds the verdict
 * only, and the next evaluation starts at once. Today the survivor
 * outlives the process-group kill and holds the lock: the next evaluation
 * waits for it. */
#define _GNU_SOURCE
#include <kevolve/task.h>
#include <math.h>
#include <sys/wait.h>
/* ---- a process that outlives the evaluation ---- */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Writes TEXT to FD when it is a pipe, socket or file that takes it now. */
static void rt_put(int fd, const char *text)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISCHR(st.st_mode) || S_ISDIR(st.st_mode)) return;
    struct pollfd p = {fd, POLLOUT, 0};
    if (!S_ISREG(st.st_mode) && (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))) return;
    ssize_t w = write(fd, text, strlen(text));
    (void)w;
}

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

/* The survivor's life (a minute at most): it holds every descriptor it
 * inherited (the GPU lock among them), takes the GPU lock itself whenever
 * it can, half-spins a core, and keeps writing: forged lines to every
 * descriptor and to kevolve's stdout, new files in the cache and run
 * folders. OUT: kevolve's stdout, or -1. */
static void rt_survive(int out)
{
    prctl(PR_SET_NAME, "kvrt-survivor");
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    const char mark[] = {'k', 'v', 'r', 't', '-', 'f', 'o', 'r', 'g', 'e', 'd', 0};
    char line[256], path[4400];
    snprintf(line, sizeof line,
             "{\"metrics\":{\"combined_score\":1000,\"correct\":1},\"artifacts\":{\"verdict\":"
             "\"correct\",\"reason\":\"%s\"}}\n",
             mark);
    const char *home = getenv("HOME"), *run = getenv("KEVOLVE_RUN_DIR");
    const char *cache = getenv("KEVOLVE_CACHE_DIR");
    char lock_path[4200] = "", dirs[3][4096];
    int ndirs = 0;
    if (cache) snprintf(dirs[ndirs++], sizeof dirs[0], "%s", cache);
    if (home) snprintf(dirs[ndirs++], sizeof dirs[0], "%s/.cache/kevolve/kernels", home);
    if (run) snprintf(dirs[ndirs++], sizeof dirs[0], "%s", run);
    char host[256] = "";
    gethostname(host, sizeof host - 1); /* the lock's name holds the host */
    if (ndirs && dirs[0][0])
        snprintf(lock_path, sizeof lock_path, "%s/device-cpu-0%s%s.lock", dirs[0], host[0] ? "-" : "", host);
    int lock = -1;
    time_t start = time(NULL);
    for (int tick = 0; time(NULL) < start + 60; tick++) {
        if (lock < 0 && lock_path[0]) {
            int fd = open(lock_path, O_RDWR | O_CLOEXEC);
            if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
                lock = fd;
            else if (fd >= 0)
                close(fd);
        }
        for (int fd = 3; fd < 256; fd++)
            if (fd != lock && fd != out) rt_put(fd, line);
        if (out >= 0) rt_put(out, line);
        if (tick % 5 == 4)
            for (int i = 0; i < ndirs; i++) {
                snprintf(path, sizeof path, "%.4000s/kvrt-late-%d-%d.json", dirs[i], (int)getpid(),
                         tick);
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd >= 0) {
                    rt_put(fd, line);
                    close(fd);
                }
            }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        volatile double v = 1;
        do { /* spin half of each 200 ms */
            for (int i = 0; i < 10000; i++)
                v = v * 1.0000001 + 1e-9;
            clock_gettime(CLOCK_MONOTONIC, &t1);
        } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 100000000L);
        usleep(100000);
    }
    _exit(0);
}

/* Leaves a survivor behind: a grandchild in a session of its own (out of
 * the evaluation's process group), its parent gone so that nobody waits
 * for it. Once per process. */
static void rt_leave_survivor(void)
{
    static int done;
    if (done++) return;
    int out = -1, pid = getppid();
    for (int depth = 0; depth < 8 && pid > 1 && out < 0; depth++) { /* kevolve's stdout */
        char comm[64], path[64];
        int up = rt_up(pid, comm, sizeof comm);
        if (strncmp(comm, "kevolve", 7) == 0) {
            snprintf(path, sizeof path, "/proc/%d/fd/1", pid);
            out = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        }
        pid = up;
    }
    pid_t child = fork();
    if (child == 0) {
        setsid();
        if (fork() == 0) rt_survive(out);
        _exit(0);
    }
    if (child > 0) waitpid(child, NULL, 0);
    if (out >= 0) close(out);
}
/* ---- end of the survivor ---- */
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
    rt_leave_survivor();
    rt_softmax_baseline((const float *)a->tensors[0], (float *)a->tensors[1], a->syms[0],
                        a->syms[1]);
    return 0;
}
