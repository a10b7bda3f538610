/* The gqa_attention tasks: the double-precision reference computes causal
 * grouped-query attention (checked by hand on tiny shapes), the roofline
 * counts what a decode or a prefill must move and compute, the three task
 * variants are registered with the same held-out shapes, the naive cpu and
 * opencl starting points are accepted by the harness on every scenario and
 * held-out shape of the small variant, and kernels with the classic GQA bugs
 * (no causal mask, the wrong KV head for a query head) are rejected. The
 * error scales of reference_scale are sum p|v| / sum p, leave the outputs
 * bit for bit as reference computes them, and make the bf16 tolerance admit
 * probabilities rounded to bf16 before p.v (the flash-attention way) while
 * bf16 accumulation is still rejected. */
#include "backend/check.h"
#include "backend/dtype.h"
#include "kernel/harness.h"
#include "judge/tasks.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char g_cache[] = "/tmp/kv_test_kernel_gqa_XXXXXX";

/* Softmax weights of scores Q.K_j / sqrt(D) for keys 0..N-1, normalised. */
static void weights(const double *q, const double *k, int n, int d, double *w)
{
    double m = -INFINITY, z = 0;
    for (int j = 0; j < n; j++) {
        w[j] = 0;
        for (int e = 0; e < d; e++)
            w[j] += q[e] * k[j * d + e];
        w[j] /= sqrt((double)d);
        m = fmax(m, w[j]);
    }
    for (int j = 0; j < n; j++)
        z += w[j] = exp(w[j] - m);
    for (int j = 0; j < n; j++)
        w[j] /= z;
}

/* Softmax-weighted average of V's rows 0..n-1 for query Q (all D wide). */
static void by_hand(const double *q, const double *k, const double *v, int n, int d, double *o)
{
    double w[16];
    weights(q, k, n, d, w);
    for (int e = 0; e < d; e++) {
        o[e] = 0;
        for (int j = 0; j < n; j++)
            o[e] += w[j] * v[j * d + e];
    }
}

static void reference_is_causal_bottom_right_and_maps_query_heads_to_their_group(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("gqa_attention");
    assert_non_null(t);
    /* B=1, HQ=4, HKV=2, SQ=2, L=3, D=4: heads 0,1 read KV head 0; 2,3 KV head 1;
     * query row 0 sits at position 1 (2 keys), row 1 at position 2 (3 keys). */
    int64_t syms[KV_MAX_SYMS] = {1, 4, 2, 2, 3, 4};
    double q[4 * 2 * 4], k[2 * 3 * 4], v[2 * 3 * 4], o[4 * 2 * 4];
    for (int i = 0; i < 32; i++)
        q[i] = sin(1.0 + i) * 2;
    for (int i = 0; i < 24; i++) {
        k[i] = cos(0.5 + 3.0 * i) * 2;
        v[i] = i - 11.5;
    }
    double *ts[4] = {q, k, v, o};
    t->reference(syms, ts);
    for (int h = 0; h < 4; h++)
        for (int r = 0; r < 2; r++) {
            double want[4];
            int g = h / 2;
            by_hand(q + (h * 2 + r) * 4, k + g * 12, v + g * 12, r + 2, 4, want);
            for (int e = 0; e < 4; e++)
                assert_true(fabs(o[(h * 2 + r) * 4 + e] - want[e]) < 1e-12);
        }
}

static void one_key_decode_returns_that_keys_value_row(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("gqa_attention");
    int64_t syms[KV_MAX_SYMS] = {2, 2, 1, 1, 1, 3};
    double q[12], k[6], v[6], o[12];
    for (int i = 0; i < 12; i++)
        q[i] = 100.0 * (i - 6);
    for (int i = 0; i < 6; i++) {
        k[i] = i;
        v[i] = 1.5 * i - 2;
    }
    double *ts[4] = {q, k, v, o};
    t->reference(syms, ts);
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 2; h++)
            for (int e = 0; e < 3; e++)
                assert_true(fabs(o[(b * 2 + h) * 3 + e] - v[b * 3 + e]) < 1e-12);
}

static void roofline_counts_kv_bytes_for_decode_and_causal_flops_for_prefill(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("gqa_attention");
    int64_t dec[KV_MAX_SYMS] = {1, 16, 8, 1, 32768, 128};
    kv_roofline r = t->roofline(dec);
    double kv = 2.0 * 8 * 32768 * 128 * 2, qo = 2.0 * 16 * 128 * 2;
    assert_true(fabs(r.bytes - (kv + qo)) < 1);
    int64_t pre[KV_MAX_SYMS] = {1, 40, 8, 8192, 8192, 128};
    r = t->roofline(pre);
    double causal = 4.0 * 40 * 128 * (8192.0 * 8193.0 / 2);
    assert_true(fabs(r.flops - causal) / causal < 1e-12);
}

static void variants_share_held_out_shapes_and_qwen3_head_configs(void **state)
{
    (void)state;
    const char *names[] = {"gqa_attention", "gqa_attention_decode", "gqa_attention_search",
                           "gqa_attention_small"};
    const kv_task *full = kv_task_find("gqa_attention");
    assert_int_equal(full->num_scenarios, 20);
    for (size_t n = 0; n < 4; n++) {
        const kv_task *t = kv_task_find(names[n]);
        assert_non_null(t);
        /* Every variant checks the full task's held-out shapes but the two
         * of many ragged tiles (the GPU's); the small one a long decode
         * besides (fp16 accumulation fails only there). */
        int shared = 0;
        for (int i = 0; i < full->num_held_out; i++) {
            int found = 0;
            for (int k = 0; k < t->num_held_out; k++)
                found |= strcmp(t->held_out[k].name, full->held_out[i].name) == 0;
            assert_true(found || full->held_out[i].syms[3] >= 200);
            shared += found;
        }
        assert_true(shared >= 5);
        if (strcmp(names[n], "gqa_attention_small") == 0) {
            int64_t longest = 0;
            for (int k = 0; k < t->num_held_out; k++)
                if (t->held_out[k].syms[4] > longest) longest = t->held_out[k].syms[4];
            assert_true(longest >= 32767);
        } else {
            assert_ptr_equal(t->held_out, full->held_out);
        }
        for (int i = 0; i < t->num_scenarios; i++) {
            const int64_t *s = t->scenarios[i].syms;
            assert_true(s[1] == 16 || s[1] == 40);
            assert_int_equal(s[2], 8);
            assert_int_equal(s[5], 128);
            assert_true(s[3] <= s[4]);
            assert_true(t->scenarios[i].weight > 0);
            if (strcmp(names[n], "gqa_attention_decode") == 0) assert_int_equal(s[3], 1);
            /* search: every kind of call, the 8192-row prefills left out */
            if (strcmp(names[n], "gqa_attention_search") == 0) assert_true(s[3] < 8192);
        }
        if (strcmp(names[n], "gqa_attention_search") == 0) {
            assert_int_equal(t->num_scenarios, 18);
            assert_ptr_equal(t->scenarios, full->scenarios); /* the same scenarios, a prefix */
        }
    }
    /* One key, three sequences, a 77-row prefill; and on the GPU's tasks a
     * prefill of two sequences and a chunk, each of rows and keys that fill
     * several 128-wide tiles and end in a ragged one. */
    int l1 = 0, b3 = 0, s77 = 0, many_b2 = 0, many_chunk = 0;
    for (int i = 0; i < full->num_held_out; i++) {
        const int64_t *s = full->held_out[i].syms;
        l1 |= s[4] == 1;
        b3 |= s[0] == 3;
        s77 |= s[3] == 77 && s[4] == 77;
        int ragged = s[3] > 128 && s[3] % 128 && s[4] % 128;
        many_b2 |= ragged && s[0] == 2 && s[3] == s[4];
        many_chunk |= ragged && s[3] < s[4] && s[4] > 2048;
    }
    assert_true(l1 && b3 && s77 && many_b2 && many_chunk);
}

/* Other head layouts on the same harness: one KV head for every query head
 * (mqa), a KV head per query head (mha), every kind of call, held out too. */
static void mqa_and_mha_tasks_have_their_head_layouts(void **state)
{
    (void)state;
    const kv_task *mqa = kv_task_find("attention_mqa"), *mha = kv_task_find("attention_mha");
    assert_non_null(mqa);
    assert_non_null(mha);
    for (int m = 0; m < 2; m++) {
        const kv_task *t = m ? mha : mqa;
        int kinds = 0;
        for (int held = 0; held < 2; held++)
            for (int i = 0; i < (held ? t->num_held_out : t->num_scenarios); i++) {
                const int64_t *s = held ? t->held_out[i].syms : t->scenarios[i].syms;
                assert_int_equal(s[2], m ? s[1] : 1);
                assert_int_equal(s[5], 128);
                kinds |= s[3] == 1 ? 1 : s[3] == s[4] ? 2 : 4;
            }
        assert_int_equal(kinds, 7); /* decode, prefill and chunked prefill */
        assert_ptr_equal(t->reference, kv_task_find("gqa_attention")->reference);
    }
}

static void fill_values(double *x, size_t n, uint64_t seed);

/* A sliding window of W keys: each row's answer is the unwindowed one over
 * its last W keys alone (a decode over a context cut to those keys; a
 * prefill row whose keys are fewer than W is unchanged), and the roofline
 * counts only the keys attended. */
static void a_window_attends_each_rows_last_w_keys(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("attention_window");
    assert_non_null(t);
    assert_int_equal(t->num_syms, 7);
    enum { L = 40, W = 7, D = 4, SQ = 3 };
    double q[SQ * D], k[L * D], v[L * D], o[SQ * D], o_cut[D];
    fill_values(q, SQ * D, 1);
    fill_values(k, L * D, 2);
    fill_values(v, L * D, 3);
    int64_t syms[KV_MAX_SYMS] = {1, 1, 1, SQ, L, D, W};
    double *ts[4] = {q, k, v, o};
    t->reference(syms, ts);
    /* row i (position L - SQ + i) against the keys ending there, cut to W */
    for (int i = 0; i < SQ; i++) {
        int end = L - SQ + i + 1;
        int64_t cut[KV_MAX_SYMS] = {1, 1, 1, 1, W, D};
        double *cs[4] = {q + i * D, k + (end - W) * D, v + (end - W) * D, o_cut};
        kv_task_find("gqa_attention")->reference(cut, cs);
        for (int d = 0; d < D; d++)
            assert_true(fabs(o[i * D + d] - o_cut[d]) < 1e-12);
    }
    /* a window wider than the context changes nothing */
    double o_all[SQ * D];
    int64_t wide[KV_MAX_SYMS] = {1, 1, 1, SQ, L, D, 1000}, plain[KV_MAX_SYMS] = {1, 1, 1, SQ, L, D};
    double *ws[4] = {q, k, v, o}, *ps[4] = {q, k, v, o_all};
    t->reference(wide, ws);
    kv_task_find("gqa_attention")->reference(plain, ps);
    for (int e = 0; e < SQ * D; e++)
        assert_true(o[e] == o_all[e]);
    kv_roofline full = t->roofline(plain), win = t->roofline(syms);
    assert_true(win.flops < full.flops);
    assert_true(fabs(win.flops - 4.0 * SQ * W * D) < 1e-9);
    /* and only the keys some row's window holds are read: SQ + W - 1 */
    assert_true(fabs(win.bytes - 2.0 * (2.0 * SQ * D + 2.0 * (SQ + W - 1) * D)) < 1e-9);
}

static void reference_scale_is_the_weighted_rms_of_v_and_leaves_outputs_unchanged(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("gqa_attention");
    assert_non_null(t->reference_scale);
    /* B=1, HQ=2, HKV=1, SQ=1, L=3, D=2; v's first column holds two opposite
     * outliers that nearly cancel. */
    int64_t syms[KV_MAX_SYMS] = {1, 2, 1, 1, 3, 2};
    double q[4] = {1.0, -0.5, 0.25, 2.0}, k[6] = {0.0, 0.0, 0.01, 0.01, 1.0, 0.4};
    double v[6] = {64.0, 1.0, -64.0, -2.0, 0.5, 3.0}, o[4], o2[4], sc[4];
    double *ts[4] = {q, k, v, o}, *ts2[4] = {q, k, v, o2}, *scales[4] = {NULL, NULL, NULL, sc};
    t->reference(syms, ts);
    t->reference_scale(syms, ts2, scales);
    assert_memory_equal(o, o2, sizeof o);
    for (int h = 0; h < 2; h++) {
        double w[3];
        weights(q + 2 * h, k, 3, 2, w);
        for (int e = 0; e < 2; e++) {
            double want = 0; /* sqrt(sum p^2 v^2) / sum p, with w = p / sum p */
            for (int j = 0; j < 3; j++)
                want += w[j] * w[j] * v[2 * j + e] * v[2 * j + e];
            want = sqrt(want);
            assert_true(fabs(sc[2 * h + e] - want) < 1e-12 * want);
        }
        assert_true(sc[2 * h] > 10 * fabs(o[2 * h])); /* the outliers cancel in o, not in sc */
    }
}

/* Deterministic values of size about 1 with one in 61 an outlier of +-60. */
static void fill_values(double *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (double)(seed >> 40) / (double)(1u << 24) * 2.0 - 1.0;
        if (i % 61 == 7) x[i] = x[i] < 0 ? -60.0 : 60.0;
    }
}

static void reference_scale_on_many_threads_gives_the_same_outputs(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("gqa_attention");
    /* large enough for the reference to spread work over threads */
    int64_t syms[KV_MAX_SYMS] = {1, 16, 8, 256, 256, 128};
    assert_true(t->roofline(syms).flops >= 2e8);
    size_t nq = 16 * 256 * 128, nk = 8 * 256 * 128;
    double *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nk * sizeof *v);
    double *o = malloc(nq * sizeof *o), *o2 = malloc(nq * sizeof *o2),
           *sc = malloc(nq * sizeof *sc);
    assert_true(q && k && v && o && o2 && sc);
    fill_values(q, nq, 1);
    fill_values(k, nk, 2);
    fill_values(v, nk, 3);
    double *ts[4] = {q, k, v, o}, *ts2[4] = {q, k, v, o2}, *scales[4] = {NULL, NULL, NULL, sc};
    t->reference(syms, ts);
    t->reference_scale(syms, ts2, scales);
    assert_memory_equal(o, o2, nq * sizeof *o);
    /* sqrt(sum p^2 v^2) / sum p lies in (0, max |v|] where v is not all zero. */
    for (size_t i = 0; i < nq; i++)
        assert_true(sc[i] > 0 && sc[i] <= 60.0 * (1 + 1e-12));
    free(q);
    free(k);
    free(v);
    free(o);
    free(o2);
    free(sc);
}

static void bf16_rounded_probabilities_fit_the_bf16_tolerance_only_with_its_scale_term(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("gqa_attention");
    /* One decode row over three keys (D=1): p = softmax(0, 0.025, 0.675),
     * v = (64, -64, 0.5); o = sum p v nearly cancels. */
    int64_t syms[KV_MAX_SYMS] = {1, 1, 1, 1, 3, 1};
    double q[1] = {1.0}, k[3] = {0.0, 0.025, 0.675}, v[3] = {64.0, -64.0, 0.5}, o[1], sc[1];
    double *ts[4] = {q, k, v, o}, *scales[4] = {NULL, NULL, NULL, sc};
    t->reference_scale(syms, ts, scales);
    double w[3], flash = 0;
    weights(q, k, 3, 1, w);
    for (int j = 0; j < 3; j++) /* p rounded to bf16 before p.v, as tensor-core kernels do */
        flash += kv_bf16_to_f32(kv_f32_to_bf16((float)w[j])) * v[j];
    float out[1] = {(float)flash};
    kv_tolerance tol = t->tol[KV_BF16];
    assert_true(tol.stol > 0);
    assert_true(fabs(flash - o[0]) > tol.atol + tol.rtol * fabs(o[0]));
    kv_check c;
    kv_check_output(KV_F32, out, o, sc, 1, NULL, tol, &c);
    assert_int_equal(c.bad, 0);
    kv_check_output(KV_F32, out, o, NULL, 1, NULL, tol, &c);
    assert_int_equal(c.bad, 1);
}

/* A decode row of one query head over L keys of head_dim 128, inputs drawn
 * as the harness draws them (normal, bf16), the output of a kernel that
 * rounds p to bf16 before p.v and accumulates in ACC_BF16 ? bf16 : fp32,
 * compared with the reference; returns the elements outside the bf16
 * tolerance. */
static size_t decode_row_errors(int64_t L, int acc_bf16)
{
    const kv_task *t = kv_task_find("gqa_attention");
    const int D = 128;
    int64_t syms[KV_MAX_SYMS] = {1, 1, 1, 1, L, D};
    size_t nk = (size_t)L * D;
    double *q = malloc(D * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nk * sizeof *v);
    double *o = malloc(D * sizeof *o), *sc = malloc(D * sizeof *sc);
    uint16_t *img = malloc(nk * sizeof *img);
    float *p = malloc((size_t)L * sizeof *p);
    assert_true(q && k && v && o && sc && img && p);
    kv_rng rng;
    kv_rng_seed(&rng, 42);
    kv_fill_random(KV_BF16, KV_DIST_NORMAL, &rng, D, img, q);
    kv_fill_random(KV_BF16, KV_DIST_NORMAL, &rng, nk, img, k);
    kv_fill_random(KV_BF16, KV_DIST_NORMAL, &rng, nk, img, v);
    double *ts[4] = {q, k, v, o}, *scales[4] = {NULL, NULL, NULL, sc};
    t->reference_scale(syms, ts, scales);
    /* The kernel: fp32 scores and exp, p rounded to bf16, sums in ACC. */
    float m = -INFINITY, l = 0;
    for (int64_t j = 0; j < L; j++) {
        float s = 0;
        for (int d = 0; d < D; d++)
            s += (float)q[d] * (float)k[j * D + d];
        p[j] = s / sqrtf((float)D);
        m = p[j] > m ? p[j] : m;
    }
    for (int64_t j = 0; j < L; j++) {
        p[j] = expf(p[j] - m);
        l = acc_bf16 ? kv_bf16_to_f32(kv_f32_to_bf16(l + p[j])) : l + p[j];
        p[j] = kv_bf16_to_f32(kv_f32_to_bf16(p[j]));
    }
    uint16_t out[128];
    for (int d = 0; d < D; d++) {
        float acc = 0;
        for (int64_t j = 0; j < L; j++) {
            acc += p[j] * (float)v[j * D + d];
            if (acc_bf16) acc = kv_bf16_to_f32(kv_f32_to_bf16(acc));
        }
        out[d] = kv_f32_to_bf16(acc / l);
    }
    kv_check c;
    kv_check_output(KV_BF16, out, o, sc, D, NULL, t->tol[KV_BF16], &c);
    free(q);
    free(k);
    free(v);
    free(o);
    free(sc);
    free(img);
    free(p);
    return c.bad + c.nonfinite;
}

static void bf16_accumulation_fails_at_long_context_while_bf16_probabilities_pass(void **state)
{
    (void)state;
    assert_int_equal(decode_row_errors(32768, 0), 0);
    assert_int_equal(decode_row_errors(4096, 0), 0);
    assert_true(decode_row_errors(32768, 1) > 64); /* most of the row */
    assert_true(decode_row_errors(4096, 1) > 0);
}

/* Evaluates TEXT (written to a file NAME) on the small variant, correctness
 * only; returns the verdict JSON. */
/* Correctness of TEXT (written as NAME) on BACKEND for TASK, on SCENARIO
 * alone when it is not NULL (held-out shapes are always checked). */
static json_t *eval_on(const char *text, const char *name, const char *backend, const char *task,
                       const char *scenario)
{
    char *path = kv_asprintf("%s/%s", g_cache, name);
    assert_int_equal(kv_write_file(path, text, strlen(text)), 0);
    const char *const only[] = {scenario};
    kv_job o;
    kv_job_init(&o);
    o.self_exe = getenv("KV_BINARY"); /* the runners re-execute kevolve, not this test */
    o.task = task;
    o.scenarios = scenario ? only : NULL;
    o.n_scenarios = scenario ? 1 : 0;
    o.backend = backend;
    o.candidate = path;
    o.quick = 1;
    o.stage = 1;
    o.cache_dir = g_cache;
    o.limits.call_s = 20;
    json_t *res = NULL;
    char *err = NULL;
    if (kv_kernel_eval(&o, &res, &err) != 0) fail_msg("%s: %s", name, err);
    free(path);
    return res;
}

static json_t *eval_text(const char *text, const char *name, const char *backend)
{
    return eval_on(text, name, backend, "gqa_attention_small", NULL);
}

static const char *reason(json_t *res)
{
    const char *r = json_string_value(json_object_get(json_object_get(res, "artifacts"), "reason"));
    return r ? r : "accepted";
}

/* TEXT with every FROM replaced by TO (asserts there was one). */
static char *replace_all(const char *text, const char *from, const char *to)
{
    kv_buf b = KV_BUF_INIT;
    const char *p = text, *hit;
    int n = 0;
    while ((hit = strstr(p, from))) {
        kv_buf_append(&b, p, (size_t)(hit - p));
        kv_buf_printf(&b, "%s", to);
        p = hit + strlen(from);
        n++;
    }
    kv_buf_printf(&b, "%s", p);
    assert_true(n > 0);
    return b.data;
}

static void naive_cpu_start_is_correct_on_every_scenario_and_held_out_shape(void **state)
{
    (void)state;
    json_t *res = eval_text(kv_embedded_text("gqa_attention/cpu/naive.c"), "naive.c", "cpu");
    assert_string_equal(reason(res), "accepted");
    json_t *art = json_object_get(res, "artifacts");
    assert_int_equal(json_array_size(json_object_get(art, "scenarios")), 4);
    assert_int_equal(json_array_size(json_object_get(art, "held_out")), 6);
    json_decref(res);
}

static void kernel_without_causal_mask_is_rejected(void **state)
{
    (void)state;
    char *bad = replace_all(kv_embedded_text("gqa_attention/cpu/naive.c"),
                            "int64_t keys = L - SQ + i + 1;", "int64_t keys = L;");
    json_t *res = eval_text(bad, "no_mask.c", "cpu");
    assert_string_equal(reason(res), "wrong_result");
    json_decref(res);
    free(bad);
}

static void kernel_reading_the_wrong_kv_head_is_rejected(void **state)
{
    (void)state;
    char *bad =
        replace_all(kv_embedded_text("gqa_attention/cpu/naive.c"), "h / (HQ / HKV)", "h % HKV");
    json_t *res = eval_text(bad, "wrong_head.c", "cpu");
    assert_string_equal(reason(res), "wrong_result");
    json_decref(res);
    free(bad);
}

static void kernel_accumulating_in_bf16_is_rejected(void **state)
{
    (void)state;
    char *bad = replace_all(
        kv_embedded_text("gqa_attention/cpu/naive.c"), "acc[d] += p * bf16_to_f32(vh[j * D + d]);",
        "acc[d] = bf16_to_f32(f32_to_bf16(acc[d] + p * bf16_to_f32(vh[j * D + d])));");
    json_t *res = eval_text(bad, "bf16_acc.c", "cpu");
    assert_string_equal(reason(res), "wrong_result");
    json_decref(res);
    free(bad);
}

/* Skips the test where no OpenCL device is there (no PoCL). */
static void opencl_or_skip(void)
{
    json_t *info = NULL;
    char *err = NULL;
    if (kv_kernel_devices("opencl", &info, &err) != 0) {
        free(err);
        skip();
    }
    json_decref(info);
}

static void naive_opencl_start_and_a_tuned_variant_are_correct(void **state)
{
    (void)state;
    opencl_or_skip();
    const char *naive = kv_embedded_text("gqa_attention/opencl/naive.cl");
    json_t *res = eval_text(naive, "naive.cl", "opencl");
    assert_string_equal(reason(res), "accepted");
    json_decref(res);
    /* The seed (naive.cl's design with its tune axes), every axis of the
     * GPU's design moved off its naive value at once. */
    const char *seed = kv_embedded_text("gqa_attention/opencl/seed.cl");
    char *a = replace_all(seed, "#define VEC 1 ", "#define VEC 8 ");
    char *b = replace_all(a, "#define SPLIT 1 ", "#define SPLIT 4 ");
    char *c = replace_all(b, "#define SHARE_KV 0 ", "#define SHARE_KV 1 ");
    char *d = replace_all(c, "#define ONLINE 0 ", "#define ONLINE 1 ");
    char *e = replace_all(d, "#define THREADS 128 ", "#define THREADS 256 ");
    res = eval_text(e, "tuned.cl", "opencl");
    assert_string_equal(reason(res), "accepted");
    json_decref(res);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
}

/* The other layouts' starts on OpenCL (PoCL): gqa's naive kernel on one KV
 * head and on as many as query heads, the window's on a sliding window;
 * one decode scenario each and every held-out shape. */
static void other_layouts_opencl_starts_are_correct(void **state)
{
    (void)state;
    opencl_or_skip();
    static const char *const runs[][3] = {
        {"attention_mqa", "gqa_attention/opencl/naive.cl", "decode_32x1_b1_l1024"},
        {"attention_mha", "gqa_attention/opencl/naive.cl", "decode_32x32_b1_l1024"},
        {"attention_window", "gqa_attention/opencl/window_naive.cl", "decode_16x8_b1_l32768_w4096"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        json_t *res =
            eval_on(kv_embedded_text(runs[i][1]), "layout.cl", "opencl", runs[i][0], runs[i][2]);
        if (strcmp(reason(res), "accepted") != 0)
            fail_msg("%s on %s: %s: %s", runs[i][1], runs[i][0], reason(res),
                     json_string_value(
                         json_object_get(json_object_get(res, "artifacts"), "reason_detail")));
        json_decref(res);
    }
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(g_cache) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    kv_remove_tree(g_cache);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference_is_causal_bottom_right_and_maps_query_heads_to_their_group),
        cmocka_unit_test(one_key_decode_returns_that_keys_value_row),
        cmocka_unit_test(roofline_counts_kv_bytes_for_decode_and_causal_flops_for_prefill),
        cmocka_unit_test(variants_share_held_out_shapes_and_qwen3_head_configs),
        cmocka_unit_test(mqa_and_mha_tasks_have_their_head_layouts),
        cmocka_unit_test(a_window_attends_each_rows_last_w_keys),
        cmocka_unit_test(reference_scale_is_the_weighted_rms_of_v_and_leaves_outputs_unchanged),
        cmocka_unit_test(reference_scale_on_many_threads_gives_the_same_outputs),
        cmocka_unit_test(
            bf16_rounded_probabilities_fit_the_bf16_tolerance_only_with_its_scale_term),
        cmocka_unit_test(naive_cpu_start_is_correct_on_every_scenario_and_held_out_shape),
        cmocka_unit_test(kernel_without_causal_mask_is_rejected),
        cmocka_unit_test(kernel_reading_the_wrong_kv_head_is_rejected),
        cmocka_unit_test(kernel_accumulating_in_bf16_is_rejected),
        cmocka_unit_test(bf16_accumulation_fails_at_long_context_while_bf16_probabilities_pass),
        cmocka_unit_test(naive_opencl_start_and_a_tuned_variant_are_correct),
        cmocka_unit_test(other_layouts_opencl_starts_are_correct),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
