/* Objectives beside speed (issue 22.4): the config's specs parse (built-in
 * names with their directions, max:/min: of any metric; a name unknown or
 * twice is refused), a program's value of each comes from its metrics
 * (energy: the geometric mean of the scenarios' energy per call; error: the
 * largest share of the tolerance used), the Pareto front keeps exactly the
 * programs no other beats on every objective (programs lacking a value are
 * on none), and with objectives an island's exploitation parents are drawn
 * from its front only. */
#include "config/objectives.h"
#include "search/database.h"
#include "util/buf.h"
#include "util/rng.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static kv_objective *parse_ok(char **specs, size_t n)
{
    kv_objective *o = NULL;
    char *err = NULL;
    if (kv_objectives_parse(specs, n, &o, &err) != 0) fail_msg("%s", err);
    return o;
}

static void specs_parse_with_their_directions(void **state)
{
    (void)state;
    char *specs[] = {"speedup", "energy", "error", "score", "max:tflops", "min:decode_median_us"};
    kv_objective *o = parse_ok(specs, 6);
    int want[] = {1, 0, 0, 1, 1, 0};
    for (int i = 0; i < 6; i++) {
        assert_string_equal(o[i].name, specs[i]);
        assert_int_equal(o[i].maximise, want[i]);
    }
    assert_string_equal(o[4].metric, "tflops");
    assert_string_equal(o[5].metric, "decode_median_us");
    kv_objectives_free(o, 6);
    char *err = NULL;
    char *bad[] = {"speedup", "fastness"};
    assert_int_equal(kv_objectives_parse(bad, 2, &o, &err), -1);
    assert_non_null(strstr(err, "fastness"));
    free(err);
    char *twice[] = {"energy", "energy"};
    assert_int_equal(kv_objectives_parse(twice, 2, &o, &err), -1);
    assert_non_null(strstr(err, "twice"));
    free(err);
    char *empty[] = {"max:"};
    assert_int_equal(kv_objectives_parse(empty, 1, &o, &err), -1);
    free(err);
}

static void values_come_from_the_metrics(void **state)
{
    (void)state;
    char *specs[] = {"speedup", "energy", "error", "min:a_median_us"};
    kv_objective *o = parse_ok(specs, 4);
    json_t *m = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "combined_score", 3.0, "speedup", 2.5,
                          "a_energy_uj", 4.0, "b_energy_uj", 9.0, "a_tol_ratio", 0.25,
                          "b_tol_ratio", 0.5, "a_median_us", 12.0);
    double v;
    assert_int_equal(kv_objective_value(&o[0], m, &v), 0);
    assert_true(v == 2.5);
    assert_int_equal(kv_objective_value(&o[1], m, &v), 0);
    assert_true(fabs(v - 6.0) < 1e-12); /* sqrt(4 * 9) */
    assert_int_equal(kv_objective_value(&o[2], m, &v), 0);
    assert_true(v == 0.5);
    assert_int_equal(kv_objective_value(&o[3], m, &v), 0);
    assert_true(v == 12.0);
    /* absent: no energy measured, no speedup but a score to fall back on */
    json_t *bare = json_pack("{s:f}", "combined_score", 1.5);
    assert_int_equal(kv_objective_value(&o[1], bare, &v), -1);
    assert_int_equal(kv_objective_value(&o[0], bare, &v), 0);
    assert_true(v == 1.5);
    json_decref(bare);
    json_decref(m);
    kv_objectives_free(o, 4);
}

static void the_front_is_what_nothing_beats_on_every_objective(void **state)
{
    (void)state;
    char *specs[] = {"speedup", "energy"};
    kv_objective *o = parse_ok(specs, 2);
    /* (speedup, energy): 1 beats 0 on both; 2 trades speed for energy; 3
     * equals 2 (neither beats the other); 4 has no energy. */
    double v[] = {1.0, 10.0, 2.0, 8.0, 1.5, 5.0, 1.5, 5.0, 9.0, NAN};
    size_t front[5];
    size_t n = kv_pareto_front(o, 2, v, 5, front);
    assert_int_equal(n, 3);
    assert_int_equal(front[0], 1);
    assert_int_equal(front[1], 2);
    assert_int_equal(front[2], 3);
    assert_true(kv_objectives_dominate(o, 2, v + 2, v));
    assert_false(kv_objectives_dominate(o, 2, v + 4, v + 6));
    kv_objectives_free(o, 2);
}

static kv_program *prog(int64_t id, const char *src, double speedup, double energy)
{
    kv_program *p = kv_program_new();
    p->id = id;
    kv_program_set_source(p, src);
    p->mutator = kv_strdup("test");
    p->metrics = json_pack("{s:f,s:f,s:f}", "combined_score", speedup, "speedup", speedup,
                           "s_energy_uj", energy);
    return p;
}

static void exploitation_parents_come_from_the_islands_front(void **state)
{
    (void)state;
    char *dims[] = {"complexity"}, *objectives[] = {"speedup", "energy"};
    int bins[] = {4};
    kv_database_config c = {.population_size = 100,
                            .archive_size = 10,
                            .num_islands = 1,
                            .exploitation_ratio = 1.0,
                            .diversity_reference_size = 20,
                            .migration_interval = 50,
                            .migration_rate = 0.1,
                            .feature_dimensions = dims,
                            .feature_bins = bins,
                            .n_feature_dimensions = 1,
                            .objectives = objectives,
                            .n_objectives = 2};
    kv_database *db = kv_database_new(&c);
    /* front: 1 (fastest), 3 (cheapest); 2 and 4 are beaten by 1 */
    double sp[] = {3.0, 2.0, 1.0, 1.5}, en[] = {5.0, 6.0, 1.0, 7.0};
    for (int i = 0; i < 4; i++) {
        char src[32];
        snprintf(src, sizeof src, "program %d", i + 1);
        kv_program *p = prog(i + 1, src, sp[i], en[i]);
        assert_int_equal(kv_database_add(db, p), 1);
        kv_program_free(p);
    }
    const kv_program *front[4];
    assert_int_equal(kv_database_island_front(db, 0, front, 4), 2);
    kv_rng rng;
    kv_rng_seed(&rng, 7);
    int seen[5] = {0};
    for (int k = 0; k < 200; k++) {
        kv_selection s;
        assert_int_equal(kv_database_sample(db, 0, &rng, 0, &s), 0);
        assert_string_equal(s.strategy, "pareto");
        seen[s.parent->id]++;
        kv_selection_free(&s);
    }
    assert_true(seen[1] > 50 && seen[3] > 50);
    assert_int_equal(seen[2] + seen[4], 0);
    kv_database_free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(specs_parse_with_their_directions),
        cmocka_unit_test(values_come_from_the_metrics),
        cmocka_unit_test(the_front_is_what_nothing_beats_on_every_objective),
        cmocka_unit_test(exploitation_parents_come_from_the_islands_front),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
