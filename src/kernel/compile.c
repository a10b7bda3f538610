/* Compiling candidates into a content-keyed cache (see compile.h). */
#include "kernel/compile.h"
#include "util/clock.h"
#include "judge/tasks.h"
#include "kernel/tool.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define KV_COMPILE_TIMEOUT_S 180.0

void kv_compiled_clear(kv_compiled *c)
{
    free(c->lib_path);
    free(c->device_source);
    free(c->log);
    free(c->key);
    if (c->resources) json_decref(c->resources);
    memset(c, 0, sizeof *c);
}

char *kv_find_nvcc(void)
{
    const char *env = getenv("KEVOLVE_NVCC");
    if (env && *env) return kv_tool_which(env);
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        char *p = kv_asprintf("%s/bin/nvcc", home);
        if (access(p, X_OK) == 0) return p;
        free(p);
    }
    char *p = kv_tool_which("nvcc");
    if (p) return p;
    return access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? kv_strdup("/usr/local/cuda/bin/nvcc")
                                                         : NULL;
}

/* First line of `TOOL --version` (or its last line for nvcc), cached per tool
 * for the process; "" when it cannot be run. */
static const char *tool_version(const char *tool)
{
    static char *names[4], *versions[4];
    for (int i = 0; i < 4 && names[i]; i++)
        if (strcmp(names[i], tool) == 0) return versions[i];
    char *argv[] = {(char *)tool, "--version", NULL};
    char *out = NULL;
    int rc = kv_tool_run(argv, 30, &out);
    char *v = kv_strdup(rc == 0 ? out : "");
    free(out);
    for (int i = 0; i < 4; i++)
        if (!names[i]) {
            names[i] = kv_strdup(tool);
            versions[i] = v;
            return v;
        }
    return v; /* leaks only past four tools: never in practice */
}

/* Where embedded file NAME goes under a candidate's include directory, or
 * NULL when it is not provided there: the task ABI header as
 * <kevolve/task.h>, the bf16 helpers of C candidates as <kevolve/bf16.h>,
 * and every task header (tasks/T/B/x.cuh, embedded as "T/B/x.cuh") as
 * <T/B/x.cuh>, e.g. <gqa_attention/cuda/gqa_common.cuh>. */
static const char *include_path_of(const char *name)
{
    if (strcmp(name, "include/kevolve/task.h") == 0) return "kevolve/task.h";
    if (strcmp(name, "include/kevolve/bf16.h") == 0) return "kevolve/bf16.h";
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".cuh") == 0 ? name : NULL;
}

/* Writes the headers provided to candidates (include_path_of) under
 * CACHE/include-<hash of them all>/ and returns that include directory
 * (malloc'd), or NULL with *ERR. */
static char *ensure_include_dir(const char *cache, char **err)
{
    if (!kv_embedded_text("include/kevolve/task.h")) {
        *err = kv_strdup("embedded include/kevolve/task.h is missing");
        return NULL;
    }
    kv_buf all = KV_BUF_INIT;
    const char *name;
    for (size_t i = 0; (name = kv_embedded_name(i)); i++)
        if (include_path_of(name)) kv_buf_printf(&all, "%s\n%s", name, kv_embedded_text(name));
    char hex[17];
    kv_hash_hex(kv_hash64(all.data, all.len), hex);
    kv_buf_free(&all);
    char *inc = kv_asprintf("%s/include-%s", cache, hex);
    for (size_t i = 0; inc && (name = kv_embedded_name(i)); i++) {
        const char *rel = include_path_of(name);
        if (!rel) continue;
        const char *text = kv_embedded_text(name);
        char *path = kv_asprintf("%s/%s", inc, rel);
        char *dir = kv_path_dirname(path);
        int ok = kv_is_file(path) ||
                 (kv_mkdir_p(dir, 0755) == 0 && kv_write_file(path, text, strlen(text)) == 0);
        if (!ok) {
            *err = kv_asprintf("cannot write %s: %s", path, strerror(errno));
            free(inc);
            inc = NULL;
        }
        free(dir);
        free(path);
    }
    return inc;
}

/* Reads "<max> <keyword>" pairs such as "Used 32 registers" from LOG. */
static long max_before(const char *log, const char *keyword)
{
    long best = -1;
    size_t klen = strlen(keyword);
    for (const char *p = strstr(log, keyword); p; p = strstr(p + klen, keyword)) {
        const char *q = p;
        while (q > log && q[-1] == ' ')
            q--;
        const char *e = q;
        while (q > log && q[-1] >= '0' && q[-1] <= '9')
            q--;
        if (q == e) continue;
        long v = strtol(q, NULL, 10);
        if (v > best) best = v;
    }
    return best;
}

json_t *kv_parse_ptxas(const char *log)
{
    if (!log) return NULL;
    long regs = max_before(log, "registers");
    if (regs < 0) return NULL;
    json_t *r = json_object();
    json_object_set_new(r, "registers", json_integer(regs));
    long smem = max_before(log, "bytes smem");
    json_object_set_new(r, "shared_bytes", json_integer(smem < 0 ? 0 : smem));
    long spill_st = max_before(log, "bytes spill stores");
    long spill_ld = max_before(log, "bytes spill loads");
    json_object_set_new(
        r, "spill_bytes",
        json_integer((spill_st < 0 ? 0 : spill_st) + (spill_ld < 0 ? 0 : spill_ld)));
    long stack = max_before(log, "bytes stack frame");
    json_object_set_new(r, "stack_bytes", json_integer(stack < 0 ? 0 : stack));
    return r;
}

/* Builds the compiler command line for BACKEND into ARGV (strings owned by
 * the caller's list OWNED). Returns the compiler path or NULL with *ERR. */
static int build_argv(const kv_backend *backend, const char *inc, const char *arch, const char *src,
                      const char *out, char **argv, char **owned, char **err)
{
    int n = 0, o = 0;
    if (backend->toolchain == KV_TOOLCHAIN_NVCC) {
        char *nvcc = kv_find_nvcc();
        if (!nvcc) {
            *err = kv_strdup("nvcc not found (set KEVOLVE_NVCC or CUDA_HOME)");
            return -1;
        }
        const char *a = arch && *arch ? arch : "sm_90a";
        owned[o++] = nvcc;
        argv[n++] = nvcc;
        argv[n++] = "-O3";
        argv[n++] = "-std=c++17";
        argv[n++] = "-shared";
        argv[n++] = "-Xcompiler";
        argv[n++] = "-fPIC";
        argv[n++] = "-lineinfo";
        argv[n++] = "-Xptxas";
        argv[n++] = "-v";
        argv[n++] = "-gencode";
        owned[o] = kv_asprintf("arch=compute_%s,code=%s", a + 3, a);
        argv[n++] = owned[o++];
        owned[o] = kv_asprintf("-I%s", inc);
        argv[n++] = owned[o++];
        argv[n++] = "-o";
        argv[n++] = (char *)out;
        argv[n++] = "-x";
        argv[n++] = "cu";
        argv[n++] = (char *)src;
    } else {
        const char *cc = getenv("KEVOLVE_CC");
        owned[o] = kv_tool_which(cc && *cc ? cc : "cc");
        if (!owned[o]) {
            *err = kv_asprintf("C compiler %s not found", cc && *cc ? cc : "cc");
            return -1;
        }
        argv[n++] = owned[o++];
        argv[n++] = "-std=gnu17";
        argv[n++] = "-O2";
        argv[n++] = "-march=native";
        argv[n++] = "-fPIC";
        argv[n++] = "-shared";
        argv[n++] = "-Wall";
        owned[o] = kv_asprintf("-I%s", inc);
        argv[n++] = owned[o++];
        for (const char *const *f = backend->cflags; f && *f; f++)
            argv[n++] = (char *)*f;
        argv[n++] = "-o";
        argv[n++] = (char *)out;
        argv[n++] = "-x";
        argv[n++] = "c";
        argv[n++] = (char *)src;
        for (const char *const *l = backend->libs; l && *l; l++)
            argv[n++] = (char *)*l;
    }
    argv[n] = NULL;
    owned[o] = NULL;
    return 0;
}

int kv_compile(const kv_backend *backend, const char *source, const char *cache_dir,
               const char *arch, kv_compiled *out, char **err)
{
    memset(out, 0, sizeof *out);
    if (kv_mkdir_p(cache_dir, 0755) != 0) {
        *err = kv_asprintf("cannot create cache dir %s: %s", cache_dir, strerror(errno));
        return -1;
    }
    char *inc = ensure_include_dir(cache_dir, err);
    if (!inc) return -1;
    char *argv[40], *owned[8];
    int rc = -1;
    /* The key covers the command line with placeholder paths, so flags and
     * compiler identity count but the temporary names do not. */
    if (build_argv(backend, inc, arch, "SRC", "OUT", argv, owned, err) != 0) {
        free(inc);
        return -1;
    }
    kv_buf keytext = KV_BUF_INIT;
    kv_buf_printf(&keytext, "backend=%s arch=%s\n", backend->name, arch ? arch : "");
    for (int i = 0; argv[i]; i++)
        kv_buf_printf(&keytext, "%s ", argv[i]);
    kv_buf_printf(&keytext, "\n%s\n", tool_version(argv[0]));
    kv_buf_puts(&keytext, source);
    char hex[17];
    kv_hash_hex(kv_hash64(keytext.data, keytext.len), hex);
    kv_buf_free(&keytext);
    for (int i = 0; owned[i]; i++)
        free(owned[i]);

    out->key = kv_strdup(hex);
    out->lib_path = kv_asprintf("%s/%s.so", cache_dir, hex);
    if (kv_backend_has(backend, KV_CAP_DEVICE_CODE)) out->device_source = kv_strdup(source);
    char *log_path = kv_asprintf("%s/%s.log", cache_dir, hex);
    char *fail_path = kv_asprintf("%s/%s.failed", cache_dir, hex);
    char *src_path = kv_asprintf("%s/%s.%d.src", cache_dir, hex, (int)getpid());
    char *tmp_out = kv_asprintf("%s/%s.%d.tmp.so", cache_dir, hex, (int)getpid());

    if (kv_is_file(out->lib_path) || kv_is_file(fail_path)) {
        out->cached = 1;
        out->log = kv_read_file(log_path, NULL);
        if (!out->log) out->log = kv_strdup("");
        rc = kv_is_file(out->lib_path) ? 0 : 1;
    } else if (kv_write_file(src_path, source, strlen(source)) != 0) {
        *err = kv_asprintf("cannot write %s: %s", src_path, strerror(errno));
    } else if (build_argv(backend, inc, arch, src_path, tmp_out, argv, owned, err) == 0) {
        double t0 = kv_now_s();
        char *log = NULL;
        int status = kv_tool_run(argv, KV_COMPILE_TIMEOUT_S, &log);
        out->seconds = kv_now_s() - t0;
        /* Temporary file names mean nothing to a reader of the log. */
        kv_buf clean = KV_BUF_INIT;
        for (const char *p = log; *p;) {
            if (kv_starts_with(p, src_path)) {
                kv_buf_puts(&clean, "candidate");
                p += strlen(src_path);
            } else {
                kv_buf_putc(&clean, *p++);
            }
        }
        free(log);
        out->log = kv_buf_steal(&clean);
        kv_write_file(log_path, out->log, strlen(out->log));
        if (status == 0 && rename(tmp_out, out->lib_path) == 0) {
            rc = 0;
        } else if (status == -1) {
            *err = kv_asprintf("cannot run the compiler %s: %s", argv[0], out->log);
        } else if (status == -2) {
            free(out->log);
            out->log = kv_asprintf("compiler timed out after %.0f s", KV_COMPILE_TIMEOUT_S);
            rc = 1; /* not cached: a loaded machine may do better next time */
        } else {
            kv_write_file(fail_path, "", 0);
            rc = 1;
        }
        unlink(tmp_out);
        unlink(src_path);
        for (int i = 0; owned[i]; i++)
            free(owned[i]);
    }
    if (out->log) { /* the file keeps the bytes; JSON and terminals get UTF-8 */
        char *shown = kv_utf8_escaped(out->log, strlen(out->log));
        free(out->log);
        out->log = shown;
    }
    if (rc >= 0 && backend->toolchain == KV_TOOLCHAIN_NVCC)
        out->resources = kv_parse_ptxas(out->log);
    free(log_path);
    free(fail_path);
    free(src_path);
    free(tmp_out);
    free(inc);
    return rc;
}

/* Compiles the task's own embedded source NAME (baseline, reference, the
 * judge's kernels) for backend B into C. */
int kv_compile_own(const kv_backend *b, const char *name, const char *what, const char *cache,
                   const char *arch, kv_compiled *c, char **err)
{
    const char *text = name ? kv_embedded_text(name) : NULL;
    if (!text) {
        *err = kv_asprintf("%s %s is not embedded in this binary", what,
                           name ? name : "(none for this backend)");
        return -1;
    }
    /* The judge's own definitions, shared with its host code, are put in
     * place of their include: candidates' include folder stays as it is. */
    static const char shared[] = "#include <kevolve/judge_ops.h>\n";
    const char *at = strstr(text, shared), *ops = kv_embedded_text("src/backend/judge_ops.h");
    char *joined = NULL;
    if (at && ops)
        joined = kv_asprintf("%.*s%s%s", (int)(at - text), text, ops, at + strlen(shared));
    int rc = kv_compile(b, joined ? joined : text, cache, arch, c, err);
    free(joined);
    if (rc != 0) {
        if (!*err) *err = kv_asprintf("%s %s does not compile: %s", what, name, c->log);
        return -1;
    }
    return 0;
}
