/* The evaluation job: one typed document from the config to the worker.
 * What is written reads back the same; a broken or newer document is refused
 * with the key at fault named; device slots go to the evaluations in the
 * order they asked, one per device. */
#include "eval/job_build.h"
#include "eval/slots.h"
#include "backend/backend.h"
#include "util/buf.h"
#include "util/eval_job.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void a_job_reads_back_as_it_was_written(void **state)
{
    (void)state;
    kv_job j;
    kv_job_init(&j);
    static const char *const set[] = {"decode", "prefill_16x8_s64"};
    j.task = "gqa_attention_small";
    j.backend = "opencl";
    j.device = 2;
    j.candidate = "/run/work/7.cl";
    j.scenarios = set;
    j.n_scenarios = 2;
    j.stage = 2;
    j.quick = 1;
    j.run_dir = "/run";
    j.cache_dir = "/cache";
    j.seed = 1234;
    j.limits.total_s = 120;
    j.limits.call_s = 4;
    j.limits.device_wait_s = 30;
    j.screen_keep = 0.9;
    json_t *parent = json_pack("{s:f,s:{s:f}}", "combined_score", 3.5, "speedup", "decode", 2.5);
    j.parent = parent;
    j.slot_fd = 3;
    json_t *doc = kv_job_to_json(&j);
    kv_job r;
    char *err = NULL;
    assert_int_equal(kv_job_from_json(doc, &r, &err), 0);
    assert_string_equal(r.task, "gqa_attention_small");
    assert_string_equal(r.backend, "opencl");
    assert_int_equal(r.device, 2);
    assert_string_equal(r.candidate, "/run/work/7.cl");
    assert_int_equal(r.n_scenarios, 2);
    assert_string_equal(r.scenarios[1], "prefill_16x8_s64");
    assert_int_equal(r.stage, 2);
    assert_int_equal(r.quick, 1);
    assert_string_equal(r.run_dir, "/run");
    assert_string_equal(r.cache_dir, "/cache");
    assert_true(r.seed == 1234);
    assert_true(r.limits.total_s == 120 && r.limits.call_s == 4 && r.limits.device_wait_s == 30);
    assert_true(r.limits.baseline_max_age_s == 900); /* the default travels too */
    assert_true(r.screen_keep == 0.9);
    assert_true(json_equal((json_t *)r.parent, parent));
    assert_int_equal(r.slot_fd, 3);
    kv_job_clear(&r);
    json_decref(doc);
    json_decref(parent);
}

/* Reads TEXT as a job; returns the error (malloc'd), or NULL when it loaded. */
static char *load_error(const char *text)
{
    json_t *doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    kv_job j;
    char *err = NULL;
    int rc = kv_job_from_json(doc, &j, &err);
    json_decref(doc);
    if (rc == 0) kv_job_clear(&j);
    return rc == 0 ? NULL : err;
}

static void a_broken_job_is_refused_naming_the_key(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\"task\":\"t\",\"candidate\":\"c\",\"timeout\":5}", "job.timeout: unknown key"},
        {"{\"task\":\"t\",\"candidate\":\"c\",\"limits\":{\"total_s\":\"x\"}}",
         "job.limits.total_s: not a number"},
        {"{\"task\":\"t\",\"candidate\":\"c\",\"limits\":{\"total_s\":-1}}",
         "job.limits.total_s: not a number >= 0"},
        {"{\"task\":\"t\",\"candidate\":\"c\",\"version\":2}", "job.version: written by another"},
        {"{\"task\":\"t\",\"candidate\":\"c\",\"stage\":4}", "job.stage: not 0, 1, 2 or 3"},
        {"{\"task\":\"t\",\"candidate\":\"c\",\"device\":-1}", "job.device: negative"},
        {"{\"task\":\"t\",\"candidate\":\"c\",\"slot_fd\":1}", "job.slot_fd: not a descriptor"},
        {"{\"task\":\"t\",\"candidate\":\"c\",\"scenarios\":[\"a\",3]}", "job.scenarios[1]"},
        {"{\"task\":\"t\",\"candidate\":\"c\",\"screen\":{\"parent\":{}}}",
         "job.screen.parent: not an object with a \"speedup\" object"},
        {"{\"task\":\"t\",\"candidate\":\"c\",\"screen\":{\"keep\":2}}",
         "job.screen.keep: not a fraction"},
        {"{\"candidate\":\"c\"}", "job.task: missing"},
        {"{\"task\":\"t\"}", "job.candidate: missing"},
        {"[1]", "job: not a JSON object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *err = load_error(cases[i].text);
        if (!err) fail_msg("loaded: %s", cases[i].text);
        if (!strstr(err, cases[i].want)) fail_msg("%s: got '%s'", cases[i].text, err);
        free(err);
    }
    assert_null(load_error("{\"task\":\"t\",\"candidate\":\"c\"}"));
}

static void the_template_carries_every_limit_of_the_config(void **state)
{
    (void)state;
    kv_config cfg;
    kv_config_error cerr;
    const char *yaml = "evaluator:\n"
                       "  task: gqa_attention_small\n"
                       "  backend: opencl\n"
                       "  timeout: 77\n"
                       "  kernel_timeout: 3\n"
                       "  device_wait: 12\n"
                       "  baseline_max_age: 60\n"
                       "  quick: true\n"
                       "  scenarios: [decode]\n"
                       "  screen_keep: 0.8\n"
                       "  devices: [0, 1]\n";
    if (kv_config_load_string(yaml, "test.yaml", "/tmp", &cfg, &cerr) != 0)
        fail_msg("%s", cerr.message);
    kv_job j;
    kv_eval_job_template(&cfg, "/cache", &j);
    assert_string_equal(j.task, "gqa_attention_small");
    assert_string_equal(j.backend, "opencl");
    assert_true(j.limits.total_s == 77 && j.limits.call_s == 3 && j.limits.device_wait_s == 12);
    assert_true(j.limits.baseline_max_age_s == 60);
    assert_int_equal(j.quick, 1);
    assert_int_equal(j.n_scenarios, 1);
    assert_string_equal(j.scenarios[0], "decode");
    assert_true(j.screen_keep == 0.8);
    assert_string_equal(j.cache_dir, "/cache");
    /* The devices the run takes turns on: those listed, checked against what
     * the backend sees. */
    json_t *seen =
        json_pack("{s:s,s:[{s:i},{s:i}]}", "backend", "opencl", "devices", "index", 0, "index", 1);
    int *devices = NULL;
    char *err = NULL;
    assert_int_equal(kv_eval_device_slots(&cfg, seen, &devices, &err), 2);
    assert_int_equal(devices[1], 1);
    free(devices);
    json_decref(seen);
    seen = json_pack("{s:s,s:[{s:i}]}", "backend", "opencl", "devices", "index", 0);
    assert_int_equal(kv_eval_device_slots(&cfg, seen, &devices, &err), -1);
    assert_non_null(strstr(err, "has no device 1"));
    free(err);
    json_decref(seen);
    kv_config_free(&cfg);
}

static void auto_takes_every_device_the_backend_sees(void **state)
{
    (void)state;
    kv_config cfg;
    kv_config_error cerr;
    if (kv_config_load_string("evaluator:\n  task: softmax\n", "t.yaml", "/tmp", &cfg, &cerr) != 0)
        fail_msg("%s", cerr.message);
    assert_int_equal(cfg.evaluator.n_devices, 1); /* the default: auto */
    assert_string_equal(cfg.evaluator.devices[0], "auto");
    json_t *seen = json_pack("{s:s,s:[{s:i},{s:i},{s:i}]}", "backend", "cuda", "devices", "index",
                             0, "index", 1, "index", 3);
    int *devices = NULL;
    char *err = NULL;
    assert_int_equal(kv_eval_device_slots(&cfg, seen, &devices, &err), 3);
    assert_int_equal(devices[2], 3);
    free(devices);
    json_decref(seen);
    seen = json_pack("{s:s,s:[]}", "backend", "cuda", "devices");
    assert_int_equal(kv_eval_device_slots(&cfg, seen, &devices, &err), -1);
    assert_non_null(strstr(err, "no cuda device"));
    free(err);
    json_decref(seen);
    kv_config_free(&cfg);
}

static void bad_devices_are_config_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {"[auto, 1]", "[-1]", "[0, 0]", "gpu0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = kv_asprintf("evaluator:\n  task: softmax\n  devices: %s\n", bad[i]);
        kv_config cfg;
        kv_config_error cerr;
        if (kv_config_load_string(yaml, "t.yaml", "/tmp", &cfg, &cerr) == 0)
            fail_msg("devices %s loaded", bad[i]);
        assert_non_null(strstr(cerr.message, "evaluator.devices"));
        kv_config_free(&cfg);
        free(yaml);
    }
}

static void slots_go_to_the_askers_in_order_one_per_device(void **state)
{
    (void)state;
    int devices[] = {4, 7};
    kv_slots *s = kv_slots_new(devices, 2);
    int64_t t;
    int d;
    assert_int_equal(kv_slots_grant(s, &t, &d), 0); /* no one asked */
    kv_slots_ask(s, 10);
    kv_slots_ask(s, 11);
    kv_slots_ask(s, 12);
    kv_slots_ask(s, 11); /* asking twice keeps one place */
    assert_int_equal(kv_slots_waiting(s), 3);
    assert_int_equal(kv_slots_grant(s, &t, &d), 1);
    assert_true(t == 10 && d == 4);
    assert_int_equal(kv_slots_grant(s, &t, &d), 1);
    assert_true(t == 11 && d == 7);
    assert_int_equal(kv_slots_grant(s, &t, &d), 0); /* both devices busy: 12 waits */
    assert_int_equal(kv_slots_busy(s), 2);
    assert_int_equal(kv_slots_held(s, 11), 7);
    assert_int_equal(kv_slots_release(s, 11), 1);
    assert_int_equal(kv_slots_grant(s, &t, &d), 1);
    assert_true(t == 12 && d == 7);
    kv_slots_ask(s, 13);
    assert_int_equal(kv_slots_release(s, 13), 0); /* gone before its turn: out of line */
    assert_int_equal(kv_slots_waiting(s), 0);
    kv_slots_free(s);
}

/* An evaluation bound to a device before it asks (to prepare there while
 * another holds it) spreads over the devices, waits for its own device
 * alone, lets the others go past it, and asks anywhere once its device is
 * out of rotation. */
static void bound_evaluations_wait_for_their_own_device(void **state)
{
    (void)state;
    int devices[] = {4, 7};
    kv_slots *s = kv_slots_new(devices, 2);
    int64_t t;
    int d;
    assert_int_equal(kv_slots_bind(s, 10), 4);
    assert_int_equal(kv_slots_bind(s, 11), 7); /* the device with fewer bound */
    assert_int_equal(kv_slots_bind(s, 12), 4);
    assert_int_equal(kv_slots_bind(s, 12), 4); /* binding twice: the same */
    assert_int_equal(kv_slots_bound(s, 11), 7);
    kv_slots_ask(s, 12);
    kv_slots_ask(s, 10);
    assert_int_equal(kv_slots_grant(s, &t, &d), 1);
    assert_true(t == 12 && d == 4);
    /* 10 is bound to 4, which 12 holds: it waits though 7 is free. */
    assert_int_equal(kv_slots_grant(s, &t, &d), 0);
    kv_slots_ask(s, 13); /* unbound: any free device, past 10 */
    assert_int_equal(kv_slots_grant(s, &t, &d), 1);
    assert_true(t == 13 && d == 7);
    assert_int_equal(kv_slots_release(s, 12), 1);
    assert_int_equal(kv_slots_bound(s, 12), -1); /* the release ends the binding */
    assert_int_equal(kv_slots_grant(s, &t, &d), 1);
    assert_true(t == 10 && d == 4);
    /* Device 4 leaves rotation: the next bind goes to 7, and one bound to 4
     * that asks takes any free device. */
    assert_int_equal(kv_slots_release(s, 10), 1);
    assert_int_equal(kv_slots_release(s, 13), 1);
    assert_int_equal(kv_slots_bind(s, 20), 4);
    assert_int_equal(kv_slots_take_out(s, 4), 1);
    assert_int_equal(kv_slots_bind(s, 21), 7);
    kv_slots_ask(s, 20);
    assert_int_equal(kv_slots_grant(s, &t, &d), 1);
    assert_true(t == 20 && d == 7);
    kv_slots_free(s);
}

/* The config accepts a backend exactly when the table has it (the table is
 * the one list of backends; the config checks names early, with a line). */
static void the_config_knows_the_backends_of_the_table(void **state)
{
    (void)state;
    const char *names[8];
    size_t n = 0;
    for (size_t i = 0; kv_backend_at(i) && n < 7; i++)
        names[n++] = kv_backend_at(i)->name;
    names[n++] = "metal";
    for (size_t i = 0; i < n; i++) {
        char *yaml = kv_asprintf("evaluator:\n  task: softmax\n  backend: %s\n", names[i]);
        kv_config cfg;
        kv_config_error cerr;
        int rc = kv_config_load_string(yaml, "t.yaml", "/tmp", &cfg, &cerr);
        int known = kv_backend_find(names[i]) != NULL;
        if ((rc == 0) != known)
            fail_msg("backend %s: the table %s it, the config %s it", names[i],
                     known ? "has" : "lacks", rc == 0 ? "accepts" : "refuses");
        kv_config_free(&cfg);
        free(yaml);
    }
    /* A file's suffix names its backend; capabilities, not names, decide. */
    assert_string_equal(kv_backend_for_path("x.cu")->name, "cuda");
    assert_string_equal(kv_backend_for_path("x.cl")->name, "opencl");
    assert_string_equal(kv_backend_for_path("x.c")->name, "cpu");
    assert_true(kv_backend_has(kv_backend_find("cuda"), KV_CAP_DEVICE_INPUTS | KV_CAP_ARCH));
    assert_false(kv_backend_has(kv_backend_find("cpu"), KV_CAP_DEVICE_INPUTS));
    assert_true(kv_backend_has(kv_backend_find("opencl"), KV_CAP_STAGED | KV_CAP_DEVICE_CODE));
    static const char *const baselines[] = {"t/cpu/a.c", "t/cuda/a.cu", NULL};
    assert_string_equal(kv_backend_source_for(kv_backend_find("cuda"), baselines), "t/cuda/a.cu");
    assert_null(kv_backend_source_for(kv_backend_find("opencl"), baselines));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_job_reads_back_as_it_was_written),
        cmocka_unit_test(a_broken_job_is_refused_naming_the_key),
        cmocka_unit_test(the_template_carries_every_limit_of_the_config),
        cmocka_unit_test(auto_takes_every_device_the_backend_sees),
        cmocka_unit_test(bad_devices_are_config_errors),
        cmocka_unit_test(slots_go_to_the_askers_in_order_one_per_device),
        cmocka_unit_test(bound_evaluations_wait_for_their_own_device),
        cmocka_unit_test(the_config_knows_the_backends_of_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
