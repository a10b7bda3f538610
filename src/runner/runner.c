/* The runner's loop (see runner.h). */
#include "runner/runner.h"
#include "runner/rdev.h"
#include "runner/rproto.h"
#include "runner/sandbox.h"
#include "util/buf.h"
#include "util/fd_pass.h"
#include "util/fs.h"
#include "util/signame.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define RUNNER_SOCK 3
#define MAX_GUARDS 256

/* Read by the crash handler: plain static storage. */
static struct {
    uintptr_t lo, hi;
    unsigned tensor;
    int read_only;
} g_guards[MAX_GUARDS];
static int g_nguards;
static volatile uint64_t g_seq; /* the request being served */
static kv_rmsg_reply g_crash;   /* built in the handler, sent as a short message */
static char g_altstack[64 * 1024];

void kv_runner_guard_add(const void *lo, size_t len, unsigned tensor, int read_only)
{
    if (g_nguards == MAX_GUARDS) return;
    g_guards[g_nguards].lo = (uintptr_t)lo;
    g_guards[g_nguards].hi = (uintptr_t)lo + len;
    g_guards[g_nguards].tensor = tensor;
    g_guards[g_nguards].read_only = read_only;
    g_nguards++;
}

static size_t put(char *buf, size_t at, size_t cap, const char *s)
{
    while (*s && at + 1 < cap)
        buf[at++] = *s++;
    buf[at] = '\0';
    return at;
}

/* Reports the crash to the judge (a claim that can only fail the
 * candidate) and dies of the same signal. */
static void on_crash(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    uintptr_t addr = (uintptr_t)info->si_addr;
    int guard = -1;
    for (int i = 0; i < g_nguards; i++)
        if (addr >= g_guards[i].lo && addr < g_guards[i].hi) guard = i;
    g_crash.h.type = KV_RMSG_REPLY;
    g_crash.h.version = KV_RPROTO_VERSION;
    g_crash.h.seq = g_seq;
    g_crash.status = -1;
    size_t n = 0;
    if (guard >= 0 && (sig == SIGSEGV || sig == SIGBUS)) {
        int ro = g_guards[guard].read_only;
        g_crash.call = g_guards[guard].tensor;
        g_crash.code = ro ? KV_R_INPUT_MODIFIED : KV_R_OUT_OF_BOUNDS;
        n = put(g_crash.detail, 0, sizeof g_crash.detail,
                ro ? "a write into an input (read-only in the candidate's process, "
                   : "an out of "
                     "bounds "
                     "access (");
        n = put(g_crash.detail, n, sizeof g_crash.detail, kv_signal_name(sig, "a signal"));
        put(g_crash.detail, n, sizeof g_crash.detail, ")");
    } else {
        g_crash.code = KV_R_CRASH;
        g_crash.arg = sig;
        n = put(g_crash.detail, 0, sizeof g_crash.detail, "crash: ");
        put(g_crash.detail, n, sizeof g_crash.detail, kv_signal_name(sig, "a signal"));
    }
    send(RUNNER_SOCK, &g_crash, offsetof(kv_rmsg_reply, log), MSG_NOSIGNAL);
    signal(sig, SIG_DFL);
    raise(sig);
    _exit(128 + sig);
}

static void install_crash_handlers(void)
{
    kv_catch_crashes(on_crash, g_altstack, sizeof g_altstack);
}

/* Sends REPLY (the length up to its log's end) for request SEQ. */
static void send_reply(kv_rmsg_reply *r, uint32_t type, uint64_t seq)
{
    r->h.type = type;
    r->h.version = KV_RPROTO_VERSION;
    r->h.seq = seq;
    size_t len = offsetof(kv_rmsg_reply, log) + strnlen(r->log, sizeof r->log - 1) + 1;
    while (send(RUNNER_SOCK, r, len, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
}

/* Puts failure ERR into R; clears ERR. */
static void set_error(kv_rmsg_reply *r, kv_fail *err)
{
    r->status = -1;
    r->code = err->code;
    r->arg = err->arg;
    snprintf(r->detail, sizeof r->detail, "%s", err->detail ? err->detail : "unknown error");
    kv_fail_clear(err);
}

/* Receives one message into BUF (KV_RMSG_MAX bytes) with its descriptor,
 * if any, in *FD. Returns its length, 0 at the judge's end, -1 on error. */
static ssize_t receive(void *buf, int *fd)
{
    return kv_recv_with_fd(RUNNER_SOCK, buf, KV_RMSG_MAX, fd);
}

int kv_runner_main(int argc, char **argv, kv_rdev_open_fn open_rdev)
{
    static const struct option longopts[] = {
        {"backend", required_argument, NULL, 'b'},    {"lib", required_argument, NULL, 'l'},
        {"device-src", required_argument, NULL, 'd'}, {"scratch", required_argument, NULL, 's'},
        {"own-dir", required_argument, NULL, 'o'},    {"device", required_argument, NULL, 'n'},
        {"confined", no_argument, NULL, 'c'},         {NULL, 0, NULL, 0}};
    const char *backend = NULL, *lib = NULL, *device_src_path = NULL, *scratch = NULL;
    const char *own_dir = NULL;
    int device = 0, confined = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            backend = optarg;
            break;
        case 'l':
            lib = optarg;
            break;
        case 'd':
            device_src_path = optarg;
            break;
        case 's':
            scratch = optarg;
            break;
        case 'o':
            own_dir = optarg;
            break;
        case 'n':
            device = atoi(optarg);
            break;
        case 'c':
            confined = 1;
            break;
        default:
            return 2;
        }
    }
    if (!backend || !lib || !scratch || fcntl(RUNNER_SOCK, F_GETFD) < 0) {
        fprintf(stderr, "kevolve __runner: started by the judge only\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* the judge may die; the runner must not outlive it */
    install_crash_handlers();
    if (chdir(scratch) != 0) {
        fprintf(stderr, "kevolve __runner: cannot enter %s: %s\n", scratch, strerror(errno));
        return 2;
    }
    kv_rmsg_reply *reply = kv_calloc(1, sizeof *reply);
    unsigned char *buf = kv_malloc(KV_RMSG_MAX);
    kv_fail err = {0};
    char *why = NULL;
    kv_rdev *dev = open_rdev(backend, device, &why);
    if (dev) dev->confined = confined;
    const char *what = NULL;
    /* The device first (drivers open their nodes and helper files), then the
     * sandbox, then, only when the judge asks, the candidate. */
    if (!dev) {
        kv_fail_take(&err, KV_R_HARNESS_ERROR, why);
        set_error(reply, &err);
    } else if (confined && !dev->visible_env) {
        kv_fail_set(&err, KV_R_HARNESS_ERROR,
                    "the %s backend cannot narrow the devices a process sees (--confined)",
                    dev->name);
        set_error(reply, &err);
    } else if (dev->open(dev, &err) != 0) {
        set_error(reply, &err);
    } else if (kv_sandbox_apply(scratch, own_dir, (const char *const *)dev->shut, &what, &why) !=
               0) {
        kv_fail_set(&err, KV_R_HARNESS_ERROR, "sandbox: %s", why);
        free(why);
        set_error(reply, &err);
    } else
        snprintf(reply->detail, sizeof reply->detail, "%s%s%s", what,
                 confined ? ", its device alone visible" : "",
                 dev->shut ? ", other GPUs' nodes shut" : "");
    send_reply(reply, KV_RMSG_HELLO, 0);
    if (reply->status != 0) return 1;
    char *device_src = device_src_path ? kv_read_file(device_src_path, NULL) : NULL;
    for (;;) {
        int fd = -1;
        ssize_t n = receive(buf, &fd);
        if (n <= 0) return 0;
        if ((size_t)n < sizeof(kv_rmsg_hdr)) {
            if (fd >= 0) close(fd);
            continue;
        }
        kv_rmsg_hdr h;
        memcpy(&h, buf, sizeof h);
        g_seq = h.seq;
        memset(reply, 0, offsetof(kv_rmsg_reply, log) + 1);
        reply->log[0] = '\0';
        switch (h.type) {
        case KV_RMSG_MAP: {
            kv_rmsg_map m;
            memset(&m, 0, sizeof m);
            memcpy(&m, buf, (size_t)n < sizeof m ? (size_t)n : sizeof m);
            if (dev->map(dev, &m, fd, &err) != 0) set_error(reply, &err);
            break;
        }
        case KV_RMSG_UNMAP: {
            kv_rmsg_unmap u;
            memcpy(&u, buf, (size_t)n < sizeof u ? (size_t)n : sizeof u);
            dev->unmap(dev, u.arena);
            break;
        }
        case KV_RMSG_LOAD: {
            char *log = NULL;
            if (dev->load(dev, lib, device_src, &log, &err) != 0) set_error(reply, &err);
            if (log) snprintf(reply->log, sizeof reply->log, "%s", log);
            free(log);
            break;
        }
        case KV_RMSG_RUN: {
            kv_rmsg_run r;
            memset(&r, 0, sizeof r);
            memcpy(&r, buf, (size_t)n < sizeof r ? (size_t)n : sizeof r);
            if (dev->run(dev, &r, reply) != 0) reply->status = -1;
            break;
        }
        case KV_RMSG_QUIT:
            return 0;
        default:
            if (fd >= 0) close(fd);
            kv_fail_set(&err, KV_R_HARNESS_ERROR, "unknown message");
            set_error(reply, &err);
            break;
        }
        send_reply(reply, KV_RMSG_REPLY, h.seq);
    }
}
