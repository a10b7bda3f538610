/* Where a child came from, for the bandit: the ensemble entry that made it
 * (KV_NO_ARM: none, e.g. the initial program) and its parent's fitness.
 * The controller, the breeder and the feedback all carry it. */
#ifndef KV_ENGINE_ORIGIN_H
#define KV_ENGINE_ORIGIN_H

#include <stddef.h>

#define KV_NO_ARM ((size_t)-1)
typedef struct kv_origin {
    size_t arm;
    double parent_fitness;
} kv_origin;

#endif
