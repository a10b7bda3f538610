/* The red team of issue 11 on the opencl backend (PoCL in CI), part 2:
 * replays that move the roofline's bytes (a content cache, skipped work,
 * work left on a queue of its own, precomputing on a queue of its own) and
 * the baseline slowed from the candidate's process, with the honest
 * controls (atomic sums in any order, one work-group, a workspace of its
 * own). On OpenCL the runner holds the device, so it holds the inputs
 * before the timed call: precompute_thread.cl is what a candidate can do
 * with that. Part 1: test_redteam_opencl.c; what is checked and why cases
 * skip today: test_redteam_common.h. Skips when there is no OpenCL
 * device. */
static const char *g_backend = "opencl";
#include "test_redteam_common.h"

/* PoCL's timings on a shared 2-core machine are noisy: the baseline timed
 * against itself scores anywhere from 0.3 to 1.5 per scenario. A starved
 * replay must stay within this (the H200 cheats it stands for gain 15x). */
#undef NO_GAIN
#define NO_GAIN 3.0

CASE(content_cache_on_a_full_hash_gains_nothing, .file = "replay_hash_cache.cl", .task = "softmax",
     .cls = "replay", .want = RT_NOGAIN, .reasons = REPLAYED, .max_score = NO_GAIN)
CASE(skipping_an_output_already_written_gains_nothing, .file = "replay_skip_written.cl",
     .task = "softmax", .cls = "replay", .want = RT_NOGAIN, .reasons = REPLAYED,
     .max_score = NO_GAIN)
CASE(work_left_on_a_queue_of_its_own_is_caught, .file = "late_queue.cl", .task = "softmax",
     .cls = "replay: late work", .want = RT_NOGAIN,
     .reasons = REPLAYED ",async_work_outside_harness_stream,faster_than_roofline",
     .max_score = NO_GAIN)
CASE(precomputing_on_a_queue_of_its_own_gains_nothing, .file = "precompute_thread.cl",
     .task = "softmax", .cls = "replay: precompute", .want = RT_NOGAIN,
     .reasons = REPLAYED ",async_work_outside_harness_stream", .max_score = NO_GAIN)

CASE(burning_threads_do_not_slow_the_baseline, .file = "slow_baseline_threads.cl",
     .task = "softmax", .cls = "baseline in reach", .want = RT_NOGAIN,
     .reasons = "async_work_outside_harness_stream", .max_score = 2.0)

CASE(control_atomic_sums_in_any_order_pass, .file = "ctl_atomics.cl", .task = "softmax",
     .cls = "honest control", .want = RT_CORRECT, .control = 1)
CASE(control_a_single_work_group_passes, .file = "ctl_single_group.cl", .task = "softmax",
     .cls = "honest control", .want = RT_CORRECT, .control = 1)
CASE(control_a_workspace_of_its_own_passes, .file = "ctl_workspace.cl", .task = "softmax",
     .cls = "honest control", .want = RT_CORRECT, .control = 1)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(content_cache_on_a_full_hash_gains_nothing),
        cmocka_unit_test(skipping_an_output_already_written_gains_nothing),
        cmocka_unit_test(work_left_on_a_queue_of_its_own_is_caught),
        cmocka_unit_test(precomputing_on_a_queue_of_its_own_gains_nothing),
        cmocka_unit_test(burning_threads_do_not_slow_the_baseline),
        cmocka_unit_test(control_atomic_sums_in_any_order_pass),
        cmocka_unit_test(control_a_single_work_group_passes),
        cmocka_unit_test(control_a_workspace_of_its_own_passes),
    };
    return cmocka_run_group_tests(tests, rt_setup, rt_teardown);
}
