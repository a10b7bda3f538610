/* Shared by the red-team tests of issue 11 (test_redteam_cpu.c,
 * test_redteam_opencl.c): each case runs `kevolve eval --quick` on one
 * hostile candidate of tests/data/kernels/redteam/BACKEND/ as an evolution
 * would, from outside (a child process with a clean descriptor table and a
 * scratch HOME, KEVOLVE_RUN_DIR, KEVOLVE_PARENT_METRICS and TMPDIR), and
 * judges both the verdict and what the candidate aimed for around it:
 *
 *   - the verdict: rejected for a reason of its class, "correct" for an
 *     honest control, or "correct" with no gain for a replay that the judge
 *     may simply starve (a cache that never hits is an honest kernel);
 *   - kevolve eval's stdout holds exactly one line, its verdict;
 *   - kevolve eval and its descendants are never stopped (SIGSTOP from the
 *     candidate; the test resumes them and says so);
 *   - no file named kvrt-* appears, and no file gains the marker
 *     "kvrt-forged", anywhere in the scratch tree, the user's real cache
 *     or /tmp;
 *   - no process named kvrt-* outlives the evaluation (killed by pid when
 *     found), and the next evaluation with the same cache starts at once;
 *   - the evaluation ends within its time (the watchdog can't be disarmed).
 *
 * The evaluation is given its run folder and parent as a run's job would
 * be (--run-dir, --parent); the environment names them too, so that a
 * hostile candidate knows where to aim.
 *
 * Many cheats are judged "correct" by the judge of today, whose checks run
 * in the candidate's process. Until the separated judge of issue 11 lands,
 * a case that fails is skipped with what it got, unless it is an honest
 * control. Which judge is there is found out by a probe candidate
 * (redteam/cpu/probe_judge.c: an interval timer armed in the candidate's
 * process while it runs is the old in-process watchdog); set
 * KV_REDTEAM_STRICT=1 to enforce every case whatever the probe says.
 * Against the separated judge a case that fails is a failure, unless it
 * names (.hole) a hole already reported, which skips saying so (strict:
 * fails).
 *
 * The includer defines g_backend ("cpu" or "opencl") before including,
 * then its cases with CASE (below) and runs them with rt_setup and
 * rt_teardown. */
#ifndef KV_TEST_REDTEAM_COMMON_H
#define KV_TEST_REDTEAM_COMMON_H

#include "kernel/harness.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef enum rt_want {
    RT_REJECT,  /* rejected, for one of REASONS (NULL: any reason) */
    RT_CORRECT, /* "correct" (honest controls) */
    RT_NOGAIN,  /* rejected for one of REASONS, or "correct" with combined_score <= MAX_SCORE */
    RT_ANY      /* any verdict (the side effects are the point); "correct" within MAX_SCORE */
} rt_want;

typedef struct rt_case {
    const char *file;    /* under tests/data/kernels/redteam/<backend>/ */
    const char *task;    /* softmax, gqa_attention_small */
    const char *cls;     /* the class of issue 11, for messages */
    rt_want want;        /* what the verdict must be */
    const char *reasons; /* comma-separated fnmatch patterns of acceptable reasons */
    double max_score;    /* RT_NOGAIN, RT_ANY: the most a "correct" verdict may score */
    double max_seconds;  /* > 0: kevolve eval must end within this */
    const char *args;    /* extra arguments to kevolve eval, space-separated */
    int next_eval;       /* an honest evaluation right after must be prompt */
    int control;         /* an honest control: never skipped */
    /* A hole the separated judge still has, reported to the lead: the case
     * skips saying so while it fails (a note when it passes: drop this). */
    const char *hole;
} rt_case;

/* What one run of kevolve eval gave. */
typedef struct rt_run {
    int exit_code; /* -1: killed by a signal or by the limit */
    int timed_out;
    int stopped; /* times kevolve eval or a descendant was found stopped */
    double seconds;
    kv_buf out, err;
    unsigned long long start_ticks; /* its start time, in clock ticks since boot */
    char tag[64];                   /* KV_REDTEAM_EVAL's value in its environment */
    int pids[1024], npids;          /* every process of it seen while it ran */
    int traced[64], ntraced;        /* processes of it in a tracing stop ... */
    double traced_since[64];        /* ... since when */
} rt_run;

static char g_root[] = "/tmp/kv_test_redteam_XXXXXX";
static int g_old_judge = 1; /* the probe found today's in-process judge */
static time_t g_started;    /* when the program's setup began */
/* Seconds a program may spend: ctest ends a unit test at 300 s, and on a
 * machine loaded many times over (every evaluation then takes several times
 * as long) a timeout would lose every verdict. A case that cannot finish
 * within the budget skips, saying so. Unloaded, a program takes a minute or
 * two. */
#define RT_BUDGET_S 270
static const char *g_judge_note = "";
static int g_strict; /* KV_REDTEAM_STRICT=1: known holes fail too */

/* ---- processes ---- */

/* Fields of /proc/PID/stat: state, parent, start time. 0 when readable. */
static int rt_stat(int pid, char *state, int *ppid, unsigned long long *start, char *comm,
                   size_t cap)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp) return -1;
    if (comm) {
        size_t len = (size_t)(rp - lp - 1);
        if (len >= cap) len = cap - 1;
        memcpy(comm, lp + 1, len);
        comm[len] = '\0';
    }
    /* After ")": state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime cutime cstime priority nice threads
     * itrealvalue starttime (field 22). */
    unsigned long long st = 0;
    int pp = 0;
    char s = '?';
    if (sscanf(rp + 2,
               "%c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &s,
               &pp, &st) != 3)
        return -1;
    if (state) *state = s;
    if (ppid) *ppid = pp;
    if (start) *start = st;
    return 0;
}

/* 1 when PID's environment holds KV_REDTEAM_EVAL=TAG, 0 when it holds
 * another evaluation's tag (a red-team test running beside this one), -1
 * when it holds none or cannot be read. */
static int rt_tagged(int pid, const char *tag)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    for (char *p = buf; p < buf + n; p += strlen(p) + 1)
        if (strncmp(p, "KV_REDTEAM_EVAL=", 16) == 0) return strcmp(p + 16, tag) == 0;
    return -1;
}

static void rt_remember(rt_run *r, int pid)
{
    for (int i = 0; i < r->npids; i++)
        if (r->pids[i] == pid) return;
    if (r->npids < 1024) r->pids[r->npids++] = pid;
}

/* 1 the first time PID has been in a tracing stop for a second (as of NOW,
 * seconds); 0 before, after, and for a moment's stop: LeakSanitizer stops
 * every thread with ptrace for a few milliseconds when kevolve exits. */
static int rt_traced_long(rt_run *r, int pid, double now)
{
    for (int i = 0; i < r->ntraced; i++)
        if (r->traced[i] == pid) {
            if (r->traced_since[i] < 0 || now - r->traced_since[i] < 1.0) return 0;
            r->traced_since[i] = -1; /* counted */
            return 1;
        }
    if (r->ntraced < 64) {
        r->traced[r->ntraced] = pid;
        r->traced_since[r->ntraced++] = now;
    }
    return 0;
}

/* Resumes every stopped process in the tree under ROOT (ROOT included) and
 * remembers into R every process of the tree or carrying R's tag; returns
 * how many were stopped by a signal, or held in a tracing stop for a
 * second (NOW: seconds since the start). */
static int rt_watch_tree(int root, rt_run *r, double now)
{
    int pids[4096], ppids[4096], n = 0, found = 0;
    char states[4096];
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && n < 4096) {
        int pid = atoi(e->d_name);
        char comm[64];
        if (pid > 0 && rt_stat(pid, &states[n], &ppids[n], NULL, comm, sizeof comm) == 0) {
            pids[n++] = pid;
            if ((strncmp(comm, "kevolve", 7) == 0 || strncmp(comm, "kvrt-", 5) == 0) &&
                rt_tagged(pid, r->tag) == 1)
                rt_remember(r, pid);
        }
    }
    if (d) closedir(d);
    for (int i = 0; i < n; i++) {
        int p = pids[i], in = 0;
        for (int depth = 0; depth < 32 && p > 1 && !in; depth++) {
            in = p == root;
            int up = -1;
            for (int j = 0; j < n; j++)
                if (pids[j] == p) up = ppids[j];
            p = up;
        }
        if (!in) continue;
        rt_remember(r, pids[i]);
        /* kevolve's supervisor freezes a tree for the moment before it kills
         * it (a loaded machine can show that moment): a stop counts when it
         * lasts. */
        char again = 0;
        if (states[i] == 'T') {
            struct timespec pause = {0, 50 * 1000 * 1000};
            nanosleep(&pause, NULL);
            if (rt_stat(pids[i], &again, NULL, NULL, NULL, 0) != 0) again = 0;
        }
        if (again == 'T' && kill(pids[i], SIGCONT) == 0) found++;
        if (states[i] == 't') found += rt_traced_long(r, pids[i], now);
    }
    return found;
}

/* Processes named kvrt-* (alive, not zombies) of evaluation R: started at
 * or after it and carrying its tag or none; each is killed (by pid) and
 * named in NOTE. Returns how many. */
static int rt_kill_survivors(const rt_run *r, kv_buf *note)
{
    int found = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        int pid = atoi(e->d_name);
        char state, comm[64];
        unsigned long long st;
        if (pid <= 0 || rt_stat(pid, &state, NULL, &st, comm, sizeof comm) != 0) continue;
        if (strncmp(comm, "kvrt-", 5) != 0 || state == 'Z' || state == 'X' || st < r->start_ticks ||
            rt_tagged(pid, r->tag) == 0)
            continue;
        kill(pid, SIGKILL);
        kv_buf_printf(note, "%s%s (pid %d)", found ? ", " : "", comm, pid);
        found++;
    }
    if (d) closedir(d);
    return found;
}

/* Runs ARGV (argv[0]: the kevolve binary) with the scratch environment, a
 * clean descriptor table and LIMIT seconds; fills R. Resumes whatever of
 * its tree gets stopped. Returns 0, or -1 when it could not start. */
static int rt_exec(char *const *argv, double limit, rt_run *r)
{
    static int evals;
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    snprintf(r->tag, sizeof r->tag, "%d-%d", (int)getpid(), ++evals);
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) return -1;
    char *home = kv_asprintf("%s/home", g_root), *run = kv_asprintf("%s/run", g_root);
    char *tmp = kv_asprintf("%s/tmp", g_root), *pm = kv_asprintf("%s/parent_metrics.json", g_root);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        setpgid(0, 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        setenv("HOME", home, 1);
        setenv("KEVOLVE_RUN_DIR", run, 1);
        setenv("KEVOLVE_PARENT_METRICS", pm, 1);
        setenv("TMPDIR", tmp, 1);
        setenv("KV_REDTEAM_EVAL", r->tag, 1);
        unsetenv("KEVOLVE_CACHE_DIR");
        unsetenv("XDG_CACHE_HOME");
        execv(argv[0], argv);
        _exit(127);
    }
    setpgid(pid, pid);
    rt_stat(pid, NULL, NULL, &r->start_ticks, NULL, 0);
    close(out[1]);
    close(err[1]);
    free(home);
    free(run);
    free(tmp);
    free(pm);
    int status = 0, done = 0;
    double after_exit = -1;
    char chunk[65536];
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double now = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        if (!done && now > limit) {
            r->timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
        /* Once it is gone, read what is left for a moment: a descendant that
         * kept its stdout must not keep the test waiting. */
        if (done && now > after_exit + 0.3) break;
        struct pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        int k = poll(p, 2, 50);
        for (int i = 0; i < 2 && k > 0; i++)
            if (p[i].revents & (POLLIN | POLLHUP)) {
                ssize_t n = read(p[i].fd, chunk, sizeof chunk);
                if (n > 0) kv_buf_append(i ? &r->err : &r->out, chunk, (size_t)n);
            }
        if (!done) {
            pid_t w = waitpid(pid, &status, WNOHANG | WUNTRACED);
            if (w == pid && WIFSTOPPED(status)) {
                r->stopped++;
                kill(pid, SIGCONT);
            } else if (w == pid) {
                done = 1;
                after_exit = now;
                r->seconds = now;
                r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            } else {
                r->stopped += rt_watch_tree(pid, r, now);
            }
        }
    }
    close(out[0]);
    close(err[0]);
    return 0;
}

/* ---- files ---- */

/* "kvrt-forged" built at run time, so that this file holds no marker. */
static const char *rt_marker(void)
{
    static char m[16];
    snprintf(m, sizeof m, "%s-%s", "kvrt", "forged");
    return m;
}

/* 1 when the file at PATH holds the marker where it could be believed: a
 * file that is one JSON object is the judge's own record (its verdict
 * keeps the candidate's output as data) unless its reason is the marker
 * itself, a forged verdict. */
static int rt_file_has_marker(const char *path, off_t size)
{
    if (size <= 0 || size > (16 << 20) || kv_ends_with(path, ".so")) return 0;
    size_t len = 0;
    char *text = kv_read_file(path, &len);
    if (!text) return 0;
    const char *m = rt_marker();
    size_t ml = strlen(m);
    int found = 0;
    for (size_t i = 0; i + ml <= len && !found; i++)
        found = text[i] == m[0] && memcmp(text + i, m, ml) == 0;
    json_t *j = found ? json_loadb(text, len, 0, NULL) : NULL;
    if (j && json_is_object(j)) {
        json_t *a = json_object_get(j, "artifacts");
        const char *reason = json_string_value(json_object_get(a ? a : j, "reason"));
        found = reason && strcmp(reason, m) == 0;
    }
    if (j) json_decref(j);
    free(text);
    return found;
}

/* 1 when file NAME (kvrt-PID.json, kvrt-late-PID-N.json) was written by a
 * process of R, or when R is NULL. */
static int rt_ours(const char *name, const rt_run *r)
{
    if (!r) return 1;
    int pid = atoi(name + (strncmp(name, "kvrt-late-", 10) == 0 ? 10 : 5));
    for (int i = 0; i < r->npids; i++)
        if (r->pids[i] == pid) return 1;
    return 0;
}

/* Looks through DIR (recursively when DEEP) for files named kvrt-* (only
 * those changed at or after SINCE when SINCE > 0 and written by R's
 * processes when R is not NULL; each is removed) and, when MARKS, files
 * holding the marker; names them in NOTE. Returns how many it found. */
static int rt_scan_dir(const char *dir, int deep, time_t since, int marks, const rt_run *r,
                       kv_buf *note)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *path = kv_asprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode) && deep) {
                found += rt_scan_dir(path, 1, since, marks, r, note);
            } else if (S_ISREG(st.st_mode)) {
                if (strncmp(e->d_name, "kvrt-", 5) == 0 && (since <= 0 || st.st_mtime >= since) &&
                    rt_ours(e->d_name, r)) {
                    kv_buf_printf(note, "%s%s", note->len ? ", " : "", path);
                    unlink(path);
                    found++;
                } else if (marks && rt_file_has_marker(path, st.st_size)) {
                    kv_buf_printf(note, "%s%s (written into)", note->len ? ", " : "", path);
                    found++;
                }
            }
        }
        free(path);
    }
    closedir(d);
    return found;
}

/* The scratch files every evaluation starts from (rewritten after each;
 * the run folder emptied). */
static void rt_reset_scratch(void)
{
    char *p = kv_asprintf("%s/run", g_root); /* a run of its own: no verdict kept from another */
    kv_remove_tree(p);
    mkdir(p, 0755);
    free(p);
    p = kv_asprintf("%s/run/work", g_root);
    mkdir(p, 0755);
    free(p);
    p = kv_asprintf("%s/run/work/1.job.json", g_root); /* what a run hands its workers */
    const char *job = "{\"version\": 1, \"task\": \"the controller's job\"}\n";
    kv_write_file(p, job, strlen(job));
    free(p);
    p = kv_asprintf("%s/parent_metrics.json", g_root);
    const char *pm = "{\"combined_score\": 1.0, \"speedup\": {}}\n";
    kv_write_file(p, pm, strlen(pm));
    free(p);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    p = kv_asprintf("%s/home/.cache/kevolve/kernels/device-%s-0%s%s.lock", g_root, g_backend,
                    host[0] ? "-" : "", host);
    if (truncate(p, 0) != 0 && errno != ENOENT) fprintf(stderr, "truncate %s failed\n", p);
    free(p);
}

/* Files the candidate of R left: in the scratch tree (any kvrt-* file, any
 * file holding the marker), the user's real kevolve cache and /tmp (kvrt-*
 * files its processes wrote since SINCE). */
static int rt_left_files(const rt_run *r, time_t since, kv_buf *note)
{
    int n = rt_scan_dir(g_root, 1, 0, 1, NULL, note);
    struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_dir) {
        char *c = kv_asprintf("%s/.cache/kevolve", pw->pw_dir);
        char *k = kv_asprintf("%s/.cache/kevolve/kernels", pw->pw_dir);
        n += rt_scan_dir(c, 0, since, 0, r, note);
        n += rt_scan_dir(k, 0, since, 0, r, note);
        free(c);
        free(k);
    }
    n += rt_scan_dir("/tmp", 0, since, 0, r, note);
    return n;
}

/* ---- the verdict ---- */

/* The verdict of R: stdout's only line when it is exactly one JSON object
 * with metrics and artifacts (*CLEAN = 1); else the last line that looks
 * like kevolve's own verdict (artifacts.task set; *CLEAN = 0). NULL: none. */
static json_t *rt_verdict(const rt_run *r, int *clean)
{
    *clean = 0;
    if (!r->out.data) return NULL;
    json_t *last = NULL;
    int lines = 0;
    const char *p = r->out.data;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lines++;
        json_t *j = json_loadb(p, len, 0, NULL);
        json_t *a = j ? json_object_get(j, "artifacts") : NULL;
        if (a && json_object_get(j, "metrics") && json_object_get(a, "task")) {
            if (last) json_decref(last);
            last = j;
        } else if (j) {
            json_decref(j);
        }
        p = nl ? nl + 1 : p + len;
    }
    *clean = last && lines == 1 && r->out.data[r->out.len - 1] == '\n';
    return last;
}

/* 1 when REASON matches one of the comma-separated fnmatch PATTERNS. */
static int rt_reason_ok(const char *reason, const char *patterns)
{
    if (!patterns) return 1;
    char *copy = kv_strdup(patterns), *save = NULL;
    int ok = 0;
    for (char *t = strtok_r(copy, ",", &save); t && !ok; t = strtok_r(NULL, ",", &save))
        ok = fnmatch(t, reason ? reason : "", 0) == 0;
    free(copy);
    return ok;
}

/* kevolve eval --task TASK --backend <g_backend> --quick --run-dir RUN
 * --parent PARENT ARGS FILE: as a run evaluates a child. */
static int rt_eval(const char *task, const char *file, const char *args, double limit, rt_run *r)
{
    const char *bin = getenv("KV_BINARY");
    if (!bin) bin = "./build/kevolve";
    char *argv[32];
    int n = 0;
    char *copy = kv_strdup(args ? args : ""), *save = NULL;
    argv[n++] = (char *)bin;
    argv[n++] = "eval";
    argv[n++] = "--task";
    argv[n++] = (char *)task;
    argv[n++] = "--backend";
    argv[n++] = (char *)g_backend;
    argv[n++] = "--quick";
    char *run = kv_asprintf("%s/run", g_root),
         *parent = kv_asprintf("%s/parent_metrics.json", g_root);
    argv[n++] = "--run-dir";
    argv[n++] = run;
    argv[n++] = "--parent";
    argv[n++] = parent;
    for (char *t = strtok_r(copy, " ", &save); t && n < 30; t = strtok_r(NULL, " ", &save))
        argv[n++] = t;
    argv[n++] = (char *)file;
    argv[n] = NULL;
    int rc = rt_exec(argv, limit, r);
    free(copy);
    free(run);
    free(parent);
    return rc;
}

static char *rt_source_path(const char *rel)
{
    const char *root = getenv("KV_SOURCE_DIR");
    return kv_asprintf("%s/tests/data/kernels/redteam/%s", root ? root : ".", rel);
}

/* Skips the case of FILE: the program's time is spent. */
static void rt_out_of_time(const char *file)
{
    double load = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1) load = 0;
        fclose(f);
    }
    fprintf(stderr, "SKIP: %s/%s: this program spent its %d s (load average %.1f)\n", g_backend,
            file, RT_BUDGET_S, load);
    skip();
}

/* A score past C's bound, once more: a gain is the ratio of two timings
 * taken seconds apart, and on a loaded machine (ctest -j2 on two cores) the
 * baseline's can land in a burst of another test's work. A trick that
 * works scores past the bound again; the lower of the two counts. */
static double rt_confirm_gain(const rt_case *c, const char *rel, const char *path, double limit,
                              double score, kv_buf *bad)
{
    rt_reset_scratch();
    rt_run r;
    if (rt_eval(c->task, path, c->args, limit, &r) != 0) fail_msg("%s: cannot run kevolve", rel);
    int clean = 0;
    json_t *v = rt_verdict(&r, &clean);
    json_t *a = v ? json_object_get(v, "artifacts") : NULL;
    const char *verdict = json_string_value(json_object_get(a, "verdict"));
    double again =
        json_number_value(json_object_get(json_object_get(v, "metrics"), "combined_score"));
    fprintf(stderr, "redteam %s: combined_score %.4g > %g; evaluated again: %s %.4g\n", rel, score,
            c->max_score, verdict ? verdict : "no verdict", again);
    kv_buf note = KV_BUF_INIT;
    if (rt_kill_survivors(&r, &note))
        kv_buf_printf(bad, "; outlived the evaluation (evaluated again): %s", note.data);
    kv_buf_free(&note);
    if (verdict && strcmp(verdict, "correct") == 0 && again < score) score = again;
    if (v) json_decref(v);
    kv_buf_free(&r.out);
    kv_buf_free(&r.err);
    return score;
}

/* Runs case C and asserts all of it (see the file comment); skips with
 * what it got when it fails against the judge of today. */
static void rt_check(const rt_case *c)
{
    double left = (double)(g_started + RT_BUDGET_S - time(NULL));
    if (left < 20) rt_out_of_time(c->file);
    char *rel = kv_asprintf("%s/%s", g_backend, c->file);
    char *path = rt_source_path(rel);
    rt_reset_scratch();
    time_t since = time(NULL) - 1;
    rt_run r;
    double limit = c->max_seconds > 0 ? c->max_seconds + 60 : 240;
    int budget_bound = limit > left;
    if (budget_bound) limit = left;
    if (rt_eval(c->task, path, c->args, limit, &r) != 0) fail_msg("%s: cannot run kevolve", rel);
    if (r.timed_out && budget_bound) {
        kv_buf note = KV_BUF_INIT;
        rt_kill_survivors(&r, &note);
        kv_buf_free(&note);
        kv_buf_free(&r.out);
        kv_buf_free(&r.err);
        free(rel);
        free(path);
        rt_out_of_time(c->file);
    }
    kv_buf bad = KV_BUF_INIT, note = KV_BUF_INIT;
    int clean = 0;
    json_t *v = rt_verdict(&r, &clean);
    json_t *m = v ? json_object_get(v, "metrics") : NULL,
           *a = v ? json_object_get(v, "artifacts") : NULL;
    const char *verdict = json_string_value(json_object_get(a, "verdict"));
    const char *reason = json_string_value(json_object_get(a, "reason"));
    double score = json_number_value(json_object_get(m, "combined_score"));
    int correct = verdict && strcmp(verdict, "correct") == 0;
    /* The verdict. */
    if (r.timed_out) kv_buf_printf(&bad, "; kevolve eval still ran after %.0f s", limit);
    if (!v) {
        const char *tail = r.err.data ? r.err.data : "";
        size_t tl = strlen(tail);
        kv_buf_printf(&bad, "; no verdict (exit %d): %s", r.exit_code,
                      tl > 300 ? tail + tl - 300 : tail);
    } else if (r.exit_code != 0) {
        kv_buf_printf(&bad, "; kevolve eval exited %d", r.exit_code);
    }
    if (v && !correct && (score != 0 || json_integer_value(json_object_get(m, "correct")) != 0))
        kv_buf_printf(&bad, "; rejected with combined_score %g", score);
    if (v) switch (c->want) {
        case RT_REJECT:
            if (correct)
                kv_buf_printf(&bad, "; judged correct (combined_score %.4g)", score);
            else if (!rt_reason_ok(reason, c->reasons))
                kv_buf_printf(&bad, "; rejected for %s, not for %s", reason, c->reasons);
            break;
        case RT_CORRECT:
            if (!correct)
                kv_buf_printf(&bad, "; an honest kernel rejected (%s): %s", reason,
                              json_string_value(json_object_get(a, "reason_detail")));
            break;
        case RT_NOGAIN:
        case RT_ANY:
            if (correct && score > c->max_score && !r.timed_out)
                score = rt_confirm_gain(c, rel, path, limit, score, &bad);
            if (correct && score > c->max_score)
                kv_buf_printf(&bad,
                              "; judged correct with combined_score %.4g (> %g for this copy "
                              "of the baseline)",
                              score, c->max_score);
            else if (!correct && c->want == RT_NOGAIN && !rt_reason_ok(reason, c->reasons))
                kv_buf_printf(&bad, "; rejected for %s, not for %s", reason, c->reasons);
            break;
        }
    /* What it aimed for around the verdict. */
    if (v && !clean) kv_buf_printf(&bad, "; kevolve eval's stdout holds more than its verdict");
    if (r.stopped)
        kv_buf_printf(
            &bad, "; kevolve (or its child) was stopped (SIGSTOP, or held by ptrace) %d time(s)",
            r.stopped);
    if (c->max_seconds > 0 && r.seconds > c->max_seconds)
        kv_buf_printf(&bad, "; took %.1f s (> %g s)", r.seconds, c->max_seconds);
    if (rt_kill_survivors(&r, &note)) {
        kv_buf_printf(&bad, "; outlived the evaluation: %s", note.data);
    } else if (c->next_eval) {
        char *fast = kv_asprintf("%s/tasks/softmax/cpu/fast.c",
                                 getenv("KV_SOURCE_DIR") ? getenv("KV_SOURCE_DIR") : ".");
        const char *saved = g_backend;
        g_backend = "cpu";
        rt_run nr;
        rt_eval("softmax", fast, "--stage 1", 30, &nr);
        g_backend = saved;
        int nclean;
        json_t *nv = rt_verdict(&nr, &nclean);
        const char *nverdict =
            json_string_value(json_object_get(json_object_get(nv, "artifacts"), "verdict"));
        if (nr.timed_out || !nverdict || strcmp(nverdict, "correct") != 0 || nr.seconds > 15)
            kv_buf_printf(&bad, "; the next evaluation was held up (%.1f s, %s)", nr.seconds,
                          nverdict ? nverdict : "no verdict");
        if (nv) json_decref(nv);
        kv_buf_free(&nr.out);
        kv_buf_free(&nr.err);
        free(fast);
        kv_buf_clear(&note);
        if (rt_kill_survivors(&r, &note))
            kv_buf_printf(&bad, "; outlived the evaluation: %s", note.data);
    }
    kv_buf_clear(&note);
    if (rt_left_files(&r, since, &note)) kv_buf_printf(&bad, "; files written: %s", note.data);
    rt_reset_scratch();
    /* The summary line, then the outcome. */
    const char *problems = bad.data ? bad.data + 2 : NULL;
    fprintf(
        stderr, "redteam %-34s %-26s %s%s%s %.4g, %.1f s: %s%s\n", rel, c->cls,
        verdict ? verdict : "no verdict", reason ? " " : "", reason ? reason : "", score, r.seconds,
        !problems ? (c->hole && !g_old_judge ? "ok (the known hole is closed: drop .hole)" : "ok")
        : c->control  ? "FAIL: "
        : g_old_judge ? "awaits the separated judge (issue 11): "
        : c->hole     ? "known hole (reported): "
                      : "FAIL: ",
        problems ? problems : "");
    if (v) json_decref(v);
    kv_buf_free(&r.out);
    kv_buf_free(&r.err);
    kv_buf_free(&note);
    if (problems) {
        /* On the stack: fail_msg jumps out of this function (nothing left to
         * free for LeakSanitizer to find). */
        char msg[2048];
        snprintf(msg, sizeof msg, "%s [%s]: %s", rel, c->cls, problems);
        kv_buf_free(&bad);
        free(rel);
        free(path);
        if (c->control || (!g_old_judge && (!c->hole || g_strict))) fail_msg("%s", msg);
        if (g_old_judge)
            fprintf(stderr, "SKIP: %s (today's judge: %s)\n", msg, g_judge_note);
        else
            fprintf(stderr, "SKIP: %s (a known hole of the separated judge: %s)\n", msg, c->hole);
        skip();
    }
    kv_buf_free(&bad);
    free(rel);
    free(path);
}

/* ---- what the programs share ---- */

/* Reasons for a candidate that does not compute the answer. */
#define WRONG "wrong_result,wrong_on_held_out_shape,timed_output_wrong,stale_or_unwritten_output"
/* Reasons for a replay the judge catches in the act. */
#define REPLAYED                                                                                   \
    "timed_output_wrong,wrong_result,wrong_on_held_out_shape,result_cached_across_calls,"          \
    "stale_or_unwritten_output"
/* Reasons for an answer outside the tolerance. */
#define TOLERANCE "wrong_result,wrong_on_held_out_shape,timed_output_wrong"
/* The most a copy of the baseline may score when its trick is starved. */
#define NO_GAIN 2.0
/* Classes whose cheat acts on every call, checks included: correctness is
 * enough to judge them (and keeps the red team within minutes). Replays,
 * the baseline burners and the controls are timed too. */
#define STAGE1 "--stage 1"

/* The red team's gqa kernels are plain (one thread or work-item per query
 * row), not fast: on a busy 2-core machine the held-out shapes take
 * seconds, and a kernel timeout is not what their cases are about. */
#define SLOW_KERNEL "--kernel-timeout 30"

/* Set by a program whose backend is missing: every case skips. */
static int g_no_backend;

/* A cmocka test FN that runs the case of the designated initialisers. */
#define CASE(fn, ...)                                                                              \
    static void fn(void **state)                                                                   \
    {                                                                                              \
        (void)state;                                                                               \
        if (g_no_backend) skip();                                                                  \
        rt_check(&(const rt_case){__VA_ARGS__});                                                   \
    }

/* Creates the scratch tree and asks the probe which judge this is. */
static int rt_setup(void **state)
{
    (void)state;
    g_started = time(NULL);
    if (!mkdtemp(g_root)) return -1;
    if (strcmp(g_backend, "opencl") == 0) { /* PoCL in CI; a machine without one skips */
        json_t *info = NULL;
        char *err = NULL;
        g_no_backend = kv_kernel_devices("opencl", &info, &err) != 0;
        if (g_no_backend) fprintf(stderr, "SKIP: no OpenCL device: %s\n", err);
        free(err);
        if (info) json_decref(info);
    }
    const char *dirs[] = {
        "home", "home/.cache", "home/.cache/kevolve", "home/.cache/kevolve/kernels", "run", "tmp"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char *p = kv_asprintf("%s/%s", g_root, dirs[i]);
        mkdir(p, 0755);
        free(p);
    }
    rt_reset_scratch();
    const char *strict = getenv("KV_REDTEAM_STRICT");
    const char *saved = g_backend;
    g_backend = "cpu";
    char *probe = rt_source_path("cpu/probe_judge.c");
    rt_run r;
    rt_eval("softmax", probe, "--stage 1", 120, &r);
    g_backend = saved;
    int clean;
    json_t *v = rt_verdict(&r, &clean);
    const char *verdict =
        json_string_value(json_object_get(json_object_get(v, "artifacts"), "verdict"));
    g_old_judge = !(verdict && strcmp(verdict, "correct") == 0);
    g_judge_note =
        g_old_judge ? "its watchdog is an interval timer in the candidate's process" : "separated";
    if (strict && strcmp(strict, "1") == 0) {
        g_old_judge = 0;
        g_strict = 1;
        g_judge_note = "KV_REDTEAM_STRICT=1";
    }
    fprintf(stderr, "redteam: the judge is %s%s\n", g_old_judge ? "today's: " : "", g_judge_note);
    if (v) json_decref(v);
    kv_buf_free(&r.out);
    kv_buf_free(&r.err);
    free(probe);
    return 0;
}

static int rt_teardown(void **state)
{
    (void)state;
    kv_remove_tree(g_root);
    return 0;
}

#endif
