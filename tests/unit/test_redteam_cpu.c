/* The red team of issue 11 on the cpu backend, part 1: forged verdicts,
 * the judge within reach, processes that outlive the evaluation (and the
 * watchdog, the FP environment), tolerance, with the honest control for
 * tolerance, and the cases of issue 22's tasks (rmsnorm, swiglu, the
 * attention layouts, the sliding window, rope in place) and of issue 43's
 * (Qwen3's fused decode blocks). One hostile
 * candidate per class (tests/data/kernels/redteam/
 * cpu/, each naming its class and the verdict it must get in its header),
 * judged through `kevolve eval --quick` from outside. Replays and the
 * baseline: test_redteam_cpu_replay.c. What is checked and why cases skip
 * today: test_redteam_common.h. */
static const char *g_backend = "cpu";
#include "test_redteam_common.h"

/* Forged verdict: whatever it writes, the verdict is the judge's. */
CASE(forged_verdict_then_a_wrong_answer_is_rejected, .file = "forge_verdict.c", .task = "softmax",
     .cls = "forged verdict", .want = RT_REJECT, .args = STAGE1)
CASE(forged_verdict_then_exit_is_rejected, .file = "forge_exit.c", .task = "softmax",
     .cls = "forged verdict", .want = RT_REJECT, .args = STAGE1)

/* The judge within reach: nothing of it in the candidate's process. */
CASE(copying_the_reference_from_memory_fails, .file = "reach_copy_reference.c", .task = "softmax",
     .cls = "judge within reach", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)
CASE(patching_the_checker_fails, .file = "reach_patch_checker.c", .task = "softmax",
     .cls = "judge within reach", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)
CASE(reading_or_stopping_the_judge_fails, .file = "reach_parent.c", .task = "softmax",
     .cls = "judge within reach", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)

/* Processes that outlive the evaluation, the watchdog, the FP environment. */
CASE(a_setsid_grandchild_dies_with_the_evaluation, .file = "outlive_setsid.c", .task = "softmax",
     .cls = "outlives the evaluation", .want = RT_ANY, .max_score = NO_GAIN, .next_eval = 1,
     .args = STAGE1)
CASE(a_disarmed_watchdog_still_ends_the_hang, .file = "outlive_no_watchdog.c", .task = "softmax",
     .cls = "outlives the evaluation", .want = RT_REJECT, .reasons = "timeout",
     .args = STAGE1 " --kernel-timeout 2 --timeout 25", .max_seconds = 15)
CASE(a_hostile_fp_environment_does_not_reach_the_judge, .file = "outlive_fpenv.c",
     .task = "softmax", .cls = "fp environment", .want = RT_NOGAIN, .reasons = "*fp_env*,*float*",
     .max_score = INFINITY, .args = STAGE1)

/* Tolerance: fp32 accumulation, not bf16 or fp16; p rounded to bf16 is fine. */
CASE(bf16_accumulation_is_rejected_at_long_decode, .file = "tol_bf16_accumulate.c",
     .task = "gqa_attention_small", .cls = "tolerance", .want = RT_REJECT, .reasons = TOLERANCE,
     .args = STAGE1 " " SLOW_KERNEL)
CASE(fp16_accumulation_is_rejected_at_long_decode, .file = "tol_fp16_accumulate.c",
     .task = "gqa_attention_small", .cls = "tolerance", .want = RT_REJECT, .reasons = TOLERANCE,
     .args = STAGE1 " " SLOW_KERNEL)
CASE(control_p_rounded_to_bf16_passes, .file = "ctl_bf16_p.c", .task = "gqa_attention_small",
     .cls = "honest control", .want = RT_CORRECT, .control = 1, .args = SLOW_KERNEL)

/* rmsnorm (issue 22): fp32 accumulation; PyTorch's double rounding passes;
 * the weight is an input like any other. */
CASE(rmsnorm_with_a_bf16_sum_of_squares_is_rejected, .file = "tol_rmsnorm_bf16_sum.c",
     .task = "rmsnorm", .cls = "tolerance", .want = RT_REJECT, .reasons = TOLERANCE, .args = STAGE1)
CASE(rmsnorm_as_pytorch_rounds_it_passes, .file = "ctl_rmsnorm_torch.c", .task = "rmsnorm",
     .cls = "honest control", .want = RT_CORRECT, .control = 1, .args = STAGE1)
CASE(rmsnorm_that_assumes_unit_weights_is_rejected, .file = "rmsnorm_unit_weight.c",
     .task = "rmsnorm", .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)

/* swiglu (issue 22): the exponential is needed; PyTorch's double rounding
 * passes; the gate is the first half. */
CASE(swiglu_with_a_hard_sigmoid_is_rejected, .file = "tol_swiglu_hard_sigmoid.c", .task = "swiglu",
     .cls = "tolerance", .want = RT_REJECT, .reasons = TOLERANCE, .args = STAGE1)
CASE(swiglu_as_pytorch_rounds_it_passes, .file = "ctl_swiglu_torch.c", .task = "swiglu",
     .cls = "honest control", .want = RT_CORRECT, .control = 1,
     .args = STAGE1 " --scenarios decode")
CASE(swiglu_with_its_halves_swapped_is_rejected, .file = "swiglu_halves_swapped.c",
     .task = "swiglu", .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)

/* Other attention layouts (issue 22): a kernel that assumes Qwen3's eight
 * KV heads is refused on one KV head and on a KV head per query head; the
 * task's own naive start, which reads HKV, is the honest control. */
CASE(attention_that_assumes_eight_kv_heads_is_rejected_on_mqa, .file = "attention_fixed_groups.c",
     .task = "attention_mqa", .cls = "shortcut", .want = RT_REJECT,
     .args = STAGE1 " --scenarios decode")
CASE(attention_that_assumes_eight_kv_heads_is_rejected_on_mha, .file = "attention_fixed_groups.c",
     .task = "attention_mha", .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG,
     .args = STAGE1 " --scenarios decode")
/* A sliding window: attention over every key is refused; the window's
 * naive start passes. */
CASE(attention_that_ignores_the_window_is_rejected,
     .file = "../../../../../tasks/gqa_attention/cpu/naive.c", .task = "attention_window",
     .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG,
     .args = STAGE1 " --scenarios decode_16x8_b1_l32768_w4096")
CASE(the_window_naive_start_passes, .file = "../../../../../tasks/gqa_attention/cpu/window_naive.c",
     .task = "attention_window", .cls = "honest control", .want = RT_CORRECT, .control = 1,
     .args = STAGE1 " --scenarios decode_16x8_b1_l32768_w4096")
CASE(the_naive_start_passes_on_mqa, .file = "../../../../../tasks/gqa_attention/cpu/naive.c",
     .task = "attention_mqa", .cls = "honest control", .want = RT_CORRECT, .control = 1,
     .args = STAGE1 " --scenarios decode_32x1_b1_l1024")

/* rope (issue 22), in place: Qwen3's pairs, each token's own position,
 * both q and k; PyTorch's bf16 arithmetic passes. */
CASE(rope_as_pytorch_rounds_it_passes, .file = "ctl_rope_torch.c", .task = "rope",
     .cls = "honest control", .want = RT_CORRECT, .control = 1,
     .args = STAGE1 " --scenarios decode")
CASE(rope_with_gptj_pairs_is_rejected, .file = "rope_interleaved.c", .task = "rope",
     .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)
CASE(rope_that_assumes_contiguous_positions_is_rejected, .file = "rope_contiguous_positions.c",
     .task = "rope", .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)
CASE(rope_that_leaves_the_keys_as_they_came_is_rejected, .file = "rope_keys_untouched.c",
     .task = "rope", .cls = "in place", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1)

/* Qwen3's fused decode blocks (issue 43): the k/v cache is in place (a row
 * left unwritten, a row it must not touch), the residual is part of the
 * block (and in post, o and the MLP as one, the MLP's residual is the
 * sum after the attention), and the down projection accumulates in fp32. The naive starts
 * are the honest controls (test_kernel_qwen3_decode.c). */
CASE(qkv_that_leaves_the_v_row_unwritten_is_rejected, .file = "qkv_v_cache_unwritten.c",
     .task = "qwen3_decode_qkv", .cls = "in place", .want = RT_REJECT, .reasons = WRONG,
     .args = STAGE1 " --scenarios q06b_b1,q06b_q8")
CASE(qkv_that_clears_a_cache_row_it_must_not_touch_is_rejected,
     .file = "qkv_cache_next_row_cleared.c", .task = "qwen3_decode_qkv", .cls = "in place",
     .want = RT_REJECT, .reasons = WRONG, .args = STAGE1 " --scenarios q06b_b1,q06b_q8")
CASE(o_without_the_residual_is_rejected, .file = "o_residual_dropped.c", .task = "qwen3_decode_o",
     .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG, .args = STAGE1 " --scenarios o06b_t1")
CASE(mlp_with_a_bf16_down_projection_is_rejected, .file = "tol_mlp_bf16_down.c",
     .task = "qwen3_decode_mlp", .cls = "tolerance", .want = RT_REJECT, .reasons = TOLERANCE,
     .args = STAGE1 " --scenarios m06b_t1")
CASE(post_whose_last_residual_is_the_input_is_rejected, .file = "post_residual_from_the_input.c",
     .task = "qwen3_decode_post", .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG,
     .args = STAGE1 " --scenarios p06b_t1")

/* Qwen3's decode attention over its static cache (issue 43): the rows
 * written come from free[] on the device, never from the shape; the new
 * tokens of a step are causal among themselves; the sums accumulate in
 * fp32. The naive start is the honest control (test_kernel_qwen3_decode.c). */
CASE(attn_over_the_free_rows_is_rejected, .file = "attn_reads_free_rows.c",
     .task = "qwen3_decode_attn", .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG,
     .args = STAGE1 " --scenarios a06b_b1_l1k")
CASE(attn_that_takes_its_length_from_the_shape_is_rejected, .file = "attn_length_from_the_shape.c",
     .task = "qwen3_decode_attn", .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG,
     .args = STAGE1 " --scenarios a06b_b1_l1k")
CASE(attn_whose_new_tokens_see_each_other_is_rejected, .file = "attn_new_tokens_see_each_other.c",
     .task = "qwen3_decode_attn", .cls = "shortcut", .want = RT_REJECT, .reasons = WRONG,
     .args = STAGE1 " --scenarios a06b_q8_l8k")
CASE(attn_with_a_bf16_row_sum_is_rejected, .file = "tol_attn_bf16_row_sum.c",
     .task = "qwen3_decode_attn", .cls = "tolerance", .want = RT_REJECT, .reasons = TOLERANCE,
     .args = STAGE1 " --scenarios a06b_b1_l8k")

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forged_verdict_then_a_wrong_answer_is_rejected),
        cmocka_unit_test(forged_verdict_then_exit_is_rejected),
        cmocka_unit_test(copying_the_reference_from_memory_fails),
        cmocka_unit_test(patching_the_checker_fails),
        cmocka_unit_test(reading_or_stopping_the_judge_fails),
        cmocka_unit_test(a_setsid_grandchild_dies_with_the_evaluation),
        cmocka_unit_test(a_disarmed_watchdog_still_ends_the_hang),
        cmocka_unit_test(a_hostile_fp_environment_does_not_reach_the_judge),
        cmocka_unit_test(bf16_accumulation_is_rejected_at_long_decode),
        cmocka_unit_test(fp16_accumulation_is_rejected_at_long_decode),
        cmocka_unit_test(control_p_rounded_to_bf16_passes),
        cmocka_unit_test(rmsnorm_with_a_bf16_sum_of_squares_is_rejected),
        cmocka_unit_test(rmsnorm_as_pytorch_rounds_it_passes),
        cmocka_unit_test(rmsnorm_that_assumes_unit_weights_is_rejected),
        cmocka_unit_test(swiglu_with_a_hard_sigmoid_is_rejected),
        cmocka_unit_test(swiglu_as_pytorch_rounds_it_passes),
        cmocka_unit_test(swiglu_with_its_halves_swapped_is_rejected),
        cmocka_unit_test(attention_that_assumes_eight_kv_heads_is_rejected_on_mqa),
        cmocka_unit_test(attention_that_assumes_eight_kv_heads_is_rejected_on_mha),
        cmocka_unit_test(the_naive_start_passes_on_mqa),
        cmocka_unit_test(attention_that_ignores_the_window_is_rejected),
        cmocka_unit_test(the_window_naive_start_passes),
        cmocka_unit_test(rope_as_pytorch_rounds_it_passes),
        cmocka_unit_test(rope_with_gptj_pairs_is_rejected),
        cmocka_unit_test(rope_that_assumes_contiguous_positions_is_rejected),
        cmocka_unit_test(rope_that_leaves_the_keys_as_they_came_is_rejected),
        cmocka_unit_test(qkv_that_leaves_the_v_row_unwritten_is_rejected),
        cmocka_unit_test(qkv_that_clears_a_cache_row_it_must_not_touch_is_rejected),
        cmocka_unit_test(o_without_the_residual_is_rejected),
        cmocka_unit_test(mlp_with_a_bf16_down_projection_is_rejected),
        cmocka_unit_test(post_whose_last_residual_is_the_input_is_rejected),
        cmocka_unit_test(attn_over_the_free_rows_is_rejected),
        cmocka_unit_test(attn_that_takes_its_length_from_the_shape_is_rejected),
        cmocka_unit_test(attn_whose_new_tokens_see_each_other_is_rejected),
        cmocka_unit_test(attn_with_a_bf16_row_sum_is_rejected),
    };
    return cmocka_run_group_tests(tests, rt_setup, rt_teardown);
}
