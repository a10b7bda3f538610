/* The edits of the built-in mutators, which need no language model (the
 * mutators themselves, their names and how an arm reaches them are entries
 * of the registry: builtin.c, registry.h).
 *   tune       moves one to three parameters declared with `kevolve: tune`
 *              annotations (tune_parse.c has the syntax) to other allowed
 *              values; tune.h adds the draw weighted by a lineage's history;
 *   gi         genetic-improvement line edits inside EVOLVE-BLOCKs: delete a
 *              line, copy a line, swap two lines, replace a line with another
 *              from elsewhere in the program;
 *   crossover  takes each EVOLVE-BLOCK from one of two parents.
 * Every mutator only touches mutable text, and says what it changed. */
#ifndef KV_MUTATE_MUTATOR_H
#define KV_MUTATE_MUTATOR_H

#include "store/program.h"
#include "util/rng.h"

#include <stddef.h>

typedef struct kv_mutation {
    char *source;  /* the child's whole text (malloc'd) */
    char *summary; /* what changed, e.g. "tune: VEC 4 -> 8 (line 12); SPLIT 1 -> 2 (line 14)"
                      (malloc'd) */
} kv_mutation;

void kv_mutation_free(kv_mutation *m);

/* The edits. Each returns 0 with OUT filled, 1 when it has nothing to
 * change in this program (no tune annotations, no mutable lines, parents
 * with equal blocks), or -1 with a malloc'd message in *err. */
int kv_mutate_tune(const char *src, kv_rng *rng, kv_mutation *out, char **err);
int kv_mutate_gi(const char *src, kv_rng *rng, kv_mutation *out, char **err);
int kv_mutate_crossover(const char *a, const char *b, kv_rng *rng, kv_mutation *out, char **err);
/* kv_mutate_crossover naming the parents NAME_A and NAME_B in the summary
 * ("crossover: blocks 1,3 from #12, block 2 from #40"); the plain form says
 * "A" and "B". Returns 1 when the parents differ outside their blocks (or
 * have no differing block, or every cut gives back a parent). */
int kv_mutate_crossover_named(const char *a, const char *b, const char *name_a, const char *name_b,
                              kv_rng *rng, kv_mutation *out, char **err);

/* The tunable parameters declared in SRC (inside mutable text), for prompts
 * and reports: a JSON array of {"name","line","value","choices":[...]}
 * (new reference). NULL when SRC's markers or annotations are malformed
 * (kv_mutate_tune says why). */
json_t *kv_tune_parameters(const char *src);

#endif
