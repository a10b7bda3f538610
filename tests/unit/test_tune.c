/* Tests of the tune mutator's conditions and learning: an axis is drawn only
 * where its condition holds, a malformed condition is an error naming its
 * line, and axes whose moves changed nothing on a lineage are drawn less,
 * learnt from the store alone (so a resumed run learns the same). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mutate/mutator.h"
#include "mutate/tune.h"
#include "store/store.h"
#include "store/store_tune.h"
#include "util/buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A kernel with a structure switch (MMA) and two axes that mean something
 * only under it; MMA_KW lists its condition in the second form. */
static const char *const COND_SRC = "// EVOLVE-BLOCK-START\n"
                                    "#define VEC 1 // kevolve: tune 1 2 4 8\n"
                                    "#define MMA 0 // kevolve: tune 0 1\n"
                                    "#define MMA_KW 16 // kevolve: tune 16 32 when MMA == 1\n"
                                    "#define MMA_ST 2 // kevolve: tune 2 3 when MMA\n"
                                    "// EVOLVE-BLOCK-END\n";

/* The value of parameter NAME in SRC (malloc'd), or NULL. */
static char *value_of(const char *src, const char *name)
{
    json_t *params = kv_tune_parameters(src);
    if (!params) fail_msg("annotations of\n%s\ndo not parse", src);
    char *v = NULL;
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p)
    {
        if (strcmp(json_string_value(json_object_get(p, "name")), name) == 0)
            v = strdup(json_string_value(json_object_get(p, "value")));
    }
    json_decref(params);
    return v;
}

/* 1 when the tune summary S moved axis NAME. */
static int moved(const char *s, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "%s ", name);
    for (const char *e = s + strlen("tune: "); e; e = strstr(e, "; ") ? strstr(e, "; ") + 2 : NULL)
        if (kv_starts_with(e, key)) return 1;
    return 0;
}

static void tune_draws_a_conditional_axis_only_where_its_condition_holds(void **state)
{
    (void)state;
    int kw_moves = 0, kw_with_mma = 0;
    for (uint64_t seed = 0; seed < 400; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_tune(COND_SRC, &rng, &m, &err), 0);
        char *mma = value_of(m.source, "MMA");
        /* MMA is 0 in the parent: MMA_KW and MMA_ST may move only in a child
         * that switched MMA on first (the summary lists moves in order). */
        if (moved(m.summary, "MMA_KW") || moved(m.summary, "MMA_ST")) {
            assert_string_equal(mma, "1");
            const char *on = strstr(m.summary, "MMA 0 -> 1");
            assert_non_null(on);
            const char *kw = strstr(m.summary, "MMA_KW ");
            const char *st = strstr(m.summary, "MMA_ST ");
            assert_true(!kw || kw > on);
            assert_true(!st || st > on);
            kw_moves++;
        }
        free(mma);
        kv_mutation_free(&m);
    }
    assert_true(kw_moves > 10); /* switching the structure on and tuning it in one child */

    /* With MMA on in the parent, its axes are drawn like any other. */
    char *on = strdup(COND_SRC);
    char *p = strstr(on, "#define MMA 0");
    p[strlen("#define MMA ")] = '1';
    for (uint64_t seed = 0; seed < 200; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_tune(on, &rng, &m, &err), 0);
        kw_with_mma += moved(m.summary, "MMA_KW");
        kv_mutation_free(&m);
    }
    assert_true(kw_with_mma > 40);
    free(on);
}

static void tune_condition_forms(void **state)
{
    (void)state;
    const char *src = "#define A 2 // kevolve: tune 1 2 4\n"
                      "#define B 0 // kevolve: tune 0 1\n"
                      "MODE = \"fast\" # kevolve: tune \"fast\" \"exact\"\n"
                      "#define C1 1 // kevolve: tune 1 2 when A >= 2 && !B\n"
                      "#define C2 1 // kevolve: tune 1 2 when A < 2 || B\n"
                      "#define C3 1 // kevolve: tune 1 2 when MODE == \"fast\"\n"
                      "#define C4 1 // kevolve: tune 1 2 when MODE != \"fast\"\n"
                      "#define C5 1 // kevolve: tune 1 2 when A==4||A==2&&B!=1\n"
                      "#define C6 1 /* kevolve: tune 1 2 when B > 0 */\n";
    json_t *params = kv_tune_parameters(src);
    assert_non_null(params);
    static const struct {
        const char *name;
        int active;
    } expect[] = {{"C1", 1}, {"C2", 0}, {"C3", 1}, {"C4", 0}, {"C5", 1}, {"C6", 0}};
    for (size_t k = 0; k < sizeof expect / sizeof expect[0]; k++) {
        size_t i;
        json_t *p;
        int found = 0;
        json_array_foreach(params, i, p)
        {
            if (strcmp(json_string_value(json_object_get(p, "name")), expect[k].name) != 0)
                continue;
            found = 1;
            assert_non_null(json_object_get(p, "when"));
            if (json_is_true(json_object_get(p, "active")) != expect[k].active)
                fail_msg("%s: active should be %d", expect[k].name, expect[k].active);
        }
        assert_true(found);
    }
    /* The comment's end is not part of the condition. */
    assert_string_equal(json_string_value(json_object_get(json_array_get(params, 8), "when")),
                        "B > 0");
    json_decref(params);
}

static void tune_malformed_condition_is_an_error_naming_its_line(void **state)
{
    (void)state;
    static const struct {
        const char *cond;
        const char *why;
    } bad[] = {
        {"when", "without a condition"},
        {"when NOPE", "no tune parameter named NOPE"},
        {"when A == 3", "3 is not one of A's values"},
        {"when A ==", "expected a value"},
        {"when A = 1", "expected &&, || or the end"},
        {"when A && ", "expected a parameter name"},
        {"when !A == 1", "`!` applies to a name alone"},
        {"when X", "refers to the parameter itself"},
        {"when M > 1", "not a number"},
        {"when A > big", "a number is needed"},
        {"when D", "names more than one tune parameter"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *src = kv_asprintf("#define A 1 // kevolve: tune 1 2\n"
                                "M = \"a\" # kevolve: tune \"a\" \"b\"\n"
                                "#define D 1 // kevolve: tune 1 2\n"
                                "#define D 1 // kevolve: tune 1 2\n"
                                "#define X 1 // kevolve: tune 1 2 %s\n",
                                bad[i].cond);
        kv_rng rng;
        kv_rng_seed(&rng, 1);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_tune(src, &rng, &m, &err), -1);
        if (!strstr(err, "line 5: kevolve: tune") || !strstr(err, bad[i].why))
            fail_msg("%s: message \"%s\" should name line 5 and say \"%s\"", bad[i].cond, err,
                     bad[i].why);
        free(err);
        assert_int_equal(kv_tune_check(src, &err), -1);
        assert_non_null(err);
        free(err);
        assert_null(kv_tune_parameters(src));
        free(src);
    }
}

/* ---- learning from the store ---- */

static const char *const LEARN_SRC = "// EVOLVE-BLOCK-START\n"
                                     "#define DEAD 1 // kevolve: tune 1 2 3 4\n"
                                     "#define FLAT 1 // kevolve: tune 1 2 3 4\n"
                                     "#define LIVE 1 // kevolve: tune 1 2 3 4\n"
                                     "// EVOLVE-BLOCK-END\n";

/* Stores a program and returns its id. ARTIFACT may be NULL. */
static int64_t put(kv_store *st, int64_t parent, const char *mutator, const char *summary,
                   kv_status status, double fitness, const char *artifact)
{
    kv_program *p = kv_program_new();
    kv_program_set_source(p, LEARN_SRC);
    p->parent_id = parent;
    p->mutator = strdup(mutator);
    p->change_summary = summary ? strdup(summary) : NULL;
    p->status = status;
    p->fitness = fitness;
    p->metrics = json_pack("{s:f}", "combined_score", isfinite(fitness) ? fitness : 0.0);
    if (artifact) p->artifacts = json_pack("{s:s}", "artifact_hash", artifact);
    assert_int_equal(kv_store_insert_program(st, p), 0);
    int64_t id = p->id;
    if (isfinite(fitness)) assert_int_equal(kv_store_update_placement(st, p), 0);
    kv_program_free(p);
    return id;
}

/* A lineage root -> a -> b where DEAD's moves never changed the artifact,
 * FLAT's never changed the score, and LIVE's improved it. Returns b. */
static int64_t seed_lineage(kv_store *st)
{
    int64_t root = put(st, 0, "initial", NULL, KV_STATUS_OK, 1.0, "h0");
    int64_t cur = root;
    double fit = 1.0;
    const char *art = "h0";
    static const char *const next_art[] = {"h1", "h2"};
    for (int gen = 0; gen < 2; gen++) {
        for (int k = 0; k < 3; k++) {
            put(st, cur, "tune", "tune: DEAD 1 -> 2 (line 2)", KV_STATUS_OK, fit * 1.07, art);
            put(st, cur, "tune", "tune: FLAT 1 -> 2 (line 3)", KV_STATUS_OK, fit * 1.005, "hf");
        }
        /* Moves of two axes that changed nothing charge both. */
        put(st, cur, "tune", "tune: DEAD 1 -> 3 (line 2); FLAT 1 -> 4 (line 3)", KV_STATUS_OK,
            fit * 0.99, art);
        put(st, cur, "tune", "tune: LIVE 1 -> 2 (line 4)", KV_STATUS_FAILED, NAN, NULL);
        fit *= 2;
        art = next_art[gen];
        cur = put(st, cur, "tune", "tune: LIVE 1 -> 3 (line 4)", KV_STATUS_OK, fit, art);
    }
    /* Children of other mutators and of other lineages say nothing. */
    put(st, cur, "gi", "gi: delete line 3", KV_STATUS_OK, 0.5, "hg");
    int64_t other = put(st, 0, "initial", NULL, KV_STATUS_OK, 1, "z");
    put(st, other, "tune", "tune: LIVE 1 -> 2 (line 4)", KV_STATUS_OK, 1.0, "z");
    return cur;
}

static double value(const kv_tune_weights *w, const char *name)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->axis[i].name, name) == 0) return w->axis[i].value;
    fail_msg("no axis %s", name);
    return 0;
}

static void tune_learns_which_axes_matter_from_the_lineage(void **state)
{
    (void)state;
    kv_store *st;
    char *err = NULL;
    assert_int_equal(kv_store_open(":memory:", KV_STORE_CREATE, &st, &err), 0);
    int64_t leaf = seed_lineage(st);
    kv_tune_obs *obs;
    size_t n;
    assert_int_equal(kv_store_tune_history(st, leaf, &obs, &n), 0);
    assert_int_equal(n, 18); /* 9 tune children per generation, none of the other lineage */
    kv_tune_weights w;
    assert_int_equal(kv_tune_learn(LEARN_SRC, leaf, obs, n, &w, &err), 0);
    double dead = value(&w, "DEAD"), flat = value(&w, "FLAT"), live = value(&w, "LIVE");
    assert_true(dead < 0.3);  /* the artifact never changed, though the score did (noise) */
    assert_true(flat < 0.3);  /* the score never changed */
    assert_true(live > 0.99); /* it failed once and improved once: every move mattered */
    kv_tune_weights_free(&w);
    kv_tune_obs_free(obs, n);

    /* The draw follows: LIVE is moved far more often than the others. */
    kv_program *parent = kv_store_get_program(st, leaf);
    int count[3] = {0};
    for (uint64_t seed = 0; seed < 300; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        assert_int_equal(kv_mutate_tune_lineage(st, parent, &rng, &m, &err), 0);
        count[0] += moved(m.summary, "DEAD");
        count[1] += moved(m.summary, "FLAT");
        count[2] += moved(m.summary, "LIVE");
        kv_mutation_free(&m);
    }
    /* Without history each would be moved in about 57% of the children. */
    assert_true(count[2] > 250);
    assert_true(count[0] < 140 && count[1] < 140);
    kv_program_free(parent);
    kv_store_close(st);
}

static void tune_without_history_draws_every_axis_alike(void **state)
{
    (void)state;
    kv_store *st;
    char *err = NULL;
    assert_int_equal(kv_store_open(":memory:", KV_STORE_CREATE, &st, &err), 0);
    int64_t root = put(st, 0, "initial", NULL, KV_STATUS_OK, 1.0, "h0");
    kv_program *parent = kv_store_get_program(st, root);
    for (uint64_t seed = 0; seed < 20; seed++) {
        kv_rng r1, r2;
        kv_rng_seed(&r1, seed);
        kv_rng_seed(&r2, seed);
        kv_mutation a, b;
        assert_int_equal(kv_mutate_tune_lineage(st, parent, &r1, &a, &err), 0);
        assert_int_equal(kv_mutate_tune(LEARN_SRC, &r2, &b, &err), 0);
        assert_string_equal(a.source, b.source); /* the same draw as plain tune */
        kv_mutation_free(&a);
        kv_mutation_free(&b);
    }
    kv_program_free(parent);
    kv_store_close(st);
}

static void tune_learning_survives_reopening_the_store(void **state)
{
    (void)state;
    char path[] = "/tmp/kv_test_tune_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    kv_store *st;
    char *err = NULL;
    assert_int_equal(kv_store_open(path, KV_STORE_CREATE, &st, &err), 0);
    int64_t leaf = seed_lineage(st);
    kv_program *parent = kv_store_get_program(st, leaf);
    char *first[10];
    for (uint64_t seed = 0; seed < 10; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        assert_int_equal(kv_mutate_tune_lineage(st, parent, &rng, &m, &err), 0);
        first[seed] = m.source;
        m.source = NULL;
        kv_mutation_free(&m);
    }
    kv_store_close(st);
    /* A resumed run opens the file again: the same history, the same draws. */
    assert_int_equal(kv_store_open(path, KV_STORE_READWRITE, &st, &err), 0);
    int differ = 0;
    for (uint64_t seed = 0; seed < 10; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        assert_int_equal(kv_mutate_tune_lineage(st, parent, &rng, &m, &err), 0);
        assert_string_equal(m.source, first[seed]);
        /* ... which are not the draws of a tune that learnt nothing. */
        kv_rng plain_rng;
        kv_rng_seed(&plain_rng, seed);
        kv_mutation plain;
        assert_int_equal(kv_mutate_tune(parent->source, &plain_rng, &plain, &err), 0);
        differ += strcmp(plain.source, m.source) != 0;
        kv_mutation_free(&plain);
        free(first[seed]);
        kv_mutation_free(&m);
    }
    assert_true(differ > 0);
    kv_program_free(parent);
    kv_store_close(st);
    unlink(path);
    char *wal = kv_asprintf("%s-wal", path), *shm = kv_asprintf("%s-shm", path);
    unlink(wal);
    unlink(shm);
    free(wal);
    free(shm);
}

/* Stores a program with source SRC; returns its id. */
static int64_t put_src(kv_store *st, int64_t parent, const char *src, const char *summary,
                       double fitness)
{
    kv_program *p = kv_program_new();
    kv_program_set_source(p, src);
    p->parent_id = parent;
    p->mutator = strdup(parent ? "tune" : "initial");
    p->change_summary = summary ? strdup(summary) : NULL;
    p->fitness = fitness;
    p->metrics = json_pack("{s:f}", "combined_score", fitness);
    assert_int_equal(kv_store_insert_program(st, p), 0);
    assert_int_equal(kv_store_update_placement(st, p), 0);
    int64_t id = p->id;
    kv_program_free(p);
    return id;
}

/* Children of CHILD_SRC (stored as a tune child of a root, scoring
 * CHILD_FITNESS against the root's 1.0; with EXPECT_EXISTS, with a child of
 * its own made by EXPECT already) whose summary is exactly EXPECT, out of
 * 400. */
static int count_children(const char *root_src, const char *child_src, const char *summary,
                          double child_fitness, const char *expect, int expect_exists)
{
    kv_store *st;
    char *err = NULL;
    assert_int_equal(kv_store_open(":memory:", KV_STORE_CREATE, &st, &err), 0);
    int64_t root = put_src(st, 0, root_src, NULL, 1.0);
    int64_t child = put_src(st, root, child_src, summary, child_fitness);
    if (expect_exists) put_src(st, child, child_src, expect, child_fitness);
    kv_program *parent = kv_store_get_program(st, child);
    int hits = 0;
    for (uint64_t seed = 0; seed < 400; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        assert_int_equal(kv_mutate_tune_lineage(st, parent, &rng, &m, &err), 0);
        hits += strcmp(m.summary, expect) == 0;
        kv_mutation_free(&m);
    }
    kv_program_free(parent);
    kv_store_close(st);
    return hits;
}

static void tune_repeats_a_move_that_paid_one_step_further(void **state)
{
    (void)state;
    static const char *const root = "#define T 2 // kevolve: tune 1 2 3 4 5\n"
                                    "#define U 8 // kevolve: tune 2 4 8 16\n"
                                    "#define V 0 // kevolve: tune 0 1\n";
    static const char *const up = "#define T 3 // kevolve: tune 1 2 3 4 5\n"
                                  "#define U 4 // kevolve: tune 2 4 8 16\n"
                                  "#define V 0 // kevolve: tune 0 1\n";
    const char *moved = "tune: T 2 -> 3 (line 1); U 8 -> 4 (line 2)";
    const char *again = "tune: T 3 -> 4 (line 1); U 4 -> 2 (line 2)";
    /* It paid: about half of the children take both steps again. */
    int paid = count_children(root, up, moved, 1.5, again, 0);
    assert_true(paid > 150 && paid < 260);
    /* It did not pay: the same two steps only by chance (a two-axis move of
     * these two, each to that neighbour: a few percent). */
    int unpaid = count_children(root, up, moved, 0.7, again, 0);
    /* It paid, but a child has taken those steps already: the same child
     * again would be a duplicate, so only chance repeats it. */
    int spent = count_children(root, up, moved, 1.5, again, 1);
    assert_true(spent < 40);
    assert_true(unpaid < 40);
    /* Lists that end: V went 0 -> 1 and paid, but cannot go further; T can. */
    static const char *const v_on = "#define T 3 // kevolve: tune 1 2 3 4 5\n"
                                    "#define U 8 // kevolve: tune 2 4 8 16\n"
                                    "#define V 1 // kevolve: tune 0 1\n";
    int partial = count_children(root, v_on, "tune: V 0 -> 1 (line 3); T 2 -> 3 (line 1)", 1.5,
                                 "tune: T 3 -> 4 (line 1)", 0);
    assert_true(partial > 150);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tune_draws_a_conditional_axis_only_where_its_condition_holds),
        cmocka_unit_test(tune_condition_forms),
        cmocka_unit_test(tune_malformed_condition_is_an_error_naming_its_line),
        cmocka_unit_test(tune_learns_which_axes_matter_from_the_lineage),
        cmocka_unit_test(tune_without_history_draws_every_axis_alike),
        cmocka_unit_test(tune_learning_survives_reopening_the_store),
        cmocka_unit_test(tune_repeats_a_move_that_paid_one_step_further),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
