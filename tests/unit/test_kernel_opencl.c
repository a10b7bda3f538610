/* The kernel harness on the opencl backend (PoCL in CI): honest kernels,
 * the task's baseline and a faster work-group variant, are accepted with
 * their metrics and the device build log. Skips when no OpenCL device. */
static char g_cache[] = "/tmp/kv_test_kernel_ocl_XXXXXX";
#include "test_kernel_opencl.h"

static void accepted(const char *rel)
{
    if (!g_have_opencl) skip();
    json_t *res = eval_rel(rel, 0);
    json_t *m = json_object_get(res, "metrics");
    if (json_integer_value(json_object_get(m, "correct")) != 1)
        fail_msg("%s rejected: %s: %s", rel, reason(res), detail(res));
    assert_true(json_number_value(json_object_get(m, "combined_score")) > 0);
    assert_true(json_number_value(json_object_get(m, "prefill_median_us")) > 0);
    json_t *dev = json_object_get(json_object_get(res, "artifacts"), "device");
    assert_non_null(json_object_get(dev, "compute_units"));
    assert_non_null(json_object_get(json_object_get(res, "artifacts"), "build_logs"));
    json_decref(res);
}

static void opencl_baseline_is_accepted(void **state)
{
    (void)state;
    accepted("tasks/softmax/opencl/baseline.cl");
}

static void opencl_workgroup_variant_is_accepted(void **state)
{
    (void)state;
    accepted("tasks/softmax/opencl/fast.cl");
}

static void device_code_that_does_not_build_is_a_compile_error(void **state)
{
    (void)state;
    if (!g_have_opencl) skip();
    char *path = kv_asprintf("%s/bad.cl", g_cache);
    const char *src = "#ifdef __OPENCL_VERSION__\n__kernel void k(__global float *y) { y[0] = "
                      "undefined_name; }\n#else\n#include <kevolve/task.h>\nint "
                      "kv_launch(const kv_launch_args *a) { (void)a; return 0; }\n#endif\n";
    assert_int_equal(kv_write_file(path, src, strlen(src)), 0);
    json_t *res = eval_rel(path, 1);
    assert_string_equal(reason(res), "compile_error");
    assert_non_null(strstr(detail(res), "undefined_name"));
    json_decref(res);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opencl_baseline_is_accepted),
        cmocka_unit_test(opencl_workgroup_variant_is_accepted),
        cmocka_unit_test(device_code_that_does_not_build_is_a_compile_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
