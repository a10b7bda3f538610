/* The mutator registry: one table names every mutator; an arm of
 * llm.models finds its mutator by name ("builtin:NAME", else the language
 * model); the built-ins answer at once with a child or with "nothing to
 * change here" and its reason. */
#include "mutate/registry.h"
#include "util/buf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char tiny[] = "# EVOLVE-BLOCK-START\n"
                           "A = 1  # kevolve: tune 1 2 3 4\n"
                           "B = 2  # kevolve: tune 1 2 3 4\n"
                           "# EVOLVE-BLOCK-END\n"
                           "print(A, B)\n";

static void arms_find_their_mutator_by_name(void **state)
{
    (void)state;
    assert_ptr_equal(kv_mutator_for_arm("builtin:tune"), &kv_mutator_tune_def);
    assert_ptr_equal(kv_mutator_for_arm("builtin:gi"), &kv_mutator_gi_def);
    assert_ptr_equal(kv_mutator_for_arm("builtin:crossover"), &kv_mutator_crossover_def);
    assert_ptr_equal(kv_mutator_for_arm("gpt-4o-mini"), &kv_mutator_llm_def);
    assert_null(kv_mutator_for_arm("builtin:llm")); /* the LLM mutator is no built-in */
    assert_null(kv_mutator_for_arm("builtin:nope"));
    size_t n = 0;
    for (const kv_mutator_def *d; (d = kv_mutator_at(n)); n++) {
        assert_non_null(d->name);
        assert_non_null(d->start);
        assert_true((d->poll == NULL) == (d->pending == NULL)); /* async ones have both */
    }
    assert_int_equal(n, 4);
}

/* A built-in answers to its bare name as well; "builtin:" alone names none,
 * and "llm" is a model's name, not the built-in of that name. */
static void builtin_names_resolve_with_or_without_prefix(void **state)
{
    (void)state;
    assert_ptr_equal(kv_mutator_for_arm("tune"), &kv_mutator_tune_def);
    assert_ptr_equal(kv_mutator_for_arm("gi"), &kv_mutator_gi_def);
    assert_ptr_equal(kv_mutator_for_arm("crossover"), &kv_mutator_crossover_def);
    assert_ptr_equal(kv_mutator_for_arm("llm"), &kv_mutator_llm_def);
    assert_null(kv_mutator_for_arm("builtin:"));
}

/* With no model configured, the mix is the table's built-ins with their
 * default weights: tune 40%, gi 40%, crossover 20%, in that order (the
 * order of the draws of every seeded run without models). */
static void the_default_mix_comes_from_the_table(void **state)
{
    (void)state;
    size_t n = 0;
    kv_model_config *arms = kv_mutator_default_arms(&n);
    assert_int_equal(n, 3);
    const char *names[3] = {"builtin:tune", "builtin:gi", "builtin:crossover"};
    const double weights[3] = {0.4, 0.4, 0.2};
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(arms[i].name, names[i]);
        assert_true(arms[i].weight == weights[i]);
        free(arms[i].name);
    }
    free(arms);
    char *known = kv_mutator_builtin_names();
    assert_string_equal(known, "builtin:tune, builtin:gi, builtin:crossover");
    free(known);
}

static kv_mutators *builtins(const kv_model_config *m, size_t n)
{
    kv_mutator_env env = {0};
    char *err = NULL;
    kv_mutators *ms = kv_mutators_new(&env, m, n, &err);
    if (!ms) fail_msg("kv_mutators_new: %s", err);
    return ms;
}

static void builtins_answer_at_once_with_a_child_or_a_reason(void **state)
{
    (void)state;
    kv_model_config m[3];
    const char *names[3] = {"builtin:tune", "builtin:gi", "builtin:crossover"};
    for (int i = 0; i < 3; i++) {
        kv_config_model_init(&m[i]);
        m[i].name = (char *)names[i];
    }
    kv_mutators *ms = builtins(m, 3);
    kv_program *parent = kv_program_new();
    kv_program_set_source(parent, tiny);
    parent->id = 7;
    kv_rng rng;
    kv_rng_seed(&rng, 4);
    kv_mutation_request req = {
        .ticket = 3, .arm = 0, .model = &m[0], .parent = parent, .rng = &rng};
    kv_mutation_result r;
    char *err = NULL;
    assert_int_equal(kv_mutators_start(ms, &req, &r, &err), 0);
    assert_int_equal(r.status, KV_MUTATION_CHILD);
    assert_int_equal(r.ticket, 3);
    assert_string_equal(r.mutator, "tune");
    assert_true(kv_starts_with(r.summary, "tune: "));
    assert_string_not_equal(r.source, tiny);
    kv_mutation_result_clear(&r);

    /* crossover with no second parent: nothing to change, and why. */
    req.arm = 2;
    req.model = &m[2];
    assert_int_equal(kv_mutators_start(ms, &req, &r, &err), 0);
    assert_int_equal(r.status, KV_MUTATION_UNCHANGED);
    assert_string_equal(r.reason_code, "no_change");
    assert_non_null(strstr(r.reason, "second parent"));
    kv_mutation_result_clear(&r);
    assert_int_equal(kv_mutators_pending(ms), 0);
    kv_mutators_free(ms);
    kv_program_free(parent);
}

/* builtin:tune restarts now and then (KV_TUNE_RESTART_PROBABILITY): a
 * random point of the space instead of a move from the parent. */
static void builtin_tune_restarts_now_and_then(void **state)
{
    (void)state;
    kv_model_config m;
    kv_config_model_init(&m);
    m.name = "builtin:tune";
    kv_mutators *ms = builtins(&m, 1);
    kv_program *parent = kv_program_new();
    kv_program_set_source(parent, tiny);
    parent->id = 7;
    int restarts = 0, total = 400;
    for (uint64_t seed = 0; seed < (uint64_t)total; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation_request req = {.arm = 0, .model = &m, .parent = parent, .rng = &rng};
        kv_mutation_result r;
        char *err = NULL;
        assert_int_equal(kv_mutators_start(ms, &req, &r, &err), 0);
        assert_int_equal(r.status, KV_MUTATION_CHILD);
        restarts += kv_starts_with(r.summary, "tune restart: ");
        kv_mutation_result_clear(&r);
    }
    /* 15% of draws, less the 1 in 16 that land on the parent's point */
    assert_true(restarts > total * 8 / 100 && restarts < total * 22 / 100);
    kv_mutators_free(ms);
    kv_program_free(parent);
}

static void a_language_model_arm_needs_a_client(void **state)
{
    (void)state;
    kv_model_config m[2];
    kv_config_model_init(&m[0]);
    kv_config_model_init(&m[1]);
    m[0].name = "builtin:gi";
    m[1].name = "some-model";
    kv_mutator_env env = {0};
    char *err = NULL;
    assert_null(kv_mutators_new(&env, m, 2, &err));
    assert_non_null(strstr(err, "some-model"));
    free(err);
    m[1].weight = 0; /* an arm of weight 0 is never drawn: nothing to set up */
    kv_mutators *ms = kv_mutators_new(&env, m, 2, &err);
    assert_non_null(ms);
    assert_null(kv_mutators_def(ms, 1));
    assert_ptr_equal(kv_mutators_def(ms, 0), &kv_mutator_gi_def);
    kv_mutators_free(ms);
    m[1].name = "builtin:mystery";
    m[1].weight = 1;
    assert_null(kv_mutators_new(&env, m, 2, &err));
    assert_non_null(strstr(err, "builtin:mystery"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arms_find_their_mutator_by_name),
        cmocka_unit_test(builtin_names_resolve_with_or_without_prefix),
        cmocka_unit_test(the_default_mix_comes_from_the_table),
        cmocka_unit_test(builtins_answer_at_once_with_a_child_or_a_reason),
        cmocka_unit_test(builtin_tune_restarts_now_and_then),
        cmocka_unit_test(a_language_model_arm_needs_a_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
