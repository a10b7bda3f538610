/* Parent and inspiration selection (kv_database_sample). Every draw comes
 * from the kv_rng passed in, and every walk is over the sorted arrays, so the
 * same adds and the same seed give the same samples. Cost per call:
 * O(island size) for the fitness weights, O(archive_size) for exploitation,
 * O(island size^2 x objectives) for a Pareto front (computed from the
 * island's programs when a parent is drawn from it), O(k^2 + d^2) for the
 * inspirations; bounded by the population. */
#include "search/database_internal.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>

/* Uniform over the island. */
static kv_entry *pick_uniform(const kv_island *isl, kv_rng *rng)
{
    return isl->progs[kv_rng_below(rng, isl->n)];
}

/* From the archive, preferring members on island SRC; NULL when the archive is empty. */
static kv_entry *pick_archive(const kv_database *db, int src, kv_rng *rng)
{
    size_t n = kv_database_archive_size(db);
    if (n == 0) return NULL;
    size_t on_island = 0;
    for (size_t i = 0; i < n; i++)
        if (db->all[i]->prog->island == src) on_island++;
    if (on_island == 0) return db->all[kv_rng_below(rng, n)];
    size_t k = kv_rng_below(rng, on_island);
    for (size_t i = 0; i < n; i++)
        if (db->all[i]->prog->island == src && k-- == 0) return db->all[i];
    return NULL; /* unreachable */
}

/* The entries of ISL on its Pareto front over DB's objectives, into a new
 * array (*N of them; NULL when none). */
static kv_entry **island_front(const kv_database *db, const kv_island *isl, size_t *n)
{
    size_t k = db->n_objectives;
    double *vals = kv_malloc((isl->n ? isl->n : 1) * k * sizeof *vals);
    for (size_t i = 0; i < isl->n; i++) {
        const json_t *m = isl->progs[i]->prog->metrics;
        for (size_t o = 0; o < k; o++)
            if (!kv_objectives_whole(m) ||
                kv_objective_value(&db->objectives[o], m, &vals[i * k + o]) != 0)
                vals[i * k + o] = NAN; /* not on the front (objectives.h) */
    }
    size_t *idx = kv_malloc((isl->n ? isl->n : 1) * sizeof *idx);
    *n = kv_pareto_front(db->objectives, k, vals, isl->n, idx);
    kv_entry **front = *n ? kv_malloc(*n * sizeof *front) : NULL;
    for (size_t i = 0; i < *n; i++)
        front[i] = isl->progs[idx[i]];
    free(idx);
    free(vals);
    return front;
}

/* Uniform over the island's Pareto front; NULL when it is empty. */
static kv_entry *pick_front(const kv_database *db, const kv_island *isl, kv_rng *rng)
{
    size_t n = 0;
    kv_entry **front = island_front(db, isl, &n);
    kv_entry *e = n ? front[kv_rng_below(rng, n)] : NULL;
    free(front);
    return e;
}

size_t kv_database_island_front(const kv_database *db, int island, const kv_program **out,
                                size_t cap)
{
    if (!db || island < 0 || island >= db->num_islands || db->n_objectives < 2) return 0;
    size_t n = 0;
    kv_entry **front = island_front(db, &db->islands[island], &n);
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = front[i]->prog;
    free(front);
    return n;
}

/* Fitness-weighted over the island: weights are fitness shifted so the worst
 * gets a small positive weight (1e-3 of the range); all equal: uniform. */
static kv_entry *pick_weighted(const kv_island *isl, kv_rng *rng)
{
    double hi = isl->progs[0]->prog->fitness, lo = isl->progs[isl->n - 1]->prog->fitness;
    if (!(hi > lo)) return pick_uniform(isl, rng);
    double *w = kv_malloc(isl->n * sizeof *w);
    for (size_t i = 0; i < isl->n; i++)
        w[i] = (isl->progs[i]->prog->fitness / 2 - lo / 2) / (hi / 2 - lo / 2) + 1e-3;
    size_t k = kv_rng_weighted(rng, w, isl->n);
    free(w);
    return isl->progs[k];
}

/* Inspirations being gathered: never the parent, never twice the same
 * program or the same code (the parent's included). */
typedef struct picks {
    const kv_entry *parent;
    const kv_program **out;
    size_t n, max;
} picks;

static int try_take(picks *pk, const kv_entry *e)
{
    if (pk->n >= pk->max || e == pk->parent) return 0;
    if (e->prog->code_hash == pk->parent->prog->code_hash) return 0;
    for (size_t i = 0; i < pk->n; i++)
        if (pk->out[i] == e->prog || pk->out[i]->code_hash == e->prog->code_hash) return 0;
    pk->out[pk->n++] = e->prog;
    return 1;
}

/* Adds the owner of the cell at COORDS (when in the grid and occupied) to LIST. */
static void near_cell(const kv_database *db, const kv_island *isl, const int *coords,
                      const kv_entry **list, size_t *n)
{
    uint64_t key = 0;
    for (size_t d = 0; d < db->n_dims; d++) {
        if (coords[d] < 0 || coords[d] >= db->bins[d]) return;
        key += (uint64_t)coords[d] * db->strides[d];
    }
    const kv_entry *e = kv_ptrmap_get(&isl->cells, key);
    if (e) list[(*n)++] = e;
}

/* Owners of the cells at Manhattan distance 1 and 2 from PARENT's cell, in a
 * fixed order; returns a malloc'd array of *n entries. */
static const kv_entry **nearby_cells(const kv_database *db, const kv_island *isl,
                                     const kv_entry *parent, size_t *n)
{
    size_t d = db->n_dims;
    const kv_entry **list = kv_malloc((4 * d + 4 * d * d + 1) * sizeof *list);
    *n = 0;
    if (!parent->coords) return list; /* a failed parent: no cell */
    int *c = kv_malloc((d ? d : 1) * sizeof *c);
    *n = 0;
    for (size_t i = 0; i < d; i++)
        c[i] = parent->coords[i];
    static const int steps[4] = {-1, 1, -2, 2};
    for (size_t i = 0; i < d; i++) {
        for (int s = 0; s < 4; s++) {
            c[i] += steps[s];
            near_cell(db, isl, c, list, n);
            c[i] -= steps[s];
        }
    }
    for (size_t i = 0; i < d; i++) {
        for (size_t j = i + 1; j < d; j++) {
            for (int s = 0; s < 4; s++) {
                c[i] += s & 1 ? 1 : -1;
                c[j] += s & 2 ? 1 : -1;
                near_cell(db, isl, c, list, n);
                c[i] -= s & 1 ? 1 : -1;
                c[j] -= s & 2 ? 1 : -1;
            }
        }
    }
    free(c);
    return list;
}

/* Fills PK from island ISL, as OpenEvolve does: the island's best, then its
 * top programs (max(1, elite_selection_ratio * k) of them), then owners of
 * cells near the parent's (half of what is left, rounded up), then random
 * programs; anything still missing is filled from the rest of the island. */
static void pick_inspirations(const kv_database *db, const kv_island *isl, picks *pk, kv_rng *rng)
{
    size_t k = pk->max;
    double elite = floor(db->elite_selection_ratio * (double)k);
    size_t n_top = 1 + (elite >= 1 ? (size_t)elite : 1);
    if (n_top > k) n_top = k;
    size_t n_near = (k - n_top + 1) / 2;
    for (size_t i = 0; i < isl->n && pk->n < n_top; i++)
        try_take(pk, isl->progs[i]);

    size_t n_list = 0;
    const kv_entry **list = nearby_cells(db, isl, pk->parent, &n_list);
    size_t goal = pk->n + n_near;
    while (pk->n < goal && n_list > 0) {
        size_t j = kv_rng_below(rng, n_list);
        try_take(pk, list[j]);
        list[j] = list[--n_list];
    }
    free(list);

    /* Random fill: a few draws, then a sweep from a random start. */
    for (size_t tries = 0; pk->n < k && tries < 8 * k; tries++)
        try_take(pk, isl->progs[kv_rng_below(rng, isl->n)]);
    if (pk->n < k) {
        size_t start = kv_rng_below(rng, isl->n);
        for (size_t i = 0; i < isl->n && pk->n < k; i++)
            try_take(pk, isl->progs[(start + i) % isl->n]);
    }
}

int kv_database_sample(kv_database *db, int island, kv_rng *rng, size_t max_inspirations,
                       kv_selection *out)
{
    *out = (kv_selection){.island = island};
    if (!db || !rng || island < 0 || island >= db->num_islands || db->n_all == 0) return -1;
    int src = island;
    for (int i = 0; i < db->num_islands && db->islands[src].n == 0; i++)
        src = (island + i + 1) % db->num_islands;
    const kv_island *isl = &db->islands[src];

    /* A failure as the parent, only when the config asks for it (the draw
     * is made only then, so runs without it keep their sequence). */
    const kv_island *own = &db->islands[island];
    if (db->failed_parent_probability > 0 && own->n_failed > 0 &&
        kv_rng_uniform(rng) < db->failed_parent_probability) {
        const kv_program *failed = own->failed[kv_rng_below(rng, own->n_failed)];
        kv_entry stand_in = {.prog = (kv_program *)failed};
        picks pk = {&stand_in, NULL, 0, max_inspirations};
        if (max_inspirations > 0 && isl->n > 0) {
            pk.out = kv_malloc(max_inspirations * sizeof *pk.out);
            pick_inspirations(db, isl, &pk, rng);
        }
        out->parent = failed;
        out->inspirations = pk.out;
        out->n_inspirations = pk.n;
        out->strategy = "failed";
        return 0;
    }
    double r = kv_rng_uniform(rng);
    kv_entry *parent = NULL;
    const char *strategy;
    if (r < db->exploration_ratio) {
        parent = pick_uniform(isl, rng);
        strategy = "exploration";
    } else if (r < db->exploration_ratio + db->exploitation_ratio && db->n_objectives >= 2 &&
               (parent = pick_front(db, isl, rng)) != NULL) {
        strategy = "pareto";
    } else if (r < db->exploration_ratio + db->exploitation_ratio && db->n_objectives < 2 &&
               (parent = pick_archive(db, src, rng)) != NULL) {
        strategy = "exploitation";
    } else {
        parent = pick_weighted(isl, rng);
        strategy = "weighted";
    }
    if (src != island) strategy = "fallback";

    picks pk = {parent, NULL, 0, max_inspirations};
    if (max_inspirations > 0) {
        pk.out = kv_malloc(max_inspirations * sizeof *pk.out);
        pick_inspirations(db, isl, &pk, rng);
    }
    out->parent = parent->prog;
    out->inspirations = pk.out;
    out->n_inspirations = pk.n;
    out->strategy = strategy;
    return 0;
}

void kv_selection_free(kv_selection *sel)
{
    if (!sel) return;
    free((void *)sel->inspirations);
    sel->inspirations = NULL;
    sel->n_inspirations = 0;
    sel->parent = NULL;
}
