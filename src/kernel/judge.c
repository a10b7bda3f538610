/* The judge's flow (see judge.h): the device, the baseline in a runner of
 * its own when it is not kept, then the candidate's runner: calibration
 * before its code is loaded, the correctness trials, the timed blocks. */
#include "kernel/judge_internal.h"
#include "kernel/baseline.h"
#include "kernel/compile.h"
#include "kernel/device_check.h"
#include "kernel/device_hold.h"
#include "kernel/dtype.h"
#include "kernel/memcheck_log.h"
#include "kernel/reply_probe.h"
#include "kernel/tasks.h"
#include "kernel/tool.h"
#include "kernel/worker.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fs.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const prof_names[PROF_COUNT] = {
    "alloc",  "fill",    "upload",    "reference", "run",     "check", "timed",  "baseline",
    "energy", "prepare", "calibrate", "load",      "measure", "stop",  "record", "telemetry"};

static settings settings_for(const kv_job *o, const kv_backend *backend)
{
    settings s;
    if (o->quick) {
        s = (settings){.trials = 3,
                       .held_trials = 1,
                       .min_blocks = 5,
                       .block_s = 0.002,
                       .min_time_s = 0.02,
                       .max_time_s = 0.5,
                       .settle_s = 0.002,
                       .kernel_timeout_s = 5,
                       .budget_bytes = 128u << 20,
                       .checks_per_scenario = 2};
    } else {
        s = (settings){.trials = 5,
                       .held_trials = 3,
                       .min_blocks = 15,
                       .block_s = 0.005,
                       .min_time_s = 0.3,
                       .max_time_s = 3.0,
                       .settle_s = 0.01,
                       .kernel_timeout_s = 10,
                       .budget_bytes = 1024u << 20,
                       .checks_per_scenario = 5};
    }
    /* A device whose memory holds the inputs (a GPU) has room for enough
     * distinct input sets that a block of long-context calls is long
     * against the judge's own overhead (the window's fixed cost is tens of
     * microseconds). Blocks of 20 ms, quick too: with 10 ms one program's
     * score moved 8-16% from one quick evaluation to the next (a scenario's
     * median up to 49%, when a block or two of five were disturbed),
     * against 4.5-4.8% with 20 ms, side by side on an H200; and the windows
     * outweigh each block's fixed checks more (bench/NOTES.md, 2026-12-02, commit 827d61f). */
    if (kv_backend_has(backend, KV_CAP_DEVICE_INPUTS)) {
        s.budget_bytes = o->quick ? (4ull << 30) : (12ull << 30);
        s.block_s = 0.02;
    } else {
        /* Small shapes make a full check cheap: one after every block. */
        s.checks_per_scenario = s.min_blocks;
    }
    if (o->limits.call_s > 0) s.kernel_timeout_s = o->limits.call_s;
    return s;
}

void kv_judge_check_lap(judge *j, enum check_step step, double *t0)
{
    double now = kv_now_s();
    j->prof_check[step] += now - *t0;
    *t0 = now;
}

void kv_judge_lap(judge *j, enum prof_step step, double *t0)
{
    double now = kv_now_s();
    j->prof[step] += now - *t0;
    *t0 = now;
}

/* Stops the runner in use and keeps the tail of what it printed; then the
 * slab it was given, which it can no longer write. Returns the slab's bytes
 * it wrote outside its tensors' parts (kv_judge_arena_drop_slab). */
static size_t stop_runner(judge *j)
{
    if (!j->rn) return 0;
    char *out = kv_runner_output(j->rn, 4000);
    if (*out) json_object_set_new(j->extra, "runner_output", json_string(out));
    free(out);
    kv_runner_stop(j->rn);
    j->rn = NULL;
    return kv_judge_arena_drop_slab(j);
}

/* The device errors the driver reported during this evaluation (and a
 * test's injected one), as OUT's device_errors: the evaluator then checks
 * the device before it gets more work. */
static void note_device_errors(judge *j, json_t *out)
{
    if (!j->b) return;
    json_t *errors = j->b->device_errors ? j->b->device_errors(j->b) : NULL;
    const char *injected = kv_device_error_fault(j->b->backend->name, j->b->index);
    if (injected) {
        if (!errors) errors = json_array();
        json_array_append_new(errors, json_string(injected));
    }
    if (errors) json_object_set_new(out, "device_errors", errors);
}

/* Under memcheck, a call that failed (a wild write ends the launch before
 * the stage's verdict) is memcheck's error when the tool reported one: its
 * line names the access. B: the failure's detail, prefixed with it. */
static const char *memcheck_failure(judge *j, const char *code, kv_buf *b)
{
    if (!j->ctx->memcheck || !j->rn || strcmp(code, "harness_error") == 0 ||
        strcmp(code, "memcheck_error") == 0)
        return code;
    char *out = kv_runner_output(j->rn, 20000);
    char *line = kv_memcheck_first_error(out);
    /* Not yet said: the tool reports as the runner ends (a hung one is not
     * waited for). */
    if (!line && strcmp(code, "timeout") != 0) {
        free(out);
        kv_runner_quit(j->rn, 10);
        out = kv_runner_output(j->rn, 20000);
        line = kv_memcheck_first_error(out);
    }
    if (line) {
        json_object_set_new(j->extra, "memcheck_log", json_string(out));
        kv_buf m = KV_BUF_INIT;
        kv_buf_printf(&m, "%s (the run: %s: %s)", line, code, b->data ? b->data : "");
        kv_buf_free(b);
        *b = m;
        code = "memcheck_error";
    }
    free(line);
    free(out);
    return code;
}

/* Writes a baseline timed here to the run's file while the device is still
 * held: the next evaluation reads it once it holds the device. Not one
 * timed on a device that reported errors (OUT's device_errors): it may be
 * the device's time, not the baseline's. A failed write is noted in OUT. */
static void keep_fresh_baseline(judge *j, json_t *out)
{
    const char *path = j->ctx->baseline_path;
    if (!j->fresh_baseline || !path || json_object_get(out, "device_errors")) return;
    if (kv_baseline_save(path, j->fresh_baseline) != 0)
        json_object_set_new(out, "baseline_not_kept",
                            json_sprintf("could not write %s: %s", path, strerror(errno)));
    j->fresh_baseline = NULL;
}

static double let_go_device(judge *j);

static _Noreturn void vfail(judge *j, const char *code, const char *fmt, va_list ap)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_vprintf(&b, fmt, ap);
    code = memcheck_failure(j, code, &b);
    stop_runner(j);
    note_device_errors(j, j->extra);
    /* A candidate that fails still leaves the baseline timed for it, and
     * lets go of the device now, not when this process and its context
     * have ended: the next child in line starts meanwhile. */
    if (j->lock >= 0) {
        keep_fresh_baseline(j, j->extra);
        json_object_set_new(j->extra, "device_held_seconds", json_real(let_go_device(j)));
    }
    /* The task's own code failing is the harness's problem, not the candidate's. */
    if (j->who && strcmp(j->who, "baseline") == 0 && strcmp(code, "harness_error") != 0)
        kv_worker_fail("harness_error", j->extra, "the task's baseline failed: %s: %s", code,
                       b.data ? b.data : "");
    kv_worker_fail(code, j->extra, "%s", b.data ? b.data : "");
}

void kv_judge_fail(judge *j, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(j, code, fmt, ap);
}

void kv_judge_fail_err(judge *j, const char *err, const char *context)
{
    const char *colon = err ? strstr(err, ": ") : NULL;
    char code[64] = "harness_error";
    if (colon && (size_t)(colon - err) < sizeof code && !memchr(err, ' ', (size_t)(colon - err))) {
        memcpy(code, err, (size_t)(colon - err));
        code[colon - err] = '\0';
    } else {
        colon = NULL;
    }
    kv_judge_fail(j, code, "%s%s%s", context ? context : "", context ? ": " : "",
                  colon ? colon + 2 : (err ? err : "unknown error"));
}

const char *kv_judge_shape_label(const kv_task *t, const kv_shape *sh, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s (", sh->name);
    for (int i = 0; i < t->num_syms && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s=%lld", i ? " " : "", t->syms[i],
                              (long long)sh->syms[i]);
    if (n < cap) snprintf(buf + n, cap - n, ")");
    return buf;
}

const char *kv_judge_coords(const kv_task *t, int ti, const int64_t *syms, size_t idx, char *buf,
                            size_t cap)
{
    const kv_tensor_spec *ts = &t->tensors[ti];
    int64_t c[KV_MAX_RANK];
    for (int d = ts->rank - 1; d >= 0; d--) {
        int64_t ext = syms[ts->shape[d]];
        c[d] = ext ? (int64_t)(idx % (size_t)ext) : 0;
        idx = ext ? idx / (size_t)ext : 0;
    }
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ts->rank && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)c[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

void kv_judge_fail_shape(judge *j, const shape_data *d, const char *code, const char *fmt, ...)
{
    kv_buf b = KV_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    int value_error = strcmp(code, "stale_or_unwritten_output") == 0 ||
                      strcmp(code, "wrong_result") == 0 || strcmp(code, "nan_or_inf_output") == 0 ||
                      strcmp(code, "result_cached_across_calls") == 0;
    char label[160];
    kv_judge_shape_label(j->task, d->shape, label, sizeof label);
    if (d->held && value_error)
        kv_judge_fail(j, "wrong_on_held_out_shape", "held-out shape %s: %s: %s", label, code,
                      b.data);
    kv_judge_fail(j, code, "%s %s: %s", d->held ? "held-out shape" : "scenario", label, b.data);
}

void kv_judge_fail_runner(judge *j, const kv_rfail *f, const char *context)
{
    /* A fault in a guarded range names its tensor by index: the judge knows
     * the names. */
    int guarded = strcmp(f->code, "input_modified") == 0 || strcmp(f->code, "out_of_bounds") == 0;
    int canary = strcmp(f->code, "out_of_bounds_write") == 0;
    if ((guarded || canary) && f->call < (uint32_t)j->task->num_tensors) {
        const char *name = j->task->tensors[f->call].name;
        if (canary) kv_judge_fail(j, f->code, "%s: tensor %s: %s", context, name, f->detail);
        if (f->code[0] == 'i')
            kv_judge_fail(j, f->code, "%s: input %s changed: %s", context, name, f->detail);
        kv_judge_fail(j, f->code, "%s: %s past the end of tensor %s", context, f->detail, name);
    }
    kv_judge_fail(j, f->code[0] ? f->code : "launch_failed", "%s: %s", context, f->detail);
}

double kv_judge_run_block(judge *j, const kv_rmsg_run *m, const char *context)
{
    double calls = m->ncalls ? (double)m->ncalls : 1.0;
    double limit = j->s.kernel_timeout_s * calls;
    if (limit > 120 + j->s.kernel_timeout_s) limit = 120 + j->s.kernel_timeout_s;
    double grace = j->grace_s;
    j->grace_s = 0;
    kv_rfail f;
    char *err = NULL;
    double secs = 0;
    int rc = kv_runner_run(j->rn, m, limit + grace, &secs, &f, &err);
    j->replied_at = kv_now_s();
    if (rc < 0) kv_judge_fail_err(j, err, context);
    if (rc > 0 && grace > 0 && strcmp(f.code, "timeout") == 0)
        kv_judge_fail(j, "timeout",
                      "%s: the kernel exceeded %g s (with %g s more for the driver's first build "
                      "of it) during %s",
                      context, limit, grace, kv_worker_current_phase());
    if (rc > 0) kv_judge_fail_runner(j, &f, context);
    kv_judge_note_idle_cpu(j);
    return secs;
}

int kv_judge_look_at_once(judge *j, size_t bytes)
{
    late_looks *l = &j->looks;
    double waited = kv_now_s() - j->replied_at;
    if (l->n_waits < (int)(sizeof l->wait_us / sizeof l->wait_us[0]))
        l->wait_us[l->n_waits++] = (float)(waited * 1e6);
    int idle = kv_judge_can(j, KV_CAP_IDLE_REPLY) &&
               kv_reply_was_idle(waited, j->c.copy_s, j->c.per_byte_s, bytes);
    if (idle)
        l->at_once++;
    else
        l->settled++;
    return idle;
}

void kv_judge_check_quiet(judge *j, const shape_data *d, const char *context)
{
    if (j->ctx->memcheck) return; /* the runner's process is compute-sanitizer's */
    int threads = kv_runner_threads(j->rn);
    int children = kv_runner_children(j->rn);
    /* A device runtime may start its own threads on first use: then only
     * processes count. */
    int extra =
        kv_judge_can(j, KV_CAP_RUNTIME_THREADS) || threads < 0 ? 0 : threads - j->base_threads;
    /* A thread that pthread_join has returned for stays listed until the
     * kernel finishes its exit, milliseconds on a loaded machine: it gets
     * 50 ms to go. Nothing is lost by waiting: the outputs were read before,
     * and the next inputs are not shared until this returns. */
    for (int i = 0; extra > 0 && children <= 0 && i < 50; i++) {
        kv_sleep_s(0.001);
        threads = kv_runner_threads(j->rn);
        extra = threads < 0 ? 0 : threads - j->base_threads;
    }
    if (extra <= 0 && children <= 0) return;
    const char *what = extra > 0 ? "thread(s)" : "process(es)";
    int n = extra > 0 ? extra : children;
    if (d)
        kv_judge_fail_shape(j, d, "async_work_outside_harness_stream",
                            "%d %s started by kv_launch were still running %s", n, what, context);
    kv_judge_fail(j, "async_work_outside_harness_stream",
                  "%d %s started by kv_launch were still running %s", n, what, context);
}

/* compute-sanitizer: on PATH or beside nvcc (malloc'd), or NULL. */
static char *find_compute_sanitizer(void)
{
    char *cs = kv_tool_which("compute-sanitizer");
    if (cs) return cs;
    char *nvcc = kv_find_nvcc();
    if (!nvcc) return NULL;
    char *dir = kv_path_dirname(nvcc);
    char *p = kv_asprintf("%s/compute-sanitizer", dir);
    free(dir);
    free(nvcc);
    if (access(p, X_OK) == 0) return p;
    free(p);
    return NULL;
}

kv_runner *kv_judge_start_runner(const kv_backend *backend, const char *device_confine,
                                 const kv_judge_ctx *ctx, const kv_compiled *c,
                                 const char *device_src, char **err)
{
    /* A driver's cache of built device code, the program's own: a shared
     * one could be poisoned for the next evaluation's baseline. */
    char *own =
        kv_backend_has(backend, KV_CAP_DEVICE_CODE) ? kv_asprintf("%s.pocl", c->lib_path) : NULL;
    /* The runner sees the judge's device alone, where the backend can say
     * so: as device 0 of what it sees. */
    char *confine = device_confine[0] && backend->visible_env
                        ? kv_asprintf("%s=%s", backend->visible_env, device_confine)
                        : NULL;
    kv_runner_spec spec = {.backend = backend,
                           .device = confine ? 0 : ctx->device,
                           .confine_env = confine,
                           .self_exe = ctx->self_exe,
                           .lib = c->lib_path,
                           .device_src = device_src,
                           .own_dir = own};
    static char *memcheck_args[] = {"--tool", "memcheck", "--print-limit", "20", NULL};
    char *cs = NULL;
    if (ctx->memcheck) {
        cs = find_compute_sanitizer();
        if (!cs) {
            *err = kv_strdup("harness_error: compute-sanitizer not found");
            free(confine);
            free(own);
            return NULL;
        }
        spec.wrapper = cs;
        spec.wrapper_args = memcheck_args;
    }
    kv_runner *rn = kv_runner_spawn(&spec, err);
    free(confine);
    free(cs);
    free(own);
    return rn;
}

kv_runner *kv_judge_greet_runner(judge *j, kv_runner *rn, char *spawn_err)
{
    char *isolation = NULL, *err = spawn_err;
    if (rn) rn = kv_runner_greet(rn, 120, &isolation, &err);
    if (!rn) {
        const char *e = err ? err : "";
        /* A device the judge opened but the runner could not is still "no device". */
        kv_worker_fail(kv_starts_with(e, "no ") ? "no_device" : "harness_error", j->extra, "%s", e);
    }
    json_object_set_new(j->extra, "isolation", json_string(isolation));
    free(isolation);
    return rn;
}

/* Starts a runner for the code C (the candidate or the baseline): its
 * process, its device opened, its sandbox applied. None of C's code runs
 * in it until ready_runner loads it, so this may happen before the device
 * is held. */
kv_runner *kv_judge_spawn_runner(judge *j, const kv_compiled *c, const char *device_src,
                                 const char *who)
{
    kv_worker_phase("starting the %s's process", who);
    char *err = NULL;
    kv_runner *rn =
        kv_judge_start_runner(j->b->backend, j->b->confine, j->ctx, c, device_src, &err);
    return kv_judge_greet_runner(j, rn, err);
}

/* Makes RN (spawned for WHO) the runner in use: calibrates the judge's
 * clock against it, then loads its code. Device work: the device is held. */
static void ready_runner(judge *j, kv_runner *rn, const char *who)
{
    double t0 = kv_now_s();
    j->rn = rn;
    j->who = who;
    j->base_threads = kv_runner_threads(j->rn);
    /* Only timing needs it; a long-lived judge measures it once, before
     * any candidate's code was loaded. */
    if (j->ctx->base && !j->calibrated) {
        kv_judge_calibrate(j);
        j->c_kept = j->c;
        j->calibrated = j->serving;
    }
    t0 = kv_now_s();
    kv_worker_phase("loading the %s", who);
    kv_rfail f;
    char *log = NULL, *err = NULL;
    int rc = kv_runner_load(j->rn, 120, &log, &f, &err);
    if (log && *log) json_object_set_new(j->extra, "build_log", json_string(log));
    if (rc < 0) kv_judge_fail_err(j, err, "loading");
    if (rc > 0)
        kv_judge_fail(j, f.code, "%s%s%s", f.detail, log && *log ? ": " : "", log ? log : "");
    free(log);
    kv_judge_note_idle_cpu(j);
    kv_judge_lap(j, PROF_LOAD, &t0);
}

/* Waits for the device (device_hold.h; the wait is not the candidate's
 * time), then measures what needs it alone. */
static void hold_device(judge *j)
{
    kv_worker_phase("waiting for the %s device %d", j->ctx->backend->name, j->ctx->device);
    double waited = 0;
    char *err = NULL;
    kv_worker_waiting();
    /* A long-lived judge's client asked as it handed its job over. */
    double asked = j->ctx->slot_asked ? j->ctx->asked_at : kv_now_s(), granted = kv_now_s();
    j->lock = kv_device_hold(j->job, j->ctx->slot_asked, j->ctx->backend, j->ctx->cache,
                             j->ctx->device, &waited, &granted, &err);
    kv_worker_waited(waited);
    json_object_set_new(j->extra, "device_wait_seconds", json_real(waited));
    if (j->lock < 0) kv_worker_fail("harness_error", j->extra, "%s", err);
    j->held_at = kv_now_s();
    /* When it asked, was granted its slot, held the device and let go, on
     * the host's monotonic clock: the gaps between one child's letting go
     * and the next one's hold are the device's idle time
     * (bench/main_job_stats.py). */
    json_object_set_new(j->extra, "device_hold_clock",
                        json_pack("{s:i,s:f,s:f,s:f}", "device", j->ctx->device, "asked", asked,
                                  "granted", granted, "held", j->held_at));
    double t0 = j->held_at;
    kv_worker_phase("measuring the %s device %d", j->ctx->backend->name, j->ctx->device);
    if (j->b->measure && !j->measured && j->b->measure(j->b, &err) != 0)
        kv_worker_fail("harness_error", j->extra, "measuring the device: %s", err);
    j->measured = j->serving; /* a long-lived judge measures the device once */
    if (j->job->ceiling_gbps > 0) j->b->ceiling_gbps = j->b->bandwidth_gbps = j->job->ceiling_gbps;
    kv_judge_lap(j, PROF_MEASURE, &t0);
}

/* Lets go of the device once its work is done: the next evaluation, which
 * prepared meanwhile, starts its device work. */
static double let_go_device(judge *j)
{
    kv_device_let_go(j->job, j->lock);
    j->lock = -1;
    double now = kv_now_s();
    json_object_set_new(json_object_get(j->extra, "device_hold_clock"), "freed", json_real(now));
    return now - j->held_at;
}

/* Loads the task's device reference into the judge (cuda). */
static void load_reference(judge *j, const kv_compiled *c)
{
    j->ref_so = dlopen(c->lib_path, RTLD_NOW | RTLD_LOCAL);
    void *sym = j->ref_so ? dlsym(j->ref_so, "kv_launch") : NULL;
    if (!sym)
        kv_worker_fail("harness_error", j->extra, "the task's device reference does not load: %s",
                       dlerror());
    memcpy(&j->ref, &sym, sizeof sym);
}

/* Times every scenario of the baseline in a runner of its own: {"NAME":
 * {"median_us":..,"iqr_us":..,"reps":..}, ...}. */
static json_t *time_baseline(judge *j)
{
    double t0 = kv_now_s(), before[PROF_COUNT];
    memcpy(before, j->prof, sizeof before);
    late_looks looks = j->looks;
    ready_runner(j, kv_judge_spawn_runner(j, j->ctx->base, j->ctx->base_device_src, "baseline"),
                 "baseline");
    j->trusted = 1;
    json_t *out = json_object();
    for (int i = 0; i < j->task->num_scenarios; i++) {
        json_t *s = json_object();
        kv_worker_phase("timing the baseline on %s", j->task->scenarios[i].name);
        kv_judge_time_shape(j, &j->task->scenarios[i], s);
        json_object_set_new(out, j->task->scenarios[i].name, s);
    }
    stop_runner(j);
    json_object_del(j->extra, "runner_output");
    json_object_del(j->extra, "build_log");
    j->who = NULL;
    j->trusted = 0;
    /* Its steps and looks count as the baseline's, not as the candidate's. */
    memcpy(j->prof, before, sizeof before);
    j->looks = looks;
    j->prof[PROF_BASELINE] += kv_now_s() - t0;
    return out;
}

/* The baseline's timings: the kept ones when they still describe this
 * device, else timed now (handed back in RESULT's "baseline", with how far
 * they drifted from the kept ones, and kept by keep_fresh_baseline). Read
 * here, with the device held, not when the evaluation began: an evaluation
 * in flight beside the one that timed it then finds it kept. */
static json_t *kept_or_timed_baseline(judge *j, json_t *result)
{
    double t0 = kv_now_s();
    const char *path = j->ctx->baseline_path;
    json_t *kept = path && !j->job->fresh_baseline
                       ? kv_baseline_load(path, j->job->limits.baseline_max_age_s)
                       : NULL;
    json_t *tele = j->b->telemetry ? j->b->telemetry(j->b) : NULL;
    const char *why = "none kept";
    if (kept && kv_baseline_still_valid(kept, j->b->device, tele, &why)) {
        if (tele) json_decref(tele);
        json_object_set_new(result, "baseline_kept", json_true());
        kv_judge_lap(j, PROF_MEASURE, &t0);
        json_t *scen = json_incref(json_object_get(kept, "scenarios"));
        json_decref(kept);
        return scen;
    }
    json_t *scen = time_baseline(j);
    json_t *entry = json_pack("{s:I,s:O,s:O}", "saved_at", (json_int_t)time(NULL), "device",
                              j->b->device, "scenarios", scen);
    if (tele) json_object_set_new(entry, "telemetry", tele);
    json_object_set_new(entry, "retimed_because", json_string(why));
    /* Drift: the geometric mean of new over kept medians, where kept. */
    const json_t *old = json_object_get(kept, "scenarios");
    double logsum = 0;
    int n = 0;
    const char *name;
    json_t *v;
    json_object_foreach(scen, name, v)
    {
        double a = json_number_value(json_object_get(json_object_get(old, name), "median_us"));
        double b = json_number_value(json_object_get(v, "median_us"));
        if (a > 0 && b > 0) {
            logsum += log(b / a);
            n++;
        }
    }
    if (n) json_object_set_new(entry, "drift", json_real(exp(logsum / n)));
    json_object_set_new(result, "baseline", entry);
    j->fresh_baseline = entry;
    if (kept) json_decref(kept);
    return scen;
}

/* Adds the steps taken since BEFORE, begun at BEGAN, to S's
 * "profile_seconds" (where a scenario's share of the judge's time goes),
 * and the seconds they spanned to its "wall": the wall less the steps is
 * what no step of the scenario names. */
static void add_profile(const judge *j, json_t *s, const double *before, double began)
{
    json_t *p = json_object_get(s, "profile_seconds");
    if (!p) {
        p = json_object();
        json_object_set_new(s, "profile_seconds", p);
    }
    json_object_set_new(
        p, "wall", json_real(kv_now_s() - began + json_number_value(json_object_get(p, "wall"))));
    for (int i = 0; i < PROF_COUNT; i++) {
        double d = j->prof[i] - before[i];
        if (d <= 0) continue;
        json_object_set_new(p, prof_names[i],
                            json_real(d + json_number_value(json_object_get(p, prof_names[i]))));
    }
}

/* Checks SH; its summary, with the check's profile. */
static json_t *check_shape(judge *j, const kv_shape *sh, int held)
{
    double before[PROF_COUNT], began = kv_now_s();
    memcpy(before, j->prof, sizeof before);
    json_t *s = kv_judge_check_shape(j, sh, held);
    add_profile(j, s, before, began);
    return s;
}

/* Times scenario SH into its summary S, with the speedup over the
 * baseline's time for it. */
static void time_against_baseline(judge *j, const kv_shape *sh, json_t *s, json_t *baseline)
{
    kv_worker_phase("timing %s", sh->name);
    double before[PROF_COUNT], began = kv_now_s();
    memcpy(before, j->prof, sizeof before);
    kv_judge_time_shape(j, sh, s);
    add_profile(j, s, before, began);
    json_t *bs = json_object_get(baseline, sh->name);
    double bmed = json_number_value(json_object_get(bs, "median_us"));
    double med = json_number_value(json_object_get(s, "median_us"));
    if (!(bmed > 0))
        kv_judge_fail(j, "harness_error", "no baseline time for scenario %s", sh->name);
    json_object_set_new(s, "baseline_median_us", json_real(bmed));
    json_object_set(s, "baseline_iqr_us", json_object_get(bs, "iqr_us"));
    json_object_set_new(s, "speedup", json_real(bmed / med));
}

/* The screen on the representative scenarios (REP) timed so far: the
 * geometric mean of the child's speedups over its parent's, a scenario not
 * yet timed counted as equal to the parent's (so the mean of all is the
 * screen's estimate once every one is timed). 1 when that is below the
 * keep: the child cannot beat its parent; RESULT then says so ("screened":
 * the ratio, the parent's score, the scenarios timed and not). */
static int screened_out(judge *j, json_t **summary, const int *rep, json_t *result)
{
    /* The parent's speedups per scenario, from its rows in the store. */
    const json_t *parent = j->job->parent;
    const json_t *speedup = json_object_get(parent, "speedup");
    double logsum = 0;
    int n = 0, timed = 0;
    for (int i = 0; i < j->task->num_scenarios; i++) {
        if (!rep[i]) continue;
        double ps = json_number_value(json_object_get(speedup, j->task->scenarios[i].name));
        double cs = json_number_value(json_object_get(summary[i], "speedup"));
        if (!(ps > 0)) continue;
        n++;
        if (cs > 0) {
            logsum += log(cs / ps);
            timed++;
        }
    }
    if (timed == 0) return 0; /* nothing to compare with: evaluate in full */
    /* The threshold: the config's (--screen-keep), else the task's own. */
    double ratio = exp(logsum / n), keep = j->job->screen_keep;
    if (!(keep > 0)) keep = j->task->screen_keep > 0 ? j->task->screen_keep : 0.95;
    double pscore = json_number_value(json_object_get(parent, "combined_score"));
    json_t *info = json_pack("{s:f,s:f,s:i,s:i,s:b}", "ratio_to_parent", ratio, "keep", keep,
                             "scenarios", timed, "untimed", n - timed, "stopped", ratio < keep);
    if (pscore > 0) json_object_set_new(info, "parent_score", json_real(pscore));
    json_object_set_new(result, "screened", info);
    return ratio < keep;
}

/* The bytes of SH's tensors: what its checks cost (drawing, the reference,
 * the comparisons all scale with them). */
static double shape_bytes(const kv_task *t, const kv_shape *sh)
{
    double bytes = 0;
    for (int i = 0; i < t->num_tensors; i++)
        bytes +=
            (double)kv_tensor_count(t, i, sh->syms) * (double)kv_dtype_size(t->tensors[i].dtype);
    return bytes;
}

/* Screening, cheapest first: the representative scenarios (REP) checked
 * and timed in order of their bytes, each a chance to stop a child that
 * cannot beat its parent before the dearer ones; the last one is left to
 * the screen's full verdict. 1 when the child stopped here. */
static int screen_cheapest_first(judge *j, json_t **summary, const int *rep, json_t *baseline,
                                 json_t *result)
{
    const kv_task *t = j->task;
    int *order = kv_calloc((size_t)t->num_scenarios + 1, sizeof *order), n = 0;
    for (int i = 0; i < t->num_scenarios; i++) {
        if (!rep[i]) continue;
        int k = n++;
        for (; k > 0 &&
               shape_bytes(t, &t->scenarios[order[k - 1]]) > shape_bytes(t, &t->scenarios[i]);
             k--)
            order[k] = order[k - 1];
        order[k] = i;
    }
    int stopped = 0;
    for (int k = 0; k + 1 < n && !stopped; k++) {
        const kv_shape *sh = &t->scenarios[order[k]];
        summary[order[k]] = check_shape(j, sh, 0);
        time_against_baseline(j, sh, summary[order[k]], baseline);
        stopped = screened_out(j, summary, rep, result);
    }
    free(order);
    return stopped;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* How the late looks went: how many at once and after the settle, and the
 * waits from the reply to the copies (microseconds: min, median, 90th
 * percentile, max of the first ones) that decided it. */
static json_t *late_looks_json(judge *j)
{
    late_looks *l = &j->looks;
    json_t *o = json_pack("{s:I,s:I,s:f}", "at_once", (json_int_t)l->at_once, "after_settle",
                          (json_int_t)l->settled, "limit_small_us",
                          kv_reply_probe_limit(j->c.copy_s, j->c.per_byte_s, 0) * 1e6);
    int n = l->n_waits;
    if (n > 0) {
        qsort(l->wait_us, (size_t)n, sizeof l->wait_us[0], cmp_float);
        json_object_set_new(o, "wait_us",
                            json_pack("[f,f,f,f]", l->wait_us[0], l->wait_us[n / 2],
                                      l->wait_us[n * 9 / 10], l->wait_us[n - 1]));
    }
    return o;
}

/* Ends the memcheck stage: the runner exits so compute-sanitizer reports;
 * an error it reports fails the candidate. */
static void memcheck_verdict(judge *j, json_t *result)
{
    kv_runner_quit(j->rn, 60);
    char *out = kv_runner_output(j->rn, 20000);
    json_object_set_new(result, "memcheck_log", json_string(out));
    char *line = kv_memcheck_first_error(out);
    if (line) {
        json_object_set_new(j->extra, "memcheck_log", json_string(out));
        free(out);
        kv_judge_fail(j, "memcheck_error", "%s", line);
    }
    free(out);
    json_object_set_new(result, "memcheck_clean", json_true());
}

void kv_judge_begin(judge *j, const kv_judge_ctx *ctx)
{
    memset(j->prof, 0, sizeof j->prof);
    memset(j->prof_check, 0, sizeof j->prof_check);
    j->job = ctx->job;
    j->ctx = ctx;
    j->lock = -1;
    j->rn = NULL;
    j->n_tele = 0;
    j->who = NULL;
    j->grace_s = 0;
    j->trusted = 0;
    j->recalibrated = 0;
    memset(&j->looks, 0, sizeof j->looks);
    j->fresh_baseline = NULL;
    if (j->calibrated) j->c = j->c_kept;
    kv_judge_view_task(j, ctx->task);
    j->s = settings_for(ctx->job, ctx->backend);
    kv_rng_seed(&j->rng, ctx->seed);
    j->extra = json_object();
}

void kv_judge_open(judge *j)
{
    const kv_judge_ctx *ctx = j->ctx;
    char *err = NULL;
    kv_worker_phase("opening the %s device %d", ctx->backend->name, ctx->device);
    const char *fault = kv_device_fault(ctx->backend->name, ctx->device);
    if (fault) kv_worker_fail("no_device", NULL, "%s", fault);
    j->b = kv_jdev_new(ctx->backend, ctx->device, &err);
    if (!j->b) kv_worker_fail("not_built", NULL, "%s", err);
    j->b->helpers = ctx->helpers ? ctx->helpers->lib_path : NULL;
    if (j->b->open(j->b, &err) != 0)
        kv_worker_fail(kv_starts_with(err, "harness_error") ? "harness_error" : "no_device", NULL,
                       "%s", err);
    if (ctx->ref) load_reference(j, ctx->ref);
}

void kv_judge_abandon(judge *j)
{
    stop_runner(j);
    if (j->lock >= 0) let_go_device(j);
    kv_judge_tele_finish(j);
    kv_judge_free_live(j);
    if (j->extra) json_decref(j->extra);
    j->extra = NULL;
}

void kv_judge_main(void *vctx)
{
    kv_judge_ctx *ctx = vctx;
    judge j = {.lock = -1};
    kv_judge_begin(&j, ctx);
    double t0 = kv_now_s();
    /* Prepared while another evaluation may hold the device: the judge's
     * context and kernels, the task's reference, the candidate's process
     * (which runs none of its code before it is loaded), and on a device
     * that is not the host the held-out shapes' inputs and CPU references. */
    kv_judge_open(&j);
    kv_runner *cand = kv_judge_spawn_runner(&j, ctx->cand, ctx->device_src, "candidate");
    if (kv_judge_can(&j, KV_CAP_DEVICE_INPUTS)) {
        /* Host work, not the device's: its seconds count as preparing. */
        double before[PROF_COUNT];
        memcpy(before, j.prof, sizeof before);
        kv_judge_held_prepare(&j);
        memcpy(j.prof, before, sizeof before);
    }
    kv_judge_lap(&j, PROF_PREPARE, &t0);
    kv_judge_run(&j, cand);
    /* The child exits right after; nothing to free that the OS will not. */
}

void kv_judge_run(judge *j, kv_runner *cand)
{
    const kv_judge_ctx *ctx = j->ctx;
    double t0 = kv_now_s();
    hold_device(j);
    json_t *result = json_object();
    json_object_set(result, "device", j->b->device);
    json_object_set_new(result, "bandwidth_gbps", json_real(j->b->bandwidth_gbps));
    json_object_set_new(result, "ceiling_gbps", json_real(j->b->ceiling_gbps));
    json_t *baseline = ctx->base ? kept_or_timed_baseline(j, result) : NULL;
    ready_runner(j, cand, "candidate");
    /* Screening: one scenario of each class checked and timed, cheapest
     * first, a child that cannot beat its parent stopping there; then the
     * held-out shapes; then the rest of the scenarios, checked and timed. */
    int nsc = j->task->num_scenarios;
    json_t **summary = kv_calloc((size_t)nsc + 1, sizeof *summary);
    int *rep = kv_calloc((size_t)nsc + 1, sizeof *rep);
    int screening = ctx->job->parent && baseline && kv_judge_representatives(j->task, rep) > 0;
    int stopped =
        screening && !ctx->memcheck && screen_cheapest_first(j, summary, rep, baseline, result);
    json_t *held = json_array();
    for (int stage = screening ? 0 : 1; stage < 2; stage++) {
        for (int i = 0; i < nsc; i++)
            if (!summary[i] && (stage == 1 || (rep[i] && !stopped)))
                summary[i] = check_shape(j, &j->task->scenarios[i], 0);
        if (json_array_size(held) == 0)
            for (int i = 0; i < j->task->num_held_out; i++)
                json_array_append_new(held, check_shape(j, &j->task->held_out[i], 1));
        if (ctx->memcheck) break;
        for (int i = 0; baseline && i < nsc; i++)
            if (summary[i] && !json_object_get(summary[i], "median_us"))
                time_against_baseline(j, &j->task->scenarios[i], summary[i], baseline);
        if (stage == 0 && (stopped || screened_out(j, summary, rep, result))) break;
    }
    if (ctx->memcheck) memcheck_verdict(j, result);
    json_t *scen = json_array();
    for (int i = 0; i < nsc; i++)
        if (summary[i]) json_array_append_new(scen, summary[i]);
    free(summary);
    free(rep);
    t0 = kv_now_s();
    size_t stray = stop_runner(j);
    if (stray)
        kv_judge_fail(j, "out_of_bounds_write",
                      "%zu bytes of the device arena outside the tensors the candidate was "
                      "given were written: a table left there would reach the next child",
                      stray);
    kv_judge_lap(j, PROF_STOP, &t0);
    note_device_errors(j, result);
    keep_fresh_baseline(j, result);
    double held_s = let_go_device(j);
    kv_judge_tele_finish(j); /* NVML only: outside the hold */
    json_object_set_new(result, "device_held_seconds", json_real(held_s));
    json_object_set(result, "device_wait_seconds",
                    json_object_get(j->extra, "device_wait_seconds"));
    json_object_set(result, "device_hold_clock", json_object_get(j->extra, "device_hold_clock"));
    json_object_set_new(result, "scenarios", scen);
    json_object_set_new(result, "held_out", held);
    json_object_set(result, "isolation", json_object_get(j->extra, "isolation"));
    json_object_set(result, "clock_calibration", json_object_get(j->extra, "clock_calibration"));
    json_object_set_new(result, "build_logs",
                        json_pack("{s:O?}", "candidate", json_object_get(j->extra, "build_log")));
    json_t *prof = json_object();
    double named = 0;
    for (int i = 0; i < PROF_COUNT; i++) {
        json_object_set_new(prof, prof_names[i], json_real(j->prof[i]));
        if (i != PROF_PREPARE) named += j->prof[i];
    }
    /* What the device's hold spent outside every step above (the host's
     * work between them): where the next saving may hide. */
    json_object_set_new(prof, "unnamed", json_real(held_s > named ? held_s - named : 0));
    json_object_set_new(result, "profile_seconds", prof);
    static const char *const check_names[CHECK_STEPS] = {
        "keep",       "settle",         "quiet",       "tolerance",     "inputs",
        "canaries",   "runs",           "block_write", "block_written", "block_inputs",
        "block_late", "block_canaries", "block_full",  "alloc_device",  "alloc_map",
        "alloc_part", "alloc_release",  "alloc_own"};
    json_t *steps = json_object();
    for (int i = 0; i < CHECK_STEPS; i++)
        json_object_set_new(steps, check_names[i], json_real(j->prof_check[i]));
    json_object_set_new(result, "profile_check_seconds", steps);
    json_object_set_new(result, "late_looks", late_looks_json(j));
    /* A long-lived judge: which one, how many children it served, what it keeps. */
    if (j->serving)
        json_object_set_new(
            result, "judge",
            json_pack("{s:I,s:I}", "pid", (json_int_t)getpid(), "child", (json_int_t)j->served));
    if (baseline) json_decref(baseline);
    kv_worker_phase("done");
    kv_worker_result(result);
    json_decref(result);
    json_decref(j->extra);
    j->extra = NULL;
}
