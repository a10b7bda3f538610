/* The judge's handle on a runner (see runner_client.h). */
#define _GNU_SOURCE
#include "judge/runner_client.h"
#include "judge/proc_tree.h"
#include "judge/worker.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fd_pass.h"
#include "util/fs.h"
#include "util/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

struct kv_runner {
    kv_proc *proc; /* under its supervisor: its whole tree dies with it */
    pid_t pid;
    int sock;
    int ended;
    uint64_t seq;
    char *scratch;
    kv_rmsg_reply *reply;
};

pid_t kv_runner_pid(const kv_runner *r)
{
    return r && !r->ended ? r->pid : -1;
}

/* What a runner's environment adds to kv_proc's scrubbed one: TMPDIR its
 * scratch, PoCL's cache in OWN_DIR or the scratch (OWNED[0..1]: free both). */
static void runner_env(const char *scratch, const char *own_dir, char *owned[2])
{
    owned[0] = kv_asprintf("TMPDIR=%s", scratch);
    /* PoCL's kernel cache, the program's own: a shared one could be
     * poisoned for the next evaluation's baseline. */
    owned[1] = own_dir ? kv_asprintf("POCL_CACHE_DIR=%s", own_dir)
                       : kv_asprintf("POCL_CACHE_DIR=%s/pocl", scratch);
}

/* Fills F from the way the runner ended (it must have ended). */
static void fail_from_death(kv_runner *r, const char *during, kv_rfail *f)
{
    if (kv_proc_how(r->proc) == KV_PROC_SIGNALED) {
        char code[64];
        f->code = KV_R_CRASH;
        f->arg = kv_proc_signal(r->proc);
        snprintf(f->detail, sizeof f->detail, "the candidate's process died (%s) during %s",
                 kv_reason_format(f->code, f->arg, code, sizeof code), during);
    } else if (kv_proc_how(r->proc) == KV_PROC_TIMED_OUT) {
        f->code = KV_R_TIMEOUT;
        snprintf(f->detail, sizeof f->detail,
                 "the candidate's process outlived its limit during %s", during);
    } else {
        int code = kv_proc_exit_code(r->proc);
        f->code = KV_R_CRASH_EXIT;
        f->arg = code;
        snprintf(f->detail, sizeof f->detail,
                 "the candidate's process exited (status %d) during %s", code, during);
    }
}

/* Pumps the runner's output and notes its end; 1 when it has ended. WAIT_MS
 * as kv_proc_poll's. */
static int reap(kv_runner *r, int wait_ms)
{
    if (!r->ended && kv_proc_poll(r->proc, wait_ms)) r->ended = 1;
    return r->ended;
}

/* Waits at most TIMEOUT_S for the reply to request SEQ into r->reply.
 * Returns 0 with it, 1 with F filled (a failure claimed, a death or the
 * deadline; DURING names the step), -1 with *ERR. */
static int wait_reply(kv_runner *r, uint64_t seq, double timeout_s, const char *during, kv_rfail *f,
                      kv_fail *err)
{
    double deadline = kv_now_s() + timeout_s;
    for (;;) {
        double left = deadline - kv_now_s();
        if (left <= 0) {
            kv_proc_kill(r->proc);
            f->code = KV_R_TIMEOUT;
            snprintf(f->detail, sizeof f->detail, "the kernel exceeded %g s during %s", timeout_s,
                     during);
            return 1;
        }
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        struct pollfd p = {.fd = r->sock, .events = POLLIN};
        int pr = poll(&p, 1, ms);
        if (pr < 0 && errno != EINTR) {
            return kv_fail_set(err, KV_R_HARNESS_ERROR, "poll: %s", strerror(errno));
        }
        if (pr > 0 && (p.revents & POLLIN)) {
            memset(r->reply, 0, sizeof *r->reply);
            ssize_t n = recv(r->sock, r->reply, sizeof *r->reply, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            uint32_t want = seq ? KV_RMSG_REPLY : KV_RMSG_HELLO;
            if (n >= (ssize_t)offsetof(kv_rmsg_reply, log) && r->reply->h.type == want &&
                r->reply->h.seq == seq) {
                r->reply->detail[sizeof r->reply->detail - 1] = '\0';
                r->reply->log[sizeof r->reply->log - 1] = '\0';
                if (r->reply->status == 0) return 0;
                f->code = kv_reason_valid(r->reply->code);
                f->arg = r->reply->arg;
                snprintf(f->detail, sizeof f->detail, "%s during %s", r->reply->detail, during);
                f->call = r->reply->call;
                /* A crash report comes just before the death: wait for it. */
                if (f->code == KV_R_CRASH || f->code == KV_R_CRASH_EXIT ||
                    f->code == KV_R_OUT_OF_BOUNDS || f->code == KV_R_INPUT_MODIFIED)
                    kv_proc_kill(r->proc);
                return 1;
            }
            if (n > 0) continue; /* a stale or malformed message: not the answer */
            /* n == 0: the runner closed its end; it is dying or dead. */
            while (!reap(r, 100)) {
            }
            fail_from_death(r, during, f);
            return 1;
        }
        if (reap(r, 0)) {
            fail_from_death(r, during, f);
            return 1;
        }
    }
}

kv_runner *kv_runner_spawn(const kv_runner_spec *spec, kv_fail *err)
{
    /* The candidate's process may not read this one's memory. */
    prctl(PR_SET_DUMPABLE, 0);
    kv_runner *r = kv_calloc(1, sizeof *r);
    r->pid = -1;
    r->sock = -1;
    r->reply = kv_calloc(1, sizeof *r->reply);
    const char *tmp = getenv("TMPDIR");
    char *tmpl = kv_asprintf("%s/kevolve-runner-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl)) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "cannot make a scratch folder %s: %s", tmpl,
                    strerror(errno));
        free(tmpl);
        kv_runner_stop(r);
        return NULL;
    }
    r->scratch = tmpl;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "runner channel: %s", strerror(errno));
        kv_runner_stop(r);
        return NULL;
    }
    char self[4096];
    const char *exe = spec->self_exe;
    if (!exe) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        self[n > 0 ? n : 0] = '\0';
        exe = self;
    }
    char *argv[40];
    int a = 0;
    if (spec->wrapper) {
        argv[a++] = (char *)spec->wrapper;
        for (int i = 0; spec->wrapper_args && spec->wrapper_args[i] && a < 24; i++)
            argv[a++] = spec->wrapper_args[i];
    }
    argv[a++] = (char *)exe;
    argv[a++] = "__runner";
    argv[a++] = "--backend";
    argv[a++] = (char *)spec->backend->name;
    char device[16];
    snprintf(device, sizeof device, "%d", spec->device);
    argv[a++] = "--device";
    argv[a++] = device;
    argv[a++] = "--lib";
    argv[a++] = (char *)spec->lib;
    if (spec->device_src) {
        argv[a++] = "--device-src";
        argv[a++] = (char *)spec->device_src;
    }
    argv[a++] = "--scratch";
    argv[a++] = r->scratch;
    if (spec->own_dir) {
        kv_mkdir_p(spec->own_dir, 0755);
        argv[a++] = "--own-dir";
        argv[a++] = (char *)spec->own_dir;
    }
    if (spec->confine_env) argv[a++] = "--confined";
    argv[a] = NULL;
    char *env[4];
    runner_env(r->scratch, spec->own_dir, env);
    env[2] = (char *)spec->confine_env;
    env[3] = NULL;
    kv_proc_spec ps = {.argv = argv,
                       .cwd = r->scratch,
                       .extra_env = env,
                       .max_output = 64 * 1024,
                       .fds = &sv[1],
                       .n_fds = 1};
    char *why = NULL;
    r->proc = kv_proc_start(&ps, &why);
    free(env[0]);
    free(env[1]);
    close(sv[1]);
    r->sock = sv[0];
    if (!r->proc) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "cannot start the runner: %s", why ? why : "");
        free(why);
        kv_runner_stop(r);
        return NULL;
    }
    r->pid = kv_proc_pid(r->proc);
    return r;
}

kv_runner *kv_runner_greet(kv_runner *r, double timeout_s, char **isolation, kv_fail *err)
{
    *isolation = NULL;
    /* Hello: the device opened and the sandbox applied, no candidate yet. */
    kv_rfail f = {0};
    int rc = wait_reply(r, 0, timeout_s, "the runner's start", &f, err);
    if (rc == 0 && r->reply->h.type != KV_RMSG_HELLO) rc = 1;
    if (rc != 0) {
        if (rc > 0) {
            char *out = kv_runner_output(r, 2000);
            char code[64];
            /* The runner's own word on its start (its device open), or its end. */
            if (r->reply->h.type == KV_RMSG_HELLO && r->reply->status != 0)
                kv_fail_set(err, kv_reason_valid(r->reply->code), "%s", r->reply->detail);
            else
                kv_fail_set(err, KV_R_HARNESS_ERROR, "the runner did not start (%s: %s)%s%s",
                            kv_reason_format(f.code, f.arg, code, sizeof code), f.detail,
                            *out ? ": " : "", out);
            free(out);
        }
        kv_runner_stop(r);
        return NULL;
    }
    *isolation = kv_strdup(r->reply->detail);
    return r;
}

kv_runner *kv_runner_start(const kv_runner_spec *spec, double timeout_s, char **isolation,
                           kv_fail *err)
{
    *isolation = NULL;
    kv_runner *r = kv_runner_spawn(spec, err);
    return r ? kv_runner_greet(r, timeout_s, isolation, err) : NULL;
}

/* Sends MSG (its header's seq set to the next one) with FD beside it when
 * FD >= 0. */
static int send_msg(kv_runner *r, void *msg, size_t len, int fd, kv_fail *err)
{
    kv_rmsg_hdr *h = msg;
    h->version = KV_RPROTO_VERSION;
    h->seq = ++r->seq;
    ssize_t n = kv_send_with_fd(r->sock, msg, len, fd, 0);
    if (n < 0 && errno != EPIPE && errno != ECONNRESET) {
        return kv_fail_set(err, KV_R_HARNESS_ERROR, "sending to the runner: %s", strerror(errno));
    }
    return 0; /* a dead runner shows in the wait for its reply */
}

static int step(kv_runner *r, void *msg, size_t len, int fd, double timeout_s, const char *during,
                kv_rfail *f, kv_fail *err)
{
    memset(f, 0, sizeof *f);
    if (send_msg(r, msg, len, fd, err) != 0) return -1;
    return wait_reply(r, r->seq, timeout_s, during, f, err);
}

int kv_runner_map(kv_runner *r, const kv_arena *a, const kv_rguard *guards, int nguards,
                  double timeout_s, kv_rfail *f, kv_fail *err)
{
    kv_rmsg_map *m = kv_calloc(1, sizeof *m);
    m->h.type = KV_RMSG_MAP;
    m->arena = a->id;
    m->bytes = a->bytes;
    m->parent = a->parent;
    m->offset = a->parent_off;
    memcpy(m->ipc, a->ipc, sizeof m->ipc);
    m->num_guards = (uint32_t)(nguards < KV_RMAX_GUARDS ? nguards : KV_RMAX_GUARDS);
    for (uint32_t i = 0; i < m->num_guards; i++)
        m->guards[i] = guards[i];
    int rc = step(r, m, sizeof *m, a->fd, timeout_s, "mapping the tensors", f, err);
    free(m);
    return rc;
}

int kv_runner_unmap(kv_runner *r, uint32_t arena, double timeout_s, kv_rfail *f, kv_fail *err)
{
    kv_rmsg_unmap m = {.h.type = KV_RMSG_UNMAP, .arena = arena};
    return step(r, &m, sizeof m, -1, timeout_s, "unmapping the tensors", f, err);
}

int kv_runner_load(kv_runner *r, double timeout_s, char **log, kv_rfail *f, kv_fail *err)
{
    kv_rmsg_hdr h = {.type = KV_RMSG_LOAD};
    int rc = step(r, &h, sizeof h, -1, timeout_s, "loading the candidate", f, err);
    *log = rc >= 0 ? kv_strdup(r->reply->log) : NULL;
    return rc;
}

int kv_runner_run(kv_runner *r, const kv_rmsg_run *m, double timeout_s, double *seconds,
                  kv_rfail *f, kv_fail *err)
{
    kv_rmsg_run copy = *m;
    copy.h.type = KV_RMSG_RUN;
    memset(f, 0, sizeof *f);
    double t0 = kv_now_s();
    if (send_msg(r, &copy, sizeof copy, -1, err) != 0) return -1;
    const char *phase = kv_worker_current_phase();
    int rc = wait_reply(r, r->seq, timeout_s, *phase ? phase : "a block of calls", f, err);
    *seconds = kv_now_s() - t0;
    return rc;
}

int kv_runner_threads(const kv_runner *r)
{
    if (!r || r->ended) return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)r->pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

double kv_runner_cpu_seconds(const kv_runner *r)
{
    if (!r || r->ended) return -1;
    return kv_proc_cpu_seconds(r->pid);
}

int kv_runner_children(const kv_runner *r)
{
    if (!r || r->ended) return 0;
    /* Its supervisor is its parent and a subreaper: what the runner started,
     * orphans included, descends from the supervisor. */
    pid_t sup = kv_proc_parent(r->pid);
    int n = sup > 1 ? kv_proc_descendants(sup, NULL, 0) - 1 : kv_proc_descendants(r->pid, NULL, 0);
    return n > 0 ? n : 0;
}

char *kv_runner_output(const kv_runner *r, size_t max)
{
    if (!r || !r->proc) return kv_strdup("");
    kv_proc_poll(r->proc, 0);
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, kv_proc_stdout(r->proc));
    kv_buf_puts(&b, kv_proc_stderr(r->proc));
    if (!b.data) return kv_strdup("");
    if (b.len > max) {
        char *tail = kv_strdup(b.data + b.len - max);
        kv_buf_free(&b);
        return tail;
    }
    return kv_buf_steal(&b);
}

int kv_runner_quit(kv_runner *r, double timeout_s)
{
    if (!r || r->ended) return 0;
    kv_rmsg_hdr h = {.type = KV_RMSG_QUIT};
    kv_fail err = {0};
    if (send_msg(r, &h, sizeof h, -1, &err) != 0) kv_fail_clear(&err);
    double deadline = kv_now_s() + timeout_s;
    while (!reap(r, 50) && kv_now_s() < deadline) {
    }
    return r->ended ? 0 : -1;
}

void kv_runner_stop(kv_runner *r)
{
    if (!r) return;
    if (r->proc) {
        /* Its supervisor kills everything it started before reporting the end. */
        kv_proc_kill(r->proc);
        while (!reap(r, 100)) {
        }
        kv_proc_free(r->proc);
    }
    if (r->sock >= 0) close(r->sock);
    if (r->scratch) kv_remove_tree(r->scratch);
    free(r->scratch);
    free(r->reply);
    free(r);
}
