/* The bandit that learns which mutator to draw: arms are the entries of
 * llm.models (built-in operators and language models alike), each seeded
 * with its configured weight, each rewarded by what its children gave.
 *
 * Reward of a child: its fitness gain over its parent per second of
 * evaluation, max(0, f_child - f_parent) / max(t_eval, cost_floor_s). A
 * child that failed, timed out or was rejected (and a model call that
 * failed) earns 0 and counts as a failure; one that beat its parent counts
 * as a success. The floor on the cost makes evaluations shorter than it
 * cost the same (so a fast, deterministic evaluator gives the same choices
 * on every run) and keeps one lucky short evaluation from dominating.
 *
 * Choice (Thompson sampling, with the configured weights as the prior and a
 * floor so that no arm starves):
 *   - with probability min(0.5, K * min_share) the arm is drawn uniformly
 *     among the K enabled arms (weight > 0): every arm keeps at least
 *     min_share of the draws;
 *   - otherwise, with probability N / (N + prior_results) (N: results known
 *     so far) by Thompson sampling, else by the configured weights: the first
 *     children follow the configuration, and the evidence takes over as it
 *     comes (half the draws after prior_results results);
 *   - Thompson sampling: arm i's chance of giving a good child is drawn from
 *     Beta(1 + s_i, 1 + n_i - s_i) (n_i its results) and the highest draw
 *     wins. s_i counts its successes, each weighted by the size of its
 *     reward against the run's typical one: s_i = min(successes_i,
 *     reward_sum_i / (total reward / total successes)). An arm whose
 *     children beat their parents more often, by more per second, is drawn
 *     more; one whose children fail is drawn less; an arm barely tried keeps
 *     a wide posterior and its chance.
 * The state is the per-arm (draws, successes, failures, reward_sum): stored
 * in mutator_stats with every result, so a resumed run chooses as the
 * uninterrupted one would. Every random draw comes from the caller's kv_rng.
 * References: ShinkaEvolve's LLM bandit (rewards as improvement over the
 * parent, clipped at 0), OpenTuner's AUC bandit (credit for new bests,
 * exploration for little-used techniques). */
#ifndef KV_MUTATE_BANDIT_H
#define KV_MUTATE_BANDIT_H

#include "util/rng.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kv_bandit_config {
    double min_share;     /* least share of the draws per enabled arm; default 0.05 */
    double prior_results; /* results after which the bandit makes half the draws; default 8 */
    double cost_floor_s;  /* evaluations shorter than this cost this much; default 1 */
} kv_bandit_config;

/* What the bandit knows of one arm (a row of mutator_stats). */
typedef struct kv_bandit_stats {
    int64_t draws;     /* results recorded */
    int64_t successes; /* children that beat their parent */
    int64_t failures;  /* children failed, timed out or rejected; calls that failed */
    double reward_sum; /* sum of the rewards (fitness gain per second) */
} kv_bandit_stats;

typedef enum kv_bandit_outcome {
    KV_BANDIT_NEUTRAL = 0, /* evaluated, not better than its parent (or a duplicate) */
    KV_BANDIT_SUCCESS,     /* beat its parent */
    KV_BANDIT_FAILURE,     /* failed, timed out, rejected; or the call failed */
} kv_bandit_outcome;

typedef struct kv_bandit kv_bandit;

/* A bandit over N arms with prior WEIGHTS[0..N) (>= 0, not all 0; an arm of
 * weight 0 is never drawn). CFG may be NULL (defaults). Never returns NULL
 * for N > 0. */
kv_bandit *kv_bandit_new(const double *weights, size_t n, const kv_bandit_config *cfg);
void kv_bandit_free(kv_bandit *b);

/* Draws an arm. USABLE (may be NULL: all) marks the arms that may be drawn
 * now; when it excludes every enabled arm, the choice ignores it. */
size_t kv_bandit_choose(kv_bandit *b, kv_rng *rng, const int *usable);
/* Records a result of ARM: OUTCOME, the child's fitness GAIN over its parent
 * (<= 0 or NaN: none) and the evaluation's COST in seconds. */
void kv_bandit_record(kv_bandit *b, size_t arm, kv_bandit_outcome outcome, double gain,
                      double cost_s);
/* The reward a result would earn: max(0, GAIN) / max(COST_S, cost floor). */
double kv_bandit_reward(const kv_bandit *b, double gain, double cost_s);

/* ARM's statistics; setting them restores a state (resume). */
void kv_bandit_get(const kv_bandit *b, size_t arm, kv_bandit_stats *out);
void kv_bandit_set(kv_bandit *b, size_t arm, const kv_bandit_stats *in);
/* Each arm's share of the next draws (OUT[0..N), summing to 1), estimated
 * by simulating the choice with a generator of its own, so that it neither
 * consumes the caller's draws nor varies between runs. */
void kv_bandit_shares(const kv_bandit *b, double *out);
size_t kv_bandit_arms(const kv_bandit *b);

#endif
