/* The gqa_attention CUDA seeds (every tasks/gqa_attention/cuda/NAME.cu but the
 * float64 reference): one design each, with only its own axes, small
 * enough for an LLM prompt, and each compiling for Hopper (sm_90a) through
 * the harness's own compile path, with the task headers on the include
 * path, at its seed point and with every axis at its last listed value.
 * Without nvcc the compiles skip with a message; a GPU is never needed
 * (bench/gqa_flagship_h200.sh runs them). */
#include "kernel/compile.h"
#include "kernel/tasks.h"
#include "mutate/blocks.h"
#include "mutate/mutator.h"
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

#include "test_tune_seeds.h"

#define PREFIX "gqa_attention/cuda/"
/* Mutable text a seed may hold: an LLM prompt keeps the parent and its
 * inspirations within the default budget with room to spare. */
#define MAX_MUTABLE_BYTES 20000

static char g_cache[] = "/tmp/kv_test_gqa_seeds_XXXXXX";

/* The embedded names of the seeds, NULL-terminated (static). */
static const char **seed_names(void)
{
    static const char *names[32];
    size_t n = 0;
    const char *name;
    for (size_t i = 0; (name = kv_embedded_name(i)) && n + 1 < 32; i++) {
        size_t len = strlen(name);
        if (strncmp(name, PREFIX, strlen(PREFIX)) == 0 && len > 3 &&
            strcmp(name + len - 3, ".cu") == 0 && !strstr(name, "reference_f64"))
            names[n++] = name;
    }
    names[n] = NULL;
    return names;
}

static void the_task_has_one_seed_per_design_and_the_naive_baseline(void **state)
{
    (void)state;
    static const char *const expected[] = {"naive.cu",        "decode_halfwarp.cu",
                                           "decode_split.cu", "decode_cluster.cu",
                                           "prefill_fa2.cu",  "prefill_hopper.cu"};
    const char **names = seed_names();
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        int found = 0;
        for (size_t k = 0; names[k]; k++)
            found |= strcmp(names[k] + strlen(PREFIX), expected[i]) == 0;
        if (!found) fail_msg("seed %s%s is not embedded", PREFIX, expected[i]);
    }
    const kv_task *t = kv_task_find("gqa_attention");
    assert_non_null(t);
    assert_string_equal(kv_backend_source_for(kv_backend_find("cuda"), t->baselines),
                        PREFIX "naive.cu");
}

/* Every seed declares its axes (each at one of its own values) inside one
 * EVOLVE-BLOCK that stays well under a prompt's budget. */
static void every_seed_declares_its_axes_in_prompt_sized_mutable_text(void **state)
{
    (void)state;
    for (const char **n = seed_names(); *n; n++) {
        const char *src = kv_embedded_text(*n);
        kv_blocks b;
        char *err = NULL;
        if (kv_blocks_find(src, &b, &err) != 0) fail_msg("%s: %s", *n, err);
        if (b.whole_file || b.n != 1) fail_msg("%s: want one EVOLVE-BLOCK, found %zu", *n, b.n);
        size_t mutable_bytes = b.blocks[0].end - b.blocks[0].start;
        if (mutable_bytes > MAX_MUTABLE_BYTES)
            fail_msg("%s: %zu bytes of mutable text (at most %d)", *n, mutable_bytes,
                     MAX_MUTABLE_BYTES);
        kv_blocks_free(&b);
        assert_axes_at_listed_values(*n, src, 1);
    }
}

static void compile_or_fail(const char *what, const char *src)
{
    kv_compiled c;
    char *err = NULL;
    int rc = kv_compile(kv_backend_find("cuda"), src, g_cache, "sm_90a", &c, &err);
    if (rc != 0)
        fail_msg("nvcc failed on %s (%d): %s %.4000s", what, rc, err ? err : "",
                 c.log ? c.log : "");
    assert_true(kv_is_file(c.lib_path));
    assert_true(json_integer_value(json_object_get(c.resources, "registers")) > 0);
    kv_compiled_clear(&c);
}

static void every_seed_compiles_for_hopper_at_its_seed_point_and_far_corner(void **state)
{
    (void)state;
    char *nvcc = kv_find_nvcc();
    if (!nvcc) {
        fprintf(stderr, "SKIP: nvcc not found: the gqa seeds are not compiled here\n");
        skip();
    }
    free(nvcc);
    for (const char **n = seed_names(); *n; n++) {
        compile_or_fail(*n, kv_embedded_text(*n));
        char *far = tune_corner(kv_embedded_text(*n), 1);
        char *what = kv_asprintf("%s (every axis at its last value)", *n);
        compile_or_fail(what, far);
        free(what);
        free(far);
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
        cmocka_unit_test(the_task_has_one_seed_per_design_and_the_naive_baseline),
        cmocka_unit_test(every_seed_declares_its_axes_in_prompt_sized_mutable_text),
        cmocka_unit_test(every_seed_compiles_for_hopper_at_its_seed_point_and_far_corner),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
