/* The softmax task: y = softmax(x) along each row of a rows x cols f32
 * matrix. Small enough to check everywhere, yet it trips up naive kernels
 * (outliers overflow exp without the max subtraction) and has a clear
 * roofline (read x once, write y once). */
#include <kevolve/task.h>

#include <math.h>

/* Double-precision reference: max-subtracted exp, then normalise. */
static void softmax_reference(const int64_t *syms, double *const *t)
{
    int64_t rows = syms[0], cols = syms[1];
    const double *x = t[0];
    double *y = t[1];
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double *yr = y + r * cols;
        double m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            if (xr[c] > m) m = xr[c];
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            yr[c] = exp(xr[c] - m);
            sum += yr[c];
        }
        for (int64_t c = 0; c < cols; c++)
            yr[c] /= sum;
    }
}

/* Reads x and writes y once: 8 bytes an element; about 5 flops an element. */
static kv_roofline softmax_roofline(const int64_t *syms)
{
    double n = (double)syms[0] * (double)syms[1];
    return (kv_roofline){.bytes = 8.0 * n, .flops = 5.0 * n};
}

static const kv_shape softmax_scenarios[] = {
    {.name = "decode", .syms = {32, 8192}, .weight = 1.0, .tags = "decode"},
    {.name = "prefill", .syms = {4096, 256}, .weight = 1.0, .tags = "prefill"},
    {.name = "square", .syms = {1024, 1024}, .weight = 1.0, .tags = "prefill"},
};

static const kv_shape softmax_held_out[] = {
    {.name = "odd_7x1000", .syms = {7, 1000}},
    {.name = "single_1x1", .syms = {1, 1}},
    {.name = "wide_3x4097", .syms = {3, 4097}},
    {.name = "tall_300x33", .syms = {300, 33}},
};

static const char *const softmax_baselines[] = {
    "softmax/cpu/baseline.c", "softmax/opencl/baseline.cl", "softmax/cuda/baseline.cu", 0};

const kv_task kv_task_softmax = {
    .name = "softmax",
    .description = "row softmax of a rows x cols f32 matrix: y[r,:] = softmax(x[r,:])",
    .num_syms = 2,
    .syms = {"rows", "cols"},
    .num_tensors = 2,
    .tensors =
        {
            {.name = "x", .dtype = KV_F32, .role = KV_IN, .rank = 2, .shape = {0, 1}},
            {.name = "y", .dtype = KV_F32, .role = KV_OUT, .rank = 2, .shape = {0, 1}},
        },
    .num_scenarios = 3,
    .scenarios = softmax_scenarios,
    .num_held_out = 4,
    .held_out = softmax_held_out,
    .tol =
        {
            [KV_F32] = {.atol = 1e-6, .rtol = 1e-4},
            [KV_F16] = {.atol = 1e-3, .rtol = 1e-2},
            [KV_BF16] = {.atol = 1e-2, .rtol = 2e-2},
            [KV_I32] = {.atol = 0, .rtol = 0},
        },
    .reference = softmax_reference,
    .roofline = softmax_roofline,
    .baselines = softmax_baselines,
    .maths = "y[r,c] = exp(x[r,c] - m) / sum_j exp(x[r,j] - m), m = max_j x[r,j], along each row; "
             "f32. Layout: x and y dense row-major [rows, cols], element (r, c) at r * cols + c.",
};
