/* The controller: the one loop that drives an evolution. It picks a parent
 * for each iteration's island, asks a mutator for a child, rejects children
 * that break the rules or repeat earlier code, hands the rest to the
 * evaluation pipeline, and commits every result to the store the moment it
 * arrives. It never runs candidate code itself. */
#ifndef KV_ENGINE_CONTROLLER_H
#define KV_ENGINE_CONTROLLER_H

#include "config/config.h"
#include "eval/evaluator.h"
#include "llm/client.h"
#include "llm/ensemble.h"
#include "mutate/prompt.h"
#include "search/database.h"
#include "store/store.h"
#include "util/u64map.h"

#include <stdint.h>

/* What a language-model call produced, kept until its child is stored (the
 * llm_calls row links to the child). All strings owned. */
typedef struct kv_llm_trace {
    int64_t iteration;
    char *model, *endpoint, *system_prompt, *user_prompt, *reply, *error;
    long prompt_tokens, completion_tokens, http_status;
    double cost_usd, latency_s;
    int attempts;
} kv_llm_trace;

void kv_llm_trace_free(kv_llm_trace *t);

/* Counts by reason code, in the order first seen (progress.c). */
typedef struct kv_reason_tally {
    char **codes;
    int64_t *counts;
    size_t n, cap;
} kv_reason_tally;

/* Counts one more CODE (NULL counts as "unknown"). */
void kv_reason_tally_add(kv_reason_tally *t, const char *code);
void kv_reason_tally_free(kv_reason_tally *t);

typedef struct kv_pending {
    int64_t ticket; /* the iteration that made it */
    kv_program *child;
    kv_llm_trace *trace; /* the model call behind it, or NULL */
} kv_pending;

/* A child waiting for a model's reply. */
typedef struct kv_llm_waiting {
    int64_t ticket;                    /* the iteration */
    kv_program *child;                 /* lineage, island and mutator set; no source yet */
    char *parent_source;               /* the reply is applied to this text */
    size_t model_index;                /* entry of llm.models, for the ensemble's health */
    char *system_prompt, *user_prompt; /* redacted, for the store */
    int feedback;                      /* 1: a grade of an evaluated CHILD (evaluator_models) */
    kv_llm_trace *origin;              /* feedback: the call that made CHILD, or NULL (owned) */
} kv_llm_waiting;

typedef struct kv_controller {
    const kv_config *cfg; /* borrowed */
    kv_store *store;      /* borrowed */
    kv_database *db;      /* owned */
    kv_evaluator *ev;     /* owned */
    char *output_dir;
    uint64_t seed;
    int64_t next_iteration; /* the next iteration to produce */
    int64_t last_iteration; /* stop after producing this one */
    kv_u64map code_ids;     /* code hash -> id of the first program with that code */
    kv_pending *pending;    /* children in evaluation */
    size_t n_pending, cap_pending;
    double mutator_weights[3];       /* tune, gi, crossover: fallbacks when the drawn one cannot */
    kv_model_config *default_models; /* the built-in mix when llm.models is empty (owned) */
    kv_ensemble *ensemble;           /* which mutator makes each child */
    kv_llm_client *llm;              /* NULL when no LLM entry has weight */
    kv_prompt_templates *templates;  /* NULL when no LLM */
    kv_llm_waiting *llm_pending;     /* children waiting for a reply */
    size_t n_llm_pending, cap_llm_pending;
    int llm_concurrency; /* 0 without LLM */
    double best_fitness; /* NAN until an OK program exists */
    int64_t best_id;
    double best_stop_value; /* best early_stopping_metric value, NAN until known */
    int64_t last_improvement_iteration;
    int metric_reached; /* early_stopping_patience < 0: a child's metric reached
                           convergence_threshold (OpenEvolve's event-based stop) */
    int progress;
    double started_at;
    /* Counters for the progress line and the summary, over the whole run
     * (a resume counts the stored programs again); n_session counts the
     * evaluations of this process, for the rate. */
    int64_t n_evaluated, n_failed, n_rejected, n_duplicates, n_migrants, n_session;
    kv_reason_tally failures; /* failed and timed-out children by reason code */
    const char *stop_reason;
} kv_controller;

/* Prepares a controller over an open store: builds the database from the
 * stored programs (replay in id order) and starts the evaluation pipeline.
 * EVALUATOR is the command to run. Returns 0 or -1 (message logged). */
int kv_controller_init(kv_controller *c, const kv_config *cfg, kv_store *store,
                       const char *output_dir, const char *evaluator, uint64_t seed);
void kv_controller_free(kv_controller *c);

/* Evaluates and stores the initial program SOURCE (iteration 0, island 0).
 * Returns 0 when it evaluated OK, -1 otherwise (the reason is logged and stored). */
int kv_controller_seed(kv_controller *c, const char *source);

/* Offers a mutator's CHILD (ownership taken; its lineage fields, iteration,
 * mutator and source set) for evaluation, with the model call that made it
 * (TRACE, ownership taken, may be NULL), stored with the child. A child that changes text outside
 * the EVOLVE-BLOCKs of PARENT_SOURCE or is longer than max_code_length is
 * stored as rejected with the reason; one whose code was seen before is
 * stored as a duplicate; any other is submitted to the evaluation pipeline.
 * Returns 0, or -1 when the store or the pipeline fails. */
int kv_controller_offer_child(kv_controller *c, kv_program *child, const char *parent_source,
                              kv_llm_trace *trace);

/* Runs iterations until last_iteration, the target score, early stopping or
 * an interrupt. Returns a KV_EXIT_* code. */
int kv_controller_loop(kv_controller *c);

/* Commits an evaluated CHILD (taken) with the call that made it and the
 * call that graded it (both taken, may be NULL): store, population, best,
 * migration. Returns 0 or -1. */
int kv_controller_commit_child(kv_controller *c, kv_program *child, kv_llm_trace *trace,
                               kv_llm_trace *feedback);

/* Stores CHILD as rejected with reason code CODE (copied), REASON (taken)
 * and TRACE (taken, may be NULL); CHILD stays the caller's. Returns 0 or -1. */
int kv_controller_store_rejected(kv_controller *c, kv_program *child, const char *code,
                                 char *reason, kv_llm_trace *trace);
/* Stores TRACE (not taken; nothing when NULL) linked to PROGRAM_ID (0: none)
 * with OUTCOME. Returns 0 or -1. */
int kv_controller_store_trace(kv_controller *c, const kv_llm_trace *t, int64_t program_id,
                              const char *outcome);

/* The LLM mutator (llm_mutation.c). */
/* Sets up the ensemble and, when it holds language models, the client and
 * templates. Returns 0 or -1 (message logged). */
int kv_llm_mutation_init(kv_controller *c);
void kv_llm_mutation_free(kv_controller *c);
/* Asks the model of ensemble entry INDEX for a child of SEL's parent; CHILD
 * (ownership taken) carries the lineage. Returns 0, 1 when the budget is
 * spent (nothing submitted; CHILD freed), or -1. */
int kv_llm_mutation_start(kv_controller *c, const kv_selection *sel, kv_program *child,
                          size_t index);
/* evaluator.use_llm_feedback: asks one of llm.evaluator_models to grade the
 * evaluated CHILD (taken, with TRACE); the grade becomes metrics and the
 * child is committed when the reply comes. Returns 0 or -1. */
int kv_llm_feedback_start(kv_controller *c, kv_program *child, kv_llm_trace *trace);
/* Handles replies that arrived within TIMEOUT_MS: each becomes a child
 * offered for evaluation, or a stored rejection, or a stored failed call.
 * Returns the count handled, or -1. */
int kv_llm_mutation_poll(kv_controller *c, int timeout_ms);

/* Writes the best program and its metrics to OUTPUT_DIR/best/. Returns 0 or -1. */
int kv_controller_write_best(kv_controller *c);

#endif
