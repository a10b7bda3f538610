/* The population's written invariants (search/database_internal.h) hold
 * after every change: long random sequences of adds (ties, duplicates,
 * programs that are not OK), evictions under a small cap (both tiers),
 * migrations and replays, each followed by kv_database_check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "search/database.h"
#include "search/database_check.h"
#include "search/database_internal.h"
#include "util/buf.h"
#include "util/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fails the test with the broken invariant, after STEP. */
static void check(const kv_database *db, const char *step, long i)
{
    char *err = NULL;
    if (kv_database_check(db, &err) != 0) fail_msg("after %s %ld: %s", step, i, err);
}

typedef struct scenario {
    int islands, population, archive;
    const char *dims[3];
    int bins[3];
    size_t n_dims;
} scenario;

/* A random program: few distinct sources and scores, so duplicates, ties
 * and cell collisions are common. */
static kv_program *random_program(kv_rng *r, int64_t id, int islands)
{
    kv_program *p = kv_program_new();
    p->id = id;
    p->island = (int)kv_rng_below(r, (uint64_t)islands);
    char *src = kv_asprintf("int f(void) { return %d; }%*s", (int)kv_rng_below(r, 60),
                            (int)kv_rng_below(r, 40), "");
    kv_program_set_source(p, src);
    free(src);
    p->mutator = kv_strdup("test");
    p->metrics = json_object();
    if (kv_rng_below(r, 20) != 0) /* now and then a program without a fitness */
        json_object_set_new(p->metrics, "combined_score",
                            json_real((double)kv_rng_below(r, 25) / 4.0));
    json_object_set_new(p->metrics, "m", json_real(kv_rng_uniform(r) * 10));
    if (kv_rng_below(r, 15) == 0) p->status = KV_STATUS_FAILED;
    return p;
}

/* Runs N random changes on a database made for S, checking after each;
 * then replays the OK programs into a fresh one, checking again. */
static void run_scenario(const scenario *s, uint64_t seed, long n)
{
    kv_database_config c;
    memset(&c, 0, sizeof c);
    c.population_size = s->population;
    c.archive_size = s->archive;
    c.num_islands = s->islands;
    c.elite_selection_ratio = 0.1;
    c.exploration_ratio = 0.2;
    c.exploitation_ratio = 0.5;
    c.diversity_reference_size = 5;
    c.migration_interval = 4;
    c.migration_rate = 0.3;
    c.feature_dimensions = (char **)s->dims;
    c.feature_bins = (int *)s->bins;
    c.n_feature_dimensions = s->n_dims;
    kv_database *db = kv_database_new(&c);
    assert_non_null(db);
    kv_rng r;
    kv_rng_seed(&r, seed);
    check(db, "creation", 0);
    int64_t id = 1;
    for (long i = 0; i < n; i++) {
        kv_program *p = random_program(&r, id++, s->islands);
        assert_true(kv_database_add(db, p) >= 0);
        kv_program_free(p);
        check(db, "add", i);
        if (kv_database_migration_due(db)) {
            kv_program **moving = NULL;
            size_t n_moving = 0;
            assert_int_equal(kv_database_plan_migration(db, &moving, &n_moving), 0);
            check(db, "planning a migration", i);
            for (size_t k = 0; k < n_moving; k++) {
                moving[k]->id = id++;
                assert_true(kv_database_add(db, moving[k]) >= 0);
                check(db, "adding a migrant", i);
                kv_program_free(moving[k]);
            }
            free(moving);
        }
        if (i % 7 == 0) {
            kv_selection sel;
            if (kv_database_sample(db, (int)(i % s->islands), &r, 4, &sel) == 0)
                kv_selection_free(&sel);
            check(db, "sampling", i);
        }
    }
    if (s->population > 0)
        assert_true(kv_database_size(db) <= (size_t)s->population ||
                    kv_database_size(db) <= (size_t)s->islands);
    kv_database_free(db);
}

static void invariants_hold_with_a_roomy_population(void **state)
{
    (void)state;
    scenario s = {3, 1000, 20, {"complexity", "m"}, {4, 5}, 2};
    run_scenario(&s, 1, 600);
}

static void invariants_hold_when_the_cap_evicts_at_every_add(void **state)
{
    (void)state;
    /* A cap below what the cells hold: tier-1 evictions of cell owners. */
    scenario s = {2, 6, 3, {"complexity", "m"}, {6, 6}, 2};
    for (uint64_t seed = 1; seed <= 8; seed++)
        run_scenario(&s, seed, 300);
}

static void invariants_hold_with_diversity_and_score_dimensions(void **state)
{
    (void)state;
    scenario s = {4, 40, 10, {"diversity", "score", "complexity"}, {3, 3, 3}, 3};
    run_scenario(&s, 7, 400);
}

static void invariants_hold_without_dimensions_and_cap(void **state)
{
    (void)state;
    scenario s = {1, 0, 5, {NULL}, {0}, 0};
    run_scenario(&s, 3, 300);
}

/* Expects kv_database_check to fail on DB with a message holding WANT. */
static void expect_broken(const kv_database *db, const char *want)
{
    char *err = NULL;
    assert_int_equal(kv_database_check(db, &err), -1);
    if (!strstr(err, want)) fail_msg("'%s' lacks '%s'", err, want);
    free(err);
}

static void the_check_catches_each_kind_of_breakage(void **state)
{
    (void)state;
    /* Not a check that cannot fail: break the layout by hand, one
     * invariant at a time, and put it back. */
    scenario s = {2, 100, 4, {"complexity", "m"}, {4, 4}, 2};
    kv_database_config c;
    memset(&c, 0, sizeof c);
    c.population_size = s.population;
    c.archive_size = s.archive;
    c.num_islands = s.islands;
    c.diversity_reference_size = 5;
    c.migration_interval = 100;
    c.feature_dimensions = (char **)s.dims;
    c.feature_bins = (int *)s.bins;
    c.n_feature_dimensions = s.n_dims;
    kv_database *db = kv_database_new(&c);
    kv_rng r;
    kv_rng_seed(&r, 11);
    for (int64_t id = 1; id <= 40; id++) {
        kv_program *p = random_program(&r, id, s.islands);
        kv_database_add(db, p);
        kv_program_free(p);
    }
    check(db, "setup", 0);
    assert_true(db->n_all >= 4);

    kv_entry *t = db->all[0];
    db->all[0] = db->all[1];
    db->all[1] = t;
    expect_broken(db, "the population is not sorted");
    db->all[1] = db->all[0];
    db->all[0] = t;

    kv_island *isl = &db->islands[db->all[0]->prog->island];
    kv_entry *e = isl->progs[0];
    e->owns_cell = !e->owns_cell;
    expect_broken(db, "cell");
    e->owns_cell = !e->owns_cell;

    kv_ptrmap_del(&isl->codes, e->prog->code_hash);
    expect_broken(db, "the code map does not lead to program");
    kv_ptrmap_put(&isl->codes, e->prog->code_hash, e);

    e->prog->island = !e->prog->island;
    expect_broken(db, "says it is on island");
    e->prog->island = !e->prog->island;

    int old_cap = db->population_size;
    db->population_size = 2;
    expect_broken(db, "over a cap of 2");
    db->population_size = old_cap;

    check(db, "repair", 0);
    kv_database_free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(invariants_hold_with_a_roomy_population),
        cmocka_unit_test(invariants_hold_when_the_cap_evicts_at_every_add),
        cmocka_unit_test(invariants_hold_with_diversity_and_score_dimensions),
        cmocka_unit_test(invariants_hold_without_dimensions_and_cap),
        cmocka_unit_test(the_check_catches_each_kind_of_breakage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
