/* The run manifest in the store's meta table. */
#include "engine/manifest.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/proc.h"

#include <errno.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

char *kv_manifest_evaluator_command(const kv_config *cfg, const char *output_dir,
                                    kv_config_error *err)
{
    if (cfg->evaluator.task && *cfg->evaluator.task) {
        if (cfg->evaluator_program) {
            snprintf(err->message, sizeof err->message,
                     "evaluator.task and an evaluator program are both given; keep one");
            return NULL;
        }
        /* Each child is a job for this binary's worker (src/eval/job_build.h):
         * no command to run; the manifest names the task. */
        (void)output_dir;
        return kv_asprintf("kernel task %s (backend %s)", cfg->evaluator.task,
                           cfg->evaluator.backend ? cfg->evaluator.backend : "auto");
    }
    if (!cfg->evaluator_program) {
        snprintf(err->message, sizeof err->message,
                 "no evaluator: give it on the command line, as evaluator in %s, or name a "
                 "built-in kernel task as evaluator.task",
                 cfg->path ? cfg->path : "the config");
        return NULL;
    }
    struct stat st;
    if (stat(cfg->evaluator_program, &st) != 0) {
        snprintf(err->message, sizeof err->message, "evaluator %s: %s", cfg->evaluator_program,
                 strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err->message, sizeof err->message, "evaluator %s is %s, not a program",
                 cfg->evaluator_program, S_ISDIR(st.st_mode) ? "a folder" : "not a regular file");
        return NULL;
    }
    return kv_strdup(cfg->evaluator_program);
}

/* How long a tool may take to say its version. */
#define KV_VERSION_TIMEOUT_S 10.0

/* The first (LAST: the last) non-empty line that `TOOL --version` prints on
 * stdout, else on stderr; NULL when it cannot be run or does not end in
 * time. Through kv_proc, as every process kevolve starts. */
static char *version_of(const char *tool, int last)
{
    char *argv[] = {(char *)tool, "--version", NULL};
    kv_proc_spec spec = {.argv = argv, .timeout_s = KV_VERSION_TIMEOUT_S, .max_output = 65536};
    char *err = NULL;
    kv_proc *p = kv_proc_run(&spec, &err);
    free(err);
    if (!p) return NULL;
    char *out = NULL;
    if (kv_proc_how(p) == KV_PROC_EXITED && kv_proc_exit_code(p) == 0) {
        const char *text = kv_proc_stdout_len(p) ? kv_proc_stdout(p) : kv_proc_stderr(p);
        for (const char *line = text; *line;) {
            size_t len = strcspn(line, "\r\n");
            if (len > 0) {
                free(out);
                out = kv_strndup(line, len);
                if (!last) break;
            }
            line += len;
            while (*line == '\r' || *line == '\n')
                line++;
        }
    }
    kv_proc_free(p);
    return out;
}

static int set_meta_fmt(kv_store *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int set_meta_fmt(kv_store *s, const char *key, const char *fmt, ...)
{
    kv_buf b = KV_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    int rc = kv_store_set_meta(s, key, b.data ? b.data : "");
    kv_buf_free(&b);
    return rc;
}

int kv_manifest_write(kv_store *s, const kv_config *cfg, const char *evaluator,
                      const kv_run_options *o)
{
    struct utsname u;
    char host[512] = "unknown";
    if (uname(&u) == 0)
        snprintf(host, sizeof host, "%s %s %s %s", u.nodename, u.sysname, u.release, u.machine);
    char *cc = version_of("cc", 0);
    char *nvcc = version_of("nvcc", 1);
    char *python = version_of("python3", 0);
    char stamp[KV_UTC_STAMP_SIZE];
    kv_utc_stamp(stamp);

    int rc = kv_store_begin(s);
    rc |= kv_store_set_meta(s, "kevolve_version", KV_VERSION);
    rc |= kv_store_set_meta(s, "created_at", stamp);
    rc |= kv_store_set_meta(s, "host", host);
    rc |= kv_store_set_meta(s, "compiler_cc", cc ? cc : "not found");
    rc |= kv_store_set_meta(s, "compiler_nvcc", nvcc ? nvcc : "not found");
    rc |= kv_store_set_meta(s, "python", python ? python : "not found");
    rc |= kv_store_set_meta(s, "config_text", cfg->text ? cfg->text : "");
    rc |= kv_store_set_meta(s, "config_path", cfg->path ? cfg->path : "");
    rc |= kv_store_set_meta(s, "config_dir", cfg->dir ? cfg->dir : ".");
    rc |= kv_store_set_meta(s, "initial_program", cfg->initial_program ? cfg->initial_program : "");
    rc |= kv_store_set_meta(s, "evaluator", cfg->evaluator_program ? cfg->evaluator_program : "");
    rc |= kv_store_set_meta(s, "evaluator_command", evaluator);
    rc |= set_meta_fmt(s, "random_seed", "%lld",
                       (long long)(cfg->has_random_seed ? cfg->random_seed : 42));
    rc |= set_meta_fmt(s, "max_iterations", "%d", cfg->max_iterations);
    /* What kevolve best --pareto and status weigh the run's programs on. */
    kv_buf objectives = KV_BUF_INIT;
    for (size_t i = 0; i < cfg->database.n_objectives; i++)
        kv_buf_printf(&objectives, "%s%s", i ? "," : "", cfg->database.objectives[i]);
    rc |= kv_store_set_meta(s, "objectives", objectives.data ? objectives.data : "");
    kv_buf_free(&objectives);
    if (cfg->has_target_score) rc |= set_meta_fmt(s, "target_score", "%.17g", cfg->target_score);
    rc |= kv_manifest_set_cli(s, o);
    char *effective = kv_config_dump(cfg);
    rc |= kv_store_set_meta(s, "config_effective", effective ? effective : "");
    free(effective);
    if (rc == 0)
        rc = kv_store_commit(s);
    else
        kv_store_rollback(s);
    free(cc);
    free(nvcc);
    free(python);
    return rc ? -1 : 0;
}

int kv_manifest_set_cli(kv_store *s, const kv_run_options *o)
{
    /* Models and endpoint given on the command line replace the config's;
     * resume needs them (the config text alone would bring the old ones back). */
    int rc = 0;
    if (o && o->api_base) rc |= kv_store_set_meta(s, "cli_api_base", o->api_base);
    if (o && o->primary_model) { /* a secondary not given is none (NULL deletes it) */
        rc |= kv_store_set_meta(s, "cli_primary_model", o->primary_model);
        rc |= kv_store_set_meta(s, "cli_secondary_model", o->secondary_model);
    }
    return rc ? -1 : 0;
}

int kv_manifest_load_config(kv_store *s, kv_config *cfg, kv_config_error *err)
{
    if (kv_manifest_load_file(s, cfg, err) != 0) return -1;
    kv_manifest_apply(s, cfg, 0);
    return 0;
}

int kv_manifest_load_file(kv_store *s, kv_config *cfg, kv_config_error *err)
{
    char *text = kv_store_get_meta(s, "config_text");
    char *dir = kv_store_get_meta(s, "config_dir");
    char *path = kv_store_get_meta(s, "config_path");
    int rc = -1;
    if (!text) {
        kv_config_init(cfg);
        snprintf(err->message, sizeof err->message, "the store has no run manifest (config_text)");
    } else {
        rc =
            kv_config_load_string(text, path && *path ? path : "run.db:config_text", dir, cfg, err);
    }
    free(text);
    free(dir);
    free(path);
    return rc;
}

void kv_manifest_apply(kv_store *s, kv_config *cfg, unsigned keep)
{
    static const char *const path_keys[] = {"initial_program", "evaluator"};
    for (size_t i = 0; i < 2; i++) {
        char *v = kv_store_get_meta(s, path_keys[i]);
        if (v && *v) {
            char **field = i == 0 ? &cfg->initial_program : &cfg->evaluator_program;
            free(*field);
            *field = v;
        } else {
            free(v);
        }
    }
    char *v = kv_store_get_meta(s, "max_iterations");
    if (v && !(keep & KV_MANIFEST_KEEP_MAX_ITERATIONS)) cfg->max_iterations = atoi(v);
    free(v);
    v = kv_store_get_meta(s, "random_seed");
    if (v) {
        cfg->random_seed = strtoll(v, NULL, 10);
        cfg->has_random_seed = 1;
    }
    free(v);
    char *api_base = kv_store_get_meta(s, "cli_api_base");
    char *primary = kv_store_get_meta(s, "cli_primary_model");
    char *secondary = kv_store_get_meta(s, "cli_secondary_model");
    if (api_base || primary) kv_config_use_models(cfg, primary, secondary, api_base);
    free(api_base);
    free(primary);
    free(secondary);
    v = kv_store_get_meta(s, "target_score");
    if (v && !(keep & KV_MANIFEST_KEEP_TARGET_SCORE)) {
        cfg->target_score = strtod(v, NULL);
        cfg->has_target_score = 1;
    }
    free(v);
}
