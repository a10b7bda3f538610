/* Run configuration: a YAML file (OpenEvolve's keys, plus kevolve's own) read
 * into typed structs, validated, with every error naming file:line, the key,
 * and the nearest known key. Each key is documented once, in the key table in
 * config_keys.c, which also generates the README's reference
 * (`kevolve config-keys`). */
#ifndef KV_CONFIG_CONFIG_H
#define KV_CONFIG_CONFIG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* One entry of llm.models / llm.evaluator_models. An entry named
 * "builtin:NAME" is the built-in mutator NAME of the registry
 * (src/mutate/registry.c), standing in the ensemble with its weight. Unset
 * numeric fields inherit the llm section's value. */
typedef struct kv_model_config {
    char *name;
    double weight;       /* default 1.0 */
    char *api_base;      /* NULL: llm.api_base */
    char *api_key;       /* NULL: llm.api_key, else $OPENAI_API_KEY at call time; never stored */
    double temperature;  /* NAN: unset (inherit) */
    double top_p;        /* NAN: unset */
    int max_tokens;      /* 0: inherit */
    double timeout;      /* seconds; 0: inherit */
    int retries;         /* -1: inherit */
    double retry_delay;  /* seconds; NAN: inherit */
    int64_t random_seed; /* used when has_random_seed */
    int has_random_seed;
    char *reasoning_effort;       /* NULL: unset */
    int is_reasoning;             /* -1: guess from the name; 0/1: forced */
    double price_input_per_mtok;  /* USD per million prompt tokens (0: unknown) */
    double price_output_per_mtok; /* USD per million completion tokens */
    char *provider;               /* OpenEvolve's backend name; NULL: llm.provider */
    double max_budget_usd;        /* OpenEvolve's per-call budget of CLI backends; not used */
} kv_model_config;

typedef struct kv_llm_config {
    kv_model_config *models; /* may be empty: then the built-in mutators run alone */
    size_t n_models;
    kv_model_config *evaluator_models;
    size_t n_evaluator_models;
    char *api_base;      /* default "https://api.openai.com/v1" */
    char *api_key;       /* may be NULL */
    double temperature;  /* default 0.7 */
    double top_p;        /* default 0.95 */
    int max_tokens;      /* default 4096 */
    double timeout;      /* default 60 s */
    int retries;         /* default 3 */
    double retry_delay;  /* default 5 s */
    char *primary_model; /* OpenEvolve's shorthand; becomes a models entry when models is empty */
    double primary_model_weight; /* default 0.8 */
    char *secondary_model;
    double secondary_model_weight; /* default 0.2 */
    double max_budget_usd;         /* 0: no budget */
    int max_concurrency;           /* requests in flight at once; default 8 */
    int fallback_after;            /* failures in a row before a model's draws go to another;
                                      0: never; default 3 */
    int give_up_after;             /* calls failed in a row by faults that may heal before the
                                      run stops; default 5 */
    int bandit;                    /* 1: a bandit learns which entry to draw; default 1 */
    double bandit_min_share;       /* least share of the draws per entry; default 0.05 */
    double bandit_prior_results;   /* results before the bandit makes half the draws; default 8 */
    double bandit_cost_floor;      /* seconds an evaluation costs at least; default 1 */
    char *reasoning_effort;        /* default of the models' reasoning_effort; NULL: unset */
    int64_t random_seed;           /* sent with requests when has_random_seed */
    int has_random_seed;
    char
        *provider; /* OpenEvolve's backend ("openai", "claude_code"); kevolve speaks OpenAI's API */
    int manual_mode; /* OpenEvolve's human-in-the-loop mode; not supported (warned) */
} kv_llm_config;

typedef struct kv_prompt_config {
    char *template_dir;
    char *system_message;
    char *evaluator_system_message;
    int num_top_programs;                   /* default 3 */
    int num_diverse_programs;               /* default 2 */
    int use_template_stochasticity;         /* default 1: {placeholders} of template_variations are
                                               replaced by a random phrasing per prompt */
    int include_artifacts;                  /* default 1 */
    int max_artifact_bytes;                 /* default 20480 */
    int artifact_security_filter;           /* default 1 */
    int suggest_simplification_after_chars; /* default 500 */
    int include_changes_under_chars;        /* default 100 */
    int concise_implementation_max_lines;   /* default 10 */
    int comprehensive_implementation_min_lines; /* default 50 */
    int max_prompt_chars;                /* kevolve: size budget of a prompt; default 60000 */
    json_t *template_variations;         /* {placeholder: [phrasings]}; NULL when unset */
    int diff_summary_max_line_len;       /* change summaries: longer lines are cut; default 100 */
    int diff_summary_max_lines;          /* change summaries: lines shown per block; default 30 */
    int programs_as_changes_description; /* OpenEvolve's large-codebase mode; not built (warned) */
    char *system_message_changes_description;
    char *initial_changes_description;
} kv_prompt_config;

typedef struct kv_database_config {
    char *db_path; /* OpenEvolve's checkpoint folder; kevolve ignores it (warned) */
    int in_memory;
    int log_prompts;                  /* default 1 */
    int population_size;              /* default 1000 */
    int archive_size;                 /* default 100 */
    int num_islands;                  /* default 5 */
    double elite_selection_ratio;     /* default 0.1 */
    double exploration_ratio;         /* default 0.2 */
    double exploitation_ratio;        /* default 0.7 */
    double failed_parent_probability; /* chance of a failed parent; default 0 */
    char **objectives; /* kevolve: the top-level `objectives` (config/objectives.h); none */
    size_t n_objectives;
    char **feature_dimensions; /* default {"complexity", "diversity"} */
    size_t n_feature_dimensions;
    int *feature_bins;            /* one per dimension, default 10 */
    int diversity_reference_size; /* default 20 */
    int migration_interval;       /* generations between migrations; default 50 */
    double migration_rate;        /* fraction of an island that migrates; default 0.1 */
    int64_t random_seed;          /* unset: the top-level random_seed */
    int has_random_seed;
    char *diversity_metric;      /* default "edit_distance" */
    char *artifacts_base_path;   /* absolute; NULL: inside the run's folder */
    int artifact_size_threshold; /* bytes; larger artifacts go to files; default 32768 */
    int cleanup_old_artifacts;   /* default 1 */
    int artifact_retention_days; /* default 30 */
} kv_database_config;

typedef struct kv_evaluator_config {
    double timeout;  /* seconds per evaluation (each stage); default 300; with a task, the job's
                        whole budget (limits.total_s) */
    int max_retries; /* retries after a crash (not after a timeout); default 3 */
    int cascade_evaluation;     /* -1 unset: on for an OpenEvolve Python module (OpenEvolve's
                                   default), off for a command */
    double *cascade_thresholds; /* score needed after stage i to run stage i+1 */
    size_t n_cascade_thresholds;
    int parallel_evaluations; /* default 1 (OpenEvolve: 4) */
    int use_llm_feedback;
    double llm_feedback_weight; /* default 0.1 */
    int enable_artifacts;       /* default 1 */
    int max_artifact_storage;   /* bytes kept per artifact; default 102400 */
    long memory_limit_mb;       /* kevolve: RLIMIT_AS of an evaluation; 0 = none; default 0 */
    char *task;                 /* kevolve: built-in kernel task name, instead of a command */
    char *backend;              /* kevolve: kernel backend: auto, cpu, opencl, cuda; default auto */
    int quick;     /* kevolve: the harness's quick mode (fewer trials, shorter timing); default 0 */
    int screening; /* kevolve: the harness stops children slower than their parent; 1 */
    int energy;    /* kevolve: the harness measures each timed scenario's energy per call; 0 */
    double screen_keep;    /* kevolve: the fraction of the parent's speed to go on; 0: the task's */
    double kernel_timeout; /* kevolve: one call of a candidate kernel; 0: the judge's (10, 5) */
    double device_wait;    /* kevolve: longest wait for a device another process holds; 600 */
    double baseline_max_age; /* kevolve: a kept baseline older than this is timed again; 900 */
    char **scenarios;        /* kevolve: the task's scenarios to time (names or tags); none: all */
    size_t n_scenarios;
    char **devices; /* kevolve: {"auto"}, or the backend's device indices to evaluate on */
    size_t n_devices;
    char *launcher;        /* kevolve: "local" (default) or "slurm": how evaluations start */
    char *slurm_partition; /* kevolve: srun --partition, or NULL */
    char *slurm_account;   /* kevolve: srun --account, or NULL */
    char *slurm_gres;      /* kevolve: srun --gres (gpu:1), or NULL */
    double slurm_time;     /* kevolve: srun --time in seconds; 0: from timeout + device_wait */
    char **slurm_args;     /* kevolve: further srun arguments */
    size_t n_slurm_args;
    int slurm_retries; /* kevolve: launches lost to Slurm tried again; default 3 */
    char *srun;        /* kevolve: the srun program; default "srun" */
    int distributed;   /* OpenEvolve's flag; not supported (warned when true) */
    int python_module; /* kevolve: -1 auto, 1/0: run the evaluator as an OpenEvolve module or not */
    char *python;      /* kevolve: interpreter of OpenEvolve modules; default "python3" */
    int python_pool;   /* kevolve: warm interpreters that import the module once; default 0 */
} kv_evaluator_config;

typedef struct kv_config {
    char *path; /* the file it was read from (absolute), or NULL */
    char *dir;  /* its directory: relative paths are resolved against it */
    char *text; /* the file's text as read (before ${VAR} expansion, so no secrets) */

    int max_iterations;      /* default 100 */
    int checkpoint_interval; /* default 10: how often the best program is written to best/ */
    char *log_level;         /* default "INFO" */
    int64_t random_seed;     /* default 42 */
    int has_random_seed;
    char *language;           /* default "python"; guessed from initial_program's (or the first of
                                 initial_programs') suffix when unset */
    char *file_suffix;        /* default from initial_program, else ".py" */
    int diff_based_evolution; /* default 1 */
    int max_code_length;      /* default 200000 characters */
    int early_stopping_patience;  /* iterations without improvement; 0 = off; negative:
                                     stop when the metric equals convergence_threshold */
    double convergence_threshold; /* improvement smaller than this does not count; default 0.001 */
    char *early_stopping_metric;  /* default "combined_score" */
    char *initial_program;        /* absolute path, or NULL */
    /* Several starting programs (absolute paths): seed i starts island i mod
     * database.num_islands. Not given together with initial_program. */
    char **initial_programs;
    size_t n_initial_programs;
    /* Absolute path of the evaluator command, or NULL. YAML: top-level `evaluator: PATH` or
     * evaluator.program. Not named `evaluator`: that is the section below. */
    char *evaluator_program;
    double target_score; /* stop when the best fitness reaches it */
    int has_target_score;

    kv_llm_config llm;
    kv_prompt_config prompt;
    kv_database_config database;
    kv_evaluator_config evaluator;

    /* Top-level mappings kevolve does not know (algotune:, novelty:, ...):
     * kept as a JSON object and handed to the evaluator. Never NULL after load. */
    json_t *evaluator_sections;

    /* Warnings the loader logged ("config.yaml:3: allow_full_rewrites: ..."),
     * kept so callers and tests can show or check them. Owned. */
    char **warnings;
    size_t n_warnings;
} kv_config;

/* Error detail of a failed load. */
typedef struct kv_config_error {
    char message[1024]; /* "config.yaml:12: database.migraton_interval: unknown key; did you mean
                           'migration_interval'?" */
} kv_config_error;

/* Sets M to an entry with every field unset (inherit) and weight 1. */
void kv_config_model_init(kv_model_config *m);
/* Replaces llm.models by PRIMARY (weight primary_model_weight) and, when not
 * NULL, SECONDARY (secondary_model_weight), as OpenEvolve's
 * --primary-model/--secondary-model do; API_BASE, when not NULL, becomes
 * llm.api_base. */
void kv_config_use_models(kv_config *c, const char *primary, const char *secondary,
                          const char *api_base);

/* Fills C with defaults (no file). The loaders call it themselves. */
void kv_config_init(kv_config *c);
/* Reads PATH into C (which need not be initialised). Returns 0, or -1 with
 * ERR filled and C left freeable. Warnings (keys kevolve reads but ignores) go
 * to the log and to c->warnings. */
int kv_config_load(const char *path, kv_config *c, kv_config_error *err);
/* Flags of kv_config_load_ex. */
enum {
    /* A secret (an API key) whose ${VAR} is not set is left unset, with a
     * warning, instead of failing the load: checking a config (run
     * --dry-run) needs no secrets. */
    KV_CONFIG_SECRETS_OPTIONAL = 1,
};
/* kv_config_load with FLAGS (KV_CONFIG_*). */
int kv_config_load_ex(const char *path, kv_config *c, kv_config_error *err, unsigned flags);
/* Same from a string; ORIGIN names it in messages; DIR resolves relative paths. */
int kv_config_load_string(const char *text, const char *origin, const char *dir, kv_config *c,
                          kv_config_error *err);
/* Checks cross-field rules (ratios in [0,1], islands >= 1, bins >= 1, ...).
 * Returns 0 or -1 with ERR filled. Called by the loaders. */
int kv_config_validate(const kv_config *c, kv_config_error *err);
void kv_config_free(kv_config *c);
/* The effective settings as YAML, API keys shown as "***". Caller frees. */
char *kv_config_dump(const kv_config *c);
/* The keys whose effective values differ between A and B, in the key
 * table's order: a JSON array of {"key": "llm.api_base", "from": TEXT, "to":
 * TEXT, "resumable": BOOL} (values as one line of YAML; secrets compare and
 * show as "***" when set; "resumable": whether a resumed run may change
 * it). A section handed to the evaluator is a key of its own (from and to
 * as JSON, "null" when absent; not resumable). New reference. */
json_t *kv_config_diff(const kv_config *a, const kv_config *b);
/* The documented key table as Markdown (for the README). Caller frees. */
char *kv_config_reference_markdown(void);

#endif
