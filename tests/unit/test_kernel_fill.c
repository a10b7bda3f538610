/* The kernel harness's random inputs (kv_fill_random): the same seed gives
 * the same tensor whatever the number of threads that draw it, each
 * distribution keeps its meaning (normal, outliers with a forced one, small
 * integers), and the doubles handed to the reference are exactly the values
 * the uploaded image holds. */
#include "backend/check.h"
#include "backend/dtype.h"
#include "backend/judge_ops.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A fill of N elements: image and values. */
typedef struct filled {
    void *img;
    double *val;
} filled;

static filled fill(kv_dtype dt, kv_dist d, uint64_t seed, size_t n, int threads, kv_rng *after)
{
    filled f = {malloc(n * kv_dtype_size(dt) + 1), malloc(n * sizeof(double) + 1)};
    assert_non_null(f.img);
    assert_non_null(f.val);
    kv_rng rng;
    kv_rng_seed(&rng, seed);
    if (threads < 0)
        kv_fill_random(dt, d, &rng, n, f.img, f.val);
    else
        kv_fill_random_threads(dt, d, &rng, n, f.img, f.val, threads);
    if (after) *after = rng;
    return f;
}

static void filled_free(filled *f)
{
    free(f->img);
    free(f->val);
}

static void fill_is_identical_for_1_2_and_7_threads(void **state)
{
    (void)state;
    /* Seven chunks and a part: every one of seven threads gets work. */
    size_t n = 7 * KV_FILL_CHUNK + 4321;
    kv_dtype dts[] = {KV_BF16, KV_F32};
    for (int t = 0; t < 2; t++)
        for (int d = 0; d < KV_DIST_COUNT; d++) {
            size_t bytes = n * kv_dtype_size(dts[t]);
            kv_rng r1, r;
            filled one = fill(dts[t], (kv_dist)d, 99 + (uint64_t)d, n, 1, &r1);
            /* chunks come from different generators */
            assert_true(memcmp(one.img, (char *)one.img + KV_FILL_CHUNK * kv_dtype_size(dts[t]),
                               KV_FILL_CHUNK * kv_dtype_size(dts[t])) != 0);
            int counts[] = {2, 7, -1}; /* -1: kv_fill_random's own choice */
            for (int k = 0; k < 3; k++) {
                filled other = fill(dts[t], (kv_dist)d, 99 + (uint64_t)d, n, counts[k], &r);
                assert_memory_equal(one.img, other.img, bytes);
                assert_memory_equal(one.val, other.val, n * sizeof(double));
                /* the caller's generator moved by the same draws */
                assert_memory_equal(&r1.s, &r.s, sizeof r.s);
                filled_free(&other);
            }
            filled_free(&one);
        }
}

static void outlier_fill_always_holds_an_outlier(void **state)
{
    (void)state;
    /* 64 elements hold no natural outlier (1 in 500) 88% of the time: the
     * forced one must be there in every fill. */
    kv_dtype dts[] = {KV_BF16, KV_F32, KV_F16};
    for (int t = 0; t < 3; t++)
        for (uint64_t seed = 1; seed <= 200; seed++) {
            filled f = fill(dts[t], KV_DIST_OUTLIERS, seed, 64, 1, NULL);
            int outliers = 0;
            for (size_t i = 0; i < 64; i++)
                outliers += fabs(f.val[i]) >= 30.0;
            assert_true(outliers >= 1);
            filled_free(&f);
        }
}

static void outliers_are_one_in_500_and_of_size_30_to_80(void **state)
{
    (void)state;
    size_t n = 2 * KV_FILL_CHUNK + 17, outliers = 0;
    filled f = fill(KV_F32, KV_DIST_OUTLIERS, 5, n, 2, NULL);
    for (size_t i = 0; i < n; i++) {
        double a = fabs(f.val[i]);
        if (a < 30.0) continue;
        assert_true(a <= 80.0);
        outliers++;
    }
    /* expected n / 500 = 4194, standard deviation 65 */
    assert_true(outliers > 3900 && outliers < 4500);
    filled_free(&f);
}

static void normal_and_small_integer_fills_keep_their_distribution(void **state)
{
    (void)state;
    size_t n = KV_FILL_CHUNK + 999;
    filled f = fill(KV_BF16, KV_DIST_NORMAL, 8, n, 2, NULL);
    double sum = 0, sum2 = 0;
    for (size_t i = 0; i < n; i++) {
        sum += f.val[i];
        sum2 += f.val[i] * f.val[i];
    }
    double mean = sum / (double)n, var = sum2 / (double)n - mean * mean;
    assert_true(fabs(mean) < 0.01);
    assert_true(fabs(var - 1) < 0.02);
    filled_free(&f);

    f = fill(KV_F32, KV_DIST_SMALL_INT, 8, n, 2, NULL);
    size_t seen[9] = {0};
    for (size_t i = 0; i < n; i++) {
        double v = f.val[i];
        assert_true(v == floor(v) && v >= -4 && v <= 4);
        seen[(int)v + 4]++;
    }
    for (int k = 0; k < 9; k++) /* each about n / 9 */
        assert_true(seen[k] > n / 10 && seen[k] < n / 8);
    filled_free(&f);
}

static void values_are_what_the_image_holds(void **state)
{
    (void)state;
    size_t n = KV_FILL_CHUNK + 1000; /* across a chunk boundary */
    kv_dtype dts[] = {KV_F32, KV_F16, KV_BF16, KV_I32};
    for (int t = 0; t < 4; t++)
        for (int d = 0; d < KV_DIST_COUNT; d++) {
            filled f = fill(dts[t], (kv_dist)d, 3, n, 2, NULL);
            size_t rounded = 0;
            for (size_t i = 0; i < n; i++) {
                double v = kv_dtype_load(dts[t], f.img, i);
                assert_true(v == f.val[i]);
                rounded += fabs(v) > 4;
            }
            /* i32: normal values are scaled by 8 before rounding, so most exceed 4 */
            if (dts[t] == KV_I32 && d != KV_DIST_SMALL_INT) assert_true(rounded > n / 2);
            /* without values the image is the same */
            kv_rng rng;
            kv_rng_seed(&rng, 3);
            void *img = malloc(n * kv_dtype_size(dts[t]));
            assert_non_null(img);
            kv_fill_random_threads(dts[t], (kv_dist)d, &rng, n, img, NULL, 2);
            assert_memory_equal(img, f.img, n * kv_dtype_size(dts[t]));
            free(img);
            filled_free(&f);
        }
}

/* An index tensor's draws (kv_tensor_spec.index_of), on the host and as
 * the device helpers draw them: every value a row of the dimension, every
 * row reached (so positions are not contiguous), values as the image. */
static void index_draws_cover_their_range_and_stay_inside_it(void **state)
{
    (void)state;
    enum { N = 4096, BOUND = 37 };
    int32_t img[N];
    double vals[N];
    int seen[BOUND] = {0}, seen_dev[BOUND] = {0};
    kv_rng r;
    kv_rng_seed(&r, 11);
    kv_fill_index(&r, N, BOUND, img, vals);
    for (int i = 0; i < N; i++) {
        assert_true(img[i] >= 0 && img[i] < BOUND);
        assert_true(vals[i] == img[i]);
        seen[img[i]] = 1;
        uint32_t d = kvj_index_at(0x1234u, BOUND, (uint64_t)i);
        assert_true(d < BOUND);
        seen_dev[d] = 1;
    }
    for (int b = 0; b < BOUND; b++)
        assert_true(seen[b] && seen_dev[b]);
    /* a bound of one: every index is 0 */
    kv_fill_index(&r, 8, 1, img, NULL);
    for (int i = 0; i < 8; i++)
        assert_int_equal(img[i], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fill_is_identical_for_1_2_and_7_threads),
        cmocka_unit_test(outlier_fill_always_holds_an_outlier),
        cmocka_unit_test(outliers_are_one_in_500_and_of_size_30_to_80),
        cmocka_unit_test(normal_and_small_integer_fills_keep_their_distribution),
        cmocka_unit_test(values_are_what_the_image_holds),
        cmocka_unit_test(index_draws_cover_their_range_and_stay_inside_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
