/* The model ensemble: which mutator makes the next child. llm.models is one
 * weighted list in which LLM entries and the built-in mutators
 * (builtin:tune, builtin:gi, builtin:crossover) stand side by side; each
 * child draws one entry with probability proportional to its weight, from
 * the caller's seeded kv_rng, so a run's choices replay from its seed.
 *
 * Fallback: when an LLM entry has failed FALLBACK_AFTER times in a row
 * (kv_ensemble_report), a draw of it goes to another healthy LLM entry
 * (weighted among those) instead; every FALLBACK_AFTER-th such draw still
 * goes to the failing entry as a probe, and one success makes it healthy. */
#ifndef KV_LLM_ENSEMBLE_H
#define KV_LLM_ENSEMBLE_H

#include "config/config.h"
#include "mutate/mutator.h"
#include "util/rng.h"

#include <stddef.h>

typedef enum kv_ensemble_kind { KV_ENSEMBLE_LLM = 0, KV_ENSEMBLE_BUILTIN } kv_ensemble_kind;

typedef struct kv_ensemble_choice {
    kv_ensemble_kind kind;
    size_t index;                 /* entry of the models list chosen (after fallback) */
    const kv_model_config *model; /* that entry (points into the caller's list) */
    kv_mutator_kind builtin;      /* when kind == KV_ENSEMBLE_BUILTIN */
    int fell_back;                /* 1 when the draw fell on a failing entry and was moved */
    size_t drawn;                 /* the entry first drawn */
} kv_ensemble_choice;

typedef struct kv_ensemble kv_ensemble;

/* Builds an ensemble over MODELS[0..N) (not copied: they must outlive it).
 * FALLBACK_AFTER is the count of consecutive failures that makes an entry
 * failing (0: no fallback). Returns NULL with a malloc'd message in *err
 * when the list is empty, an entry names an unknown builtin ("builtin:foo"),
 * a weight is negative, or every weight is 0. */
kv_ensemble *kv_ensemble_new(const kv_model_config *models, size_t n, int fallback_after,
                             char **err);
void kv_ensemble_free(kv_ensemble *e);

/* Draws the mutator of the next child. Always succeeds on a built ensemble. */
void kv_ensemble_choose(kv_ensemble *e, kv_rng *rng, kv_ensemble_choice *out);
/* Reports the outcome of a call to LLM entry INDEX (1: a usable reply). */
void kv_ensemble_report(kv_ensemble *e, size_t index, int ok);
/* 1 when entry INDEX has failed FALLBACK_AFTER times in a row. */
int kv_ensemble_failing(const kv_ensemble *e, size_t index);
/* 1 when the ensemble holds at least one LLM entry with a weight > 0. */
int kv_ensemble_has_llm(const kv_ensemble *e);

#endif
