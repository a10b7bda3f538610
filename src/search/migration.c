/* Ring migration between islands: when it is due, and which copies move.
 * An island's generation counts the non-migrant programs added to it (its
 * children, the initial program included); migrants do not advance it. A
 * migration counts as done at the current highest generation both when it is
 * planned and when a migrant is added, so replaying the stored programs on
 * resume restores the same state. */
#include "search/database_internal.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>

int kv_database_migration_due(const kv_database *db)
{
    if (!db || db->num_islands < 2 || db->migration_interval <= 0) return 0;
    return kv_database_max_generation(db) - db->last_migration_gen >= db->migration_interval;
}

/* A migrant copy of E bound for island TARGET. */
static kv_program *migrant_of(const kv_entry *e, int target)
{
    kv_program *m = kv_program_clone(e->prog);
    m->id = 0;
    m->is_migrant = 1;
    m->migrated_from = e->prog->id;
    m->parent_id = e->prog->id;
    m->other_parent_id = 0;
    m->island = target;
    free(m->mutator);
    m->mutator = kv_strdup("migration");
    free(m->change_summary);
    m->change_summary = kv_asprintf("migrated from island %d (program %lld)", e->prog->island,
                                    (long long)e->prog->id);
    return m;
}

int kv_database_plan_migration(kv_database *db, kv_program ***out, size_t *n_out)
{
    if (!db || !out || !n_out) return -1;
    *out = NULL;
    *n_out = 0;
    if (db->num_islands < 2) return 0;
    size_t n = 0, cap = 0;
    kv_program **list = NULL;
    for (int i = 0; i < db->num_islands; i++) {
        const kv_island *isl = &db->islands[i];
        int target = (i + 1) % db->num_islands;
        /* The small margin keeps 0.1 * 30 from rounding up to 4. */
        double want = ceil(db->migration_rate * (double)isl->n - 1e-9);
        size_t quota = want > 0 ? (size_t)want : 0, taken = 0;
        for (size_t j = 0; j < isl->n && taken < quota; j++) {
            const kv_entry *e = isl->progs[j];
            if (e->prog->is_migrant) continue;
            taken++;
            if (kv_database_island_has_code(db, target, e->prog->code_hash)) continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                list = kv_realloc(list, cap * sizeof *list);
            }
            list[n++] = migrant_of(e, target);
        }
    }
    /* Marked only when something moves: a resumed run rebuilds the schedule from
     * the stored migrants alone, so an empty migration must leave no trace. */
    if (n) db->last_migration_gen = kv_database_max_generation(db);
    *out = list;
    *n_out = n;
    return 0;
}
