/* The database's internal layout, shared by database.c (adding, evicting,
 * queries), selection.c (parent and inspiration sampling) and migration.c.
 * Not part of the contract: only files of src/search include it.
 *
 * Invariants:
 * - every entry is in exactly one island's `progs` and in `all`; both arrays
 *   are sorted best first by entry_cmp (fitness desc, id asc, insertion
 *   order asc), a total order, so every walk over them is deterministic;
 * - an island's `codes` maps each code hash it holds to its entry;
 * - an island's `cells` maps each occupied cell key to its owner, whose
 *   owns_cell is 1; every other entry has owns_cell 0;
 * - the archive is the first archive_size entries of `all`;
 * - len(all) <= population_size after every add (unless every candidate for
 *   eviction is an island's best);
 * - failed programs live only in their island's `failed` ring: never in
 *   `progs`, `all`, `cells` or `codes`, so they own no cell, rank nowhere
 *   and are parents only through failed_parent_probability. */
#ifndef KV_SEARCH_DATABASE_INTERNAL_H
#define KV_SEARCH_DATABASE_INTERNAL_H

#include "search/database.h"
#include "config/objectives.h"
#include "search/features.h"
#include "search/minhash.h"
#include "search/ptrmap.h"

typedef struct kv_entry {
    kv_program *prog; /* owned copy */
    uint64_t seq;     /* insertion order, for ties */
    int *coords;      /* one bin per dimension */
    uint64_t cell;    /* mixed-radix key of coords */
    int owns_cell;
    kv_minhash sig; /* filled only when "diversity" is a dimension */
} kv_entry;

/* Recent failed children an island keeps, for database.failed_parent_probability. */
#define KV_FAILED_KEPT 16

typedef struct kv_island {
    kv_entry **progs; /* sorted best first */
    size_t n, cap;
    kv_program *failed[KV_FAILED_KEPT]; /* ring of copies of recent failures (owned) */
    size_t n_failed, next_failed;
    kv_ptrmap cells; /* cell key -> owner */
    kv_ptrmap codes; /* code hash -> entry */
    int generation;  /* non-migrant programs added */
} kv_island;

struct kv_database {
    int population_size; /* <= 0: no cap */
    int archive_size;
    int num_islands;
    int diversity_reference_size;
    int migration_interval;
    double exploration_ratio, exploitation_ratio, elite_selection_ratio, migration_rate;
    double failed_parent_probability;

    size_t n_dims;
    char **dims;
    int *bins;
    uint64_t *strides; /* cell key = sum coords[i] * strides[i] */
    int diversity_dim; /* index of "diversity", or -1 */
    kv_feature_scale *scales;

    kv_objective *objectives; /* the config's `objectives`; none: n_objectives 0 */
    size_t n_objectives;

    kv_island *islands;
    kv_entry **all; /* every entry, sorted best first */
    size_t n_all, cap_all;
    uint64_t next_seq;
    int last_migration_gen; /* max island generation when migration last happened */
};

/* <0 when A ranks before (is better than) B, >0 after; never 0 for distinct entries. */
int kv_entry_cmp(const kv_entry *a, const kv_entry *b);
/* The highest generation over all islands. */
int kv_database_max_generation(const kv_database *db);

#endif
