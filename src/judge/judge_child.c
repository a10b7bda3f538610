/* One child judged (see judge_child.h): the device held, the baseline in a
 * runner of its own when it is not kept, then the candidate's runner:
 * calibration before its code is loaded, the correctness trials, the timed
 * blocks; then the result, or the first failure, sent, and everything the
 * child took given back. */
#include "judge/judge_child.h"
#include "judge/baseline.h"
#include "judge/device_check.h"
#include "judge/device_hold.h"
#include "backend/dtype.h"
#include "judge/judge_arena.h"
#include "judge/judge_check.h"
#include "judge/judge_held.h"
#include "judge/judge_time.h"
#include "judge/judge_trial.h"
#include "judge/judge_view.h"
#include "judge/memcheck_log.h"
#include "judge/reply_probe.h"
#include "judge/tasks.h"
#include "judge/worker.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fs.h"

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

/* ---- the child's trial: made, ended ---- */

/* A trial for C's job on DEV into *OUT, its runner C's (taken). The
 * task's view may fail it at once (the trial's verdict says so). */
static int trial_new(judge_device *dev, kv_judge_child *c, judge_trial **out)
{
    const kv_judge_ctx *ctx = c->ctx;
    judge_trial *j = kv_calloc(1, sizeof *j);
    j->dev = dev;
    j->job = ctx->job;
    j->ctx = ctx;
    j->lock = -1;
    j->cand = c->rn;
    c->rn = NULL;
    if (dev->calibrated) j->c = dev->c_kept;
    j->s = settings_for(ctx->job, ctx->backend);
    kv_rng_seed(&j->rng, ctx->seed);
    j->extra = json_object();
    *out = j;
    return kv_judge_view_task(j, ctx->task);
}

static void trial_free(judge_trial *j)
{
    kv_judge_runner_stop(j);
    kv_runner_stop(j->cand);
    kv_judge_tele_finish(&j->tele); /* NVML only: outside the hold */
    kv_judge_held_free_all(j);
    kv_judge_free_live(j);
    if (j->fresh_baseline) json_decref(j->fresh_baseline);
    if (j->extra) json_decref(j->extra);
    kv_judge_view_free(j);
    kv_verdict_clear(&j->v);
    free(j);
}

/* The device errors the driver reported during this evaluation (and a
 * test's injected one), as OUT's device_errors: the evaluator then checks
 * the device before it gets more work. */
static void note_device_errors(judge_trial *j, json_t *out)
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

/* Writes a baseline timed here to the run's file while the device is still
 * held: the next evaluation reads it once it holds the device. Not one
 * timed on a device that reported errors (OUT's device_errors): it may be
 * the device's time, not the baseline's. A failed write is noted in OUT. */
static void keep_fresh_baseline(judge_trial *j, json_t *out)
{
    const char *path = j->ctx->baseline_path;
    if (!j->fresh_baseline || !path || json_object_get(out, "device_errors")) return;
    if (kv_baseline_save(path, j->fresh_baseline) != 0)
        json_object_set_new(out, "baseline_not_kept",
                            json_sprintf("could not write %s: %s", path, strerror(errno)));
    json_decref(j->fresh_baseline);
    j->fresh_baseline = NULL;
}

/* Lets go of the device once its work is done: the next evaluation, which
 * prepared meanwhile, starts its device work. Returns the seconds held. */
static double let_go_device(judge_trial *j)
{
    kv_device_let_go(j->job, j->lock);
    j->lock = -1;
    double now = kv_now_s();
    json_object_set_new(json_object_get(j->extra, "device_hold_clock"), "freed", json_real(now));
    return now - j->held_at;
}

/* Stops the runner in use, then gives back the slab it was given, which
 * it can no longer write: *STRAY the slab's bytes it wrote outside its
 * tensors' parts (kv_judge_arena_drop_slab). */
static int stop_runner(judge_trial *j, size_t *stray)
{
    *stray = 0;
    if (!j->rn) return 0;
    kv_judge_runner_stop(j);
    return kv_judge_arena_drop_slab(j, stray);
}

/* The failure's end, once the trial has unwound: the slab checked and
 * made canaries again (the runner was stopped when it failed), the
 * device let go (the next child in line starts meanwhile) with the
 * baseline timed for it kept, the failure sent. */
static kv_child_end fail_end(judge_trial *j)
{
    size_t stray = 0;
    kv_judge_runner_stop(j);
    if (j->dev->slab_shared && kv_judge_arena_drop_slab(j, &stray) != 0) j->dev->doubt = 1;
    note_device_errors(j, j->extra);
    if (j->lock >= 0) {
        keep_fresh_baseline(j, j->extra);
        json_object_set_new(j->extra, "device_held_seconds", json_real(let_go_device(j)));
    }
    kv_reason code = j->v.code;
    kv_worker_failure(code, j->v.arg, j->extra, "%s", j->v.detail ? j->v.detail : "");
    int own = code == KV_R_HARNESS_ERROR || code == KV_R_NO_DEVICE || code == KV_R_NOT_BUILT ||
              json_object_get(j->extra, "device_errors") || j->dev->doubt;
    return own ? KV_CHILD_JUDGE_ENDS : KV_CHILD_REJECTED;
}

/* ---- the runners ---- */

kv_runner *kv_judge_start_runner(const kv_backend *backend, const char *device_confine,
                                 const kv_judge_ctx *ctx, const kv_judge_code *c,
                                 const char *device_src, kv_fail *err)
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
    if (ctx->memcheck) {
        if (!ctx->sanitizer) {
            kv_fail_set(err, KV_R_HARNESS_ERROR, "compute-sanitizer not found");
            free(confine);
            free(own);
            return NULL;
        }
        spec.wrapper = ctx->sanitizer;
        spec.wrapper_args = memcheck_args;
    }
    kv_runner *rn = kv_runner_spawn(&spec, err);
    free(confine);
    free(own);
    return rn;
}

/* Waits for the hello of *RN (started; NULL: it did not start, SPAWN_ERR
 * says why, taken): its device open, its sandbox applied. On failure *RN
 * is NULL (stopped). */
static int greet_runner(judge_trial *j, kv_runner **rn, kv_fail *spawn_err)
{
    char *isolation = NULL;
    kv_fail err = *spawn_err;
    *spawn_err = (kv_fail){0};
    if (*rn) *rn = kv_runner_greet(*rn, 120, &isolation, &err);
    if (!*rn) {
        /* A device the judge opened but the runner could not is still "no
         * device"; any other failure to start is the harness's. */
        kv_fail_recode(&err, KV_R_HARNESS_ERROR);
        int rc = kv_judge_fail(j, err.code, "%s", kv_fail_detail(&err));
        kv_fail_clear(&err);
        return rc;
    }
    json_object_set_new(j->extra, "isolation", json_string(isolation));
    free(isolation);
    return 0;
}

/* Starts a runner for the code C (the candidate or the baseline) into *RN:
 * its process, its device opened, its sandbox applied. None of C's code
 * runs in it until ready_runner loads it, so this may happen before the
 * device is held. */
static int spawn_runner(judge_trial *j, const kv_judge_code *c, const char *device_src,
                        const char *who, kv_runner **rn)
{
    kv_worker_phase("starting the %s's process", who);
    kv_fail err = {0};
    *rn = kv_judge_start_runner(j->b->backend, j->b->confine, j->ctx, c, device_src, &err);
    return greet_runner(j, rn, &err);
}

/* Makes RN (spawned for WHO, taken) the runner in use: calibrates the
 * judge's clock against it, then loads its code. Device work: the device
 * is held. */
static int ready_runner(judge_trial *j, kv_runner *rn, const char *who)
{
    judge_device *dev = j->dev;
    double t0 = kv_now_s();
    j->rn = rn;
    j->who = who;
    j->base_threads = kv_runner_threads(j->rn);
    /* Only timing needs it; a long-lived judge measures it once, before
     * any candidate's code was loaded. */
    if (j->ctx->base && !dev->calibrated) {
        if (kv_judge_calibrate(j) != 0) return KV_JUDGE_FAILED;
        dev->c_kept = j->c;
        dev->calibrated = dev->long_lived;
    }
    t0 = kv_now_s();
    kv_worker_phase("loading the %s", who);
    kv_rfail f;
    char *log = NULL;
    kv_fail err = {0};
    int rc = kv_runner_load(j->rn, 120, &log, &f, &err);
    if (log && *log) json_object_set_new(j->extra, "build_log", json_string(log));
    if (rc < 0) rc = kv_judge_fail_err(j, &err, "loading");
    if (rc > 0)
        rc = kv_judge_fail_arg(j, f.code, f.arg, "%s%s%s", f.detail, log && *log ? ": " : "",
                               log ? log : "");
    free(log);
    if (rc != 0) return KV_JUDGE_FAILED;
    kv_judge_note_idle_cpu(j);
    kv_judge_lap(j, PROF_LOAD, &t0);
    return 0;
}

/* ---- the device ---- */

/* Waits for the device (device_hold.h; the wait is not the candidate's
 * time), then measures what needs it alone. */
static int hold_device(judge_trial *j)
{
    judge_device *dev = j->dev;
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
    if (j->lock < 0) {
        int rc = kv_judge_fail(j, KV_R_HARNESS_ERROR, "%s", err);
        free(err);
        return rc;
    }
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
    kv_fail merr = {0};
    if (j->b->measure && !dev->measured && j->b->measure(j->b, &merr) != 0) {
        int rc =
            kv_judge_fail(j, KV_R_HARNESS_ERROR, "measuring the device: %s", kv_fail_detail(&merr));
        kv_fail_clear(&merr);
        return rc;
    }
    dev->measured = dev->long_lived; /* a long-lived judge measures the device once */
    if (j->job->ceiling_gbps > 0) j->b->ceiling_gbps = j->b->bandwidth_gbps = j->job->ceiling_gbps;
    kv_judge_lap(j, PROF_MEASURE, &t0);
    return 0;
}

/* ---- the baseline ---- */

/* Times every scenario of the baseline in a runner of its own into *OUT:
 * {"NAME": {"median_us":..,"iqr_us":..,"reps":..}, ...}. */
static int time_baseline(judge_trial *j, json_t **out)
{
    double t0 = kv_now_s(), before[PROF_COUNT];
    memcpy(before, j->prof, sizeof before);
    late_looks looks = j->looks;
    kv_runner *rn = NULL;
    if (spawn_runner(j, j->ctx->base, j->ctx->base_device_src, "baseline", &rn) != 0 ||
        ready_runner(j, rn, "baseline") != 0)
        return KV_JUDGE_FAILED;
    j->trusted = 1;
    *out = json_object();
    for (int i = 0; i < j->task->num_scenarios; i++) {
        json_t *s = json_object();
        json_object_set_new(*out, j->task->scenarios[i].name, s);
        kv_worker_phase("timing the baseline on %s", j->task->scenarios[i].name);
        if (kv_judge_time_shape(j, &j->task->scenarios[i], s) != 0) {
            json_decref(*out);
            *out = NULL;
            return KV_JUDGE_FAILED;
        }
    }
    size_t stray = 0; /* the task's own code: what it wrote is not suspected */
    if (stop_runner(j, &stray) != 0) {
        json_decref(*out);
        *out = NULL;
        return KV_JUDGE_FAILED;
    }
    json_object_del(j->extra, "runner_output");
    json_object_del(j->extra, "build_log");
    j->who = NULL;
    j->trusted = 0;
    /* Its steps and looks count as the baseline's, not as the candidate's. */
    memcpy(j->prof, before, sizeof before);
    j->looks = looks;
    j->prof[PROF_BASELINE] += kv_now_s() - t0;
    return 0;
}

/* The baseline's timings into *OUT: the kept ones when they still describe
 * this device, else timed now (handed back in RESULT's "baseline", with how
 * far they drifted from the kept ones, and kept by keep_fresh_baseline).
 * Read here, with the device held, not when the evaluation began: an
 * evaluation in flight beside the one that timed it then finds it kept. */
static int kept_or_timed_baseline(judge_trial *j, json_t *result, json_t **out)
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
        *out = json_incref(json_object_get(kept, "scenarios"));
        json_decref(kept);
        return 0;
    }
    json_t *scen = NULL;
    if (time_baseline(j, &scen) != 0) {
        if (tele) json_decref(tele);
        if (kept) json_decref(kept);
        return KV_JUDGE_FAILED;
    }
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
    j->fresh_baseline = json_incref(entry);
    if (kept) json_decref(kept);
    *out = scen;
    return 0;
}

/* ---- the candidate's scenarios ---- */

/* Adds the steps taken since BEFORE, begun at BEGAN, to S's
 * "profile_seconds" (where a scenario's share of the judge's time goes),
 * and the seconds they spanned to its "wall": the wall less the steps is
 * what no step of the scenario names. */
static void add_profile(const judge_trial *j, json_t *s, const double *before, double began)
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

/* Checks SH; *OUT its summary, with the check's profile. */
static int check_shape(judge_trial *j, const kv_shape *sh, int held, json_t **out)
{
    double before[PROF_COUNT], began = kv_now_s();
    memcpy(before, j->prof, sizeof before);
    if (kv_judge_check_shape(j, sh, held, out) != 0) return KV_JUDGE_FAILED;
    add_profile(j, *out, before, began);
    return 0;
}

/* Times scenario SH into its summary S, with the speedup over the
 * baseline's time for it. */
static int time_against_baseline(judge_trial *j, const kv_shape *sh, json_t *s, json_t *baseline)
{
    kv_worker_phase("timing %s", sh->name);
    double before[PROF_COUNT], began = kv_now_s();
    memcpy(before, j->prof, sizeof before);
    if (kv_judge_time_shape(j, sh, s) != 0) return KV_JUDGE_FAILED;
    add_profile(j, s, before, began);
    json_t *bs = json_object_get(baseline, sh->name);
    double bmed = json_number_value(json_object_get(bs, "median_us"));
    double med = json_number_value(json_object_get(s, "median_us"));
    if (!(bmed > 0))
        return kv_judge_fail(j, KV_R_HARNESS_ERROR, "no baseline time for scenario %s", sh->name);
    json_object_set_new(s, "baseline_median_us", json_real(bmed));
    json_object_set(s, "baseline_iqr_us", json_object_get(bs, "iqr_us"));
    json_object_set_new(s, "speedup", json_real(bmed / med));
    return 0;
}

/* The screen on the representative scenarios (REP) timed so far: the
 * geometric mean of the child's speedups over its parent's, a scenario not
 * yet timed counted as equal to the parent's (so the mean of all is the
 * screen's estimate once every one is timed). 1 when that is below the
 * keep: the child cannot beat its parent; RESULT then says so ("screened":
 * the ratio, the parent's score, the scenarios timed and not). */
static int screened_out(judge_trial *j, json_t **summary, const int *rep, json_t *result)
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
 * the screen's full verdict. *STOPPED 1 when the child stopped here. */
static int screen_cheapest_first(judge_trial *j, json_t **summary, const int *rep, json_t *baseline,
                                 json_t *result, int *stopped)
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
    int rc = 0;
    *stopped = 0;
    for (int k = 0; k + 1 < n && !*stopped && rc == 0; k++) {
        const kv_shape *sh = &t->scenarios[order[k]];
        rc = check_shape(j, sh, 0, &summary[order[k]]);
        if (rc == 0) rc = time_against_baseline(j, sh, summary[order[k]], baseline);
        if (rc == 0) *stopped = screened_out(j, summary, rep, result);
    }
    free(order);
    return rc;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* How the late looks went: how many at once and after the settle, and the
 * waits from the reply to the copies (microseconds: min, median, 90th
 * percentile, max of the first ones) that decided it. */
static json_t *late_looks_json(judge_trial *j)
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
static int memcheck_verdict(judge_trial *j, json_t *result)
{
    kv_runner_quit(j->rn, 60);
    char *out = kv_runner_output(j->rn, 20000);
    json_object_set_new(result, "memcheck_log", json_string(out));
    char *line = kv_memcheck_first_error(out);
    if (line) {
        json_object_set_new(j->extra, "memcheck_log", json_string(out));
        free(out);
        int rc = kv_judge_fail(j, KV_R_MEMCHECK_ERROR, "%s", line);
        free(line);
        return rc;
    }
    free(out);
    json_object_set_new(result, "memcheck_clean", json_true());
    return 0;
}

/* The candidate's scenarios and held-out shapes, into RESULT ("scenarios",
 * "held_out", "screened", "memcheck_*"). Screening: one scenario of each
 * class checked and timed, cheapest first, a child that cannot beat its
 * parent stopping there; then the held-out shapes; then the rest of the
 * scenarios, checked and timed. */
static int judge_candidate(judge_trial *j, json_t *baseline, json_t *result)
{
    const kv_judge_ctx *ctx = j->ctx;
    int nsc = j->task->num_scenarios;
    json_t **summary = kv_calloc((size_t)nsc + 1, sizeof *summary);
    int *rep = kv_calloc((size_t)nsc + 1, sizeof *rep);
    int screening = ctx->job->parent && baseline && kv_judge_representatives(j->task, rep) > 0;
    int stopped = 0, rc = 0;
    if (screening && !ctx->memcheck)
        rc = screen_cheapest_first(j, summary, rep, baseline, result, &stopped);
    json_t *held = json_array();
    for (int stage = screening ? 0 : 1; stage < 2 && rc == 0; stage++) {
        for (int i = 0; i < nsc && rc == 0; i++)
            if (!summary[i] && (stage == 1 || (rep[i] && !stopped)))
                rc = check_shape(j, &j->task->scenarios[i], 0, &summary[i]);
        if (json_array_size(held) == 0)
            for (int i = 0; i < j->task->num_held_out && rc == 0; i++) {
                json_t *h = NULL;
                rc = check_shape(j, &j->task->held_out[i], 1, &h);
                if (rc == 0) json_array_append_new(held, h);
            }
        /* The held-out shapes were checked on draws made on the host before
         * the hold, the device reference against the CPU's with them: a
         * long-lived judge's later children draw them in place. */
        if (rc == 0 && j->held && kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) j->dev->held_drawn = 1;
        if (ctx->memcheck) break;
        for (int i = 0; baseline && i < nsc && rc == 0; i++)
            if (summary[i] && !json_object_get(summary[i], "median_us"))
                rc = time_against_baseline(j, &j->task->scenarios[i], summary[i], baseline);
        if (rc == 0 && stage == 0 && (stopped || screened_out(j, summary, rep, result))) break;
    }
    if (rc == 0 && ctx->memcheck) rc = memcheck_verdict(j, result);
    json_t *scen = json_array();
    for (int i = 0; i < nsc; i++)
        if (summary[i]) json_array_append_new(scen, summary[i]);
    free(summary);
    free(rep);
    json_object_set_new(result, "scenarios", scen);
    json_object_set_new(result, "held_out", held);
    return rc;
}

/* The job's device work with the candidate's runner J->cand (greeted, not
 * loaded): holds the device, checks, times, lets go; *OUT the result. */
static int judge_job(judge_trial *j, json_t **out)
{
    const kv_judge_ctx *ctx = j->ctx;
    if (hold_device(j) != 0) return KV_JUDGE_FAILED;
    json_t *result = json_object();
    json_object_set(result, "device", j->b->device);
    json_object_set_new(result, "bandwidth_gbps", json_real(j->b->bandwidth_gbps));
    json_object_set_new(result, "ceiling_gbps", json_real(j->b->ceiling_gbps));
    json_t *baseline = NULL;
    int rc = ctx->base ? kept_or_timed_baseline(j, result, &baseline) : 0;
    if (rc == 0) {
        kv_runner *cand = j->cand; /* the runner in use from now */
        j->cand = NULL;
        rc = ready_runner(j, cand, "candidate");
    }
    if (rc == 0) rc = judge_candidate(j, baseline, result);
    if (baseline) json_decref(baseline);
    double t0 = kv_now_s();
    size_t stray = 0;
    if (rc == 0) rc = stop_runner(j, &stray);
    if (rc == 0 && stray)
        rc = kv_judge_fail(j, KV_R_OUT_OF_BOUNDS_WRITE,
                           "%zu bytes of the device arena outside the tensors the candidate was "
                           "given were written: a table left there would reach the next child",
                           stray);
    if (rc != 0) {
        json_decref(result);
        return KV_JUDGE_FAILED;
    }
    kv_judge_lap(j, PROF_STOP, &t0);
    note_device_errors(j, result);
    keep_fresh_baseline(j, result);
    double held_s = let_go_device(j);
    kv_judge_tele_finish(&j->tele); /* NVML only: outside the hold */
    json_object_set_new(result, "device_held_seconds", json_real(held_s));
    json_object_set(result, "device_wait_seconds",
                    json_object_get(j->extra, "device_wait_seconds"));
    json_object_set(result, "device_hold_clock", json_object_get(j->extra, "device_hold_clock"));
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
    *out = result;
    return 0;
}

/* Before the hold, while another evaluation may hold the device: the
 * judge's context and kernels, the task's reference (the device opened),
 * the candidate's process (which runs none of its code before it is
 * loaded), and on a device that is not the host the held-out shapes'
 * inputs and CPU references. */
static int prepare(judge_trial *j, kv_judge_child *c)
{
    judge_device *dev = j->dev;
    double t0 = kv_now_s();
    int opened_here = !dev->opened;
    if (kv_judge_device_open(dev, j->ctx, &j->v) != 0) return KV_JUDGE_FAILED;
    j->b = dev->b;
    j->ref = dev->ref;
    if (opened_here && c->opened) c->opened(c->arg, dev->b);
    kv_fail spawn_err = c->spawn_err;
    c->spawn_err = (kv_fail){0};
    if (!j->cand && !spawn_err.detail)
        j->cand = kv_judge_start_runner(j->b->backend, j->b->confine, j->ctx, j->ctx->cand,
                                        j->ctx->device_src, &spawn_err);
    if (!dev->held_drawn && kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) {
        /* Host work, not the device's: its seconds count as preparing. */
        double before[PROF_COUNT];
        memcpy(before, j->prof, sizeof before);
        kv_judge_held_prepare(j);
        memcpy(j->prof, before, sizeof before);
    }
    kv_worker_phase("starting the candidate's process");
    if (greet_runner(j, &j->cand, &spawn_err) != 0) return KV_JUDGE_FAILED;
    kv_judge_lap(j, PROF_PREPARE, &t0);
    return 0;
}

kv_child_end kv_judge_child_run(judge_device *dev, kv_judge_child *c)
{
    judge_trial *j = NULL;
    json_t *result = NULL;
    int rc = trial_new(dev, c, &j);
    if (rc == 0) rc = prepare(j, c);
    if (rc == 0) rc = judge_job(j, &result);
    /* Nothing fails unseen: a step that failed set the verdict. */
    if (rc != 0 && !kv_judge_failed(j))
        rc = kv_verdict_set(&j->v, KV_R_HARNESS_ERROR, "the judge failed without a verdict");
    kv_child_end end = KV_CHILD_PASSED;
    if (rc != 0 || kv_judge_failed(j)) {
        if (result) json_decref(result);
        end = fail_end(j);
    } else {
        /* A long-lived judge: which one, how many children it served. */
        if (c->judge) json_object_set(result, "judge", c->judge);
        kv_worker_phase("done");
        kv_worker_result(result);
        json_decref(result);
    }
    kv_fail_clear(&c->spawn_err); /* a runner that did not start, when the trial ended first */
    trial_free(j);
    return end;
}
