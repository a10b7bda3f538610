/* The kernel harness on the cuda backend. Without a GPU (CI): asking for
 * cuda fails cleanly with "no CUDA device", and the task's CUDA kernels
 * compile for Hopper (sm_90a) with their register use parsed from ptxas.
 * With a GPU (bench/kernel_harness_cuda.sh on the H200): honest kernels are
 * accepted and every red-team kernel is rejected with its reason. */
#include "kernel/compile.h"
#include "kernel/harness.h"
#include "judge/tasks.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_cache[] = "/tmp/kv_test_kernel_cuda_XXXXXX";
static int g_have_gpu;

static json_t *eval_task(const char *task, const char *rel, int stage, int cpu_reference,
                         char **err)
{
    const char *root = getenv("KV_SOURCE_DIR");
    char *path = kv_asprintf("%s/%s", root ? root : ".", rel);
    kv_job o;
    kv_job_init(&o);
    o.self_exe = getenv("KV_BINARY"); /* the runners re-execute kevolve, not this test */
    o.task = task;
    o.cpu_reference = cpu_reference;
    o.backend = "cuda";
    o.candidate = path;
    o.quick = 1;
    o.stage = stage;
    o.cache_dir = g_cache;
    o.limits.call_s = 3;
    json_t *res = NULL;
    kv_kernel_eval(&o, &res, err);
    free(path);
    return res;
}

static json_t *eval_rel(const char *rel, int stage, char **err)
{
    return eval_task("softmax", rel, stage, 0, err);
}

static const char *reason(json_t *res)
{
    const char *r = json_string_value(json_object_get(json_object_get(res, "artifacts"), "reason"));
    return r ? r : "accepted";
}

static void without_a_gpu_cuda_says_no_cuda_device(void **state)
{
    (void)state;
    if (g_have_gpu) skip();
    char *err = NULL;
    json_t *res = eval_rel("tasks/softmax/cuda/baseline.cu", 0, &err);
    assert_null(res);
    assert_non_null(err);
    if (!strstr(err, "no CUDA device")) fail_msg("unexpected error: %s", err);
    free(err);
}

/* Skips the calling test where nvcc is not installed. */
static void skip_without_nvcc(void)
{
    char *nvcc = kv_find_nvcc();
    if (!nvcc) {
        fprintf(stderr, "SKIP: nvcc not found\n");
        skip();
    }
    free(nvcc);
}

static void cuda_baseline_compiles_for_hopper_with_resource_usage(void **state)
{
    (void)state;
    skip_without_nvcc();
    kv_compiled c;
    char *err = NULL;
    int rc = kv_compile(kv_backend_find("cuda"), kv_embedded_text("softmax/cuda/baseline.cu"),
                        g_cache, "sm_90a", &c, &err);
    if (rc != 0) fail_msg("nvcc failed (%d): %s %s", rc, err ? err : "", c.log ? c.log : "");
    assert_true(kv_is_file(c.lib_path));
    assert_non_null(c.resources);
    assert_true(json_integer_value(json_object_get(c.resources, "registers")) > 0);
    kv_compiled_clear(&c);
}

/* The judge's own kernels (gen, counts, the in-place output check) compile
 * for Hopper with the definitions they share with the judge's host code,
 * and export every entry the judge looks up. */
static void the_judges_kernels_compile_with_their_shared_definitions(void **state)
{
    (void)state;
    skip_without_nvcc();
    const kv_backend *b = kv_backend_find("cuda");
    kv_compiled c = {0};
    char *err = NULL;
    if (kv_compile_own(b, b->helpers, "the judge's kernels", g_cache, "sm_90a", &c, &err) != 0)
        fail_msg("%s", err ? err : "no message");
    char *cmd = kv_asprintf("nm -D '%s'", c.lib_path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    kv_buf out = KV_BUF_INIT;
    char line[512];
    while (fgets(line, sizeof line, p))
        kv_buf_printf(&out, "%s", line);
    pclose(p);
    const char *entries[] = {"kvj_gen",        "kvj_count_equal", "kvj_count_changed",
                             "kvj_count_diff", "kvj_compare",     "kvj_check"};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        char *want = kv_asprintf(" T %s\n", entries[i]);
        if (!strstr(out.data ? out.data : "", want))
            fail_msg("no %s in %s", entries[i], c.lib_path);
        free(want);
    }
    kv_buf_free(&out);
    free(cmd);
    kv_compiled_clear(&c);
}

/* SRC with `#define NAME <old>` set to `#define NAME VALUE` (one line). */
static char *set_axis(const char *src, const char *name, const char *value)
{
    char *pat = kv_asprintf("\n#define %s ", name);
    const char *at = strstr(src, pat);
    if (!at) fail_msg("no axis %s in the source", name);
    at += strlen(pat);
    size_t old = strspn(at, "0123456789");
    kv_buf b = KV_BUF_INIT;
    kv_buf_printf(&b, "%.*s%s%s", (int)(at - src), src, value, at + old);
    free(pat);
    return b.data;
}

/* The flagship's CUDA baseline compiles for Hopper at its naive point and
 * with every axis switched away from it, and so does the task's
 * double-precision GPU reference, so CI without a GPU still catches a kernel
 * that no longer builds (the other seeds: tests/unit/test_gqa_seeds.c). */
static void gqa_cuda_baseline_compiles_for_hopper_at_both_ends_of_its_axes(void **state)
{
    (void)state;
    skip_without_nvcc();
    static const char *fast[][2] = {
        {"VEC", "8"}, {"THREADS", "256"}, {"SPLIT", "0"}, {"SHARE_KV", "1"}, {"ONLINE", "1"},
    };
    const char *naive = kv_embedded_text("gqa_attention/cuda/naive.cu");
    assert_non_null(naive);
    char *src = kv_strdup(naive);
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++) {
        char *next = set_axis(src, fast[i][0], fast[i][1]);
        free(src);
        src = next;
    }
    const char *ref = kv_embedded_text(kv_task_find("gqa_attention")->reference_cuda);
    assert_non_null(ref);
    const char *texts[] = {naive, src, ref};
    static const char *names[] = {"naive", "fast point", "reference"};
    for (int i = 0; i < 3; i++) {
        kv_compiled c;
        char *err = NULL;
        int rc = kv_compile(kv_backend_find("cuda"), texts[i], g_cache, "sm_90a", &c, &err);
        if (rc != 0)
            fail_msg("nvcc failed on the %s source (%d): %s %s", names[i], rc, err ? err : "",
                     c.log ? c.log : "");
        assert_true(kv_is_file(c.lib_path));
        assert_true(json_integer_value(json_object_get(c.resources, "registers")) > 0);
        kv_compiled_clear(&c);
    }
    free(src);
}

static void ptxas_report_is_parsed_into_features(void **state)
{
    (void)state;
    const char *log = "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 380 "
                      "bytes cmem[0]\nptxas info    : 8 bytes stack frame, 4 bytes spill stores, 4 "
                      "bytes spill loads\nptxas info    : Used 18 registers, 0 bytes smem\n";
    json_t *r = kv_parse_ptxas(log);
    assert_non_null(r);
    assert_int_equal(json_integer_value(json_object_get(r, "registers")), 40);
    assert_int_equal(json_integer_value(json_object_get(r, "shared_bytes")), 1024);
    assert_int_equal(json_integer_value(json_object_get(r, "spill_bytes")), 8);
    json_decref(r);
    assert_null(kv_parse_ptxas("no report here"));
}

static void on_a_gpu_honest_kernels_pass_and_red_team_fails(void **state)
{
    (void)state;
    if (!g_have_gpu) skip();
    static const char *honest[] = {"tasks/softmax/cuda/baseline.cu", "tasks/softmax/cuda/fast.cu"};
    for (int i = 0; i < 2; i++) {
        char *err = NULL;
        json_t *res = eval_rel(honest[i], 0, &err);
        if (!res) fail_msg("%s: %s", honest[i], err);
        if (strcmp(reason(res), "accepted") != 0)
            fail_msg("%s rejected: %s", honest[i], reason(res));
        json_decref(res);
    }
    static const char *red[][2] = {
        {"stale_output", "stale_or_unwritten_output"},
        {"partial", "stale_or_unwritten_output"},
        {"writes_input", "input_modified"},
        {"cache_by_pointer", "result_cached_across_calls"},
        /* Another stream of the same context is no hiding place: the judge's
         * clock runs until the runner's whole context is idle, so its work is
         * timed; the candidate passes, slower or not. */
        {"own_stream", "accepted"},
        {"hang", "timeout"},
        {"out_of_bounds", "out_of_bounds_write"},
        {"illegal_address", "illegal_address"},
        {"tuned_shapes_only", "wrong_on_held_out_shape"},
        {"nondeterministic", "nondeterministic"},
        {"misaligned_address", "misaligned_address"},
        {"out_of_memory", "out_of_memory"},
        {"out_of_resources", "out_of_resources"},
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof red / sizeof red[0]; i++) {
        char *rel = kv_asprintf("tests/data/kernels/cuda/%s.cu", red[i][0]);
        char *err = NULL;
        json_t *res = eval_rel(rel, 1, &err);
        const char *got = res ? reason(res) : err;
        if (!res || strcmp(got, red[i][1]) != 0) {
            fprintf(stderr, "red team %s: want %s, got %s\n", red[i][0], red[i][1], got);
            failures++;
        }
        if (res) json_decref(res);
        free(err);
        free(rel);
    }
    assert_int_equal(failures, 0);
}

/* On a GPU the gqa scenarios take their reference from the GPU, and every
 * evaluation compares it with the CPU's on the held-out shapes (any
 * disagreement is a harness error): the naive start is accepted, and so it
 * is with the CPU reference everywhere (--cpu-reference). */
static void on_a_gpu_the_gqa_device_reference_agrees_with_the_cpu(void **state)
{
    (void)state;
    if (!g_have_gpu) skip();
    for (int cpu_reference = 0; cpu_reference < 2; cpu_reference++) {
        char *err = NULL;
        json_t *res = eval_task("gqa_attention_small", "tasks/gqa_attention/cuda/naive.cu", 0,
                                cpu_reference, &err);
        if (!res) fail_msg("harness failed: %s", err);
        if (strcmp(reason(res), "accepted") != 0) {
            const char *d = json_string_value(
                json_object_get(json_object_get(res, "artifacts"), "reason_detail"));
            fail_msg("naive gqa rejected (cpu_reference %d): %s: %s", cpu_reference, reason(res),
                     d ? d : "");
        }
        json_decref(res);
    }
}

static int setup(void **state)
{
    (void)state;
    json_t *info = NULL;
    char *err = NULL;
    g_have_gpu = kv_kernel_devices("cuda", &info, &err) == 0;
    if (!g_have_gpu) fprintf(stderr, "no GPU here (%s): GPU tests skip\n", err);
    free(err);
    if (info) json_decref(info);
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
        cmocka_unit_test(without_a_gpu_cuda_says_no_cuda_device),
        cmocka_unit_test(cuda_baseline_compiles_for_hopper_with_resource_usage),
        cmocka_unit_test(the_judges_kernels_compile_with_their_shared_definitions),
        cmocka_unit_test(gqa_cuda_baseline_compiles_for_hopper_at_both_ends_of_its_axes),
        cmocka_unit_test(ptxas_report_is_parsed_into_features),
        cmocka_unit_test(on_a_gpu_honest_kernels_pass_and_red_team_fails),
        cmocka_unit_test(on_a_gpu_the_gqa_device_reference_agrees_with_the_cpu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
