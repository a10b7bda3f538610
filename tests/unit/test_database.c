/* Unit tests of the search database: islands, MAP-Elites grids, archive,
 * population cap, fitness, selection, migration and replay. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "search/database.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A configuration filled by hand (the config loader is not used here). */
typedef struct test_cfg {
    kv_database_config c;
    char *dims[4];
    int bins[4];
} test_cfg;

static void cfg_init(test_cfg *t, int islands, const char *d0, int b0, const char *d1, int b1)
{
    memset(t, 0, sizeof *t);
    t->c.population_size = 1000;
    t->c.archive_size = 100;
    t->c.num_islands = islands;
    t->c.elite_selection_ratio = 0.1;
    t->c.exploration_ratio = 0.2;
    t->c.exploitation_ratio = 0.7;
    t->c.diversity_reference_size = 20;
    t->c.migration_interval = 50;
    t->c.migration_rate = 0.1;
    size_t n = 0;
    if (d0) {
        t->dims[n] = (char *)d0;
        t->bins[n++] = b0;
    }
    if (d1) {
        t->dims[n] = (char *)d1;
        t->bins[n++] = b1;
    }
    t->c.feature_dimensions = t->dims;
    t->c.feature_bins = t->bins;
    t->c.n_feature_dimensions = n;
}

/* A program with combined_score SCORE (NAN: no combined_score) and, when M is
 * not NAN, the metric "m". */
static kv_program *prog(int64_t id, int island, const char *src, double score, double m)
{
    kv_program *p = kv_program_new();
    p->id = id;
    p->island = island;
    kv_program_set_source(p, src);
    p->mutator = kv_strdup("test");
    p->metrics = json_object();
    if (!isnan(score)) json_object_set_new(p->metrics, "combined_score", json_real(score));
    if (!isnan(m)) json_object_set_new(p->metrics, "m", json_real(m));
    return p;
}

/* Adds a program and frees the caller's copy; returns what add returned. */
static int add(kv_database *db, int64_t id, int island, const char *src, double score, double m)
{
    kv_program *p = prog(id, island, src, score, m);
    int rc = kv_database_add(db, p);
    kv_program_free(p);
    return rc;
}

static char *src_n(int i)
{
    return kv_asprintf("int f(void) { return %d * x + %d; }", i, i * 7);
}

static long feature_of(const kv_program *p, const char *dim)
{
    json_t *v = json_object_get(p->features, dim);
    assert_non_null(v);
    return (long)json_integer_value(v);
}

static void child_joins_island_its_parent_was_sampled_for(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 3, "complexity", 10, NULL, 0);
    kv_database *db = kv_database_new(&t.c);
    assert_int_equal(add(db, 1, 0, "a = 1", 0.5, NAN), 1);

    kv_rng rng;
    kv_rng_seed(&rng, 7);
    kv_selection sel;
    assert_int_equal(kv_database_sample(db, 2, &rng, 3, &sel), 0);
    assert_int_equal(sel.island, 2);
    assert_non_null(sel.parent);
    assert_int_equal(sel.parent->island, 0);
    assert_string_equal(sel.strategy, "fallback");

    kv_program *child = prog(2, sel.island, "a = 2", 0.6, NAN);
    child->parent_id = sel.parent->id;
    kv_selection_free(&sel);
    assert_int_equal(kv_database_add(db, child), 1);
    kv_program_free(child);
    assert_int_equal(kv_database_island_size(db, 2), 1);
    assert_int_equal(kv_database_island_size(db, 0), 1);
    assert_int_equal(kv_database_island_best(db, 2)->id, 2);
    assert_int_equal(kv_database_island_generation(db, 2), 1);

    /* Once island 2 has programs, its samples come from it. */
    kv_rng_seed(&rng, 8);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(kv_database_sample(db, 2, &rng, 3, &sel), 0);
        assert_int_equal(sel.parent->island, 2);
        assert_string_not_equal(sel.strategy, "fallback");
        kv_selection_free(&sel);
    }
    kv_database_free(db);
}

static void fitness_is_combined_score_else_mean_of_non_feature_metrics(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 1, "complexity", 10, "latency", 10);
    json_t *m = kv_json_loads("{\"combined_score\": 0.5, \"a\": 10}");
    assert_float_equal(kv_fitness(m, &t.c), 0.5, 1e-12);
    json_decref(m);
    m = kv_json_loads("{\"a\": 1, \"b\": 3, \"latency\": 100, \"name\": \"x\", \"ok\": true}");
    assert_float_equal(kv_fitness(m, &t.c), 2.0, 1e-12);
    json_decref(m);
    m = kv_json_loads("{\"combined_score\": \"high\", \"a\": 4}");
    assert_float_equal(kv_fitness(m, &t.c), 4.0, 1e-12);
    json_decref(m);
    m = kv_json_loads("{\"latency\": 3, \"note\": \"n\"}");
    assert_true(isnan(kv_fitness(m, &t.c)));
    json_decref(m);
    m = kv_json_loads("{}");
    assert_true(isnan(kv_fitness(m, &t.c)));
    json_decref(m);
    assert_true(isnan(kv_fitness(NULL, &t.c)));
}

static void nan_fitness_never_enters_population(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 2, "complexity", 10, "m", 10);
    kv_database *db = kv_database_new(&t.c);
    kv_rng rng;
    kv_rng_seed(&rng, 1);
    kv_selection sel;
    assert_int_equal(kv_database_sample(db, 0, &rng, 2, &sel), -1);

    /* Only a feature metric: no fitness. */
    kv_program *p = prog(1, 0, "x = 1", NAN, 3.0);
    assert_int_equal(kv_database_add(db, p), 0);
    assert_true(isnan(p->fitness));
    kv_program_free(p);
    /* No metrics at all. */
    p = prog(2, 0, "x = 2", NAN, NAN);
    json_decref(p->metrics);
    p->metrics = NULL;
    assert_int_equal(kv_database_add(db, p), 0);
    kv_program_free(p);
    /* A failed program, even with a score. */
    p = prog(3, 0, "x = 3", 0.9, NAN);
    p->status = KV_STATUS_FAILED;
    assert_int_equal(kv_database_add(db, p), 0);
    kv_program_free(p);

    assert_int_equal(kv_database_size(db), 0);
    assert_null(kv_database_best(db));
    assert_int_equal(kv_database_sample(db, 0, &rng, 2, &sel), -1);
    /* A good program afterwards is the best, and NaN never ranks above it. */
    assert_int_equal(add(db, 4, 0, "x = 4", -5.0, NAN), 1);
    assert_int_equal(add(db, 5, 0, "x = 5", NAN, NAN), 0);
    assert_int_equal(kv_database_best(db)->id, 4);
    assert_int_equal(kv_database_size(db), 1);
    kv_database_free(db);
}

static void better_program_replaces_cell_occupant_worse_does_not(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 1, "m", 1, NULL, 0); /* one cell */
    kv_database *db = kv_database_new(&t.c);
    assert_int_equal(add(db, 1, 0, "p1", 0.5, 1), 1);
    assert_int_equal(add(db, 2, 0, "p2", 0.3, 1), 1);
    json_t *g = kv_database_grid_json(db, 0);
    json_t *cells = json_object_get(g, "cells");
    assert_int_equal(json_array_size(cells), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(cells, 0), "program")), 1);
    json_decref(g);

    assert_int_equal(add(db, 3, 0, "p3", 0.9, 1), 1);
    assert_int_equal(add(db, 4, 0, "p4", 0.9, 1), 1); /* a tie keeps the incumbent */
    g = kv_database_grid_json(db, 0);
    cells = json_object_get(g, "cells");
    assert_int_equal(json_array_size(cells), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(cells, 0), "program")), 3);
    assert_float_equal(json_real_value(json_object_get(json_array_get(cells, 0), "fitness")), 0.9,
                       1e-12);
    json_decref(g);
    assert_int_equal(kv_database_grid_cells(db, 0), 1);
    /* Losers of the cell stay in the population until the cap bites. */
    assert_int_equal(kv_database_size(db), 4);
    kv_database_free(db);
}

static void bins_follow_running_min_max(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 1, "complexity", 10, NULL, 0);
    kv_database *db = kv_database_new(&t.c);
    const struct {
        const char *src;
        long bin;
    } cases[] = {
        {"0123456789", 0},           /* 10: max == min */
        {"01234567890123456789", 9}, /* 20: the max itself lands in the top bin */
        {"012345678901234", 5},      /* 15: (15-10)/(20-10)*10 */
        {"01234", 0},                /* 5: new min */
        {"012345678901", 4},         /* 12: (12-5)/(20-5)*10 = 4.67 */
        {"012345678901234567890123456789012345678901234", 9}, /* 45: new max */
        {"0123456789012345678901234", 5},                     /* 25: (25-5)/40*10 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kv_program *p = prog((int64_t)i + 1, 0, cases[i].src, (double)i, NAN);
        assert_int_equal(kv_database_add(db, p), 1);
        /* Written back to the caller's program and kept on the database's copy. */
        assert_int_equal(feature_of(p, "complexity"), cases[i].bin);
        assert_float_equal(p->fitness, (double)i, 0);
        assert_int_equal(feature_of(kv_database_get(db, p->id), "complexity"), cases[i].bin);
        kv_program_free(p);
    }
    json_t *g = kv_database_grid_json(db, 0);
    assert_float_equal(json_real_value(json_array_get(json_object_get(g, "min"), 0)), 5, 0);
    assert_float_equal(json_real_value(json_array_get(json_object_get(g, "max"), 0)), 45, 0);
    json_decref(g);
    kv_database_free(db);
}

static void feature_bins_per_dimension(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 1, "m", 5, "score", 2);
    kv_database *db = kv_database_new(&t.c);
    /* m spans 0..1 and score 0..1: 5 bins along m, 2 along score. */
    assert_int_equal(add(db, 1, 0, "a", 0.0, 0.0), 1);
    assert_int_equal(add(db, 2, 0, "b", 1.0, 1.0), 1);
    kv_program *p = prog(3, 0, "c", 0.45, 0.45);
    assert_int_equal(kv_database_add(db, p), 1);
    assert_int_equal(feature_of(p, "m"), 2);
    assert_int_equal(feature_of(p, "score"), 0);
    kv_program_free(p);
    p = prog(4, 0, "d", 0.75, 0.75);
    assert_int_equal(kv_database_add(db, p), 1);
    assert_int_equal(feature_of(p, "m"), 3);
    assert_int_equal(feature_of(p, "score"), 1);
    kv_program_free(p);

    json_t *g = kv_database_grid_json(db, 0);
    json_t *bins = json_object_get(g, "bins");
    assert_int_equal(json_integer_value(json_array_get(bins, 0)), 5);
    assert_int_equal(json_integer_value(json_array_get(bins, 1)), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(g, "dimensions"), 1)),
                        "score");
    json_t *cells = json_object_get(g, "cells");
    assert_int_equal(json_array_size(cells), 4);
    size_t i;
    json_t *cell;
    json_array_foreach(cells, i, cell)
    {
        json_t *c = json_object_get(cell, "coords");
        assert_int_equal(json_array_size(c), 2);
        assert_in_range(json_integer_value(json_array_get(c, 0)), 0, 4);
        assert_in_range(json_integer_value(json_array_get(c, 1)), 0, 1);
    }
    json_decref(g);
    kv_database_free(db);
}

static void custom_metric_feature_dimension(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 1, "latency", 4, NULL, 0);
    kv_database *db = kv_database_new(&t.c);
    const char *metrics[] = {
        "{\"latency\": 10, \"speed\": 2}", /* fitness 2: latency is a dimension, not fitness */
        "{\"latency\": 50, \"speed\": 3}",
        "{\"latency\": 30, \"speed\": 4}",
        "{\"speed\": 5}", /* no latency: bin 0 */
        "{\"latency\": \"n/a\", \"speed\": 6}",
    };
    const long want_bin[] = {0, 3, 2, 0, 0};
    const double want_fit[] = {2, 3, 4, 5, 6};
    for (int i = 0; i < 5; i++) {
        char src[32];
        snprintf(src, sizeof src, "prog %d", i);
        kv_program *p = prog(i + 1, 0, src, NAN, NAN);
        json_decref(p->metrics);
        p->metrics = kv_json_loads(metrics[i]);
        assert_int_equal(kv_database_add(db, p), 1);
        assert_float_equal(p->fitness, want_fit[i], 1e-12);
        assert_int_equal(feature_of(p, "latency"), want_bin[i]);
        kv_program_free(p);
    }
    kv_database_free(db);
}

static void diversity_measures_distance_from_island_elites(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 2, "diversity", 4, NULL, 0);
    t.c.diversity_reference_size = 1; /* distance from the island's best only */
    kv_database *db = kv_database_new(&t.c);
    const char *base = "for (int i = 0; i < n; i++) { acc += a[i] * b[i]; }\n"
                       "out[blockIdx.x] = acc;\n";
    /* The first program of an island has nothing to differ from: bin 0. */
    kv_program *p = prog(1, 0, base, 1.0, NAN);
    assert_int_equal(kv_database_add(db, p), 1);
    assert_int_equal(feature_of(p, "diversity"), 0);
    kv_program_free(p);
    /* A small edit is close to the best: the lowest diversity seen so far. */
    char *near = kv_asprintf("%s// tuned\n", base);
    p = prog(2, 0, near, 0.5, NAN);
    free(near);
    assert_int_equal(kv_database_add(db, p), 1);
    assert_int_equal(feature_of(p, "diversity"), 0);
    kv_program_free(p);
    /* Unrelated code is as far as it gets: the top bin. */
    p = prog(3, 0, "while (k --> 0) { sum = fma(x[k], y[k], sum); } return sum;", 0.4, NAN);
    assert_int_equal(kv_database_add(db, p), 1);
    assert_int_equal(feature_of(p, "diversity"), 3);
    kv_program_free(p);
    /* Another small edit of the best lands low again. */
    near = kv_asprintf("%s// tuned twice\n", base);
    p = prog(4, 0, near, 0.3, NAN);
    free(near);
    assert_int_equal(kv_database_add(db, p), 1);
    assert_true(feature_of(p, "diversity") <= 1);
    kv_program_free(p);
    /* Islands have their own references: unrelated code elsewhere is new there. */
    p = prog(5, 1, "while (k --> 0) { sum = fma(x[k], y[k], sum); } return sum;", 1.0, NAN);
    assert_int_equal(kv_database_add(db, p), 1);
    assert_int_equal(feature_of(p, "diversity"), 0);
    kv_program_free(p);
    kv_database_free(db);
}

static void population_cap_evicts_cellless_programs_first_and_never_the_best(void **state)
{
    (void)state;
    test_cfg t;
    /* One cell: after the first, newcomers either take it or own nothing. */
    cfg_init(&t, 1, "m", 1, NULL, 0);
    t.c.population_size = 3;
    t.c.archive_size = 1;
    kv_database *db = kv_database_new(&t.c);
    assert_int_equal(add(db, 1, 0, "a", 0.5, 0), 1);
    assert_int_equal(add(db, 2, 0, "b", 0.9, 0), 1); /* takes the cell; 1 loses it */
    assert_int_equal(add(db, 3, 0, "c", 0.1, 0), 1);
    assert_int_equal(add(db, 4, 0, "d", 0.1, 0), 1); /* over the cap */
    assert_int_equal(kv_database_size(db), 3);
    assert_null(kv_database_get(db, 3)); /* worst cellless; tie with 4: the older goes */
    assert_non_null(kv_database_get(db, 1));
    assert_non_null(kv_database_get(db, 2));
    assert_non_null(kv_database_get(db, 4));
    /* The evicted code may come back: it is no longer held. */
    assert_false(kv_database_island_has_code(db, 0, kv_hash_code("c")));
    kv_database_free(db);

    /* Every program owns a cell: the worst non-best goes, its cell empties. */
    cfg_init(&t, 1, "m", 10, NULL, 0);
    t.c.population_size = 2;
    t.c.archive_size = 0;
    db = kv_database_new(&t.c);
    assert_int_equal(add(db, 1, 0, "a", 0.9, 0), 1);
    assert_int_equal(add(db, 2, 0, "b", 0.1, 10), 1);
    assert_int_equal(add(db, 3, 0, "c", 0.5, 5), 1);
    assert_int_equal(kv_database_size(db), 2);
    assert_null(kv_database_get(db, 2));
    assert_int_equal(kv_database_grid_cells(db, 0), 2);
    /* A newcomer worse than all is itself the one to go; the best stays. */
    assert_int_equal(add(db, 4, 0, "d", 0.05, 7), 1);
    assert_null(kv_database_get(db, 4));
    assert_int_equal(kv_database_best(db)->id, 1);
    kv_database_free(db);

    /* Island bests are never evicted, even when they are the worst. */
    cfg_init(&t, 2, "m", 1, NULL, 0);
    t.c.population_size = 2;
    t.c.archive_size = 0;
    db = kv_database_new(&t.c);
    assert_int_equal(add(db, 1, 0, "a", 0.9, 0), 1);
    assert_int_equal(add(db, 2, 1, "b", 0.1, 0), 1);
    assert_int_equal(add(db, 3, 0, "c", 0.5, 0), 1);
    assert_int_equal(kv_database_size(db), 2);
    assert_null(kv_database_get(db, 3));
    assert_int_equal(kv_database_island_best(db, 1)->id, 2);
    kv_database_free(db);
}

static void archive_holds_best_programs(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 2, "complexity", 10, NULL, 0);
    t.c.archive_size = 3;
    kv_database *db = kv_database_new(&t.c);
    const double fit[] = {0.2, 0.8, 0.5, 0.8, 0.1, 0.6};
    for (int i = 0; i < 6; i++) {
        char *s = src_n(i);
        assert_int_equal(add(db, 10 - i, i % 2, s, fit[i], NAN), 1);
        free(s);
    }
    assert_int_equal(kv_database_archive_size(db), 3);
    /* 0.8 (id 10-3=7), 0.8 (id 9), 0.6 (id 5): ties lower id first. */
    assert_int_equal(kv_database_archive_at(db, 0)->id, 7);
    assert_int_equal(kv_database_archive_at(db, 1)->id, 9);
    assert_int_equal(kv_database_archive_at(db, 2)->id, 5);
    assert_null(kv_database_archive_at(db, 3));
    assert_int_equal(kv_database_best(db)->id, 7);
    /* A new best enters at the top and pushes the last one out. */
    assert_int_equal(add(db, 20, 0, "new best", 0.95, NAN), 1);
    assert_int_equal(kv_database_archive_at(db, 0)->id, 20);
    assert_int_equal(kv_database_archive_at(db, 2)->id, 9);
    kv_database_free(db);
}

static void duplicate_code_rejected_within_island_but_allowed_on_another(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 2, "complexity", 10, NULL, 0);
    kv_database *db = kv_database_new(&t.c);
    assert_int_equal(add(db, 1, 0, "int x = 1;\n", 0.5, NAN), 1);
    assert_int_equal(add(db, 2, 0, "int  x = 1;", 0.9, NAN), 0); /* same code up to spaces */
    assert_int_equal(add(db, 3, 1, "int x = 1;", 0.9, NAN), 1);
    assert_int_equal(kv_database_island_size(db, 0), 1);
    assert_int_equal(kv_database_island_size(db, 1), 1);
    assert_true(kv_database_island_has_code(db, 0, kv_hash_code("int x = 1;")));
    assert_false(kv_database_island_has_code(db, 0, kv_hash_code("int x = 2;")));
    kv_database_free(db);
}

/* A database of N programs on one island with fitness i (ids 1..N). */
static kv_database *ladder(test_cfg *t, int n)
{
    kv_database *db = kv_database_new(&t->c);
    for (int i = 1; i <= n; i++) {
        char *s = src_n(i);
        assert_int_equal(add(db, i, 0, s, (double)i, (double)(i % 7)), 1);
        free(s);
    }
    return db;
}

static void selection_ratios_are_respected(void **state)
{
    (void)state;
    enum { N = 20, DRAWS = 20000 };
    test_cfg t;
    kv_rng rng;
    kv_selection sel;
    int count[N + 1];

    /* Exploration only: uniform over the island. */
    cfg_init(&t, 1, "complexity", 10, "m", 7);
    t.c.exploration_ratio = 1.0;
    t.c.exploitation_ratio = 0.0;
    kv_database *db = ladder(&t, N);
    kv_rng_seed(&rng, 42);
    memset(count, 0, sizeof count);
    for (int i = 0; i < DRAWS; i++) {
        assert_int_equal(kv_database_sample(db, 0, &rng, 0, &sel), 0);
        assert_string_equal(sel.strategy, "exploration");
        count[sel.parent->id]++;
        kv_selection_free(&sel);
    }
    for (int i = 1; i <= N; i++)
        assert_in_range(count[i], 850, 1150); /* mean 1000, sd ~31 */
    kv_database_free(db);

    /* Exploitation only: archive members, and only they. */
    t.c.exploration_ratio = 0.0;
    t.c.exploitation_ratio = 1.0;
    t.c.archive_size = 5;
    db = ladder(&t, N);
    memset(count, 0, sizeof count);
    for (int i = 0; i < DRAWS; i++) {
        assert_int_equal(kv_database_sample(db, 0, &rng, 0, &sel), 0);
        assert_string_equal(sel.strategy, "exploitation");
        count[sel.parent->id]++;
        kv_selection_free(&sel);
    }
    for (int i = 1; i <= N - 5; i++)
        assert_int_equal(count[i], 0);
    for (int i = N - 4; i <= N; i++)
        assert_in_range(count[i], 3600, 4400);
    kv_database_free(db);

    /* Weighted only: the better program is drawn more often. */
    t.c.exploitation_ratio = 0.0;
    db = ladder(&t, N);
    memset(count, 0, sizeof count);
    for (int i = 0; i < DRAWS; i++) {
        assert_int_equal(kv_database_sample(db, 0, &rng, 0, &sel), 0);
        assert_string_equal(sel.strategy, "weighted");
        count[sel.parent->id]++;
        kv_selection_free(&sel);
    }
    /* Weights (i-1)/19 + 0.001: id 20 about 10.5%, id 1 almost never. */
    assert_in_range(count[N], 1800, 2400);
    assert_true(count[1] < 20);
    assert_true(count[N] > count[N / 2]);
    kv_database_free(db);

    /* Mixed: the strategies show up in their proportions. */
    t.c.exploration_ratio = 0.3;
    t.c.exploitation_ratio = 0.5;
    db = ladder(&t, N);
    int explore = 0, exploit = 0, weighted = 0;
    for (int i = 0; i < DRAWS; i++) {
        assert_int_equal(kv_database_sample(db, 0, &rng, 0, &sel), 0);
        if (strcmp(sel.strategy, "exploration") == 0)
            explore++;
        else if (strcmp(sel.strategy, "exploitation") == 0)
            exploit++;
        else if (strcmp(sel.strategy, "weighted") == 0)
            weighted++;
        kv_selection_free(&sel);
    }
    assert_in_range(explore, 5600, 6400);
    assert_in_range(exploit, 9600, 10400);
    assert_in_range(weighted, 3600, 4400);
    kv_database_free(db);

    /* Exploitation prefers archive members on the island asked for. */
    cfg_init(&t, 2, "complexity", 10, NULL, 0);
    t.c.exploration_ratio = 0.0;
    t.c.exploitation_ratio = 1.0;
    t.c.archive_size = 4;
    db = kv_database_new(&t.c);
    for (int i = 1; i <= 8; i++) {
        char *s = src_n(i);
        assert_int_equal(add(db, i, i % 2, s, (double)i, NAN), 1);
        free(s);
    }
    /* Archive: 8, 7, 6, 5; on island 1: 7 and 5. */
    for (int i = 0; i < 200; i++) {
        assert_int_equal(kv_database_sample(db, 1, &rng, 0, &sel), 0);
        assert_true(sel.parent->id == 7 || sel.parent->id == 5);
        kv_selection_free(&sel);
    }
    kv_database_free(db);
}

static void inspirations_never_include_parent_or_repeats(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 1, "complexity", 6, "m", 7);
    kv_database *db = ladder(&t, 40);
    kv_rng rng;
    kv_rng_seed(&rng, 3);
    kv_selection sel;
    for (int k = 0; k < 2000; k++) {
        assert_int_equal(kv_database_sample(db, 0, &rng, 6, &sel), 0);
        assert_int_equal(sel.n_inspirations, 6);
        for (size_t i = 0; i < sel.n_inspirations; i++) {
            assert_ptr_not_equal(sel.inspirations[i], sel.parent);
            assert_true(sel.inspirations[i]->code_hash != sel.parent->code_hash);
            for (size_t j = 0; j < i; j++) {
                assert_ptr_not_equal(sel.inspirations[i], sel.inspirations[j]);
                assert_true(sel.inspirations[i]->code_hash != sel.inspirations[j]->code_hash);
            }
        }
        /* The island's best comes first unless it is the parent. */
        if (sel.parent->id != 40) assert_int_equal(sel.inspirations[0]->id, 40);
        kv_selection_free(&sel);
    }
    kv_database_free(db);

    /* A small island gives what it has, never the parent. */
    db = ladder(&t, 3);
    for (int k = 0; k < 100; k++) {
        assert_int_equal(kv_database_sample(db, 0, &rng, 5, &sel), 0);
        assert_int_equal(sel.n_inspirations, 2);
        assert_ptr_not_equal(sel.inspirations[0], sel.parent);
        assert_ptr_not_equal(sel.inspirations[1], sel.parent);
        assert_ptr_not_equal(sel.inspirations[0], sel.inspirations[1]);
        kv_selection_free(&sel);
    }
    kv_database_free(db);
}

/* Parent and inspiration ids of COUNT samples, written into IDS (7 per sample). */
static void sample_ids(kv_database *db, uint64_t seed, int count, int island, int64_t *ids)
{
    kv_rng rng;
    kv_rng_seed(&rng, seed);
    for (int k = 0; k < count; k++) {
        kv_selection sel;
        assert_int_equal(kv_database_sample(db, island, &rng, 6, &sel), 0);
        int64_t *row = ids + 7 * k;
        memset(row, 0, 7 * sizeof *row);
        row[0] = sel.parent->id;
        for (size_t i = 0; i < sel.n_inspirations; i++)
            row[1 + i] = sel.inspirations[i]->id;
        kv_selection_free(&sel);
    }
}

static void same_seed_same_samples(void **state)
{
    (void)state;
    enum { COUNT = 300 };
    test_cfg t;
    cfg_init(&t, 1, "complexity", 6, "diversity", 5);
    kv_database *db = ladder(&t, 50);
    int64_t *a = kv_calloc(7 * COUNT, sizeof *a), *b = kv_calloc(7 * COUNT, sizeof *b);
    sample_ids(db, 99, COUNT, 0, a);
    sample_ids(db, 99, COUNT, 0, b);
    assert_memory_equal(a, b, 7 * COUNT * sizeof *a);
    sample_ids(db, 100, COUNT, 0, b);
    assert_true(memcmp(a, b, 7 * COUNT * sizeof *a) != 0);
    free(a);
    free(b);
    kv_database_free(db);
}

static void migration_due_after_interval_and_ring_moves_best(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 3, "complexity", 10, NULL, 0);
    t.c.migration_interval = 5;
    t.c.migration_rate = 0.2;
    kv_database *db = kv_database_new(&t.c);
    for (int i = 1; i <= 4; i++) {
        char *s = src_n(i);
        assert_int_equal(add(db, i, 0, s, (double)i, NAN), 1);
        free(s);
    }
    assert_false(kv_database_migration_due(db));
    assert_int_equal(add(db, 5, 0, "best of island 0", 10.0, NAN), 1);
    assert_int_equal(kv_database_island_generation(db, 0), 5);
    assert_true(kv_database_migration_due(db));
    /* Island 2 holds one program, whose code island 0 already has. */
    char *s1 = src_n(1);
    assert_int_equal(add(db, 6, 2, s1, 0.5, NAN), 1);
    free(s1);

    kv_program **mig = NULL;
    size_t n = 0;
    assert_int_equal(kv_database_plan_migration(db, &mig, &n), 0);
    assert_false(kv_database_migration_due(db));
    /* Island 0 sends its best ceil(0.2 * 5) = 1 to island 1; island 2's one
     * program would go to island 0, which has its code: skipped. */
    assert_int_equal(n, 1);
    kv_program *m = mig[0];
    assert_int_equal(m->island, 1);
    assert_int_equal(m->is_migrant, 1);
    assert_int_equal(m->migrated_from, 5);
    assert_int_equal(m->parent_id, 5);
    assert_int_equal(m->id, 0);
    assert_string_equal(m->mutator, "migration");
    assert_string_equal(m->source, "best of island 0");
    assert_float_equal(kv_program_metric(m, "combined_score"), 10.0, 0);

    m->id = 7; /* as the store would number it */
    assert_int_equal(kv_database_add(db, m), 1);
    assert_int_equal(kv_database_island_best(db, 1)->id, 7);
    assert_int_equal(kv_database_island_generation(db, 1), 0); /* migrants are not children */
    for (size_t i = 0; i < n; i++)
        kv_program_free(mig[i]);
    free(mig);

    /* Due again only after another 5 generations. */
    for (int i = 10; i < 14; i++) {
        char *s = src_n(i);
        assert_int_equal(add(db, i, 0, s, 0.1, NAN), 1);
        free(s);
        assert_false(kv_database_migration_due(db));
    }
    assert_int_equal(add(db, 14, 0, "one more", 0.1, NAN), 1);
    assert_true(kv_database_migration_due(db));

    /* A single island never migrates. */
    kv_database_free(db);
    cfg_init(&t, 1, "complexity", 10, NULL, 0);
    t.c.migration_interval = 1;
    db = kv_database_new(&t.c);
    assert_int_equal(add(db, 1, 0, "x", 1, NAN), 1);
    assert_int_equal(add(db, 2, 0, "y", 1, NAN), 1);
    assert_false(kv_database_migration_due(db));
    assert_int_equal(kv_database_plan_migration(db, &mig, &n), 0);
    assert_int_equal(n, 0);
    kv_database_free(db);
}

static void migrants_never_migrate_again(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 2, "complexity", 10, NULL, 0);
    t.c.migration_interval = 1;
    t.c.migration_rate = 0.5;
    kv_database *db = kv_database_new(&t.c);
    assert_int_equal(add(db, 1, 0, "star", 9.0, NAN), 1);
    assert_int_equal(add(db, 2, 1, "native", 1.0, NAN), 1);
    kv_program **mig;
    size_t n;
    assert_int_equal(kv_database_plan_migration(db, &mig, &n), 0);
    assert_int_equal(n, 2); /* star -> 1, native -> 0 */
    int64_t next_id = 3;
    for (size_t i = 0; i < n; i++) {
        mig[i]->id = next_id++;
        assert_int_equal(kv_database_add(db, mig[i]), 1);
        kv_program_free(mig[i]);
    }
    free(mig);
    /* Island 1's best is now the migrant star; island 0 holds star and the migrant native. */
    assert_true(kv_database_island_best(db, 1)->is_migrant);

    assert_int_equal(add(db, 10, 1, "native two", 0.5, NAN), 1);
    assert_int_equal(kv_database_plan_migration(db, &mig, &n), 0);
    /* Island 0: ceil(0.5*2) = 1 best non-migrant: star, already on island 1: skipped.
     * Island 1: ceil(0.5*3) = 2 best non-migrants: native (on island 0 already) and
     * native two. The migrant star never moves on. */
    assert_int_equal(n, 1);
    assert_string_equal(mig[0]->source, "native two");
    assert_int_equal(mig[0]->island, 0);
    assert_int_equal(mig[0]->migrated_from, 10);
    kv_program_free(mig[0]);
    free(mig);
    kv_database_free(db);
}

/* Feeds DB a reproducible mixed run: children sampled from the database,
 * migrations when due; records every added program (copies) into LOG. */
static void run_evolution(kv_database *db, kv_program ***log, size_t *n_log)
{
    kv_rng rng;
    kv_rng_seed(&rng, 2024);
    size_t cap = 1024;
    *log = kv_malloc(cap * sizeof **log);
    *n_log = 0;
    int64_t next_id = 1;
    for (int it = 0; it < 400; it++) {
        kv_program *p;
        int island = it % 3;
        if (kv_database_size(db) == 0) {
            p = prog(next_id, 0, "seed program", 0.1, 0);
        } else {
            kv_selection sel;
            assert_int_equal(kv_database_sample(db, island, &rng, 4, &sel), 0);
            char *s = kv_asprintf("%s\nstep %d %llu", sel.parent->source, it,
                                  (unsigned long long)(kv_rng_next(&rng) % 50));
            double fit = sel.parent->fitness + kv_rng_normal(&rng) * 0.1;
            p = prog(next_id, sel.island, s, fit, (double)(kv_rng_next(&rng) % 100));
            p->parent_id = sel.parent->id;
            free(s);
            kv_selection_free(&sel);
        }
        next_id++;
        if (kv_database_add(db, p) == 1) {
            if (*n_log == cap) *log = kv_realloc(*log, (cap *= 2) * sizeof **log);
            (*log)[(*n_log)++] = kv_program_clone(p);
        }
        kv_program_free(p);
        if (kv_database_migration_due(db)) {
            kv_program **mig;
            size_t n;
            assert_int_equal(kv_database_plan_migration(db, &mig, &n), 0);
            for (size_t i = 0; i < n; i++) {
                mig[i]->id = next_id++;
                if (kv_database_add(db, mig[i]) == 1) {
                    if (*n_log == cap) *log = kv_realloc(*log, (cap *= 2) * sizeof **log);
                    (*log)[(*n_log)++] = kv_program_clone(mig[i]);
                }
                kv_program_free(mig[i]);
            }
            free(mig);
        }
    }
}

static void replaying_adds_restores_identical_state(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 3, "complexity", 8, "diversity", 6);
    t.c.population_size = 60;
    t.c.archive_size = 10;
    t.c.migration_interval = 20;
    t.c.diversity_reference_size = 5;
    kv_database *live = kv_database_new(&t.c);
    kv_program **log;
    size_t n_log;
    run_evolution(live, &log, &n_log);
    assert_true(n_log > 300);
    assert_int_equal(kv_database_size(live), 60);

    kv_database *replay = kv_database_new(&t.c);
    for (size_t i = 0; i < n_log; i++) {
        /* As the store gives them back: features and fitness from the first run. */
        assert_int_equal(kv_database_add(replay, log[i]), 1);
        kv_program_free(log[i]);
    }
    free(log);

    assert_int_equal(kv_database_size(replay), kv_database_size(live));
    assert_int_equal(kv_database_best(replay)->id, kv_database_best(live)->id);
    assert_int_equal(kv_database_migration_due(replay), kv_database_migration_due(live));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kv_database_island_generation(replay, i),
                         kv_database_island_generation(live, i));
        json_t *a = kv_database_grid_json(live, i), *b = kv_database_grid_json(replay, i);
        char *sa = kv_json_dumps(a), *sb = kv_json_dumps(b);
        assert_string_equal(sa, sb);
        free(sa);
        free(sb);
        json_decref(a);
        json_decref(b);
        int64_t x[7 * 50], y[7 * 50];
        sample_ids(live, 5, 50, i, x);
        sample_ids(replay, 5, 50, i, y);
        assert_memory_equal(x, y, sizeof x);
    }
    kv_database_free(live);
    kv_database_free(replay);
}

static void failures_are_parents_only_with_the_probability_the_config_gives(void **state)
{
    (void)state;
    test_cfg t;
    cfg_init(&t, 1, "complexity", 4, NULL, 0);
    for (int with = 0; with < 2; with++) {
        t.c.failed_parent_probability = with ? 0.5 : 0;
        kv_database *db = kv_database_new(&t.c);
        for (int i = 1; i <= 5; i++) {
            char *src = src_n(i);
            assert_int_equal(add(db, i, 0, src, i, NAN), 1);
            free(src);
        }
        for (int i = 6; i <= 8; i++) {
            char *src = src_n(i);
            kv_program *p = prog(i, 0, src, NAN, NAN);
            p->status = KV_STATUS_FAILED;
            assert_int_equal(kv_database_add(db, p), 0); /* never placed */
            assert_int_equal(kv_database_add_failed(db, p), with);
            kv_program_free(p);
            free(src);
        }
        assert_int_equal(kv_database_size(db), 5);
        kv_rng rng;
        kv_rng_seed(&rng, 11);
        int failed = 0;
        for (int k = 0; k < 2000; k++) {
            kv_selection sel;
            assert_int_equal(kv_database_sample(db, 0, &rng, 3, &sel), 0);
            if (sel.parent->id >= 6) {
                failed++;
                assert_string_equal(sel.strategy, "failed");
                assert_int_equal(sel.parent->status, KV_STATUS_FAILED);
            }
            for (size_t j = 0; j < sel.n_inspirations; j++)
                assert_true(sel.inspirations[j]->id <= 5); /* inspirations are never failures */
            kv_selection_free(&sel);
        }
        if (with)
            assert_true(failed > 850 && failed < 1150);
        else
            assert_int_equal(failed, 0);
        assert_int_equal(kv_database_best(db)->id, 5);
        kv_database_free(db);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(child_joins_island_its_parent_was_sampled_for),
        cmocka_unit_test(failures_are_parents_only_with_the_probability_the_config_gives),
        cmocka_unit_test(fitness_is_combined_score_else_mean_of_non_feature_metrics),
        cmocka_unit_test(nan_fitness_never_enters_population),
        cmocka_unit_test(better_program_replaces_cell_occupant_worse_does_not),
        cmocka_unit_test(bins_follow_running_min_max),
        cmocka_unit_test(feature_bins_per_dimension),
        cmocka_unit_test(custom_metric_feature_dimension),
        cmocka_unit_test(diversity_measures_distance_from_island_elites),
        cmocka_unit_test(population_cap_evicts_cellless_programs_first_and_never_the_best),
        cmocka_unit_test(archive_holds_best_programs),
        cmocka_unit_test(duplicate_code_rejected_within_island_but_allowed_on_another),
        cmocka_unit_test(selection_ratios_are_respected),
        cmocka_unit_test(inspirations_never_include_parent_or_repeats),
        cmocka_unit_test(same_seed_same_samples),
        cmocka_unit_test(migration_due_after_interval_and_ring_moves_best),
        cmocka_unit_test(migrants_never_migrate_again),
        cmocka_unit_test(replaying_adds_restores_identical_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
