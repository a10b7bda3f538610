/* The evaluation pipeline: runs a program's evaluator in sandboxed child
 * processes, several at once, and hands back results in whatever order they
 * finish. The controller never runs candidate code itself.
 *
 * External evaluators (any language): `EVALUATOR PROGRAM_PATH` prints one
 * JSON object on stdout, {"metrics": {...}, "artifacts": {...}}; a bare
 * object of numbers is taken as the metrics. With cascade_evaluation, stage N
 * runs as `EVALUATOR PROGRAM_PATH --stage N` (N = 1, 2, ...; one stage more
 * than there are thresholds), and stage N+1 runs only when the score of stage
 * N (combined_score, else the mean of numeric metrics) reaches
 * cascade_thresholds[N-1]. Each run has its own process group, a hard timeout
 * that kills the group, resource limits and no secrets in its environment.
 * A crash (a non-zero exit, a signal) is retried up to max_retries times; a
 * timeout is not, nor is output that cannot be read from a run that exited
 * 0 (not JSON, over the size cap: it would not change).
 *
 * A failure is a failure: an evaluation ends FAILED (or TIMEOUT) with a
 * reason and a short reason code when the evaluator could not start, exits
 * non-zero or dies by a signal (after its retries), prints no JSON object,
 * reports an "error" (OpenEvolve's key, at the top level or among the
 * metrics; the code is its artifacts.reason when that is a short word, as
 * compile_error, else evaluator_error), carries a kernel harness's artifacts.verdict
 * "rejected" (the code is its artifacts.reason), or gives no finite fitness
 * (combined_score NaN, infinite, null or not a number; no numeric metric).
 * Only an evaluation with a finite score ends OK.
 *
 * OpenEvolve evaluators (a Python module defining evaluate(program_path))
 * run through kevolve's embedded runner, each evaluation still a sandboxed
 * child process; their stages are evaluate_stage1/2/3 (see pyeval.h). */
#ifndef KV_EVAL_EVALUATOR_H
#define KV_EVAL_EVALUATOR_H

#include "config/config.h"
#include "store/program.h"
#include "util/eval_job.h"

#include <jansson.h>
#include <stdint.h>

typedef struct kv_evaluator kv_evaluator;

/* Reason codes of the evaluation pipeline (kv_eval_result.reason_code). A
 * kernel harness's verdict brings its own (artifacts.reason:
 * "compile_error", "wrong_result", "crash: SIGSEGV", ...). */
#define KV_REASON_TIMEOUT "timeout"                 /* killed at evaluator.timeout */
#define KV_REASON_KILLED "killed"                   /* cancelled (interrupt) */
#define KV_REASON_LAUNCHER_LOST "launcher_lost"     /* Slurm lost every try (node, preemption) */
#define KV_REASON_DEVICE_FAULT "device_fault"       /* its devices failed their checks after it */
#define KV_REASON_SPAWN_FAILED "spawn_failed"       /* the evaluator could not start */
#define KV_REASON_EVALUATOR_CRASH "evaluator_crash" /* non-zero exit or signal */
#define KV_REASON_BAD_OUTPUT "bad_output"           /* stdout not a JSON object */
#define KV_REASON_EVALUATOR_ERROR "evaluator_error" /* an "error" with no artifacts.reason */
#define KV_REASON_REJECTED "rejected"               /* a verdict without a reason */
#define KV_REASON_NON_FINITE_FITNESS "non_finite_fitness" /* combined_score NaN, inf, null */
#define KV_REASON_NO_FITNESS "no_fitness"                 /* no finite numeric metric */

typedef struct kv_eval_result {
    int64_t ticket;    /* as given to submit */
    kv_status status;  /* OK, FAILED or TIMEOUT */
    char *reason;      /* why not OK (malloc'd; NULL when OK) */
    char *reason_code; /* the same as a short code (KV_REASON_*, or the harness's
                          artifacts.reason); malloc'd, NULL when OK */
    json_t *metrics;   /* merged metrics of the stages that ran (owned ref) */
    json_t *artifacts; /* evaluator artifacts plus stdout/stderr tails (owned ref) */
    json_t *stages;    /* array: {"stage":N,"status":..,"metrics":{..},"seconds":s,"reason":..} */
    double seconds;    /* wall time, all stages and retries */
    int attempts;      /* runs of the first stage, retries included */
    kv_scenario_results scenarios; /* a kernel task's rows per scenario (owned; else empty) */
} kv_eval_result;

void kv_eval_result_clear(kv_eval_result *r);

/* COMMAND: the evaluator (a path, run directly when executable, with python3
 * when it ends in .py, with sh when it ends in .sh; an OpenEvolve module per
 * cfg->python_module goes through the runner, after a probe that imports it
 * once and may fail here). WORK_DIR: where program
 * files are written (created when missing). SECTIONS: extra config sections
 * handed to the evaluator as JSON in the file named by $KEVOLVE_CONFIG_JSON
 * (may be NULL). Returns NULL with *err set on failure. */
kv_evaluator *kv_evaluator_new(const kv_evaluator_config *cfg, const char *command,
                               const char *work_dir, const json_t *sections, char **err);
/* An evaluator for a built-in kernel task: each child runs as `WORKER eval
 * --job FILE`, FILE the document of JOB (a template from
 * kv_eval_job_template, copied) with the child's program, stage, run
 * folder and parent added. DEVICES[0..N_DEVICES) are the backend's devices
 * the evaluations take turns on: a worker asks for its device over a
 * channel (its descriptor 3) once it has compiled, and its clock stops
 * until it holds one, so compiles overlap and waiting is not its time.
 * Returns NULL with *err set on failure. */
kv_evaluator *kv_evaluator_new_task(const kv_evaluator_config *cfg, const kv_job *job,
                                    const char *worker, const int *devices, size_t n_devices,
                                    const char *work_dir, char **err);
void kv_evaluator_free(kv_evaluator *ev);

/* Queues SOURCE for evaluation as ticket TICKET; the file is named
 * "<ticket><suffix>" in the work dir. Starts at once when a slot of
 * parallel_evaluations is free. Returns 0 or -1. */
int kv_evaluator_submit(kv_evaluator *ev, int64_t ticket, const char *source, const char *suffix);
/* The same for a child. An external evaluator gets its parent's metrics
 * PARENT_METRICS (may be NULL), written to
 * "<ticket><suffix>.parent_metrics.json" beside the program and named by
 * $KEVOLVE_PARENT_METRICS in its environment (it may stop early when a
 * child cannot beat its parent); a kernel task's job gets PARENT_SCREEN
 * ({"combined_score", "speedup": {scenario: x}}, may be NULL) to screen
 * against. */
int kv_evaluator_submit_child(kv_evaluator *ev, int64_t ticket, const char *source,
                              const char *suffix, const json_t *parent_metrics,
                              const json_t *parent_screen);
/* Names the run's output folder: every evaluation from now on gets it as
 * $KEVOLVE_RUN_DIR (the kernel harness keeps its per-run caches there). */
void kv_evaluator_set_run_dir(kv_evaluator *ev, const char *run_dir);
/* Waits up to TIMEOUT_MS (negative: no limit) for a finished evaluation,
 * sleeping in poll(2) on the running children. Returns 1 with OUT filled
 * (clear it after), 0 when none finished in time, when nothing is pending
 * (at once), or when a signal interrupted the wait (so that a SIGINT flag
 * can be checked); -1 on error. Results come in the order they finish. */
int kv_evaluator_poll(kv_evaluator *ev, int timeout_ms, kv_eval_result *out);
/* Evaluations queued or running. */
size_t kv_evaluator_pending(const kv_evaluator *ev);
/* Kills everything running and drops the queue. */
void kv_evaluator_cancel_all(kv_evaluator *ev);

/* The backend of a kernel task's devices (the listing's), for the checks a
 * suspect device gets (`kevolve devices --check`): after a harness failure
 * on it (then the run goes to another device when one is left) or a verdict
 * that can break it (illegal_address, launch_failed, a timeout ...). */
void kv_evaluator_set_backend(kv_evaluator *ev, const char *backend);
/* The devices taken out of rotation since the last call, as a JSON array of
 * {"backend", "device", "reason", "after_ticket", "left"} (owned), or NULL. */
json_t *kv_evaluator_take_device_events(kv_evaluator *ev);

/* Evaluates one source synchronously (tests, `kevolve eval`); the file is
 * named "eval<n><suffix>". Returns 0 with OUT filled (clear it after), or
 * -1 when it could not be queued. Other evaluations may progress meanwhile;
 * their results stay for kv_evaluator_poll. */
int kv_evaluator_run_one(kv_evaluator *ev, const char *source, const char *suffix,
                         kv_eval_result *out);

/* Parses an evaluator's stdout into metrics and artifacts. Returns 0, or -1
 * with a malloc'd reason ("evaluator output is not JSON: ...", or the
 * evaluator's own "error" message) and both set to NULL. */
int kv_eval_parse_output(const char *text, json_t **metrics, json_t **artifacts, char **reason);

#endif
