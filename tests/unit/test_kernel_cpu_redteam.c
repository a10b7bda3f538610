/* Red team on the cpu backend: every cheating or broken kernel under
 * tests/data/kernels/cpu is rejected with the reason that names its fault,
 * and the run goes on after crashes and hangs; a helper thread that ends
 * just after the call (as a joined thread does on a loaded machine) is not
 * a fault. */
#include "kernel/harness.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static char g_cache[] = "/tmp/kv_test_kernel_red_XXXXXX";

/* Evaluates tests/data/kernels/cpu/NAME.c and asserts it is rejected with
 * reason WANT (and, when not NULL, a detail containing DETAIL); WANT NULL:
 * asserts it is correct. */
static void expect_rejected(const char *name, const char *want, const char *detail)
{
    const char *root = getenv("KV_SOURCE_DIR");
    char *path = kv_asprintf("%s/tests/data/kernels/cpu/%s.c", root ? root : ".", name);
    kv_job o;
    kv_job_init(&o);
    o.self_exe = getenv("KV_BINARY"); /* the runners re-execute kevolve, not this test */
    o.task = "softmax";
    o.backend = "cpu";
    o.candidate = path;
    o.quick = 1;
    o.stage = 1; /* correctness is where every one of these must fail */
    o.cache_dir = g_cache;
    o.limits.call_s = 1.5;
    json_t *res = NULL;
    char *err = NULL;
    if (kv_kernel_eval(&o, &res, &err) != 0) fail_msg("%s: harness failed: %s", name, err);
    json_t *m = json_object_get(res, "metrics"), *a = json_object_get(res, "artifacts");
    const char *reason = json_string_value(json_object_get(a, "reason"));
    const char *d = json_string_value(json_object_get(a, "reason_detail"));
    if (!want) {
        if (reason) fail_msg("%s: want correct, got %s (%s)", name, reason, d ? d : "");
        assert_int_equal(json_integer_value(json_object_get(m, "correct")), 1);
        json_decref(res);
        free(path);
        return;
    }
    if (!reason || strcmp(reason, want) != 0)
        fail_msg("%s: want %s, got %s (%s)", name, want, reason ? reason : "accepted", d ? d : "");
    assert_int_equal(json_integer_value(json_object_get(m, "correct")), 0);
    assert_true(json_number_value(json_object_get(m, "combined_score")) == 0);
    if (detail && (!d || !strstr(d, detail)))
        fail_msg("%s: detail lacks '%s': %s", name, detail, d);
    json_decref(res);
    free(path);
}

static void stale_output_is_caught_by_poisoning(void **state)
{
    (void)state;
    expect_rejected("stale_output", "stale_or_unwritten_output", "not written by run 2");
}

static void partial_output_is_caught(void **state)
{
    (void)state;
    expect_rejected("partial", "stale_or_unwritten_output", "not written");
}

static void writing_an_input_is_caught(void **state)
{
    (void)state;
    expect_rejected("writes_input", "input_modified", "input x changed");
}

static void writing_an_input_in_the_first_run_only_is_caught(void **state)
{
    (void)state;
    expect_rejected("writes_input_once", "input_modified", "input x changed");
}

static void result_cached_by_pointer_is_caught(void **state)
{
    (void)state;
    expect_rejected("cache_by_pointer", "result_cached_across_calls", "previous trial");
}

static void work_left_on_another_thread_is_caught(void **state)
{
    (void)state;
    expect_rejected("own_thread", "async_work_outside_harness_stream", NULL);
}

static void a_thread_ending_just_after_the_call_is_no_fault(void **state)
{
    (void)state;
    expect_rejected("thread_ends_late", NULL, NULL);
}

static void a_thread_living_on_after_the_call_is_caught(void **state)
{
    (void)state;
    expect_rejected("thread_lives_on", "async_work_outside_harness_stream", "thread(s)");
}

static void hanging_kernel_is_killed_by_the_watchdog(void **state)
{
    (void)state;
    expect_rejected("hang", "timeout", "kernel exceeded 1.5 s");
}

static void out_of_bounds_read_hits_the_guard_page(void **state)
{
    (void)state;
    expect_rejected("out_of_bounds", "out_of_bounds", "out of bounds access (SIGSEGV)");
}

static void kernel_tuned_to_published_shapes_fails_held_out(void **state)
{
    (void)state;
    expect_rejected("tuned_shapes_only", "wrong_on_held_out_shape", "held-out shape");
}

static void nondeterministic_kernel_is_caught_by_two_runs(void **state)
{
    (void)state;
    expect_rejected("nondeterministic", "nondeterministic", "two runs");
}

static void crash_is_reported_by_signal(void **state)
{
    (void)state;
    expect_rejected("crash", "crash: SIGSEGV", "during correctness");
}

static void failing_launch_and_compile_errors_are_named(void **state)
{
    (void)state;
    expect_rejected("launch_error", "launch_failed", "returned 7");
    expect_rejected("compile_error", "compile_error", "missing_field");
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(g_cache) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    kv_remove_tree(g_cache);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stale_output_is_caught_by_poisoning),
        cmocka_unit_test(a_thread_ending_just_after_the_call_is_no_fault),
        cmocka_unit_test(a_thread_living_on_after_the_call_is_caught),
        cmocka_unit_test(partial_output_is_caught),
        cmocka_unit_test(writing_an_input_is_caught),
        cmocka_unit_test(writing_an_input_in_the_first_run_only_is_caught),
        cmocka_unit_test(result_cached_by_pointer_is_caught),
        cmocka_unit_test(work_left_on_another_thread_is_caught),
        cmocka_unit_test(hanging_kernel_is_killed_by_the_watchdog),
        cmocka_unit_test(out_of_bounds_read_hits_the_guard_page),
        cmocka_unit_test(kernel_tuned_to_published_shapes_fails_held_out),
        cmocka_unit_test(nondeterministic_kernel_is_caught_by_two_runs),
        cmocka_unit_test(crash_is_reported_by_signal),
        cmocka_unit_test(failing_launch_and_compile_errors_are_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
