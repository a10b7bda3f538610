/* The population database: creation, adding programs (features, grid cell,
 * archive, population cap and eviction) and queries. Selection lives in
 * selection.c, migration in migration.c; the layout and its invariants are in
 * database_internal.h.
 *
 * Every walk is over arrays kept sorted by a total order, and nothing here
 * reads the clock or draws random numbers, so the state is a pure function of
 * the sequence of kv_database_add calls (resume replays it). An add costs a
 * few binary searches and hash lookups plus, at worst, memmoves and an
 * eviction scan over the population: bounded by population_size, never by the
 * number of programs ever added. */
#include "search/database_internal.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int kv_entry_cmp(const kv_entry *a, const kv_entry *b)
{
    double fa = a->prog->fitness, fb = b->prog->fitness;
    if (fa > fb) return -1;
    if (fa < fb) return 1;
    if (a->prog->id != b->prog->id) return a->prog->id < b->prog->id ? -1 : 1;
    if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
    return 0;
}

/* Position of E in sorted ARR (or where it would go), by binary search. */
static size_t sorted_find(kv_entry *const *arr, size_t n, const kv_entry *e)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (kv_entry_cmp(arr[mid], e) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Inserts E into the sorted array, growing it as needed. */
static void sorted_insert(kv_entry ***arr, size_t *n, size_t *cap, kv_entry *e)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *arr = kv_realloc(*arr, *cap * sizeof **arr);
    }
    size_t pos = sorted_find(*arr, *n, e);
    memmove(&(*arr)[pos + 1], &(*arr)[pos], (*n - pos) * sizeof **arr);
    (*arr)[pos] = e;
    (*n)++;
}

/* Removes E from the sorted array; returns 0, or -1 when it is not there. */
static int sorted_remove(kv_entry **arr, size_t *n, const kv_entry *e)
{
    size_t pos = sorted_find(arr, *n, e);
    if (pos >= *n || arr[pos] != e) return -1;
    memmove(&arr[pos], &arr[pos + 1], (*n - pos - 1) * sizeof *arr);
    (*n)--;
    return 0;
}

static void entry_free(kv_entry *e)
{
    if (!e) return;
    kv_program_free(e->prog);
    free(e->coords);
    free(e);
}

kv_database *kv_database_new(const kv_database_config *cfg)
{
    if (!cfg) {
        kv_error("search: kv_database_new: no configuration");
        return NULL;
    }
    if (cfg->num_islands < 1) {
        kv_error("search: database.num_islands must be at least 1 (got %d)", cfg->num_islands);
        return NULL;
    }
    kv_database *db = kv_calloc(1, sizeof *db);
    db->population_size = cfg->population_size;
    db->archive_size = cfg->archive_size > 0 ? cfg->archive_size : 0;
    db->num_islands = cfg->num_islands;
    db->diversity_reference_size =
        cfg->diversity_reference_size > 0 ? cfg->diversity_reference_size : 20;
    db->migration_interval = cfg->migration_interval;
    db->exploration_ratio = cfg->exploration_ratio;
    db->exploitation_ratio = cfg->exploitation_ratio;
    db->elite_selection_ratio = cfg->elite_selection_ratio;
    db->migration_rate = cfg->migration_rate;
    db->failed_parent_probability = cfg->failed_parent_probability;
    db->diversity_dim = -1;
    char *why = NULL;
    if (cfg->n_objectives >= 2 &&
        kv_objectives_parse(cfg->objectives, cfg->n_objectives, &db->objectives, &why) == 0)
        db->n_objectives = cfg->n_objectives;
    free(why); /* the config check has said it */

    db->n_dims = cfg->n_feature_dimensions;
    db->dims = kv_calloc(db->n_dims ? db->n_dims : 1, sizeof *db->dims);
    db->bins = kv_calloc(db->n_dims ? db->n_dims : 1, sizeof *db->bins);
    db->strides = kv_calloc(db->n_dims ? db->n_dims : 1, sizeof *db->strides);
    db->scales = kv_calloc(db->n_dims ? db->n_dims : 1, sizeof *db->scales);
    uint64_t stride = 1;
    for (size_t i = 0; i < db->n_dims; i++) {
        const char *name = cfg->feature_dimensions ? cfg->feature_dimensions[i] : NULL;
        if (!name || !*name) {
            kv_error("search: database.feature_dimensions[%zu] is empty", i);
            kv_database_free(db);
            return NULL;
        }
        db->dims[i] = kv_strdup(name);
        if (strcmp(name, "diversity") == 0) db->diversity_dim = (int)i;
        int bins = cfg->feature_bins ? cfg->feature_bins[i] : 10;
        db->bins[i] = bins >= 1 ? bins : 1;
        db->strides[i] = stride;
        if (stride > UINT64_MAX / (uint64_t)db->bins[i]) {
            kv_error("search: database.feature_bins: the grid has more than 2^64 cells");
            kv_database_free(db);
            return NULL;
        }
        stride *= (uint64_t)db->bins[i];
    }
    db->islands = kv_calloc((size_t)db->num_islands, sizeof *db->islands);
    return db;
}

void kv_database_free(kv_database *db)
{
    if (!db) return;
    for (size_t i = 0; i < db->n_all; i++)
        entry_free(db->all[i]);
    free(db->all);
    if (db->islands) {
        for (int i = 0; i < db->num_islands; i++) {
            free(db->islands[i].progs);
            for (size_t k = 0; k < db->islands[i].n_failed; k++)
                kv_program_free(db->islands[i].failed[k]);
            kv_ptrmap_free(&db->islands[i].cells);
            kv_ptrmap_free(&db->islands[i].codes);
        }
    }
    free(db->islands);
    kv_objectives_free(db->objectives, db->n_objectives);
    for (size_t i = 0; i < db->n_dims; i++)
        free(db->dims[i]);
    free(db->dims);
    free(db->bins);
    free(db->strides);
    free(db->scales);
    free(db);
}

int kv_database_max_generation(const kv_database *db)
{
    int g = 0;
    for (int i = 0; i < db->num_islands; i++)
        if (db->islands[i].generation > g) g = db->islands[i].generation;
    return g;
}

/* Mean MinHash distance of E to the island's best diversity_reference_size
 * programs (its current elites); NAN when the island is empty. */
static double diversity_of(const kv_database *db, const kv_island *isl, const kv_entry *e)
{
    size_t n = isl->n < (size_t)db->diversity_reference_size ? isl->n
                                                             : (size_t)db->diversity_reference_size;
    if (n == 0) return NAN;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += 1.0 - kv_minhash_jaccard(&e->sig, &isl->progs[i]->sig);
    return sum / (double)n;
}

/* Computes E's coordinates and cell key (widening the running ranges) and
 * returns its features object {"dim": bin, ...} (new reference). */
static json_t *place(kv_database *db, const kv_island *isl, kv_entry *e)
{
    double diversity = NAN;
    if (db->diversity_dim >= 0) {
        kv_minhash_compute(e->prog->source, &e->sig);
        diversity = diversity_of(db, isl, e);
    }
    json_t *features = json_object();
    e->coords = kv_calloc(db->n_dims ? db->n_dims : 1, sizeof *e->coords);
    e->cell = 0;
    for (size_t i = 0; i < db->n_dims; i++) {
        double v = kv_feature_value(db->dims[i], e->prog, e->prog->fitness, diversity);
        int bin = kv_feature_bin(&db->scales[i], v, db->bins[i]);
        e->coords[i] = bin;
        e->cell += (uint64_t)bin * db->strides[i];
        json_object_set_new(features, db->dims[i], json_integer(bin));
    }
    return features;
}

/* Takes E out of every structure and frees it. */
static void remove_entry(kv_database *db, kv_entry *e)
{
    kv_island *isl = &db->islands[e->prog->island];
    if (e->owns_cell) kv_ptrmap_del(&isl->cells, e->cell);
    kv_ptrmap_del(&isl->codes, e->prog->code_hash);
    if (sorted_remove(isl->progs, &isl->n, e) != 0 || sorted_remove(db->all, &db->n_all, e) != 0)
        kv_error("search: internal error: program %lld missing from the population arrays",
                 (long long)e->prog->id);
    entry_free(e);
}

/* 1 when E is the best program of its island. */
static int is_island_best(const kv_database *db, const kv_entry *e)
{
    const kv_island *isl = &db->islands[e->prog->island];
    return isl->n > 0 && isl->progs[0] == e;
}

/* The worst entry (ties: oldest) that may be evicted at TIER: tier 0 takes
 * only programs owning no cell, outside the archive and not an island's
 * best; tier 1 any program but an island's best. NULL when none. */
static kv_entry *eviction_candidate(const kv_database *db, int tier)
{
    kv_entry *found = NULL;
    size_t stop = tier == 0 ? (size_t)db->archive_size : 0;
    for (size_t i = db->n_all; i-- > stop;) {
        kv_entry *e = db->all[i];
        if (found && e->prog->fitness > found->prog->fitness) break;
        if (is_island_best(db, e)) continue;
        if (tier == 0 && e->owns_cell) continue;
        found = e; /* walking backwards: among equal fitness, the last found is the oldest */
    }
    return found;
}

/* Evicts programs while the population is over its cap. */
static void enforce_cap(kv_database *db)
{
    if (db->population_size <= 0) return;
    while (db->n_all > (size_t)db->population_size) {
        kv_entry *victim = eviction_candidate(db, 0);
        if (!victim) victim = eviction_candidate(db, 1);
        if (!victim) return; /* only island bests left */
        remove_entry(db, victim);
    }
}

int kv_database_add(kv_database *db, kv_program *p)
{
    if (!db || !p) return -1;
    if (p->island < 0 || p->island >= db->num_islands) {
        kv_error("search: program %lld: island %d out of range [0, %d)", (long long)p->id,
                 p->island, db->num_islands);
        return -1;
    }
    if (p->status != KV_STATUS_OK) return 0;
    double fitness = kv_fitness_from(p->metrics, db->dims, db->n_dims);
    p->fitness = fitness;
    if (!isfinite(fitness)) return 0;
    kv_island *isl = &db->islands[p->island];
    uint64_t code = p->code_hash ? p->code_hash : kv_hash_code(p->source ? p->source : "");
    if (kv_ptrmap_get(&isl->codes, code)) return 0;

    kv_entry *e = kv_calloc(1, sizeof *e);
    e->prog = kv_program_clone(p);
    e->prog->code_hash = code;
    e->seq = db->next_seq++;
    json_t *features = place(db, isl, e);
    json_decref(e->prog->features);
    e->prog->features = json_deep_copy(features);
    json_decref(p->features);
    p->features = features;

    kv_entry *occupant = kv_ptrmap_get(&isl->cells, e->cell);
    if (!occupant || e->prog->fitness > occupant->prog->fitness) {
        if (occupant) occupant->owns_cell = 0;
        e->owns_cell = 1;
        kv_ptrmap_put(&isl->cells, e->cell, e);
    }
    kv_ptrmap_put(&isl->codes, code, e);
    sorted_insert(&isl->progs, &isl->n, &isl->cap, e);
    sorted_insert(&db->all, &db->n_all, &db->cap_all, e);

    if (p->is_migrant)
        db->last_migration_gen = kv_database_max_generation(db);
    else
        isl->generation++;
    enforce_cap(db);
    return 1;
}

int kv_database_add_failed(kv_database *db, const kv_program *p)
{
    if (!db || !p || p->island < 0 || p->island >= db->num_islands) return -1;
    if (p->status != KV_STATUS_FAILED && p->status != KV_STATUS_TIMEOUT) return 0;
    if (!(db->failed_parent_probability > 0)) return 0; /* never drawn: keep nothing */
    kv_island *isl = &db->islands[p->island];
    kv_program *copy = kv_program_clone(p);
    json_decref(copy->artifacts); /* a parent's source and metrics are what a mutator reads */
    json_decref(copy->stages);
    copy->artifacts = copy->stages = NULL;
    copy->fitness = NAN;
    if (isl->n_failed < KV_FAILED_KEPT) {
        isl->failed[isl->n_failed++] = copy;
    } else {
        kv_program_free(isl->failed[isl->next_failed]);
        isl->failed[isl->next_failed] = copy;
        isl->next_failed = (isl->next_failed + 1) % KV_FAILED_KEPT;
    }
    return 1;
}

int kv_database_num_islands(const kv_database *db)
{
    return db->num_islands;
}

size_t kv_database_size(const kv_database *db)
{
    return db->n_all;
}

size_t kv_database_island_size(const kv_database *db, int island)
{
    if (island < 0 || island >= db->num_islands) return 0;
    return db->islands[island].n;
}

int kv_database_island_generation(const kv_database *db, int island)
{
    if (island < 0 || island >= db->num_islands) return 0;
    return db->islands[island].generation;
}

const kv_program *kv_database_best(const kv_database *db)
{
    return db->n_all ? db->all[0]->prog : NULL;
}

const kv_program *kv_database_island_best(const kv_database *db, int island)
{
    if (island < 0 || island >= db->num_islands || db->islands[island].n == 0) return NULL;
    return db->islands[island].progs[0]->prog;
}

const kv_program *kv_database_island_program(const kv_database *db, int island, size_t rank)
{
    if (island < 0 || island >= db->num_islands || rank >= db->islands[island].n) return NULL;
    return db->islands[island].progs[rank]->prog;
}

size_t kv_database_archive_size(const kv_database *db)
{
    return db->n_all < (size_t)db->archive_size ? db->n_all : (size_t)db->archive_size;
}

const kv_program *kv_database_archive_at(const kv_database *db, size_t rank)
{
    return rank < kv_database_archive_size(db) ? db->all[rank]->prog : NULL;
}

const kv_program *kv_database_get(const kv_database *db, int64_t id)
{
    for (size_t i = 0; i < db->n_all; i++)
        if (db->all[i]->prog->id == id) return db->all[i]->prog;
    return NULL;
}

int kv_database_island_has_code(const kv_database *db, int island, uint64_t code_hash)
{
    if (island < 0 || island >= db->num_islands) return 0;
    return kv_ptrmap_get(&db->islands[island].codes, code_hash) != NULL;
}

size_t kv_database_grid_cells(const kv_database *db, int island)
{
    if (island < 0 || island >= db->num_islands) return 0;
    return db->islands[island].cells.n;
}

static int cmp_cell(const void *a, const void *b)
{
    const kv_entry *x = *(kv_entry *const *)a, *y = *(kv_entry *const *)b;
    return x->cell < y->cell ? -1 : x->cell > y->cell;
}

json_t *kv_database_grid_json(const kv_database *db, int island)
{
    if (island < 0 || island >= db->num_islands) return NULL;
    const kv_island *isl = &db->islands[island];
    json_t *root = json_object();
    json_t *dims = json_array(), *bins = json_array(), *mins = json_array(), *maxs = json_array();
    for (size_t i = 0; i < db->n_dims; i++) {
        json_array_append_new(dims, json_string(db->dims[i]));
        json_array_append_new(bins, json_integer(db->bins[i]));
        const kv_feature_scale *s = &db->scales[i];
        json_array_append_new(mins, s->seen ? json_real(s->min) : json_null());
        json_array_append_new(maxs, s->seen ? json_real(s->max) : json_null());
    }
    json_object_set_new(root, "island", json_integer(island));
    json_object_set_new(root, "dimensions", dims);
    json_object_set_new(root, "bins", bins);
    json_object_set_new(root, "min", mins);
    json_object_set_new(root, "max", maxs);
    json_object_set_new(root, "programs", json_integer((json_int_t)isl->n));
    json_object_set_new(root, "generation", json_integer(isl->generation));

    kv_entry **owners = kv_malloc((isl->cells.n ? isl->cells.n : 1) * sizeof *owners);
    size_t n = 0;
    for (size_t i = 0; i < isl->n; i++)
        if (isl->progs[i]->owns_cell) owners[n++] = isl->progs[i];
    qsort(owners, n, sizeof *owners, cmp_cell);
    json_t *cells = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *cell = json_object(), *coords = json_array();
        for (size_t d = 0; d < db->n_dims; d++)
            json_array_append_new(coords, json_integer(owners[i]->coords[d]));
        json_object_set_new(cell, "coords", coords);
        json_object_set_new(cell, "program", json_integer(owners[i]->prog->id));
        json_object_set_new(cell, "fitness", json_real(owners[i]->prog->fitness));
        json_array_append_new(cells, cell);
    }
    free(owners);
    json_object_set_new(root, "cells", cells);
    return root;
}
