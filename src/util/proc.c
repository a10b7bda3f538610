/* Child processes that can be trusted to end (see proc.h).
 *
 * kv_proc_start starts a supervisor (util/supervise.h), which starts the
 * program. The supervisor is normally its own small program, embedded in
 * the library (kv_supervisor_elf, built from src/util/supervisor) and
 * executed from a sealed memfd; where that cannot be executed (memfd
 * execution forbidden), it runs in a fork of this process instead.
 *
 * Both are started with clone(CLONE_VM | CLONE_VFORK), what posix_spawn
 * does inside glibc: the child borrows this process's memory instead of a
 * copy, and we sleep until it has exec'd. fork() would copy the page tables
 * of the whole process and write-protect all its memory, so that we would
 * then take a page fault on the first write to every page after each spawn
 * (with a controller of ~17 MiB that was ~4,000 faults and most of its CPU
 * per evaluation); a forked supervisor would moreover keep the copy for
 * the whole evaluation.
 *
 * Descriptors of the supervisor: 0..2 the program's stdin, stdout and
 * stderr, 3 .. 3+n-1 the program's extra descriptors, 3+n the control pipe
 * (we write a byte to kill; its end of file means we died), 4+n the status
 * pipe (the supervisor's records: started, or could not start; ended, and
 * how). Nothing else. */
#define _GNU_SOURCE
#include "util/proc.h"
#include "util/signame.h"
#include "util/supervise.h"
#include "util/clock.h"
#include "util/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <sys/prctl.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

extern char **environ;

/* The supervisor program (generated from src/util/supervisor). */
extern const unsigned char kv_supervisor_elf[];
extern const size_t kv_supervisor_elf_size;

/* How long past the time limit we wait for a supervisor's report before we
 * stop trusting it: it may spend KV_SUP_KILL_LIMIT_S killing. */
#define KV_PROC_GRACE_S (KV_SUP_KILL_LIMIT_S + 5.0)
/* Chunks read from one stream per poll, so a flood cannot starve the clock. */
#define KV_PROC_READS_PER_POLL 16

struct stream {
    int fd; /* read end, -1 once closed */
    kv_buf buf;
    size_t dropped;
};

struct kv_proc {
    pid_t pid;     /* the program; also its process group id */
    pid_t sup_pid; /* its supervisor, 0 once reaped */
    int ctl_fd;    /* control pipe, write end */
    int st_fd;     /* status pipe, read end */
    kv_sup_record rec;
    size_t rec_got; /* bytes of rec read so far */
    struct stream out, err;
    size_t max_output;
    double timeout_s;
    double start, deadline; /* monotonic seconds; deadline 0: none */
    double paused_at;       /* when its clock was stopped (kv_proc_pause_clock), else 0 */
    int ended;
    kv_proc_end how;
    int exit_code, signal;
    double seconds;
    char describe[96];
};

/* Everything a spawn needs, prepared before it so that the child only
 * makes async-signal-safe calls. */
struct launch {
    kv_sup_args sup;              /* for a supervisor run in a fork */
    char **sup_argv;              /* for the supervisor program */
    char **envp;                  /* the program's environment */
    int exec_fd;                  /* the supervisor program (memfd), -1: fork */
    int src[5 + KV_PROC_MAX_FDS]; /* stdin, stdout, stderr, extras, control, status */
    int n_src;
};

/* ---- secrets ---------------------------------------------------------- */

static const char *const secret_prefixes[] = {
    "OPENAI_",      "ANTHROPIC_",   "AZURE_OPENAI_", "GEMINI_",       "GOOGLE_API",
    "MISTRAL_",     "COHERE_",      "DEEPSEEK_",     "GROQ_",         "TOGETHER_",
    "OPENROUTER_",  "XAI_",         "FIREWORKS_",    "REPLICATE_",    "PERPLEXITY_",
    "AWS_SECRET",   "AWS_SESSION",  "AWS_ACCESS",    "HF_TOKEN",      "HUGGING_FACE_HUB_",
    "HUGGINGFACE_", "GITHUB_TOKEN", "GH_TOKEN",      "GITLAB_TOKEN",  "NPM_TOKEN",
    "PYPI_",        "TWINE_",       "KAGGLE_KEY",    "SSH_AUTH_SOCK", "GPG_AGENT",
    "VAULT_",       "DOCKER_AUTH",  "NGC_API",       "LANGCHAIN_API", "WANDB_API",
};
static const char *const secret_suffixes[] = {
    "KEY",   "KEYS",        "TOKEN",      "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD",
    "_PASS", "CREDENTIALS", "CREDENTIAL", "_CREDS", "_AUTH",  "_COOKIE", "_PAT",     "_DSN",
};
static const char *const secret_parts[] = {
    "SECRET", "TOKEN",      "PASSWORD",    "PASSWD",     "API_KEY",
    "APIKEY", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL", "AUTH_KEY",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* kv_env_is_secret on the first LEN bytes of NAME. */
static int is_secret_n(const char *name, size_t len)
{
    char *up = kv_malloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        up[i] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    up[len] = '\0';
    int secret = 0;
    for (size_t i = 0; !secret && i < COUNT(secret_prefixes); i++)
        secret = kv_starts_with(up, secret_prefixes[i]);
    for (size_t i = 0; !secret && i < COUNT(secret_suffixes); i++)
        secret = kv_ends_with(up, secret_suffixes[i]);
    for (size_t i = 0; !secret && i < COUNT(secret_parts); i++)
        secret = strstr(up, secret_parts[i]) != NULL;
    free(up);
    return secret;
}

int kv_env_is_secret(const char *name)
{
    return name ? is_secret_n(name, strlen(name)) : 0;
}

/* Length of the name part of a "NAME=value" entry. */
static size_t env_name_len(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

/* New NULL-terminated array: the parent's environment minus secrets and
 * minus names EXTRA sets, then EXTRA. The strings are borrowed. */
static char **build_env(char *const *extra)
{
    size_t n_env = 0, n_extra = 0;
    for (char **e = environ; e && *e; e++)
        n_env++;
    for (char *const *x = extra; x && *x; x++)
        n_extra++;
    char **envp = kv_calloc(n_env + n_extra + 1, sizeof(char *));
    size_t k = 0;
    for (char **e = environ; e && *e; e++) {
        size_t len = env_name_len(*e);
        if (is_secret_n(*e, len)) continue;
        int overridden = 0;
        for (char *const *x = extra; x && *x && !overridden; x++)
            overridden = env_name_len(*x) == len && strncmp(*x, *e, len) == 0;
        if (!overridden) envp[k++] = *e;
    }
    for (char *const *x = extra; x && *x; x++)
        envp[k++] = *x;
    envp[k] = NULL;
    return envp;
}

/* ---- process-wide setup ----------------------------------------------- */

/* Once per process: a child closing its pipes must never kill us with
 * SIGPIPE; SIGCHLD must not be ignored (that would auto-reap our children
 * and lose their status); and we become a subreaper so that, should a
 * supervisor be killed, the processes it watched come back to us. */
static void setup_parent_once(void)
{
    static int done;
    if (done) return;
    done = 1;
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
    if (sigaction(SIGCHLD, NULL, &old) == 0 && old.sa_handler == SIG_IGN) signal(SIGCHLD, SIG_DFL);
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

/* The supervisor program in a sealed memfd, made once; -1 when it cannot be
 * (then supervisors run in a fork). */
static int g_exec_fd = -1;
static int g_force_fork;
static pthread_once_t g_exec_once = PTHREAD_ONCE_INIT;

static void make_exec_fd(void)
{
    if (kv_supervisor_elf_size == 0) return;
    int fd = memfd_create("kevolve-supervisor", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
    if (fd < 0 && errno == EINVAL) /* kernels before 6.3 know no MFD_EXEC */
        fd = memfd_create("kevolve-supervisor", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return;
    const unsigned char *p = kv_supervisor_elf;
    size_t left = kv_supervisor_elf_size;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            close(fd);
            return;
        }
        p += n;
        left -= (size_t)n;
    }
    (void)fchmod(fd, 0500);
    (void)fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    g_exec_fd = fd;
}

void kv_proc_test_fork_supervisor(int on)
{
    g_force_fork = on;
}

/* Supervisors alive, so that the clean-up after a lost one spares the
 * others' processes. */
static pthread_mutex_t g_live_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t *g_live;
static size_t g_n_live, g_cap_live;

static void live_add(pid_t pid)
{
    pthread_mutex_lock(&g_live_lock);
    if (g_n_live == g_cap_live) {
        g_cap_live = g_cap_live ? 2 * g_cap_live : 16;
        g_live = kv_realloc(g_live, g_cap_live * sizeof *g_live);
    }
    g_live[g_n_live++] = pid;
    pthread_mutex_unlock(&g_live_lock);
}

static void live_remove(pid_t pid)
{
    pthread_mutex_lock(&g_live_lock);
    for (size_t i = 0; i < g_n_live; i++)
        if (g_live[i] == pid) {
            g_live[i] = g_live[--g_n_live];
            break;
        }
    pthread_mutex_unlock(&g_live_lock);
}

/* ---- this process's own budget ---------------------------------------- */

static double g_deadline; /* monotonic seconds; 0: no budget */

void kv_proc_set_budget(double seconds)
{
    g_deadline = seconds > 0 ? kv_now_s() + seconds : 0;
}

void kv_proc_extend_budget(double seconds)
{
    if (g_deadline > 0 && seconds > 0) g_deadline += seconds;
}

double kv_proc_time_left(void)
{
    if (g_deadline <= 0) return -1;
    double left = g_deadline - kv_now_s();
    return left > 0 ? left : 0;
}

/* The time limit of a program whose spec asks for WANTED (<= 0: none),
 * within what is left of ours, less a reserve for our own report. */
static double effective_timeout(double wanted)
{
    double left = kv_proc_time_left();
    if (left < 0) return wanted;
    /* A tenth, between 0.5 s and 1 s, and never more than half of it:
     * enough to notice the end and report it under load. */
    double reserve = left * 0.1 < 0.5 ? 0.5 : left * 0.1 > 1.0 ? 1.0 : left * 0.1;
    if (reserve > left / 2) reserve = left / 2;
    double cap = left - reserve;
    if (cap < 0.001) cap = 0.001;
    return wanted > 0 && wanted < cap ? wanted : cap;
}

/* ---- starting --------------------------------------------------------- */

/* Looks NAME up like execvp: as given when it holds a '/', else in $PATH.
 * Returns a malloc'd path, or NULL with *e set (ENOENT, EACCES). */
static char *find_program(const char *name, int *e)
{
    if (strchr(name, '/')) return kv_strdup(name);
    if (!*name) {
        *e = ENOENT;
        return NULL;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    *e = ENOENT;
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char *dir = len ? kv_strndup(p, len) : kv_strdup(".");
        char *cand = kv_asprintf("%s/%s", dir, name);
        free(dir);
        if (access(cand, X_OK) == 0) {
            struct stat st;
            if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) return cand;
        } else if (errno == EACCES) {
            *e = EACCES;
        }
        free(cand);
        if (!colon) break;
        p = colon + 1;
    }
    return NULL;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* The spawned child's side (see the top of the file). Code of the child is
 * left out of AddressSanitizer: it runs on a stack borrowed in our memory,
 * and its redzones would be left behind in our shadow memory. */
#if defined(__GNUC__) || defined(__clang__)
#define KV_CHILD_CODE __attribute__((no_sanitize_address, noinline))
#else
#define KV_CHILD_CODE
#endif

/* Puts L's descriptors at 0 .. n_src-1 and marks every other close-on-exec;
 * *EXEC_FD (when >= 0) is moved out of the way first. Returns 0 or -1 with
 * errno. */
KV_CHILD_CODE static int child_place_fds(const struct launch *l, int *exec_fd)
{
    int moved[5 + KV_PROC_MAX_FDS];
    if (*exec_fd >= 0 && (*exec_fd = fcntl(*exec_fd, F_DUPFD_CLOEXEC, l->n_src)) < 0) return -1;
    /* First above every target, so that no dup2 clobbers a source. */
    for (int i = 0; i < l->n_src; i++) {
        moved[i] = fcntl(l->src[i], F_DUPFD_CLOEXEC, l->n_src);
        if (moved[i] < 0) return -1;
    }
    for (int i = 0; i < l->n_src; i++)
        if (dup2(moved[i], i) < 0) return -1;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)l->n_src, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return 0;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) max = 65536;
    for (int fd = l->n_src; fd < max; fd++)
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    return 0;
}

/* Reports a supervisor that could not be started on the status pipe (now
 * at n_src-1) and exits. */
KV_CHILD_CODE static void child_fail(const struct launch *l, int e)
{
    kv_sup_record r = {KV_SUP_START_FAILED, KV_SUP_STAGE_SUPERVISOR, e, 0};
    ssize_t n;
    do {
        n = write(l->n_src - 1, &r, sizeof r);
    } while (n < 0 && errno == EINTR);
    _exit(127);
}

/* Entry of the clone(2) child: becomes the supervisor program. */
KV_CHILD_CODE static int child_exec_supervisor(void *arg)
{
    const struct launch *l = arg;
    setpgid(0, 0); /* terminal signals are kevolve's to handle */
    int exec_fd = l->exec_fd;
    if (child_place_fds(l, &exec_fd) != 0) _exit(127);
    syscall(SYS_execveat, exec_fd, "", l->sup_argv, l->envp, AT_EMPTY_PATH);
    child_fail(l, errno);
    return 127;
}

/* Starts the supervisor; returns its pid or -1 with errno. Every signal is
 * blocked around the clone so that no handler of ours runs in the child;
 * the supervisor sets its own mask. */
static pid_t spawn_supervisor(struct launch *l)
{
    sigset_t all, old;
    sigfillset(&all);
    int masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
    pid_t pid;
    if (l->exec_fd >= 0) {
        /* 64 KiB: the child needs a few hundred bytes, sanitizers a lot more. */
        _Alignas(64) char stack[65536];
        pid = clone(child_exec_supervisor, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD,
                    (void *)l);
    } else {
        fflush(NULL);
        pid = fork();
        if (pid == 0) {
            setpgid(0, 0);
            int none = -1;
            if (child_place_fds(l, &none) != 0) _exit(127);
            /* Nothing of ours may stay open here: no exec will close it. */
            long max = sysconf(_SC_OPEN_MAX);
            if (max < 0 || max > 65536) max = 65536;
#ifdef SYS_close_range
            if (syscall(SYS_close_range, (unsigned)l->n_src, ~0U, 0) != 0)
#endif
                for (int fd = l->n_src; fd < max; fd++)
                    (void)close(fd);
            kv_supervise(&l->sup);
        }
    }
    int e = errno;
    if (masked) (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return pid;
}

static pid_t wait_pid(pid_t pid, int *status, int flags)
{
    pid_t r;
    do {
        r = waitpid(pid, status, flags);
    } while (r < 0 && errno == EINTR);
    return r;
}

/* pipe2(O_CLOEXEC). Returns 0 or -1. */
static int make_pipe(int fds[2])
{
    return pipe2(fds, O_CLOEXEC);
}

/* Reads the status pipe of P into p->rec; returns 1 with a whole record, 0
 * when none is complete yet (non-blocking) or -1 at end of file. BLOCK:
 * wait for it. */
static int read_record(kv_proc *p, int block)
{
    while (p->rec_got < sizeof p->rec) {
        if (block) {
            struct pollfd pf = {.fd = p->st_fd, .events = POLLIN};
            if (poll(&pf, 1, -1) < 0 && errno != EINTR) return -1;
        }
        ssize_t n = read(p->st_fd, (char *)&p->rec + p->rec_got, sizeof p->rec - p->rec_got);
        if (n > 0) {
            p->rec_got += (size_t)n;
            continue;
        }
        if (n == 0) return -1;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (block) continue;
            return 0;
        }
        return -1;
    }
    p->rec_got = 0;
    return 1;
}

/* The message for a start that failed at STAGE with errno E. */
static char *start_error(const char *name, const char *cwd, int stage, int e)
{
    const char *why = strerror(e);
    switch (stage) {
    case KV_SUP_STAGE_CHDIR:
        return kv_asprintf("cannot run '%s': cannot enter directory '%s': %s", name,
                           cwd ? cwd : "?", why);
    case KV_SUP_STAGE_RLIMIT:
        return kv_asprintf("cannot run '%s': cannot set resource limits: %s", name, why);
    case KV_SUP_STAGE_STDIO:
        return kv_asprintf("cannot run '%s': cannot set up stdin/stdout/stderr: %s", name, why);
    case KV_SUP_STAGE_SPAWN:
        return kv_asprintf("cannot run '%s': cannot create a process: %s", name, why);
    case KV_SUP_STAGE_SUPERVISOR:
        return kv_asprintf("cannot run '%s': cannot start its supervisor: %s", name, why);
    default:
        return kv_asprintf("cannot run '%s': %s", name, why);
    }
}

/* One attempt at starting SPEC's program through a supervisor (EXEC_FD: its
 * program, -1: a fork). Returns P filled in, or NULL with *msg; *retry is
 * set when the supervisor program could not be executed at all. */
static kv_proc *start_once(const kv_proc_spec *spec, const char *path, char **envp,
                           double timeout_s, int exec_fd, char **msg, int *retry)
{
    const char *name = spec->argv[0];
    size_t argc = 0;
    while (spec->argv[argc])
        argc++;
    char **sh_argv = kv_calloc(argc + 2, sizeof(char *));
    sh_argv[0] = "sh";
    sh_argv[1] = (char *)path;
    for (size_t i = 1; i < argc; i++)
        sh_argv[i + 1] = spec->argv[i];

    kv_proc *p = kv_calloc(1, sizeof *p);
    p->out.fd = p->err.fd = p->ctl_fd = p->st_fd = -1;
    p->max_output = spec->max_output ? spec->max_output : (size_t)1 << 20;
    p->timeout_s = timeout_s;

    int out[2] = {-1, -1}, errp[2] = {-1, -1}, ctl[2] = {-1, -1}, st[2] = {-1, -1};
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct launch l = {.envp = envp, .exec_fd = exec_fd};
    char nums[256];
    char **sup_argv = kv_calloc(argc + 16, sizeof(char *));
    if (devnull < 0 || make_pipe(out) != 0 || make_pipe(errp) != 0 || make_pipe(ctl) != 0 ||
        make_pipe(st) != 0) {
        *msg = kv_asprintf("cannot run '%s': cannot create pipes: %s", name, strerror(errno));
        goto fail;
    }
    l.src[l.n_src++] = devnull;
    l.src[l.n_src++] = out[1];
    l.src[l.n_src++] = errp[1];
    for (int i = 0; i < spec->n_fds; i++)
        l.src[l.n_src++] = spec->fds[i];
    l.src[l.n_src++] = ctl[0];
    l.src[l.n_src++] = st[1];
    l.sup = (kv_sup_args){
        .path = path,
        .argv = spec->argv,
        .sh_argv = sh_argv,
        .envp = envp,
        .cwd = spec->cwd,
        .memory_limit_mb = spec->memory_limit_mb,
        .cpu_limit_s = spec->cpu_limit_s,
        .timeout_ms = timeout_s > 0 ? (long)(timeout_s * 1000.0 + 0.5) : 0,
        .n_extra = spec->n_fds,
        .ctl_fd = 3 + spec->n_fds,
        .status_fd = 4 + spec->n_fds,
        .parent = getpid(),
    };
    if (l.sup.timeout_ms == 0 && timeout_s > 0) l.sup.timeout_ms = 1;
    kv_sup_argv(&l.sup, sup_argv, argc + 16, nums);
    l.sup_argv = sup_argv;

    p->start = kv_now_s();
    pid_t sup = spawn_supervisor(&l);
    if (sup < 0) {
        *msg = kv_asprintf("cannot run '%s': cannot create a process: %s", name, strerror(errno));
        goto fail;
    }
    p->sup_pid = sup;
    close_fd(&devnull);
    close_fd(&out[1]);
    close_fd(&errp[1]);
    close_fd(&ctl[0]);
    close_fd(&st[1]);
    p->ctl_fd = ctl[1];
    p->st_fd = st[0];
    ctl[1] = st[0] = -1;

    int got = read_record(p, 1);
    if (got != 1 || p->rec.type != KV_SUP_STARTED) {
        if (got == 1 && p->rec.type == KV_SUP_START_FAILED) {
            if (p->rec.a == KV_SUP_STAGE_SUPERVISOR) *retry = 1;
            *msg = start_error(name, spec->cwd, p->rec.a, p->rec.b);
        } else {
            *msg = kv_asprintf("cannot run '%s': its supervisor died at the start", name);
        }
        kill(sup, SIGKILL);
        (void)wait_pid(sup, NULL, 0);
        p->sup_pid = 0;
        goto fail;
    }
    p->pid = p->rec.a;
    live_add(sup);

    p->out.fd = out[0];
    p->err.fd = errp[0];
    (void)fcntl(p->out.fd, F_SETFL, fcntl(p->out.fd, F_GETFL) | O_NONBLOCK);
    (void)fcntl(p->err.fd, F_SETFL, fcntl(p->err.fd, F_GETFL) | O_NONBLOCK);
    (void)fcntl(p->st_fd, F_SETFL, fcntl(p->st_fd, F_GETFL) | O_NONBLOCK);
    if (timeout_s > 0) p->deadline = p->start + timeout_s;
    free(sup_argv);
    free(sh_argv);
    return p;

fail:
    close_fd(&devnull);
    for (int i = 0; i < 2; i++) {
        close_fd(&out[i]);
        close_fd(&errp[i]);
        close_fd(&ctl[i]);
        close_fd(&st[i]);
    }
    close_fd(&p->ctl_fd);
    close_fd(&p->st_fd);
    free(sup_argv);
    free(sh_argv);
    free(p);
    return NULL;
}

kv_proc *kv_proc_start(const kv_proc_spec *spec, char **err)
{
    if (err) *err = NULL;
    if (!spec || !spec->argv || !spec->argv[0]) {
        if (err) *err = kv_strdup("cannot run a process: no program given");
        return NULL;
    }
    const char *name = spec->argv[0];
    if (spec->n_fds < 0 || spec->n_fds > KV_PROC_MAX_FDS || (spec->n_fds > 0 && !spec->fds)) {
        if (err)
            *err =
                kv_asprintf("cannot run '%s': at most %d extra descriptors", name, KV_PROC_MAX_FDS);
        return NULL;
    }
    setup_parent_once();
    pthread_once(&g_exec_once, make_exec_fd);

    int e = 0;
    char *path = find_program(name, &e);
    if (!path) {
        if (err) *err = kv_asprintf("cannot run '%s': %s", name, strerror(e));
        return NULL;
    }

    /* The one budget, passed down. */
    double timeout_s = effective_timeout(spec->timeout_s);
    size_t n_extra = 0;
    while (spec->extra_env && spec->extra_env[n_extra])
        n_extra++;
    char **extra = kv_calloc(n_extra + 2, sizeof(char *));
    for (size_t i = 0; i < n_extra; i++)
        extra[i] = spec->extra_env[i];
    char *limit = timeout_s > 0 ? kv_asprintf("KEVOLVE_TIMEOUT=%.3f", timeout_s)
                                : kv_strdup("KEVOLVE_TIMEOUT");
    extra[n_extra] = limit;
    char **envp = build_env(extra);
    if (timeout_s <= 0) { /* no limit: no stale variable either */
        size_t k = 0;
        for (size_t i = 0; envp[i]; i++)
            if (strcmp(envp[i], "KEVOLVE_TIMEOUT") != 0) envp[k++] = envp[i];
        envp[k] = NULL;
    }

    char *msg = NULL;
    int retry = 0;
    int exec_fd = g_force_fork ? -1 : g_exec_fd;
    kv_proc *p = start_once(spec, path, envp, timeout_s, exec_fd, &msg, &retry);
    if (!p && retry && exec_fd >= 0) {
        /* The supervisor program cannot be executed here (memfd execution
         * forbidden): supervise from a fork from now on. */
        free(msg);
        msg = NULL;
        g_exec_fd = -1;
        p = start_once(spec, path, envp, timeout_s, -1, &msg, &retry);
    }
    free(envp);
    free(extra);
    free(limit);
    free(path);
    if (!p) {
        if (err)
            *err = msg;
        else
            free(msg);
    }
    return p;
}

/* ---- running and ending ----------------------------------------------- */

/* Reads what STREAM has ready (a bounded amount), keeping the head up to
 * max_output and counting the rest; closes it at EOF or on error. */
static void read_stream(kv_proc *p, struct stream *s)
{
    char chunk[65536];
    for (int i = 0; s->fd >= 0 && i < KV_PROC_READS_PER_POLL; i++) {
        ssize_t n = read(s->fd, chunk, sizeof chunk);
        if (n > 0) {
            size_t room = s->buf.len < p->max_output ? p->max_output - s->buf.len : 0;
            size_t keep = (size_t)n < room ? (size_t)n : room;
            if (keep && kv_buf_append(&s->buf, chunk, keep) != 0) keep = 0;
            s->dropped += (size_t)n - keep;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        close_fd(&s->fd); /* EOF or error */
    }
}

/* Reads both streams until nothing is left right now, then closes them:
 * every writer is gone by then. */
static void drain_and_close(kv_proc *p)
{
    struct stream *ss[2] = {&p->out, &p->err};
    for (int i = 0; i < 2; i++) {
        size_t before;
        do {
            before = ss[i]->buf.len + ss[i]->dropped;
            read_stream(p, ss[i]);
        } while (ss[i]->fd >= 0 && ss[i]->buf.len + ss[i]->dropped != before);
        close_fd(&ss[i]->fd);
    }
}

/* Writes the one-line description of the end into p->describe, unless
 * something more precise is there already. */
static void set_describe(kv_proc *p)
{
    if (p->describe[0]) return;
    const char *name;
    switch (p->how) {
    case KV_PROC_EXITED:
        snprintf(p->describe, sizeof p->describe, "exit %d", p->exit_code);
        break;
    case KV_PROC_SIGNALED:
        name = kv_signal_name(p->signal, NULL);
        if (name)
            snprintf(p->describe, sizeof p->describe, "killed by signal %s", name);
        else
            snprintf(p->describe, sizeof p->describe, "killed by signal %d", p->signal);
        break;
    case KV_PROC_TIMED_OUT:
        snprintf(p->describe, sizeof p->describe, "timed out after %.1f s", p->timeout_s);
        break;
    case KV_PROC_KILLED:
        snprintf(p->describe, sizeof p->describe, "killed (cancelled)");
        break;
    default:
        snprintf(p->describe, sizeof p->describe, "could not start");
        break;
    }
}

/* Records the end from the supervisor's last record and lets it go. */
static void finish(kv_proc *p)
{
    p->ended = 1;
    p->seconds = kv_now_s() - p->start;
    if (p->sup_pid > 0) {
        (void)wait_pid(p->sup_pid, NULL, 0); /* it exits right after its record */
        live_remove(p->sup_pid);
        p->sup_pid = 0;
    }
    drain_and_close(p);
    close_fd(&p->ctl_fd);
    close_fd(&p->st_fd);
    p->exit_code = -1;
    p->signal = 0;
    int status = p->rec.b;
    switch (p->rec.a) {
    case KV_SUP_END_EXITED:
        if (WIFEXITED(status)) {
            p->how = KV_PROC_EXITED;
            p->exit_code = WEXITSTATUS(status);
        } else {
            p->how = KV_PROC_SIGNALED;
            p->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        }
        break;
    case KV_SUP_END_TIMED_OUT:
        p->how = KV_PROC_TIMED_OUT;
        break;
    case KV_SUP_END_PARENT_GONE:
        p->how = KV_PROC_KILLED;
        snprintf(p->describe, sizeof p->describe, "killed (its supervisor was stopped)");
        break;
    default:
        p->how = KV_PROC_KILLED;
        break;
    }
    set_describe(p);
}

/* The supervisor of P stopped answering (killed, stopped, or past the
 * grace): kills it and does its work here. Its processes came back to us
 * (we are a subreaper); every descendant of ours not under another live
 * supervisor is killed. */
static void lost_supervisor(kv_proc *p)
{
    p->ended = 1;
    p->seconds = kv_now_s() - p->start;
    if (p->sup_pid > 0) {
        kill(p->sup_pid, SIGKILL);
        (void)wait_pid(p->sup_pid, NULL, 0);
        live_remove(p->sup_pid);
        p->sup_pid = 0;
    }
    kill(-p->pid, SIGKILL);
    pthread_mutex_lock(&g_live_lock);
    size_t n = g_n_live;
    pid_t *spare = kv_calloc(n + 1, sizeof *spare);
    memcpy(spare, g_live, n * sizeof *spare);
    pthread_mutex_unlock(&g_live_lock);
    spare[n] = getpid(); /* never empty: only our own children get reaped */
    (void)kv_sup_kill_descendants(spare, n + 1, KV_SUP_KILL_LIMIT_S, p->pid, NULL, NULL);
    free(spare);
    drain_and_close(p);
    close_fd(&p->ctl_fd);
    close_fd(&p->st_fd);
    p->how = KV_PROC_KILLED;
    p->exit_code = -1;
    p->signal = 0;
    snprintf(p->describe, sizeof p->describe, "killed (its supervisor was lost)");
}

/* Reads the status pipe; ends P when the supervisor reported or vanished.
 * Returns 1 once ended. */
static int check_end(kv_proc *p)
{
    int r = read_record(p, 0);
    if (r == 1 && p->rec.type == KV_SUP_ENDED) {
        finish(p);
        return 1;
    }
    if (r < 0 || r == 1) { /* end of file, or nonsense: the supervisor is gone */
        lost_supervisor(p);
        return 1;
    }
    if (p->deadline > 0 && !p->paused_at && kv_now_s() >= p->deadline + KV_PROC_GRACE_S) {
        lost_supervisor(p);
        return 1;
    }
    return 0;
}

/* Sends control byte B to P's supervisor; 0 or -1. */
static int control(kv_proc *p, char b)
{
    ssize_t n;
    do {
        n = write(p->ctl_fd, &b, 1);
    } while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : -1;
}

void kv_proc_pause_clock(kv_proc *p)
{
    if (!p || p->ended || p->paused_at) return;
    if (control(p, KV_SUP_PAUSE_BYTE) == 0) p->paused_at = kv_now_s();
}

void kv_proc_resume_clock(kv_proc *p)
{
    if (!p || p->ended || !p->paused_at) return;
    if (control(p, KV_SUP_RESUME_BYTE) != 0) return;
    if (p->deadline > 0) p->deadline += kv_now_s() - p->paused_at;
    p->paused_at = 0;
}

/* Asks the supervisor to kill everything, waits (bounded) for its report. */
static void kill_now(kv_proc *p)
{
    control(p, KV_SUP_KILL_BYTE);
    double until = kv_now_s() + KV_PROC_GRACE_S;
    while (!p->ended) {
        double left = until - kv_now_s();
        if (left <= 0) {
            lost_supervisor(p);
            break;
        }
        struct pollfd pf = {.fd = p->st_fd, .events = POLLIN};
        (void)poll(&pf, 1, (int)(left * 1000.0) + 1);
        read_stream(p, &p->out);
        read_stream(p, &p->err);
        int r = read_record(p, 0);
        if (r == 1 && p->rec.type == KV_SUP_ENDED)
            finish(p);
        else if (r != 0)
            lost_supervisor(p);
    }
}

int kv_proc_ms_to_deadline(const kv_proc *p)
{
    if (!p || p->ended || p->deadline <= 0 || p->paused_at) return -1;
    double left = p->deadline + KV_PROC_GRACE_S - kv_now_s();
    if (left <= 0) return 0;
    if (left > INT_MAX / 1000.0) return INT_MAX;
    return (int)(left * 1000.0) + 1; /* round up: waking early would spin */
}

int kv_proc_poll(kv_proc *p, int wait_ms)
{
    if (p->ended) return 1;
    int ms = wait_ms;
    int to_deadline = kv_proc_ms_to_deadline(p);
    if (to_deadline >= 0 && (ms < 0 || to_deadline < ms)) ms = to_deadline;

    struct pollfd pf[3];
    nfds_t n = 0;
    int fds[3] = {p->out.fd, p->err.fd, p->st_fd};
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0) pf[n++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    if (ms != 0 && poll(pf, n, ms) < 0 && errno != EINTR && errno != EAGAIN) {
        /* Cannot wait on the descriptors: fall back to a short sleep. */
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    read_stream(p, &p->out);
    read_stream(p, &p->err);
    return check_end(p);
}

void kv_proc_wait(kv_proc *p)
{
    while (!kv_proc_poll(p, -1)) {
    }
}

void kv_proc_kill(kv_proc *p)
{
    if (p && !p->ended) kill_now(p);
}

kv_proc *kv_proc_run(const kv_proc_spec *spec, char **err)
{
    kv_proc *p = kv_proc_start(spec, err);
    if (p) kv_proc_wait(p);
    return p;
}

int kv_proc_fds(const kv_proc *p, int fds[2])
{
    int n = 0;
    if (p->out.fd >= 0) fds[n++] = p->out.fd;
    if (p->err.fd >= 0) fds[n++] = p->err.fd;
    return n;
}

int kv_proc_exit_fd(const kv_proc *p)
{
    return p->ended ? -1 : p->st_fd;
}

/* ---- after the end ---------------------------------------------------- */

kv_proc_end kv_proc_how(const kv_proc *p)
{
    return p->how;
}

int kv_proc_exit_code(const kv_proc *p)
{
    return p->ended && p->how == KV_PROC_EXITED ? p->exit_code : -1;
}

int kv_proc_signal(const kv_proc *p)
{
    return p->ended && p->how == KV_PROC_SIGNALED ? p->signal : 0;
}

double kv_proc_seconds(const kv_proc *p)
{
    return p->ended ? p->seconds : kv_now_s() - p->start;
}

const char *kv_proc_stdout(const kv_proc *p)
{
    return p->out.buf.data ? p->out.buf.data : "";
}

size_t kv_proc_stdout_len(const kv_proc *p)
{
    return p->out.buf.len;
}

const char *kv_proc_stderr(const kv_proc *p)
{
    return p->err.buf.data ? p->err.buf.data : "";
}

size_t kv_proc_stderr_len(const kv_proc *p)
{
    return p->err.buf.len;
}

size_t kv_proc_stdout_dropped(const kv_proc *p)
{
    return p->out.dropped;
}

size_t kv_proc_stderr_dropped(const kv_proc *p)
{
    return p->err.dropped;
}

pid_t kv_proc_pid(const kv_proc *p)
{
    return p->pid;
}

const char *kv_proc_describe(const kv_proc *p)
{
    return p->ended ? p->describe : "running";
}

void kv_proc_free(kv_proc *p)
{
    if (!p) return;
    if (!p->ended) kill_now(p);
    close_fd(&p->out.fd);
    close_fd(&p->err.fd);
    close_fd(&p->ctl_fd);
    close_fd(&p->st_fd);
    kv_buf_free(&p->out.buf);
    kv_buf_free(&p->err.buf);
    free(p);
}
