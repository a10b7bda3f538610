/* The rmsnorm tasks: Qwen3's RMSNorm, y = x / sqrt(mean(x^2) + eps) * w
 * along each row (eps = 1e-6, bf16 in and out, fp32 accumulation), and the
 * fused variant that adds the residual first, r = x + residual, writes r
 * (the next residual) and y = rmsnorm(r) * w. Shapes are Qwen3's: hidden
 * size 1,024 (0.6B) and 5,120 (14B), token counts of decode and prefill,
 * and the q/k norms over head_dim 128 (one row per token and head).
 * Tolerances and the roofline: tasks/rmsnorm/README.md. */
#include <kevolve/task.h>

#include <math.h>

#define RMSNORM_EPS 1e-6

/* Row r of y (and of the residual sum when fused) in double precision. */
static void norm_rows(const int64_t *syms, const double *x, const double *res, const double *w,
                      double *y, double *rout)
{
    int64_t rows = syms[0], h = syms[1];
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * h;
        double ss = 0.0;
        for (int64_t c = 0; c < h; c++) {
            double v = res ? xr[c] + res[r * h + c] : xr[c];
            if (rout) rout[r * h + c] = v;
            ss += v * v;
        }
        double rstd = 1.0 / sqrt(ss / (double)h + RMSNORM_EPS);
        for (int64_t c = 0; c < h; c++) {
            double v = res ? xr[c] + res[r * h + c] : xr[c];
            y[r * h + c] = v * rstd * w[c];
        }
    }
}

/* tensors: x, w, y */
static void rmsnorm_reference(const int64_t *syms, double *const *t)
{
    norm_rows(syms, t[0], NULL, t[1], t[2], NULL);
}

/* tensors: x, residual, w, y, residual_out */
static void rmsnorm_add_reference(const int64_t *syms, double *const *t)
{
    norm_rows(syms, t[0], t[1], t[2], t[3], t[4]);
}

/* Reads x and w, writes y: 4 bytes an element and the weights; about 4
 * flops an element (square, add, scale, weight). */
static kv_roofline rmsnorm_roofline(const int64_t *syms)
{
    double n = (double)syms[0] * (double)syms[1];
    return (kv_roofline){.bytes = 4.0 * n + 2.0 * (double)syms[1], .flops = 4.0 * n};
}

/* Reads x, the residual and w, writes y and the new residual. */
static kv_roofline rmsnorm_add_roofline(const int64_t *syms)
{
    double n = (double)syms[0] * (double)syms[1];
    return (kv_roofline){.bytes = 8.0 * n + 2.0 * (double)syms[1], .flops = 5.0 * n};
}

static const kv_shape rmsnorm_scenarios[] = {
    {.name = "decode_h1024_t1", .syms = {1, 1024}, .weight = 1.0, .tags = "decode"},
    {.name = "decode_h1024_t64", .syms = {64, 1024}, .weight = 1.0, .tags = "decode"},
    {.name = "decode_h5120_t8", .syms = {8, 5120}, .weight = 1.0, .tags = "decode"},
    {.name = "prefill_h1024_t2048", .syms = {2048, 1024}, .weight = 1.0, .tags = "prefill"},
    {.name = "prefill_h5120_t8192", .syms = {8192, 5120}, .weight = 1.0, .tags = "prefill"},
    {.name = "qknorm_d128_r40", .syms = {40, 128}, .weight = 1.0, .tags = "qknorm"},
    {.name = "qknorm_d128_r8192", .syms = {8192, 128}, .weight = 1.0, .tags = "qknorm"},
};

static const kv_shape rmsnorm_add_scenarios[] = {
    {.name = "decode_h1024_t1", .syms = {1, 1024}, .weight = 1.0, .tags = "decode"},
    {.name = "decode_h5120_t8", .syms = {8, 5120}, .weight = 1.0, .tags = "decode"},
    {.name = "prefill_h1024_t2048", .syms = {2048, 1024}, .weight = 1.0, .tags = "prefill"},
    {.name = "prefill_h5120_t8192", .syms = {8192, 5120}, .weight = 1.0, .tags = "prefill"},
};

/* Odd sizes the scenarios never have: a single element, rows that are not
 * a multiple of any vector width, a hidden size one past 5,120. */
static const kv_shape rmsnorm_held_out[] = {
    {.name = "single_1x1", .syms = {1, 1}},
    {.name = "odd_3x1000", .syms = {3, 1000}},
    {.name = "odd_7x4097", .syms = {7, 4097}},
    {.name = "rows_257x128", .syms = {257, 128}},
    {.name = "wide_2x5121", .syms = {2, 5121}},
};

static const char *const rmsnorm_baselines[] = {"rmsnorm/cpu/naive.c", "rmsnorm/opencl/naive.cl",
                                                "rmsnorm/cuda/naive.cu", 0};

/* bf16 rounding costs up to 2^-8 of a value (half a unit in the last place
 * at the bottom of a binade). PyTorch's Qwen3 rounds up to three times (the
 * residual sum, the normalised x, its product with the weight in bf16):
 * 2^-6 admits that with room, and a sum of squares kept in bf16 is far
 * outside (tasks/rmsnorm/README.md). */
#define RMSNORM_TOL                                                                                \
    {                                                                                              \
        [KV_F32] = {.atol = 1e-6, .rtol = 1e-5}, [KV_F16] = {.atol = 1e-5, .rtol = 2e-3},          \
        [KV_BF16] = {.atol = 1e-5, .rtol = 0.015625}, [KV_I32] = {.atol = 0, .rtol = 0},          \
    }

const kv_task kv_task_rmsnorm = {
    .name = "rmsnorm",
    .description = "Qwen3's RMSNorm of a tokens x hidden bf16 matrix: y = x / sqrt(mean(x^2) + "
                   "1e-6) * w per row, fp32 accumulation",
    .num_syms = 2,
    .syms = {"tokens", "hidden"},
    .num_tensors = 3,
    .tensors =
        {
            {.name = "x", .dtype = KV_BF16, .role = KV_IN, .rank = 2, .shape = {0, 1}},
            {.name = "w", .dtype = KV_BF16, .role = KV_IN, .rank = 1, .shape = {1}},
            {.name = "y", .dtype = KV_BF16, .role = KV_OUT, .rank = 2, .shape = {0, 1}},
        },
    .num_scenarios = 7,
    .scenarios = rmsnorm_scenarios,
    .num_held_out = 5,
    .held_out = rmsnorm_held_out,
    .tol = RMSNORM_TOL,
    .reference = rmsnorm_reference,
    .roofline = rmsnorm_roofline,
    .baselines = rmsnorm_baselines,
    .maths = "For each row t: y[t,c] = x[t,c] / sqrt(ms + eps) * w[c], ms = (1 / hidden) sum_c "
             "x[t,c]^2, eps = 1e-6 (Qwen3's), the weight applied after the normalisation (no 1 + "
             "w); fp32 accumulation, one rounding to bf16. Layout: x and y dense row-major "
             "[tokens, hidden], element (t, c) at t * hidden + c; w [hidden].",
};

const kv_task kv_task_rmsnorm_add = {
    .name = "rmsnorm_add",
    .description = "Qwen3's residual add and RMSNorm fused: r = x + residual (written out), "
                   "y = r / sqrt(mean(r^2) + 1e-6) * w per row, bf16, fp32 accumulation",
    .num_syms = 2,
    .syms = {"tokens", "hidden"},
    .num_tensors = 5,
    .tensors =
        {
            {.name = "x", .dtype = KV_BF16, .role = KV_IN, .rank = 2, .shape = {0, 1}},
            {.name = "residual", .dtype = KV_BF16, .role = KV_IN, .rank = 2, .shape = {0, 1}},
            {.name = "w", .dtype = KV_BF16, .role = KV_IN, .rank = 1, .shape = {1}},
            {.name = "y", .dtype = KV_BF16, .role = KV_OUT, .rank = 2, .shape = {0, 1}},
            {.name = "residual_out", .dtype = KV_BF16, .role = KV_OUT, .rank = 2, .shape = {0, 1}},
        },
    .num_scenarios = 4,
    .scenarios = rmsnorm_add_scenarios,
    .num_held_out = 5,
    .held_out = rmsnorm_held_out,
    .tol = RMSNORM_TOL,
    .reference = rmsnorm_add_reference,
    .roofline = rmsnorm_add_roofline,
    .baselines = rmsnorm_baselines,
    .maths = "For each row t: r[t,c] = x[t,c] + residual[t,c], rounded to bf16 and written to "
             "residual_out; y[t,c] = r[t,c] / sqrt(ms + eps) * w[c] from that rounded r, ms = (1 / "
             "hidden) sum_c r[t,c]^2, eps = 1e-6; fp32 accumulation. Layout: every [tokens, "
             "hidden] tensor dense row-major, element (t, c) at t * hidden + c; w [hidden].",
};
