/* The mutators, in one table. A mutator makes a child of a parent: the
 * built-in operators (tune, gi, crossover) answer at once; the language-model
 * mutator asks a model and answers when the reply comes. Each is a
 * kv_mutator_def (a name, start, poll); an arm of llm.models names one:
 * "builtin:NAME" the built-in of that name, any other name the language
 * model of that name (through the "llm" mutator).
 *
 * Adding a mutator is one file that defines a kv_mutator_def and one line in
 * the table in registry.c; its arms are then "builtin:NAME" in llm.models,
 * drawn by the ensemble and its bandit like any other, and its
 * default_weight puts it in the mix used when llm.models is empty. Nothing
 * else lists the mutators: the ensemble, that mix and the messages naming
 * the built-ins all read the table.
 *
 * What a mutation can come to (kv_mutation_status) decides what the
 * controller does with its iteration: a child is checked and evaluated; an
 * unusable answer is stored as a rejected child (its reason reaches the next
 * prompt on the lineage); a failed call consumes the iteration; a transient
 * fault gives the iteration back, to be asked again after a pause; a fault
 * that will not heal stops the run. */
#ifndef KV_MUTATE_REGISTRY_H
#define KV_MUTATE_REGISTRY_H

#include "config/config.h"
#include "llm/client.h"
#include "llm/trace.h"
#include "mutate/prompt.h"
#include "store/program.h"
#include "store/store.h"
#include "util/rng.h"

#include <stddef.h>
#include <stdint.h>

typedef enum kv_mutation_status {
    KV_MUTATION_CHILD = 0, /* source and summary hold the child */
    KV_MUTATION_UNCHANGED, /* this mutator has nothing to change in the parent, or failed on
                              it (reason says why): another may be tried */
    KV_MUTATION_REJECTED,  /* the answer could not make a child (reason): stored as rejected */
    KV_MUTATION_FAILED,    /* the call failed for this request (reason): the iteration is spent */
    KV_MUTATION_RETRY,     /* a fault that may heal (reason): the iteration is not spent */
    KV_MUTATION_FATAL,     /* a fault that will not heal (reason names the model and the
                              fault): the run stops */
} kv_mutation_status;

/* One child asked of a mutator. Everything is borrowed for the call. */
typedef struct kv_mutation_request {
    int64_t ticket;                        /* the iteration; handed back with the result */
    size_t arm;                            /* the entry of llm.models drawn */
    const kv_model_config *model;          /* that entry */
    const kv_program *parent;              /* source, metrics, artifacts, fitness */
    const kv_program *const *inspirations; /* diverse programs; [0] is crossover's other parent */
    size_t n_inspirations;
    const kv_program *const *top; /* the island's best but the parent (KV_MUTATOR_NEEDS_CONTEXT) */
    size_t n_top;
    const kv_program *const *attempts; /* earlier children of the parent, oldest first
                                          (KV_MUTATOR_NEEDS_CONTEXT) */
    size_t n_attempts;
    kv_rng *rng; /* the iteration's generator */
} kv_mutation_request;

/* What a mutation came to. Strings and the trace are owned (free with
 * kv_mutation_result_clear). */
typedef struct kv_mutation_result {
    int64_t ticket;
    size_t arm;
    kv_mutation_status status;
    char *source;            /* CHILD: the child's whole text */
    char *summary;           /* CHILD: what changed, one line */
    char *mutator;           /* the name stored with the child: "tune", "llm:MODEL", ... */
    int64_t other_parent_id; /* a second parent (crossover), else 0 */
    char *reason;            /* not CHILD: why */
    const char *reason_code; /* not CHILD: a short code ("unusable_reply", "no_change", ...) */
    kv_llm_trace *trace;     /* the model call behind it, or NULL */
} kv_mutation_result;

void kv_mutation_result_clear(kv_mutation_result *r);

/* What mutators may use, set up by the controller; borrowed for their life. */
typedef struct kv_mutator_env {
    const kv_config *cfg;
    uint64_t seed;                        /* the run's seed */
    kv_store *store;                      /* tune learns from its lineage's history */
    kv_llm_client *llm;                   /* NULL without language models */
    const kv_prompt_templates *templates; /* NULL without language models */
} kv_mutator_env;

/* Flags of kv_mutator_def.needs. */
enum {
    KV_MUTATOR_NEEDS_CONTEXT = 1, /* the request's top programs and attempts */
    KV_MUTATOR_NEEDS_LLM = 2,     /* env.llm and env.templates */
};

typedef struct kv_mutator_def {
    const char *name;      /* "tune", "gi", "crossover", "llm" */
    unsigned needs;        /* KV_MUTATOR_NEEDS_* */
    double default_weight; /* a built-in's weight in the mix used when llm.models is empty
                              (kv_mutator_default_arms); 0: not in it */
    /* Sets up *STATE (may stay NULL). Returns 0, or -1 with a malloc'd *err.
     * May be NULL: no state. */
    int (*init)(const kv_mutator_env *env, void **state, char **err);
    void (*free)(void *state); /* may be NULL */
    /* Starts a mutation of REQ. Returns 0 with OUT filled when the answer is
     * ready now (the built-ins), 1 when it will come from poll, or -1 with
     * a malloc'd *err when the mutator itself is broken. */
    int (*start)(void *state, const kv_mutation_request *req, kv_mutation_result *out, char **err);
    /* Hands back one finished mutation, waiting at most TIMEOUT_MS: 1 with
     * OUT filled, 0 when none, -1 with *err. NULL for mutators that answer
     * at once. */
    int (*poll)(void *state, int timeout_ms, kv_mutation_result *out, char **err);
    /* Mutations started and not yet handed back. NULL: always 0. */
    size_t (*pending)(const void *state);
} kv_mutator_def;

/* The mutator an arm of llm.models names: "builtin:NAME" (or "NAME" of a
 * built-in) the built-in NAME, NULL when no built-in has that name; any name
 * without the "builtin:" prefix the language-model mutator. */
const kv_mutator_def *kv_mutator_for_arm(const char *arm);
/* The I-th mutator of the table (NULL past the end). */
const kv_mutator_def *kv_mutator_at(size_t i);
/* The built-ins' arm names, "builtin:tune, builtin:gi, ...", in table
 * order, for messages (malloc'd). */
char *kv_mutator_builtin_names(void);
/* The arms of the mix used when llm.models is empty: "builtin:NAME" with
 * its default_weight, for each built-in that has one, in table order.
 * Returns a malloc'd array of *N entries whose names are malloc'd. */
kv_model_config *kv_mutator_default_arms(size_t *n);

/* The live mutators of a run: one instance of each mutator that an arm of
 * weight > 0 names. */
typedef struct kv_mutators kv_mutators;

/* Sets up the mutators named by MODELS[0..N) (weight > 0). Returns NULL
 * with a malloc'd *err when one cannot start (an unknown built-in, a
 * language model without env.llm). */
kv_mutators *kv_mutators_new(const kv_mutator_env *env, const kv_model_config *models, size_t n,
                             char **err);
void kv_mutators_free(kv_mutators *m);
/* The mutator of arm ARM (NULL when it has none: weight 0). */
const kv_mutator_def *kv_mutators_def(const kv_mutators *m, size_t arm);
/* Starts REQ on its arm's mutator (same contract as kv_mutator_def.start;
 * OUT's ticket and arm are set). */
int kv_mutators_start(kv_mutators *m, const kv_mutation_request *req, kv_mutation_result *out,
                      char **err);
/* Polls every mutator with mutations in flight, waiting at most TIMEOUT_MS
 * in all. Returns 1 with OUT filled (its arm set), 0 when none finished, -1
 * with *err. */
int kv_mutators_poll(kv_mutators *m, int timeout_ms, kv_mutation_result *out, char **err);
/* Mutations in flight, over all mutators. */
size_t kv_mutators_pending(const kv_mutators *m);

/* The mutators kevolve ships, for the callers that name one (tests); the
 * table in registry.c declares its entries itself, so a new mutator needs
 * no line here. */
extern const kv_mutator_def kv_mutator_tune_def;
extern const kv_mutator_def kv_mutator_gi_def;
extern const kv_mutator_def kv_mutator_crossover_def;
extern const kv_mutator_def kv_mutator_llm_def;

#endif
