/* How an evaluation's process starts: on this machine, or as a Slurm job
 * step through srun (evaluator.launcher). The evaluator puts the
 * launcher's words before its command, and asks the launcher, when a run
 * ends without an answer, whether the launcher lost it (a node failure, a
 * preemption, a step cancelled from outside): such a run is started again
 * and never counted as the candidate's failure. */
#ifndef KV_EVAL_LAUNCHER_H
#define KV_EVAL_LAUNCHER_H

#include "config/config.h"

#include <stddef.h>

/* 1 when CFG starts evaluations through Slurm. */
int kv_launcher_is_slurm(const kv_evaluator_config *cfg);

/* The argv words that go before an evaluation's command (malloc'd,
 * NULL-terminated, *N of them; NULL and *N = 0 for the local launcher).
 * Each run then adds its step's name (--job-name=NAME) and "--". Free with
 * kv_launcher_free. */
char **kv_launcher_prefix(const kv_evaluator_config *cfg, size_t *n);
void kv_launcher_free(char **prefix);

/* Cancels the steps (and jobs) named NAMES[0..N): runs whose srun kevolve
 * stopped (a timeout, an interrupt), since a step whose srun is killed may
 * run on until its time limit. */
void kv_launcher_cancel(const char *const *names, size_t n);

/* With Slurm: 1 when STDERR_TEXT (the run's standard error: srun's and
 * slurmstepd's lines among the evaluation's) says Slurm lost the run, with
 * *WHY pointing at the line that says so; 0 when the evaluation itself
 * ended (its own exit code, a time limit: kevolve's timeout). EXITED_OK: the
 * run exited 0; then only a step ended from outside while it ran counts
 * (its answer came from a run cut short: a task killed, the evaluator
 * answering on), not the retried start-up messages srun prints before a
 * step that then runs. */
int kv_launcher_lost_run(const char *stderr_text, int exited_ok, const char **why);

#endif
