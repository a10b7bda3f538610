/* The breeder: makes each iteration's child. It draws the parent and its
 * inspirations from the population, has the ensemble draw an arm (the
 * bandit, restored from the store on resume), starts the arm's mutator and
 * says what its answer leaves to do. It sees the config, the store, the
 * population and the run's seed, never the controller: what a child needs
 * from the run (its evaluation, its rejection stored, the iteration counted,
 * the run stopped) it hands back as a kv_bred for the controller to act on.
 * It owns the mutators, the LLM client and the templates they share, the
 * mutations in flight, and the iterations given back to be asked again. */
#ifndef KV_ENGINE_BREED_H
#define KV_ENGINE_BREED_H

#include "config/config.h"
#include "engine/origin.h"
#include "llm/client.h"
#include "llm/trace.h"
#include "mutate/ensemble.h"
#include "mutate/prompt.h"
#include "mutate/registry.h"
#include "search/database.h"
#include "store/program.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

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

/* What a mutation's answer leaves for the controller to do. */
typedef enum kv_bred_kind {
    KV_BRED_NONE = 0, /* nothing: the mutation waits, or its call is stored */
    KV_BRED_CHILD,    /* offer CHILD, made from PARENT_SOURCE, for evaluation */
    KV_BRED_REJECTED, /* store CHILD (the parent's text) as rejected: CODE, REASON */
    KV_BRED_SPENT,    /* ITERATION is finished: its call is stored, it made no child */
    KV_BRED_FAULT,    /* stop the run: REASON names the model and the fault */
} kv_bred_kind;

/* One answer for the controller; every pointer the receiver's but CODE. */
typedef struct kv_bred {
    kv_bred_kind kind;
    kv_program *child;   /* CHILD, REJECTED: lineage, iteration, mutator and source set */
    char *parent_source; /* CHILD */
    kv_llm_trace *trace; /* CHILD, REJECTED: the model call behind it, or NULL */
    kv_origin origin;    /* CHILD, REJECTED */
    const char *code;    /* REJECTED: the reason code (static) */
    char *reason;        /* REJECTED, FAULT */
    int64_t iteration;   /* SPENT */
} kv_bred;

/* The controller reads LLM, TEMPLATES and LLM_CONCURRENCY (the feedback
 * grades with the same client and templates; model calls in flight have
 * slots of their own), N_WAITING and N_RETRIES; the rest is the breeder's. */
typedef struct kv_breeder {
    const kv_config *cfg; /* borrowed */
    kv_store *store;      /* borrowed: the mutators' statistics, a lineage's attempts */
    kv_database *db;      /* borrowed: the population parents are drawn from */
    uint64_t seed;
    kv_model_config *default_models; /* the built-in mix when llm.models is empty (owned) */
    const kv_model_config *models;   /* the ensemble's list: llm.models or the default mix */
    size_t n_models;
    kv_ensemble *ensemble;          /* which mutator makes each child */
    kv_mutators *mutators;          /* the live mutators */
    kv_llm_client *llm;             /* NULL when no model is used */
    kv_prompt_templates *templates; /* NULL when no model is used */
    int llm_concurrency;            /* 0 without LLM */
    kv_waiting *waiting;            /* mutations in flight */
    size_t n_waiting, cap_waiting;
    kv_retry *retries; /* iterations to ask again, in iteration order */
    size_t n_retries, cap_retries;
    int *failing_calls; /* per entry: calls failed in a row by faults that may heal */
} kv_breeder;

/* Readies B over the run's CFG, STORE and population DB (all borrowed):
 * the ensemble, its bandit (restored from the store), and the mutators;
 * with language models, the client and the templates. The iterations up to
 * MADE that left no trace in the store (a run stopped) are queued to be
 * made again. Returns 0 or -1 (message logged); kv_breed_free either way. */
int kv_breed_init(kv_breeder *b, const kv_config *cfg, kv_store *store, kv_database *db,
                  uint64_t seed, int64_t made);
/* Frees what B owns (the mutations in flight dropped); B may be zeroed. */
void kv_breed_free(kv_breeder *b);

/* An iteration given back whose pause is over, taken off the queue, or -1
 * when none is; *WAIT_MS gets how long until one that is not due yet will
 * be (-1: none waiting). */
int64_t kv_breed_due(kv_breeder *b, int *wait_ms);
/* Produces iteration ITERATION's child: draws the parent and the arm, and
 * starts the arm's mutator. *OUT gets what is left for the caller to do
 * (KV_BRED_NONE when the answer comes later), whatever the return: 0, or -1
 * when the mutator or the store failed. */
int kv_breed_produce(kv_breeder *b, int64_t iteration, kv_bred *out);
/* One mutation that finished within TIMEOUT_MS: 1 with *OUT what its
 * answer leaves to do, 0 when none finished (or none is in flight), -1 when
 * a mutator or the store failed (*OUT still to act on). */
int kv_breed_next(kv_breeder *b, int timeout_ms, kv_bred *out);

/* Credits entry ORIGIN.arm (nothing for KV_NO_ARM) with OUTCOME, a GAIN
 * over the parent and the evaluation's COST_S, and writes every entry's
 * statistics to the store (inside the caller's transaction when one is
 * open). Returns 0 or -1. */
int kv_breed_record(kv_breeder *b, kv_origin origin, kv_bandit_outcome outcome, double gain,
                    double cost_s);

#endif
