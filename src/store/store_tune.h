/* The store's record of tune children along a lineage, for the tune
 * mutator to learn which declared parameters are worth moving
 * (src/mutate/tune_learn.c). A read query only: the learning state is
 * never stored, it is recomputed from these rows, so a resumed run learns
 * exactly what the interrupted one had. */
#ifndef KV_STORE_STORE_TUNE_H
#define KV_STORE_STORE_TUNE_H

#include "store/program.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kv_store kv_store;

/* One tune child and what it did against its parent. */
typedef struct kv_tune_obs {
    int64_t id;            /* the child */
    int depth;             /* 0: a child of the program asked about, 1: of its parent, ... */
    char *summary;         /* its change_summary ("tune: VEC 1 -> 4 (line 12); ..."), owned */
    kv_status status;      /* its status */
    double fitness;        /* its fitness, NAN when none */
    double parent_fitness; /* its parent's, NAN when none */
    /* The compiled artifact's hash of the child (artifacts.artifact_hash, or
     * the artifact it duplicates: duplicate_of_artifact) and of its parent;
     * NULL when the evaluator reported none. Owned. */
    char *artifact;
    char *parent_artifact;
} kv_tune_obs;

/* Ancestors followed from a program (itself included) at most. */
#define KV_TUNE_HISTORY_DEPTH 64

/* The children made by the tune mutator of PROGRAM_ID and of its ancestors
 * (along parent_id, at most KV_TUNE_HISTORY_DEPTH programs), oldest first,
 * into a malloc'd *OUT of *N rows. Returns 0, or -1 with kv_store_errmsg. */
int kv_store_tune_history(kv_store *s, int64_t program_id, kv_tune_obs **out, size_t *n);
void kv_tune_obs_free(kv_tune_obs *obs, size_t n);

#endif
