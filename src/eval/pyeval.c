/* OpenEvolve evaluators through the embedded runner (see pyeval.h): the
 * detection of such modules, the probe that imports one once, the command
 * of each evaluation, and the warm pool's manager process. */
#include "eval/pyeval.h"
#include "eval/eval_output.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/proc.h"

#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUNNER_NAME "kevolve_openevolve_runner.py"
/* The least time the probe may take to import the module. */
#define PROBE_MIN_S 120.0
/* How long the pool may take to say it listens (its workers import later). */
#define POOL_START_S 30.0

struct kv_pyeval {
    char *python; /* absolute path of the interpreter */
    char *runner; /* the runner's path in the work folder */
    char *evaluator;
    int stages;
    char **argv; /* command prefix of one evaluation */
    size_t argc;
    kv_proc *pool; /* the warm pool's manager, or NULL */
    char *pool_dir;
    char *socket;
};

/* 1 when line L (not NUL-terminated, LEN bytes) starts with `def NAME(` at
 * column 0, NAME one of evaluate, evaluate_stage1. */
static int defines_entry(const char *l, size_t len)
{
    static const char *const names[] = {"def evaluate", "def evaluate_stage1"};
    for (size_t i = 0; i < 2; i++) {
        size_t n = strlen(names[i]);
        if (len <= n || strncmp(l, names[i], n) != 0) continue;
        size_t k = n;
        while (k < len && (l[k] == ' ' || l[k] == '\t'))
            k++;
        if (k < len && l[k] == '(') return 1;
    }
    return 0;
}

int kv_pyeval_wants(const char *command, int mode)
{
    if (mode == 0 || !command || !kv_is_file(command)) return 0;
    if (mode == 1) return 1;
    if (!kv_ends_with(command, ".py")) return 0;
    char *text = kv_read_file(command, NULL);
    if (!text) return 0;
    int entry = 0, script = 0;
    for (const char *l = text; *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        if (defines_entry(l, len)) entry = 1;
        if (len > 2 && strncmp(l, "if", 2) == 0 && isspace((unsigned char)l[2])) {
            char *line = kv_strndup(l, len);
            if (strstr(line, "__name__") && strstr(line, "__main__")) script = 1;
            free(line);
        }
        l = end ? end + 1 : l + len;
    }
    /* A __main__ block that reads sys.argv is a program of kevolve's own
     * protocol (`EVALUATOR PROGRAM_PATH`); one that only tries the module by
     * hand (OpenEvolve's examples) does not make it one. */
    int reads_argv = script && strstr(text, "sys.argv") != NULL;
    free(text);
    return entry && !reads_argv;
}

/* Runs ARGV to the end under TIMEOUT seconds; returns the finished process or
 * NULL with *err. */
static kv_proc *run_quiet(char *const *argv, double timeout, char **err)
{
    kv_proc_spec spec = {.argv = argv, .timeout_s = timeout, .max_output = (size_t)1 << 20};
    return kv_proc_run(&spec, err);
}

/* The last non-empty line of TEXT (malloc'd), for messages. */
static char *last_line(const char *text)
{
    size_t end = strlen(text);
    while (end && (text[end - 1] == '\n' || text[end - 1] == ' ' || text[end - 1] == '\r'))
        end--;
    size_t start = end;
    while (start && text[start - 1] != '\n')
        start--;
    return kv_eval_clean_text(text + start, end - start);
}

/* Imports the module once: fills py->python and the functions it defines.
 * Returns 0 or -1 with *err. */
static int probe(kv_pyeval *py, const kv_evaluator_config *cfg, int *has_evaluate, int stages[3],
                 char **err)
{
    const char *python = cfg->python && *cfg->python ? cfg->python : "python3";
    char *argv[] = {(char *)python, py->runner, "--probe", py->evaluator, NULL};
    /* Not the evaluation's timeout: importing can take longer than judging
     * one program (and OpenEvolve imports without a limit). */
    kv_proc *p = run_quiet(argv, cfg->timeout > PROBE_MIN_S ? cfg->timeout : PROBE_MIN_S, err);
    if (!p) {
        char *e = *err;
        *err = kv_asprintf("evaluator %s: cannot run %s for it: %s", py->evaluator, python,
                           e ? e : "unknown error");
        free(e);
        return -1;
    }
    json_t *info = NULL, *artifacts = NULL;
    char *reason = NULL;
    int rc = -1;
    if (kv_proc_how(p) == KV_PROC_EXITED && kv_proc_exit_code(p) == 0 &&
        kv_eval_parse_output_ex(kv_proc_stdout(p), &info, &artifacts, &reason) ==
            KV_EVAL_OUTPUT_OK) {
        const char *exe = json_string_value(json_object_get(info, "python"));
        py->python = kv_strdup(exe && *exe ? exe : python);
        *has_evaluate = json_is_true(json_object_get(info, "evaluate"));
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(info, "stages"), i, v)
        {
            json_int_t n = json_integer_value(v);
            if (n >= 1 && n <= 3) stages[n - 1] = 1;
        }
        const char *oe = json_string_value(json_object_get(info, "openevolve"));
        kv_info("evaluator %s: an OpenEvolve module (Python %s at %s; openevolve %s)",
                py->evaluator, json_string_value(json_object_get(info, "version")), py->python,
                oe ? oe : "not installed: kevolve's stand-in for evaluation_result");
        rc = 0;
    } else {
        char *line = last_line(kv_proc_stderr(p));
        *err = kv_asprintf("evaluator %s cannot be imported by %s (%s)%s%s", py->evaluator, python,
                           kv_proc_describe(p), *line ? ": " : "", line);
        free(line);
    }
    free(reason);
    json_decref(info);
    json_decref(artifacts);
    kv_proc_free(p);
    return rc;
}

/* Starts the warm pool and waits until it listens. Returns 0 or -1 with *err. */
static int start_pool(kv_pyeval *py, const kv_evaluator_config *cfg, const char *work_dir,
                      char **err)
{
    /* A socket's path has 108 bytes at most: in the work folder when it fits
     * (what a kill -9 leaves stays with the run), else in a folder of /tmp. */
    if (strlen(work_dir) + sizeof "/python_pool.sock" <= 100) {
        py->socket = kv_path_join(work_dir, "python_pool.sock");
    } else {
        char tmpl[] = "/tmp/kevolve-py.XXXXXX";
        if (!mkdtemp(tmpl)) {
            *err = kv_asprintf("evaluator.python_pool: cannot create a folder in /tmp: %s",
                               strerror(errno));
            return -1;
        }
        py->pool_dir = kv_strdup(tmpl);
        py->socket = kv_path_join(tmpl, "pool.sock");
    }
    char *log = kv_path_join(work_dir, "python_pool.log");
    char workers[24];
    snprintf(workers, sizeof workers, "%d",
             cfg->parallel_evaluations > 0 ? cfg->parallel_evaluations : 1);
    char *argv[] = {py->python,  py->runner, "--serve", py->socket, "--evaluator", py->evaluator,
                    "--workers", workers,    "--log",   log,        NULL};
    kv_proc_spec spec = {.argv = argv, .memory_limit_mb = 0, .max_output = 4096};
    py->pool = kv_proc_start(&spec, err);
    free(log);
    if (!py->pool) return -1;
    double deadline = kv_now_s() + POOL_START_S;
    while (!strstr(kv_proc_stdout(py->pool), "ready")) {
        if (kv_proc_poll(py->pool, 50) || kv_now_s() > deadline) {
            char *line = last_line(kv_proc_stderr(py->pool));
            *err = kv_asprintf("evaluator.python_pool: the pool did not start (%s)%s%s",
                               kv_proc_describe(py->pool), *line ? ": " : "", line);
            free(line);
            return -1;
        }
    }
    kv_info("evaluator %s: %s warm Python interpreters (evaluator.python_pool)", py->evaluator,
            workers);
    return 0;
}

kv_pyeval *kv_pyeval_new(const kv_evaluator_config *cfg, const char *evaluator,
                         const char *work_dir, char **err)
{
    *err = NULL;
    kv_pyeval *py = kv_calloc(1, sizeof *py);
    py->evaluator = kv_path_absolute(evaluator);
    if (!py->evaluator) py->evaluator = kv_strdup(evaluator);
    py->runner = kv_path_join(work_dir, RUNNER_NAME);
    if (kv_write_file(py->runner, kv_openevolve_runner_py, strlen(kv_openevolve_runner_py)) != 0) {
        *err = kv_asprintf("evaluator: cannot write '%s': %s", py->runner, strerror(errno));
        kv_pyeval_free(py);
        return NULL;
    }
    int has_evaluate = 0, st[3] = {0, 0, 0};
    if (probe(py, cfg, &has_evaluate, st, err) != 0) {
        kv_pyeval_free(py);
        return NULL;
    }
    /* OpenEvolve's cascade rules; unset cascade_evaluation is its default (on). */
    if (cfg->cascade_evaluation != 0 && st[0]) {
        size_t thr = cfg->n_cascade_thresholds;
        py->stages = 1;
        if (st[1] && thr >= 1) py->stages = 2;
        if (py->stages == 2 && st[2] && thr >= 2) py->stages = 3;
    } else if (!has_evaluate) {
        *err =
            kv_asprintf("evaluator %s defines no evaluate(program_path) function%s", py->evaluator,
                        st[0] ? " (evaluate_stage1 is used only with cascade_evaluation)" : "");
        kv_pyeval_free(py);
        return NULL;
    }
    if (cfg->python_pool && start_pool(py, cfg, work_dir, err) != 0) {
        kv_pyeval_free(py);
        return NULL;
    }
    py->argv = kv_calloc(8, sizeof(char *));
    size_t k = 0;
    py->argv[k++] = kv_strdup(py->python);
    char self[4096];
    ssize_t self_len = kv_pyeval_native_client() && py->pool
                           ? readlink("/proc/self/exe", self, sizeof self - 1)
                           : -1;
    if (self_len > 0) { /* kevolve itself: no interpreter to start per evaluation */
        self[self_len] = '\0';
        free(py->argv[0]);
        py->argv[0] = kv_strdup(self);
        py->argv[k++] = kv_strdup("pyeval-client");
        py->argv[k++] = kv_strdup(py->socket);
    } else if (py->pool) {
        py->argv[k++] = kv_strdup("-S"); /* the client needs no site packages: faster start */
        py->argv[k++] = kv_strdup(py->runner);
        py->argv[k++] = kv_strdup("--connect");
        py->argv[k++] = kv_strdup(py->socket);
    } else {
        py->argv[k++] = kv_strdup(py->runner);
        py->argv[k++] = kv_strdup("--evaluator");
        py->argv[k++] = kv_strdup(py->evaluator);
    }
    py->argv[k] = NULL;
    py->argc = k;
    return py;
}

void kv_pyeval_free(kv_pyeval *py)
{
    if (!py) return;
    kv_proc_free(py->pool); /* kills the manager's group; its workers die with it */
    if (py->socket) unlink(py->socket);
    if (py->pool_dir) rmdir(py->pool_dir);
    for (size_t i = 0; i < py->argc; i++)
        free(py->argv[i]);
    free(py->argv);
    free(py->python);
    free(py->runner);
    free(py->evaluator);
    free(py->socket);
    free(py->pool_dir);
    free(py);
}

char *const *kv_pyeval_argv(const kv_pyeval *py, size_t *n)
{
    *n = py->argc;
    return py->argv;
}

int kv_pyeval_stages(const kv_pyeval *py)
{
    return py->stages;
}

const char *kv_pyeval_python(const kv_pyeval *py)
{
    return py->python;
}
