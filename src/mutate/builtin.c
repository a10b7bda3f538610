/* The built-in mutators as entries of the registry: tune, gi and crossover
 * (their edits live in tune.c, gi.c and crossover.c). Each answers at once:
 * a child, or "nothing to change here" with the reason, so the controller
 * can try another. */
#include "mutate/mutator.h"
#include "mutate/registry.h"
#include "mutate/tune.h"
#include "util/buf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The store tune learns from: the environment itself is the state. */
static int keep_env(const kv_mutator_env *env, void **state, char **err)
{
    (void)err;
    *state = (void *)env->store;
    return 0;
}

/* Fills OUT from an edit's return RC (mutator.h): a child, or UNCHANGED with
 * the reason (ERR, taken) for 1 (nothing to change) and -1 (failed). */
static int answer(const char *name, int rc, kv_mutation *m, char *err, kv_mutation_result *out)
{
    out->mutator = kv_strdup(name);
    if (rc == 0) {
        out->status = KV_MUTATION_CHILD;
        out->source = m->source;
        out->summary = m->summary;
        m->source = m->summary = NULL;
        free(err);
        return 0;
    }
    kv_mutation_free(m);
    out->status = KV_MUTATION_UNCHANGED;
    out->reason_code = rc < 0 ? "mutator_error" : "no_change";
    out->reason = err ? kv_asprintf("%s: %s", name, err)
                      : kv_asprintf("%s: nothing to change in the parent", name);
    free(err);
    return 0;
}

static int tune_start(void *state, const kv_mutation_request *req, kv_mutation_result *out,
                      char **err)
{
    (void)err;
    kv_mutation m = {0};
    char *why = NULL;
    /* Now and then a random point of the space (kv_mutate_tune_restart);
     * otherwise a move that learns its axes' worth from the lineage's
     * history in the store. */
    int rc = 1;
    if (kv_rng_uniform(req->rng) < KV_TUNE_RESTART_PROBABILITY && req->parent &&
        req->parent->source) {
        rc = kv_mutate_tune_restart(req->parent->source, req->rng, &m, &why);
        if (rc == 1) { /* one value per axis: an ordinary move says so */
            free(why);
            why = NULL;
        }
    }
    if (rc == 1) rc = kv_mutate_tune_lineage((kv_store *)state, req->parent, req->rng, &m, &why);
    return answer("tune", rc, &m, why, out);
}

static int gi_start(void *state, const kv_mutation_request *req, kv_mutation_result *out,
                    char **err)
{
    (void)state;
    (void)err;
    kv_mutation m = {0};
    char *why = NULL;
    int rc = -1;
    if (req->parent && req->parent->source)
        rc = kv_mutate_gi(req->parent->source, req->rng, &m, &why);
    else
        why = kv_strdup("no parent program");
    return answer("gi", rc, &m, why, out);
}

/* "#ID" for a stored program, else FALLBACK, into BUF. */
static const char *program_name(const kv_program *p, const char *fallback, char buf[32])
{
    if (!p || p->id == 0) return fallback;
    snprintf(buf, 32, "#%" PRId64, p->id);
    return buf;
}

static int crossover_start(void *state, const kv_mutation_request *req, kv_mutation_result *out,
                           char **err)
{
    (void)state;
    (void)err;
    const kv_program *other = req->n_inspirations ? req->inspirations[0] : NULL;
    if (!other || !other->source) { /* a lone program: nothing to cross it with */
        out->mutator = kv_strdup("crossover");
        out->status = KV_MUTATION_UNCHANGED;
        out->reason_code = "no_change";
        out->reason = kv_strdup("crossover: no second parent on the island");
        return 0;
    }
    kv_mutation m = {0};
    char *why = NULL;
    int rc = -1;
    char name_a[32], name_b[32];
    if (req->parent && req->parent->source)
        rc = kv_mutate_crossover_named(req->parent->source, other->source,
                                       program_name(req->parent, "A", name_a),
                                       program_name(other, "B", name_b), req->rng, &m, &why);
    else
        why = kv_strdup("no parent program");
    if (rc == 0) out->other_parent_id = other->id;
    return answer("crossover", rc, &m, why, out);
}

/* With no model configured, tune 40%, gi 40%, crossover 20%. */
const kv_mutator_def kv_mutator_tune_def = {
    .name = "tune",
    .default_weight = 0.4,
    .init = keep_env,
    .start = tune_start,
};

const kv_mutator_def kv_mutator_gi_def = {
    .name = "gi",
    .default_weight = 0.4,
    .start = gi_start,
};

const kv_mutator_def kv_mutator_crossover_def = {
    .name = "crossover",
    .default_weight = 0.2,
    .start = crossover_start,
};
