/* The swiglu task: Qwen3's MLP activation, out = silu(gate) * up, where
 * gate and up are the two halves of a fused gate-up projection's output
 * (each row: the gate's INTER values, then the up's), silu(g) = g /
 * (1 + exp(-g)); bf16 in and out, fp32 arithmetic expected. The halves are
 * the middle axis of gate_up, [tokens, halves, inter] with halves = 2 in
 * every shape: the same bytes as a [tokens, 2 * inter] matrix. Shapes are
 * Qwen3's: intermediate size 3,072 (0.6B) and 17,408 (14B), token counts
 * of decode and prefill. Tolerances and the roofline:
 * tasks/swiglu/README.md. */
#include <kevolve/task.h>

#include <math.h>

/* tensors: gate_up, out */
static void swiglu_reference(const int64_t *syms, double *const *t)
{
    int64_t rows = syms[0], inter = syms[2];
    const double *gu = t[0];
    double *out = t[1];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < inter; c++) {
            double g = gu[(r * 2) * inter + c], u = gu[(r * 2 + 1) * inter + c];
            out[r * inter + c] = g / (1.0 + exp(-g)) * u;
        }
}

/* Reads two bf16 values and writes one per output element; about 5 flops
 * (the exponential counted as one). */
static kv_roofline swiglu_roofline(const int64_t *syms)
{
    double n = (double)syms[0] * (double)syms[2];
    return (kv_roofline){.bytes = 6.0 * n, .flops = 5.0 * n};
}

static const kv_shape swiglu_scenarios[] = {
    {.name = "decode_i3072_t1", .syms = {1, 2, 3072}, .weight = 1.0, .tags = "decode"},
    {.name = "decode_i3072_t64", .syms = {64, 2, 3072}, .weight = 1.0, .tags = "decode"},
    {.name = "decode_i17408_t8", .syms = {8, 2, 17408}, .weight = 1.0, .tags = "decode"},
    {.name = "prefill_i3072_t2048", .syms = {2048, 2, 3072}, .weight = 1.0, .tags = "prefill"},
    {.name = "prefill_i3072_t8192", .syms = {8192, 2, 3072}, .weight = 1.0, .tags = "prefill"},
    {.name = "prefill_i17408_t512", .syms = {512, 2, 17408}, .weight = 1.0, .tags = "prefill"},
    {.name = "prefill_i17408_t4096", .syms = {4096, 2, 17408}, .weight = 1.0, .tags = "prefill"},
};

/* Sizes no vector width divides, a single element, an intermediate size
 * one past 17,408. */
static const kv_shape swiglu_held_out[] = {
    {.name = "single_1", .syms = {1, 2, 1}},         {.name = "odd_3x1000", .syms = {3, 2, 1000}},
    {.name = "odd_7x4097", .syms = {7, 2, 4097}},    {.name = "rows_257x96", .syms = {257, 2, 96}},
    {.name = "wide_2x17409", .syms = {2, 2, 17409}},
};

static const char *const swiglu_baselines[] = {"swiglu/cpu/naive.c", "swiglu/opencl/naive.cl",
                                               "swiglu/cuda/naive.cu", 0};

/* bf16 rounding costs up to 2^-8 of a value; PyTorch's eager SwiGLU rounds
 * silu(gate) to bf16 and then the product: two roundings. 2^-6 admits them
 * with room; a sigmoid replaced by a straight-line approximation is far
 * outside (tasks/swiglu/README.md). */
const kv_task kv_task_swiglu = {
    .name = "swiglu",
    .description = "Qwen3's SwiGLU: out = silu(gate) * up over the two halves of a fused "
                   "gate-up projection (tokens x 2 x inter, bf16), fp32 arithmetic",
    .num_syms = 3,
    .syms = {"tokens", "halves", "inter"},
    .num_tensors = 2,
    .tensors =
        {
            {.name = "gate_up", .dtype = KV_BF16, .role = KV_IN, .rank = 3, .shape = {0, 1, 2}},
            {.name = "out", .dtype = KV_BF16, .role = KV_OUT, .rank = 2, .shape = {0, 2}},
        },
    .num_scenarios = 7,
    .scenarios = swiglu_scenarios,
    .num_held_out = 5,
    .held_out = swiglu_held_out,
    .tol =
        {
            [KV_F32] = {.atol = 1e-6, .rtol = 1e-5},
            [KV_F16] = {.atol = 1e-5, .rtol = 2e-3},
            [KV_BF16] = {.atol = 1e-5, .rtol = 0.015625},
            [KV_I32] = {.atol = 0, .rtol = 0},
        },
    .reference = swiglu_reference,
    .roofline = swiglu_roofline,
    .baselines = swiglu_baselines,
    .maths = "out[t,i] = silu(g) * u, g = gate_up[t,0,i], u = gate_up[t,1,i], silu(g) = g / (1 + "
             "exp(-g)); fp32 arithmetic, one rounding to bf16. Layout: gate_up dense row-major "
             "[tokens, 2, inter] (each row the gate's inter values, then the up's: the bytes of a "
             "[tokens, 2 * inter] matrix), out [tokens, inter].",
};
