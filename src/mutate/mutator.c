/* The mutation record the built-in edits fill (tune.c, gi.c, crossover.c);
 * their names and their dispatch are the registry's (registry.c). */
#include "mutate/mutator.h"

#include <stdlib.h>

void kv_mutation_free(kv_mutation *m)
{
    if (!m) return;
    free(m->source);
    free(m->summary);
    m->source = NULL;
    m->summary = NULL;
}
