/* OpenEvolve evaluators: a Python file defining evaluate(program_path) (and
 * evaluate_stage1/2/3 for cascades) that returns a dict of metrics or an
 * EvaluationResult. kevolve runs such a module through a small runner it
 * carries in its binary (src/eval/openevolve_runner.py, written into the
 * work folder), which prints kevolve's protocol: {"metrics", "artifacts"};
 * an exception is a failed evaluation with its traceback as an artifact.
 *
 * By default every evaluation is a fresh interpreter in a sandboxed kv_proc
 * (own process group, hard timeout, limits, no secrets), like any evaluator.
 * With evaluator.python_pool, parallel_evaluations warm interpreters import
 * the module once and serve evaluations through a Unix socket; each
 * evaluation is then a small client process that kevolve times and kills as
 * usual, and a worker whose client was killed is killed and replaced.
 *
 * Stages: with cascade_evaluation on or unset (OpenEvolve's default) and an
 * evaluate_stage1, stage N calls evaluate_stageN: stage 2 exists when the
 * module defines evaluate_stage2 and there is a first threshold, stage 3
 * when it also defines evaluate_stage3 and there is a second (OpenEvolve's
 * rules). Otherwise one stage calls evaluate. */
#ifndef KV_EVAL_PYEVAL_H
#define KV_EVAL_PYEVAL_H

#include "config/config.h"

#include <stddef.h>

typedef struct kv_pyeval kv_pyeval;

/* 1 when COMMAND should run as an OpenEvolve module: MODE 1 (forced) and
 * COMMAND is a file; MODE -1 (auto) and COMMAND is a .py file that defines a
 * top-level evaluate or evaluate_stage1 function and has no
 * `if __name__ == "__main__"` block that reads sys.argv (a script of
 * kevolve's own protocol). 0 otherwise. */
int kv_pyeval_wants(const char *command, int mode);

/* Writes the runner into WORK_DIR (which must exist), imports EVALUATOR once
 * in a fresh interpreter (cfg->python, under cfg->timeout) to learn its
 * functions and the interpreter's path, and starts the warm pool when
 * cfg->python_pool. Returns NULL with a malloc'd message in *err when the
 * module cannot be imported or defines nothing to call. */
kv_pyeval *kv_pyeval_new(const kv_evaluator_config *cfg, const char *evaluator,
                         const char *work_dir, char **err);
void kv_pyeval_free(kv_pyeval *py);

/* The command prefix of one evaluation (NULL-terminated, owned by PY; the
 * program path and "--stage N" follow), and its length in *N. */
char *const *kv_pyeval_argv(const kv_pyeval *py, size_t *n);
/* Stages of a cascade (1 to 3), or 0: one run of evaluate, no --stage. */
int kv_pyeval_stages(const kv_pyeval *py);
/* The interpreter found by the probe (absolute path). */
const char *kv_pyeval_python(const kv_pyeval *py);

/* The pool's client in C: `kevolve pyeval-client SOCKET PROGRAM [--stage N]`
 * (argv as given to the subcommand; returns the exit status). The kevolve
 * command enables it at start; without it (tests linking the library) the
 * pool is reached by `python3 -S runner.py --connect`, which costs an
 * interpreter start per evaluation. */
int kv_pyeval_client_main(int argc, char **argv);
void kv_pyeval_enable_native_client(void);
int kv_pyeval_native_client(void);

/* The runner's source, as embedded (generated file openevolve_runner_text.c). */
extern const char kv_openevolve_runner_py[];

#endif
