/* The population's invariants, checked (see database_check.h). Each check
 * quotes the line of database_internal.h it stands for. */
#include "search/database_check.h"
#include "search/database_internal.h"
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int broken(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int broken(char **err, const char *fmt, ...)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "population invariant broken: ");
    va_list ap;
    va_start(ap, fmt);
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    *err = kv_buf_steal(&b);
    return -1;
}

/* 1 when E is in ARR (sorted by kv_entry_cmp), by binary search. */
static int contains(kv_entry *const *arr, size_t n, const kv_entry *e)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = kv_entry_cmp(arr[mid], e);
        if (c == 0) return arr[mid] == e;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* ARR is sorted best first by entry_cmp, strictly (a total order: no entry twice). */
static int check_sorted(kv_entry *const *arr, size_t n, const char *what, char **err)
{
    for (size_t i = 1; i < n; i++)
        if (kv_entry_cmp(arr[i - 1], arr[i]) >= 0)
            return broken(err, "%s is not sorted best first at %zu (programs %lld, %lld)", what, i,
                          (long long)arr[i - 1]->prog->id, (long long)arr[i]->prog->id);
    return 0;
}

/* The cells of island I: each owner maps from its cell, non-owners do not,
 * the map holds nothing else, and (MAP-Elites) every cell holding a program
 * has an owner at least as fit as each program in it. */
static int check_cells(const kv_database *db, int i, char **err)
{
    const kv_island *isl = &db->islands[i];
    size_t owners = 0;
    for (size_t k = 0; k < isl->n; k++) {
        const kv_entry *e = isl->progs[k];
        const kv_entry *owner = kv_ptrmap_get(&isl->cells, e->cell);
        if (e->owns_cell) {
            owners++;
            if (owner != e)
                return broken(err, "island %d: program %lld owns a cell the map gives to %lld", i,
                              (long long)e->prog->id, owner ? (long long)owner->prog->id : 0LL);
        } else if (owner == e) {
            return broken(err, "island %d: program %lld owns its cell in the map, not by its flag",
                          i, (long long)e->prog->id);
        }
        if (!owner)
            return broken(err, "island %d: the cell of program %lld holds it but has no owner", i,
                          (long long)e->prog->id);
        if (owner->prog->fitness < e->prog->fitness)
            return broken(err, "island %d: program %lld is fitter than its cell's owner %lld", i,
                          (long long)e->prog->id, (long long)owner->prog->id);
        uint64_t key = 0;
        for (size_t d = 0; d < db->n_dims; d++) {
            if (e->coords[d] < 0 || e->coords[d] >= db->bins[d])
                return broken(err,
                              "island %d: program %lld: bin %d of dimension %s is outside "
                              "0..%d",
                              i, (long long)e->prog->id, e->coords[d], db->dims[d],
                              db->bins[d] - 1);
            key += (uint64_t)e->coords[d] * db->strides[d];
        }
        if (key != e->cell)
            return broken(err, "island %d: program %lld: its cell key does not match its bins", i,
                          (long long)e->prog->id);
    }
    if (isl->cells.n != owners)
        return broken(err, "island %d: the cell map holds %zu cells for %zu owners", i,
                      isl->cells.n, owners);
    return 0;
}

int kv_database_check(const kv_database *db, char **err)
{
    *err = NULL;
    /* "both arrays are sorted best first by entry_cmp" */
    if (check_sorted(db->all, db->n_all, "the population", err) != 0) return -1;
    size_t total = 0;
    for (int i = 0; i < db->num_islands; i++) {
        const kv_island *isl = &db->islands[i];
        char what[48];
        snprintf(what, sizeof what, "island %d", i);
        if (check_sorted(isl->progs, isl->n, what, err) != 0) return -1;
        total += isl->n;
        for (size_t k = 0; k < isl->n; k++) {
            const kv_entry *e = isl->progs[k];
            /* "every entry is in exactly one island's progs and in all" */
            if (e->prog->island != i)
                return broken(err, "program %lld of island %d says it is on island %d",
                              (long long)e->prog->id, i, e->prog->island);
            if (!contains(db->all, db->n_all, e))
                return broken(err, "program %lld of island %d is missing from the population",
                              (long long)e->prog->id, i);
            /* "an island's codes maps each code hash it holds to its entry" */
            if (kv_ptrmap_get(&isl->codes, e->prog->code_hash) != e)
                return broken(err, "island %d: the code map does not lead to program %lld", i,
                              (long long)e->prog->id);
        }
        if (isl->codes.n != isl->n)
            return broken(err, "island %d: the code map holds %zu codes for %zu programs", i,
                          isl->codes.n, isl->n);
        /* "an island's cells maps each occupied cell key to its owner" */
        if (check_cells(db, i, err) != 0) return -1;
        /* "failed programs live only in their island's failed ring" */
        if (isl->n_failed > KV_FAILED_KEPT)
            return broken(err, "island %d keeps %zu failures, over %d", i, isl->n_failed,
                          KV_FAILED_KEPT);
        for (size_t k = 0; k < isl->n_failed; k++) {
            const kv_program *f = isl->failed[k];
            if (f->status != KV_STATUS_FAILED && f->status != KV_STATUS_TIMEOUT)
                return broken(err, "island %d keeps program %lld, %s, among its failures", i,
                              (long long)f->id, kv_status_name(f->status));
            const kv_entry *same = kv_ptrmap_get(&isl->codes, f->code_hash);
            if (same && same->prog->id == f->id)
                return broken(err, "island %d: failed program %lld is in the population", i,
                              (long long)f->id);
        }
    }
    if (total != db->n_all)
        return broken(err, "the islands hold %zu programs, the population %zu", total, db->n_all);
    /* "the archive is the first archive_size entries of all" */
    size_t archive = kv_database_archive_size(db);
    size_t want = db->n_all < (size_t)db->archive_size ? db->n_all : (size_t)db->archive_size;
    if (archive != want)
        return broken(err, "the archive holds %zu programs, not %zu", archive, want);
    for (size_t r = 0; r < archive; r++)
        if (kv_database_archive_at(db, r) != db->all[r]->prog)
            return broken(err, "archive rank %zu is not the population's", r);
    /* "len(all) <= population_size after every add (unless every candidate
     * for eviction is an island's best)" */
    if (db->population_size > 0 && db->n_all > (size_t)db->population_size)
        for (size_t k = 0; k < db->n_all; k++) {
            const kv_entry *e = db->all[k];
            if (db->islands[e->prog->island].progs[0] != e)
                return broken(err, "%zu programs over a cap of %d, and program %lld could go",
                              db->n_all, db->population_size, (long long)e->prog->id);
        }
    return 0;
}
