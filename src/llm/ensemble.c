/* Weighted, seeded choice of the mutator for each child, with fallback away
 * from LLM entries that keep failing. See ensemble.h. */
#include "llm/ensemble.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct kv_ensemble {
    const kv_model_config *models;
    size_t n;
    int fallback_after;
    int *is_builtin;
    kv_mutator_kind *builtin;
    int *fails;      /* consecutive failures per entry */
    int *skips;      /* draws moved away since it became failing */
    double *weights; /* scratch */
};

/* Parses "builtin:NAME". Returns 1 with *k set, 0 when NAME is not a
 * builtin entry, -1 for an unknown builtin. */
static int parse_builtin(const char *name, kv_mutator_kind *k)
{
    if (!kv_starts_with(name, "builtin:")) return 0;
    static const char *const names[KV_MUTATOR_BUILTIN_COUNT] = {"tune", "gi", "crossover"};
    for (int i = 0; i < KV_MUTATOR_BUILTIN_COUNT; i++) {
        if (strcmp(name + 8, names[i]) == 0) {
            *k = (kv_mutator_kind)i;
            return 1;
        }
    }
    return -1;
}

kv_ensemble *kv_ensemble_new(const kv_model_config *models, size_t n, int fallback_after,
                             char **err)
{
    if (n == 0) {
        *err = kv_strdup("llm.models is empty: no mutator to choose from");
        return NULL;
    }
    kv_ensemble *e = kv_calloc(1, sizeof *e);
    e->models = models;
    e->n = n;
    e->fallback_after = fallback_after > 0 ? fallback_after : 0;
    e->is_builtin = kv_calloc(n, sizeof *e->is_builtin);
    e->builtin = kv_calloc(n, sizeof *e->builtin);
    e->fails = kv_calloc(n, sizeof *e->fails);
    e->skips = kv_calloc(n, sizeof *e->skips);
    e->weights = kv_calloc(n, sizeof *e->weights);
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = models[i].name ? models[i].name : "";
        int b = parse_builtin(name, &e->builtin[i]);
        if (b < 0) {
            *err = kv_asprintf("llm.models[%zu]: unknown built-in mutator '%s' (known: "
                               "builtin:tune, builtin:gi, builtin:crossover)",
                               i, name);
            kv_ensemble_free(e);
            return NULL;
        }
        if (!(models[i].weight >= 0) || isinf(models[i].weight)) {
            *err = kv_asprintf("llm.models[%zu] '%s': weight %g must be a finite number >= 0", i,
                               name, models[i].weight);
            kv_ensemble_free(e);
            return NULL;
        }
        e->is_builtin[i] = b;
        total += models[i].weight;
    }
    if (total <= 0) {
        *err = kv_strdup("llm.models: every weight is 0");
        kv_ensemble_free(e);
        return NULL;
    }
    return e;
}

void kv_ensemble_free(kv_ensemble *e)
{
    if (!e) return;
    free(e->is_builtin);
    free(e->builtin);
    free(e->fails);
    free(e->skips);
    free(e->weights);
    free(e);
}

int kv_ensemble_failing(const kv_ensemble *e, size_t index)
{
    return index < e->n && !e->is_builtin[index] && e->fallback_after > 0 &&
           e->fails[index] >= e->fallback_after;
}

int kv_ensemble_has_llm(const kv_ensemble *e)
{
    for (size_t i = 0; i < e->n; i++)
        if (!e->is_builtin[i] && e->models[i].weight > 0) return 1;
    return 0;
}

static void fill(const kv_ensemble *e, size_t i, int fell_back, size_t drawn,
                 kv_ensemble_choice *out)
{
    memset(out, 0, sizeof *out);
    out->index = i;
    out->model = &e->models[i];
    out->kind = e->is_builtin[i] ? KV_ENSEMBLE_BUILTIN : KV_ENSEMBLE_LLM;
    out->builtin = e->builtin[i];
    out->fell_back = fell_back;
    out->drawn = drawn;
}

void kv_ensemble_choose(kv_ensemble *e, kv_rng *rng, kv_ensemble_choice *out)
{
    for (size_t i = 0; i < e->n; i++)
        e->weights[i] = e->models[i].weight;
    size_t drawn = kv_rng_weighted(rng, e->weights, e->n);
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
        int ok = !e->is_builtin[i] && i != drawn && !kv_ensemble_failing(e, i);
        e->weights[i] = ok ? e->models[i].weight : 0;
        if (ok && e->weights[i] > 0) any = 1;
    }
    if (!any) {
        fill(e, drawn, 0, drawn, out);
        return;
    }
    fill(e, kv_rng_weighted(rng, e->weights, e->n), 1, drawn, out);
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
