/* The population: islands, each with its own MAP-Elites grid over feature
 * dimensions, plus an elite archive, parent and inspiration selection and
 * ring migration. Holds only programs that evaluated OK; lives in memory and
 * is rebuilt on resume by adding the stored programs again in id order (the
 * state is a pure function of that sequence, so resume restores it exactly).
 *
 * Feature dimensions: "complexity" (source length), "diversity" (MinHash
 * distance to the island's reference programs), "score" (fitness), or any
 * numeric metric the evaluator reports. Each is scaled by the running min and
 * max seen so far and cut into its configured number of bins. */
#ifndef KV_SEARCH_DATABASE_H
#define KV_SEARCH_DATABASE_H

#include "config/config.h"
#include "store/program.h"
#include "util/rng.h"

#include <stddef.h>

typedef struct kv_database kv_database;

/* CFG is copied (what is needed of it). */
kv_database *kv_database_new(const kv_database_config *cfg);
void kv_database_free(kv_database *db);

/* Fitness: metrics.combined_score when it is a number, else the mean of the
 * numeric metrics that are not feature dimensions; NAN when there are none.
 * NaN or infinite metric values never count. */
double kv_fitness(const json_t *metrics, const kv_database_config *cfg);

/* Adds an OK program to island p->island (0 <= island < num_islands): sets
 * p->fitness and p->features, places it in the grid (replacing a worse
 * occupant of its cell), the archive, and the population; evicts when the
 * population exceeds population_size (programs owning no cell first, never
 * an island's best). The database keeps its own copy. Returns 1 when added,
 * 0 when not (duplicate code on that island, or not OK, or fitness NAN),
 * -1 on error. When p->is_migrant, the migration counts as done at the
 * current generation. A program added (1) may be evicted at once by the
 * population cap when it is the worst and owns no cell. */
int kv_database_add(kv_database *db, kv_program *p);
/* Keeps a copy of P, a FAILED or TIMEOUT child, among the last
 * KV_FAILED_KEPT failures of its island, from which a parent is drawn with
 * database.failed_parent_probability (nothing is kept when that is 0). A
 * failure never owns a cell, ranks, counts as a best or migrates. Returns 1
 * when kept, 0 when not, -1 on a bad island. */
int kv_database_add_failed(kv_database *db, const kv_program *p);

typedef struct kv_selection {
    int island;
    const kv_program *parent;        /* owned by the database; valid until the next add */
    const kv_program **inspirations; /* malloc'd array of borrowed pointers */
    size_t n_inspirations;
    const char *strategy; /* "exploration", "exploitation", "weighted",
                             "failed" (a recent failure, with
                             failed_parent_probability), or "fallback" when
                             ISLAND was empty and the parent came from
                             another island */
} kv_selection;

/* Picks a parent for ISLAND by the configured ratios (exploration: uniform
 * over the island; exploitation: from the elite archive, preferring the
 * island; otherwise fitness-weighted over the island) and up to
 * MAX_INSPIRATIONS inspirations (island best, top programs, nearby cells,
 * random; never the parent, no repeats). Falls back to any island's programs
 * when ISLAND is empty. Returns 0, or -1 when the database is empty. */
int kv_database_sample(kv_database *db, int island, kv_rng *rng, size_t max_inspirations,
                       kv_selection *out);
void kv_selection_free(kv_selection *sel);

/* The programs of ISLAND on its Pareto front over the config's objectives
 * (config/objectives.h; none configured: 0), up to CAP of them into OUT
 * (borrowed, valid until the next add); returns how many there are. With
 * objectives, the exploitation share of parents (exploitation_ratio) is
 * drawn uniformly from this front instead of the archive (strategy
 * "pareto"). */
size_t kv_database_island_front(const kv_database *db, int island, const kv_program **out,
                                size_t cap);

/* 1 when migration is due: the most advanced island has gained
 * migration_interval generations since the last migration (num_islands > 1). */
int kv_database_migration_due(const kv_database *db);
/* Plans a ring migration: for each island i, copies of its best
 * ceil(migration_rate * size) programs that are not migrants themselves, bound
 * for island (i+1) % n, skipping code the target island already holds. The
 * copies (is_migrant=1, migrated_from, parent_id = original, mutator
 * "migration", id 0) are returned for the caller to store and then add.
 * The migration counts as done only when copies are returned (so replaying
 * the stored migrants restores the schedule); when nothing can move it stays
 * due. */
int kv_database_plan_migration(kv_database *db, kv_program ***out, size_t *n_out);

/* Queries. */
int kv_database_num_islands(const kv_database *db);
size_t kv_database_size(const kv_database *db); /* all islands */
size_t kv_database_island_size(const kv_database *db, int island);
/* Programs added to ISLAND that are not migrants (its children, the initial
 * program included); migrants do not advance it. */
int kv_database_island_generation(const kv_database *db, int island);
const kv_program *kv_database_best(const kv_database *db); /* NULL when empty */
const kv_program *kv_database_island_best(const kv_database *db, int island);
/* 1 when the island holds a program with this code hash. */
int kv_database_island_has_code(const kv_database *db, int island, uint64_t code_hash);
/* Number of occupied cells of ISLAND's grid. */
size_t kv_database_grid_cells(const kv_database *db, int island);
/* The island's grid as JSON: {"dimensions":[...],"bins":[...],"cells":[{"coords":[..],
 * "program":id,"fitness":f}, ...]} (for status and the dashboard). Caller decrefs.
 * Also: "island", "min" and "max" (running range per dimension, null before
 * any value), "programs" (island size), "generation". Cells sorted by coords. */
json_t *kv_database_grid_json(const kv_database *db, int island);

/* Extensions (search engineer). Returned programs are owned by the database
 * and valid until the next add. */
/* The island's program of rank RANK (0 = best; by fitness, ties lower id), or NULL. */
const kv_program *kv_database_island_program(const kv_database *db, int island, size_t rank);
/* Number of programs in the elite archive (min(archive_size, size)). */
size_t kv_database_archive_size(const kv_database *db);
/* The archive member of rank RANK (0 = best overall), or NULL. */
const kv_program *kv_database_archive_at(const kv_database *db, size_t rank);
/* The program with id ID (any island; the best-ranked when several), or NULL.
 * O(population). */
const kv_program *kv_database_get(const kv_database *db, int64_t id);

#endif
