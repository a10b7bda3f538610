/* The device's telemetry read beside the judge's work (judge_tele.c): the
 * judge does not wait for a slow read where it starts one; once joined,
 * each scenario's summary holds "before" (the read before its own, the
 * first one's read before it) and "after"; a device without telemetry
 * leaves no key. */
#include "judge/judge_tele.h"
#include "util/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static int reads;

/* A read as slow as NVML's on the H200 (several ms). */
static json_t *slow_read(kv_jdev *b)
{
    (void)b;
    kv_sleep_s(0.05);
    __atomic_add_fetch(&reads, 1, __ATOMIC_SEQ_CST);
    return json_pack("{s:f}", "read_at", kv_now_s());
}

static const json_t *tele(const json_t *summary, const char *when)
{
    return json_object_get(json_object_get(summary, "telemetry"), when);
}

static void test_reads_beside_the_judge(void **state)
{
    (void)state;
    reads = 0;
    kv_jdev dev = {.telemetry = slow_read};
    judge_tele tl = {0};
    json_t *s1 = json_object(), *s2 = json_object();

    double t0 = kv_now_s();
    kv_judge_tele_begin(&tl, &dev);
    kv_judge_tele_after(&tl, &dev, s1);
    kv_judge_tele_begin(&tl, &dev); /* a later scenario: its before is s1's after */
    kv_judge_tele_after(&tl, &dev, s2);
    assert_true(kv_now_s() - t0 < 0.04); /* three reads of 50 ms, none waited for */
    assert_null(json_object_get(s1, "telemetry"));

    kv_judge_tele_finish(&tl);
    assert_int_equal(reads, 3);
    assert_non_null(tele(s1, "before"));
    assert_non_null(tele(s1, "after"));
    assert_ptr_not_equal(tele(s1, "before"), tele(s1, "after"));
    assert_ptr_equal(tele(s2, "before"), tele(s1, "after"));
    assert_non_null(tele(s2, "after"));
    assert_int_equal(s1->refcount, 1); /* the judge let go of the summaries */
    assert_int_equal(s2->refcount, 1);
    kv_judge_tele_finish(&tl); /* nothing started: nothing happens */
    assert_int_equal(reads, 3);
    json_decref(s1);
    json_decref(s2);
}

static void test_no_telemetry_no_key(void **state)
{
    (void)state;
    kv_jdev dev = {0};
    judge_tele tl = {0};
    json_t *s = json_object();
    kv_judge_tele_begin(&tl, &dev);
    kv_judge_tele_after(&tl, &dev, s);
    kv_judge_tele_finish(&tl);
    assert_null(json_object_get(s, "telemetry"));
    assert_int_equal(s->refcount, 1);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_beside_the_judge),
        cmocka_unit_test(test_no_telemetry_no_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
