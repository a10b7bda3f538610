/* The harness's output check (kv_check_output, kv_compare_runs) applies the
 * scale term of the tolerance: an element off by more than atol + rtol |ref|
 * passes when within atol + rtol |ref| + stol scale, fails just beyond it,
 * and with no scale array the rule is the plain atol + rtol one; a NaN in
 * the reference or its scale allows nothing. A big output, checked in
 * chunks on several threads, gives the serial answer: the same counts, the
 * first unwritten element, the first non-finite one as the worst. */
#include "backend/check.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* Three chunks and a part of a fourth (a chunk is 2^18 elements). */
#define BIG ((size_t)3 * 262144 + 1000)

static void a_big_output_checked_on_threads_gives_the_serial_answer(void **state)
{
    (void)state;
    float *out = malloc(BIG * sizeof(float)), *twin = malloc(BIG * sizeof(float));
    double *want = malloc(BIG * sizeof(double));
    assert_non_null(out);
    assert_non_null(twin);
    assert_non_null(want);
    for (size_t i = 0; i < BIG; i++) {
        want[i] = (double)(i % 97) / 97.0;
        out[i] = (float)want[i];
    }
    /* equal errors in chunks 0 and 2 (the same reference: i % 97 = 30):
     * the first is the worst finite one */
    out[1000] += 0.5f;
    out[2 * 262144 + 27] += 0.5f;
    const uint32_t poison_bits = 0x7fc0abcdu;
    float poison;
    memcpy(&poison, &poison_bits, sizeof poison);
    out[262144 + 7] = poison; /* unwritten, in chunk 1 */
    out[3 * 262144 + 9] = poison;
    memcpy(twin, out, BIG * sizeof(float));
    kv_check one, many;
    kv_check_output_threads(KV_F32, out, want, NULL, BIG, &poison, tol, &one, 1);
    kv_check_output_threads(KV_F32, out, want, NULL, BIG, &poison, tol, &many, 8);
    assert_int_equal(one.bad, 2);
    assert_int_equal(one.unwritten, 2);
    assert_int_equal(one.first_unwritten, 262144 + 7);
    assert_int_equal(one.worst, 1000);
    assert_memory_equal(&one, &many, sizeof one);
    /* a non-finite output (chunk 2) outranks any error, wherever it is */
    out[2 * 262144 + 100] = INFINITY;
    out[3 * 262144 + 100] = NAN;
    kv_check_output_threads(KV_F32, out, want, NULL, BIG, &poison, tol, &one, 1);
    kv_check_output_threads(KV_F32, out, want, NULL, BIG, &poison, tol, &many, 3);
    assert_int_equal(one.nonfinite, 2);
    assert_int_equal(one.worst, 2 * 262144 + 100);
    assert_memory_equal(&one, &many, sizeof one);
    /* two runs: the first difference beyond the tolerance, in a later chunk */
    twin[3 * 262144 + 500] += 1.0f;
    twin[2 * 262144 + 100] = INFINITY; /* the same in both: no difference */
    twin[3 * 262144 + 100] = NAN;
    int bitwise = 1;
    size_t first = 0;
    assert_int_equal(kv_compare_runs(KV_F32, out, twin, want, NULL, BIG, tol, &bitwise, &first), 1);
    assert_int_equal(bitwise, 0);
    assert_int_equal(first, 3 * 262144 + 500);
    free(out);
    free(twin);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(element_within_the_scale_allowance_passes_and_one_just_beyond_fails),
        cmocka_unit_test(without_a_scale_array_the_rule_is_atol_plus_rtol),
        cmocka_unit_test(two_runs_may_differ_by_the_scale_allowance_and_no_more),
        cmocka_unit_test(a_nan_scale_or_reference_allows_nothing),
        cmocka_unit_test(a_big_output_checked_on_threads_gives_the_serial_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
