/* The run manifest: what makes a run reproducible and resumable — the config
 * text and folder, the effective overrides, the seed, the evaluator, and the
 * versions of kevolve, the host and the compilers — kept in the store's meta
 * table. */
#ifndef KV_ENGINE_MANIFEST_H
#define KV_ENGINE_MANIFEST_H

#include "config/config.h"
#include "store/store.h"

#include <kevolve/kevolve.h>

/* Applies the command line's overrides O (paths made absolute, iterations,
 * seed, target score, models) to CFG. */
void kv_run_options_apply(const kv_run_options *o, kv_config *cfg);
/* The programs a run starts from: initial_program when set (the command
 * line's replaces both keys), else initial_programs. Returns their count
 * and points *PATHS at them (owned by CFG). */
size_t kv_run_initial_programs(const kv_config *cfg, const char *const **paths);

/* The command that evaluates a program for CFG: the config's evaluator (an
 * absolute path that must exist); for a built-in kernel task
 * (evaluator.task), whose children are jobs for kevolve's own worker (the
 * controller makes that evaluator: src/eval/job_build.h), a description
 * ("kernel task NAME (backend B)") for the manifest. Returns it malloc'd,
 * or NULL with ERR filled. The manifest also gets the devices a kernel
 * task runs on ("devices", written by the controller). */
char *kv_manifest_evaluator_command(const kv_config *cfg, const char *output_dir,
                                    kv_config_error *err);

/* Writes the manifest of a new run started with options O (may be NULL).
 * Returns 0 or -1. */
int kv_manifest_write(kv_store *s, const kv_config *cfg, const char *evaluator,
                      const kv_run_options *o);

/* Keeps the endpoint and models of O's command line (any may be unset) for
 * the resumes to come, inside the caller's transaction. Returns 0 or -1. */
int kv_manifest_set_cli(kv_store *s, const kv_run_options *o);

/* Rebuilds the run's config from the manifest (stored text, folder and
 * overrides). Returns 0, or -1 with ERR filled. */
int kv_manifest_load_config(kv_store *s, kv_config *cfg, kv_config_error *err);
/* The stored config file alone, without the command line's overrides.
 * Returns 0, or -1 with ERR filled (CFG freeable either way). */
int kv_manifest_load_file(kv_store *s, kv_config *cfg, kv_config_error *err);
/* What kv_manifest_apply leaves as CFG has it. */
enum { KV_MANIFEST_KEEP_MAX_ITERATIONS = 1, KV_MANIFEST_KEEP_TARGET_SCORE = 2 };
/* Applies the manifest's overrides to CFG: the programs and evaluator the
 * run started from, its seed, iterations and target score (but those in
 * KEEP), and the models and endpoint of its command line. */
void kv_manifest_apply(kv_store *s, kv_config *cfg, unsigned keep);

#endif
