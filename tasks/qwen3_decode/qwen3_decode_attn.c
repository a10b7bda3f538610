/* qwen3_decode_attn: the attention of Qwen3's decode step over its static
 * KV cache, the block between qwen3_decode_qkv and qwen3_decode_o: it takes
 * q as the qkv block writes it ([batch, q_len, q_heads, head_dim]), reads
 * the cache the qkv block wrote into ([batch, kv_heads, cache_len,
 * head_dim], transformers' static cache, whose rows past the current
 * token hold nothing yet) and writes o as the o block reads it ([batch *
 * q_len, q_heads * head_dim]): no transpose, no copy, no mask tensor.
 *
 * How many rows of sequence b are written comes from the device, so that
 * one captured graph serves every step: free[b] (int32) is how many rows
 * at the cache's end are not yet written, so the q_len new tokens of b sit
 * at rows p = cache_len - free[b] - q_len .. p + q_len - 1 and token i
 * attends to rows 0 .. p + i (causal among the new tokens). The timed
 * scenarios hold a full cache (free = 0: every row read, the time of a
 * token at that context); the held-out shapes draw free[b] per sequence,
 * so a kernel that reads the length from anywhere but free[] is caught.
 *
 * The reference is float64; the tolerance is gqa_attention's (a kernel
 * that rounds p to bf16 before p . v passes, one that keeps the softmax's
 * sum in bf16 does not): tasks/qwen3_decode/README.md. The roofline is the cache rows
 * read once plus q and o. */
#include "../gqa_attention/gqa_attention.h"

#include <kevolve/task.h>

#include <math.h>
#include <stdlib.h>

enum { A_B, A_T, A_HQ, A_HKV, A_D, A_L, A_FREE };
enum { T_Q, T_K, T_V, T_FREE, T_O };

static double dot(const double *a, const double *b, int64_t n)
{
    double s[4] = {0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int u = 0; u < 4; u++)
            s[u] += a[i + u] * b[i + u];
    double r = (s[0] + s[1]) + (s[2] + s[3]);
    for (; i < n; i++)
        r += a[i] * b[i];
    return r;
}

/* tensors: q, k_cache, v_cache, free, o; SCALE: o's error scales
 * (sum_j p_j |v_jd| / sum_j p_j) or NULL. */
static void attn_run(const int64_t *s, double *const *t, double *const *scale)
{
    int64_t b_n = s[A_B], q_n = s[A_T], hq = s[A_HQ], hkv = s[A_HKV], d = s[A_D], len = s[A_L];
    int64_t g = hq / hkv;
    double *p = malloc((size_t)len * sizeof *p);
    if (!p) abort();
    const double sc = 1.0 / sqrt((double)d);
    for (int64_t b = 0; b < b_n; b++) {
        int64_t first = len - (int64_t)t[T_FREE][b] - q_n; /* the row of token 0 */
        for (int64_t i = 0; i < q_n; i++)
            for (int64_t h = 0; h < hq; h++) {
                int64_t kvh = h / g, n = first + i + 1;
                const double *q = t[T_Q] + ((b * q_n + i) * hq + h) * d;
                const double *k = t[T_K] + (b * hkv + kvh) * len * d;
                const double *v = t[T_V] + (b * hkv + kvh) * len * d;
                double m = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j < n; j++) {
                    p[j] = dot(q, k + j * d, d) * sc;
                    if (p[j] > m) m = p[j];
                }
                for (int64_t j = 0; j < n; j++)
                    sum += p[j] = exp(p[j] - m);
                double *o = t[T_O] + ((b * q_n + i) * hq + h) * d;
                double *os = scale ? scale[T_O] + ((b * q_n + i) * hq + h) * d : NULL;
                for (int64_t c = 0; c < d; c++) {
                    double acc = 0.0, mag = 0.0;
                    for (int64_t j = 0; j < n; j++) {
                        acc += p[j] * v[j * d + c];
                        mag += p[j] * fabs(v[j * d + c]);
                    }
                    o[c] = acc / sum;
                    if (os) os[c] = mag / sum;
                }
            }
    }
    free(p);
}

static void attn_reference(const int64_t *s, double *const *t)
{
    attn_run(s, t, NULL);
}

static void attn_reference_scale(const int64_t *s, double *const *t, double *const *scale)
{
    attn_run(s, t, scale);
}

/* The cache rows the fewest written rows a shape allows (free below its
 * bound) take, read once; q read, o written. */
static kv_roofline attn_roofline(const int64_t *s)
{
    double rows = (double)(s[A_L] - (s[A_FREE] - 1)), d = (double)s[A_D];
    double tok = (double)(s[A_B] * s[A_T]), hq = (double)s[A_HQ];
    double bytes = 2.0 * (2.0 * (double)(s[A_B] * s[A_HKV]) * rows * d + 2.0 * tok * hq * d);
    return (kv_roofline){.bytes = bytes, .flops = 4.0 * tok * hq * rows * d};
}

/* Qwen3-0.6B (16 q heads) and Qwen3-14B (40), both 8 kv heads of 128, at
 * contexts of 1,024 to 32,768 keys, one and eight sequences, and one
 * sequence taking 8 tokens (a speculative step); a full cache (free = 0). */
static const kv_shape attn_scenarios[] = {
    {.name = "a06b_b1_l1k", .syms = {1, 1, 16, 8, 128, 1024, 1}, .weight = 1, .tags = "decode"},
    {.name = "a06b_b1_l8k", .syms = {1, 1, 16, 8, 128, 8192, 1}, .weight = 1, .tags = "decode"},
    {.name = "a06b_b1_l32k", .syms = {1, 1, 16, 8, 128, 32768, 1}, .weight = 1, .tags = "decode"},
    {.name = "a06b_b8_l8k", .syms = {8, 1, 16, 8, 128, 8192, 1}, .weight = 1, .tags = "decode"},
    {.name = "a14b_b1_l8k", .syms = {1, 1, 40, 8, 128, 8192, 1}, .weight = 1, .tags = "decode"},
    {.name = "a14b_b1_l32k", .syms = {1, 1, 40, 8, 128, 32768, 1}, .weight = 1, .tags = "decode"},
    {.name = "a06b_q8_l8k", .syms = {1, 8, 16, 8, 128, 8192, 1}, .weight = 1, .tags = "decode"},
};

/* Written rows drawn per sequence (down to the new tokens alone), head
 * sizes other than 128, as many kv heads as q heads, one kv head for five
 * q heads, up to 8 tokens. */
static const kv_shape attn_held_out[] = {
    {.name = "odd_d64_t2", .syms = {3, 2, 6, 2, 64, 77, 76}},
    {.name = "b2_l300_free", .syms = {2, 1, 16, 8, 128, 300, 300}},
    {.name = "g5_t8_l40", .syms = {2, 8, 5, 1, 128, 40, 33}},
    {.name = "mha_d96_t3", .syms = {1, 3, 4, 4, 96, 1000, 998}},
};

static const char *const attn_baselines[] = {"qwen3_decode/cpu/attn_naive.c",
                                             "qwen3_decode/cuda/attn_naive.cu", 0};

const kv_task kv_task_qwen3_decode_attn = {
    .name = "qwen3_decode_attn",
    .description = "Qwen3 decode: grouped-query attention of the new tokens over the static KV "
                   "cache, lengths read from the device (bf16, fp32 accumulation)",
    .num_syms = 7,
    .syms = {"batch", "q_len", "q_heads", "kv_heads", "head_dim", "cache_len", "free_bound"},
    .num_tensors = 5,
    .tensors =
        {
            {.name = "q", .dtype = KV_BF16, .role = KV_IN, .rank = 4, .shape = {0, 1, 2, 4}},
            {.name = "k_cache", .dtype = KV_BF16, .role = KV_IN, .rank = 4, .shape = {0, 3, 5, 4}},
            {.name = "v_cache", .dtype = KV_BF16, .role = KV_IN, .rank = 4, .shape = {0, 3, 5, 4}},
            {.name = "free",
             .dtype = KV_I32,
             .role = KV_IN,
             .rank = 1,
             .shape = {0},
             .index_of = 1 + A_FREE},
            {.name = "o", .dtype = KV_BF16, .role = KV_OUT, .rank = 4, .shape = {0, 1, 2, 4}},
        },
    .num_scenarios = 7,
    .scenarios = attn_scenarios,
    .num_held_out = 4,
    .held_out = attn_held_out,
    GQA_TOL, /* gqa_attention's (tasks/gqa_attention/README.md, "Tolerances") */
    .reference = attn_reference,
    .reference_scale = attn_reference_scale,
    .roofline = attn_roofline,
    .baselines = attn_baselines,
    /* In a model every row may be free but the new tokens': the judge's
     * shapes bind it lower (a full cache when timed). */
    .derived = {[A_FREE] = "s[5] - s[1] + 1"},
    .maths = "For sequence b, first = cache_len - free[b] - q_len; token i (row first + i of the "
             "cache) and q head h (kv head h / (q_heads / kv_heads)): s_j = q[b,i,h] . "
             "k_cache[b,kv,j] / sqrt(head_dim) for j = 0 .. first + i, o[b,i,h] = sum_j "
             "softmax(s)_j v_cache[b,kv,j]. fp32 accumulation, bf16 storage. Layout: dense "
             "row-major; q and o [batch, q_len, q_heads, head_dim] (qkv's q, o's attn), the "
             "caches [batch, kv_heads, cache_len, head_dim] (transformers' static cache), free "
             "[batch] int32 with free[b] + q_len <= cache_len (cache_len - q_len - the cache "
             "position of b's first new token).",
};
