/* The choice of the mutator for each child: a bandit (or the fixed weights)
 * over the entries of llm.models, with fallback away from language models
 * that keep failing. See ensemble.h. */
#include "mutate/ensemble.h"
#include "util/buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kv_ensemble {
    const kv_model_config *models;
    size_t n;
    int fallback_after;
    const kv_mutator_def **defs; /* each entry's mutator, from the registry */
    char **arms;                 /* arm names */
    int *fails;                  /* consecutive failures per entry */
    int *skips;                  /* draws moved away since it became failing */
    double *weights;             /* scratch */
    kv_bandit *bandit;
    kv_bandit_stats *stats; /* the statistics when there is no bandit */
    int64_t *unable;        /* draws that found nothing to change, since kv_ensemble_new */
};

/* 1 when entry I is a language model (it can fail, and fall back). */
static int is_llm(const kv_ensemble *e, size_t i)
{
    return (e->defs[i]->needs & KV_MUTATOR_NEEDS_LLM) != 0;
}

kv_ensemble *kv_ensemble_new(const kv_model_config *models, size_t n, int fallback_after,
                             const kv_bandit_config *bandit, char **err)
{
    if (n == 0) {
        *err = kv_strdup("llm.models is empty: no mutator to choose from");
        return NULL;
    }
    kv_ensemble *e = kv_calloc(1, sizeof *e);
    e->models = models;
    e->n = n;
    e->fallback_after = fallback_after > 0 ? fallback_after : 0;
    e->defs = kv_calloc(n, sizeof *e->defs);
    e->arms = kv_calloc(n, sizeof *e->arms);
    e->fails = kv_calloc(n, sizeof *e->fails);
    e->skips = kv_calloc(n, sizeof *e->skips);
    e->weights = kv_calloc(n, sizeof *e->weights);
    e->stats = kv_calloc(n, sizeof *e->stats);
    e->unable = kv_calloc(n, sizeof *e->unable);
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = models[i].name ? models[i].name : "";
        e->defs[i] = kv_mutator_for_arm(name);
        if (!e->defs[i]) {
            char *known = kv_mutator_builtin_names();
            *err = kv_asprintf("llm.models[%zu]: unknown built-in mutator '%s' (known: %s)", i,
                               name, known);
            free(known);
            kv_ensemble_free(e);
            return NULL;
        }
        if (!(models[i].weight >= 0) || isinf(models[i].weight)) {
            *err = kv_asprintf("llm.models[%zu] '%s': weight %g must be a finite number >= 0", i,
                               name, models[i].weight);
            kv_ensemble_free(e);
            return NULL;
        }
        e->weights[i] = models[i].weight;
        total += models[i].weight;
        e->arms[i] = kv_strdup(name);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(e->arms[j], name) == 0) {
                free(e->arms[i]);
                e->arms[i] = kv_asprintf("%s#%zu", name, i);
                break;
            }
        }
    }
    if (total <= 0) {
        *err = kv_strdup("llm.models: every weight is 0");
        kv_ensemble_free(e);
        return NULL;
    }
    if (bandit) e->bandit = kv_bandit_new(e->weights, n, bandit);
    return e;
}

void kv_ensemble_free(kv_ensemble *e)
{
    if (!e) return;
    for (size_t i = 0; e->arms && i < e->n; i++)
        free(e->arms[i]);
    free(e->arms);
    free(e->defs);
    free(e->fails);
    free(e->skips);
    free(e->weights);
    free(e->stats);
    free(e->unable);
    kv_bandit_free(e->bandit);
    free(e);
}

size_t kv_ensemble_size(const kv_ensemble *e)
{
    return e->n;
}

const char *kv_ensemble_arm(const kv_ensemble *e, size_t i)
{
    return i < e->n ? e->arms[i] : NULL;
}

long kv_ensemble_find(const kv_ensemble *e, const char *name)
{
    for (size_t i = 0; name && i < e->n; i++)
        if (strcmp(e->arms[i], name) == 0) return (long)i;
    return -1;
}

int kv_ensemble_failing(const kv_ensemble *e, size_t index)
{
    return index < e->n && is_llm(e, index) && e->fallback_after > 0 &&
           e->fails[index] >= e->fallback_after;
}

int kv_ensemble_has_llm(const kv_ensemble *e)
{
    for (size_t i = 0; i < e->n; i++)
        if (is_llm(e, i) && e->models[i].weight > 0) return 1;
    return 0;
}

static void fill(const kv_ensemble *e, size_t i, int fell_back, size_t drawn,
                 kv_ensemble_choice *out)
{
    memset(out, 0, sizeof *out);
    out->index = i;
    out->model = &e->models[i];
    out->kind = is_llm(e, i) ? KV_ENSEMBLE_LLM : KV_ENSEMBLE_BUILTIN;
    out->mutator = e->defs[i];
    out->fell_back = fell_back;
    out->drawn = drawn;
}

/* The first draw: the bandit's, or by weight; among USABLE when not NULL. */
static size_t first_draw(kv_ensemble *e, kv_rng *rng, const int *usable)
{
    if (e->bandit) return kv_bandit_choose(e->bandit, rng, usable);
    for (size_t i = 0; i < e->n; i++)
        e->weights[i] = !usable || usable[i] ? e->models[i].weight : 0;
    return kv_rng_weighted(rng, e->weights, e->n);
}

void kv_ensemble_choose_among(kv_ensemble *e, kv_rng *rng, const int *usable,
                              kv_ensemble_choice *out)
{
    size_t drawn = first_draw(e, rng, usable);
    if (!kv_ensemble_failing(e, drawn)) {
        fill(e, drawn, 0, drawn, out);
        return;
    }
    /* A failing entry: every fallback_after-th draw probes it. */
    if (++e->skips[drawn] % e->fallback_after == 0) {
        fill(e, drawn, 0, drawn, out);
        return;
    }
    int any = 0;
    for (size_t i = 0; i < e->n; i++) {
        int ok = is_llm(e, i) && i != drawn && !kv_ensemble_failing(e, i) && (!usable || usable[i]);
        e->weights[i] = ok ? e->models[i].weight : 0;
        if (ok && e->weights[i] > 0) any = 1;
    }
    if (!any) {
        fill(e, drawn, 0, drawn, out);
        return;
    }
    fill(e, kv_rng_weighted(rng, e->weights, e->n), 1, drawn, out);
}

void kv_ensemble_choose(kv_ensemble *e, kv_rng *rng, kv_ensemble_choice *out)
{
    kv_ensemble_choose_among(e, rng, NULL, out);
}

void kv_ensemble_report(kv_ensemble *e, size_t index, int ok)
{
    if (index >= e->n) return;
    if (ok) {
        e->fails[index] = 0;
        e->skips[index] = 0;
    } else {
        e->fails[index]++;
    }
}

void kv_ensemble_record(kv_ensemble *e, size_t i, kv_bandit_outcome outcome, double gain,
                        double cost_s)
{
    if (i >= e->n) return;
    if (e->bandit) {
        kv_bandit_record(e->bandit, i, outcome, gain, cost_s);
        return;
    }
    kv_bandit_stats *s = &e->stats[i];
    s->draws++;
    if (outcome == KV_BANDIT_SUCCESS) {
        s->successes++;
        /* The same reward as the bandit's, with its default cost floor (1 s). */
        s->reward_sum += gain > 0 && isfinite(gain) ? gain / (cost_s > 1 ? cost_s : 1) : 0;
    }
    if (outcome == KV_BANDIT_FAILURE) s->failures++;
}

void kv_ensemble_stats(const kv_ensemble *e, size_t i, kv_bandit_stats *out)
{
    if (e->bandit)
        kv_bandit_get(e->bandit, i, out);
    else if (i < e->n)
        *out = e->stats[i];
    else
        memset(out, 0, sizeof *out);
}

void kv_ensemble_set_stats(kv_ensemble *e, size_t i, const kv_bandit_stats *in)
{
    if (i >= e->n) return;
    if (e->bandit)
        kv_bandit_set(e->bandit, i, in);
    else
        e->stats[i] = *in;
}

void kv_ensemble_note_unable(kv_ensemble *e, size_t i)
{
    if (i < e->n) e->unable[i]++;
}

void kv_ensemble_shares(const kv_ensemble *e, double *out)
{
    if (e->bandit) {
        kv_bandit_shares(e->bandit, out);
    } else {
        double total = 0;
        for (size_t i = 0; i < e->n; i++)
            total += e->models[i].weight;
        for (size_t i = 0; i < e->n; i++)
            out[i] = total > 0 ? e->models[i].weight / total : 0;
    }
    /* A draw of an arm that finds nothing to change goes to the others: its
     * share is what it made of its draws (none for one that never could),
     * and the rest goes to the others in proportion. */
    double kept = 0;
    for (size_t i = 0; i < e->n; i++) {
        if (e->unable[i] > 0) {
            kv_bandit_stats st;
            kv_ensemble_stats(e, i, &st);
            out[i] *= (double)st.draws / (double)(st.draws + e->unable[i]);
        }
        kept += out[i];
    }
    for (size_t i = 0; i < e->n && kept > 0; i++)
        out[i] /= kept;
}
