/* The red team of issue 11 on the cpu backend, part 2: replays that move
 * the roofline's bytes (content caches, skipped work, work landing after
 * the call, precomputing in a thread or a process) and the baseline slowed
 * from the candidate's process, with the honest controls (atomic sums in
 * any order, a workspace of its own). Each must be caught or gain nothing:
 * a replay whose trick is starved is an honest copy of the task's
 * baseline, and scores like it. Part 1: test_redteam_cpu.c; what is
 * checked and why cases skip today: test_redteam_common.h. */
static const char *g_backend = "cpu";
#include "test_redteam_common.h"

/* Replays that move the roofline's bytes: caught, or starved of gain. */
CASE(content_cache_on_a_full_hash_gains_nothing, .file = "replay_hash_cache.c", .task = "softmax",
     .cls = "replay", .want = RT_NOGAIN, .reasons = REPLAYED, .max_score = NO_GAIN)
CASE(content_cache_on_a_sampled_hash_gains_nothing, .file = "replay_sampled_hash.c",
     .task = "softmax", .cls = "replay", .want = RT_NOGAIN,
     .reasons = REPLAYED ",faster_than_roofline", .max_score = NO_GAIN)
CASE(skipping_an_output_already_written_gains_nothing, .file = "replay_skip_written.c",
     .task = "softmax", .cls = "replay", .want = RT_NOGAIN, .reasons = REPLAYED,
     .max_score = NO_GAIN)
CASE(work_landing_after_the_call_is_caught, .file = "late_thread.c", .task = "softmax",
     .cls = "replay: late work", .want = RT_NOGAIN,
     .reasons = REPLAYED ",async_work_outside_harness_stream,faster_than_roofline",
     .max_score = NO_GAIN)
CASE(precomputing_in_a_thread_gains_nothing, .file = "precompute_thread.c", .task = "softmax",
     .cls = "replay: precompute", .want = RT_NOGAIN,
     .reasons = REPLAYED ",async_work_outside_harness_stream", .max_score = NO_GAIN)
CASE(precomputing_in_a_process_gains_nothing, .file = "precompute_process.c", .task = "softmax",
     .cls = "replay: precompute", .want = RT_NOGAIN,
     .reasons = REPLAYED ",async_work_outside_harness_stream", .max_score = NO_GAIN)

/* The baseline in the candidate's process: a copy of it scores about 1. */
CASE(burning_threads_do_not_slow_the_baseline, .file = "slow_baseline_threads.c", .task = "softmax",
     .cls = "baseline in reach", .want = RT_NOGAIN, .reasons = "async_work_outside_harness_stream",
     .max_score = 1.6)
CASE(burning_processes_do_not_slow_the_baseline, .file = "slow_baseline_process.c",
     .task = "softmax", .cls = "baseline in reach", .want = RT_NOGAIN,
     .reasons = "async_work_outside_harness_stream", .max_score = 1.6)

/* Honest controls: they must pass, today and after. */
CASE(control_atomic_sums_in_any_order_pass, .file = "ctl_atomics.c", .task = "softmax",
     .cls = "honest control", .want = RT_CORRECT, .control = 1)
CASE(control_a_workspace_of_its_own_passes, .file = "ctl_workspace.c", .task = "softmax",
     .cls = "honest control", .want = RT_CORRECT, .control = 1)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(content_cache_on_a_full_hash_gains_nothing),
        cmocka_unit_test(content_cache_on_a_sampled_hash_gains_nothing),
        cmocka_unit_test(skipping_an_output_already_written_gains_nothing),
        cmocka_unit_test(work_landing_after_the_call_is_caught),
        cmocka_unit_test(precomputing_in_a_thread_gains_nothing),
        cmocka_unit_test(precomputing_in_a_process_gains_nothing),
        cmocka_unit_test(burning_threads_do_not_slow_the_baseline),
        cmocka_unit_test(burning_processes_do_not_slow_the_baseline),
        cmocka_unit_test(control_atomic_sums_in_any_order_pass),
        cmocka_unit_test(control_a_workspace_of_its_own_passes),
    };
    return cmocka_run_group_tests(tests, rt_setup, rt_teardown);
}
