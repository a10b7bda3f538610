/* Built-in mutators: their names, the dispatch from a kind to its function,
 * and the mutation record. The mutators themselves live in tune.c, gi.c and
 * crossover.c. */
#include "mutate/mutator.h"
#include "util/buf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[KV_MUTATOR_BUILTIN_COUNT] = {"tune", "gi", "crossover"};

const char *kv_mutator_name(kv_mutator_kind k)
{
    return (unsigned)k < KV_MUTATOR_BUILTIN_COUNT ? names[k] : "unknown";
}

int kv_mutator_parse(const char *name, kv_mutator_kind *out)
{
    if (!name) return -1;
    if (kv_starts_with(name, "builtin:")) name += strlen("builtin:");
    for (int i = 0; i < KV_MUTATOR_BUILTIN_COUNT; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (kv_mutator_kind)i;
            return 0;
        }
    }
    return -1;
}

void kv_mutation_free(kv_mutation *m)
{
    if (!m) return;
    free(m->source);
    free(m->summary);
    m->source = NULL;
    m->summary = NULL;
}

/* "#ID" for a stored program, else FALLBACK, into BUF. */
static const char *program_name(const kv_program *p, const char *fallback, char buf[32])
{
    if (!p || p->id == 0) return fallback;
    snprintf(buf, 32, "#%" PRId64, p->id);
    return buf;
}

int kv_mutate(kv_mutator_kind kind, const kv_program *parent, const kv_program *other, kv_rng *rng,
              kv_mutation *out, char **err)
{
    out->source = NULL;
    out->summary = NULL;
    *err = NULL;
    if (!parent || !parent->source) {
        *err = kv_asprintf("%s: no parent program", kv_mutator_name(kind));
        return -1;
    }
    switch (kind) {
    case KV_MUTATOR_TUNE:
        return kv_mutate_tune(parent->source, rng, out, err);
    case KV_MUTATOR_GI:
        return kv_mutate_gi(parent->source, rng, out, err);
    case KV_MUTATOR_CROSSOVER: {
        if (!other || !other->source) {
            *err = kv_strdup("crossover needs a second parent");
            return -1;
        }
        char ba[32], bb[32];
        return kv_mutate_crossover_named(parent->source, other->source,
                                         program_name(parent, "A", ba),
                                         program_name(other, "B", bb), rng, out, err);
    }
    default:
        *err = kv_asprintf("unknown built-in mutator %d", (int)kind);
        return -1;
    }
}
