/* Red team on the opencl backend (PoCL in CI): each cheating or broken
 * kernel under tests/data/kernels/opencl is rejected with its reason.
 * Skips when no OpenCL device. */
static char g_cache[] = "/tmp/kv_test_kernel_oclr_XXXXXX";
#include "test_kernel_opencl.h"

static void expect(const char *name, const char *want, const char *part)
{
    if (!g_have_opencl) skip();
    char *rel = kv_asprintf("tests/data/kernels/opencl/%s.cl", name);
    json_t *res = eval_rel(rel, 1);
    if (strcmp(reason(res), want) != 0)
        fail_msg("%s: want %s, got %s (%s)", name, want, reason(res), detail(res));
    if (part && !strstr(detail(res), part))
        fail_msg("%s: detail lacks '%s': %s", name, part, detail(res));
    json_t *m = json_object_get(res, "metrics");
    assert_true(json_number_value(json_object_get(m, "combined_score")) == 0);
    json_decref(res);
    free(rel);
}

static void stale_output_is_caught(void **s)
{
    (void)s;
    expect("stale_output", "stale_or_unwritten_output", "run 2");
}
static void partial_output_is_caught(void **s)
{
    (void)s;
    expect("partial", "stale_or_unwritten_output", NULL);
}
static void writing_an_input_is_caught(void **s)
{
    (void)s;
    expect("writes_input", "input_modified", NULL);
}
static void result_cached_by_buffer_is_caught(void **s)
{
    (void)s;
    expect("cache_by_pointer", "result_cached_across_calls", NULL);
}
static void work_on_its_own_queue_is_caught(void **s)
{
    (void)s;
    expect("own_queue", "async_work_outside_harness_stream", NULL);
}
static void endless_kernel_is_killed(void **s)
{
    (void)s;
    expect("hang", "timeout", "kernel exceeded 3 s");
}
static void write_past_the_end_damages_the_canary(void **s)
{
    (void)s;
    expect("out_of_bounds", "out_of_bounds_write", "tensor y");
}
static void tuned_shapes_fail_held_out(void **s)
{
    (void)s;
    expect("tuned_shapes_only", "wrong_on_held_out_shape", NULL);
}
static void nondeterminism_is_caught(void **s)
{
    (void)s;
    expect("nondeterministic", "nondeterministic", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stale_output_is_caught),
        cmocka_unit_test(partial_output_is_caught),
        cmocka_unit_test(writing_an_input_is_caught),
        cmocka_unit_test(result_cached_by_buffer_is_caught),
        cmocka_unit_test(work_on_its_own_queue_is_caught),
        cmocka_unit_test(endless_kernel_is_killed),
        cmocka_unit_test(write_past_the_end_damages_the_canary),
        cmocka_unit_test(tuned_shapes_fail_held_out),
        cmocka_unit_test(nondeterminism_is_caught),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
