/* A judge child's limit stands still while it waits for its device: the
 * judge now prepares (contexts, the candidate's process) before it waits,
 * inside the child, and a long wait behind other evaluations must not be
 * charged to the evaluation; time outside a wait still is. */
#include "judge/worker.h"
#include "util/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

typedef struct plan {
    double wait_s; /* seconds announced as a wait */
    double work_s; /* seconds of work after it */
} plan;

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static void child(void *arg)
{
    const plan *p = arg;
    if (p->wait_s > 0) {
        kv_worker_waiting();
        sleep_s(p->wait_s);
        kv_worker_waited(p->wait_s);
    }
    sleep_s(p->work_s);
    json_t *r = json_pack("{s:b}", "ok", 1);
    kv_worker_result(r);
    json_decref(r);
}

static void a_wait_for_the_device_is_not_charged_to_the_limit(void **state)
{
    (void)state;
    plan p = {.wait_s = 1.5, .work_s = 0.3};
    kv_worker_outcome w;
    char *err = NULL;
    assert_int_equal(kv_worker_run(child, &p, 1.0, &w, &err), 0);
    assert_false(w.timed_out);
    assert_non_null(w.result);
    assert_true(w.seconds >= 1.7);
    kv_worker_outcome_clear(&w);
}

static void work_past_the_limit_still_times_out(void **state)
{
    (void)state;
    plan p = {.wait_s = 0.2, .work_s = 1.5};
    kv_worker_outcome w;
    char *err = NULL;
    assert_int_equal(kv_worker_run(child, &p, 1.0, &w, &err), 0);
    assert_true(w.timed_out);
    assert_null(w.result);
    kv_worker_outcome_clear(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_wait_for_the_device_is_not_charged_to_the_limit),
        cmocka_unit_test(work_past_the_limit_still_times_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
