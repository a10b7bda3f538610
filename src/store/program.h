/* A program: one source file with its lineage, evaluation results and place
 * in the population. This is the record every module passes around; the
 * store persists it, search places it, mutators read it. */
#ifndef KV_STORE_PROGRAM_H
#define KV_STORE_PROGRAM_H

#include <jansson.h>
#include <stdint.h>

typedef enum kv_status {
    KV_STATUS_OK = 0,    /* evaluated; metrics hold its results */
    KV_STATUS_FAILED,    /* the evaluator ran and failed (crash, bad output, error) */
    KV_STATUS_TIMEOUT,   /* the evaluation was killed at its time limit */
    KV_STATUS_REJECTED,  /* never evaluated: the child broke a rule (edit outside an
                            EVOLVE-BLOCK, too long, empty change) */
    KV_STATUS_DUPLICATE, /* never evaluated: identical to an earlier program */
    KV_STATUS_COUNT
} kv_status;

/* "ok", "failed", "timeout", "rejected", "duplicate". */
const char *kv_status_name(kv_status s);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int kv_status_parse(const char *name, kv_status *out);

/* One scenario of a kernel task as the harness measured it for a program
 * (a row of the store's scenario_results). Times in microseconds; NAN
 * where unknown. */
typedef struct kv_scenario_result {
    char *scenario; /* the task's scenario name */
    char *kind;     /* its class: the scenario's first tag ("decode", "prefill") */
    double weight;  /* in the score's geometric mean */
    double median_us, iqr_us;
    double baseline_us; /* the task's baseline on the same device */
    double speedup;     /* baseline_us / median_us */
    double roofline_fraction;
    double max_abs_err, tol_ratio; /* the worst error, and over what the tolerance allows */
    double energy_j;               /* per call, where a counter measured it */
    int screened;                  /* 1: the screen stopped the program after this scenario */
} kv_scenario_result;

/* A kernel program's scenarios: where it ran, and a row per timed scenario. */
typedef struct kv_scenario_results {
    char *task, *backend, *device; /* device: its name, as the backend reports it */
    int device_index;              /* the backend's numbering */
    kv_scenario_result *rows;
    size_t n;
} kv_scenario_results;

/* Frees R's strings and rows and empties it. */
void kv_scenario_results_clear(kv_scenario_results *r);

typedef struct kv_program {
    int64_t id;              /* store row id; 0 until stored */
    int64_t parent_id;       /* 0 for the initial program */
    int64_t other_parent_id; /* second parent of a crossover, else 0 */
    int island;              /* island it belongs to (the one its parent was sampled for) */
    int generation;          /* lineage depth: parent's generation + 1; initial = 0 */
    int64_t iteration;       /* controller iteration that produced it (initial = 0) */
    char *source;            /* whole program text (owned) */
    char *mutator;           /* "initial", "tune", "gi", "crossover", "migration", "llm:MODEL" */
    char *change_summary;    /* what the mutator changed, one line or a few (owned, may be NULL) */
    json_t *metrics; /* object name -> value, as the evaluator reported (owned ref, may be NULL) */
    json_t *artifacts; /* object name -> string or JSON (owned ref, may be NULL) */
    json_t *stages;    /* array, one object per cascade stage (owned ref, may be NULL) */
    json_t *features;  /* object dimension -> bin index, set by search (owned ref, may be NULL) */
    double fitness;    /* set by search from metrics; NAN until then or when not OK */
    kv_status status;
    char *status_reason;           /* why it failed or was rejected (owned, may be NULL) */
    char *reason_code;             /* the same as a short code ("compile_error", "evaluator_crash",
                                      "non_finite_fitness", "same_code", ...); NULL when OK (owned) */
    int64_t duplicate_of;          /* a duplicate: the program it repeats, else 0 */
    int is_migrant;                /* 1 for a copy made by migration */
    int64_t migrated_from;         /* id of the program a migrant copies, else 0 */
    uint64_t code_hash;            /* kv_hash_code(source) */
    double created_at;             /* unix time, seconds */
    double eval_seconds;           /* wall time of its evaluation */
    kv_scenario_results scenarios; /* a kernel task's rows (empty otherwise; owned) */
} kv_program;

/* New zeroed program with fitness NAN and status OK. Never returns NULL. */
kv_program *kv_program_new(void);
/* Deep copy (JSON values are copied too). */
kv_program *kv_program_clone(const kv_program *p);
void kv_program_free(kv_program *p);
/* Replaces p->source (copied) and recomputes code_hash. */
void kv_program_set_source(kv_program *p, const char *source);
/* Numeric metric NAME, or NAN when absent or not a number. */
double kv_program_metric(const kv_program *p, const char *name);

#endif
