/* The kernel harness on the cpu backend: honest kernels are accepted with
 * the metrics the engine relies on, the roofline floor rejects impossible
 * times, stage 1 checks correctness only, and usage errors are errors. */
#include "kernel/compile.h"
#include "kernel/harness.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char g_cache[] = "/tmp/kv_test_kernel_cpu_XXXXXX";

static char *src_path(const char *rel)
{
    const char *root = getenv("KV_SOURCE_DIR");
    return kv_asprintf("%s/%s", root ? root : ".", rel);
}

/* Evaluates REL (relative to the source tree) quickly; asserts it was judged. */
static json_t *eval_rel(const char *rel, int stage, double ceiling)
{
    kv_job o;
    kv_job_init(&o);
    o.self_exe = getenv("KV_BINARY"); /* the runners re-execute kevolve, not this test */
    char *path = src_path(rel);
    o.task = "softmax";
    o.backend = "cpu";
    o.candidate = path;
    o.quick = 1;
    o.stage = stage;
    o.cache_dir = g_cache;
    o.ceiling_gbps = ceiling;
    o.limits.call_s = 5;
    json_t *res = NULL;
    char *err = NULL;
    int rc = kv_kernel_eval(&o, &res, &err);
    if (rc != 0) fail_msg("%s: %s", rel, err);
    free(path);
    return res;
}

static double metric(json_t *res, const char *key)
{
    json_t *v = json_object_get(json_object_get(res, "metrics"), key);
    return v ? json_number_value(v) : NAN;
}

static const char *reason(json_t *res)
{
    return json_string_value(json_object_get(json_object_get(res, "artifacts"), "reason"));
}

static void baseline_is_correct_with_every_scenario_metric_and_a_time_profile(void **state)
{
    (void)state;
    json_t *res = eval_rel("tasks/softmax/cpu/baseline.c", 0, 0);
    if (metric(res, "correct") != 1) fail_msg("rejected: %s", reason(res));
    assert_true(metric(res, "combined_score") > 0);
    static const char *scen[] = {"decode", "prefill", "square"};
    static const char *keys[] = {"median_us",   "iqr_us",      "speedup",   "roofline_fraction",
                                 "max_abs_err", "max_rel_err", "rel_l2_err"};
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 7; k++) {
            char *key = kv_asprintf("%s_%s", scen[s], keys[k]);
            double v = metric(res, key);
            if (!(v >= 0) || !isfinite(v)) fail_msg("metric %s = %g", key, v);
            free(key);
        }
    assert_true(metric(res, "decode_median_us") > 0);
    json_t *held = json_object_get(json_object_get(res, "artifacts"), "held_out");
    assert_int_equal(json_array_size(held), 4);
    /* Where the worker's time went: every step, none negative, drawing and
     * timing not empty, and together no more than the worker's seconds. */
    json_t *art = json_object_get(res, "artifacts");
    json_t *prof = json_object_get(art, "profile_seconds");
    static const char *steps[] = {"alloc", "fill", "upload", "reference", "run", "check", "timed"};
    double sum = 0;
    for (int i = 0; i < 7; i++) {
        json_t *v = json_object_get(prof, steps[i]);
        if (!json_is_number(v) || json_number_value(v) < 0) fail_msg("profile step %s", steps[i]);
        sum += json_number_value(v);
    }
    assert_true(json_number_value(json_object_get(prof, "fill")) > 0);
    assert_true(json_number_value(json_object_get(prof, "timed")) > 0);
    assert_true(sum <= json_number_value(json_object_get(art, "worker_seconds")));
    /* Every second of the device's hold is in a step or, where none names
     * it, in "unnamed" (the steps before the hold aside). */
    double in_hold = 0;
    const char *k;
    json_t *v;
    json_object_foreach(prof, k, v)
    {
        if (strcmp(k, "prepare") != 0) in_hold += json_number_value(v);
    }
    assert_true(json_number_value(json_object_get(prof, "unnamed")) >= 0);
    assert_true(json_is_number(json_object_get(prof, "telemetry")));
    assert_true(in_hold >= json_number_value(json_object_get(art, "device_held_seconds")) - 1e-6);
    /* Each scenario and held-out shape: its steps, and the wall they span. */
    json_t *lists[] = {json_object_get(art, "scenarios"), held};
    for (int l = 0; l < 2; l++) {
        size_t idx;
        json_t *sc;
        json_array_foreach(lists[l], idx, sc)
        {
            json_t *sp = json_object_get(sc, "profile_seconds");
            double wall = json_number_value(json_object_get(sp, "wall")), named = 0;
            json_object_foreach(sp, k, v)
            {
                if (strcmp(k, "wall") != 0) named += json_number_value(v);
            }
            assert_true(named > 0);
            assert_true(wall >= named - 1e-6);
        }
    }
    /* On cpu a thread of the candidate's may run on after its call: every
     * look for late changes waits the settle (only a device that the
     * runner leaves idle at its reply may skip it, reply_probe.h). */
    json_t *looks = json_object_get(art, "late_looks");
    assert_int_equal(json_integer_value(json_object_get(looks, "at_once")), 0);
    assert_true(json_integer_value(json_object_get(looks, "after_settle")) > 0);
    assert_true(json_array_size(json_object_get(looks, "wait_us")) == 4);
    /* The clock's calibration is in the verdict (what each window had taken
     * off); the cpu has no device to switch from the judge to the runner. */
    json_t *cal = json_object_get(art, "clock_calibration");
    assert_true(json_number_value(json_object_get(cal, "round_trip_us")) > 0);
    assert_true(json_is_number(json_object_get(cal, "switch_us")));
    assert_true(json_number_value(json_object_get(cal, "switch_us")) == 0);
    json_decref(res);
}

static void faster_honest_variant_is_accepted(void **state)
{
    (void)state;
    json_t *res = eval_rel("tasks/softmax/cpu/fast.c", 0, 0);
    if (metric(res, "correct") != 1) fail_msg("rejected: %s", reason(res));
    /* combined_score is the geometric mean of the scenario speedups */
    double g = cbrt(metric(res, "decode_speedup") * metric(res, "prefill_speedup") *
                    metric(res, "square_speedup"));
    assert_true(fabs(g - metric(res, "combined_score")) < 1e-9 * g);
    json_decref(res);
}

static void time_below_the_roofline_floor_is_rejected_as_impossible(void **state)
{
    (void)state;
    /* A ceiling of 0.001 GB/s makes any real time impossibly fast. */
    json_t *res = eval_rel("tasks/softmax/cpu/fast.c", 0, 0.001);
    assert_int_equal(metric(res, "correct"), 0);
    assert_true(metric(res, "combined_score") == 0);
    assert_string_equal(reason(res), "faster_than_roofline");
    const char *d =
        json_string_value(json_object_get(json_object_get(res, "artifacts"), "reason_detail"));
    assert_non_null(strstr(d, "faster than the roofline allows"));
    json_decref(res);
}

static void stage_one_checks_correctness_without_timing(void **state)
{
    (void)state;
    json_t *res = eval_rel("tasks/softmax/cpu/fast.c", 1, 0);
    assert_int_equal(metric(res, "correct"), 1);
    assert_true(metric(res, "combined_score") == 1.0);
    assert_true(isnan(metric(res, "decode_median_us")));
    json_decref(res);
    res = eval_rel("tests/data/kernels/cpu/partial.c", 1, 0);
    assert_int_equal(metric(res, "combined_score"), 0);
    json_decref(res);
}

static void compiled_candidates_are_cached_by_source(void **state)
{
    (void)state;
    char *path = src_path("tasks/softmax/cpu/fast.c");
    char *src = kv_read_file(path, NULL);
    assert_non_null(src);
    kv_compiled a, b, c;
    char *err = NULL;
    assert_int_equal(kv_compile(kv_backend_find("cpu"), src, g_cache, NULL, &a, &err), 0);
    assert_int_equal(kv_compile(kv_backend_find("cpu"), src, g_cache, NULL, &b, &err), 0);
    assert_string_equal(a.key, b.key);
    assert_int_equal(b.cached, 1);
    assert_string_equal(a.lib_path, b.lib_path);
    char *changed = kv_asprintf("%s\n/* changed */\n", src);
    assert_int_equal(kv_compile(kv_backend_find("cpu"), changed, g_cache, NULL, &c, &err), 0);
    assert_string_not_equal(a.key, c.key);
    assert_int_equal(c.cached, 0);
    kv_compiled_clear(&a);
    kv_compiled_clear(&b);
    kv_compiled_clear(&c);
    free(changed);
    free(src);
    free(path);
}

static void unknown_task_and_missing_file_are_usage_errors(void **state)
{
    (void)state;
    kv_job o;
    kv_job_init(&o);
    o.self_exe = getenv("KV_BINARY"); /* the runners re-execute kevolve, not this test */
    o.task = "no_such_task";
    o.candidate = "/nonexistent.c";
    o.cache_dir = g_cache;
    json_t *res = NULL;
    char *err = NULL;
    assert_int_equal(kv_kernel_eval(&o, &res, &err), -1);
    assert_non_null(strstr(err, "unknown task 'no_such_task'"));
    free(err);
    err = NULL;
    o.task = "softmax";
    assert_int_equal(kv_kernel_eval(&o, &res, &err), -1);
    assert_non_null(strstr(err, "/nonexistent.c"));
    free(err);
    assert_null(res);
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
        cmocka_unit_test(baseline_is_correct_with_every_scenario_metric_and_a_time_profile),
        cmocka_unit_test(faster_honest_variant_is_accepted),
        cmocka_unit_test(time_below_the_roofline_floor_is_rejected_as_impossible),
        cmocka_unit_test(stage_one_checks_correctness_without_timing),
        cmocka_unit_test(compiled_candidates_are_cached_by_source),
        cmocka_unit_test(unknown_task_and_missing_file_are_usage_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
