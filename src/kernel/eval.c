/* The harness's entry (see harness.h): in the caller's process it reads the
 * job, learns its device (device_hold.h), compiles the candidate, the
 * baseline, the task's device reference and the judge's own kernels
 * (cached), runs the judge in a forked child (judge.h), which prepares on
 * the device, holds it for its device work only and runs the candidate in
 * a sandboxed runner of its own, and turns the judge's report into the
 * evaluator's JSON. */
#include "kernel/harness.h"
#include "kernel/artifact.h"
#include "backend/backend.h"
#include "judge/baseline.h"
#include "kernel/compile.h"
#include "judge/device_hold.h"
#include "judge/judge.h"
#include "judge/judge_server.h"
#include "runner/sandbox.h"
#include "judge/tasks.h"
#include "kernel/tool.h"
#include "judge/worker.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/proc.h"
#include "util/slot_channel.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Turns a child's failure (its code and detail: "no_device: ...") or its
 * death during WHAT into a message, malloc'd. */
static char *outcome_error(const kv_worker_outcome *w, const char *what)
{
    char code[64];
    if (w->failed)
        return kv_asprintf("%s: %s", kv_reason_format(w->fail_code, w->fail_arg, code, sizeof code),
                           w->fail_detail ? w->fail_detail : "");
    if (w->timed_out) return kv_asprintf("%s: timed out", what);
    if (w->signal) return kv_asprintf("%s: killed by %s", what, kv_worker_signal_name(w->signal));
    return kv_asprintf("%s: worker exited with status %d", what, w->exit_code);
}

/* Worker entry: lists the devices of the backend CTX names. */
static void list_devices_main(void *ctx)
{
    const kv_backend *b = ctx;
    if (!b->devices) {
        kv_worker_failure(KV_R_NOT_BUILT, 0, NULL, "%s", b->not_built);
        return;
    }
    char *err = NULL;
    json_t *list = b->devices(&err);
    if (!list) {
        kv_worker_failure(KV_R_NO_DEVICE, 0, NULL, "%s", err ? err : "no device");
        free(err);
        return;
    }
    json_t *res = json_pack("{s:o}", "devices", list);
    kv_worker_result(res);
    json_decref(res);
}

int kv_kernel_devices(const char *backend, json_t **list, char **err)
{
    *list = NULL;
    const kv_backend *b = kv_backend_find(backend);
    if (!b) {
        *err = kv_asprintf("unknown backend '%s' (%s)", backend ? backend : "", kv_backend_names());
        return -1;
    }
    kv_worker_outcome w;
    if (kv_worker_run(list_devices_main, (void *)b, 60, &w, err) != 0) return -1;
    int rc = 0;
    if (w.result) {
        *list = json_incref(json_object_get(w.result, "devices"));
    } else {
        *err = w.fail_detail && w.failed ? kv_strdup(w.fail_detail)
                                         : outcome_error(&w, "listing the devices");
        rc = -1;
    }
    kv_worker_outcome_clear(&w);
    return rc;
}

/* A verdict of "incorrect": combined_score 0, correct 0, the reason. */
static json_t *rejected(const char *code, const char *detail, json_t *artifacts)
{
    json_t *metrics = json_pack("{s:f,s:i}", "combined_score", 0.0, "correct", 0);
    json_object_set_new(artifacts, "verdict", json_string("rejected"));
    json_object_set_new(artifacts, "reason", json_string(code));
    json_object_set_new(artifacts, "reason_detail", json_string(detail ? detail : ""));
    return json_pack("{s:o,s:O}", "metrics", metrics, "artifacts", artifacts);
}

static void add_resources(json_t *metrics, json_t *artifacts, const kv_compiled *c)
{
    if (!c->resources) return;
    json_object_set(artifacts, "resources", c->resources);
    const char *k;
    json_t *v;
    json_object_foreach(c->resources, k, v) json_object_set(metrics, k, v);
}

/* Builds the final JSON from the judge's result: every timed scenario's
 * figures as metrics, combined_score their weighted geometric mean (or, for
 * a child the screen stopped, its parent's score times its ratio there). */
static json_t *accepted(int stage, json_t *res, json_t *artifacts)
{
    json_t *metrics = json_object();
    json_t *scen = json_object_get(res, "scenarios");
    double logsum = 0, wsum = 0;
    int timed = 0;
    size_t i;
    json_t *s;
    json_array_foreach(scen, i, s)
    {
        const char *name = json_string_value(json_object_get(s, "name"));
        static const char *keys[] = {
            "median_us",   "iqr_us",     "speedup",   "roofline_fraction", "max_abs_err",
            "max_rel_err", "rel_l2_err", "tol_ratio", "energy_uj",         "power_w"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            json_t *v = json_object_get(s, keys[k]);
            if (!v) continue;
            char *key = kv_asprintf("%s_%s", name, keys[k]);
            json_object_set(metrics, key, v);
            free(key);
        }
        json_t *sp = json_object_get(s, "speedup");
        if (sp) {
            double w = json_number_value(json_object_get(s, "weight"));
            w = w > 0 ? w : 1.0;
            logsum += w * log(json_number_value(sp));
            wsum += w;
            timed = 1;
        }
    }
    double score = stage == 1 || !timed ? 1.0 : exp(logsum / wsum);
    const json_t *scr = json_object_get(res, "screened");
    if (json_is_true(json_object_get(scr, "stopped"))) {
        double p = json_number_value(json_object_get(scr, "parent_score"));
        double ratio = json_number_value(json_object_get(scr, "ratio_to_parent"));
        if (p > 0 && ratio > 0) score = p * ratio;
        json_object_set_new(metrics, "screened_out", json_integer(1));
    }
    json_object_set_new(metrics, "combined_score", json_real(score));
    json_object_set_new(metrics, "correct", json_integer(1));
    if (json_is_true(json_object_get(res, "memcheck_clean")))
        json_object_set_new(metrics, "memcheck_clean", json_integer(1));
    if (timed) json_object_set_new(metrics, "speedup", json_real(exp(logsum / wsum)));
    json_object_set_new(artifacts, "verdict", json_string("correct"));
    static const char *copy[] = {"scenarios",
                                 "held_out",
                                 "device",
                                 "profile_seconds",
                                 "isolation",
                                 "baseline",
                                 "baseline_kept",
                                 "baseline_not_kept",
                                 "runner_output",
                                 "memcheck_log",
                                 "screened",
                                 "device_errors",
                                 "profile_check_seconds",
                                 "device_held_seconds",
                                 "device_wait_seconds",
                                 "device_hold_clock",
                                 "late_looks",
                                 "clock_calibration",
                                 "judge"};
    for (size_t k = 0; k < sizeof copy / sizeof copy[0]; k++) {
        json_t *v = json_object_get(res, copy[k]);
        if (v) json_object_set(artifacts, copy[k], v);
    }
    json_t *logs = json_object_get(res, "build_logs");
    if (logs && json_object_size(logs)) json_object_set(artifacts, "build_logs", logs);
    return json_pack("{s:o,s:O}", "metrics", metrics, "artifacts", artifacts);
}

static char *read_source(const char *path, char **err)
{
    return kv_read_source(path, err);
}

/* KV_CAP_DEVICE_CODE: the device code of C, in a file beside its shared
 * object, for the runner to build (malloc'd path), or NULL. */
static char *device_source_file(const kv_compiled *c)
{
    if (!c->device_source) return NULL;
    char *path = kv_asprintf("%s.cl", c->lib_path);
    if (!kv_is_file(path)) {
        char *tmp = kv_asprintf("%s.%d.tmp", path, (int)getpid());
        if (kv_write_file(tmp, c->device_source, strlen(c->device_source)) != 0 ||
            rename(tmp, path) != 0)
            unlink(tmp);
        free(tmp);
    }
    return path;
}

/* Turns the judge's outcome W into *RESULT (a verdict), or *ERR for the
 * harness's own failures. Returns 0 or -1. */
static int verdict(const kv_job *job, kv_worker_outcome *w, double timeout, json_t *artifacts,
                   json_t **result, char **err)
{
    if (w->phase) json_object_set_new(artifacts, "last_phase", json_string(w->phase));
    json_object_set_new(artifacts, "worker_seconds", json_real(w->seconds));
    if (w->fail_extra) {
        const char *k;
        json_t *v;
        json_object_foreach(w->fail_extra, k, v) json_object_set(artifacts, k, v);
    }
    if (w->result) {
        *result = accepted(job->stage, w->result, artifacts);
        return 0;
    }
    kv_reason code = w->fail_code;
    if (w->failed &&
        (code == KV_R_NO_DEVICE || code == KV_R_NOT_BUILT || code == KV_R_HARNESS_ERROR)) {
        *err = outcome_error(w, NULL);
        return -1;
    }
    if (w->failed) {
        char name[64];
        *result = rejected(kv_reason_format(code, w->fail_arg, name, sizeof name), w->fail_detail,
                           artifacts);
        return 0;
    }
    /* The judge itself died or overran: the harness's failure, not a verdict
     * on the candidate (whose process is a runner the judge watches). */
    if (w->timed_out)
        *err = kv_asprintf("harness_error: the judge exceeded what was left of the job's %g s "
                           "(limits.total_s; %.0f s at its start) during %s",
                           job->limits.total_s, timeout, w->phase ? w->phase : "startup");
    else
        *err = kv_asprintf("harness_error: the judge died (%s %d) during %s",
                           w->signal ? kv_worker_signal_name(w->signal) : "exit",
                           w->signal ? 0 : w->exit_code, w->phase ? w->phase : "startup");
    return -1;
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

/* The judge's inputs come from this seed: from the kernel's entropy, so
 * that a candidate cannot rebuild them from the time and a process id. */
static uint64_t unpredictable_seed(void)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s || s == 0)
        s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(kv_now_s() * 1e9);
    return s;
}

/* 1 when scenario SH is in the job's set: its name, or one of its tags. */
static int in_set(const kv_job *job, const kv_shape *sh)
{
    for (size_t i = 0; i < job->n_scenarios; i++) {
        const char *want = job->scenarios[i];
        if (strcmp(want, sh->name) == 0) return 1;
        size_t n = strlen(want);
        for (const char *t = sh->tags; t && *t;) {
            size_t len = strcspn(t, ",");
            if (len == n && strncmp(t, want, n) == 0) return 1;
            t += len + (t[len] == ',');
        }
    }
    return 0;
}

/* The task TASK with its scenarios cut to the job's set, into *VIEW (its
 * scenario array in *OWNED, to free). Returns 0, or -1 with *ERR naming an
 * entry of the set that matches no scenario. */
static int scenario_view(const kv_task *task, const kv_job *job, kv_task *view, kv_shape **owned,
                         char **err)
{
    *view = *task;
    *owned = NULL;
    if (!job->n_scenarios) return 0;
    for (size_t i = 0; i < job->n_scenarios; i++) {
        kv_job one = *job;
        one.scenarios = &job->scenarios[i];
        one.n_scenarios = 1;
        int any = 0;
        for (int s = 0; s < task->num_scenarios && !any; s++)
            any = in_set(&one, &task->scenarios[s]);
        if (!any) {
            kv_buf names = KV_BUF_INIT;
            for (int s = 0; s < task->num_scenarios; s++)
                kv_buf_printf(&names, "%s%s", s ? ", " : "", task->scenarios[s].name);
            *err = kv_asprintf("scenario '%s' is neither a scenario nor a tag of task %s "
                               "(scenarios: %s)",
                               job->scenarios[i], task->name, names.data);
            kv_buf_free(&names);
            return -1;
        }
    }
    *owned = kv_calloc((size_t)task->num_scenarios, sizeof **owned);
    int n = 0;
    for (int s = 0; s < task->num_scenarios; s++)
        if (in_set(job, &task->scenarios[s])) (*owned)[n++] = task->scenarios[s];
    view->scenarios = *owned;
    view->num_scenarios = n;
    return 0;
}

/* A short key of the job's scenario set, for the files kept per run ("all"
 * or a hash of the names). */
static void set_key(const kv_task *view, const kv_task *task, char out[17])
{
    if (view->num_scenarios == task->num_scenarios) {
        snprintf(out, 17, "all");
        return;
    }
    kv_buf b = KV_BUF_INIT;
    for (int i = 0; i < view->num_scenarios; i++)
        kv_buf_printf(&b, "%s\n", view->scenarios[i].name);
    kv_hash_hex(kv_hash64(b.data, b.len), out);
    kv_buf_free(&b);
}

/* The architecture to compile for: the job's, else that of its device (a
 * worker child lists the devices). Returns a malloc'd name or NULL with *ERR. */
static char *device_arch(const kv_job *job, const kv_backend *b, int device, char **err)
{
    if (job->arch) return kv_strdup(job->arch);
    json_t *list = NULL;
    if (kv_kernel_devices(b->name, &list, err) != 0) return NULL;
    char *arch = NULL;
    size_t i;
    json_t *d;
    json_array_foreach(list, i, d)
    {
        if (json_integer_value(json_object_get(d, "index")) == device)
            arch = kv_strdup(json_string_value(json_object_get(d, "arch")));
    }
    json_decref(list);
    if (!arch) *err = kv_asprintf("no %s device %d on this machine", b->name, device);
    return arch;
}

int kv_kernel_eval(const kv_job *job, json_t **result, char **err)
{
    *result = NULL;
    *err = NULL;
    /* The job's one budget: what this process and everything it starts may
     * take, less the time it waits for its device. */
    kv_proc_set_budget(job->limits.total_s > 0 ? job->limits.total_s : 900);
    const kv_task *task = kv_task_find(job->task);
    if (!task) {
        kv_buf names = KV_BUF_INIT;
        for (size_t i = 0; kv_task_at(i); i++)
            kv_buf_printf(&names, "%s%s", i ? ", " : "", kv_task_at(i)->name);
        *err = kv_asprintf("unknown task '%s' (known: %s)", job->task ? job->task : "", names.data);
        kv_buf_free(&names);
        return -1;
    }
    if (!job->candidate) {
        *err = kv_strdup("no candidate file given");
        return -1;
    }
    const kv_backend *backend = !job->backend || strcmp(job->backend, "auto") == 0
                                    ? kv_backend_for_path(job->candidate)
                                    : kv_backend_find(job->backend);
    if (!backend) {
        *err = kv_asprintf("unknown backend '%s' (%s or auto)", job->backend, kv_backend_names());
        return -1;
    }
    kv_task view;
    kv_shape *view_scenarios = NULL;
    if (scenario_view(task, job, &view, &view_scenarios, err) != 0) return -1;
    char *src = read_source(job->candidate, err);
    if (!src) {
        free(view_scenarios);
        return -1;
    }
    json_t *artifacts = json_object();
    json_object_set_new(artifacts, "task", json_string(task->name));
    json_object_set_new(artifacts, "backend", json_string(backend->name));
    char *cache = job->cache_dir ? kv_strdup(job->cache_dir) : kv_cache_dir_default();
    char *arch = NULL;
    kv_compiled cand = {0}, base = {0}, ref = {0}, helpers = {0};
    char *hash = NULL, *vkey = NULL, *sanitizer = NULL;
    char *cand_cl = NULL, *base_cl = NULL, *base_path = NULL;
    int rc = -1, device = job->device;
    char set[17];
    set_key(&view, task, set);
    /* The device first: the code is built for its architecture. */
    if (job->stage != 3 || kv_backend_has(backend, KV_CAP_MEMCHECK))
        if ((device = kv_device_bind(job, err)) < 0) goto out;
    if (kv_backend_has(backend, KV_CAP_ARCH) && !(arch = device_arch(job, backend, device, err)))
        goto out;
    if (job->stage == 3 && !kv_backend_has(backend, KV_CAP_MEMCHECK)) {
        json_t *metrics = json_pack("{s:f,s:i}", "combined_score", 1.0, "correct", 1);
        json_object_set_new(artifacts, "memcheck",
                            json_sprintf("skipped: no memcheck on %s", backend->name));
        *result = json_pack("{s:o,s:O}", "metrics", metrics, "artifacts", artifacts);
        rc = 0;
        goto out;
    }
    double compile_t0 = kv_now_s();
    int crc = kv_compile(backend, src, cache, arch, &cand, err);
    if (crc < 0) goto out;
    json_object_set_new(artifacts, "compile_seconds", json_real(kv_now_s() - compile_t0));
    json_object_set_new(artifacts, "compile_log", json_string(cand.log ? cand.log : ""));
    json_object_set_new(artifacts, "cache_key", json_string(cand.key));
    json_object_set_new(artifacts, "compile_cached", json_integer(cand.cached));
    if (crc == 1) {
        *result = rejected(kv_reason_name(KV_R_COMPILE_ERROR), cand.log, artifacts);
        rc = 0;
        goto out;
    }
    /* The same compiled code as a program judged earlier in this run: its
     * verdict, at the cost of this compile. */
    char *aerr = NULL;
    hash = kv_artifact_hash(backend, &cand, &aerr);
    if (!hash) {
        json_object_set_new(artifacts, "artifact_hash_error", json_string(aerr));
        free(aerr);
    } else {
        json_object_set_new(artifacts, "artifact_hash", json_string(hash));
    }
    if (hash && !job->compile_only) {
        vkey = kv_asprintf("%s-%s-%s-s%d-%s", task->name, backend->name,
                           job->quick ? "quick" : "full", job->stage, set);
        json_t *seen = kv_artifact_verdict_load(job->run_dir, vkey, hash);
        if (seen) {
            json_t *a = json_object_get(seen, "artifacts");
            json_object_set_new(a, "duplicate_of_artifact", json_string(hash));
            *result = seen;
            rc = 0;
            goto out;
        }
    }
    if (job->compile_only) {
        *result = json_pack("{s:{},s:O}", "metrics", "artifacts", artifacts);
        rc = 0;
        goto out;
    }
    int timing = job->stage != 1 && job->stage != 3;
    if (timing) {
        if (kv_compile_own(backend, kv_backend_source_for(backend, task->baselines), "the baseline",
                           cache, arch, &base, err) != 0)
            goto out;
        base_cl = device_source_file(&base);
    }
    /* The task's device reference (compiled once, then cached like the baseline). */
    int device_ref = kv_backend_has(backend, KV_CAP_DEVICE_REFERENCE) && task->reference_cuda &&
                     !job->cpu_reference;
    if (device_ref && kv_compile_own(backend, task->reference_cuda, "the device reference", cache,
                                     arch, &ref, err) != 0)
        goto out;
    if (backend->helpers && kv_compile_own(backend, backend->helpers, "the judge's kernels", cache,
                                           arch, &helpers, err) != 0)
        goto out;
    cand_cl = device_source_file(&cand);
    json_object_set_new(artifacts, "device_index", json_integer(device));
    /* Where a scheduler ran it: which job step, on which node. */
    if (getenv("SLURM_JOB_ID"))
        json_object_set_new(artifacts, "slurm",
                            json_pack("{s:s?,s:s?,s:s?}", "job", getenv("SLURM_JOB_ID"), "step",
                                      getenv("SLURM_STEP_ID"), "node", getenv("SLURMD_NODENAME")));
    if (timing) {
        /* Kept only where the candidate cannot reach the file (Landlock),
         * per device: speedups compare with the same device's baseline. The
         * judge reads and writes it with the device held (judge.h). */
        /* "graph": timed as recorded calls (KV_CAP_GRAPH); "switch": windows
         * less the device's switch to the runner (KV_CAP_SWITCH): unlike a
         * baseline kept before either, which is timed again. */
        char *key = kv_asprintf("%s-%s%d-%s-%s-%s%s%s", task->name, backend->name, device,
                                job->quick ? "quick" : "full", set, base.key,
                                kv_backend_has(backend, KV_CAP_GRAPH) ? "-graph" : "",
                                kv_backend_has(backend, KV_CAP_SWITCH) ? "-switch" : "");
        if (kv_landlock_abi() > 0) base_path = kv_baseline_path(job->run_dir, cache, key);
        free(key);
    }
    /* What the judge is handed of the builds: their shared objects and keys. */
    kv_judge_code cand_code = {cand.lib_path, cand.key}, base_code = {base.lib_path, base.key},
                  ref_code = {ref.lib_path, ref.key},
                  helpers_code = {helpers.lib_path, helpers.key};
    if (job->stage == 3) sanitizer = find_compute_sanitizer();
    kv_judge_ctx ctx = {.task = &view,
                        .job = job,
                        .backend = backend,
                        .device = device,
                        .cand = &cand_code,
                        .base = timing ? &base_code : NULL,
                        .ref = device_ref ? &ref_code : NULL,
                        .helpers = backend->helpers ? &helpers_code : NULL,
                        .sanitizer = sanitizer,
                        .self_exe = job->self_exe,
                        .baseline_path = base_path,
                        .device_src = cand_cl,
                        .base_device_src = base_cl,
                        .memcheck = job->stage == 3,
                        .cache = cache,
                        .seed = job->seed ? job->seed : unpredictable_seed()};
    kv_worker_outcome w;
    /* The judge gets what is left of the budget, less a reserve to report. */
    double left = kv_proc_time_left();
    double timeout = left - (left * 0.05 < 5 ? left * 0.05 : 5);
    if (timeout < 1) timeout = 1;
    /* The device's long-lived judge, where the evaluator runs one and the
     * job is not memcheck's (whose runner ends to report): it keeps, for
     * the jobs of one key, what it drew and measured for the first. */
    int wrc = 1;
    if (job->judge_fd >= 0 && !ctx.memcheck) {
        kv_judge_key key = {.run_dir = job->run_dir,
                            .backend = backend->name,
                            .device = device,
                            .task = task->name,
                            .scenario_set = set,
                            .quick = job->quick,
                            .call_s = job->limits.call_s,
                            .cpu_reference = job->cpu_reference,
                            .reference = device_ref ? ref.key : NULL,
                            .helpers = backend->helpers ? helpers.key : NULL,
                            .self_exe = job->self_exe};
        wrc = kv_judge_ask_server(&ctx, &key, timeout, &w);
    }
    if (wrc == 1) wrc = kv_worker_run(kv_judge_main, &ctx, timeout, &w, err);
    /* The judge let go when its device work ended, or when its candidate
     * failed; not when it died. */
    if (job->slot_fd >= 0) kv_slot_tell(job->slot_fd, KV_SLOT_FREE);
    if (wrc != 0) goto out;
    rc = verdict(job, &w, timeout, artifacts, result, err);
    if (*result) add_resources(json_object_get(*result, "metrics"), artifacts, &cand);
    /* A verdict the screen cut short is an estimate against one parent, and
     * one given on a device that reported errors may be the device's: not
     * kept. */
    if (*result && hash && vkey &&
        !json_object_get(json_object_get(*result, "metrics"), "screened_out") &&
        !json_object_get(json_object_get(*result, "artifacts"), "device_errors"))
        kv_artifact_verdict_save(job->run_dir, vkey, hash, *result);
    kv_worker_outcome_clear(&w);
out:
    free(hash);
    free(vkey);
    free(sanitizer);
    json_decref(artifacts);
    kv_compiled_clear(&cand);
    kv_compiled_clear(&base);
    kv_compiled_clear(&ref);
    kv_compiled_clear(&helpers);
    free(cand_cl);
    free(base_cl);
    free(base_path);
    free(cache);
    free(arch);
    free(src);
    free(view_scenarios);
    return rc;
}
