/* Child processes that can be trusted to end (see proc.h).
 *
 * A child is started (see spawn_child) in its own process group, gets /dev/null as
 * stdin, two non-blocking pipes as stdout and stderr, resource limits, no
 * other inherited descriptors and an environment without secrets. Exec
 * errors travel back through a close-on-exec pipe, so "no such program" is
 * an error of kv_proc_start rather than a mysterious exit 127.
 *
 * The end of a run always takes the whole group with it: at the time limit
 * the group is killed with SIGKILL; after the main process exits, whatever
 * it left behind in its group is killed too. The caller becomes a child
 * subreaper (Linux), so the orphans of a group are reparented to it and can
 * be reaped: once kv_proc_poll reports the end, no process of the group
 * exists any more, zombies included. */
#define _GNU_SOURCE
#include "util/proc.h"
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#include <sys/prctl.h>
#endif

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char **environ;

/* What failed in the child before exec, reported through the pipe. */
enum { STAGE_STDIO = 1, STAGE_CHDIR, STAGE_RLIMIT, STAGE_EXEC };

/* Without a pidfd an exit is noticed by waking up this often. */
#define KV_PROC_SLICE_MS 20
/* Chunks read from one stream per poll, so a flood cannot starve the clock. */
#define KV_PROC_READS_PER_POLL 16

struct stream {
    int fd; /* read end, -1 once closed */
    kv_buf buf;
    size_t dropped;
};

struct kv_proc {
    pid_t pid; /* also the process group id */
    int exit_fd;
    struct stream out, err;
    size_t max_output;
    double timeout_s;
    double start, deadline; /* monotonic seconds; deadline 0: none */
    int ended;
    kv_proc_end how;
    int exit_code, signal;
    double seconds;
    char describe[96];
};

/* Everything the child needs, prepared before the spawn so that the child only
 * makes async-signal-safe calls. */
struct launch {
    const char *path;  /* resolved program */
    char *const *argv; /* as given */
    char **sh_argv;    /* "sh PATH ARGS..." for scripts without #! (execvp's ENOEXEC rule) */
    char **envp;
    const char *cwd;
    long memory_limit_mb, cpu_limit_s;
    int max_fd;
    int out_w, err_w, report_w; /* the child's stdout, stderr and failure report */
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
 * and lose their status); and we become a subreaper so that the orphans of
 * a group come back to us to be reaped. */
static void setup_parent_once(void)
{
    static int done;
    if (done) return;
    done = 1;
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
    if (sigaction(SIGCHLD, NULL, &old) == 0 && old.sa_handler == SIG_IGN) signal(SIGCHLD, SIG_DFL);
#ifdef PR_SET_CHILD_SUBREAPER
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif
}

/* ---- the child -------------------------------------------------------- */

/* The child runs on a stack borrowed from the parent (spawn_child): code of
 * the child is left out of AddressSanitizer, whose stack redzones would
 * otherwise be left behind in the parent's shadow memory and show up there
 * later as false reports. It makes system calls only; nothing to check. */
#if defined(__GNUC__) || defined(__clang__)
#define KV_CHILD_CODE __attribute__((no_sanitize_address, noinline))
#else
#define KV_CHILD_CODE
#endif

/* Sends STAGE and errno E to the parent and exits. Async-signal-safe. */
KV_CHILD_CODE static void child_fail(int report_fd, int stage, int e)
{
    int msg[2] = {stage, e};
    const char *p = (const char *)msg;
    size_t left = sizeof msg;
    while (left > 0) {
        ssize_t n = write(report_fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        p += n;
        left -= (size_t)n;
    }
    _exit(127);
}

/* Lowers resource limit RES to VALUE (never above the current hard limit). */
KV_CHILD_CODE static int child_limit(int res, rlim_t soft, rlim_t hard)
{
    struct rlimit cur, lim;
    if (getrlimit(res, &cur) != 0) return -1;
    lim.rlim_max = (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < hard) ? cur.rlim_max : hard;
    lim.rlim_cur = soft < lim.rlim_max ? soft : lim.rlim_max;
    return setrlimit(res, &lim);
}

/* Runs in the child (see spawn_child); never returns. Only async-signal-safe
 * calls, and no writes to memory but its own stack: it may share the
 * parent's memory. */
KV_CHILD_CODE static void child_main(const struct launch *l, int out_w, int err_w, int report_w)
{
    setpgid(0, 0);
    /* Every signal arrives blocked (see spawn_child): the parent's handlers
     * must not run here, in its memory. Reset them, then unblock. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int s = 1; s < NSIG; s++)
        (void)sigaction(s, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) child_fail(report_w, STAGE_STDIO, errno);
    /* All three sources are >= 3 (see fd_above_stdio), so dup2 never
     * clobbers one with another and clears close-on-exec on 0..2. */
    if (dup2(devnull, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
        child_fail(report_w, STAGE_STDIO, errno);

    if (l->cwd && chdir(l->cwd) != 0) child_fail(report_w, STAGE_CHDIR, errno);

    if (child_limit(RLIMIT_CORE, 0, 0) != 0) child_fail(report_w, STAGE_RLIMIT, errno);
    if (l->memory_limit_mb > 0) {
        rlim_t bytes = (rlim_t)l->memory_limit_mb * 1024 * 1024;
        if (child_limit(RLIMIT_AS, bytes, bytes) != 0) child_fail(report_w, STAGE_RLIMIT, errno);
    }
    if (l->cpu_limit_s > 0) {
        /* SIGXCPU at the soft limit, SIGKILL a second later. */
        rlim_t s = (rlim_t)l->cpu_limit_s;
        if (child_limit(RLIMIT_CPU, s, s + 1) != 0) child_fail(report_w, STAGE_RLIMIT, errno);
    }

    /* Every descriptor above stderr closes at exec (the report pipe too). */
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
#endif
    {
        for (int fd = 3; fd < l->max_fd; fd++)
            (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    }

    execve(l->path, l->argv, l->envp);
    if (errno == ENOEXEC) execve("/bin/sh", l->sh_argv, l->envp);
    child_fail(report_w, STAGE_EXEC, errno);
}

/* ---- starting --------------------------------------------------------- */

#ifdef __linux__
/* Entry of the clone(2) child. */
KV_CHILD_CODE static int child_entry(void *arg)
{
    const struct launch *l = arg;
    child_main(l, l->out_w, l->err_w, l->report_w);
    return 127; /* not reached */
}
#endif

/* Starts child_main(L) in a new process; returns its pid, or -1 with errno.
 *
 * On Linux this is clone(CLONE_VM | CLONE_VFORK), what posix_spawn does
 * inside glibc: the child borrows the parent's memory instead of a copy, and
 * the parent sleeps until the child has exec'd or exited. fork() would copy
 * the page tables of the whole parent and write-protect all its memory, so
 * that the parent then takes a page fault on the first write to every page
 * after each spawn: with a controller of ~17 MiB that was ~4,000 faults and
 * most of the parent's CPU per evaluation. posix_spawn itself cannot set the
 * resource limits before exec; this keeps child_main, which sets them (and
 * everything else) before the new program runs a single instruction.
 *
 * The child runs on a stack carved out of this frame (the parent does not
 * run until the child is done with it) and writes nothing but that stack;
 * every signal is blocked around the clone, so that no handler of the
 * parent can run in the child before child_main resets them to default. */
static pid_t spawn_child(const struct launch *l)
{
#ifdef __linux__
    /* 64 KiB: child_main needs a few hundred bytes, sanitizers a lot more. */
    _Alignas(64) char stack[65536];
    sigset_t all, old;
    sigfillset(&all);
    int masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
    pid_t pid =
        clone(child_entry, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)l);
    int e = errno;
    if (masked) (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return pid;
#else
    pid_t pid = fork();
    if (pid == 0) child_main(l, l->out_w, l->err_w, l->report_w);
    return pid;
#endif
}

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

/* Moves FD above 0..2 (keeping close-on-exec) so the child's dup2 onto the
 * standard descriptors cannot clobber it. Returns the fd, or -1. */
static int fd_above_stdio(int fd)
{
    if (fd < 0 || fd > 2) return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return moved;
}

/* pipe2(O_CLOEXEC) with both ends above stdio. Returns 0 or -1. */
static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    fds[0] = fd_above_stdio(fds[0]);
    fds[1] = fd_above_stdio(fds[1]);
    if (fds[0] < 0 || fds[1] < 0) {
        if (fds[0] >= 0) close(fds[0]);
        if (fds[1] >= 0) close(fds[1]);
        return -1;
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Reads the child's 8-byte failure report; returns 1 with it, 0 at EOF
 * (the exec succeeded). */
static int read_report(int fd, int msg[2])
{
    char *p = (char *)msg;
    size_t got = 0;
    while (got < 2 * sizeof(int)) {
        ssize_t n = read(fd, p + got, 2 * sizeof(int) - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    return got == 2 * sizeof(int);
}

static pid_t wait_pid(pid_t pid, int *status, int flags)
{
    pid_t r;
    do {
        r = waitpid(pid, status, flags);
    } while (r < 0 && errno == EINTR);
    return r;
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
#else
    (void)pid;
#endif
    return -1;
}

kv_proc *kv_proc_start(const kv_proc_spec *spec, char **err)
{
    if (err) *err = NULL;
    if (!spec || !spec->argv || !spec->argv[0]) {
        if (err) *err = kv_strdup("cannot run a process: no program given");
        return NULL;
    }
    const char *name = spec->argv[0];
    setup_parent_once();

    int e = 0;
    char *path = find_program(name, &e);
    if (!path) {
        if (err) *err = kv_asprintf("cannot run '%s': %s", name, strerror(e));
        return NULL;
    }

    size_t argc = 0;
    while (spec->argv[argc])
        argc++;
    char **sh_argv = kv_calloc(argc + 2, sizeof(char *));
    sh_argv[0] = "sh";
    sh_argv[1] = path;
    for (size_t i = 1; i < argc; i++)
        sh_argv[i + 1] = spec->argv[i];

    long open_max = sysconf(_SC_OPEN_MAX);
    struct launch l = {
        .path = path,
        .argv = spec->argv,
        .sh_argv = sh_argv,
        .envp = build_env(spec->extra_env),
        .cwd = spec->cwd,
        .memory_limit_mb = spec->memory_limit_mb,
        .cpu_limit_s = spec->cpu_limit_s,
        .max_fd = (open_max > 0 && open_max < 65536) ? (int)open_max : 65536,
    };

    kv_proc *p = kv_calloc(1, sizeof *p);
    p->out.fd = p->err.fd = p->exit_fd = -1;
    p->max_output = spec->max_output ? spec->max_output : (size_t)1 << 20;
    p->timeout_s = spec->timeout_s;

    int out[2] = {-1, -1}, errp[2] = {-1, -1}, rep[2] = {-1, -1};
    char *msg = NULL;
    if (make_pipe(out) != 0 || make_pipe(errp) != 0 || make_pipe(rep) != 0) {
        msg = kv_asprintf("cannot run '%s': cannot create pipes: %s", name, strerror(errno));
        goto fail;
    }

    p->start = kv_now_s();
    l.out_w = out[1];
    l.err_w = errp[1];
    l.report_w = rep[1];
    pid_t pid = spawn_child(&l);
    if (pid < 0) {
        msg = kv_asprintf("cannot run '%s': cannot create a process: %s", name, strerror(errno));
        goto fail;
    }

    /* The child has exec'd or failed by now (spawn_child), and made its
     * own process group before either. */
    p->pid = pid;
    close_fd(&out[1]);
    close_fd(&errp[1]);
    close_fd(&rep[1]);

    int report[2];
    if (read_report(rep[0], report)) {
        int status;
        (void)wait_pid(pid, &status, 0);
        const char *why = strerror(report[1]);
        switch (report[0]) {
        case STAGE_CHDIR:
            msg = kv_asprintf("cannot run '%s': cannot enter directory '%s': %s", name, spec->cwd,
                              why);
            break;
        case STAGE_RLIMIT:
            msg = kv_asprintf("cannot run '%s': cannot set resource limits: %s", name, why);
            break;
        case STAGE_STDIO:
            msg = kv_asprintf("cannot run '%s': cannot set up stdin/stdout/stderr: %s", name, why);
            break;
        default:
            msg = kv_asprintf("cannot run '%s': %s", name, why);
            break;
        }
        goto fail;
    }
    close_fd(&rep[0]);

    p->out.fd = out[0];
    p->err.fd = errp[0];
    (void)fcntl(p->out.fd, F_SETFL, fcntl(p->out.fd, F_GETFL) | O_NONBLOCK);
    (void)fcntl(p->err.fd, F_SETFL, fcntl(p->err.fd, F_GETFL) | O_NONBLOCK);
    p->exit_fd = open_pidfd(pid);
    if (spec->timeout_s > 0) p->deadline = p->start + spec->timeout_s;
    free(l.envp);
    free(sh_argv);
    free(path);
    return p;

fail:
    for (int i = 0; i < 2; i++) {
        close_fd(&out[i]);
        close_fd(&errp[i]);
        close_fd(&rep[i]);
    }
    free(l.envp);
    free(sh_argv);
    free(path);
    free(p);
    if (err)
        *err = msg;
    else
        free(msg);
    return NULL;
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
 * after the group is gone nobody can write more that we care about. */
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

/* Kills what is left of process group PGID and reaps every member that is
 * our child (orphans come back to us as subreaper). Gives up after ~5 s of
 * members refusing to die (uninterruptible sleep), which SIGKILL cannot fix. */
static void kill_and_reap_group(pid_t pgid)
{
    for (int round = 0; round < 5000; round++) {
        if (kill(-pgid, SIGKILL) != 0 && errno == ESRCH) return;
        pid_t r;
        while ((r = wait_pid(-pgid, NULL, WNOHANG)) > 0) {
        }
        if (r < 0) return; /* ECHILD: none of ours left (others are killed, not ours to reap) */
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* "SIGSEGV" for 11; NULL when unknown. */
static const char *signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
        {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
        {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
        {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"},
        {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
    };
    for (size_t i = 0; i < COUNT(names); i++)
        if (names[i].sig == sig) return names[i].name;
    return NULL;
}

/* Writes the one-line description of the end into p->describe. */
static void set_describe(kv_proc *p)
{
    const char *name;
    switch (p->how) {
    case KV_PROC_EXITED:
        snprintf(p->describe, sizeof p->describe, "exit %d", p->exit_code);
        break;
    case KV_PROC_SIGNALED:
        name = signal_name(p->signal);
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

/* Records the end HOW with wait status STATUS and tears down the group. */
static void finish(kv_proc *p, kv_proc_end how, int status, int have_status)
{
    p->ended = 1;
    p->seconds = kv_now_s() - p->start;
    kill_and_reap_group(p->pid);
    drain_and_close(p);
    close_fd(&p->exit_fd);
    p->how = how;
    p->exit_code = -1;
    p->signal = 0;
    if (how == KV_PROC_EXITED || how == KV_PROC_SIGNALED) {
        if (!have_status) {
            p->how = KV_PROC_EXITED;
            p->exit_code = 255; /* reaped by someone else: status lost */
        } else if (WIFEXITED(status)) {
            p->how = KV_PROC_EXITED;
            p->exit_code = WEXITSTATUS(status);
        } else {
            p->how = KV_PROC_SIGNALED;
            p->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        }
    }
    set_describe(p);
}

/* Kills the group now and records the end as HOW. */
static void kill_now(kv_proc *p, kv_proc_end how)
{
    (void)kill(-p->pid, SIGKILL);
    (void)kill(p->pid, SIGKILL);
    int status = 0;
    (void)wait_pid(p->pid, &status, 0);
    finish(p, how, status, 1);
}

int kv_proc_ms_to_deadline(const kv_proc *p)
{
    if (!p || p->ended || p->deadline <= 0) return -1;
    double left = p->deadline - kv_now_s();
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
    if (p->exit_fd < 0 && (ms < 0 || ms > KV_PROC_SLICE_MS)) ms = KV_PROC_SLICE_MS;

    struct pollfd pf[3];
    nfds_t n = 0;
    int fds[3] = {p->out.fd, p->err.fd, p->exit_fd};
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0) pf[n++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    if (ms != 0 && poll(pf, n, ms) < 0 && errno != EINTR && errno != EAGAIN) {
        /* Cannot wait on the descriptors: fall back to a short sleep. */
        struct timespec ts = {0, KV_PROC_SLICE_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    read_stream(p, &p->out);
    read_stream(p, &p->err);

    int status = 0;
    pid_t r = wait_pid(p->pid, &status, WNOHANG);
    if (r == p->pid) {
        finish(p, KV_PROC_EXITED, status, 1);
        return 1;
    }
    if (r < 0) { /* ECHILD: someone else reaped it */
        finish(p, KV_PROC_EXITED, 0, 0);
        return 1;
    }
    if (p->deadline > 0 && kv_now_s() >= p->deadline) {
        kill_now(p, KV_PROC_TIMED_OUT);
        return 1;
    }
    return 0;
}

void kv_proc_wait(kv_proc *p)
{
    while (!kv_proc_poll(p, -1)) {
    }
}

void kv_proc_kill(kv_proc *p)
{
    if (p && !p->ended) kill_now(p, KV_PROC_KILLED);
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
    return p->ended ? -1 : p->exit_fd;
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
    if (!p->ended) kill_now(p, KV_PROC_KILLED);
    close_fd(&p->out.fd);
    close_fd(&p->err.fd);
    close_fd(&p->exit_fd);
    kv_buf_free(&p->out.buf);
    kv_buf_free(&p->err.buf);
    free(p);
}
