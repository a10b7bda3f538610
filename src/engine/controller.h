/* The controller: the one loop that drives an evolution. For each
 * iteration it has the breeder (breed.h) make a child, rejects children
 * that break the rules or repeat earlier code, hands the rest to the
 * evaluation pipeline, has the LLM feedback (llm_feedback.h) grade them
 * when the config asks, and commits every result to the store the moment
 * it arrives, with what it taught the breeder's bandit. The breeder, the
 * feedback and the progress display (progress.h) never see the controller:
 * the first two hand back what they made for it to act on, the display
 * reads the counts it is handed. It never runs candidate code itself. */
#ifndef KV_ENGINE_CONTROLLER_H
#define KV_ENGINE_CONTROLLER_H

#include "config/config.h"
#include "engine/breed.h"
#include "engine/llm_feedback.h"
#include "engine/origin.h"
#include "engine/progress.h"
#include "eval/evaluator.h"
#include "llm/trace.h"
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
    kv_breeder breed;        /* the mutators, the mutations in flight (breed.h) */
    kv_feedback feedback;    /* children waiting for their grade (llm_feedback.h) */
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
     * (a resume counts the stored programs again); n_this_process counts the
     * evaluations of this process, for the rate. */
    int64_t n_evaluated, n_failed, n_rejected, n_duplicates, n_migrants, n_this_process;
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

/* Runs iterations until last_iteration, the target score, early stopping,
 * an interrupt, or a fault that will not heal. Returns a KV_EXIT_* code. */
int kv_controller_loop(kv_controller *c);

/* Iterations finished so far, stored runs included: each left a child in
 * the store (evaluated, rejected or a duplicate) or spent its model call.
 * Iterations in flight, given back or dropped by a fault do not count. */
int64_t kv_controller_iterations_done(const kv_controller *c);
/* Writes the best program and its metrics to OUTPUT_DIR/best/. Returns 0 or -1. */
int kv_controller_write_best(kv_controller *c);

#endif
