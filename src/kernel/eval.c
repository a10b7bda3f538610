/* The harness's entry (see harness.h): in the caller's process it reads and
 * compiles the candidate, the baseline, the task's device reference and the
 * judge's own kernels (cached), takes the device lock (waiting a bounded
 * time), runs the judge in a forked child (judge.h), which runs the
 * candidate in a sandboxed runner of its own, and turns the judge's report
 * into the evaluator's JSON. */
#include "kernel/harness.h"
#include "kernel/artifact.h"
#include "kernel/backend.h"
#include "kernel/baseline.h"
#include "kernel/compile.h"
#include "kernel/judge.h"
#include "kernel/sandbox.h"
#include "kernel/tasks.h"
#include "kernel/tool.h"
#include "kernel/worker.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/json.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void kv_kernel_opts_init(kv_kernel_opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = KV_BACKEND_CPU;
    o->total_timeout_s = 900;
    o->baseline_max_age_s = 900;
    o->lock_wait_s = 600;
}

const char *kv_backend_kind_name(kv_backend_kind k)
{
    switch (k) {
    case KV_BACKEND_CPU:
        return "cpu";
    case KV_BACKEND_OPENCL:
        return "opencl";
    case KV_BACKEND_CUDA:
        return "cuda";
    default:
        return "?";
    }
}

int kv_backend_kind_parse(const char *name, kv_backend_kind *out)
{
    for (int k = 0; k < KV_BACKEND_COUNT; k++)
        if (name && strcmp(name, kv_backend_kind_name((kv_backend_kind)k)) == 0) {
            *out = (kv_backend_kind)k;
            return 0;
        }
    return -1;
}

kv_backend_kind kv_backend_kind_for_path(const char *path)
{
    if (kv_ends_with(path, ".cu") || kv_ends_with(path, ".cuh")) return KV_BACKEND_CUDA;
    if (kv_ends_with(path, ".cl")) return KV_BACKEND_OPENCL;
    return KV_BACKEND_CPU;
}

/* Turns a child's "no_device"/"not_built" failure or death into *ERR. */
static char *outcome_error(const kv_worker_outcome *w, const char *what)
{
    if (w->fail_code)
        return kv_asprintf("%s: %s", w->fail_code, w->fail_detail ? w->fail_detail : "");
    if (w->timed_out) return kv_asprintf("%s: timed out", what);
    if (w->signal) return kv_asprintf("%s: killed by %s", what, kv_worker_signal_name(w->signal));
    return kv_asprintf("%s: worker exited with status %d", what, w->exit_code);
}

int kv_kernel_probe(kv_backend_kind backend, json_t **info, char **err)
{
    *info = NULL;
    kv_kernel_opts o;
    kv_kernel_opts_init(&o);
    kv_judge_ctx ctx = {.opts = &o, .kind = backend, .probe_only = 1};
    kv_worker_outcome w;
    if (kv_worker_run(kv_judge_main, &ctx, 120, &w, err) != 0) return -1;
    int rc = 0;
    if (w.result) {
        *info = json_incref(json_object_get(w.result, "device"));
    } else {
        const char *kind = backend == KV_BACKEND_CUDA     ? "no CUDA device"
                           : backend == KV_BACKEND_OPENCL ? "no OpenCL device"
                                                          : "no CPU device";
        char *why = outcome_error(&w, "probe");
        const char *d = w.fail_detail ? w.fail_detail : "";
        *err = w.fail_code && (strcmp(w.fail_code, "not_built") == 0 || kv_starts_with(d, kind))
                   ? kv_strdup(d)
                   : kv_asprintf("%s: %s", kind, why);
        free(why);
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
        static const char *keys[] = {"median_us",         "iqr_us",      "speedup",
                                     "roofline_fraction", "max_abs_err", "max_rel_err",
                                     "rel_l2_err",        "tol_ratio"};
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
    static const char *copy[] = {"scenarios",    "held_out", "device",        "profile_seconds",
                                 "isolation",    "baseline", "baseline_kept", "runner_output",
                                 "memcheck_log", "screened"};
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
    char *src = kv_read_file(path, NULL);
    if (!src) *err = kv_asprintf("cannot read %s: %s", path, strerror(errno));
    return src;
}

/* Opens (creating) CACHE/gpu.lock and takes it exclusively, waiting at most
 * WAIT_S seconds. Returns the descriptor (close-on-exec: no process started
 * later holds it), or -1 with *ERR ("device busy: ..."). Waiting is not
 * counted in the judge's deadline. */
static int take_lock(const char *cache, double wait_s, char **err)
{
    char *path = kv_asprintf("%s/gpu.lock", cache);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        *err = kv_asprintf("cannot open the device lock %s: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    double deadline = kv_now_s() + wait_s;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            *err = kv_asprintf("cannot lock %s: %s", path, strerror(errno));
            close(fd);
            free(path);
            return -1;
        }
        if (kv_now_s() >= deadline) {
            *err = kv_asprintf("device busy: another evaluation held %s for more than %.0f s", path,
                               wait_s);
            close(fd);
            free(path);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    free(path);
    return fd;
}

/* Compiles the task's own embedded source NAME (baseline, reference, the
 * judge's kernels) for BACKEND into C. */
static int compile_own(kv_backend_kind backend, const char *name, const char *what,
                       const char *cache, const char *arch, kv_compiled *c, char **err)
{
    const char *text = name ? kv_embedded_text(name) : NULL;
    if (!text) {
        *err = kv_asprintf("%s %s is not embedded in this binary", what, name ? name : "(none)");
        return -1;
    }
    if (kv_compile(backend, text, cache, arch, c, err) != 0) {
        if (!*err) *err = kv_asprintf("%s %s does not compile: %s", what, name, c->log);
        return -1;
    }
    return 0;
}

/* opencl: the device code of C, in a file beside its shared object, for the
 * runner to build (malloc'd path), or NULL. */
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

/* The kevolve binary the runners re-execute. */
static const char *self_exe(const kv_kernel_opts *o)
{
    if (o->self_exe) return o->self_exe;
    const char *env = getenv("KEVOLVE_BINARY");
    return env && *env ? env : NULL; /* NULL: /proc/self/exe */
}

/* Turns the judge's outcome W into *RESULT (a verdict), or *ERR for the
 * harness's own failures. Returns 0 or -1. */
static int verdict(const kv_kernel_opts *o, kv_worker_outcome *w, double timeout, json_t *artifacts,
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
        *result = accepted(o->stage, w->result, artifacts);
        return 0;
    }
    if (w->fail_code &&
        (strcmp(w->fail_code, "no_device") == 0 || strcmp(w->fail_code, "not_built") == 0 ||
         strcmp(w->fail_code, "harness_error") == 0)) {
        *err = kv_asprintf("%s: %s", w->fail_code, w->fail_detail ? w->fail_detail : "");
        return -1;
    }
    if (w->fail_code) {
        *result = rejected(w->fail_code, w->fail_detail, artifacts);
        return 0;
    }
    /* The judge itself died or overran: the harness's failure, not a verdict
     * on the candidate (whose process is a runner the judge watches). */
    if (w->timed_out)
        *err = kv_asprintf("harness_error: the judge exceeded its %g s limit during %s", timeout,
                           w->phase ? w->phase : "startup");
    else
        *err = kv_asprintf("harness_error: the judge died (%s %d) during %s",
                           w->signal ? kv_worker_signal_name(w->signal) : "exit",
                           w->signal ? 0 : w->exit_code, w->phase ? w->phase : "startup");
    return -1;
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

int kv_kernel_eval(const kv_kernel_opts *o, json_t **result, char **err)
{
    *result = NULL;
    const kv_task *task = kv_task_find(o->task);
    if (!task) {
        kv_buf names = KV_BUF_INIT;
        for (size_t i = 0; kv_task_at(i); i++)
            kv_buf_printf(&names, "%s%s", i ? ", " : "", kv_task_at(i)->name);
        *err = kv_asprintf("unknown task '%s' (known: %s)", o->task ? o->task : "", names.data);
        kv_buf_free(&names);
        return -1;
    }
    if (!o->candidate) {
        *err = kv_strdup("no candidate file given");
        return -1;
    }
    char *src = read_source(o->candidate, err);
    if (!src) return -1;
    json_t *artifacts = json_object();
    json_object_set_new(artifacts, "task", json_string(task->name));
    json_object_set_new(artifacts, "backend", json_string(kv_backend_kind_name(o->backend)));
    char *cache = o->cache_dir ? kv_strdup(o->cache_dir) : kv_cache_dir_default();
    char *arch = o->arch ? kv_strdup(o->arch) : NULL;
    kv_compiled cand = {0}, base = {0}, ref = {0}, helpers = {0};
    char *hash = NULL, *vkey = NULL;
    json_t *parent = NULL;
    char *cand_cl = NULL, *base_cl = NULL, *base_path = NULL;
    json_t *kept = NULL;
    int lock = -1, rc = -1;
    if (o->backend == KV_BACKEND_CUDA && !(o->compile_only && arch)) {
        json_t *info = NULL;
        if (kv_kernel_probe(KV_BACKEND_CUDA, &info, err) != 0) goto out;
        if (!arch) arch = kv_strdup(json_string_value(json_object_get(info, "arch")));
        json_decref(info);
    }
    if (o->stage == 3 && o->backend != KV_BACKEND_CUDA) {
        json_t *metrics = json_pack("{s:f,s:i}", "combined_score", 1.0, "correct", 1);
        json_object_set_new(artifacts, "memcheck", json_string("skipped: cuda only"));
        *result = json_pack("{s:o,s:O}", "metrics", metrics, "artifacts", artifacts);
        rc = 0;
        goto out;
    }
    int crc = kv_compile(o->backend, src, cache, arch, &cand, err);
    if (crc < 0) goto out;
    json_object_set_new(artifacts, "compile_log", json_string(cand.log ? cand.log : ""));
    json_object_set_new(artifacts, "cache_key", json_string(cand.key));
    json_object_set_new(artifacts, "compile_cached", json_integer(cand.cached));
    if (crc == 1) {
        *result = rejected("compile_error", cand.log, artifacts);
        rc = 0;
        goto out;
    }
    /* The same compiled code as a program judged earlier in this run: its
     * verdict, at the cost of this compile. */
    char *aerr = NULL;
    hash = kv_artifact_hash(o->backend, &cand, &aerr);
    if (!hash) {
        json_object_set_new(artifacts, "artifact_hash_error", json_string(aerr));
        free(aerr);
    } else {
        json_object_set_new(artifacts, "artifact_hash", json_string(hash));
    }
    if (hash && !o->compile_only) {
        vkey = kv_asprintf("%s-%s-%s-s%d", task->name, kv_backend_kind_name(o->backend),
                           o->quick ? "quick" : "full", o->stage);
        json_t *seen = kv_artifact_verdict_load(vkey, hash);
        if (seen) {
            json_t *a = json_object_get(seen, "artifacts");
            json_object_set_new(a, "duplicate_of_artifact", json_string(hash));
            *result = seen;
            rc = 0;
            goto out;
        }
    }
    if (o->compile_only) {
        *result = json_pack("{s:{},s:O}", "metrics", "artifacts", artifacts);
        rc = 0;
        goto out;
    }
    int timing = o->stage != 1 && o->stage != 3;
    if (timing) {
        if (compile_own(o->backend, task->baseline[o->backend], "the baseline", cache, arch, &base,
                        err) != 0)
            goto out;
        base_cl = device_source_file(&base);
        /* Kept only where the candidate cannot reach the file (Landlock). */
        char *key = kv_asprintf("%s-%s-%s-%s", task->name, kv_backend_kind_name(o->backend),
                                o->quick ? "quick" : "full", base.key);
        base_path = kv_baseline_path(cache, key);
        free(key);
        if (kv_landlock_abi() > 0 && !o->fresh_baseline)
            kept = kv_baseline_load(base_path, o->baseline_max_age_s);
    }
    /* The task's GPU reference (compiled once, then cached like the baseline). */
    int device_ref = o->backend == KV_BACKEND_CUDA && task->reference_cuda && !o->cpu_reference;
    if (device_ref && compile_own(o->backend, task->reference_cuda, "the device reference", cache,
                                  arch, &ref, err) != 0)
        goto out;
    if (o->backend == KV_BACKEND_CUDA &&
        compile_own(o->backend, "src/kernel/cuda/judge_kernels.cu", "the judge's kernels", cache,
                    arch, &helpers, err) != 0)
        goto out;
    cand_cl = device_source_file(&cand);
    if (timing && o->parent_metrics) {
        char *text = kv_read_file(o->parent_metrics, NULL);
        parent = text ? kv_json_loads(text) : NULL;
        free(text);
        if (parent && !json_is_object(parent)) {
            json_decref(parent);
            parent = NULL;
        }
    }
    lock = take_lock(cache, o->lock_wait_s > 0 ? o->lock_wait_s : 600, err);
    if (lock < 0) goto out;
    kv_judge_ctx ctx = {.task = task,
                        .opts = o,
                        .kind = o->backend,
                        .cand = &cand,
                        .base = timing ? &base : NULL,
                        .ref = device_ref ? &ref : NULL,
                        .helpers = o->backend == KV_BACKEND_CUDA ? &helpers : NULL,
                        .self_exe = self_exe(o),
                        .baseline = kept,
                        .device_src = cand_cl,
                        .base_device_src = base_cl,
                        .memcheck = o->stage == 3,
                        .parent = parent,
                        .seed = o->seed ? o->seed : unpredictable_seed()};
    kv_worker_outcome w;
    double timeout = o->total_timeout_s > 0 ? o->total_timeout_s : 900;
    int wrc = kv_worker_run(kv_judge_main, &ctx, timeout, &w, err);
    close(lock);
    lock = -1;
    if (wrc != 0) goto out;
    json_t *fresh = w.result ? json_object_get(w.result, "baseline") : NULL;
    if (fresh && base_path && kv_landlock_abi() > 0) kv_baseline_save(base_path, fresh);
    rc = verdict(o, &w, timeout, artifacts, result, err);
    if (*result) add_resources(json_object_get(*result, "metrics"), artifacts, &cand);
    /* A verdict the screen cut short is an estimate against one parent: not kept. */
    if (*result && hash && vkey &&
        !json_object_get(json_object_get(*result, "metrics"), "screened_out"))
        kv_artifact_verdict_save(vkey, hash, *result);
    kv_worker_outcome_clear(&w);
out:
    if (lock >= 0) close(lock);
    if (kept) json_decref(kept);
    if (parent) json_decref(parent);
    free(hash);
    free(vkey);
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
    return rc;
}
