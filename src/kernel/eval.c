/* The harness's entry (see harness.h): in the caller's process it reads and
 * compiles the candidate and the baseline (cached), takes the device lock,
 * runs the worker child, and turns what the child reported into the
 * evaluator's JSON. */
#include "kernel/harness.h"
#include "kernel/backend.h"
#include "kernel/compile.h"
#include "kernel/run.h"
#include "kernel/tasks.h"
#include "kernel/tool.h"
#include "kernel/worker.h"
#include "util/buf.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

void kv_kernel_opts_init(kv_kernel_opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = KV_BACKEND_CPU;
    o->total_timeout_s = 900;
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
    kv_run_ctx ctx = {.opts = &o, .kind = backend, .probe_only = 1};
    kv_worker_outcome w;
    if (kv_worker_run(kv_run_child, &ctx, 120, &w, err) != 0) return -1;
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

/* Builds the final JSON from the child's result. */
static json_t *accepted(const kv_task *task, int stage, json_t *res, json_t *artifacts)
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
        static const char *keys[] = {"median_us",   "iqr_us",      "speedup",   "roofline_fraction",
                                     "max_abs_err", "max_rel_err", "rel_l2_err"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            json_t *v = json_object_get(s, keys[k]);
            if (!v) continue;
            char *key = kv_asprintf("%s_%s", name, keys[k]);
            json_object_set(metrics, key, v);
            free(key);
        }
        json_t *sp = json_object_get(s, "speedup");
        if (sp) {
            double w = task->scenarios[i].weight > 0 ? task->scenarios[i].weight : 1.0;
            logsum += w * log(json_number_value(sp));
            wsum += w;
            timed = 1;
        }
    }
    double score = stage == 1 || !timed ? 1.0 : exp(logsum / wsum);
    json_object_set_new(metrics, "combined_score", json_real(score));
    json_object_set_new(metrics, "correct", json_integer(1));
    if (timed) json_object_set_new(metrics, "speedup", json_real(exp(logsum / wsum)));
    json_object_set_new(artifacts, "verdict", json_string("correct"));
    json_object_set(artifacts, "scenarios", scen);
    json_object_set(artifacts, "held_out", json_object_get(res, "held_out"));
    json_object_set(artifacts, "device", json_object_get(res, "device"));
    json_t *prof = json_object_get(res, "profile_seconds");
    if (prof) json_object_set(artifacts, "profile_seconds", prof);
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

/* Runs compute-sanitizer memcheck on a correctness-only evaluation of the
 * candidate (stage 3, cuda). */
static int memcheck_stage(const kv_kernel_opts *o, json_t *artifacts, json_t **result, char **err)
{
    char *cs = kv_tool_which("compute-sanitizer");
    if (!cs) {
        char *nvcc = kv_find_nvcc();
        if (nvcc) {
            char *dir = kv_path_dirname(nvcc);
            char *p = kv_asprintf("%s/compute-sanitizer", dir);
            if (access(p, X_OK) == 0)
                cs = p;
            else
                free(p);
            free(dir);
            free(nvcc);
        }
    }
    if (!cs) {
        *err = kv_strdup("compute-sanitizer not found");
        return -1;
    }
    /* The path of this binary, resolved here: "/proc/self/exe" handed to
     * compute-sanitizer would name compute-sanitizer itself. */
    char self[4096];
    const char *exe = o->self_exe;
    if (!exe) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            free(cs);
            *err = kv_asprintf("cannot find the kevolve binary: %s", strerror(errno));
            return -1;
        }
        self[n] = '\0';
        exe = self;
    }
    /* The CPU reference: memcheck slows a device reference as much as the
     * candidate, and the check is of the candidate. */
    char *argv[] = {cs,     "--tool",  "memcheck",        "--error-exitcode",   "86",   (char *)exe,
                    "eval", "--task",  (char *)o->task,   "--backend",          "cuda", "--stage",
                    "1",    "--quick", "--cpu-reference", (char *)o->candidate, NULL};
    char *out = NULL;
    setenv("KEVOLVE_WORKER_INLINE", "1", 1); /* memcheck follows one process */
    int rc = kv_tool_run(argv, o->total_timeout_s, &out);
    unsetenv("KEVOLVE_WORKER_INLINE");
    free(cs);
    size_t len = strlen(out);
    json_object_set_new(artifacts, "memcheck_log",
                        json_string(len > 20000 ? out + len - 20000 : out));
    if (rc == 86 || (rc != 0 && strstr(out, "========= Invalid"))) {
        const char *first = strstr(out, "========= Invalid");
        char *line = kv_strndup(first ? first : out, 300);
        *result = rejected("memcheck_error", line, artifacts);
        free(line);
    } else if (rc != 0) {
        *err = kv_asprintf("compute-sanitizer failed (status %d): %.500s", rc, out);
        free(out);
        return -1;
    } else {
        json_t *metrics =
            json_pack("{s:f,s:i,s:i}", "combined_score", 1.0, "correct", 1, "memcheck_clean", 1);
        json_object_set_new(artifacts, "verdict", json_string("correct"));
        *result = json_pack("{s:o,s:O}", "metrics", metrics, "artifacts", artifacts);
    }
    free(out);
    return 0;
}

/* Opens (creating) CACHE/gpu.lock and takes it exclusively; returns the fd
 * or -1. Waiting is not counted in the worker's deadline. */
static int take_lock(const char *cache)
{
    char *path = kv_asprintf("%s/gpu.lock", cache);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    free(path);
    if (fd < 0) return -1;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
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
    kv_compiled cand = {0}, base = {0}, ref = {0};
    int rc = -1;
    if (o->backend == KV_BACKEND_CUDA) {
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
    if (o->stage == 3) {
        rc = memcheck_stage(o, artifacts, result, err);
        goto out;
    }
    if (o->stage != 1) {
        const char *bname = task->baseline[o->backend];
        const char *btext = bname ? kv_embedded_text(bname) : NULL;
        if (!btext) {
            *err = kv_asprintf("task %s has no %s baseline", task->name,
                               kv_backend_kind_name(o->backend));
            goto out;
        }
        if (kv_compile(o->backend, btext, cache, arch, &base, err) != 0) {
            if (!*err) *err = kv_asprintf("the %s baseline does not compile: %s", bname, base.log);
            goto out;
        }
    }
    /* The task's GPU reference (compiled once, then cached like the baseline). */
    int device_ref = o->backend == KV_BACKEND_CUDA && task->reference_cuda && !o->cpu_reference;
    if (device_ref) {
        const char *rtext = kv_embedded_text(task->reference_cuda);
        if (!rtext) {
            *err = kv_asprintf("task %s: its device reference %s is not embedded", task->name,
                               task->reference_cuda);
            goto out;
        }
        if (kv_compile(o->backend, rtext, cache, arch, &ref, err) != 0) {
            if (!*err)
                *err = kv_asprintf("the device reference %s does not compile: %s",
                                   task->reference_cuda, ref.log);
            goto out;
        }
    }
    int lock = take_lock(cache);
    kv_run_ctx ctx = {.task = task,
                      .opts = o,
                      .kind = o->backend,
                      .cand = &cand,
                      .base = o->stage == 1 ? NULL : &base,
                      .ref = device_ref ? &ref : NULL,
                      .seed =
                          o->seed ? o->seed : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32)};
    kv_worker_outcome w;
    double timeout = o->total_timeout_s > 0 ? o->total_timeout_s : 900;
    int wrc = kv_worker_run(kv_run_child, &ctx, timeout, &w, err);
    if (lock >= 0) close(lock);
    if (wrc != 0) goto out;
    if (w.phase) json_object_set_new(artifacts, "last_phase", json_string(w.phase));
    json_object_set_new(artifacts, "worker_seconds", json_real(w.seconds));
    if (w.fail_extra) {
        const char *k;
        json_t *v;
        json_object_foreach(w.fail_extra, k, v) json_object_set(artifacts, k, v);
    }
    if (w.result) {
        *result = accepted(task, o->stage, w.result, artifacts);
        rc = 0;
    } else if (w.fail_code &&
               (strcmp(w.fail_code, "no_device") == 0 || strcmp(w.fail_code, "not_built") == 0 ||
                strcmp(w.fail_code, "harness_error") == 0)) {
        *err = kv_asprintf("%s: %s", w.fail_code, w.fail_detail ? w.fail_detail : "");
    } else if (w.fail_code) {
        *result = rejected(w.fail_code, w.fail_detail, artifacts);
        rc = 0;
    } else if (w.timed_out) {
        char *d = kv_asprintf("the worker exceeded its %g s limit during %s", timeout,
                              w.phase ? w.phase : "startup");
        *result = rejected("timeout", d, artifacts);
        free(d);
        rc = 0;
    } else {
        char code[64];
        if (w.signal)
            snprintf(code, sizeof code, "crash: %s", kv_worker_signal_name(w.signal));
        else
            snprintf(code, sizeof code, "crash: exit %d", w.exit_code);
        char *d =
            kv_asprintf("the worker died (%s) during %s", code, w.phase ? w.phase : "startup");
        *result = rejected(code, d, artifacts);
        free(d);
        rc = 0;
    }
    if (*result) add_resources(json_object_get(*result, "metrics"), artifacts, &cand);
    kv_worker_outcome_clear(&w);
out:
    json_decref(artifacts);
    kv_compiled_clear(&cand);
    kv_compiled_clear(&base);
    kv_compiled_clear(&ref);
    free(cache);
    free(arch);
    free(src);
    return rc;
}
