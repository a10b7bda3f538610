/* The harness's output check (kv_check_output, kv_compare_runs) applies the
 * scale term of the tolerance: an element off by more than atol + rtol |ref|
 * passes when within atol + rtol |ref| + stol scale, fails just beyond it,
 * and with no scale array the rule is the plain atol + rtol one; a NaN in
 * the reference or its scale allows nothing. */
#include "kernel/check.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* atol + rtol |0.5| = 0.015; with scale 40, + 40/256 = 0.17125 in all. */
static const kv_tolerance tol = {.atol = 0.01, .rtol = 0.01, .stol = 1.0 / 256};
static const double ref[3] = {0.5, 0.5, 0.5};
static const double scale[3] = {40.0, 40.0, 40.0};

static void element_within_the_scale_allowance_passes_and_one_just_beyond_fails(void **state)
{
    (void)state;
    /* off by 0.014 (inside atol + rtol), 0.17 (inside only with the scale
     * term), 0.1725 (outside both) */
    float out[3] = {0.514f, 0.67f, 0.6725f};
    kv_check c;
    kv_check_output(KV_F32, out, ref, scale, 3, NULL, tol, &c);
    assert_int_equal(c.bad, 1);
    assert_int_equal(c.worst, 2);
    assert_true(fabs(c.worst_limit - 0.17125) < 1e-12);
    /* max_abs and max_rel do not depend on the scale */
    assert_true(fabs(c.max_abs - 0.1725) < 1e-6);
    assert_true(fabs(c.max_rel - 0.1725 / 0.5) < 1e-5);
    out[2] = 0.671f;
    kv_check_output(KV_F32, out, ref, scale, 3, NULL, tol, &c);
    assert_int_equal(c.bad, 0);
    /* the error against the tolerance: the worst element's error over its
     * allowance, just under 1 here */
    assert_true(fabs(c.max_ratio - 0.171 / 0.17125) < 1e-5);
}

static void without_a_scale_array_the_rule_is_atol_plus_rtol(void **state)
{
    (void)state;
    float out[3] = {0.514f, 0.67f, 0.6725f};
    kv_check c;
    kv_check_output(KV_F32, out, ref, NULL, 3, NULL, tol, &c);
    assert_int_equal(c.bad, 2);
    assert_int_equal(c.worst, 2);
    assert_true(fabs(c.worst_limit - 0.015) < 1e-12);
    out[1] = out[2] = 0.5149f;
    kv_check_output(KV_F32, out, ref, NULL, 3, NULL, tol, &c);
    assert_int_equal(c.bad, 0);
    /* a zero scale is no scale */
    static const double zero[3] = {0};
    out[2] = 0.516f;
    kv_check_output(KV_F32, out, ref, zero, 3, NULL, tol, &c);
    assert_int_equal(c.bad, 1);
}

static void two_runs_may_differ_by_the_scale_allowance_and_no_more(void **state)
{
    (void)state;
    float a[3] = {0.5f, 0.5f, 0.5f}, b[3] = {0.6f, 0.5f, 0.5f};
    int bitwise = 1;
    size_t first = 99;
    assert_int_equal(kv_compare_runs(KV_F32, a, b, ref, scale, 3, tol, &bitwise, &first), 0);
    assert_int_equal(bitwise, 0);
    assert_int_equal(kv_compare_runs(KV_F32, a, b, ref, NULL, 3, tol, &bitwise, &first), 1);
    assert_int_equal(first, 0);
    b[0] = 0.5f;
    b[2] = 0.68f;
    assert_int_equal(kv_compare_runs(KV_F32, a, b, ref, scale, 3, tol, &bitwise, &first), 1);
    assert_int_equal(first, 2);
}

static void a_nan_scale_or_reference_allows_nothing(void **state)
{
    (void)state;
    float out[3] = {0.5f, 0.5f, 0.5f};
    double nan_scale[3] = {40.0, NAN, 40.0}, nan_ref[3] = {0.5, 0.5, NAN};
    kv_check c;
    kv_check_output(KV_F32, out, ref, nan_scale, 3, NULL, tol, &c);
    assert_int_equal(c.bad, 1);
    assert_int_equal(c.worst, 1);
    kv_check_output(KV_F32, out, nan_ref, scale, 3, NULL, tol, &c);
    assert_int_equal(c.bad, 1);
    assert_int_equal(c.worst, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(element_within_the_scale_allowance_passes_and_one_just_beyond_fails),
        cmocka_unit_test(without_a_scale_array_the_rule_is_atol_plus_rtol),
        cmocka_unit_test(two_runs_may_differ_by_the_scale_allowance_and_no_more),
        cmocka_unit_test(a_nan_scale_or_reference_allows_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
