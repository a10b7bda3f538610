/* A kernel task's evaluations take turns on the run's devices: each child
 * is a job document run by the worker, which asks for its device once it
 * has compiled; one child per device at a time, in the order they asked;
 * waiting for a device is never charged to a child's time limit; and the
 * harness's scenarios come back as typed rows. The worker here is a
 * stand-in (tests/data/evaluators/slot_worker.py) that speaks the slot
 * protocol and says when it held which device. */
#include "eval/evaluator.h"
#include "util/buf.h"
#include "util/fs.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct span {
    int device, bound;
    double start, end;
    double prepare_start, prepare_end;
} span;

/* Runs N children that compile for COMPILE_S and hold their device for
 * DEVICE_S, PARALLEL at once, on DEVICES[0..ND) with a TIMEOUT_S limit
 * each; every one must end OK. Fills SPANS[0..N) with when each held
 * which device. */
static void run_children_prepared(int n, double compile_s, double prepare_s, double device_s,
                                  int parallel, const int *devices, size_t nd, double timeout_s,
                                  span *spans)
{
    char dir[] = "/tmp/kv_test_slots_XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *src = getenv("KV_SOURCE_DIR");
    char *worker = kv_asprintf("%s/tests/data/evaluators/slot_worker.py", src ? src : ".");
    char *work = kv_path_join(dir, "work");
    kv_evaluator_config cfg = {.timeout = timeout_s,
                               .parallel_evaluations = parallel,
                               .enable_artifacts = 1,
                               .max_artifact_storage = 102400,
                               .cascade_evaluation = -1};
    kv_job tmpl;
    kv_job_init(&tmpl);
    tmpl.task = "stand-in";
    tmpl.backend = "cpu";
    char *err = NULL;
    kv_evaluator *ev = kv_evaluator_new_task(&cfg, &tmpl, worker, devices, nd, work, &err);
    if (!ev) fail_msg("kv_evaluator_new_task: %s", err);
    char *plan = prepare_s > 0
                     ? kv_asprintf("{\"compile\": %g, \"prepare\": %g, \"device\": %g}", compile_s,
                                   prepare_s, device_s)
                     : kv_asprintf("{\"compile\": %g, \"device\": %g}", compile_s, device_s);
    for (int i = 0; i < n; i++)
        assert_int_equal(kv_evaluator_submit(ev, i + 1, plan, ".json"), 0);
    for (int got = 0; got < n;) {
        kv_eval_result r;
        int rc = kv_evaluator_poll(ev, 1000, &r);
        assert_true(rc >= 0);
        if (rc == 0) continue;
        if (r.status != KV_STATUS_OK) fail_msg("child %lld: %s", (long long)r.ticket, r.reason);
        span *s = &spans[r.ticket - 1];
        s->device = (int)json_integer_value(json_object_get(r.metrics, "device"));
        s->start = json_number_value(json_object_get(r.metrics, "start"));
        s->end = json_number_value(json_object_get(r.metrics, "end"));
        s->bound = (int)json_integer_value(json_object_get(r.metrics, "bound"));
        s->prepare_start = json_number_value(json_object_get(r.metrics, "prepare_start"));
        s->prepare_end = json_number_value(json_object_get(r.metrics, "prepare_end"));
        /* The harness's scenarios as rows, with where they ran. */
        assert_int_equal(r.scenarios.n, 1);
        assert_string_equal(r.scenarios.rows[0].scenario, "only");
        assert_string_equal(r.scenarios.rows[0].kind, "decode");
        assert_string_equal(r.scenarios.device, "stand-in");
        assert_int_equal(r.scenarios.device_index, s->device);
        assert_true(r.scenarios.rows[0].baseline_us == 20.0 + 2 * s->device);
        kv_eval_result_clear(&r);
        got++;
    }
    kv_evaluator_free(ev);
    free(plan);
    free(work);
    free(worker);
    kv_remove_tree(dir);
}

static void run_children(int n, double compile_s, double device_s, int parallel, const int *devices,
                         size_t nd, double timeout_s, span *spans)
{
    run_children_prepared(n, compile_s, 0, device_s, parallel, devices, nd, timeout_s, spans);
}

static void one_device_serves_one_child_at_a_time(void **state)
{
    (void)state;
    /* Three children at once on one device, each holding it 0.8 s with a
     * limit of 1.8 s: the last waits about 1.6 s for the device, more than
     * its limit would allow were waiting its time. */
    int devices[] = {0};
    span s[3];
    run_children(3, 0.1, 0.8, 3, devices, 1, 1.8, s);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s[i].device, 0);
        for (int k = 0; k < i; k++)
            if (s[i].start < s[k].end && s[k].start < s[i].end)
                fail_msg("children %d and %d held the device at once", k + 1, i + 1);
    }
}

static void two_devices_serve_two_children_at_once(void **state)
{
    (void)state;
    int devices[] = {0, 5};
    span s[4];
    run_children(4, 0.05, 0.6, 4, devices, 2, 30, s);
    int used[2] = {0, 0}, overlapped = 0;
    for (int i = 0; i < 4; i++) {
        assert_true(s[i].device == 0 || s[i].device == 5);
        used[s[i].device == 5]++;
        for (int k = 0; k < i; k++) {
            int together = s[i].start < s[k].end && s[k].start < s[i].end;
            if (together && s[i].device == s[k].device)
                fail_msg("children %d and %d held device %d at once", k + 1, i + 1, s[i].device);
            overlapped |= together;
        }
    }
    assert_true(used[0] >= 1 && used[1] >= 1);
    assert_true(overlapped); /* the second device was used beside the first */
}

/* Children one after another (never two at once) still take turns over the
 * devices: the free device that waited longest goes first, so every device
 * gets work and its own baseline early. */
static void children_one_at_a_time_take_the_devices_in_turn(void **state)
{
    (void)state;
    int devices[] = {0, 5, 7};
    span s[6];
    run_children(6, 0.01, 0.05, 1, devices, 3, 30, s);
    for (int i = 0; i < 6; i++)
        if (s[i].device != devices[i % 3])
            fail_msg("child %d held device %d, expected %d", i + 1, s[i].device, devices[i % 3]);
}

/* Children that prepare (the judge's contexts, the candidate's process)
 * before they ask do so while another holds the device: each is bound to
 * a device first, holds that device and no other, the binds spread over
 * the devices, and no two hold one device at once. */
static void children_prepare_while_another_holds_the_device(void **state)
{
    (void)state;
    int one[] = {3};
    span s[3];
    run_children_prepared(3, 0.01, 0.5, 0.5, 3, one, 1, 30, s);
    int overlapped = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s[i].bound, 3);
        assert_int_equal(s[i].device, 3);
        for (int k = 0; k < 3; k++) {
            if (k == i) continue;
            if (k < i && s[i].start < s[k].end && s[k].start < s[i].end)
                fail_msg("children %d and %d held the device at once", k + 1, i + 1);
            overlapped |= s[i].prepare_start < s[k].end && s[k].start < s[i].prepare_end;
        }
    }
    assert_true(overlapped); /* one prepared while another held the device */
    int two[] = {0, 5};
    span t[4];
    run_children_prepared(4, 0.01, 0.2, 0.3, 4, two, 2, 30, t);
    int on[2] = {0, 0};
    for (int i = 0; i < 4; i++) {
        if (t[i].device != t[i].bound)
            fail_msg("child %d was bound to %d but held %d", i + 1, t[i].bound, t[i].device);
        on[t[i].device == 5]++;
    }
    assert_int_equal(on[0], 2);
    assert_int_equal(on[1], 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_device_serves_one_child_at_a_time),
        cmocka_unit_test(two_devices_serve_two_children_at_once),
        cmocka_unit_test(children_one_at_a_time_take_the_devices_in_turn),
        cmocka_unit_test(children_prepare_while_another_holds_the_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
