/* The ensemble: which mutator makes the next child. llm.models is one
 * weighted list in which language models and the built-in mutators
 * ("builtin:NAME", any built-in of the registry) stand side by side as
 * arms; the registry (kv_mutator_for_arm) says which mutator each names.
 *
 * With a bandit (llm.bandit, the default) the draw learns from the
 * children each arm made (bandit.h: Thompson sampling seeded by the
 * weights, rewarded by fitness gain per second of evaluation, with a floor
 * so no arm starves); without, each child draws an entry with probability
 * proportional to its weight. Every draw comes from the caller's seeded
 * kv_rng, so a run's choices replay from its seed.
 *
 * Fallback: when a language model has failed FALLBACK_AFTER times in a row
 * (kv_ensemble_report), a draw of it goes to another healthy model
 * (weighted among those) instead; every FALLBACK_AFTER-th such draw still
 * goes to the failing one as a probe, and one success makes it healthy. */
#ifndef KV_MUTATE_ENSEMBLE_H
#define KV_MUTATE_ENSEMBLE_H

#include "config/config.h"
#include "mutate/bandit.h"
#include "mutate/registry.h"
#include "util/rng.h"

#include <stddef.h>

typedef enum kv_ensemble_kind { KV_ENSEMBLE_LLM = 0, KV_ENSEMBLE_BUILTIN } kv_ensemble_kind;

typedef struct kv_ensemble_choice {
    kv_ensemble_kind kind;
    size_t index;                  /* entry of the models list chosen (after fallback) */
    const kv_model_config *model;  /* that entry (points into the caller's list) */
    const kv_mutator_def *mutator; /* that entry's mutator, from the registry */
    int fell_back;                 /* 1 when the draw fell on a failing entry and was moved */
    size_t drawn;                  /* the entry first drawn */
} kv_ensemble_choice;

typedef struct kv_ensemble kv_ensemble;

/* Builds an ensemble over MODELS[0..N) (not copied: they must outlive it).
 * FALLBACK_AFTER is the count of consecutive failures that makes an entry
 * failing (0: no fallback). BANDIT: the bandit's settings, or NULL for
 * draws by the fixed weights. Returns NULL with a malloc'd message in *err
 * when the list is empty, an entry names an unknown builtin
 * ("builtin:foo"; the message lists the registered ones), a weight is
 * negative, or every weight is 0. */
kv_ensemble *kv_ensemble_new(const kv_model_config *models, size_t n, int fallback_after,
                             const kv_bandit_config *bandit, char **err);
void kv_ensemble_free(kv_ensemble *e);

/* Draws the mutator of the next child. Always succeeds on a built ensemble. */
void kv_ensemble_choose(kv_ensemble *e, kv_rng *rng, kv_ensemble_choice *out);
/* The same among the entries for which USABLE[i] is 1 (a fallback when the
 * drawn built-in mutator cannot change a parent). */
void kv_ensemble_choose_among(kv_ensemble *e, kv_rng *rng, const int *usable,
                              kv_ensemble_choice *out);
/* Reports the outcome of a call to LLM entry INDEX (1: a usable reply). */
void kv_ensemble_report(kv_ensemble *e, size_t index, int ok);
/* 1 when entry INDEX has failed FALLBACK_AFTER times in a row. */
int kv_ensemble_failing(const kv_ensemble *e, size_t index);
/* 1 when the ensemble holds at least one LLM entry with a weight > 0. */
int kv_ensemble_has_llm(const kv_ensemble *e);

/* Entries, and the arm name of entry I (its model name, "builtin:tune",
 * ...; a name that repeats an earlier entry's gets "#I" appended). */
size_t kv_ensemble_size(const kv_ensemble *e);
const char *kv_ensemble_arm(const kv_ensemble *e, size_t i);
/* The entry of arm NAME, or -1. */
long kv_ensemble_find(const kv_ensemble *e, const char *name);
/* Records what a child of entry I gave (the bandit learns from it; counted
 * even without a bandit, for the statistics). */
void kv_ensemble_record(kv_ensemble *e, size_t i, kv_bandit_outcome outcome, double gain,
                        double cost_s);
/* Entry I's statistics; setting them restores a state (resume). */
void kv_ensemble_stats(const kv_ensemble *e, size_t i, kv_bandit_stats *out);
void kv_ensemble_set_stats(kv_ensemble *e, size_t i, const kv_bandit_stats *in);
/* Notes that entry I, drawn, found nothing to change in its parent (a
 * built-in mutator: tune with no annotated values, crossover with equal
 * parents) and the draw went to another. Counted from the ensemble's creation
 * (kv_ensemble_new), in memory only: a resumed run counts afresh. */
void kv_ensemble_note_unable(kv_ensemble *e, size_t i);
/* Each entry's share of the next draws, OUT[0..size): estimated from the
 * bandit, or the normalised weights without one, less the draws an entry
 * passes on because it cannot act (its share times the fraction of its
 * draws it made children of; none when it never could), which go to the
 * others in proportion. */
void kv_ensemble_shares(const kv_ensemble *e, double *out);

#endif
