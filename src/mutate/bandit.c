/* Thompson sampling over the mutators, seeded by their configured weights
 * (see bandit.h). */
#include "mutate/bandit.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Draws of the choice simulated by kv_bandit_shares. */
#define KV_BANDIT_SHARE_SAMPLES 2000

struct kv_bandit {
    size_t n;
    double *weights; /* the prior, as configured */
    kv_bandit_stats *stats;
    double *scratch; /* one value per arm */
    kv_bandit_config cfg;
};

kv_bandit *kv_bandit_new(const double *weights, size_t n, const kv_bandit_config *cfg)
{
    if (n == 0) return NULL;
    kv_bandit *b = kv_calloc(1, sizeof *b);
    b->n = n;
    b->weights = kv_calloc(n, sizeof *b->weights);
    b->stats = kv_calloc(n, sizeof *b->stats);
    b->scratch = kv_calloc(n, sizeof *b->scratch);
    for (size_t i = 0; i < n; i++)
        b->weights[i] = weights[i] > 0 && isfinite(weights[i]) ? weights[i] : 0;
    b->cfg = (kv_bandit_config){.min_share = 0.05, .prior_results = 8, .cost_floor_s = 1.0};
    if (cfg) {
        if (cfg->min_share >= 0 && cfg->min_share <= 1) b->cfg.min_share = cfg->min_share;
        if (cfg->prior_results >= 0) b->cfg.prior_results = cfg->prior_results;
        if (cfg->cost_floor_s > 0) b->cfg.cost_floor_s = cfg->cost_floor_s;
    }
    return b;
}

void kv_bandit_free(kv_bandit *b)
{
    if (!b) return;
    free(b->weights);
    free(b->stats);
    free(b->scratch);
    free(b);
}

size_t kv_bandit_arms(const kv_bandit *b)
{
    return b->n;
}

double kv_bandit_reward(const kv_bandit *b, double gain, double cost_s)
{
    if (!(gain > 0) || !isfinite(gain)) return 0;
    double cost = cost_s > b->cfg.cost_floor_s ? cost_s : b->cfg.cost_floor_s;
    return gain / cost;
}

void kv_bandit_record(kv_bandit *b, size_t arm, kv_bandit_outcome outcome, double gain,
                      double cost_s)
{
    if (arm >= b->n) return;
    kv_bandit_stats *s = &b->stats[arm];
    s->draws++;
    if (outcome == KV_BANDIT_SUCCESS) s->successes++;
    if (outcome == KV_BANDIT_FAILURE) s->failures++;
    if (outcome == KV_BANDIT_SUCCESS) s->reward_sum += kv_bandit_reward(b, gain, cost_s);
}

void kv_bandit_get(const kv_bandit *b, size_t arm, kv_bandit_stats *out)
{
    if (arm < b->n)
        *out = b->stats[arm];
    else
        memset(out, 0, sizeof *out);
}

void kv_bandit_set(kv_bandit *b, size_t arm, const kv_bandit_stats *in)
{
    if (arm >= b->n) return;
    b->stats[arm] = *in;
    if (b->stats[arm].draws < 0) b->stats[arm].draws = 0;
    if (!(b->stats[arm].reward_sum >= 0) || !isfinite(b->stats[arm].reward_sum))
        b->stats[arm].reward_sum = 0;
}

/* Gamma(A, 1) for A >= 1 (Marsaglia and Tsang, 2000). */
static double gamma_draw(kv_rng *rng, double a)
{
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = kv_rng_normal(rng);
        double v = 1.0 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = kv_rng_uniform(rng);
        if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
        if (u > 0 && log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
    }
}

/* Beta(A, B) for A, B >= 1. */
static double beta_draw(kv_rng *rng, double a, double b)
{
    double x = gamma_draw(rng, a), y = gamma_draw(rng, b);
    return x + y > 0 ? x / (x + y) : 0.5;
}

/* 1 when ARM may be drawn: enabled, and usable when USABLE says so. */
static int drawable(const kv_bandit *b, const int *usable, size_t arm)
{
    return b->weights[arm] > 0 && (!usable || usable[arm]);
}

/* Thompson sampling among the drawable arms: arm i's chance of a good
 * child is drawn from Beta(1 + s_i, 1 + n_i - s_i), where s_i counts its
 * successes, each weighted by its reward against the run's typical one:
 * s_i = min(successes_i, reward_sum_i / mean reward of a success). */
static size_t thompson(kv_bandit *b, kv_rng *rng, const int *usable)
{
    double reward = 0, successes = 0;
    for (size_t i = 0; i < b->n; i++) {
        reward += b->stats[i].reward_sum;
        successes += (double)b->stats[i].successes;
    }
    double typical = successes > 0 ? reward / successes : 0;
    size_t pick = b->n;
    double pick_value = -1;
    for (size_t i = 0; i < b->n; i++) {
        if (!drawable(b, usable, i)) continue;
        const kv_bandit_stats *st = &b->stats[i];
        double n = (double)st->draws, won = (double)st->successes;
        if (typical > 0 && st->reward_sum / typical < won) won = st->reward_sum / typical;
        if (won > n) won = n;
        double v = beta_draw(rng, 1.0 + won, 1.0 + n - won);
        if (v > pick_value) {
            pick_value = v;
            pick = i;
        }
    }
    return pick;
}

size_t kv_bandit_choose(kv_bandit *b, kv_rng *rng, const int *usable)
{
    size_t k = 0, total = 0;
    int64_t results = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (b->weights[i] > 0) total++;
        if (drawable(b, usable, i)) {
            k++;
            results += b->stats[i].draws;
        }
    }
    if (total == 0) return 0;
    if (k == 0) { /* nothing usable: the choice ignores USABLE */
        usable = NULL;
        k = total;
        for (size_t i = 0; i < b->n; i++)
            results += b->stats[i].draws;
    }
    /* The floor: every drawable arm keeps min_share of the draws. */
    double floor_total = b->cfg.min_share * (double)k;
    if (floor_total > 0.5) floor_total = 0.5;
    double u = kv_rng_uniform(rng);
    if (u < floor_total) {
        size_t j = (size_t)(u / floor_total * (double)k);
        for (size_t i = 0; i < b->n; i++)
            if (drawable(b, usable, i) && j-- == 0) return i;
    }
    /* The prior hands over to the evidence as results come. */
    double trust = (double)results / ((double)results + b->cfg.prior_results);
    if (b->cfg.prior_results <= 0) trust = 1;
    if (kv_rng_uniform(rng) >= trust) {
        for (size_t i = 0; i < b->n; i++)
            b->scratch[i] = drawable(b, usable, i) ? b->weights[i] : 0;
        return kv_rng_weighted(rng, b->scratch, b->n);
    }
    size_t pick = thompson(b, rng, usable);
    return pick < b->n ? pick : 0;
}

void kv_bandit_shares(const kv_bandit *b, double *out)
{
    /* A copy, so that the simulation touches neither B's scratch nor a
     * caller's generator; seeded by the state, so equal states agree. */
    kv_bandit *sim = kv_bandit_new(b->weights, b->n, &b->cfg);
    memcpy(sim->stats, b->stats, b->n * sizeof *b->stats);
    uint64_t seed = 0x6b65766f6c766521ULL;
    for (size_t i = 0; i < b->n; i++)
        seed = seed * 1000003u ^ (uint64_t)b->stats[i].draws;
    kv_rng rng;
    kv_rng_seed(&rng, seed);
    for (size_t i = 0; i < b->n; i++)
        out[i] = 0;
    for (int s = 0; s < KV_BANDIT_SHARE_SAMPLES; s++)
        out[kv_bandit_choose(sim, &rng, NULL)] += 1.0 / KV_BANDIT_SHARE_SAMPLES;
    kv_bandit_free(sim);
}
