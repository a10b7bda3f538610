/* The long-lived judge and its clients (see judge_server.h). */
#define _GNU_SOURCE
#include "judge/judge_server.h"
#include "judge/judge_child.h"
#include "judge/tasks.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/eval_job.h"
#include "util/fd_pass.h"
#include "util/json.h"
#include "util/slot_channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CLIENTS 256
#define MAX_MESSAGE ((uint32_t)16 << 20)

/* One job handed over: its channel, its slot channel, what it names. The
 * intake thread reads it and starts its runner, then marks it QUEUED; from
 * then on it is the main thread's (GONE: not a job, dropped there). */
typedef struct client {
    int fd, slot_fd;
    int queued, gone;
    json_t *doc;
    kv_job job;
    kv_judge_ctx ctx;
    kv_judge_code cand, base, ref, helpers; /* their strings the client's own */
    kv_runner *rn;
    kv_fail spawn_err; /* why its runner did not start (said when it is served) */
} client;

/* The judge and what it serves: the server's own state, which no child's
 * trial sees. The main thread judges; the intake thread takes the
 * evaluator's channels, reads the jobs and starts their runners meanwhile,
 * so that a runner is ready when its job's turn comes. MU guards C, N, the
 * clients' QUEUED and GONE, and what runners start with (BACKEND, CONFINE:
 * set once the device is open); WAKE tells the main thread to look again. */
typedef struct judge_server {
    judge_device dev; /* the device's state, kept for the jobs of KEY */
    json_t *key;      /* what DEV keeps was made for jobs of this key (kv_judge_key) */
    kv_task view;     /* the task cut to those jobs' scenarios */
    kv_shape *owned;
    long served; /* the children served, the one being served included */
    int control_fd;
    pthread_mutex_t mu;
    client *c[MAX_CLIENTS];
    int n;
    const kv_backend *backend;
    char confine[64];
    int ending; /* the control channel closed: the run is over */
    int wake[2];
} judge_server;

/* ---- the message: a length and the slot channel, then the job ---- */

static json_t *compiled_json(const kv_judge_code *c)
{
    return c ? json_pack("{s:s,s:s}", "lib", c->lib_path, "key", c->key ? c->key : "")
             : json_null();
}

static int compiled_from(const json_t *o, kv_judge_code *c)
{
    if (!json_is_object(o)) return 0;
    const char *lib = json_string_value(json_object_get(o, "lib"));
    if (!lib) return -1;
    c->lib_path = kv_strdup(lib);
    c->key = kv_strdup(json_string_value(json_object_get(o, "key")));
    return 1;
}

/* KEY as the job's message carries it: an object of its fields. */
static json_t *key_json(const kv_judge_key *k)
{
    return json_pack("{s:s?,s:s,s:i,s:s,s:s,s:b,s:f,s:b,s:s?,s:s?,s:s?}", "run_dir", k->run_dir,
                     "backend", k->backend, "device", k->device, "task", k->task, "scenario_set",
                     k->scenario_set, "quick", k->quick, "call_s", k->call_s, "cpu_reference",
                     k->cpu_reference, "reference", k->reference, "helpers", k->helpers, "self_exe",
                     k->self_exe);
}

int kv_judge_ask_server(const kv_judge_ctx *ctx, const kv_judge_key *key, double timeout_s,
                        kv_worker_outcome *w)
{
    const kv_job *job = ctx->job;
    int fd = job->judge_fd;
    if (fd < 0 || job->slot_fd < 0) return 1;
    json_t *names = json_array();
    for (int i = 0; i < ctx->task->num_scenarios; i++)
        json_array_append_new(names, json_string(ctx->task->scenarios[i].name));
    json_t *doc = json_pack(
        "{s:o,s:o,s:s,s:o,s:s,s:i,s:o,s:o,s:o,s:o,s:s?,s:s?,s:s?,s:s?,s:s?,s:I}", "key",
        key_json(key), "job", kv_job_to_json(job), "task", ctx->task->name, "scenarios", names,
        "backend", ctx->backend->name, "device", ctx->device, "cand", compiled_json(ctx->cand),
        "base", compiled_json(ctx->base), "ref", compiled_json(ctx->ref), "helpers",
        compiled_json(ctx->helpers), "self_exe", ctx->self_exe, "baseline_path", ctx->baseline_path,
        "device_src", ctx->device_src, "base_device_src", ctx->base_device_src, "cache", ctx->cache,
        "seed", (json_int_t)ctx->seed);
    /* When it asks for the device (just after this is sent): the judge's
     * record of the wait. */
    json_object_set_new(doc, "asked_at", json_real(kv_now_s()));
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    uint32_t len = (uint32_t)strlen(text);
    int sent = kv_send_with_fd(fd, &len, sizeof len, job->slot_fd, 0) == (ssize_t)sizeof len;
    for (size_t at = 0; sent && at < len;) {
        ssize_t n = send(fd, text + at, len - at, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) sent = 0;
        at += n > 0 ? (size_t)n : 0;
    }
    free(text);
    /* In line for the device from now: the evaluator stops the job's clock. */
    if (!sent || kv_slot_tell(job->slot_fd, KV_SLOT_ASK) != 0) {
        close(fd);
        return 1;
    }
    double wait_cap = job->limits.device_wait_s + 120;
    int rc = kv_worker_follow(fd, timeout_s, wait_cap, w);
    close(fd);
    if (rc == 1) {
        /* Not taken: its place in line is given up; its own judge asks again. */
        kv_slot_tell(job->slot_fd, KV_SLOT_FREE);
        kv_worker_outcome_clear(w);
    }
    return rc;
}

/* Reads N bytes from FD (the client wrote them at once). 0 or -1. */
static int read_all(int fd, void *p, size_t n)
{
    unsigned char *b = p;
    while (n > 0) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 10000) <= 0) return -1;
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static void client_free(client *c)
{
    if (c->rn) kv_runner_stop(c->rn);
    if (c->fd >= 0) close(c->fd);
    if (c->slot_fd >= 0) close(c->slot_fd);
    kv_job_clear(&c->job);
    if (c->doc) json_decref(c->doc);
    kv_judge_code *codes[] = {&c->cand, &c->base, &c->ref, &c->helpers};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        free((char *)codes[i]->lib_path);
        free((char *)codes[i]->key);
    }
    kv_fail_clear(&c->spawn_err);
    free(c);
}

/* Reads C's job: its message, its slot channel, its context. 0 or -1. */
static int read_job(client *c)
{
    uint32_t len = 0;
    if (kv_recv_with_fd(c->fd, &len, sizeof len, &c->slot_fd) != (ssize_t)sizeof len) return -1;
    if (c->slot_fd < 0 || len == 0 || len > MAX_MESSAGE) return -1;
    char *text = kv_malloc(len + 1);
    int rc = read_all(c->fd, text, len);
    text[len] = '\0';
    c->doc = rc == 0 ? kv_json_loads(text) : NULL;
    free(text);
    if (!c->doc) return -1;
    json_t *d = c->doc;
    char *err = NULL;
    if (kv_job_from_json(json_incref(json_object_get(d, "job")), &c->job, &err) != 0) {
        free(err);
        return -1;
    }
    c->job.slot_fd = c->slot_fd;
    c->job.judge_fd = -1;
    kv_judge_ctx *x = &c->ctx;
    x->job = &c->job;
    x->backend = kv_backend_find(json_string_value(json_object_get(d, "backend")));
    x->device = (int)json_integer_value(json_object_get(d, "device"));
    if (!x->backend || compiled_from(json_object_get(d, "cand"), &c->cand) != 1 ||
        compiled_from(json_object_get(d, "base"), &c->base) < 0 ||
        compiled_from(json_object_get(d, "ref"), &c->ref) < 0 ||
        compiled_from(json_object_get(d, "helpers"), &c->helpers) < 0 ||
        !kv_task_find(json_string_value(json_object_get(d, "task"))) ||
        !json_is_object(json_object_get(d, "key")))
        return -1;
    x->cand = &c->cand;
    x->base = c->base.lib_path ? &c->base : NULL;
    x->ref = c->ref.lib_path ? &c->ref : NULL;
    x->helpers = c->helpers.lib_path ? &c->helpers : NULL;
    x->self_exe = json_string_value(json_object_get(d, "self_exe"));
    x->baseline_path = json_string_value(json_object_get(d, "baseline_path"));
    x->device_src = json_string_value(json_object_get(d, "device_src"));
    x->base_device_src = json_string_value(json_object_get(d, "base_device_src"));
    x->cache = json_string_value(json_object_get(d, "cache"));
    x->seed = (uint64_t)json_integer_value(json_object_get(d, "seed"));
    x->slot_asked = 1;
    x->asked_at = json_number_value(json_object_get(d, "asked_at"));
    return 0;
}

/* ---- what the judge keeps ---- */

/* Drops the device's state: its context, the slab, the calibration (jobs
 * of another key follow). No runner starts while the device is shut. */
static void drop_device(judge_server *sv)
{
    pthread_mutex_lock(&sv->mu);
    sv->backend = NULL;
    pthread_mutex_unlock(&sv->mu);
    kv_judge_device_free(&sv->dev);
    if (sv->key) json_decref(sv->key);
    sv->key = NULL;
    free(sv->owned);
    sv->owned = NULL;
}

/* The task's view for C's job: its scenarios, by the names it sent. */
static void make_view(judge_server *sv, const client *c)
{
    const kv_task *task = kv_task_find(json_string_value(json_object_get(c->doc, "task")));
    const json_t *names = json_object_get(c->doc, "scenarios");
    sv->view = *task;
    sv->owned = kv_calloc((size_t)task->num_scenarios + 1, sizeof *sv->owned);
    int n = 0;
    for (int s = 0; s < task->num_scenarios; s++) {
        size_t i;
        json_t *v;
        json_array_foreach(names, i, v)
        {
            if (strcmp(json_string_value(v) ? json_string_value(v) : "", task->scenarios[s].name) ==
                0)
                sv->owned[n++] = task->scenarios[s];
        }
    }
    sv->view.scenarios = sv->owned;
    sv->view.num_scenarios = n;
}

/* Starts C's runner now, while another job may hold the device: once the
 * device is open (the runner sees it alone). Either thread, on a client
 * it owns. */
static void start_runner(judge_server *sv, client *c)
{
    pthread_mutex_lock(&sv->mu);
    const kv_backend *backend = sv->backend;
    char confine[sizeof sv->confine];
    memcpy(confine, sv->confine, sizeof confine);
    pthread_mutex_unlock(&sv->mu);
    if (c->rn || c->spawn_err.detail || !backend) return;
    c->rn = kv_judge_start_runner(backend, confine, &c->ctx, c->ctx.cand, c->ctx.device_src,
                                  &c->spawn_err);
}

static void wake_main(judge_server *sv)
{
    char b = 1;
    (void)!write(sv->wake[1], &b, 1);
}

/* The client being served, for kv_judge_child's OPENED. */
typedef struct serving {
    judge_server *sv;
    client *c;
} serving;

/* The device was opened for the client being served: runners start with
 * what it opened, those of the jobs queued meanwhile now. */
static void device_opened(void *arg, const kv_jdev *b)
{
    serving *s = arg;
    judge_server *sv = s->sv;
    pthread_mutex_lock(&sv->mu);
    sv->backend = b->backend;
    memcpy(sv->confine, b->confine, sizeof sv->confine);
    client *waiting[MAX_CLIENTS];
    int n = 0;
    for (int i = 0; i < sv->n; i++)
        if (sv->c[i]->queued && sv->c[i] != s->c) waiting[n++] = sv->c[i];
    pthread_mutex_unlock(&sv->mu);
    for (int i = 0; i < n; i++)
        start_runner(sv, waiting[i]);
}

/* Serves C: its slot's grant has come. */
static kv_child_end serve(judge_server *sv, client *c)
{
    json_t *key = json_object_get(c->doc, "key");
    if (sv->key && !json_equal(sv->key, key)) drop_device(sv);
    json_t *hello = json_pack("{s:s,s:I}", "type", "started", "pid", (json_int_t)getpid());
    char *line = json_dumps(hello, JSON_COMPACT);
    json_decref(hello);
    if (line) {
        (void)!send(c->fd, line, strlen(line), MSG_NOSIGNAL);
        (void)!send(c->fd, "\n", 1, MSG_NOSIGNAL);
    }
    free(line);
    if (!sv->key) {
        make_view(sv, c);
        sv->key = json_incref(key);
    }
    c->ctx.task = &sv->view;
    sv->served++;
    /* Which judge served it, how many children it served. */
    json_t *judge =
        json_pack("{s:I,s:I}", "pid", (json_int_t)getpid(), "child", (json_int_t)sv->served);
    serving s = {.sv = sv, .c = c};
    kv_judge_child child = {.ctx = &c->ctx,
                            .rn = c->rn,
                            .spawn_err = c->spawn_err,
                            .judge = judge,
                            .opened = device_opened,
                            .arg = &s};
    c->rn = NULL;
    c->spawn_err = (kv_fail){0};
    kv_worker_serve(c->fd);
    kv_child_end end = kv_judge_child_run(&sv->dev, &child);
    kv_worker_serve(-1);
    json_decref(judge);
    return end;
}

/* Takes a job's channel from the evaluator: -1 when the control channel closed. */
static int take_client(judge_server *sv)
{
    int control_fd = sv->control_fd;
    char byte;
    int fd;
    ssize_t n = kv_recv_with_fd(control_fd, &byte, 1, &fd);
    if (n <= 0) return -1;
    if (fd < 0) return 0;
    client *c = kv_calloc(1, sizeof *c);
    c->fd = fd;
    c->slot_fd = -1;
    pthread_mutex_lock(&sv->mu);
    int room = sv->n < MAX_CLIENTS;
    if (room) sv->c[sv->n++] = c;
    pthread_mutex_unlock(&sv->mu);
    if (!room) { /* its worker judges it itself */
        close(fd);
        free(c);
    }
    return 0;
}

/* The intake thread: new channels, their jobs read, their runners started. */
static void *intake(void *arg)
{
    judge_server *sv = arg;
    int control_fd = sv->control_fd;
    struct pollfd pf[1 + MAX_CLIENTS];
    client *fresh[MAX_CLIENTS];
    for (;;) {
        int n = 0;
        pf[0] = (struct pollfd){.fd = control_fd, .events = POLLIN};
        pthread_mutex_lock(&sv->mu);
        for (int i = 0; i < sv->n; i++)
            if (!sv->c[i]->queued && !sv->c[i]->gone) {
                fresh[n] = sv->c[i];
                pf[1 + n++] = (struct pollfd){.fd = sv->c[i]->fd, .events = POLLIN};
            }
        pthread_mutex_unlock(&sv->mu);
        if (poll(pf, (nfds_t)n + 1, 200) < 0 && errno != EINTR) break;
        if (pf[0].revents && take_client(sv) < 0) break;
        for (int i = 0; i < n; i++) {
            if (!pf[1 + i].revents) continue;
            int ok = read_job(fresh[i]) == 0;
            if (ok) start_runner(sv, fresh[i]);
            pthread_mutex_lock(&sv->mu);
            fresh[i]->queued = ok;
            fresh[i]->gone = !ok;
            pthread_mutex_unlock(&sv->mu);
            wake_main(sv);
        }
    }
    pthread_mutex_lock(&sv->mu);
    sv->ending = 1;
    pthread_mutex_unlock(&sv->mu);
    wake_main(sv);
    return NULL;
}

/* Drops C (the main thread's: queued or gone). */
static void drop_client(judge_server *sv, client *c)
{
    pthread_mutex_lock(&sv->mu);
    for (int i = 0; i < sv->n; i++)
        if (sv->c[i] == c) {
            sv->c[i] = sv->c[--sv->n];
            break;
        }
    pthread_mutex_unlock(&sv->mu);
    client_free(c);
}

int kv_judge_server_main(int control_fd)
{
    kv_worker_serve_setup();
    signal(SIGPIPE, SIG_IGN); /* a worker gone: writes to it fail, nothing more */
    /* Lives until the process ends: the intake thread may be in a read. */
    judge_server *sv = kv_calloc(1, sizeof *sv);
    kv_judge_device_init(&sv->dev, 1);
    sv->control_fd = control_fd;
    pthread_mutex_init(&sv->mu, NULL);
    pthread_t th;
    if (pipe2(sv->wake, O_CLOEXEC | O_NONBLOCK) != 0 || pthread_create(&th, NULL, intake, sv) != 0)
        return 1;
    struct pollfd pf[1 + 2 * MAX_CLIENTS];
    client *mine[MAX_CLIENTS];
    for (;;) {
        int n = 0, ending;
        pthread_mutex_lock(&sv->mu);
        ending = sv->ending;
        for (int i = 0; i < sv->n; i++)
            if (sv->c[i]->queued || sv->c[i]->gone) mine[n++] = sv->c[i];
        pthread_mutex_unlock(&sv->mu);
        if (ending) break;
        pf[0] = (struct pollfd){.fd = sv->wake[0], .events = POLLIN};
        for (int i = 0; i < n; i++) {
            pf[1 + 2 * i] = (struct pollfd){.fd = mine[i]->fd, .events = POLLIN};
            pf[2 + 2 * i] =
                (struct pollfd){.fd = mine[i]->gone ? -1 : mine[i]->slot_fd, .events = POLLIN};
        }
        if (poll(pf, (nfds_t)(1 + 2 * n), -1) < 0 && errno != EINTR) break;
        char drain[64];
        while (read(sv->wake[0], drain, sizeof drain) > 0) {
        }
        /* One job at a time, then look again. */
        for (int i = 0; i < n; i++) {
            client *c = mine[i];
            if (c->gone || pf[1 + 2 * i].revents) { /* not a job, or its worker is gone */
                drop_client(sv, c);
                break;
            }
            if (pf[2 + 2 * i].revents) { /* its device slot's grant has come */
                /* A failure that may be the judge's own ends it; the
                 * evaluator starts another. */
                if (serve(sv, c) == KV_CHILD_JUDGE_ENDS) _exit(2);
                drop_client(sv, c);
                break;
            }
        }
    }
    _exit(0); /* the intake thread may be in a read: nothing to unwind for */
}
