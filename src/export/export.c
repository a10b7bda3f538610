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

/* The headers the library's source includes: <kevolve/task.h>,
 * <kevolve/bf16.h> (the bf16 tasks' programs use it) and the task's own
 * headers (its folder's *.cuh), under DIR/include. */
static int put_headers(const kvx_plan *p, const char *dir, char **err)
{
    static const char *const abi[] = {"include/kevolve/task.h", "include/kevolve/bf16.h"};
    for (size_t i = 0; i < sizeof abi / sizeof abi[0]; i++) {
        const char *text = kv_embedded_text(abi[i]);
        if (text && kvx_put_file(dir, abi[i], text, err)) return -1;
    }
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
            const char *keys[] = {
                "evolved_us",       "cudnn_us",         "flash_us",       "standard_us",   "use",
                "standard_backend", "evolved_model_us", "cudnn_model_us", "flash_model_us"};
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

/* Whether O's interpreter has PyTorch and PyTorch a GPU: asked before
 * the library is judged, which takes a while. Returns 0, or
 * KV_EXPORT_REFUSED with *ERR. */
static int torch_with_gpu(const kv_export_opts *o, char **err)
{
    const char *py = o->python ? o->python : "python3";
    char *argv[] = {(char *)py, "-c",
                    "import sys\n"
                    "try:\n    import torch\nexcept Exception:\n    sys.exit(3)\n"
                    "sys.exit(0 if torch.cuda.is_available() else 4)\n",
                    NULL};
    kv_proc_spec spec = {.argv = argv, .timeout_s = 300, .max_output = 1 << 16};
    char *why = NULL;
    kv_proc *proc = kv_proc_run(&spec, &why);
    int code = proc && kv_proc_how(proc) == KV_PROC_EXITED ? kv_proc_exit_code(proc) : -1;
    if (code == 3)
        *err = kv_asprintf("--against-standard needs PyTorch in %s (--python names another "
                           "interpreter)",
                           py);
    else if (code == 4)
        *err = kv_asprintf("--against-standard needs a CUDA GPU, and PyTorch in %s sees none", py);
    else if (code != 0)
        *err = kv_asprintf("--against-standard: cannot ask %s for PyTorch: %s", py,
                           proc  ? kv_proc_describe(proc)
                           : why ? why
                                 : "cannot run it");
    free(why);
    kv_proc_free(proc);
    return code == 0 ? 0 : KV_EXPORT_REFUSED;
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

/* Calls FN on every entry under ROOT/REL ("" for ROOT itself), folders
 * before what they hold, names in byte order, until FN returns nonzero
 * (returned). -1 when a folder cannot be read. */
typedef int (*walk_fn)(const char *rel, int is_dir, void *ud);
static int walk(const char *root, const char *rel, walk_fn fn, void *ud)
{
    char *dir = *rel ? kv_path_join(root, rel) : kv_strdup(root);
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort), rc = n < 0 ? -1 : 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (rc == 0 && strcmp(name, ".") && strcmp(name, "..")) {
            char *sub = *rel ? kv_asprintf("%s/%s", rel, name) : kv_strdup(name);
            char *full = kv_path_join(root, sub);
            struct stat st;
            int is_dir = lstat(full, &st) == 0 && S_ISDIR(st.st_mode);
            rc = fn(sub, is_dir, ud);
            if (rc == 0 && is_dir) rc = walk(root, sub, fn, ud);
            free(full);
            free(sub);
        }
        free(names[i]);
    }
    free(names);
    free(dir);
    return rc;
}

static int add_file(const char *rel, int is_dir, void *ud)
{
    if (!is_dir) json_array_append_new(ud, json_string(rel));
    return 0;
}

/* What an earlier export wrote in a folder, from its manifest M: the
 * files it lists ("files"; a manifest of an older kevolve has none, so
 * its source, header, library, manifest, standard.json and its include/,
 * lib/ and torch/ folders), and what a first use of its PyTorch package
 * builds under torch/. */
typedef struct owned {
    const json_t *files; /* NULL: an older manifest */
    const json_t *m;
    const char *foreign; /* the first entry not the export's (malloc'd) */
} owned;

static int owned_by(const owned *o, const char *rel, int is_dir)
{
    size_t n = strlen(rel), i;
    const json_t *f;
    int torch = 0;
    json_array_foreach(o->files, i, f)
    {
        const char *w = json_string_value(f);
        if (!w) continue;
        if (strcmp(w, rel) == 0 || (is_dir && strncmp(w, rel, n) == 0 && w[n] == '/')) return 1;
        torch |= strncmp(w, "torch/", 6) == 0;
    }
    if (!o->files) {
        static const char *const keys[] = {"source", "header", "library"};
        for (size_t k = 0; k < 3; k++) {
            const char *w = json_string_value(json_object_get(o->m, keys[k]));
            if (w && strcmp(w, rel) == 0) return 1;
        }
        if (!strcmp(rel, "manifest.json") || !strcmp(rel, "standard.json")) return 1;
        if (!strcmp(rel, "include") || !strncmp(rel, "include/", 8)) return 1;
        if (!strcmp(rel, "lib") || !strncmp(rel, "lib/", 4)) return 1;
        torch = 1;
    }
    /* The package builds its operator in torch/build, Python caches. */
    return torch && (!strcmp(rel, "torch/build") || !strncmp(rel, "torch/build/", 12) ||
                     (!strncmp(rel, "torch/", 6) && strstr(rel, "__pycache__")));
}

static int note_foreign(const char *rel, int is_dir, void *ud)
{
    owned *o = ud;
    if (owned_by(o, rel, is_dir)) return 0;
    o->foreign = kv_strdup(rel);
    return 1;
}

/* Whether --force may replace DIR: only when all it holds is what an
 * export wrote there (its manifest.json says what). Returns 0, or -1 with
 * *ERR naming the first file that is not the export's. */
static int replaceable(const char *dir, char **err)
{
    char *path = kv_path_join(dir, "manifest.json");
    char *text = kv_read_file(path, NULL);
    json_t *m = text ? kv_json_loads(text) : NULL;
    free(text);
    free(path);
    if (!json_is_object(m) || !json_object_get(m, "entry")) {
        *err = kv_asprintf("%s holds no manifest.json of an export: --force replaces only a "
                           "folder kevolve export wrote; export into a new or empty folder",
                           dir);
        json_decref(m);
        return -1;
    }
    owned o = {json_object_get(m, "files"), m, NULL};
    int rc = walk(dir, "", note_foreign, &o);
    if (o.foreign)
        *err = kv_asprintf("%s/%s was not written by kevolve export: --force replaces only an "
                           "export's own files; move it away, or export into a new or empty "
                           "folder",
                           dir, o.foreign);
    else if (rc < 0)
        *err = kv_asprintf("cannot read %s: %s", dir, strerror(errno));
    free((char *)o.foreign);
    json_decref(m);
    return o.foreign || rc < 0 ? -1 : 0;
}

/* The checks of the folder and the options that need neither the run nor
 * a compiler: KV_EXPORT_USAGE with *ERR when DIR is in the way. */
static int check_folder(const kv_export_opts *o, char **err)
{
    struct stat st;
    if (stat(o->out_dir, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) {
        *err = kv_asprintf("%s is not a folder: export into a new or empty folder", o->out_dir);
        return KV_EXPORT_USAGE;
    }
    if (!non_empty(o->out_dir)) return 0;
    if (!o->force) {
        *err = kv_asprintf("%s is not empty: export into a new or empty folder, or add --force "
                           "to replace an earlier export there",
                           o->out_dir);
        return KV_EXPORT_USAGE;
    }
    return replaceable(o->out_dir, err) == 0 ? 0 : KV_EXPORT_USAGE;
}

/* What the options ask that the plan P cannot give, before any compile:
 * KV_EXPORT_USAGE with *ERR, or KV_EXPORT_REFUSED when the interpreter
 * that --against-standard needs lacks PyTorch or a GPU; else 0. */
static int check_options(const kvx_plan *p, const kv_export_opts *o, char **err)
{
    if (o->against_standard && !kvx_gqa_shaped(p->task)) {
        *err = kv_asprintf("--against-standard times attention against SDPA; %s is not an "
                           "attention task (export with --torch)",
                           p->task->name);
        return KV_EXPORT_USAGE;
    }
    if (o->against_standard && !kv_backend_has(p->backend, KV_CAP_TORCH_STANDARD)) {
        *err = kv_asprintf("--against-standard times the library against PyTorch's CUDA kernels: "
                           "it needs a run of the cuda backend, not %s (export with --torch)",
                           p->backend->name);
        return KV_EXPORT_USAGE;
    }
    if ((o->torch || o->against_standard) && kvx_torch_ok(p, err) != 0) return KV_EXPORT_USAGE;
    if (o->compile_only && !o->arch && kv_backend_has(p->backend, KV_CAP_ARCH)) {
        *err = kv_asprintf("--compile-only on %s needs --arch (no device to ask for its "
                           "architecture)",
                           p->backend->name);
        return KV_EXPORT_USAGE;
    }
    return o->against_standard ? torch_with_gpu(o, err) : 0;
}

int kv_export(kv_store *store, const kv_export_opts *o, char **err)
{
    *err = NULL;
    struct stat st;
    int rc = check_folder(o, err);
    if (rc == 0 && o->task && !kv_task_find(o->task)) {
        *err = kv_asprintf("--task %s: no such task (kevolve tasks lists them)", o->task);
        rc = KV_EXPORT_USAGE;
    }
    if (rc != 0) return rc;
    kvx_plan p;
    if ((rc = kvx_plan_read(store, o, &p, err)) != 0 || (rc = check_options(&p, o, err)) != 0) {
        kvx_plan_free(&p);
        return rc;
    }
    char *tmp = kv_asprintf("%s.kevolve-export-%d", o->out_dir, (int)getpid());
    kv_remove_tree(tmp);
    char *name = kv_asprintf("%s%s", kvx_entry(&p), p.backend->suffixes[0]);
    char *source_path = kv_path_join(tmp, name);
    char *text = kvx_source(&p, err), *header = NULL, *lib = NULL, *mtext = NULL;
    json_t *rec = NULL, *m = NULL;
    rc = KV_EXPORT_REFUSED;
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
    }
    /* Every file the export wrote, so that --force later knows its own. */
    json_t *files = json_array();
    json_array_append_new(files, json_string("manifest.json"));
    walk(tmp, "", add_file, files);
    json_object_set_new(m, "files", files);
    free(mtext);
    mtext = json_dumps(m, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    if (kvx_put_file(tmp, "manifest.json", mtext, err) != 0) goto out;
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
