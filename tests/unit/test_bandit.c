/* The mutators' bandit: before any result it follows the configured
 * weights; it moves the draws to the arm whose children beat their parents
 * by more per second; no arm of weight > 0 starves; a restored state and
 * seed give the same choices (resume, reproducibility). */
#include "mutate/bandit.h"
#include "mutate/ensemble.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define DRAWS 20000

/* Shares of DRAWS draws from B with RNG, into OUT[0..n). */
static void draw_shares(kv_bandit *b, kv_rng *rng, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = 0;
    for (int k = 0; k < DRAWS; k++)
        out[kv_bandit_choose(b, rng, NULL)] += 1.0 / DRAWS;
}

static void before_any_result_the_draws_follow_the_weights_above_the_floor(void **state)
{
    (void)state;
    double w[3] = {6, 3, 1};
    kv_bandit_config cfg = {.min_share = 0.05, .prior_results = 8, .cost_floor_s = 1};
    kv_bandit *b = kv_bandit_new(w, 3, &cfg);
    kv_rng rng;
    kv_rng_seed(&rng, 1);
    double got[3];
    draw_shares(b, &rng, 3, got);
    /* 15% uniform floor, the rest by weight. */
    for (int i = 0; i < 3; i++)
        assert_true(fabs(got[i] - (0.05 + 0.85 * w[i] / 10)) < 0.015);
    kv_bandit_free(b);
}

static void the_arm_whose_children_improve_takes_most_draws_and_no_arm_starves(void **state)
{
    (void)state;
    double w[3] = {1, 1, 1};
    kv_bandit *b = kv_bandit_new(w, 3, NULL);
    for (int k = 0; k < 30; k++) {
        kv_bandit_record(b, 0, k % 2 ? KV_BANDIT_SUCCESS : KV_BANDIT_NEUTRAL, 2.0, 0.5);
        kv_bandit_record(b, 1, KV_BANDIT_FAILURE, 0, 3.0);
        kv_bandit_record(b, 2, KV_BANDIT_NEUTRAL, 0, 1.0);
    }
    kv_rng rng;
    kv_rng_seed(&rng, 2);
    double got[3];
    draw_shares(b, &rng, 3, got);
    assert_true(got[0] > 0.75);
    assert_true(got[1] >= 0.045); /* the floor: 0.05 each */
    assert_true(got[2] >= 0.045);
    double est[3];
    kv_bandit_shares(b, est);
    for (int i = 0; i < 3; i++)
        assert_true(fabs(est[i] - got[i]) < 0.03);
    assert_true(fabs(est[0] + est[1] + est[2] - 1) < 1e-9);
    kv_bandit_stats st;
    kv_bandit_get(b, 0, &st);
    assert_int_equal(st.draws, 30);
    assert_int_equal(st.successes, 15);
    assert_true(fabs(st.reward_sum - 15 * 2.0) < 1e-9); /* 2.0 gain over the 1 s cost floor */
    kv_bandit_get(b, 1, &st);
    assert_int_equal(st.failures, 30);
    kv_bandit_free(b);
}

static void reward_is_the_gain_per_second_with_a_floor_on_the_cost(void **state)
{
    (void)state;
    double w[1] = {1};
    kv_bandit_config cfg = {.min_share = 0.05, .prior_results = 8, .cost_floor_s = 2};
    kv_bandit *b = kv_bandit_new(w, 1, &cfg);
    assert_true(kv_bandit_reward(b, 3.0, 6.0) == 0.5);
    assert_true(kv_bandit_reward(b, 3.0, 0.1) == 1.5); /* costs at least 2 s */
    assert_true(kv_bandit_reward(b, -1.0, 1.0) == 0);  /* worse than its parent: nothing */
    assert_true(kv_bandit_reward(b, NAN, 1.0) == 0);
    kv_bandit_free(b);
}

static void at_equal_gain_the_cheaper_arm_wins(void **state)
{
    (void)state;
    double w[2] = {1, 1};
    kv_bandit *b = kv_bandit_new(w, 2, NULL);
    for (int k = 0; k < 40; k++) {
        kv_bandit_record(b, 0, KV_BANDIT_SUCCESS, 1.0, 2.0);  /* 0.5 per second */
        kv_bandit_record(b, 1, KV_BANDIT_SUCCESS, 1.0, 20.0); /* 0.05 per second */
    }
    double est[2];
    kv_bandit_shares(b, est);
    assert_true(est[0] > 0.8);
    kv_bandit_free(b);
}

static void a_restored_state_and_seed_give_the_same_choices(void **state)
{
    (void)state;
    double w[3] = {0.4, 0.4, 0.2};
    kv_bandit *a = kv_bandit_new(w, 3, NULL);
    for (int k = 0; k < 12; k++)
        kv_bandit_record(a, (size_t)k % 3, k % 4 ? KV_BANDIT_NEUTRAL : KV_BANDIT_SUCCESS, 1.5, 0.2);
    kv_bandit *b = kv_bandit_new(w, 3, NULL);
    for (size_t i = 0; i < 3; i++) {
        kv_bandit_stats st;
        kv_bandit_get(a, i, &st);
        kv_bandit_set(b, i, &st);
    }
    kv_rng ra, rb;
    kv_rng_seed(&ra, 99);
    kv_rng_seed(&rb, 99);
    for (int k = 0; k < 500; k++)
        assert_int_equal(kv_bandit_choose(a, &ra, NULL), kv_bandit_choose(b, &rb, NULL));
    kv_bandit_free(a);
    kv_bandit_free(b);
}

static void zero_weight_arms_are_never_drawn_and_usable_is_honoured(void **state)
{
    (void)state;
    double w[3] = {0, 1, 1};
    kv_bandit *b = kv_bandit_new(w, 3, NULL);
    kv_rng rng;
    kv_rng_seed(&rng, 3);
    int usable[3] = {1, 0, 1};
    for (int k = 0; k < 2000; k++) {
        assert_int_not_equal(kv_bandit_choose(b, &rng, NULL), 0);
        assert_int_equal(kv_bandit_choose(b, &rng, usable), 2);
    }
    kv_bandit_free(b);
}

static void the_ensemble_learns_and_restores_by_arm_name(void **state)
{
    (void)state;
    kv_model_config m[2];
    kv_config_model_init(&m[0]);
    kv_config_model_init(&m[1]);
    m[0].name = "builtin:tune";
    m[1].name = "builtin:gi";
    kv_bandit_config cfg = {.min_share = 0.05, .prior_results = 8, .cost_floor_s = 1};
    char *err = NULL;
    kv_ensemble *e = kv_ensemble_new(m, 2, 0, &cfg, &err);
    assert_non_null(e);
    assert_string_equal(kv_ensemble_arm(e, 1), "builtin:gi");
    assert_int_equal(kv_ensemble_find(e, "builtin:tune"), 0);
    assert_int_equal(kv_ensemble_find(e, "gpt-x"), -1);
    for (int k = 0; k < 40; k++) {
        kv_ensemble_record(e, 0, KV_BANDIT_SUCCESS, 1, 1);
        kv_ensemble_record(e, 1, KV_BANDIT_FAILURE, 0, 1);
    }
    double shares[2];
    kv_ensemble_shares(e, shares);
    assert_true(shares[0] > 0.85);
    assert_true(shares[1] >= 0.04);
    kv_ensemble_free(e);
    /* Without a bandit: the fixed weights, still counted. */
    e = kv_ensemble_new(m, 2, 0, NULL, &err);
    kv_ensemble_record(e, 1, KV_BANDIT_FAILURE, 0, 1);
    kv_bandit_stats st;
    kv_ensemble_stats(e, 1, &st);
    assert_int_equal(st.failures, 1);
    kv_ensemble_shares(e, shares);
    assert_true(shares[0] == 0.5 && shares[1] == 0.5);
    kv_ensemble_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(before_any_result_the_draws_follow_the_weights_above_the_floor),
        cmocka_unit_test(the_arm_whose_children_improve_takes_most_draws_and_no_arm_starves),
        cmocka_unit_test(reward_is_the_gain_per_second_with_a_floor_on_the_cost),
        cmocka_unit_test(at_equal_gain_the_cheaper_arm_wins),
        cmocka_unit_test(a_restored_state_and_seed_give_the_same_choices),
        cmocka_unit_test(zero_weight_arms_are_never_drawn_and_usable_is_honoured),
        cmocka_unit_test(the_ensemble_learns_and_restores_by_arm_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
