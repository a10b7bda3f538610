/* Worker processes for candidate kernels (see worker.h). */
#include "judge/worker.h"
#include "util/clock.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/proc.h"
#include "util/signame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Child state: the pipe to the parent and the phase. Read by the crash
 * handler, so plain static storage. */
static int g_fd = -1;
static char g_phase[256];
static char g_altstack[64 * 1024];

void kv_worker_outcome_clear(kv_worker_outcome *o)
{
    if (o->result) json_decref(o->result);
    if (o->fail_extra) json_decref(o->fail_extra);
    free(o->fail_detail);
    free(o->phase);
    memset(o, 0, sizeof *o);
}

int kv_worker_in_child(void)
{
    return g_fd >= 0;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

/* Async-signal-safe appending into a fixed buffer. */
static size_t put(char *buf, size_t at, size_t cap, const char *s)
{
    while (*s && at + 1 < cap)
        buf[at++] = *s++;
    buf[at] = '\0';
    return at;
}

static size_t put_hex(char *buf, size_t at, size_t cap, uintptr_t v)
{
    char tmp[2 + 2 * sizeof v + 1];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    char out[sizeof tmp + 2] = "0x";
    for (int i = 0; i < n; i++)
        out[2 + i] = tmp[n - 1 - i];
    out[2 + n] = '\0';
    return put(buf, at, cap, out);
}

/* The judge's own crash: a harness error, reported with where it was. */
static void on_crash(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    static char msg[1024];
    size_t n = put(msg, 0, sizeof msg, "{\"type\":\"fail\",\"code\":\"");
    n = put(msg, n, sizeof msg, kv_reason_name(KV_R_HARNESS_ERROR));
    n = put(msg, n, sizeof msg, "\",");
    n = put(msg, n, sizeof msg, "\"detail\":\"the judge crashed (");
    n = put(msg, n, sizeof msg, kv_signal_name(sig, "a signal"));
    if (sig == SIGSEGV || sig == SIGBUS) {
        n = put(msg, n, sizeof msg, " at address ");
        n = put_hex(msg, n, sizeof msg, (uintptr_t)info->si_addr);
    }
    n = put(msg, n, sizeof msg, ") during ");
    n = put(msg, n, sizeof msg, g_phase[0] ? g_phase : "startup");
    n = put(msg, n, sizeof msg, "\"}\n");
    write_all(g_fd, msg, n);
    _exit(3);
}

/* Copies TEXT into a JSON-string-safe form (no quotes, backslashes or
 * control characters), so signal handlers can paste it into JSON. */
static void safe_copy(char *dst, size_t cap, const char *text)
{
    size_t i = 0;
    for (; text[i] && i + 1 < cap; i++) {
        char c = text[i];
        dst[i] = (c == '"' || c == '\\' || (unsigned char)c < 32) ? ' ' : c;
    }
    dst[i] = '\0';
}

static void send_json(json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!s) return;
    write_all(g_fd, s, strlen(s));
    write_all(g_fd, "\n", 1);
    free(s);
}

void kv_worker_phase(const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    safe_copy(g_phase, sizeof g_phase, tmp);
    if (g_fd < 0) return;
    json_t *o = json_pack("{s:s,s:s}", "type", "phase", "phase", g_phase);
    send_json(o);
    json_decref(o);
}

const char *kv_worker_current_phase(void)
{
    return g_phase;
}

void kv_worker_waiting(void)
{
    json_t *o = json_pack("{s:s}", "type", "waiting");
    send_json(o);
    json_decref(o);
}

void kv_worker_waited(double seconds)
{
    if (seconds > 0) kv_proc_extend_budget(seconds);
    json_t *o = json_pack("{s:s,s:f}", "type", "waited", "seconds", seconds);
    send_json(o);
    json_decref(o);
}

void kv_worker_result(const json_t *result)
{
    json_t *o = json_pack("{s:s,s:O}", "type", "result", "result", result);
    send_json(o);
    json_decref(o);
}

void kv_worker_failure(kv_reason code, int arg, const json_t *extra, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kv_buf b = KV_BUF_INIT;
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char name[64];
    json_t *o =
        json_pack("{s:s,s:s,s:s}", "type", "fail", "code",
                  kv_reason_format(code, arg, name, sizeof name), "detail", b.data ? b.data : "");
    if (extra) json_object_set(o, "extra", (json_t *)extra);
    send_json(o);
    json_decref(o);
    kv_buf_free(&b);
}

void kv_worker_serve(int fd)
{
    g_fd = fd;
    g_phase[0] = '\0';
}

void kv_worker_serve_setup(void)
{
    kv_catch_crashes(on_crash, g_altstack, sizeof g_altstack);
}

/* Child side: its own group, dies with its parent, no stdin, and nothing
 * of it on the parent's stdout (which carries the verdict). */
static void child_setup(int fd)
{
    g_fd = fd;
    g_phase[0] = '\0';
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(2, 1);
    kv_worker_serve_setup();
}

/* The forked child: setup, then FN. Never returns. */
static _Noreturn void child_main(int fd, void (*fn)(void *), void *ctx)
{
    child_setup(fd);
    fn(ctx);
    _exit(0);
}

static void parse_lines(const char *text, kv_worker_outcome *out);

/* Parses the child's lines into OUT. */
static void parse_lines(const char *text, kv_worker_outcome *out)
{
    const char *p = text;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *line = kv_strndup(p, len);
        json_t *o = kv_json_loads(line);
        free(line);
        const char *type = o ? json_string_value(json_object_get(o, "type")) : NULL;
        if (type && strcmp(type, "phase") == 0) {
            free(out->phase);
            out->phase = kv_strdup(json_string_value(json_object_get(o, "phase")));
        } else if (type && strcmp(type, "result") == 0 && !out->result) {
            out->result = json_incref(json_object_get(o, "result"));
        } else if (type && strcmp(type, "fail") == 0 && !out->failed) {
            /* The code crosses the pipe by its name: read back here only. */
            out->failed = 1;
            out->fail_code =
                kv_reason_parse(json_string_value(json_object_get(o, "code")), &out->fail_arg);
            out->fail_detail = kv_strdup(json_string_value(json_object_get(o, "detail")));
            json_t *extra = json_object_get(o, "extra");
            if (extra) out->fail_extra = json_incref(extra);
        }
        if (o) json_decref(o);
        p = nl ? nl + 1 : NULL;
    }
}

/* What the parent knows of the child's waits (for its device): while it
 * waits, its limit stands still. */
typedef struct child_wait {
    size_t scanned; /* the text's complete lines read */
    int waiting;
    double since;
} child_wait;

/* Reads the lines of TEXT past W's: a "waiting" starts a wait, a "waited"
 * ends it. Returns the seconds of waits ended (the limit moves by them). */
static double waits_ended(const kv_buf *text, child_wait *w)
{
    double ended = 0;
    while (w->scanned < text->len) {
        const char *line = text->data + w->scanned;
        const char *nl = memchr(line, '\n', text->len - w->scanned);
        if (!nl) break;
        w->scanned = (size_t)(nl - text->data) + 1;
        char *one = kv_strndup(line, (size_t)(nl - line));
        json_t *o = strstr(one, "\"wait") ? kv_json_loads(one) : NULL;
        free(one);
        const char *type = o ? json_string_value(json_object_get(o, "type")) : NULL;
        if (type && strcmp(type, "waiting") == 0 && !w->waiting) {
            w->waiting = 1;
            w->since = kv_now_s();
        } else if (type && strcmp(type, "waited") == 0 && w->waiting) {
            double s = kv_now_s() - w->since;
            w->waiting = 0;
            ended += s;
            kv_proc_extend_budget(s);
        }
        if (o) json_decref(o);
    }
    return ended;
}

int kv_worker_run(void (*fn)(void *ctx), void *ctx, double timeout_s, kv_worker_outcome *out,
                  char **err)
{
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    int fds[2];
    if (pipe(fds) != 0) {
        *err = kv_asprintf("pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    double t0 = kv_now_s();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        *err = kv_asprintf("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        /* The child's budget is its own limit, so that what it starts ends
         * (and is reported) before we kill it. */
        if (timeout_s > 0) kv_proc_set_budget(timeout_s);
        child_main(fds[1], fn, ctx);
    }
    close(fds[1]);
    setpgid(pid, pid);
    kv_buf text = KV_BUF_INIT;
    char chunk[8192];
    int status = 0, reaped = 0;
    child_wait wait = {0};
    double deadline = t0 + timeout_s;
    for (;;) {
        deadline += waits_ended(&text, &wait);
        double left = deadline - kv_now_s();
        if (timeout_s > 0 && left <= 0 && !wait.waiting) {
            out->timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = poll(&p, 1, 100);
        if (r > 0) {
            ssize_t n = read(fds[0], chunk, sizeof chunk);
            if (n > 0) {
                kv_buf_append(&text, chunk, (size_t)n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            break; /* EOF: the child (and all holding the pipe) closed it */
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            reaped = 1;
            /* Drain what is left without blocking on descendants. */
            fcntl(fds[0], F_SETFL, O_NONBLOCK);
            ssize_t n;
            while ((n = read(fds[0], chunk, sizeof chunk)) > 0)
                kv_buf_append(&text, chunk, (size_t)n);
            break;
        }
    }
    close(fds[0]);
    if (!reaped)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    kill(-pid, SIGKILL); /* anything the candidate left behind */
    out->seconds = kv_now_s() - t0;
    if (WIFEXITED(status)) out->exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status) && !out->timed_out) out->signal = WTERMSIG(status);
    if (text.data) parse_lines(text.data, out);
    kv_buf_free(&text);
    return 0;
}

int kv_worker_follow(int fd, double timeout_s, double wait_cap_s, kv_worker_outcome *out)
{
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    double t0 = kv_now_s(), deadline = t0 + timeout_s;
    kv_buf text = KV_BUF_INIT;
    char chunk[8192];
    /* Waiting from the start: in line behind the judge's other clients. */
    child_wait wait = {.waiting = 1, .since = t0};
    for (;;) {
        deadline += waits_ended(&text, &wait);
        double now = kv_now_s();
        if ((!wait.waiting && timeout_s > 0 && now >= deadline) ||
            (wait.waiting && now - wait.since >= wait_cap_s)) {
            out->timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, 100);
        if (r < 0 && errno != EINTR) break;
        if (r <= 0) continue;
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* the judge closed the channel: done, or gone */
        kv_buf_append(&text, chunk, (size_t)n);
    }
    out->seconds = kv_now_s() - t0;
    int started = text.len > 0;
    if (text.data) parse_lines(text.data, out);
    /* A judge that stops answering is ended as a worker would be: its
     * process group (its runners with it). */
    json_t *first = started ? kv_json_loads(strtok(text.data, "\n")) : NULL;
    long pid = (long)json_integer_value(json_object_get(first, "pid"));
    if (out->timed_out && pid > 1) {
        kill(-(pid_t)pid, SIGKILL);
        kill((pid_t)pid, SIGKILL);
    }
    if (first) json_decref(first);
    kv_buf_free(&text);
    return started ? 0 : 1;
}

const char *kv_worker_signal_name(int sig)
{
    return kv_signal_name(sig, "a signal");
}
