/* The controller: the one loop that drives an evolution. It picks a parent
 * for each iteration's island, has the ensemble draw a mutator (its bandit
 * learning which arm pays), asks that mutator for a child, rejects children
 * that break the rules or repeat earlier code, hands the rest to the
 * evaluation pipeline, and commits every result to the store the moment it
 * arrives. It never runs candidate code itself. */
#ifndef KV_ENGINE_CONTROLLER_H
#define KV_ENGINE_CONTROLLER_H

#include "config/config.h"
#include "engine/llm_feedback.h"
#include "engine/origin.h"
#include "engine/progress.h"
#include "eval/evaluator.h"
#include "llm/client.h"
#include "llm/trace.h"
#include "mutate/ensemble.h"
#include "mutate/prompt.h"
#include "mutate/registry.h"
#include "search/database.h"
#include "store/store.h"
#include "util/u64map.h"

#include <stddef.h>
#include <stdint.h>

/* A child in evaluation. */
typedef struct kv_pending {
    int64_t ticket; /* the iteration that made it */
    kv_program *child;
    kv_llm_trace *trace; /* the model call behind it, or NULL */
    kv_origin origin;
} kv_pending;

/* A mutation in flight (an asynchronous mutator: the LLM). */
typedef struct kv_waiting {
    int64_t ticket;
    kv_program *child;   /* lineage, island and iteration set; no source yet */
    char *parent_source; /* the parent's text (the child is checked against it) */
    kv_origin origin;
} kv_waiting;

/* An iteration given back by a transient fault, asked again when due. */
typedef struct kv_retry {
    int64_t iteration;
    double due; /* monotonic seconds */
} kv_retry;

typedef struct kv_controller {
    const kv_config *cfg; /* borrowed */
    kv_store *store;      /* borrowed */
    kv_database *db;      /* owned */
    kv_evaluator *ev;     /* owned */
    char *output_dir;
    uint64_t seed;
    int64_t next_iteration; /* the next new iteration to produce */
    int64_t last_iteration; /* stop after producing this one */
    kv_u64map code_ids;     /* code hash -> id of the first program with that code */
    kv_pending *pending;    /* children in evaluation */
    size_t n_pending, cap_pending;
    /* Mutators (breed.c). */
    kv_model_config *default_models; /* the built-in mix when llm.models is empty (owned) */
    const kv_model_config *models;   /* the ensemble's list: llm.models or the default mix */
    size_t n_models;
    kv_ensemble *ensemble;          /* which mutator makes each child */
    kv_mutators *mutators;          /* the live mutators */
    kv_llm_client *llm;             /* NULL when no model is used */
    kv_prompt_templates *templates; /* NULL when no model is used */
    kv_waiting *waiting;            /* mutations in flight */
    size_t n_waiting, cap_waiting;
    kv_feedback feedback; /* children waiting for their grade (llm_feedback.h) */
    int llm_concurrency;  /* 0 without LLM */
    kv_retry *retries;    /* iterations to ask again, in iteration order */
    size_t n_retries, cap_retries;
    int *failing_calls;      /* per entry: calls failed in a row by faults that may heal */
    char *fatal;             /* a fault that will not heal: why the run stops (malloc'd) */
    int64_t iterations_done; /* iterations finished: a child stored or a call spent (only
                                ever grows, so the progress line never goes back) */
    /* Search state. */
    double best_fitness; /* NAN until an OK program exists */
    int64_t best_id;
    double best_stop_value; /* best early_stopping_metric value, NAN until known */
    int64_t last_improvement_iteration;
    int metric_reached;   /* early_stopping_patience < 0: a child's metric reached
                             convergence_threshold (OpenEvolve's event-based stop) */
    kv_progress progress; /* the display: on a terminal or as log lines */
    /* Counters for the progress line and the summary, over the whole run
     * (a resume counts the stored programs again); n_session counts the
     * evaluations of this process, for the rate. */
    int64_t n_evaluated, n_failed, n_rejected, n_duplicates, n_migrants, n_session;
    kv_reason_tally failures; /* failed and timed-out children by reason code */
    const char *stop_reason;
} kv_controller;

/* Prepares a controller over an open store: builds the database from the
 * stored programs (replay in id order), restores the mutators' statistics,
 * and starts the evaluation pipeline. EVALUATOR is the command to run.
 * Returns 0 or -1 (message logged). */
int kv_controller_init(kv_controller *c, const kv_config *cfg, kv_store *store,
                       const char *output_dir, const char *evaluator, uint64_t seed);
void kv_controller_free(kv_controller *c);

/* Evaluates and stores the initial program SOURCE (iteration 0, island 0).
 * Returns 0 when it evaluated OK, -1 otherwise (the reason is logged and stored). */
int kv_controller_seed(kv_controller *c, const char *source);
/* Evaluates (in parallel, up to evaluator.parallel_evaluations) and stores
 * the N initial programs SOURCES (iteration 0): program i starts island
 * i mod num_islands; islands beyond N start empty and draw their first
 * parents from any island. Returns 0 when at least one evaluated OK (the
 * others are stored with their reasons and warned about), -1 otherwise;
 * with N == 1, as kv_controller_seed. */
int kv_controller_seed_many(kv_controller *c, const char *const *sources, size_t n);

/* Offers a mutator's CHILD (ownership taken; its lineage fields, iteration,
 * mutator and source set) for evaluation, with the model call that made it
 * (TRACE, ownership taken, may be NULL), stored with the child. A child that changes text outside
 * the EVOLVE-BLOCKs of PARENT_SOURCE or is longer than max_code_length is
 * stored as rejected with the reason; one whose code was seen before is
 * stored as a duplicate; any other is submitted to the evaluation pipeline.
 * Returns 0, or -1 when the store or the pipeline fails. */
int kv_controller_offer_child(kv_controller *c, kv_program *child, const char *parent_source,
                              kv_llm_trace *trace);
/* The same, crediting ORIGIN's arm with what the child gives. */
int kv_controller_offer_child_from(kv_controller *c, kv_program *child, const char *parent_source,
                                   kv_llm_trace *trace, kv_origin origin);

/* Runs iterations until last_iteration, the target score, early stopping,
 * an interrupt, or a fault that will not heal. Returns a KV_EXIT_* code. */
int kv_controller_loop(kv_controller *c);

/* Commits an evaluated CHILD (taken) with the call that made it and the
 * call that graded it (both taken, may be NULL): store, population, best,
 * the mutators' statistics, migration. Returns 0 or -1. */
int kv_controller_commit_child(kv_controller *c, kv_program *child, kv_llm_trace *trace,
                               kv_llm_trace *feedback, kv_origin origin);

/* Stores CHILD as rejected with reason code CODE (copied), REASON (taken)
 * and TRACE (taken, may be NULL), crediting ORIGIN's arm with a failure;
 * CHILD stays the caller's. Returns 0 or -1. */
int kv_controller_store_rejected(kv_controller *c, kv_program *child, const char *code,
                                 char *reason, kv_llm_trace *trace, kv_origin origin);
/* Stores TRACE (not taken; nothing when NULL) linked to PROGRAM_ID (0: none)
 * with OUTCOME. Returns 0 or -1. */
int kv_controller_store_trace(kv_controller *c, const kv_llm_trace *t, int64_t program_id,
                              const char *outcome);
/* Credits entry ORIGIN.arm (nothing for KV_NO_ARM) with OUTCOME, a GAIN
 * over the parent and the evaluation's COST_S, and writes every entry's
 * statistics to the store (inside the caller's transaction when one is
 * open). Returns 0 or -1. */
int kv_controller_record(kv_controller *c, kv_origin origin, kv_bandit_outcome outcome, double gain,
                         double cost_s);

/* Mutators (breed.c). */
/* Sets up the ensemble, its bandit (restored from the store), and the
 * mutators; with language models, the client and the templates. Returns 0
 * or -1 (message logged). */
int kv_breed_init(kv_controller *c);
void kv_breed_free(kv_controller *c);
/* The next iteration to produce: a retry that is due, else a new one (-1
 * when none is left or due). *WAIT_MS gets how long until a retry is due
 * (-1: none waiting). */
int64_t kv_breed_next(kv_controller *c, int *wait_ms);
/* Produces iteration ITERATION's child: draws the parent and the arm, and
 * starts the arm's mutator; a child made at once is offered, one made later
 * waits. Returns 0 or -1. */
int kv_breed_produce(kv_controller *c, int64_t iteration);
/* Handles mutations that finished within TIMEOUT_MS: each becomes a child
 * offered for evaluation, a stored rejection, a spent iteration, a retry,
 * or the run's stop. Returns the count handled, or -1. */
int kv_breed_poll(kv_controller *c, int timeout_ms);

/* Iterations finished so far, stored runs included: each left a child in
 * the store (evaluated, rejected or a duplicate) or spent its model call.
 * Iterations in flight, given back or dropped by a fault do not count. */
int64_t kv_controller_iterations_done(const kv_controller *c);
/* Counts the iteration of CHILD (a stored child or a spent call of that
 * iteration) as finished; initial programs and migrants are none. */
void kv_controller_iteration_done(kv_controller *c, int64_t iteration);

/* Writes the best program and its metrics to OUTPUT_DIR/best/. Returns 0 or -1. */
int kv_controller_write_best(kv_controller *c);

#endif
