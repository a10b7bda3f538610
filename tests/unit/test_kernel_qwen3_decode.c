/* Qwen3's decoder layer for decode steps as fused tasks (issue 43):
 * qwen3_decode_qkv (input RMSNorm, q/k/v projections, q/k norms, rotary,
 * the k/v cache write), qwen3_decode_o (output projection + residual) and
 * qwen3_decode_mlp (post-attention RMSNorm, gate/up, SwiGLU, down +
 * residual), with the attention between them, qwen3_decode_attn (the new
 * tokens over the static cache, the lengths from the device), and
 * qwen3_decode_post (o, then the MLP on its sum, as one block). Their
 * float64 references compute the layer's maths (checked by hand on tiny
 * shapes) and write no cache row but the new tokens'; the tasks carry
 * Qwen3-0.6B's and Qwen3-14B's shapes and odd held-out ones; the naive cpu
 * starts are accepted by the harness (0.6B scenarios and every held-out
 * shape, correctness only); the CUDA seeds declare their tune axes at
 * listed values and compile for Hopper at their seed point and their last
 * values. */
#include "kernel/compile.h"
#include "kernel/harness.h"
#include "judge/tasks.h"
#include "util/buf.h"
#include "util/fs.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_tune_seeds.h"

static char g_cache[] = "/tmp/kv_test_kernel_qwen3_decode_XXXXXX";

static double silu(double g)
{
    return g / (1.0 + exp(-g));
}

static void o_adds_the_residual_to_the_projection(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("qwen3_decode_o");
    assert_non_null(t);
    int64_t s[KV_MAX_SYMS] = {2, 3, 2}; /* tokens, inner, hidden */
    double attn[6] = {1, 2, 3, -1, 0, 1}, wo[6] = {1, 0, 0, 0.5, 0.5, 0.5},
           res[4] = {10, 20, 30, 40};
    double out[4];
    double *ts[4] = {attn, wo, res, out};
    t->reference(s, ts);
    double want[4] = {10 + 1, 20 + 3, 30 - 1, 40 + 0};
    for (int i = 0; i < 4; i++)
        assert_true(fabs(out[i] - want[i]) < 1e-12);
}

static void mlp_normalises_then_gates_and_adds_the_residual(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("qwen3_decode_mlp");
    assert_non_null(t);
    int64_t s[KV_MAX_SYMS] = {1, 2, 2}; /* tokens, hidden, inter */
    double x[2] = {3, 4}, ln[2] = {1, 2}, wg[4] = {1, 0, 0, 1}, wu[4] = {1, 1, 2, 0},
           wd[4] = {1, 0, 1, -1}, act[2], out[2];
    double *ts[7] = {x, ln, wg, wu, wd, act, out};
    t->reference(s, ts);
    double r = 1.0 / sqrt((9.0 + 16.0) / 2.0 + 1e-6), h0 = 3 * r, h1 = 4 * r * 2;
    double a0 = silu(h0) * (h0 + h1), a1 = silu(h1) * (2 * h0);
    assert_true(fabs(act[0] - a0) < 1e-12 && fabs(act[1] - a1) < 1e-12);
    assert_true(fabs(out[0] - (3 + a0)) < 1e-12 && fabs(out[1] - (4 + a0 - a1)) < 1e-12);
}

/* qwen3_decode_post is qwen3_decode_o then qwen3_decode_mlp on o's out:
 * its mid is o's out, its act and out the MLP's on mid, and out's error
 * scale holds mid's (the residual carried through) beside the MLP's. */
static void post_is_o_then_the_mlp_on_its_sum(void **state)
{
    (void)state;
    const kv_task *post = kv_task_find("qwen3_decode_post"), *o = kv_task_find("qwen3_decode_o"),
                  *mlp = kv_task_find("qwen3_decode_mlp");
    assert_non_null(post);
    assert_int_equal(post->num_tensors, 10);
    int64_t sp[KV_MAX_SYMS] = {2, 3, 2, 3}, so[KV_MAX_SYMS] = {2, 3, 2},
            sm[KV_MAX_SYMS] = {2, 2, 3};
    double attn[6] = {1, 2, 3, -1, 0, 1}, wo[6] = {1, 0, 0, 0.5, 0.5, 0.5}, res[4] = {1, 2, 3, 4};
    double ln[2] = {1, 2}, wg[6] = {1, 0, 0, 1, 1, 1}, wu[6] = {1, 1, 2, 0, 0, -1},
           wd[6] = {1, 0, 1, -1, 0.5, 2};
    double mid[4], act[6], out[4], sc[10][6], o_out[4], m_act[6], m_out[4], m_sc[2][6];
    double *tp[10] = {attn, wo, res, ln, wg, wu, wd, mid, act, out};
    double *scp[10] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, sc[7], sc[8], sc[9]};
    post->reference_scale(sp, tp, scp);
    double *to[4] = {attn, wo, res, o_out};
    o->reference(so, to);
    double *tm[7] = {o_out, ln, wg, wu, wd, m_act, m_out};
    double *scm[7] = {NULL, NULL, NULL, NULL, NULL, m_sc[0], m_sc[1]};
    mlp->reference_scale(sm, tm, scm);
    for (int i = 0; i < 4; i++) {
        assert_true(fabs(mid[i] - o_out[i]) < 1e-12 && fabs(out[i] - m_out[i]) < 1e-12);
        assert_true(sc[9][i] >= m_sc[1][i] + fabs(mid[i]) - 1e-12);
    }
    for (int i = 0; i < 6; i++)
        assert_true(fabs(act[i] - m_act[i]) < 1e-12 && fabs(sc[8][i] - m_sc[0][i]) < 1e-12);
    /* its roofline is the two blocks' weights: 0.6B's 23 MB */
    kv_roofline r = post->roofline(post->scenarios[0].syms);
    assert_true(r.bytes > 2.0 * (2048.0 + 3 * 3072.0) * 1024 && r.bytes < 2.4e7);
}

/* One token, one q head and one kv head of head_dim 2, hidden 2: q and k
 * normalised over the head and rotated by (cos, sin); v as projected; the
 * cache rows but the token's are left as they were. */
static void qkv_norms_rotates_and_writes_only_the_tokens_cache_row(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("qwen3_decode_qkv");
    assert_non_null(t);
    assert_int_equal(t->num_tensors, 13);
    assert_int_equal(t->tensors[11].role, KV_INOUT);
    assert_int_equal(t->tensors[12].role, KV_INOUT);
    /* batch, q_len, hidden, q_heads, kv_heads, head_dim, cache_len, starts */
    int64_t s[KV_MAX_SYMS] = {1, 1, 2, 1, 1, 2, 3, 3};
    double x[2] = {1, 1}, ln[2] = {1, 1}, wq[4] = {2, 0, 0, 1}, wk[4] = {1, 0, 0, 3},
           wv[4] = {1, 1, 1, -1}, qn[2] = {1, 1}, kn[2] = {1, 2}, cs[2] = {0.6, 0.6},
           sn[2] = {0.8, 0.8}, start[1] = {1}, q[2];
    double kc[6] = {7, 7, 7, 7, 7, 7}, vc[6] = {5, 5, 5, 5, 5, 5};
    double *ts[13] = {x, ln, wq, wk, wv, qn, kn, cs, sn, start, q, kc, vc};
    t->reference(s, ts);
    double h = 1.0 / sqrt(1.0 + 1e-6); /* x normalised: both values */
    /* q: p = (2h, h), normed, rotated: (r0 c - r1 s, r1 c + r0 s) */
    double p0 = 2 * h, p1 = h, rq = sqrt((p0 * p0 + p1 * p1) / 2 + 1e-6);
    double r0 = p0 / rq, r1 = p1 / rq;
    assert_true(fabs(q[0] - (r0 * 0.6 - r1 * 0.8)) < 1e-12);
    assert_true(fabs(q[1] - (r1 * 0.6 + r0 * 0.8)) < 1e-12);
    /* k: p = (h, 3h), k_norm (1, 2), into row 1 */
    double k0 = h, k1 = 3 * h, rk = sqrt((k0 * k0 + k1 * k1) / 2 + 1e-6);
    double n0 = k0 / rk, n1 = 2 * k1 / rk;
    assert_true(fabs(kc[2] - (n0 * 0.6 - n1 * 0.8)) < 1e-12);
    assert_true(fabs(kc[3] - (n1 * 0.6 + n0 * 0.8)) < 1e-12);
    assert_true(fabs(vc[2] - 2 * h) < 1e-12 && fabs(vc[3]) < 1e-12);
    for (int i = 0; i < 6; i++)
        if (i != 2 && i != 3) assert_true(kc[i] == 7 && vc[i] == 5);
}

/* The attention block: each new token sees the cache rows up to its own
 * (first = cache_len - free - q_len), never a free row; q = 0 gives the
 * plain mean of the rows it sees, and a q along one key picks it out. */
static void attn_sees_its_rows_and_no_free_one(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("qwen3_decode_attn");
    assert_non_null(t);
    /* batch 1, q_len 2, q heads 2, kv heads 1, head_dim 2, cache_len 5, bound 3 */
    int64_t s[KV_MAX_SYMS] = {1, 2, 2, 1, 2, 5, 3};
    double q[8] = {0, 0, 0, 0, 40, 0, 0, 0}; /* token 1, head 0 looks along k row 2 */
    double k[10] = {0, 0, 0, 0, 1, 0, 0, 0, 1e6, 1e6};
    double v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 1e6, -1e6};
    double fr[1] = {1}; /* row 4 free: the tokens sit at rows 2 and 3 */
    double o[8], sc[8];
    double *ts[5] = {q, k, v, fr, o}, *scales[5] = {NULL, NULL, NULL, NULL, sc};
    t->reference_scale(s, ts, scales);
    /* token 0 (row 2) sees rows 0..2: the mean; token 1 (row 3) head 1 sees 0..3 */
    assert_true(fabs(o[0] - 3.0) < 1e-12 && fabs(o[1] - 4.0) < 1e-12);
    assert_true(fabs(o[2] - 3.0) < 1e-12 && fabs(o[3] - 4.0) < 1e-12);
    assert_true(fabs(o[4] - 5.0) < 1e-6 && fabs(o[5] - 6.0) < 1e-6); /* row 2 picked out */
    assert_true(fabs(o[6] - 4.0) < 1e-12 && fabs(o[7] - 5.0) < 1e-12);
    assert_true(fabs(sc[0] - 3.0) < 1e-12); /* sum p |v| / sum p */
    /* A full cache when timed: the bound 1 of every scenario, its roofline
     * every row read; the held-out shapes draw rows down to the tokens'. */
    for (int i = 0; i < t->num_scenarios; i++) {
        const int64_t *x = t->scenarios[i].syms;
        assert_int_equal(x[6], 1);
        kv_roofline r = t->roofline(x);
        assert_true(r.bytes >= 4.0 * (double)(x[0] * x[3] * x[5] * x[4]));
    }
    for (int i = 0; i < t->num_held_out; i++) {
        const int64_t *x = t->held_out[i].syms;
        assert_true(x[6] > 1 && x[6] <= x[5] - x[1] + 1);
    }
    assert_string_equal(t->derived[6], "s[5] - s[1] + 1");
}

static void tasks_have_qwen3_shapes_and_odd_held_out_ones(void **state)
{
    (void)state;
    const kv_task *qkv = kv_task_find("qwen3_decode_qkv"), *o = kv_task_find("qwen3_decode_o"),
                  *mlp = kv_task_find("qwen3_decode_mlp");
    assert_non_null(qkv);
    assert_non_null(o);
    assert_non_null(mlp);
    int model[2] = {0}, multi = 0; /* 0.6B, 14B; a step of several tokens */
    for (int i = 0; i < qkv->num_scenarios; i++) {
        const int64_t *s = qkv->scenarios[i].syms;
        assert_true(s[4] == 8 && s[5] == 128 && s[1] <= 8);
        model[0] |= s[2] == 1024 && s[3] == 16;
        model[1] |= s[2] == 5120 && s[3] == 40;
        multi |= s[1] > 1;
    }
    assert_true(model[0] && model[1] && multi);
    /* starts, the bound below which the judge draws the cache rows, is in
     * no input's shape: the task's rule gives it (an export's operator
     * uses it), and every shape obeys the rule. */
    assert_string_equal(qkv->derived[7], "s[6] - s[1] + 1");
    for (int i = 0; i < qkv->num_scenarios + qkv->num_held_out; i++) {
        const kv_shape *sh =
            i < qkv->num_scenarios ? &qkv->scenarios[i] : &qkv->held_out[i - qkv->num_scenarios];
        assert_true(sh->syms[7] == sh->syms[6] - sh->syms[1] + 1);
    }
    int odd = 0;
    for (int i = 0; i < qkv->num_held_out; i++)
        odd |= qkv->held_out[i].syms[2] % 8 != 0 && qkv->held_out[i].syms[5] != 128;
    assert_true(odd);
    /* The seeds' one-token path (XREG: one token, a hidden size 256
     * divides) is checked on a shape no candidate is timed at. */
    int one_token[2] = {0};
    for (int i = 0; i < qkv->num_held_out; i++) {
        const int64_t *s = qkv->held_out[i].syms;
        one_token[0] |= s[0] * s[1] == 1 && s[2] % 256 == 0 && s[2] != 1024;
    }
    for (int i = 0; i < mlp->num_held_out; i++) {
        const int64_t *s = mlp->held_out[i].syms;
        one_token[1] |= s[0] == 1 && s[1] % 256 == 0 && s[1] != 1024;
    }
    assert_true(one_token[0] && one_token[1]);
    int inter[2] = {0};
    for (int i = 0; i < mlp->num_scenarios; i++) {
        inter[0] |= mlp->scenarios[i].syms[1] == 1024 && mlp->scenarios[i].syms[2] == 3072;
        inter[1] |= mlp->scenarios[i].syms[1] == 5120 && mlp->scenarios[i].syms[2] == 17408;
    }
    assert_true(inter[0] && inter[1]);
    int wide = 0;
    for (int i = 0; i < o->num_scenarios; i++)
        wide |= o->scenarios[i].syms[1] == 5120 && o->scenarios[i].syms[2] == 5120;
    assert_true(wide);
    /* A roofline counts the weights read once: 0.6B's qkv moves its 8 MB. */
    kv_roofline r = qkv->roofline(qkv->scenarios[0].syms);
    assert_true(r.bytes > 2.0 * (16 + 16) * 128 * 1024 && r.bytes < 2.0 * 33 * 128 * 1024);
}

static void naive_starts_are_correct(void **state)
{
    (void)state;
    static const char *const tasks[] = {"qwen3_decode_qkv", "qwen3_decode_o", "qwen3_decode_mlp",
                                        "qwen3_decode_attn", "qwen3_decode_post"};
    static const char *const files[] = {"qkv_naive.c", "o_naive.c", "mlp_naive.c", "attn_naive.c",
                                        "post_naive.c"};
    static const char *const scen[][3] = {{"q06b_b1", "q06b_q8", "q06b_b8"},
                                          {"o06b_t1", "o06b_t8", NULL},
                                          {"m06b_t1", "m06b_t8", NULL},
                                          {"a06b_b1_l1k", NULL, NULL},
                                          {"p06b_t1", NULL, NULL}};
    for (int k = 0; k < 5; k++) {
        char *path = kv_asprintf("%s/tasks/qwen3_decode/cpu/%s", getenv("KV_SOURCE_DIR"), files[k]);
        kv_job o;
        kv_job_init(&o);
        o.self_exe = getenv("KV_BINARY");
        o.task = tasks[k];
        o.backend = "cpu";
        o.candidate = path;
        o.quick = 1;
        o.stage = 1;
        o.cache_dir = g_cache;
        o.scenarios = scen[k];
        o.n_scenarios = scen[k][2] ? 3 : scen[k][1] ? 2 : 1;
        json_t *res = NULL;
        char *err = NULL;
        if (kv_kernel_eval(&o, &res, &err) != 0) fail_msg("%s: %s", tasks[k], err ? err : "?");
        const json_t *a = json_object_get(res, "artifacts");
        const char *why = json_string_value(json_object_get(a, "reason"));
        if (why)
            fail_msg("%s's naive start rejected: %s: %s", tasks[k], why,
                     json_string_value(json_object_get(a, "reason_detail")));
        json_decref(res);
        free(path);
    }
}

static void cuda_seeds_declare_their_axes_and_compile_for_hopper(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        "qwen3_decode/cuda/qkv_cluster.cu",  "qwen3_decode/cuda/o_fused.cu",
        "qwen3_decode/cuda/mlp_fused.cu",    "qwen3_decode/cuda/attn_split.cu",
        "qwen3_decode/cuda/attn_mma.cu",     "qwen3_decode/cuda/attn_pipe.cu",
        "qwen3_decode/cuda/attn_cluster.cu", "qwen3_decode/cuda/post_grid.cu"};
    static const char *const naive[] = {
        "qwen3_decode/cuda/qkv_naive.cu", "qwen3_decode/cuda/o_naive.cu",
        "qwen3_decode/cuda/mlp_naive.cu", "qwen3_decode/cuda/attn_naive.cu",
        "qwen3_decode/cuda/post_naive.cu"};
    static const size_t axes[] = {7, 6, 12, 6, 7, 6, 9, 12};
    for (size_t k = 0; k < 8; k++) {
        const char *src = kv_embedded_text(seeds[k]);
        if (!src) fail_msg("%s is not embedded", seeds[k]);
        assert_axes_at_listed_values(seeds[k], src, axes[k]);
    }
    char *nvcc = kv_find_nvcc();
    if (!nvcc) {
        fprintf(stderr, "SKIP: nvcc not found\n");
        skip();
    }
    free(nvcc);
    /* The naive starts, then each seed at its point and at its last values. */
    for (int k = 0; k < 21; k++) {
        const char *name = k < 5 ? naive[k] : seeds[(k - 5) / 2];
        const char *src = kv_embedded_text(name);
        assert_non_null(src);
        char *text = k < 5 || k % 2 == 1 ? kv_strdup(src) : tune_corner(src, 1);
        kv_compiled c = {0};
        char *err = NULL;
        int rc = kv_compile(kv_backend_find("cuda"), text, g_cache, "sm_90a", &c, &err);
        if (rc != 0)
            fail_msg("nvcc failed on %s (%s) (%d): %s %.4000s", name,
                     k < 5 || k % 2 == 1 ? "as written" : "last values", rc, err ? err : "",
                     c.log ? c.log : "");
        kv_compiled_clear(&c);
        free(text);
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
        cmocka_unit_test(o_adds_the_residual_to_the_projection),
        cmocka_unit_test(mlp_normalises_then_gates_and_adds_the_residual),
        cmocka_unit_test(post_is_o_then_the_mlp_on_its_sum),
        cmocka_unit_test(qkv_norms_rotates_and_writes_only_the_tokens_cache_row),
        cmocka_unit_test(attn_sees_its_rows_and_no_free_one),
        cmocka_unit_test(tasks_have_qwen3_shapes_and_odd_held_out_ones),
        cmocka_unit_test(naive_starts_are_correct),
        cmocka_unit_test(cuda_seeds_declare_their_axes_and_compile_for_hopper),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
