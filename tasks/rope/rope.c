/* The rope task: Qwen3's rotary position embedding, applied in place to
 * the queries and keys of every head, as transformers writes it:
 *
 *     x = x * cos[pos] + rotate_half(x) * sin[pos],
 *     rotate_half(x) = (-x[D/2 ..], x[.. D/2])
 *
 * q [tokens, heads_q, head_dim] and k [tokens, heads_kv, head_dim] are
 * in-out tensors (bf16); cos and sin [positions, head_dim] (bf16) are the
 * table Qwen3's rotary module builds from its theta (1,000,000), and pos
 * [tokens] (int32) the row each token takes: positions need not be
 * contiguous (a batch of decodes at different lengths, a packed prefill).
 * The judge draws the table like any input and the positions uniformly
 * from the table's rows. fp32 arithmetic, one rounding to bf16 expected.
 * Tolerances and the roofline: tasks/rope/README.md. */
#include <kevolve/task.h>

#include <math.h>

/* Rotates the TOKENS x HEADS rows of X (head_dim D) in place, each by its
 * token's row of COS and SIN; SC: each element's error scale, the sum of
 * its two terms' magnitudes (NULL: not wanted). */
static void rotate(double *x, double *sc, int64_t tokens, int64_t heads, int64_t d,
                   const double *cos_t, const double *sin_t, const double *pos)
{
    int64_t h2 = d / 2;
    for (int64_t t = 0; t < tokens; t++) {
        const double *c = cos_t + (int64_t)pos[t] * d, *s = sin_t + (int64_t)pos[t] * d;
        for (int64_t h = 0; h < heads; h++) {
            double *r = x + (t * heads + h) * d;
            for (int64_t i = 0; i < h2; i++) {
                double a = r[i], b = r[i + h2];
                r[i] = a * c[i] - b * s[i];
                r[i + h2] = b * c[i + h2] + a * s[i + h2];
                if (!sc) continue;
                double *e = sc + (t * heads + h) * d;
                e[i] = fabs(a * c[i]) + fabs(b * s[i]);
                e[i + h2] = fabs(b * c[i + h2]) + fabs(a * s[i + h2]);
            }
        }
    }
}

/* tensors: q, k (in-out), cos, sin, pos */
static void rope_reference(const int64_t *syms, double *const *t)
{
    rotate(t[0], NULL, syms[0], syms[1], syms[3], t[2], t[3], t[4]);
    rotate(t[1], NULL, syms[0], syms[2], syms[3], t[2], t[3], t[4]);
}

static void rope_reference_scale(const int64_t *syms, double *const *t, double *const *scale)
{
    rotate(t[0], scale[0], syms[0], syms[1], syms[3], t[2], t[3], t[4]);
    rotate(t[1], scale[1], syms[0], syms[2], syms[3], t[2], t[3], t[4]);
}

/* q and k read and written once; each token's rows of the table read
 * (at most the table); the positions. Three flops an element. */
static kv_roofline rope_roofline(const int64_t *syms)
{
    double tokens = (double)syms[0], heads = (double)(syms[1] + syms[2]), d = (double)syms[3];
    double rows = syms[0] < syms[4] ? tokens : (double)syms[4];
    return (kv_roofline){.bytes = 4.0 * tokens * heads * d + 4.0 * rows * d + 4.0 * tokens,
                         .flops = 3.0 * tokens * heads * d};
}

/* tokens, heads_q, heads_kv, head_dim, positions */
static const kv_shape rope_scenarios[] = {
    {.name = "decode_16x8_t1", .syms = {1, 16, 8, 128, 1024}, .weight = 1.0, .tags = "decode"},
    {.name = "decode_16x8_t64", .syms = {64, 16, 8, 128, 8192}, .weight = 1.0, .tags = "decode"},
    {.name = "decode_40x8_t8", .syms = {8, 40, 8, 128, 8192}, .weight = 1.0, .tags = "decode"},
    {.name = "prefill_16x8_t2048",
     .syms = {2048, 16, 8, 128, 2048},
     .weight = 1.0,
     .tags = "prefill"},
    {.name = "prefill_16x8_t8192",
     .syms = {8192, 16, 8, 128, 8192},
     .weight = 1.0,
     .tags = "prefill"},
    {.name = "prefill_40x8_t4096",
     .syms = {4096, 40, 8, 128, 4096},
     .weight = 1.0,
     .tags = "prefill"},
};

/* Head sizes other than 128, a head_dim of 2, more tokens than table rows
 * (positions repeat), head counts no vector width divides. */
static const kv_shape rope_held_out[] = {
    {.name = "tiny_1x1x1_d2", .syms = {1, 1, 1, 2, 1}},
    {.name = "odd_3x5x1_d128", .syms = {3, 5, 1, 128, 7}},
    {.name = "d96_17x12x4", .syms = {17, 12, 4, 96, 33}},
    {.name = "repeat_257x2x2_d128", .syms = {257, 2, 2, 128, 5}},
    {.name = "d64_9x3x3", .syms = {9, 3, 3, 64, 4096}},
};

static const char *const rope_baselines[] = {"rope/cpu/naive.c", "rope/opencl/naive.cl",
                                             "rope/cuda/naive.cu", 0};

/* One rounding of the answer costs 2^-9 of it; PyTorch's eager rope rounds
 * each product to bf16 too, up to 2^-9 of each term's magnitude, whose sum
 * (the scale) cancelling terms make much larger than the answer. rtol and
 * stol of 2^-7 admit both with room (tasks/rope/README.md). */
const kv_task kv_task_rope = {
    .name = "rope",
    .description = "Qwen3's rotary embedding of q and k in place, x*cos[pos] + "
                   "rotate_half(x)*sin[pos] (bf16, positions need not be contiguous)",
    .num_syms = 5,
    .syms = {"tokens", "heads_q", "heads_kv", "head_dim", "positions"},
    .num_tensors = 5,
    .tensors =
        {
            {.name = "q", .dtype = KV_BF16, .role = KV_INOUT, .rank = 3, .shape = {0, 1, 3}},
            {.name = "k", .dtype = KV_BF16, .role = KV_INOUT, .rank = 3, .shape = {0, 2, 3}},
            {.name = "cos", .dtype = KV_BF16, .role = KV_IN, .rank = 2, .shape = {4, 3}},
            {.name = "sin", .dtype = KV_BF16, .role = KV_IN, .rank = 2, .shape = {4, 3}},
            {.name = "pos", .dtype = KV_I32, .role = KV_IN, .rank = 1, .shape = {0}, .index_of = 5},
        },
    .num_scenarios = 6,
    .scenarios = rope_scenarios,
    .num_held_out = 5,
    .held_out = rope_held_out,
    .tol =
        {
            [KV_F32] = {.atol = 1e-6, .rtol = 1e-5, .stol = 1e-6},
            [KV_F16] = {.atol = 1e-5, .rtol = 2e-3, .stol = 2e-3},
            [KV_BF16] = {.atol = 1e-5, .rtol = 0.0078125, .stol = 0.0078125},
            [KV_I32] = {.atol = 0, .rtol = 0},
        },
    .reference = rope_reference,
    .reference_scale = rope_reference_scale,
    .roofline = rope_roofline,
    .baselines = rope_baselines,
    .kind_of = "s[0] <= 64 ? \"decode\" : \"prefill\"",
    .maths = "In place, for each token t, head h and 0 <= i < head_dim / 2, with p = pos[t], c = "
             "cos[p,:], s = sin[p,:], x = q[t,h,:] (then k[t,h,:]): x'[i] = x[i] c[i] - x[i + D/2] "
             "s[i], x'[i + D/2] = x[i + D/2] c[i + D/2] + x[i] s[i + D/2] (D = head_dim): x * cos "
             "+ rotate_half(x) * sin, rotate_half(x) = (-x[D/2 ..], x[.. D/2]), the halves split "
             "(not interleaved pairs) as transformers' Qwen3. cos and sin are the caller's table "
             "(Qwen3 builds it with theta 1,000,000); pos need not be contiguous. fp32 "
             "arithmetic, one rounding to bf16. Layout: dense row-major q [tokens, heads_q, "
             "head_dim], k [tokens, heads_kv, head_dim], cos and sin [positions, head_dim], pos "
             "[tokens] (int32).",
};
