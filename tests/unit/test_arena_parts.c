/* The judge's slab (kernel/arena_parts): the arenas it shares with the
 * runner on cuda are parts of one allocation, so parts in use must never
 * overlap, space given back must be found again, and a part that does not
 * fit must be refused (the judge then makes an arena of its own). */
#include "judge/arena_parts.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* Fails unless the parts in use lie in order, apart, inside the total. */
static void assert_apart(const kv_parts *p)
{
    size_t end = 0;
    for (int k = 0; k < p->n; k++) {
        assert_true(p->off[k] >= end);
        end = p->off[k] + p->len[k];
        assert_true(end <= p->total);
    }
}

static void parts_fill_the_slab_in_order_and_refuse_what_does_not_fit(void **state)
{
    (void)state;
    kv_parts p = {.total = 100};
    size_t a = 1, b = 1, c = 1;
    assert_int_equal(kv_parts_take(&p, 40, &a), 0);
    assert_int_equal(kv_parts_take(&p, 40, &b), 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, 40);
    assert_int_equal(kv_parts_take(&p, 30, &c), -1); /* 20 left */
    assert_int_equal(kv_parts_take(&p, 20, &c), 0);
    assert_int_equal(c, 80);
    assert_int_equal(kv_parts_take(&p, 1, &c), -1); /* full */
    assert_int_equal(kv_parts_take(&p, 0, &c), -1);
    assert_apart(&p);
}

static void space_given_back_is_found_again_first_fit(void **state)
{
    (void)state;
    kv_parts p = {.total = 100};
    size_t a, b, c, d;
    assert_int_equal(kv_parts_take(&p, 30, &a), 0);
    assert_int_equal(kv_parts_take(&p, 30, &b), 0);
    assert_int_equal(kv_parts_take(&p, 30, &c), 0);
    kv_parts_give(&p, b); /* a gap of 30 in the middle */
    assert_int_equal(p.n, 2);
    assert_int_equal(kv_parts_take(&p, 40, &d), -1); /* no gap of 40 */
    assert_int_equal(kv_parts_take(&p, 20, &d), 0);
    assert_int_equal(d, 30); /* the first gap that holds it */
    assert_int_equal(kv_parts_take(&p, 10, &d), 0);
    assert_int_equal(d, 50);
    assert_apart(&p);
    /* A new part made before the old is given back lies elsewhere: the
     * trial that moves its tensors gets other addresses. */
    kv_parts q = {.total = 100};
    size_t old, moved;
    assert_int_equal(kv_parts_take(&q, 40, &old), 0);
    assert_int_equal(kv_parts_take(&q, 40, &moved), 0);
    assert_true(moved != old);
    kv_parts_give(&q, old);
    kv_parts_give(&q, 12345); /* no part there: nothing happens */
    assert_int_equal(q.n, 1);
    assert_int_equal(q.off[0], moved);
}

static void at_most_kv_parts_max_are_in_use(void **state)
{
    (void)state;
    kv_parts p = {.total = 1000};
    size_t at;
    for (int i = 0; i < KV_PARTS_MAX; i++)
        assert_int_equal(kv_parts_take(&p, 10, &at), 0);
    assert_int_equal(kv_parts_take(&p, 10, &at), -1);
    kv_parts_give(&p, 0);
    assert_int_equal(kv_parts_take(&p, 10, &at), 0);
    assert_int_equal(at, 0);
    assert_apart(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parts_fill_the_slab_in_order_and_refuse_what_does_not_fit),
        cmocka_unit_test(space_given_back_is_found_again_first_fit),
        cmocka_unit_test(at_most_kv_parts_max_are_in_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
