/* The tune mutator's learning side: how much each declared parameter (axis)
 * is worth drawing on a lineage, learnt from the store's record of earlier
 * tune children, and the draw that uses it. kv_mutate_tune (mutator.h) is
 * the same draw with every axis worth 1.
 *
 * What is learnt: an axis whose moves never change the compiled artifact
 * (the kernel harness's artifact_hash) or never change the score is drawn
 * less. Everything is
 * recomputed from the store on each draw, so a resumed run learns the same. */
#ifndef KV_MUTATE_TUNE_H
#define KV_MUTATE_TUNE_H

#include "mutate/mutator.h"
#include "store/store.h"
#include "store/store_tune.h"

#include <stddef.h>

/* What the history says about one axis. MOVES counts the children that
 * moved it (a child moving k axes counts 1/k for each when its outcome
 * cannot be pinned on one of them); INERT the moves that changed neither
 * the artifact nor the score; MATTERED the others; IMPROVED those that beat
 * their parent (kept for reports). VALUE is the axis's weight in the draw
 * (1 without history). */
typedef struct kv_tune_axis {
    char *name;
    double moves, inert, mattered, improved;
    double value;
    /* +1 (-1) when the program itself was made by a tune move that took
     * this axis up (down) its list of values and beat its parent; else 0. */
    int trend;
} kv_tune_axis;

typedef struct kv_tune_weights {
    kv_tune_axis *axis; /* malloc'd */
    size_t n;
} kv_tune_weights;

void kv_tune_weights_free(kv_tune_weights *w);
/* Weight of axis NAME in W: its value, 1 when W is NULL or does not know it. */
double kv_tune_weight(const kv_tune_weights *w, const char *name);

/* Relative change of the score below which a move "did not change the
 * score" (timing noise of a repeated evaluation is of this order). */
#define KV_TUNE_SAME_SCORE 0.02
/* Least weight of an axis, so no axis starves however inert it looked. */
#define KV_TUNE_MIN_WEIGHT 0.1

/* Learns the axes named in SRC's annotations (the source of program SELF,
 * 0 when not stored) from OBS (N tune children of its lineage, from
 * kv_store_tune_history; SELF's own record among them gives the trends).
 * Axes of SRC are matched to the children's summaries by name. Returns 0,
 * or -1 with *err when SRC's annotations are malformed. */
int kv_tune_learn(const char *src, int64_t self, const kv_tune_obs *obs, size_t n,
                  kv_tune_weights *out, char **err);

/* Chance that a child of a program with trends repeats them (one more step
 * of each trending axis the same way) instead of a fresh draw. */
#define KV_TUNE_PATTERN_PROBABILITY 0.5

/* kv_mutate_tune with axes drawn in proportion to W (NULL: all equal) and,
 * where W has trends, the pattern move half the time. Same contract as
 * kv_mutate_tune. */
int kv_mutate_tune_weighted(const char *src, const kv_tune_weights *w, kv_rng *rng,
                            kv_mutation *out, char **err);

/* A random point of SRC's space: every axis drawn anew, uniformly among
 * its values, in order, where its condition holds in the text drawn so far.
 * The summary reads "tune restart: " and lists the axes that changed like
 * a move's. Same contract as kv_mutate_tune (1: no axis changed). */
int kv_mutate_tune_restart(const char *src, kv_rng *rng, kv_mutation *out, char **err);

/* Chance that a run's tune child (the builtin:tune mutator) is a restart. */
#define KV_TUNE_RESTART_PROBABILITY 0.15

/* The tune move of PARENT as a run makes it (builtin:tune, when it does
 * not restart): the weights learnt from
 * the tune children of PARENT's lineage in STORE (PARENT and its
 * ancestors), then the weighted draw. A store that cannot be read leaves
 * every axis at 1 (the draw goes on). Same contract as kv_mutate_tune. */
int kv_mutate_tune_lineage(kv_store *store, const kv_program *parent, kv_rng *rng, kv_mutation *out,
                           char **err);

/* Checks SRC's tune annotations: 0, or -1 with a malloc'd message naming the
 * line (a run checks its initial program with it, so a typo in an
 * annotation stops the run instead of silently leaving tune idle). */
int kv_tune_check(const char *src, char **err);

#endif
