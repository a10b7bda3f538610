/* Unit tests of the search module's building blocks: the MinHash diversity
 * signature and the pointer map behind the grids and code-hash sets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "search/minhash.h"
#include "search/ptrmap.h"
#include "util/buf.h"
#include "util/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void minhash_estimates_jaccard_of_token_trigrams(void **state)
{
    (void)state;
    /* Two texts of 400 distinct tokens sharing the first 300: their 3-gram
     * sets have 398 shingles each and share 298, Jaccard 298/498 ~ 0.60. */
    kv_buf a = KV_BUF_INIT, b = KV_BUF_INIT;
    for (int i = 0; i < 400; i++) {
        kv_buf_printf(&a, "t%d ", i);
        kv_buf_printf(&b, "%s%d ", i < 300 ? "t" : "u", i);
    }
    kv_minhash sa, sb;
    kv_minhash_compute(a.data, &sa);
    kv_minhash_compute(b.data, &sb);
    assert_int_equal(sa.n, KV_MINHASH_K);
    double j = kv_minhash_jaccard(&sa, &sb);
    assert_true(j > 0.42 && j < 0.78); /* k = 64: sd about 0.06 */
    assert_float_equal(kv_minhash_jaccard(&sa, &sa), 1.0, 0);
    for (unsigned i = 1; i < sa.n; i++)
        assert_true(sa.h[i - 1] < sa.h[i]);
    kv_buf_free(&a);
    kv_buf_free(&b);
}

static void minhash_ignores_whitespace_and_handles_tiny_programs(void **state)
{
    (void)state;
    kv_minhash x, y, e1, e2;
    kv_minhash_compute("a=b+c;", &x);
    kv_minhash_compute("  a = b\n+ c ;\n", &y);
    assert_float_equal(kv_minhash_jaccard(&x, &y), 1.0, 0);
    kv_minhash_compute("ab", &x);
    kv_minhash_compute("cd", &y);
    assert_int_equal(x.n, 1);
    assert_float_equal(kv_minhash_jaccard(&x, &y), 0.0, 0);
    kv_minhash_compute("", &e1);
    kv_minhash_compute(NULL, &e2);
    assert_int_equal(e1.n, 0);
    assert_float_equal(kv_minhash_jaccard(&e1, &e2), 1.0, 0);
    assert_float_equal(kv_minhash_jaccard(&e1, &x), 0.0, 0);
}

static void ptrmap_matches_a_reference_under_churn(void **state)
{
    (void)state;
    enum { KEYS = 512 };
    static int vals[KEYS];
    void *ref[KEYS] = {0};
    kv_ptrmap m = KV_PTRMAP_INIT;
    kv_rng rng;
    kv_rng_seed(&rng, 11);
    size_t live = 0;
    for (int step = 0; step < 50000; step++) {
        /* Keys share low bits so probe runs collide and wrap. */
        uint64_t k = kv_rng_below(&rng, KEYS);
        uint64_t key = k << 40;
        if (kv_rng_below(&rng, 3) == 0) {
            void *old = kv_ptrmap_del(&m, key);
            assert_ptr_equal(old, ref[k]);
            if (ref[k]) live--;
            ref[k] = NULL;
        } else {
            if (!ref[k]) live++;
            ref[k] = &vals[kv_rng_below(&rng, KEYS)];
            kv_ptrmap_put(&m, key, ref[k]);
        }
        assert_int_equal(m.n, live);
        if (step % 97 == 0)
            for (int i = 0; i < KEYS; i++)
                assert_ptr_equal(kv_ptrmap_get(&m, (uint64_t)i << 40), ref[i]);
    }
    assert_null(kv_ptrmap_get(&m, 12345));
    kv_ptrmap_free(&m);
    assert_null(kv_ptrmap_get(&m, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(minhash_estimates_jaccard_of_token_trigrams),
        cmocka_unit_test(minhash_ignores_whitespace_and_handles_tiny_programs),
        cmocka_unit_test(ptrmap_matches_a_reference_under_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
