/* The judge's in-place helpers (kv_jdev gen, check, compare, count_*) as the
 * cpu backend has them, on the definitions the cuda helpers share
 * (judge_ops.h): inputs are a pure function of (distribution, seed), each
 * distribution looks as it says, a changed input is counted, and the check
 * made of merged parts gives kv_check_output's verdict on the same data
 * (counts, first unwritten, worst element, errors). */
#include "backend/backend.h"
#include "backend/check.h"
#include "backend/dtype.h"
#include "backend/host_judge_ops.h"
#include "backend/memfd_arena.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define N ((size_t)600000) /* three chunks of the host's helpers */

static kv_jdev dev;

static void arena(kv_arena *a, size_t bytes)
{
    kv_fail err = {0};
    assert_int_equal(kv_memfd_arena_new(bytes, 0xc3, a, &err), 0);
}

static void seeded_and_checked(kv_dist dist)
{
    kv_arena a, b;
    arena(&a, N * 2);
    arena(&b, N * 2);
    kv_fail err = {0};
    assert_int_equal(dev.gen(&dev, &a, 0, KV_BF16, dist, N, 42, ~0ull, &err), 0);
    assert_int_equal(dev.gen(&dev, &b, 0, KV_BF16, dist, N, 42, ~0ull, &err), 0);
    assert_memory_equal(a.host, b.host, N * 2);
    size_t n = 1;
    assert_int_equal(dev.count_changed(&dev, &a, 0, KV_BF16, dist, N, 42, ~0ull, &n, &err), 0);
    assert_int_equal(n, 0);
    /* another seed: another input */
    assert_int_equal(dev.count_changed(&dev, &a, 0, KV_BF16, dist, N, 43, ~0ull, &n, &err), 0);
    assert_true(n > N / 2);
    /* one element flipped, in the last chunk */
    a.host[2 * (N - 5)] ^= 1;
    assert_int_equal(dev.count_changed(&dev, &a, 0, KV_BF16, dist, N, 42, ~0ull, &n, &err), 0);
    assert_int_equal(n, 1);
    size_t first = 0;
    assert_int_equal(dev.count_diff(&dev, &a, 0, &b, 0, 2, N, &n, &first, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(first, N - 5);
    kv_memfd_arena_free(&a);
    kv_memfd_arena_free(&b);
}

static void inputs_are_a_function_of_the_seed_and_a_change_is_counted(void **state)
{
    (void)state;
    seeded_and_checked(KV_DIST_NORMAL);
    seeded_and_checked(KV_DIST_QUICK_NORMAL);
    seeded_and_checked(KV_DIST_QUICK_OUTLIERS);
    seeded_and_checked(KV_DIST_QUICK_SMALL_INT);
}

/* A timed block's quick draws of the correctness trials' other
 * distributions look as those do: outliers of size 30..80 in about one
 * element of 500 (element FORCED always), N(0, 1) around them; small
 * integers every one of -4..4 and nothing else. */
static void the_quick_outliers_and_small_integers_look_as_named(void **state)
{
    (void)state;
    kv_arena a;
    arena(&a, N * 4);
    kv_fail err = {0};
    const size_t forced = 12345;
    assert_int_equal(dev.gen(&dev, &a, 0, KV_F32, KV_DIST_QUICK_OUTLIERS, N, 9, forced, &err), 0);
    const float *v = (const float *)a.host;
    size_t big = 0;
    for (size_t i = 0; i < N; i++) {
        float m = fabsf(v[i]);
        assert_true(m < 3.5f || (m >= 30.0f && m <= 80.0f));
        big += m >= 30.0f;
    }
    assert_true(fabsf(v[forced]) >= 30.0f);
    assert_true(big > N / 700 && big < N / 350);
    assert_int_equal(dev.gen(&dev, &a, 0, KV_F32, KV_DIST_QUICK_SMALL_INT, N, 9, ~0ull, &err), 0);
    int seen[9] = {0};
    for (size_t i = 0; i < N; i++) {
        assert_true(v[i] == rintf(v[i]) && v[i] >= -4.0f && v[i] <= 4.0f);
        seen[(int)v[i] + 4]++;
    }
    for (int k = 0; k < 9; k++)
        assert_true(seen[k] > (int)(N / 9) * 9 / 10);
    kv_memfd_arena_free(&a);
}

/* The timed blocks' quick draw looks like N(0, 1) where timing needs it
 * to: mean 0, variance 1, bounded, with hundreds of distinct values (not a
 * handful a kernel could tabulate), and another seed is another input. */
static void the_quick_normal_has_mean_0_and_variance_1(void **state)
{
    (void)state;
    kv_arena a;
    arena(&a, N * 4);
    kv_fail err = {0};
    assert_int_equal(dev.gen(&dev, &a, 0, KV_F32, KV_DIST_QUICK_NORMAL, N, 7, ~0ull, &err), 0);
    const float *v = (const float *)a.host;
    double sum = 0, sum2 = 0;
    int seen[2048] = {0}, distinct = 0;
    for (size_t i = 0; i < N; i++) {
        assert_true(fabsf(v[i]) < 3.5f);
        sum += v[i];
        sum2 += (double)v[i] * v[i];
        int bin = (int)lrintf(v[i] / (1.7320508f / 256.0f)) + 1024;
        distinct += !seen[bin]++;
    }
    double mean = sum / N, var = sum2 / N - mean * mean;
    assert_true(fabs(mean) < 0.01);
    assert_true(fabs(var - 1.0) < 0.02);
    assert_true(distinct > 500);
    size_t changed = 0;
    assert_int_equal(
        dev.count_changed(&dev, &a, 0, KV_F32, KV_DIST_QUICK_NORMAL, N, 8, ~0ull, &changed, &err),
        0);
    assert_true(changed > N * 9 / 10);
    kv_memfd_arena_free(&a);
}

/* A timed block's outputs in one pass: poison counted in each set, never in
 * the bytes between sets, the first reported as set * count + index. */
static void poison_is_counted_over_sets_in_one_pass(void **state)
{
    (void)state;
    enum { SETS = 40, COUNT = 50000, STRIDE = COUNT * 2 + 4096 };
    kv_arena a;
    arena(&a, (size_t)SETS * STRIDE);
    kv_fail err = {0};
    const uint16_t poison = 0x7fa1;
    memset(a.host, 0, (size_t)SETS * STRIDE);
    /* the padding after set 3 holds the pattern: not an output */
    for (size_t k = 0; k < 100; k++)
        memcpy(a.host + 3 * (size_t)STRIDE + COUNT * 2 + 2 * k, &poison, 2);
    size_t n = 1, first = 0;
    assert_int_equal(
        dev.count_poison(&dev, &a, 0, KV_BF16, COUNT, SETS, STRIDE, &poison, &n, &first, &err), 0);
    assert_int_equal(n, 0);
    memcpy(a.host + 17 * (size_t)STRIDE + 2 * 777, &poison, 2);
    memcpy(a.host + 31 * (size_t)STRIDE + 2 * 5, &poison, 2);
    assert_int_equal(
        dev.count_poison(&dev, &a, 0, KV_BF16, COUNT, SETS, STRIDE, &poison, &n, &first, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(first, 17 * (size_t)COUNT + 777);
    /* sets that overlap are the harness's mistake, said so */
    assert_int_equal(
        dev.count_poison(&dev, &a, 0, KV_BF16, COUNT, SETS, COUNT, &poison, &n, &first, &err), -1);
    assert_int_equal(err.code, KV_R_HARNESS_ERROR);
    assert_non_null(err.detail);
    kv_fail_clear(&err);
    kv_memfd_arena_free(&a);
}

static void each_distribution_looks_as_it_says(void **state)
{
    (void)state;
    kv_arena a;
    arena(&a, N * 4);
    kv_fail err = {0};
    const float *v = (const float *)a.host;
    /* normal: mean near 0, variance near 1 */
    assert_int_equal(dev.gen(&dev, &a, 0, KV_F32, KV_DIST_NORMAL, N, 7, ~0ull, &err), 0);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < N; i++) {
        s += v[i];
        s2 += (double)v[i] * v[i];
    }
    assert_true(fabs(s / N) < 0.01);
    assert_true(fabs(s2 / N - 1.0) < 0.02);
    /* outliers: about one in 500, the forced one among them */
    assert_int_equal(dev.gen(&dev, &a, 0, KV_F32, KV_DIST_OUTLIERS, N, 7, 12345, &err), 0);
    size_t big = 0;
    for (size_t i = 0; i < N; i++)
        big += fabsf(v[i]) >= 30.0f;
    assert_true(fabsf(v[12345]) >= 30.0f && fabsf(v[12345]) <= 80.0f);
    assert_true(big > N / 700 && big < N / 350);
    /* small integers in [-4, 4], each of them */
    assert_int_equal(dev.gen(&dev, &a, 0, KV_F32, KV_DIST_SMALL_INT, N, 7, ~0ull, &err), 0);
    int seen[9] = {0};
    for (size_t i = 0; i < N; i++) {
        assert_true(v[i] == rintf(v[i]) && v[i] >= -4.0f && v[i] <= 4.0f);
        seen[(int)v[i] + 4] = 1;
    }
    for (int k = 0; k < 9; k++)
        assert_true(seen[k]);
    kv_memfd_arena_free(&a);
}

/* The in-place check and kv_check_output agree on OUT (F32) against WANT;
 * returns the in-place check's worst element. */
static size_t agree(kv_arena *a, const double *want, const double *scale, const void *poison,
                    kv_tolerance tol)
{
    kv_check host, here;
    kv_fail err = {0};
    kv_check_output(KV_F32, a->host, want, scale, N, poison, tol, &host);
    assert_int_equal(dev.check(&dev, a, 0, KV_F32, N, want, scale, poison, tol, &here, &err), 0);
    assert_int_equal(here.n, host.n);
    assert_int_equal(here.unwritten, host.unwritten);
    assert_int_equal(here.first_unwritten, host.first_unwritten);
    assert_int_equal(here.nonfinite, host.nonfinite);
    assert_int_equal(here.bad, host.bad);
    assert_true(here.max_abs == host.max_abs);
    assert_true(here.max_rel == host.max_rel);
    assert_true(here.max_ratio == host.max_ratio);
    assert_true(fabs(here.rel_l2 - host.rel_l2) <= 1e-12 * (1 + host.rel_l2) ||
                (isnan(here.rel_l2) && isnan(host.rel_l2)));
    return here.worst;
}

/* The canaries of an arena in one pass: intact spans count nothing, a
 * damaged byte is counted in the first span that holds it, and an empty
 * span is skipped. */
static void damaged_canaries_are_counted_with_their_span(void **state)
{
    (void)state;
    kv_arena a;
    arena(&a, 4096);
    size_t off[3] = {0, 1000, 3000}, len[3] = {64, 0, 96}, bad = 9, first = 9;
    kv_fail err = {0};
    assert_int_equal(dev.count_spans(&dev, &a, off, len, 3, 0xc3, &bad, &first, &err), 0);
    assert_int_equal(bad, 0);
    a.host[3000 + 95] = 0;
    a.host[1000] = 0; /* in the empty span: not a canary */
    assert_int_equal(dev.count_spans(&dev, &a, off, len, 3, 0xc3, &bad, &first, &err), 0);
    assert_int_equal(bad, 1);
    assert_int_equal(first, 2);
    a.host[10] = 7;
    assert_int_equal(dev.count_spans(&dev, &a, off, len, 3, 0xc3, &bad, &first, &err), 0);
    assert_int_equal(bad, 2);
    assert_int_equal(first, 0);
    /* a span past the arena is the judge's error, not a count */
    size_t past[1] = {4000}, plen[1] = {200};
    assert_int_equal(dev.count_spans(&dev, &a, past, plen, 1, 0xc3, &bad, &first, &err), -1);
    assert_int_equal(err.code, KV_R_HARNESS_ERROR);
    assert_non_null(err.detail);
    kv_fail_clear(&err);
    kv_memfd_arena_free(&a);
}

static void the_check_from_parts_gives_the_hosts_verdict(void **state)
{
    (void)state;
    const kv_tolerance tol = {.atol = 0.01, .rtol = 0.01, .stol = 1.0 / 256};
    kv_arena a;
    arena(&a, N * 4);
    double *want = malloc(N * sizeof(double)), *scale = malloc(N * sizeof(double));
    assert_non_null(want);
    assert_non_null(scale);
    float *out = (float *)a.host;
    for (size_t i = 0; i < N; i++) {
        want[i] = (double)(i % 97) / 97.0 - 0.3;
        scale[i] = (double)(i % 5);
        out[i] = (float)want[i];
    }
    (void)agree(&a, want, scale, NULL, tol);
    /* errors in two chunks, equal: the first is the worst */
    out[1000] += 0.5f;
    out[2 * 262144 + 27] += 0.5f;
    out[400000] += 0.02f; /* within the scale allowance at scale 4 */
    const uint32_t poison_bits = 0x7fc0abcdu;
    float poison;
    memcpy(&poison, &poison_bits, sizeof poison);
    out[262144 + 7] = poison;
    out[7] = poison;
    assert_int_equal(agree(&a, want, scale, &poison, tol), 1000);
    assert_int_equal(agree(&a, want, NULL, &poison, tol), 1000);
    /* non-finite outputs outrank every error, the first of them is the
     * worst; a NaN reference allows nothing (a bad element, ranked below
     * them, so that the message names a NaN the candidate wrote) */
    out[500000] = INFINITY;
    out[300000] = NAN;
    assert_int_equal(agree(&a, want, scale, &poison, tol), 300000);
    want[200] = NAN;
    assert_int_equal(agree(&a, want, scale, &poison, tol), 300000);
    /* two runs: the first difference beyond the tolerance */
    kv_arena b;
    arena(&b, N * 4);
    memcpy(b.host, a.host, N * 4);
    ((float *)b.host)[550000] += 1.0f;
    size_t differ = 0, first = 0;
    kv_fail err = {0};
    want[200] = 0.0;
    assert_int_equal(
        dev.compare(&dev, &a, 0, &b, 0, KV_F32, N, want, scale, tol, &differ, &first, &err), 0);
    assert_int_equal(differ, 1);
    assert_int_equal(first, 550000);
    free(want);
    free(scale);
    kv_memfd_arena_free(&a);
    kv_memfd_arena_free(&b);
}

int main(void)
{
    kv_host_judge_ops(&dev);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inputs_are_a_function_of_the_seed_and_a_change_is_counted),
        cmocka_unit_test(the_quick_normal_has_mean_0_and_variance_1),
        cmocka_unit_test(the_quick_outliers_and_small_integers_look_as_named),
        cmocka_unit_test(poison_is_counted_over_sets_in_one_pass),
        cmocka_unit_test(each_distribution_looks_as_it_says),
        cmocka_unit_test(the_check_from_parts_gives_the_hosts_verdict),
        cmocka_unit_test(damaged_canaries_are_counted_with_their_span),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
