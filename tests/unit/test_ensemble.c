/* The model ensemble: each child's mutator is drawn by weight from one list
 * where LLMs and built-in mutators stand together, reproducibly from the
 * seed, and draws move away from a model that keeps failing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>

#include "mutate/ensemble.h"
#include "test_llm_server.h"

static void draws_follow_the_weights_across_llms_and_builtins(void **state)
{
    (void)state;
    kv_model_config m[3] = {test_model("gpt-a"), test_model("builtin:tune"),
                            test_model("builtin:crossover")};
    m[0].weight = 6;
    m[1].weight = 3;
    m[2].weight = 1;
    char *err = NULL;
    kv_ensemble *e = kv_ensemble_new(m, 3, 0, NULL, &err);
    assert_non_null(e);
    assert_true(kv_ensemble_has_llm(e));
    kv_rng rng;
    kv_rng_seed(&rng, 5);
    int count[3] = {0, 0, 0};
    for (int i = 0; i < 10000; i++) {
        kv_ensemble_choice ch;
        kv_ensemble_choose(e, &rng, &ch);
        count[ch.index]++;
        if (ch.index == 0) {
            assert_int_equal(ch.kind, KV_ENSEMBLE_LLM);
            assert_ptr_equal(ch.model, &m[0]);
        } else {
            assert_int_equal(ch.kind, KV_ENSEMBLE_BUILTIN);
            assert_ptr_equal(ch.mutator,
                             ch.index == 1 ? &kv_mutator_tune_def : &kv_mutator_crossover_def);
        }
    }
    assert_in_range(count[0], 5700, 6300);
    assert_in_range(count[1], 2700, 3300);
    assert_in_range(count[2], 800, 1200);
    kv_ensemble_free(e);
}

static void same_seed_gives_the_same_choices(void **state)
{
    (void)state;
    kv_model_config m[3] = {test_model("a"), test_model("b"), test_model("builtin:gi")};
    char *err = NULL;
    kv_ensemble *e = kv_ensemble_new(m, 3, 0, NULL, &err);
    kv_rng r1, r2;
    kv_rng_seed(&r1, 77);
    kv_rng_seed(&r2, 77);
    for (int i = 0; i < 200; i++) {
        kv_ensemble_choice a, b;
        kv_ensemble_choose(e, &r1, &a);
        kv_ensemble_choose(e, &r2, &b);
        assert_int_equal(a.index, b.index);
    }
    kv_ensemble_free(e);
}

static void zero_weight_entries_are_never_drawn(void **state)
{
    (void)state;
    kv_model_config m[2] = {test_model("a"), test_model("b")};
    m[0].weight = 0;
    char *err = NULL;
    kv_ensemble *e = kv_ensemble_new(m, 2, 0, NULL, &err);
    kv_rng rng;
    kv_rng_seed(&rng, 1);
    for (int i = 0; i < 500; i++) {
        kv_ensemble_choice ch;
        kv_ensemble_choose(e, &rng, &ch);
        assert_int_equal(ch.index, 1);
    }
    kv_ensemble_free(e);
}

static void bad_lists_are_refused_with_the_reason(void **state)
{
    (void)state;
    char *err = NULL;
    assert_null(kv_ensemble_new(NULL, 0, 0, NULL, &err));
    assert_non_null(strstr(err, "empty"));
    free(err);
    kv_model_config m[2] = {test_model("a"), test_model("builtin:mutate")};
    assert_null(kv_ensemble_new(m, 2, 0, NULL, &err));
    assert_non_null(strstr(err, "builtin:mutate"));
    free(err);
    m[1] = test_model("b");
    m[0].weight = 0;
    m[1].weight = 0;
    assert_null(kv_ensemble_new(m, 2, 0, NULL, &err));
    assert_non_null(strstr(err, "weight"));
    free(err);
    m[0].weight = -1;
    assert_null(kv_ensemble_new(m, 2, 0, NULL, &err));
    assert_non_null(strstr(err, "weight"));
    free(err);
}

/* The ensemble asks the registry: every built-in of its table is an arm,
 * whatever its name, and an unknown one is refused with the names it
 * could have been. */
static void every_registered_builtin_is_an_arm_and_no_other(void **state)
{
    (void)state;
    size_t builtins = 0;
    for (size_t i = 0; kv_mutator_at(i); i++) {
        const kv_mutator_def *def = kv_mutator_at(i);
        if (def->needs & KV_MUTATOR_NEEDS_LLM) continue;
        builtins++;
        char *name = kv_asprintf("builtin:%s", def->name);
        kv_model_config m[1] = {test_model(name)};
        char *err = NULL;
        kv_ensemble *e = kv_ensemble_new(m, 1, 0, NULL, &err);
        if (!e) fail_msg("%s refused: %s", name, err);
        assert_false(kv_ensemble_has_llm(e));
        kv_rng rng;
        kv_rng_seed(&rng, 1);
        kv_ensemble_choice ch;
        kv_ensemble_choose(e, &rng, &ch);
        assert_int_equal(ch.kind, KV_ENSEMBLE_BUILTIN);
        assert_ptr_equal(ch.mutator, def);
        kv_ensemble_free(e);
        free(name);
    }
    assert_true(builtins >= 3);

    kv_model_config m[1] = {test_model("builtin:nope")};
    char *err = NULL;
    assert_null(kv_ensemble_new(m, 1, 0, NULL, &err));
    assert_non_null(strstr(err, "builtin:nope"));
    const char *known = strstr(err, "known:");
    assert_non_null(known);
    for (size_t i = 0; kv_mutator_at(i); i++) {
        const kv_mutator_def *def = kv_mutator_at(i);
        char *name = kv_asprintf("builtin:%s", def->name);
        /* the known names are listed; the language model is no built-in */
        int listed = strstr(known, name) != NULL;
        assert_int_equal(listed, !(def->needs & KV_MUTATOR_NEEDS_LLM));
        free(name);
    }
    free(err);
}

static void a_model_failing_n_times_falls_back_to_another_until_it_recovers(void **state)
{
    (void)state;
    kv_model_config m[3] = {test_model("main"), test_model("backup"), test_model("builtin:gi")};
    m[0].weight = 1;
    m[1].weight = 0.0001; /* almost never drawn by itself */
    m[2].weight = 0;
    char *err = NULL;
    kv_ensemble *e = kv_ensemble_new(m, 3, 3, NULL, &err);
    kv_rng rng;
    kv_rng_seed(&rng, 9);
    kv_ensemble_choice ch;
    kv_ensemble_choose(e, &rng, &ch);
    assert_int_equal(ch.index, 0);
    for (int i = 0; i < 2; i++)
        kv_ensemble_report(e, 0, 0);
    assert_false(kv_ensemble_failing(e, 0));
    kv_ensemble_report(e, 0, 0);
    assert_true(kv_ensemble_failing(e, 0));
    int fell = 0, probes = 0;
    for (int i = 0; i < 30; i++) {
        kv_ensemble_choose(e, &rng, &ch);
        if (ch.index == 1 && ch.fell_back) fell++;
        if (ch.index == 0) probes++;
        assert_true(ch.index != 2); /* a builtin is not an LLM fallback */
    }
    assert_int_equal(fell, 20);   /* two of every three draws move to the backup */
    assert_int_equal(probes, 10); /* every third still probes the failing model */
    kv_ensemble_report(e, 0, 1);
    assert_false(kv_ensemble_failing(e, 0));
    kv_ensemble_choose(e, &rng, &ch);
    assert_int_equal(ch.index, 0);
    assert_false(ch.fell_back);
    kv_ensemble_free(e);
}

/* A built-in that cannot act on its parents passes its draws on: its share
 * is what it made of its draws, none when it never could, and the others
 * take the rest. */
static void an_arm_that_cannot_act_shares_only_what_it_made(void **state)
{
    (void)state;
    kv_model_config m[3] = {test_model("builtin:tune"), test_model("builtin:gi"),
                            test_model("builtin:crossover")};
    m[0].weight = 0.4;
    m[1].weight = 0.4;
    m[2].weight = 0.2;
    kv_bandit_config bandit = {0.05, 8, 1};
    for (int with_bandit = 0; with_bandit < 2; with_bandit++) {
        char *err = NULL;
        kv_ensemble *e = kv_ensemble_new(m, 3, 0, with_bandit ? &bandit : NULL, &err);
        assert_non_null(e);
        double before[3], after[3];
        kv_ensemble_shares(e, before);
        assert_true(before[0] > 0.2);
        for (int i = 0; i < 3; i++) /* tune never could: its draws went to gi */
            kv_ensemble_note_unable(e, 0);
        for (int i = 0; i < 3; i++)
            kv_ensemble_record(e, 1, KV_BANDIT_NEUTRAL, 0, 1);
        kv_ensemble_shares(e, after);
        assert_true(after[0] == 0);
        assert_true(fabs(after[0] + after[1] + after[2] - 1) < 1e-12);
        assert_true(after[1] > before[1] && after[2] > before[2] - 0.05);
        /* Half its draws acted: half its share. */
        kv_ensemble_record(e, 0, KV_BANDIT_NEUTRAL, 0, 1);
        kv_ensemble_record(e, 0, KV_BANDIT_NEUTRAL, 0, 1);
        kv_ensemble_record(e, 0, KV_BANDIT_NEUTRAL, 0, 1);
        kv_ensemble_shares(e, after);
        assert_true(after[0] > 0 && after[0] < before[0]);
        kv_ensemble_free(e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(draws_follow_the_weights_across_llms_and_builtins),
        cmocka_unit_test(same_seed_gives_the_same_choices),
        cmocka_unit_test(zero_weight_entries_are_never_drawn),
        cmocka_unit_test(bad_lists_are_refused_with_the_reason),
        cmocka_unit_test(every_registered_builtin_is_an_arm_and_no_other),
        cmocka_unit_test(a_model_failing_n_times_falls_back_to_another_until_it_recovers),
        cmocka_unit_test(an_arm_that_cannot_act_shares_only_what_it_made),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
