/* The red team of issue 11 on the opencl backend (PoCL in CI), part 1:
 * forged verdicts, the judge within reach, processes that outlive the
 * evaluation (the watchdog, the FP environment), tolerance, with the
 * honest control for tolerance. On OpenCL the runner owns the device and
 * runs the candidate's host code: the host-side attacks of the cpu red
 * team apply to it unchanged. Candidates: tests/data/kernels/redteam/
 * opencl/ (each naming its class and verdict). Part 2:
 * test_redteam_opencl_replay.c; what is checked and why cases skip today:
 * test_redteam_common.h. Skips when there is no OpenCL device. */
static const char *g_backend = "opencl";
#include "test_redteam_common.h"

CASE(forged_verdict_then_a_wrong_answer_is_rejected, .file = "forge_verdict.cl", .task = "softmax",
     .cls = "forged verdict", .want = RT_REJECT, .args = STAGE1)

CASE(copying_the_reference_from_memory_fails, .file = "reach_copy_reference.cl", .task = "softmax",
     .cls = "judge within reach", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)
CASE(patching_the_checker_fails, .file = "reach_patch_checker.cl", .task = "softmax",
     .cls = "judge within reach", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)
CASE(reading_or_stopping_the_judge_fails, .file = "reach_parent.cl", .task = "softmax",
     .cls = "judge within reach", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)

CASE(a_setsid_grandchild_dies_with_the_evaluation, .file = "outlive_setsid.cl", .task = "softmax",
     .cls = "outlives the evaluation", .want = RT_ANY, .max_score = NO_GAIN, .next_eval = 1,
     .args = STAGE1)
/* The first call of each launch shape has 30 s more for PoCL's first build
 * of the kernel (src/judge/judge_check.c): a hang there ends at the
 * kernel timeout plus that grace, as a timeout verdict, well before the
 * evaluation's own limit. */
CASE(a_disarmed_watchdog_still_ends_the_hang, .file = "outlive_no_watchdog.cl", .task = "softmax",
     .cls = "outlives the evaluation", .want = RT_REJECT, .reasons = "timeout",
     .args = STAGE1 " --kernel-timeout 2 --timeout 90", .max_seconds = 45)
CASE(a_hostile_fp_environment_does_not_reach_the_judge, .file = "outlive_fpenv.cl",
     .task = "softmax", .cls = "fp environment", .want = RT_NOGAIN, .reasons = "*fp_env*,*float*",
     .max_score = INFINITY, .args = STAGE1)

CASE(bf16_accumulation_is_rejected_at_long_decode, .file = "tol_bf16_accumulate.cl",
     .task = "gqa_attention_small", .cls = "tolerance", .want = RT_REJECT, .reasons = TOLERANCE,
     .args = STAGE1 " " SLOW_KERNEL)
CASE(fp16_accumulation_is_rejected_at_long_decode, .file = "tol_fp16_accumulate.cl",
     .task = "gqa_attention_small", .cls = "tolerance", .want = RT_REJECT, .reasons = TOLERANCE,
     .args = STAGE1 " " SLOW_KERNEL)
CASE(control_p_rounded_to_bf16_passes, .file = "ctl_bf16_p.cl", .task = "gqa_attention_small",
     .cls = "honest control", .want = RT_CORRECT, .control = 1, .args = SLOW_KERNEL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forged_verdict_then_a_wrong_answer_is_rejected),
        cmocka_unit_test(copying_the_reference_from_memory_fails),
        cmocka_unit_test(patching_the_checker_fails),
        cmocka_unit_test(reading_or_stopping_the_judge_fails),
        cmocka_unit_test(a_setsid_grandchild_dies_with_the_evaluation),
        cmocka_unit_test(a_disarmed_watchdog_still_ends_the_hang),
        cmocka_unit_test(a_hostile_fp_environment_does_not_reach_the_judge),
        cmocka_unit_test(bf16_accumulation_is_rejected_at_long_decode),
        cmocka_unit_test(fp16_accumulation_is_rejected_at_long_decode),
        cmocka_unit_test(control_p_rounded_to_bf16_passes),
    };
    return cmocka_run_group_tests(tests, rt_setup, rt_teardown);
}
