/* Was the device idle at the runner's reply (kernel/reply_probe)? The
 * judge skips the settle before its late look only when the copies it made
 * right after the reply ran at once: a copy that waited behind other work
 * (a straggler of the candidate's) must never count as idle. */
#include "judge/reply_probe.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static void a_copy_that_ran_at_once_shows_an_idle_device(void **state)
{
    (void)state;
    /* calibrated: 20 us for a small copy and its wait, 1 TB/s */
    assert_true(kv_reply_was_idle(30e-6, 20e-6, 1e-12, 4096));
    /* the H200's switch back to the judge's context: 147-277 us */
    assert_true(kv_reply_was_idle(180e-6, 20e-6, 1e-12, 4096));
}

static void a_copy_that_waited_does_not(void **state)
{
    (void)state;
    /* a straggler of a millisecond ahead of the copy */
    assert_false(kv_reply_was_idle(1.2e-3, 20e-6, 1e-12, 4096));
    /* just past the limit */
    double limit = kv_reply_probe_limit(20e-6, 1e-12, 4096);
    assert_false(kv_reply_was_idle(limit * 1.01, 20e-6, 1e-12, 4096));
    /* a clock that went backwards says nothing */
    assert_false(kv_reply_was_idle(-1e-6, 20e-6, 1e-12, 4096));
}

static void the_limit_grows_with_the_bytes_copied_and_the_calibration(void **state)
{
    (void)state;
    double small = kv_reply_probe_limit(20e-6, 1e-12, 4096);
    /* 21 MB of a prefill's outputs, read and written at 1 TB/s */
    double big = kv_reply_probe_limit(20e-6, 1e-12, 21u << 20);
    assert_true(big > small + 40e-6);
    assert_true(big < 1e-3);
    assert_true(kv_reply_probe_limit(40e-6, 1e-12, 4096) > small);
    /* uncalibrated (no timing in the stage): the floor alone */
    assert_true(kv_reply_probe_limit(0, 0, 4096) > 0);
    assert_true(kv_reply_probe_limit(0, 0, 4096) < 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_copy_that_ran_at_once_shows_an_idle_device),
        cmocka_unit_test(a_copy_that_waited_does_not),
        cmocka_unit_test(the_limit_grows_with_the_bytes_copied_and_the_calibration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
