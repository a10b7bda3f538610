/* Qwen3's small kernels as tasks (issue 22). rmsnorm: the float64
 * references normalise each row by its root mean square with Qwen3's
 * epsilon and the weight (checked by hand), the fused one adds the residual
 * first and writes the sum. swiglu: silu(gate) * up over the two halves of
 * each row, the gate first. rope: each pair (i, i + D/2) of every head of
 * q and k rotated in place by its token's row of the table, the row the
 * token's position names (checked by hand). Each task is registered with
 * Qwen3's shapes and odd held-out ones; the naive starts are accepted by the harness on cpu
 * and, where PoCL is, on opencl (decode and q/k-norm scenarios and every
 * held-out shape, correctness only), and the CUDA starts compile for Hopper
 * at both ends of their axes. The vectorised CUDA seeds (cuda/vec.cu) are
 * no task's baseline, declare their axes each at one of its own values,
 * and compile for Hopper at their first and last values. */
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

static char g_cache[] = "/tmp/kv_test_kernel_qwen3_XXXXXX";

static void references_normalise_each_row_by_its_root_mean_square(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("rmsnorm"), *f = kv_task_find("rmsnorm_add");
    assert_non_null(t);
    assert_non_null(f);
    assert_int_equal(t->num_tensors, 3);
    assert_int_equal(f->num_tensors, 5);
    int64_t syms[KV_MAX_SYMS] = {2, 3};
    double x[6] = {1, 2, 2, 0, 0, 3}, w[3] = {1, 0.5, -2}, y[6];
    double *ts[3] = {x, w, y};
    t->reference(syms, ts);
    /* row 0: mean(x^2) = 3; row 1: mean = 3 */
    double s = 1.0 / sqrt(3.0 + 1e-6);
    double want[6] = {1 * s, 2 * s * 0.5, 2 * s * -2, 0, 0, 3 * s * -2};
    for (int i = 0; i < 6; i++)
        assert_true(fabs(y[i] - want[i]) < 1e-12);
    /* fused: x + residual = the rows above */
    double xa[6] = {0.5, 1, 1, -1, 0, 1}, r[6] = {0.5, 1, 1, 1, 0, 2}, ya[6], ro[6];
    double *fs[5] = {xa, r, w, ya, ro};
    f->reference(syms, fs);
    for (int i = 0; i < 6; i++) {
        assert_true(fabs(ro[i] - x[i]) < 1e-15);
        assert_true(fabs(ya[i] - want[i]) < 1e-12);
    }
    /* a row of zeros stays zero (epsilon keeps it finite) */
    double z[3] = {0, 0, 0}, yz[3];
    int64_t one[KV_MAX_SYMS] = {1, 3};
    double *zs[3] = {z, w, yz};
    t->reference(one, zs);
    for (int i = 0; i < 3; i++)
        assert_true(yz[i] == 0.0);
}

static void swiglu_reference_is_silu_of_the_gate_times_the_up(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("swiglu");
    assert_non_null(t);
    assert_int_equal(t->num_tensors, 2);
    /* two rows of three: the gate's values, then the up's */
    int64_t syms[KV_MAX_SYMS] = {2, 2, 3};
    double gu[12] = {0, 1, -2, 3, 4, 5, 10, -1, 0.5, 1, 2, -3}, out[6];
    double *ts[2] = {gu, out};
    t->reference(syms, ts);
    double want[6] = {0,
                      1 / (1 + exp(-1.0)) * 4,
                      -2 / (1 + exp(2.0)) * 5,
                      10 / (1 + exp(-10.0)) * 1,
                      -1 / (1 + exp(1.0)) * 2,
                      0.5 / (1 + exp(-0.5)) * -3};
    for (int i = 0; i < 6; i++)
        assert_true(fabs(out[i] - want[i]) < 1e-12);
    /* the gate is the first half: swapping them changes the answer */
    assert_true(fabs(out[1] - 4 / (1 + exp(-4.0)) * 1) > 0.1);
}

static void rope_rotates_each_pair_by_its_tokens_row_of_the_table(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("rope");
    assert_non_null(t);
    assert_int_equal(t->tensors[0].role, KV_INOUT);
    assert_int_equal(t->tensors[1].role, KV_INOUT);
    assert_int_equal(t->tensors[4].index_of, 5); /* pos indexes the table's rows */
    /* two tokens, one q head and one k head of four; a table of three rows */
    int64_t syms[KV_MAX_SYMS] = {2, 1, 1, 4, 3};
    double q[8] = {1, 2, 3, 4, -1, 0, 2, 5}, k[8] = {0, 1, 0, 1, 2, 2, 2, 2};
    double cs[12] = {0, 0, 0, 0, 1, 1, 1, 1, 0.5, 2, -1, 3};
    double sn[12] = {1, -1, 2, 0.5, 0, 0, 0, 0, 4, 0, 1, -2};
    double pos[2] = {2, 0}; /* token 0 takes row 2, token 1 row 0 */
    double q2[8], k2[8], sq[8], sk[8];
    memcpy(q2, q, sizeof q);
    memcpy(k2, k, sizeof k);
    double *ts[5] = {q, k, cs, sn, pos}, *ts2[5] = {q2, k2, cs, sn, pos};
    double *scales[5] = {sq, sk, NULL, NULL, NULL};
    t->reference(syms, ts);
    t->reference_scale(syms, ts2, scales);
    /* token 0, row 2: (a, b) = (1, 3) and (2, 4): x[i] = a c[i] - b s[i],
     * x[i + 2] = b c[i + 2] + a s[i + 2] */
    double want_q[8] = {1 * 0.5 - 3 * 4, 2 * 2 - 4 * 0, 3 * -1 + 1 * 1, 4 * 3 + 2 * -2,
                        /* token 1, row 0: c = 0, s = (1, -1, 2, 0.5) */
                        -1 * 0 - 2 * 1, 0 * 0 - 5 * -1, 2 * 0 + -1 * 2, 5 * 0 + 0 * 0.5};
    for (int i = 0; i < 8; i++) {
        assert_true(fabs(q[i] - want_q[i]) < 1e-12);
        assert_true(q2[i] == q[i]); /* the same values with and without scales */
    }
    assert_true(fabs(k[0] - (0 * 0.5 - 0 * 4)) < 1e-12 && fabs(k[3] - (1 * 3 + 1 * -2)) < 1e-12);
    /* the scale: the two terms' magnitudes, |a c| + |b s| */
    assert_true(fabs(sq[0] - (0.5 + 12)) < 1e-12 && fabs(sq[3] - (12 + 4)) < 1e-12);
}

static void tasks_have_qwen3_shapes_and_odd_held_out_ones(void **state)
{
    (void)state;
    const kv_task *t = kv_task_find("rmsnorm");
    int hidden[3] = {0, 0, 0};
    for (int i = 0; i < t->num_scenarios; i++) {
        int64_t h = t->scenarios[i].syms[1];
        hidden[0] |= h == 1024;
        hidden[1] |= h == 5120;
        hidden[2] |= h == 128;
    }
    assert_true(hidden[0] && hidden[1] && hidden[2]);
    for (int i = 0; i < t->num_held_out; i++) {
        int64_t h = t->held_out[i].syms[1];
        assert_true(h == 1 || h % 8 != 0 || t->held_out[i].syms[0] % 8 != 0);
    }
    /* swiglu: Qwen3-0.6B's and 14B's intermediate sizes, two halves always */
    const kv_task *sw = kv_task_find("swiglu");
    int inter[2] = {0, 0};
    for (int i = 0; i < sw->num_scenarios; i++) {
        assert_int_equal(sw->scenarios[i].syms[1], 2);
        inter[0] |= sw->scenarios[i].syms[2] == 3072;
        inter[1] |= sw->scenarios[i].syms[2] == 17408;
    }
    assert_true(inter[0] && inter[1]);
    for (int i = 0; i < sw->num_held_out; i++) {
        int64_t n = sw->held_out[i].syms[2];
        assert_int_equal(sw->held_out[i].syms[1], 2);
        assert_true(n == 1 || n % 8 != 0 || sw->held_out[i].syms[0] % 8 != 0);
    }
    /* rope: 0.6B's 16 query heads and 14B's 40 on 8 KV heads of 128; other
     * head sizes and more tokens than table rows held out */
    const kv_task *r = kv_task_find("rope");
    int heads[2] = {0, 0}, other_d = 0, repeats = 0;
    for (int i = 0; i < r->num_scenarios; i++) {
        const int64_t *s = r->scenarios[i].syms;
        assert_true(s[2] == 8 && s[3] == 128);
        heads[0] |= s[1] == 16;
        heads[1] |= s[1] == 40;
    }
    for (int i = 0; i < r->num_held_out; i++) {
        other_d |= r->held_out[i].syms[3] != 128;
        repeats |= r->held_out[i].syms[0] > r->held_out[i].syms[4];
    }
    assert_true(heads[0] && heads[1] && other_d && repeats);
}

/* Correctness of FILE on TASK (BACKEND), decode and q/k-norm scenarios. */
static json_t *eval_file(const char *task, const char *backend, const char *file, char **err)
{
    char *path = kv_asprintf("%s/%s", getenv("KV_SOURCE_DIR"), file);
    static const char *const set[] = {"decode", "qknorm"};
    kv_job o;
    kv_job_init(&o);
    o.self_exe = getenv("KV_BINARY");
    o.task = task;
    o.backend = backend;
    o.candidate = path;
    o.quick = 1;
    o.stage = 1;
    o.cache_dir = g_cache;
    o.scenarios = set;
    o.n_scenarios = strcmp(task, "rmsnorm") == 0 ? 2 : 1;
    json_t *res = NULL;
    int rc = kv_kernel_eval(&o, &res, err);
    free(path);
    return rc == 0 ? res : NULL;
}

static void naive_starts_are_correct(void **state)
{
    (void)state;
    static const char *const tasks[] = {"rmsnorm", "rmsnorm_add", "swiglu", "rope"};
    static const char *const dirs[] = {"rmsnorm", "rmsnorm", "swiglu", "rope"};
    static const char *const starts[][2] = {{"cpu", "cpu/naive.c"}, {"opencl", "opencl/naive.cl"}};
    for (size_t s = 0; s < 2; s++)
        for (size_t k = 0; k < 4; k++) {
            char *err = NULL;
            char *file = kv_asprintf("tasks/%s/%s", dirs[k], starts[s][1]);
            json_t *res = eval_file(tasks[k], starts[s][0], file, &err);
            free(file);
            if (!res && s == 1 && err && strstr(err, "no OpenCL")) {
                fprintf(stderr, "opencl skipped: %s\n", err);
                free(err);
                continue;
            }
            if (!res) fail_msg("%s on %s: %s", tasks[k], starts[s][0], err ? err : "?");
            const json_t *a = json_object_get(res, "artifacts");
            const char *why = json_string_value(json_object_get(a, "reason"));
            if (why)
                fail_msg("%s on %s rejected: %s: %s", tasks[k], starts[s][0], why,
                         json_string_value(json_object_get(a, "reason_detail")));
            json_decref(res);
        }
}

static void cuda_starts_compile_for_hopper_at_both_ends_of_their_axes(void **state)
{
    (void)state;
    char *nvcc = kv_find_nvcc();
    if (!nvcc) {
        fprintf(stderr, "SKIP: nvcc not found\n");
        skip();
    }
    free(nvcc);
    static const char *const starts[] = {"rmsnorm/cuda/naive.cu", "swiglu/cuda/naive.cu",
                                         "rope/cuda/naive.cu"};
    for (int k = 0; k < 6; k++) {
        const char *src = kv_embedded_text(starts[k / 2]);
        assert_non_null(src);
        const char *at = strstr(src, "#define THREADS 256");
        assert_non_null(at);
        kv_buf b = KV_BUF_INIT;
        kv_buf_printf(&b, "%.*s#define THREADS %s%s", (int)(at - src), src, k % 2 ? "1024" : "64",
                      at + strlen("#define THREADS 256"));
        kv_compiled c = {0};
        char *err = NULL;
        int rc = kv_compile(kv_backend_find("cuda"), b.data, g_cache, "sm_90a", &c, &err);
        if (rc != 0) fail_msg("nvcc failed (%d): %s %s", rc, err ? err : "", c.log ? c.log : "");
        kv_compiled_clear(&c);
        kv_buf_free(&b);
    }
}

static void vec_seeds_declare_their_axes_and_compile_for_hopper_at_both_ends(void **state)
{
    (void)state;
    static const char *const seeds[] = {"rmsnorm/cuda/vec.cu", "swiglu/cuda/vec.cu",
                                        "rope/cuda/vec.cu"};
    static const int axes[] = {5, 5, 3};
    static const char *const tasks[] = {"rmsnorm", "rmsnorm_add", "swiglu"};
    for (size_t k = 0; k < 3; k++) {
        const kv_task *t = kv_task_find(tasks[k]);
        assert_non_null(t);
        const char *base = kv_backend_source_for(kv_backend_find("cuda"), t->baselines);
        assert_non_null(base);
        assert_non_null(strstr(base, "naive.cu"));
    }
    for (size_t k = 0; k < 3; k++) {
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
    for (int k = 0; k < 9; k++) {
        const char *src = kv_embedded_text(seeds[k / 3]);
        char *text = k % 3 == 0 ? kv_strdup(src) : tune_corner(src, k % 3 == 2);
        kv_compiled c = {0};
        char *err = NULL;
        int rc = kv_compile(kv_backend_find("cuda"), text, g_cache, "sm_90a", &c, &err);
        if (rc != 0)
            fail_msg("nvcc failed on %s (%s) (%d): %s %.4000s", seeds[k / 3],
                     k % 3 == 0   ? "seed point"
                     : k % 3 == 1 ? "first values"
                                  : "last values",
                     rc, err ? err : "", c.log ? c.log : "");
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
        cmocka_unit_test(references_normalise_each_row_by_its_root_mean_square),
        cmocka_unit_test(swiglu_reference_is_silu_of_the_gate_times_the_up),
        cmocka_unit_test(rope_rotates_each_pair_by_its_tokens_row_of_the_table),
        cmocka_unit_test(tasks_have_qwen3_shapes_and_odd_held_out_ones),
        cmocka_unit_test(naive_starts_are_correct),
        cmocka_unit_test(cuda_starts_compile_for_hopper_at_both_ends_of_their_axes),
        cmocka_unit_test(vec_seeds_declare_their_axes_and_compile_for_hopper_at_both_ends),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
