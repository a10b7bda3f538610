/* kevolve: the library's public face. An evolution is started with
 * kv_run_evolution() and continued with kv_resume_evolution(); everything
 * it learns lands in OUTPUT_DIR/run.db. */
#ifndef KEVOLVE_KEVOLVE_H
#define KEVOLVE_KEVOLVE_H

#include <stdint.h>

/* Exit codes of the kevolve command (and return values of the functions
 * below): one per kind of outcome, the same from every subcommand. */
enum {
    KV_EXIT_OK = 0,           /* finished: iterations done, target reached, or early stop */
    KV_EXIT_FAILURE = 1,      /* the run cannot go on: the initial program did not evaluate, the
                                 evaluator cannot run, a language model refuses for good */
    KV_EXIT_USAGE = 2,        /* bad command line or configuration, caught before or at the start */
    KV_EXIT_STORE = 3,        /* the store cannot be read: damaged, not a kevolve store, or from a
                                 newer kevolve */
    KV_EXIT_BUSY = 4,         /* another kevolve process is writing this run (it holds its lock) */
    KV_EXIT_IO = 5,           /* the store or output folder cannot be written (disk full, I/O error,
                                 read-only): stopped cleanly, every committed result kept */
    KV_EXIT_INTERRUPTED = 130 /* stopped by SIGINT/SIGTERM; the store holds all finished work */
};

typedef struct kv_run_options {
    const char *config_path;     /* required for a new run; resume: a corrected config */
    const char *initial_program; /* overrides the config's initial_program */
    const char *evaluator;       /* overrides the config's evaluator */
    const char *output_dir;      /* default: "<config dir>/out" */
    long iterations;             /* > 0 overrides max_iterations (resume: this many more) */
    int64_t seed;
    int has_seed;
    double target_score;
    int has_target_score;
    const char *api_base;        /* overrides llm.api_base */
    const char *primary_model;   /* replaces llm.models (OpenEvolve's --primary-model) */
    const char *secondary_model; /* with primary_model */
    int force;                   /* a new run may replace an existing store in output_dir */
    int progress;                /* 1: one-line progress display (a terminal); 0: log lines */
} kv_run_options;

/* Starts a new evolution. Returns a KV_EXIT_* code. */
int kv_run_evolution(const kv_run_options *opts);
/* Continues the run stored in PATH (an output folder or its run.db).
 * opts->iterations > 0 runs that many more iterations; else up to the
 * run's stored max_iterations. opts->config_path, api_base and the models
 * replace the settings that do not change what the run searched (a change
 * of any other is refused, KV_EXIT_USAGE). Returns a KV_EXIT_* code. */
int kv_resume_evolution(const char *path, const kv_run_options *opts);

#endif
