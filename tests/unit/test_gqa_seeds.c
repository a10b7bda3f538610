/* The gqa_attention CUDA seeds (every tasks/gqa_attention/cuda/NAME.cu but the
 * float64 reference): one design each, with only its own axes, small
 * enough for an LLM prompt, and each compiling for Hopper (sm_90a) through
 * the harness's own compile path, with the task headers on the include
 * path, at its seed point, and with every axis at its last listed value:
 * a baseline alone, a design in each of its crossed pairings (a design
 * seed's other block is a one-line call to the fixed kernels, without
 * axes, so the pairings hold every design's axes; one nvcc call fewer a
 * design keeps the suite inside its time on two cores).
 * The design seeds (all but the naive baselines) share their text outside
 * a decode and a prefill block, so that crossover gives a child one seed's
 * decode and another's prefill; every such child compiles, and no macro of
 * a decode design is a name in a prefill design (or the other way round),
 * where it would change that code unseen. Without nvcc the compiles skip
 * with a message; a GPU is never needed (bench/gqa_flagship_h200.sh runs
 * them). */
#include "export/export_text.h"
#include "kernel/compile.h"
#include "judge/tasks.h"
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

/* A seed whose design is its decode or its prefill (not a baseline). */
static int is_design(const char *name)
{
    const char *base = name + strlen(PREFIX);
    return strncmp(base, "decode_", 7) == 0 || strncmp(base, "prefill_", 8) == 0;
}

/* Every seed declares its axes (each at one of its own values) inside
 * EVOLVE-BLOCKs that stay well under a prompt's budget: one for a baseline
 * (naive.cu, window_naive.cu), a decode and a prefill block for a design. */
static void every_seed_declares_its_axes_in_prompt_sized_mutable_text(void **state)
{
    (void)state;
    for (const char **n = seed_names(); *n; n++) {
        const char *src = kv_embedded_text(*n);
        kv_blocks b;
        char *err = NULL;
        if (kv_blocks_find(src, &b, &err) != 0) fail_msg("%s: %s", *n, err);
        size_t want = is_design(*n) ? 2 : 1;
        if (b.whole_file || b.n != want)
            fail_msg("%s: want %zu EVOLVE-BLOCKs, found %zu", *n, want, b.n);
        size_t mutable_bytes = 0;
        for (size_t k = 0; k < b.n; k++)
            mutable_bytes += b.blocks[k].end - b.blocks[k].start;
        if (mutable_bytes > MAX_MUTABLE_BYTES)
            fail_msg("%s: %zu bytes of mutable text (at most %d)", *n, mutable_bytes,
                     MAX_MUTABLE_BYTES);
        kv_blocks_free(&b);
        assert_axes_at_listed_values(*n, src, 1);
    }
}

/* The seeds whose design is their decode (KIND "decode_") or their prefill
 * ("prefill_"), NULL-terminated (static). */
static const char **designs(const char *kind)
{
    static const char *names[2][32];
    const char **out = names[strcmp(kind, "decode_") != 0];
    size_t n = 0;
    for (const char **s = seed_names(); *s && n + 1 < 32; s++)
        if (strncmp(*s + strlen(PREFIX), kind, strlen(kind)) == 0) out[n++] = *s;
    out[n] = NULL;
    return out;
}

/* Block K (0: decode, 1: prefill) of design seed NAME, as offsets into its
 * text. */
static kv_block design_block(const char *name, size_t k)
{
    kv_blocks b;
    char *err = NULL;
    if (kv_blocks_find(kv_embedded_text(name), &b, &err) != 0) fail_msg("%s: %s", name, err);
    if (b.n != 2) fail_msg("%s: want a decode and a prefill block, found %zu", name, b.n);
    kv_block out = b.blocks[k];
    kv_blocks_free(&b);
    return out;
}

/* Decode seed D's text with the prefill block of prefill seed P (malloc'd). */
static char *pairing(const char *d, const char *p)
{
    const char *dt = kv_embedded_text(d), *pt = kv_embedded_text(p);
    kv_block db = design_block(d, 1), pb = design_block(p, 1);
    return kv_asprintf("%.*s%.*s%s", (int)db.start, dt, (int)(pb.end - pb.start), pt + pb.start,
                       dt + db.end);
}

/* Every decode design crosses with every prefill design: the seeds share
 * their fixed text, and crossover gives the child that takes the decode of
 * one and the prefill of the other. */
static void crossover_pairs_every_decode_design_with_every_prefill_design(void **state)
{
    (void)state;
    const char **dec = designs("decode_"), **pre = designs("prefill_");
    assert_true(dec[0] && dec[1] && pre[0] && pre[1]);
    for (const char **d = dec; *d; d++)
        for (const char **p = pre; *p; p++) {
            const char *dt = kv_embedded_text(*d), *pt = kv_embedded_text(*p);
            char *reason = NULL;
            if (kv_blocks_check_child(dt, pt, &reason) != 0)
                fail_msg("%s and %s differ outside their blocks: %s", *d, *p, reason);
            char *want = pairing(*d, *p);
            int found = 0;
            for (uint64_t seed = 0; seed < 64 && !found; seed++) {
                kv_rng rng;
                kv_rng_seed(&rng, seed);
                kv_mutation m;
                char *err = NULL;
                if (kv_mutate_crossover(dt, pt, &rng, &m, &err) != 0)
                    fail_msg("crossover of %s and %s: %s", *d, *p, err ? err : "nothing to cross");
                found = strcmp(m.source, want) == 0;
                kv_mutation_free(&m);
            }
            if (!found) fail_msg("no crossover gave %s's decode with %s's prefill", *d, *p);
            free(want);
        }
}

/* Adds the identifiers of SRC[FROM, TO) to NAMES, comments and literals
 * aside. */
static void identifiers(const char *src, size_t from, size_t to, kv_names *names)
{
    for (size_t i = from; i < to;) {
        char c = src[i];
        if (c == '/' && src[i + 1] == '/') {
            while (i < to && src[i] != '\n')
                i++;
        } else if (c == '/' && src[i + 1] == '*') {
            const char *end = strstr(src + i + 2, "*/");
            i = end ? (size_t)(end - src) + 2 : to;
        } else if (c == '"' || c == '\'') {
            for (i++; i < to && src[i] != c; i++)
                if (src[i] == '\\') i++;
            i++;
        } else if (c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
            size_t n =
                strspn(src + i, "_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789");
            if (!kv_names_has(names, src + i, n)) kv_names_add(names, src + i, n);
            i += n;
        } else {
            i++;
        }
    }
}

/* No macro one block defines (the export's own scan, kv_text_collect) is a
 * name in a block of the other kind: in a crossed child it would silently
 * change that code. */
static void no_macro_of_one_kind_is_a_name_in_the_other(void **state)
{
    (void)state;
    const char *kinds[2] = {"decode_", "prefill_"};
    for (size_t k = 0; k < 2; k++)
        for (const char **a = designs(kinds[k]); *a; a++) {
            kv_block ab = design_block(*a, k);
            char *block = kv_strndup(kv_embedded_text(*a) + ab.start, ab.end - ab.start);
            kv_names macros = {0};
            kv_text_collect(block, 1, &macros, NULL);
            for (const char **b = designs(kinds[1 - k]); *b; b++) {
                kv_names names = {0};
                kv_block bb = design_block(*b, 1 - k);
                identifiers(kv_embedded_text(*b), bb.start, bb.end, &names);
                for (size_t m = 0; m < macros.n; m++)
                    if (kv_names_has(&names, macros.v[m], strlen(macros.v[m])))
                        fail_msg("%s defines %s, a name in %s's %s block", *a, macros.v[m], *b,
                                 k ? "decode" : "prefill");
                kv_names_free(&names);
            }
            kv_names_free(&macros);
            free(block);
        }
}

/* Skips the test, saying that WHAT is not compiled, where there is no nvcc. */
static void skip_without_nvcc(const char *what)
{
    char *nvcc = kv_find_nvcc();
    if (!nvcc) {
        fprintf(stderr, "SKIP: nvcc not found: %s are not compiled here\n", what);
        skip();
    }
    free(nvcc);
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

/* Every axis of a design lies in its design's block: the other block of a
 * design seed declares none, so that the crossed pairings at their last
 * values compile every design's far corner. */
static void a_design_seeds_other_block_declares_no_axes(void **state)
{
    (void)state;
    const char *kinds[2] = {"decode_", "prefill_"};
    for (size_t k = 0; k < 2; k++)
        for (const char **d = designs(kinds[k]); *d; d++) {
            kv_block other = design_block(*d, 1 - k);
            char *text = kv_strndup(kv_embedded_text(*d) + other.start, other.end - other.start);
            if (strstr(text, "kevolve: tune"))
                fail_msg("%s declares tune axes in its %s block", *d, k ? "decode" : "prefill");
            free(text);
        }
}

static void every_seed_compiles_for_hopper_at_its_seed_point(void **state)
{
    (void)state;
    skip_without_nvcc("the gqa seeds");
    for (const char **n = seed_names(); *n; n++) {
        compile_or_fail(*n, kv_embedded_text(*n));
        if (is_design(*n)) continue; /* its far corner: in its pairings */
        char *far = tune_corner(kv_embedded_text(*n), 1);
        char *what = kv_asprintf("%s (every axis at its last value)", *n);
        compile_or_fail(what, far);
        free(what);
        free(far);
    }
}

static void every_crossed_pairing_compiles_for_hopper_at_its_last_values(void **state)
{
    (void)state;
    skip_without_nvcc("the crossed gqa seeds");
    for (const char **d = designs("decode_"); *d; d++)
        for (const char **p = designs("prefill_"); *p; p++) {
            char *pair = pairing(*d, *p);
            char *src = tune_corner(pair, 1);
            char *what =
                kv_asprintf("%s's decode with %s's prefill, every axis at its last value", *d, *p);
            compile_or_fail(what, src);
            free(pair);
            free(what);
            free(src);
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
        cmocka_unit_test(crossover_pairs_every_decode_design_with_every_prefill_design),
        cmocka_unit_test(no_macro_of_one_kind_is_a_name_in_the_other),
        cmocka_unit_test(a_design_seeds_other_block_declares_no_axes),
        cmocka_unit_test(every_seed_compiles_for_hopper_at_its_seed_point),
        cmocka_unit_test(every_crossed_pairing_compiles_for_hopper_at_its_last_values),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
