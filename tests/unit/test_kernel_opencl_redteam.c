/* Red team on the opencl backend (PoCL in CI): each cheating or broken
 * kernel under tests/data/kernels/opencl is rejected with its reason.
 * Skips when no OpenCL device. */
#include "kernel/harness.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_cache[] = "/tmp/kv_test_kernel_oclr_XXXXXX";
static int g_have_opencl;

/* Evaluates REL (relative to the source tree) on opencl; asserts it was judged. */
static json_t *eval_rel(const char *rel, int stage)
{
    const char *root = getenv("KV_SOURCE_DIR");
    char *path = rel[0] == '/' ? kv_strdup(rel) : kv_asprintf("%s/%s", root ? root : ".", rel);
    kv_kernel_opts o;
    kv_kernel_opts_init(&o);
    o.task = "softmax";
    o.backend = KV_BACKEND_OPENCL;
    o.candidate = path;
    o.quick = 1;
    o.stage = stage;
    o.cache_dir = g_cache;
    o.kernel_timeout_s = 3;
    json_t *res = NULL;
    char *err = NULL;
    if (kv_kernel_eval(&o, &res, &err) != 0) fail_msg("%s: harness failed: %s", rel, err);
    free(path);
    return res;
}

static const char *reason(json_t *res)
{
    const char *r = json_string_value(json_object_get(json_object_get(res, "artifacts"), "reason"));
    return r ? r : "accepted";
}

static const char *detail(json_t *res)
{
    const char *d =
        json_string_value(json_object_get(json_object_get(res, "artifacts"), "reason_detail"));
    return d ? d : "";
}

static int setup(void **state)
{
    (void)state;
    json_t *info = NULL;
    char *err = NULL;
    g_have_opencl = kv_kernel_probe(KV_BACKEND_OPENCL, &info, &err) == 0;
    if (!g_have_opencl) fprintf(stderr, "SKIP: no OpenCL device: %s\n", err);
    free(err);
    if (info) json_decref(info);
    return mkdtemp(g_cache) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    kv_remove_tree(g_cache);
    return 0;
}

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
