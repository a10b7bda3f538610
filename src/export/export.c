/* kevolve export (see export.h): the plan from the run, the library's files
 * in a folder of their own beside DIR, the library judged as a candidate of
 * the task, the PyTorch package and its timing against the standard kernel
 * when asked, and only then the folder renamed to DIR. */
#include "export/export_internal.h"
#include "kernel/harness.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/proc.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int kvx_put_file(const char *dir, const char *name, const char *text, char **err)
{
    char *path = kv_path_join(dir, name);
    char *folder = kv_path_dirname(path);
    int rc = kv_mkdir_p(folder, 0755) == 0 && kv_write_file(path, text, strlen(text)) == 0 ? 0 : -1;
    if (rc != 0) *err = kv_asprintf("cannot write %s: %s", path, strerror(errno));
    free(folder);
    free(path);
    return rc;
}

/* The headers the library's source includes: <kevolve/task.h> and the
 * task's own headers (its folder's *.cuh), under DIR/include. */
static int put_headers(const kvx_plan *p, const char *dir, char **err)
{
    if (kvx_put_file(dir, "include/kevolve/task.h", kv_embedded_text("include/kevolve/task.h"),
                     err))
        return -1;
    const char *base = p->task->baselines ? p->task->baselines[0] : NULL;
    size_t folder = base ? strcspn(base, "/") + 1 : 0;
    const char *name;
    for (size_t i = 0; base && (name = kv_embedded_name(i)); i++) {
        size_t n = strlen(name);
        if (strncmp(name, base, folder) != 0 || n < 4 || strcmp(name + n - 4, ".cuh") != 0)
            continue;
        char *rel = kv_asprintf("include/%s", name);
        int rc = kvx_put_file(dir, rel, kv_embedded_text(name), err);
        free(rel);
        if (rc) return -1;
    }
    return 0;
}

/* The manifest: where each variant came from and what serves each scenario. */
static json_t *manifest(const kvx_plan *p, const kv_export_opts *o, const char *source,
                        const json_t *check)
{
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *m = json_pack("{s:s,s:s,s:s?,s:s,s:s,s:s?,s:s,s:s,s:O,s:s}", "kevolve_version",
                          KV_VERSION, "created_at", stamp, "run", o->run, "task", p->task->name,
                          "backend", p->backend->name, "device", p->device, "entry", kvx_entry(p),
                          "source", source, "check", check, "rule", kvx_rule);
    /* Which PyTorch tensors the entry point can take (null: none). */
    json_object_set_new(m, "torch_device",
                        p->backend->torch_device ? json_string(p->backend->torch_device)
                                                 : json_null());
    char *lib = kv_asprintf("lib/lib%s.so", kvx_entry(p));
    char *header = kv_asprintf("%s.h", kvx_entry(p));
    json_object_set_new(m, "signature", kvx_signature(p->task));
    json_object_set_new(m, "library", json_string(lib));
    json_object_set_new(m, "header", json_string(header));
    free(lib);
    free(header);
    json_t *vars = json_array();
    for (size_t v = 0; v < p->n_variants; v++) {
        char hex[17];
        kv_hash_hex(p->variants[v].code_hash, hex);
        json_array_append_new(vars,
                              json_pack("{s:i,s:I,s:s}", "index", (int)v, "program_id",
                                        (json_int_t)p->variants[v].program_id, "code_hash", hex));
    }
    json_object_set_new(m, "variants", vars);
    json_t *scen = json_array();
    for (size_t i = 0; i < p->n_choices; i++) {
        const kvx_choice *c = &p->choices[i];
        const kvx_choice *s = &p->choices[c->served];
        const kvx_variant *var = &p->variants[s->variant];
        char hex[17];
        kv_hash_hex(var->code_hash, hex);
        json_t *syms = json_object();
        for (int k = 0; k < p->task->num_syms; k++)
            json_object_set_new(syms, p->task->syms[k], json_integer(c->shape->syms[k]));
        const char *tags = c->shape->tags ? c->shape->tags : "";
        char kind[64];
        snprintf(kind, sizeof kind, "%.*s", (int)strcspn(tags, ","), tags);
        json_t *e = json_pack("{s:s,s:s,s:o,s:i,s:I,s:s,s:b,s:s,s:s}", "name", c->shape->name,
                              "kind", kind, "syms", syms, "variant", s->variant, "program_id",
                              (json_int_t)var->program_id, "code_hash", hex, "timed_in_run",
                              c->variant >= 0, "served_by", s->shape->name, "use", "evolved");
        static const char *const keys[] = {"median_us", "iqr_us", "speedup", "baseline_us",
                                           "roofline_fraction"};
        for (size_t k = 0; c->row && k < sizeof keys / sizeof keys[0]; k++) {
            json_t *v = json_object_get(c->row, keys[k]);
            if (v) json_object_set(e, keys[k], v);
        }
        json_object_set_new(e, "standard_us", json_null());
        json_array_append_new(scen, e);
    }
    json_object_set_new(m, "scenarios", scen);
    /* The shapes checked for correctness only: an export is judged there too. */
    json_t *held = json_array();
    for (int i = 0; i < p->task->num_held_out; i++) {
        const kv_shape *h = &p->task->held_out[i];
        json_t *syms = json_object();
        for (int k = 0; k < p->task->num_syms; k++)
            json_object_set_new(syms, p->task->syms[k], json_integer(h->syms[k]));
        json_array_append_new(held, json_pack("{s:s,s:o}", "name", h->name, "syms", syms));
    }
    json_object_set_new(m, "held_out", held);
    return m;
}

/* Judges the library's source SOURCE (in DIR) as a candidate of the task:
 * every scenario and the held-out shapes, correctness (or, with
 * compile_only, that it compiles). Returns the check's record, or NULL
 * with *ERR (a failed check or a harness that cannot judge). *LIB gets the
 * compiled shared object (malloc'd). */
static json_t *check(const kvx_plan *p, const kv_export_opts *o, const char *source, char **lib,
                     char **err)
{
    *lib = NULL;
    kv_job job;
    kv_job_init(&job);
    job.task = p->task->name;
    job.backend = p->backend->name;
    job.candidate = source;
    job.stage = 1; /* correctness on every scenario and held-out shape */
    job.quick = o->quick;
    job.compile_only = o->compile_only;
    job.cache_dir = o->cache_dir;
    job.arch = o->arch;
    job.self_exe = o->self_exe;
    if (o->compile_only && !o->arch && kv_backend_has(p->backend, KV_CAP_ARCH)) {
        *err = kv_asprintf("--compile-only on %s needs --arch (no device to ask for its "
                           "architecture)",
                           p->backend->name);
        return NULL;
    }
    json_t *res = NULL;
    char *why = NULL;
    double t0 = kv_now_s();
    if (kv_kernel_eval(&job, &res, &why) != 0) {
        *err = kv_asprintf("cannot judge the exported library: %s%s", why ? why : "harness error",
                           o->compile_only ? ""
                                           : " (on a machine without the device, --compile-only "
                                             "checks that it compiles)");
        free(why);
        return NULL;
    }
    const json_t *a = json_object_get(res, "artifacts");
    const char *verdict = json_string_value(json_object_get(a, "verdict"));
    if (verdict && strcmp(verdict, "rejected") == 0) {
        *err = kv_asprintf("the exported library fails as a candidate of %s: %s: %.600s",
                           p->task->name, json_string_value(json_object_get(a, "reason")),
                           json_string_value(json_object_get(a, "reason_detail")));
        json_decref(res);
        return NULL;
    }
    char *cache = o->cache_dir ? kv_strdup(o->cache_dir) : kv_cache_dir_default();
    *lib = kv_asprintf("%s/%s.so", cache, json_string_value(json_object_get(a, "cache_key")));
    free(cache);
    json_t *rec =
        json_pack("{s:s,s:i,s:b,s:b,s:f}", "verdict",
                  o->compile_only ? "compiled (not run: --compile-only)" : "correct", "stage", 1,
                  "quick", o->quick, "compile_only", o->compile_only, "seconds", kv_now_s() - t0);
    /* Each held-out shape's worst error, over what the tolerance allows. */
    json_t *held = json_object();
    size_t i;
    const json_t *h;
    json_array_foreach(json_object_get(a, "held_out"), i, h) json_object_set(
        held, json_string_value(json_object_get(h, "name")), json_object_get(h, "tol_ratio"));
    json_object_set_new(rec, "held_out_tol_ratio", held);
    json_decref(res);
    return rec;
}

/* Copies FROM to TO. Returns 0, or -1 with *ERR. */
static int copy_file(const char *from, const char *to, char **err)
{
    size_t n = 0;
    char *data = kv_read_file(from, &n);
    char *dir = kv_path_dirname(to);
    int rc = data && kv_mkdir_p(dir, 0755) == 0 && kv_write_file(to, data, n) == 0 ? 0 : -1;
    if (rc != 0) *err = kv_asprintf("cannot copy %s to %s: %s", from, to, strerror(errno));
    free(dir);
    free(data);
    return rc;
}

/* Times the library against PyTorch's SDPA (cuDNN and flash) on every
 * scenario in DIR's PyTorch package, and records in MANIFEST (and its
 * file) each scenario's standard time and which to call. Returns 0, or -1
 * with *ERR. */
static int against_standard(const kv_export_opts *o, const char *dir, json_t *m, char **err)
{
    char *script = kv_path_join(dir, "torch/against_standard.py");
    char *result = kv_path_join(dir, "standard.json");
    char *argv[] = {(char *)(o->python ? o->python : "python3"), script, (char *)dir, result, NULL};
    kv_proc_spec spec = {.argv = argv, .timeout_s = 3600, .max_output = 1 << 20};
    kv_proc *proc = kv_proc_run(&spec, err);
    int rc = -1;
    if (proc && kv_proc_how(proc) == KV_PROC_EXITED && kv_proc_exit_code(proc) == 0) {
        char *text = kv_read_file(result, NULL);
        json_t *std = text ? kv_json_loads(text) : NULL;
        free(text);
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(m, "scenarios"), i, e)
        {
            json_t *t = json_object_get(std, json_string_value(json_object_get(e, "name")));
            if (!t) continue;
            const char *keys[] = {"evolved_us",  "cudnn_us", "flash_us",
                                  "standard_us", "use",      "standard_backend"};
            for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
                if (json_object_get(t, keys[k]))
                    json_object_set(e, keys[k], json_object_get(t, keys[k]));
        }
        json_object_set_new(m, "against_standard",
                            std ? json_incref(json_object_get(std, "_about")) : json_null());
        rc = std ? 0 : -1;
        if (!std) *err = kv_asprintf("%s wrote no readable %s", script, result);
        json_decref(std);
    } else if (proc) {
        const char *tail = kv_proc_stderr(proc);
        size_t n = strlen(tail);
        *err = kv_asprintf("timing against the standard kernel failed (%s): %s",
                           kv_proc_describe(proc), n > 1500 ? tail + n - 1500 : tail);
    }
    kv_proc_free(proc);
    free(script);
    free(result);
    return rc;
}

/* 1 when DIR exists and holds anything. */
static int non_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int any = 0;
    while (!any && (e = readdir(d)))
        any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return any;
}

int kv_export(kv_store *store, const kv_export_opts *o, char **err)
{
    *err = NULL;
    struct stat st;
    if (stat(o->out_dir, &st) == 0 &&
        (!S_ISDIR(st.st_mode) || (non_empty(o->out_dir) && !o->force))) {
        *err = kv_asprintf("%s %s: export into a new or empty folder, or add --force to replace it",
                           o->out_dir, S_ISDIR(st.st_mode) ? "is not empty" : "is not a folder");
        return -1;
    }
    kvx_plan p;
    if (kvx_plan_read(store, o, &p, err) != 0) {
        kvx_plan_free(&p);
        return -1;
    }
    if (o->against_standard && !kvx_gqa_shaped(p.task)) {
        *err = kv_asprintf("--against-standard times attention against SDPA; %s is not an "
                           "attention task (export with --torch)",
                           p.task->name);
        kvx_plan_free(&p);
        return -1;
    }
    char *tmp = kv_asprintf("%s.kevolve-export-%d", o->out_dir, (int)getpid());
    kv_remove_tree(tmp);
    char *name = kv_asprintf("%s%s", kvx_entry(&p), p.backend->suffixes[0]);
    char *source_path = kv_path_join(tmp, name);
    char *text = kvx_source(&p, err), *header = NULL, *lib = NULL, *mtext = NULL;
    json_t *rec = NULL, *m = NULL;
    int rc = -1;
    if (!text || kv_mkdir_p(tmp, 0755) != 0) {
        if (text) *err = kv_asprintf("cannot make %s: %s", tmp, strerror(errno));
        goto out;
    }
    header = kvx_header(&p);
    char *header_name = kv_asprintf("%s.h", kvx_entry(&p));
    int wrc = kvx_put_file(tmp, name, text, err) || kvx_put_file(tmp, header_name, header, err) ||
              put_headers(&p, tmp, err);
    free(header_name);
    if (wrc) goto out;
    if (!(rec = check(&p, o, source_path, &lib, err))) goto out;
    char *lib_dest = kv_asprintf("%s/lib/lib%s.so", tmp, kvx_entry(&p));
    wrc = copy_file(lib, lib_dest, err);
    free(lib_dest);
    if (wrc) goto out;
    m = manifest(&p, o, name, rec);
    if ((o->torch || o->against_standard) && kvx_write_torch(&p, tmp, err) != 0) goto out;
    mtext = json_dumps(m, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    if (kvx_put_file(tmp, "manifest.json", mtext, err) != 0) goto out;
    if (o->against_standard) {
        if (against_standard(o, tmp, m, err) != 0) goto out;
        /* The operator built for the timing links to TMP's library by its
         * path: the first use in DIR builds it again there. */
        char *build = kv_asprintf("%s/torch/build", tmp);
        kv_remove_tree(build);
        free(build);
        free(mtext);
        mtext = json_dumps(m, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        if (kvx_put_file(tmp, "manifest.json", mtext, err) != 0) goto out;
    }
    if (stat(o->out_dir, &st) == 0 && kv_remove_tree(o->out_dir) != 0) {
        *err = kv_asprintf("cannot replace %s: %s", o->out_dir, strerror(errno));
        goto out;
    }
    if (rename(tmp, o->out_dir) != 0) {
        *err = kv_asprintf("cannot move %s to %s: %s", tmp, o->out_dir, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (rc != 0) kv_remove_tree(tmp);
    json_decref(rec);
    json_decref(m);
    free(mtext);
    free(lib);
    free(header);
    free(text);
    free(source_path);
    free(name);
    free(tmp);
    kvx_plan_free(&p);
    return rc;
}
