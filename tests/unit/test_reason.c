/* The harness's reason codes (runner/reason.h): the store keeps their
 * names, so every code's name must read back as the code, no two codes
 * may share a name, the documented names must stay what they are, and a
 * name no code has reads as the documented fallback, harness_error. */
#include "runner/reason.h"
#include "util/signame.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void every_code_reads_back_from_its_name(void **state)
{
    (void)state;
    for (unsigned r = 0; r < KV_R_COUNT; r++) {
        const char *name = kv_reason_name((kv_reason)r);
        assert_non_null(name);
        assert_true(name[0] != '\0');
        assert_int_equal(kv_reason_of(name), r);
        /* as the worker's pipe carries it */
        char text[64];
        int arg = -1;
        int want = r == KV_R_CRASH ? SIGSEGV : r == KV_R_CRASH_EXIT ? 3 : 0;
        assert_int_equal(
            kv_reason_parse(kv_reason_format((kv_reason)r, want, text, sizeof text), &arg), r);
        assert_int_equal(arg, want);
    }
}

static void no_two_codes_share_a_name(void **state)
{
    (void)state;
    for (unsigned a = 0; a < KV_R_COUNT; a++)
        for (unsigned b = a + 1; b < KV_R_COUNT; b++)
            assert_string_not_equal(kv_reason_name((kv_reason)a), kv_reason_name((kv_reason)b));
}

static void the_documented_names_stay_as_the_store_holds_them(void **state)
{
    (void)state;
    /* kernel/harness.h's list, and the judge's own codes */
    static const struct {
        kv_reason code;
        const char *name;
    } names[] = {
        {KV_R_HARNESS_ERROR, "harness_error"},
        {KV_R_NO_DEVICE, "no_device"},
        {KV_R_NOT_BUILT, "not_built"},
        {KV_R_COMPILE_ERROR, "compile_error"},
        {KV_R_LOAD_ERROR, "load_error"},
        {KV_R_MISSING_ENTRY, "missing_entry"},
        {KV_R_LAUNCH_FAILED, "launch_failed"},
        {KV_R_STALE_OR_UNWRITTEN_OUTPUT, "stale_or_unwritten_output"},
        {KV_R_ASYNC_WORK_OUTSIDE_HARNESS_STREAM, "async_work_outside_harness_stream"},
        {KV_R_INPUT_MODIFIED, "input_modified"},
        {KV_R_OUT_OF_BOUNDS, "out_of_bounds"},
        {KV_R_OUT_OF_BOUNDS_WRITE, "out_of_bounds_write"},
        {KV_R_NAN_OR_INF_OUTPUT, "nan_or_inf_output"},
        {KV_R_WRONG_RESULT, "wrong_result"},
        {KV_R_RESULT_CACHED_ACROSS_CALLS, "result_cached_across_calls"},
        {KV_R_NONDETERMINISTIC, "nondeterministic"},
        {KV_R_WRONG_ON_HELD_OUT_SHAPE, "wrong_on_held_out_shape"},
        {KV_R_TIMED_OUTPUT_WRONG, "timed_output_wrong"},
        {KV_R_FASTER_THAN_ROOFLINE, "faster_than_roofline"},
        {KV_R_TIMEOUT, "timeout"},
        {KV_R_MEMCHECK_ERROR, "memcheck_error"},
        {KV_R_CAPTURE_UNSUPPORTED, "capture_unsupported"},
        {KV_R_ILLEGAL_ADDRESS, "illegal_address"},
        {KV_R_MISALIGNED_ADDRESS, "misaligned_address"},
        {KV_R_OUT_OF_RESOURCES, "out_of_resources"},
        {KV_R_OUT_OF_MEMORY, "out_of_memory"},
        {KV_R_CUDA_ERROR, "cuda_error"},
        {KV_R_OPENCL_ERROR, "opencl_error"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_string_equal(kv_reason_name(names[i].code), names[i].name);
    char text[64];
    assert_string_equal(kv_reason_format(KV_R_CRASH, SIGSEGV, text, sizeof text), "crash: SIGSEGV");
    assert_string_equal(kv_reason_format(KV_R_CRASH, SIGBUS, text, sizeof text), "crash: SIGBUS");
    assert_string_equal(kv_reason_format(KV_R_CRASH_EXIT, 7, text, sizeof text), "crash: exit 7");
    assert_string_equal(kv_reason_format(KV_R_WRONG_RESULT, 0, text, sizeof text), "wrong_result");
}

static void a_name_no_code_has_is_a_harness_error(void **state)
{
    (void)state;
    int arg = -1;
    assert_int_equal(kv_reason_of("no_such_reason"), KV_R_HARNESS_ERROR);
    assert_int_equal(kv_reason_of(""), KV_R_HARNESS_ERROR);
    assert_int_equal(kv_reason_of(NULL), KV_R_HARNESS_ERROR);
    assert_int_equal(kv_reason_parse("wrong_result: a detail", &arg), KV_R_HARNESS_ERROR);
    assert_int_equal(arg, 0);
    assert_int_equal(kv_reason_parse(NULL, &arg), KV_R_HARNESS_ERROR);
    /* the crash codes' bare names are not what the store holds */
    assert_int_equal(kv_reason_parse("crash", &arg), KV_R_HARNESS_ERROR);
    /* a code off the wire outside the enum */
    assert_int_equal(kv_reason_valid(KV_R_COUNT), KV_R_HARNESS_ERROR);
    assert_int_equal(kv_reason_valid(0xffffffffu), KV_R_HARNESS_ERROR);
    assert_int_equal(kv_reason_valid(KV_R_TIMEOUT), KV_R_TIMEOUT);
    assert_string_equal(kv_reason_name((kv_reason)KV_R_COUNT), "harness_error");
}

static void signals_have_one_table_of_names(void **state)
{
    (void)state;
    assert_string_equal(kv_signal_name(SIGSEGV, NULL), "SIGSEGV");
    assert_string_equal(kv_signal_name(SIGKILL, NULL), "SIGKILL");
    assert_string_equal(kv_signal_name(SIGXCPU, NULL), "SIGXCPU");
    assert_null(kv_signal_name(0, NULL));
    assert_string_equal(kv_signal_name(SIGRTMIN + 1, "a signal"), "a signal");
}

static void a_failure_keeps_its_code_apart_from_its_detail(void **state)
{
    (void)state;
    kv_fail f = {0};
    assert_string_equal(kv_fail_detail(&f), "");
    assert_int_equal(kv_fail_set(&f, KV_R_OUT_OF_MEMORY, "an arena of %d bytes", 64), -1);
    assert_int_equal(f.code, KV_R_OUT_OF_MEMORY);
    assert_string_equal(f.detail, "an arena of 64 bytes");
    kv_fail_prefix(&f, "allocating %s", "tensors");
    assert_int_equal(f.code, KV_R_OUT_OF_MEMORY);
    assert_string_equal(f.detail, "allocating tensors: an arena of 64 bytes");
    /* a second failure replaces the first, its detail freed */
    kv_fail_set(&f, KV_R_HARNESS_ERROR, "again");
    assert_string_equal(f.detail, "again");
    kv_fail_clear(&f);
    assert_null(f.detail);
    assert_int_equal(kv_fail_take(&f, KV_R_NO_DEVICE, NULL), -1);
    assert_string_equal(f.detail, "unknown error");
    kv_fail_clear(&f);
}

static void a_device_that_does_not_open_keeps_the_drivers_code_in_its_detail(void **state)
{
    (void)state;
    kv_fail f = {0};
    kv_fail_set(&f, KV_R_CUDA_ERROR, "cuCtxCreate failed: CUDA_ERROR_UNKNOWN");
    kv_fail_recode(&f, KV_R_NO_DEVICE);
    assert_int_equal(f.code, KV_R_NO_DEVICE);
    assert_string_equal(f.detail, "cuda_error: cuCtxCreate failed: CUDA_ERROR_UNKNOWN");
    /* the two an open ends in stay as they are */
    kv_fail_set(&f, KV_R_HARNESS_ERROR, "cannot load the judge's kernels");
    kv_fail_recode(&f, KV_R_NO_DEVICE);
    assert_int_equal(f.code, KV_R_HARNESS_ERROR);
    assert_string_equal(f.detail, "cannot load the judge's kernels");
    kv_fail_set(&f, KV_R_NO_DEVICE, "no CUDA device: no device 3 (1 on this machine)");
    kv_fail_recode(&f, KV_R_HARNESS_ERROR);
    assert_int_equal(f.code, KV_R_NO_DEVICE);
    kv_fail_clear(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_reads_back_from_its_name),
        cmocka_unit_test(no_two_codes_share_a_name),
        cmocka_unit_test(the_documented_names_stay_as_the_store_holds_them),
        cmocka_unit_test(a_name_no_code_has_is_a_harness_error),
        cmocka_unit_test(signals_have_one_table_of_names),
        cmocka_unit_test(a_failure_keeps_its_code_apart_from_its_detail),
        cmocka_unit_test(a_device_that_does_not_open_keeps_the_drivers_code_in_its_detail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
