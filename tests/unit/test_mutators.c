/* Tests of the built-in mutators (tune, gi, crossover): they change only
 * mutable text, in the ways they promise, reproducibly from the seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mutate/blocks.h"
#include "mutate/mutator.h"
#include "mutate/tune.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const C_SRC = "#include <stdio.h>\n"                                 /* 1 */
                                 "#define N 1024\n"                                     /* 2 */
                                 "// EVOLVE-BLOCK-START\n"                              /* 3 */
                                 "#define VEC 4  // kevolve: tune 1 2 4 8\n"            /* 4 */
                                 "const int TILE = 16; // kevolve: tune range 8 64 8\n" /* 5 */
                                 "static int f(int x)\n"                                /* 6 */
                                 "{\n"                                                  /* 7 */
                                 "    int y = x * VEC;\n"                               /* 8 */
                                 "\n"                                                   /* 9 */
                                 "    y += TILE;\n"                                     /* 10 */
                                 "    return y;\n"                                      /* 11 */
                                 "}\n"                                                  /* 12 */
                                 "// EVOLVE-BLOCK-END\n"                                /* 13 */
                                 "int main(void) { return f(N); } // kevolve: tune 1 2\n"
                                 "// EVOLVE-BLOCK-START\n"
                                 "static int g(int x) { return x + 1; }\n"
                                 "#define SPLIT 1 /* kevolve: tune 1 2 4 8 16 */\n"
                                 "// EVOLVE-BLOCK-END\n";

static const char *const PY_SRC = "import numpy as np\n"
                                  "# EVOLVE-BLOCK-START\n"
                                  "BLOCK = 64  # kevolve: tune 32 64 128 256\n"
                                  "USE_SHARED = False  # kevolve: tune True False\n"
                                  "def kernel(x):\n"
                                  "    y = x * 2\n"
                                  "    if USE_SHARED:\n"
                                  "        y = y + 1\n"
                                  "    return y[:BLOCK]\n"
                                  "# EVOLVE-BLOCK-END\n"
                                  "def run(x):\n"
                                  "    return kernel(x)\n";

static const char *const LUA_SRC = "local M = {}\n"
                                   "-- EVOLVE-BLOCK-START\n"
                                   "local threads = 128 -- kevolve: tune 64 128 256\n"
                                   "function M.step(x)\n"
                                   "  local y = x + threads\n"
                                   "  return y * 2\n"
                                   "end\n"
                                   "-- EVOLVE-BLOCK-END\n"
                                   "return M\n";

static const char *const CL_SRC = "/* fixed prologue */\n"
                                  "/* EVOLVE-BLOCK-START */\n"
                                  "#define WG 64 /* kevolve: tune pow2 16 256 */\n"
                                  "__kernel void k(__global float *a) {\n"
                                  "    int i = get_global_id(0);\n"
                                  "    a[i] = a[i] * 2.0f;\n"
                                  "}\n"
                                  "/* EVOLVE-BLOCK-END */\n"
                                  "/* EVOLVE-BLOCK-START */\n"
                                  "/* EVOLVE-BLOCK-END */\n"
                                  "/* fixed epilogue */";

static const char *const WHOLE_SRC = "x = 3  # kevolve: tune 1 2 3 4\n"
                                     "y = x * 2\n"
                                     "print(y)";

#define NSAMPLES 5
static const char *const SAMPLES[NSAMPLES] = {C_SRC, PY_SRC, LUA_SRC, CL_SRC, WHOLE_SRC};

/* Lines of S as malloc'd strings; returns the count. */
static size_t split_lines(const char *s, char ***out)
{
    size_t n = 0;
    *out = NULL;
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        *out = realloc(*out, (n + 1) * sizeof **out);
        (*out)[n++] = strndup(s, len);
        s += len + (nl != NULL);
    }
    return n;
}

static void free_lines(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

static void assert_passes_block_check(const char *parent, const char *child)
{
    char *reason = NULL;
    int rc = kv_blocks_check_child(parent, child, &reason);
    if (rc != 0) fail_msg("child rejected: %s\n--- child ---\n%s", reason, child);
}

/* The parameter of PARAMS (from kv_tune_parameters) on line LINE, or NULL. */
static json_t *param_on_line(json_t *params, int line)
{
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p)
    {
        if (json_integer_value(json_object_get(p, "line")) == line) return p;
    }
    return NULL;
}

static int in_choices(json_t *p, const char *value)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(p, "choices"), i, c)
    {
        if (strcmp(json_string_value(c), value) == 0) return 1;
    }
    return 0;
}

static void tune_changes_one_to_three_annotated_values_to_allowed_ones(void **state)
{
    (void)state;
    json_t *before = kv_tune_parameters(C_SRC);
    assert_non_null(before);
    assert_int_equal(json_array_size(before), 3); /* line 14's annotation is outside the blocks */
    char **pl;
    size_t pn = split_lines(C_SRC, &pl);
    int moves[4] = {0};
    for (uint64_t seed = 0; seed < 200; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_tune(C_SRC, &rng, &m, &err), 0);
        char **cl;
        size_t cn = split_lines(m.source, &cl);
        assert_int_equal(cn, pn);
        json_t *after = kv_tune_parameters(m.source);
        int changed = 0;
        for (size_t i = 0; i < pn; i++) {
            if (strcmp(pl[i], cl[i]) == 0) continue;
            changed++;
            json_t *old = param_on_line(before, (int)i + 1);
            assert_non_null(old);
            json_t *now = param_on_line(after, (int)i + 1);
            const char *v = json_string_value(json_object_get(now, "value"));
            assert_true(in_choices(old, v));
            assert_string_not_equal(v, json_string_value(json_object_get(old, "value")));
            /* The summary names every axis moved, as "NAME OLD -> NEW (line N)". */
            char expect[128];
            snprintf(expect, sizeof expect, "%s %s -> %s (line %zu)",
                     json_string_value(json_object_get(old, "name")),
                     json_string_value(json_object_get(old, "value")), v, i + 1);
            if (!strstr(m.summary, expect)) fail_msg("\"%s\" lacks \"%s\"", m.summary, expect);
        }
        assert_true(kv_starts_with(m.summary, "tune: "));
        assert_true(changed >= 1 && changed <= 3);
        /* One "; " between the moves. */
        int parts = 1;
        for (const char *q = m.summary; (q = strstr(q, "; ")); q += 2)
            parts++;
        assert_int_equal(parts, changed);
        moves[changed]++;
        json_decref(after);
        free_lines(cl, cn);
        kv_mutation_free(&m);
    }
    /* About half the moves change one axis, the others two or three. */
    assert_true(moves[1] > 60 && moves[1] < 140);
    assert_true(moves[2] > 25);
    assert_true(moves[3] > 15);
    free_lines(pl, pn);
    json_decref(before);
}

/* A restart draws every axis anew, uniformly among its values, and says so;
 * with one value per axis there is nothing to restart. */
static void tune_restart_draws_every_axis_uniformly(void **state)
{
    (void)state;
    const char *src = "#define T 8 // kevolve: tune 1 2 3 4 5 6 7 8\n"
                      "#define U 1 // kevolve: tune 1 2\n";
    int seen[9] = {0}, total = 800;
    for (uint64_t seed = 0; seed < (uint64_t)total; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        int rc = kv_mutate_tune_restart(src, &rng, &m, &err);
        int t = atoi(src + strlen("#define T "));
        if (rc == 1) { /* the parent's point drawn again */
            free(err);
            seen[t]++;
            continue;
        }
        assert_int_equal(rc, 0);
        assert_true(kv_starts_with(m.summary, "tune restart: "));
        t = atoi(m.source + strlen("#define T "));
        assert_true(t >= 1 && t <= 8);
        seen[t]++;
        kv_mutation_free(&m);
    }
    for (int v = 1; v <= 8; v++) /* 100 expected each */
        assert_true(seen[v] > 60 && seen[v] < 140);
    kv_rng rng;
    kv_rng_seed(&rng, 1);
    kv_mutation m;
    char *err = NULL;
    assert_int_equal(kv_mutate_tune_restart("#define T 8 // kevolve: tune 8\n", &rng, &m, &err), 1);
    free(err);
}

static void tune_range_form(void **state)
{
    (void)state;
    json_t *params = kv_tune_parameters("const int TILE = 16; // kevolve: tune range 8 64 8\n"
                                        "int W = 4; // kevolve: tune pow2 3 40\n"
                                        "int R = 2; // kevolve: tune range 1 3\n");
    assert_non_null(params);
    assert_int_equal(json_array_size(params), 3);
    char *text = kv_json_dumps(params);
    assert_non_null(
        strstr(text, "\"choices\":[\"8\",\"16\",\"24\",\"32\",\"40\",\"48\",\"56\",\"64\"]"));
    assert_non_null(strstr(text, "\"choices\":[\"4\",\"8\",\"16\",\"32\"]"));
    assert_non_null(strstr(text, "\"choices\":[\"1\",\"2\",\"3\"]"));
    free(text);
    json_decref(params);

    kv_mutation m;
    char *err = NULL;
    kv_rng rng;
    kv_rng_seed(&rng, 1);
    assert_int_equal(kv_mutate_tune("x = 1 # kevolve: tune range 5 1\n", &rng, &m, &err), -1);
    assert_non_null(strstr(err, "line 1"));
    free(err);
}

static void tune_moves_mostly_to_neighbouring_values(void **state)
{
    (void)state;
    const char *src = "T = 32  # kevolve: tune range 8 64 8\n";
    int neighbour = 0, total = 300;
    for (int seed = 0; seed < total; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, (uint64_t)seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_tune(src, &rng, &m, &err), 0);
        if (strstr(m.summary, "-> 24 ") || strstr(m.summary, "-> 40 ")) neighbour++;
        kv_mutation_free(&m);
    }
    /* 70% neighbours plus their share of the other 30%: about 78%. */
    assert_true(neighbour > total * 6 / 10);
    assert_true(neighbour < total * 95 / 100);
}

static void tune_value_not_listed_moves_to_a_listed_one(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 20; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_tune("X = 3 # kevolve: tune 1 2 4\n", &rng, &m, &err), 0);
        assert_true(strcmp(m.source, "X = 1 # kevolve: tune 1 2 4\n") == 0 ||
                    strcmp(m.source, "X = 2 # kevolve: tune 1 2 4\n") == 0 ||
                    strcmp(m.source, "X = 4 # kevolve: tune 1 2 4\n") == 0);
        kv_mutation_free(&m);
    }
}

static void expect_param(const char *line, const char *name, const char *value, size_t nchoices,
                         const char *new_text_start)
{
    json_t *params = kv_tune_parameters(line);
    if (!params || json_array_size(params) != 1) fail_msg("no parameter found in: %s", line);
    json_t *p = json_array_get(params, 0);
    assert_string_equal(json_string_value(json_object_get(p, "name")), name);
    assert_string_equal(json_string_value(json_object_get(p, "value")), value);
    assert_int_equal(json_array_size(json_object_get(p, "choices")), nchoices);
    json_decref(params);
    kv_rng rng;
    kv_rng_seed(&rng, 7);
    kv_mutation m;
    char *err = NULL;
    assert_int_equal(kv_mutate_tune(line, &rng, &m, &err), 0);
    if (!kv_starts_with(m.source, new_text_start))
        fail_msg("\"%s\" does not start with \"%s\"", m.source, new_text_start);
    /* The comment is intact. */
    assert_non_null(strstr(m.source, strstr(line, "kevolve: tune")));
    kv_mutation_free(&m);
}

static void tune_in_python_lua_c_styles(void **state)
{
    (void)state;
    expect_param("#define VEC 4  // kevolve: tune 1 2 4 8\n", "VEC", "4", 4, "#define VEC ");
    expect_param("BLOCK = 64  # kevolve: tune 32 64 128 256\n", "BLOCK", "64", 4, "BLOCK = ");
    expect_param("const int TILE = 16; // kevolve: tune range 8 64 8\n", "TILE", "16", 8,
                 "const int TILE = ");
    expect_param("local threads = 128 -- kevolve: tune 64 128 256\n", "threads", "128", 3,
                 "local threads = ");
    expect_param("USE_SHARED = False  # kevolve: tune True False\n", "USE_SHARED", "False", 2,
                 "USE_SHARED = True  #");
    expect_param("#define SPLIT 1 /* kevolve: tune 1 2 4 8 16 */\n", "SPLIT", "1", 5,
                 "#define SPLIT ");
    expect_param("MODE = \"fast\"  # kevolve: tune \"fast\" \"exact\"\n", "MODE", "\"fast\"", 2,
                 "MODE = \"exact\"  #");
    expect_param("    scale = -1.5e-3,  // kevolve: tune -1.5e-3 2e-3\n", "scale", "-1.5e-3", 2,
                 "    scale = 2e-3,  //");
    expect_param("(setq width 8) ;; kevolve: tune 8 16\n", "width", "8", 2, "(setq width 16)");
    expect_param("n = 3 % kevolve: tune 3 5\n", "n", "3", 2, "n = 5 %");
    expect_param("foo(bar=2)  # kevolve: tune 2 3\n", "bar", "2", 2, "foo(bar=3)");
    expect_param("    4 // kevolve: tune 4 8\n", "line 1", "4", 2, "    8 //");
}

static void tune_returns_nothing_to_do_without_annotations(void **state)
{
    (void)state;
    kv_rng rng;
    kv_rng_seed(&rng, 3);
    kv_mutation m;
    char *err = NULL;
    assert_int_equal(kv_mutate_tune(LUA_SRC + 0, &rng, &m, &err), 0);
    kv_mutation_free(&m);
    assert_int_equal(kv_mutate_tune("int x = 4; // just a comment\n", &rng, &m, &err), 1);
    assert_null(m.source);
    assert_null(err);
    /* A parameter whose only choice is its value cannot move. */
    assert_int_equal(kv_mutate_tune("int x = 4; // kevolve: tune 4\n", &rng, &m, &err), 1);
    json_t *params = kv_tune_parameters("int x = 4;\n");
    assert_int_equal(json_array_size(params), 0);
    json_decref(params);
}

static void tune_ignores_annotations_outside_blocks(void **state)
{
    (void)state;
    const char *src = "#define N 4 // kevolve: tune 4 8\n"
                      "// EVOLVE-BLOCK-START\n"
                      "int x;\n"
                      "// EVOLVE-BLOCK-END\n"
                      "#define M 4 // kevolve: tune 4 8\n";
    kv_rng rng;
    kv_rng_seed(&rng, 3);
    kv_mutation m;
    char *err = NULL;
    assert_int_equal(kv_mutate_tune(src, &rng, &m, &err), 1);
    json_t *params = kv_tune_parameters(src);
    assert_int_equal(json_array_size(params), 0);
    json_decref(params);
}

static void tune_malformed_annotation_names_its_line(void **state)
{
    (void)state;
    kv_rng rng;
    kv_rng_seed(&rng, 3);
    kv_mutation m;
    char *err = NULL;
    const char *bad[] = {"a\nx = 4 + // kevolve: tune 1 2\n", "a\nx = 4 // kevolve: tune\n",
                         "a\nx = 4 // kevolve: tune range 1\n",
                         "a\nx = 4 // kevolve: tune pow2 0 8\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(kv_mutate_tune(bad[i], &rng, &m, &err), -1);
        assert_non_null(strstr(err, "line 2: kevolve: tune"));
        free(err);
        assert_null(kv_tune_parameters(bad[i]));
    }
}

/* Counts SUMMARY's kind of gi edit in KINDS: delete, copy, swap, replace. */
static void count_gi_kind(const char *summary, int kinds[4])
{
    kinds[0] += kv_starts_with(summary, "gi: delete line ");
    kinds[1] += kv_starts_with(summary, "gi: copy line ");
    kinds[2] += kv_starts_with(summary, "gi: swap lines ");
    kinds[3] += kv_starts_with(summary, "gi: replace line ");
}

static void gi_edits_only_mutable_lines(void **state)
{
    (void)state;
    int kinds[4] = {0};
    for (uint64_t seed = 0; seed < 200; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_gi(C_SRC, &rng, &m, &err), 0);
        assert_passes_block_check(C_SRC, m.source);
        assert_string_not_equal(m.source, C_SRC);
        /* The fixed lines and markers stay where they were, in order. */
        assert_true(kv_starts_with(m.source, "#include <stdio.h>\n#define N 1024\n"
                                             "// EVOLVE-BLOCK-START\n"));
        assert_non_null(strstr(m.source, "// EVOLVE-BLOCK-END\nint main(void) { return f(N); } "
                                         "// kevolve: tune 1 2\n// EVOLVE-BLOCK-START\n"));
        assert_true(kv_ends_with(m.source, "// EVOLVE-BLOCK-END\n"));
        count_gi_kind(m.summary, kinds);
        kv_mutation_free(&m);
    }
    for (int k = 0; k < 4; k++)
        assert_true(kinds[k] > 10);
    assert_int_equal(kinds[0] + kinds[1] + kinds[2] + kinds[3], 200);
}

/* gi moves whole statements within one scope: the head of a brace-less loop
 * and its body, declarations, comments and directives stay as they were,
 * a statement never leaves its function, and the braces stay balanced. */
static void gi_moves_whole_statements_within_their_scope(void **state)
{
    (void)state;
    static const char *const src = "// EVOLVE-BLOCK-START\n"
                                   "/* a comment\n"
                                   "   over two lines */\n"
                                   "#define N 4\n"
                                   "static int f(int n)\n"
                                   "{\n"
                                   "    int s = 0;\n"
                                   "    for (int i = 0; i < n; i++)\n"
                                   "        s += i;\n"
                                   "    s *= 2;\n"
                                   "    s -= 1;\n"
                                   "    return s;\n"
                                   "}\n"
                                   "static int g(int x)\n"
                                   "{\n"
                                   "    x += 3;\n"
                                   "    x *= 5;\n"
                                   "    return x;\n"
                                   "}\n"
                                   "// EVOLVE-BLOCK-END\n";
    static const char *const kept[] = {
        "/* a comment\n   over two lines */\n#define N 4\nstatic int f(int n)\n{\n"
        "    int s = 0;\n    for (int i = 0; i < n; i++)\n        s += i;\n",
        "static int g(int x)\n{\n"};
    int kinds[4] = {0};
    for (uint64_t seed = 0; seed < 300; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_gi(src, &rng, &m, &err), 0);
        for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++)
            if (!strstr(m.source, kept[k]))
                fail_msg("%s broke a fixed part:\n%s", m.summary, m.source);
        const char *g = strstr(m.source, "static int g");
        for (const char *p = m.source; *p; p++)
            if ((*p == 'x' && p[1] == ' ' && p < g) || (*p == 's' && p[1] == ' ' && p > g))
                fail_msg("%s moved a statement out of its function:\n%s", m.summary, m.source);
        int open = 0;
        for (const char *p = m.source; *p; p++)
            open += (*p == '{') - (*p == '}');
        assert_int_equal(open, 0);
        count_gi_kind(m.summary, kinds);
        kv_mutation_free(&m);
    }
    for (int k = 0; k < 4; k++)
        assert_true(kinds[k] > 10);
}

/* Occurrences of NEEDLE in HAY. */
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* REL in the source tree: $KV_SOURCE_DIR (ctest sets it), else this
 * file's (malloc'd). */
static char *source_path(const char *rel)
{
    const char *root = getenv("KV_SOURCE_DIR"), *here = __FILE__;
    const char *cut = strstr(here, "tests/unit/");
    return root ? kv_asprintf("%s/%s", root, rel)
                : kv_asprintf("%.*s%s", cut ? (int)(cut - here) : 0, here, rel);
}

/* The lone body of a brace-less if, else or for stays with its head, in a
 * C file whose many multi-line signatures and loop heads end in ',' or ')'
 * (examples/matmul_c, where gi once copied an if's body before its else). */
static void gi_keeps_the_lone_body_of_a_braceless_if_with_its_head(void **state)
{
    (void)state;
    char *path = source_path("examples/matmul_c/initial_program.c");
    char *src = kv_read_file(path, NULL);
    assert_non_null(src);
    static const char *const chains[] = {
        "    if (LOOP_ORDER == 1)\n"
        "        kernel_ikj(n, A, B, C, i0, i1, k0, k1, j0, j1);\n"
        "    else if (LOOP_ORDER == 2)\n"
        "        kernel_jki(n, A, B, C, i0, i1, k0, k1, j0, j1);\n"
        "    else\n"
        "        kernel_ijk(n, A, B, C, i0, i1, k0, k1, j0, j1);\n"
        "}\n",
        "            for (; j + UNROLL <= j1; j += UNROLL)\n"
        "                for (int u = 0; u < UNROLL; u++) c[j + u] += a * b[j + u];\n"};
    static const char *const calls[] = {"kernel_ikj(n, A", "kernel_jki(n, A", "kernel_ijk(n, A",
                                        "c[j + u] += a * b[j + u];"};
    for (size_t k = 0; k < 2; k++) /* the example still holds what this test is about */
        assert_non_null(strstr(src, chains[k]));
    int edits = 0;
    for (uint64_t seed = 0; seed < 400; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        if (kv_mutate_gi(src, &rng, &m, &err) != 0) continue;
        edits++;
        for (size_t k = 0; k < 2; k++)
            if (!strstr(m.source, chains[k]))
                fail_msg("%s split a head from its lone body:\n%s", m.summary, m.source);
        for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++)
            if (count_of(m.source, calls[k]) != 1)
                fail_msg("%s moved or copied the lone body '%s'", m.summary, calls[k]);
        kv_mutation_free(&m);
    }
    assert_true(edits > 300); /* gi still finds statements to edit there */
    free(src);
    free(path);
}

/* The lines of SRC that hold one of the synchronisation constructs the
 * seeds use, in order, joined (malloc'd). */
static char *sync_lines(const char *src)
{
    static const char *const marks[] = {"__syncthreads()", "cluster.sync()", "gqa_wgmma_wait",
                                        "gqa_mbar_",       "gqa_cp_commit",  "gqa_cp_wait",
                                        "barrier(",        "gqa_tma_load",   "gqa_setmaxnreg"};
    kv_buf b = KV_BUF_INIT;
    for (const char *p = src; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *line = kv_strndup(p, n);
        for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++)
            if (strstr(line, marks[k])) {
                kv_buf_printf(&b, "%s\n", line);
                break;
            }
        free(line);
        p += n + (end != NULL);
    }
    return kv_buf_steal(&b);
}

/* gi never deletes, moves, copies or overwrites a line that synchronises
 * threads or orders memory: without it a kernel races, and the judge sees
 * a race only when the threads interleave badly (on an H200 two such
 * children of the Hopper seed were judged correct). Nor a TMA load, whose
 * barrier waits forever without it, nor a warpgroup's setmaxnreg. The seeds
 * with barriers, mbarriers, wgmma waits, cp.async commits, TMA loads,
 * cluster barriers and OpenCL barriers keep every such line, in order, in
 * every child. */
static void gi_leaves_synchronisation_alone(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        "tasks/gqa_attention/cuda/prefill_hopper.cu", "tasks/gqa_attention/cuda/prefill_fa2.cu",
        "tasks/gqa_attention/cuda/decode_cluster.cu", "tasks/gqa_attention/cuda/decode_split.cu",
        "tasks/gqa_attention/opencl/naive.cl"};
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
        char *path = source_path(seeds[k]);
        char *src = kv_read_file(path, NULL);
        assert_non_null(src);
        char *want = sync_lines(src);
        assert_true(strlen(want) > 0); /* the seed still holds what this test is about */
        int edits = 0;
        for (uint64_t seed = 0; seed < 300; seed++) {
            kv_rng rng;
            kv_rng_seed(&rng, seed);
            kv_mutation m;
            char *err = NULL;
            if (kv_mutate_gi(src, &rng, &m, &err) != 0) continue;
            edits++;
            char *got = sync_lines(m.source);
            if (strcmp(got, want) != 0)
                fail_msg("%s: %s changed its synchronisation:\n%s\nnow:\n%s", seeds[k], m.summary,
                         want, got);
            free(got);
            kv_mutation_free(&m);
        }
        assert_true(edits > 250); /* gi still edits the rest */
        free(want);
        free(src);
        free(path);
    }
}

/* Three of gi's deletions in four take a clamp (a one-line if that sets
 * a variable to a value without a call): the limits a design chose, which
 * on the H200 were nearly all correct when deleted and most of the gi
 * children that beat their parent. Not an error check, a guarded call or
 * store, a variable set by a call, an accumulation, nor a skip (a guard of
 * a tail or an empty range: 3 of 16 correct in the H200 and OpenCL jobs):
 * deleting those drops work, changes nothing timed or runs past a tensor.
 * Uniform draws would take the clamp here in 1 of 19 deletions. */
static void gi_deletes_clamps_three_times_in_four(void **state)
{
    (void)state;
    const char *src = "// EVOLVE-BLOCK-START\n"
                      "int f(int n, int *a) {\n"
                      "    int s = 0;\n"
                      "    s += n;\n    s *= 3;\n    s -= 1;\n    s ^= 5;\n    s += 7;\n"
                      "    if (s > 100) s = 100;\n"
                      "    if (s < 0) return -1;\n"
                      "    if (n) g(n);\n"
                      "    if (n > 1) a[n] = s;\n"
                      "    if (n > 2) s = h(n);\n"
                      "    if (n > 3) s += n;\n"
                      "    s <<= 1;\n    s |= 2;\n    s &= 255;\n    s += n;\n"
                      "    for (int i = 0; i < n; i++) {\n"
                      "        if (i == 3) continue; /* a skip */\n"
                      "        if (i + 2 >= n) break; /* a bounds guard */\n"
                      "        s += i;\n"
                      "    }\n"
                      "    return s;\n"
                      "}\n"
                      "// EVOLVE-BLOCK-END\n";
    static const char *const wanted = "if (s > 100) s = 100;";
    static const char *const others[] = {"if (s < 0) return -1;", "if (n) g(n);",
                                         "if (n > 1) a[n] = s;",  "if (n > 2) s = h(n);",
                                         "if (n > 3) s += n;",    "if (i == 3) continue;",
                                         "if (i + 2 >= n) break;"};
    enum { N_OTHERS = sizeof others / sizeof *others };
    int deletes = 0, of_wanted = 0, of_other[N_OTHERS] = {0};
    for (uint64_t seed = 0; seed < 600; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_gi(src, &rng, &m, &err), 0);
        if (kv_starts_with(m.summary, "gi: delete line ")) {
            deletes++;
            of_wanted += strstr(m.source, wanted) == NULL;
            for (size_t k = 0; k < N_OTHERS; k++)
                of_other[k] += strstr(m.source, others[k]) == NULL;
        }
        kv_mutation_free(&m);
    }
    assert_true(deletes > 150);
    /* 3/4 and a share of the uniform draws: half the time gives 53% */
    assert_true(of_wanted > deletes * 68 / 100 && of_wanted < deletes * 90 / 100);
    for (size_t k = 0; k < N_OTHERS; k++)
        if (of_other[k] > deletes * 10 / 100)
            fail_msg("'%s' deleted %d times in %d: as often as a clamp", others[k], of_other[k],
                     deletes);
}

/* How many times NEEDLE occurs in HAY. */
static int occurrences(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + strlen(needle), needle))
        n++;
    return n;
}

/* gi runs SEEDS edits of SRC; every child must hold each of UNITS (a
 * multi-line string, NULL-terminated list) whole, exactly as often as SRC
 * does, and MARK (a line no edit may copy or drop) as often as SRC.
 * Returns the count of children. */
static int gi_children_keep(const char *src, const char *const *units, const char *mark, int seeds)
{
    int made = 0;
    for (uint64_t seed = 0; seed < (uint64_t)seeds; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        if (kv_mutate_gi(src, &rng, &m, &err) != 0) continue;
        made++;
        for (size_t u = 0; units[u]; u++)
            if (occurrences(m.source, units[u]) != occurrences(src, units[u]))
                fail_msg("seed %d (%s) broke a multi-line string:\n%s", (int)seed, m.summary,
                         m.source);
        if (occurrences(m.source, mark) != occurrences(src, mark))
            fail_msg("seed %d (%s) copied or dropped a line of quotes:\n%s", (int)seed, m.summary,
                     m.source);
        kv_mutation_free(&m);
    }
    return made;
}

/* gi treats a multi-line string as one unit (issue 45.5): Python's triple
 * quotes, C++'s raw strings and strings continued by a backslash. On the
 * OpenEvolve function-minimisation example gi once copied a lone line of
 * triple quotes ("unterminated string literal") and edited a docstring's
 * lines as if they were code. */
static void gi_keeps_multiline_strings_whole(void **state)
{
    (void)state;
    char *path = source_path("tests/data/openevolve/function_minimization/initial_program.py");
    char *py = kv_read_file(path, NULL);
    assert_non_null(py);
    const char *doc = strstr(py, "    \"\"\"\n    A simple random search");
    assert_non_null(doc);
    const char *doc_end = strstr(doc + 8, "\"\"\"\n");
    assert_non_null(doc_end);
    char *docstring = kv_strndup(doc, (size_t)(doc_end + 4 - doc));
    const char *const py_units[] = {docstring, NULL};
    int made = gi_children_keep(py, py_units, "\n    \"\"\"\n", 400); /* a lone line of quotes */
    assert_true(made > 300); /* gi still edits the code around it */
    free(docstring);
    free(py);
    free(path);

    static const char c_src[] = "// EVOLVE-BLOCK-START\n"
                                "static const char *usage = \"first;\\\n"
                                "second;\\\n"
                                "third;\";\n"
                                "static const char *raw = R\"x(alpha;\n"
                                "beta;\n"
                                "gamma;)x\";\n"
                                "int f(int x)\n"
                                "{\n"
                                "    x = x + 1;\n"
                                "    x = x * 2;\n"
                                "    x = x - 3;\n"
                                "    return x;\n"
                                "}\n"
                                "// EVOLVE-BLOCK-END\n";
    const char *const c_units[] = {"\"first;\\\nsecond;\\\nthird;\";\n",
                                   "R\"x(alpha;\nbeta;\ngamma;)x\";\n", NULL};
    made = gi_children_keep(c_src, c_units, "static const char", 400);
    assert_true(made > 300);
}

static void gi_swap_summary_names_both_lines(void **state)
{
    (void)state;
    const char *src = "# EVOLVE-BLOCK-START\na = 1\nb = 2\n# EVOLVE-BLOCK-END\n";
    for (uint64_t seed = 0; seed < 50; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_gi(src, &rng, &m, &err), 0);
        if (strcmp(m.summary, "gi: swap lines 2 and 3") == 0)
            assert_string_equal(m.source,
                                "# EVOLVE-BLOCK-START\nb = 2\na = 1\n# EVOLVE-BLOCK-END\n");
        if (strcmp(m.summary, "gi: delete line 2") == 0)
            assert_string_equal(m.source, "# EVOLVE-BLOCK-START\nb = 2\n# EVOLVE-BLOCK-END\n");
        kv_mutation_free(&m);
    }
}

static void gi_returns_nothing_to_do_without_mutable_lines(void **state)
{
    (void)state;
    kv_rng rng;
    kv_rng_seed(&rng, 5);
    kv_mutation m;
    char *err = NULL;
    assert_int_equal(
        kv_mutate_gi("fixed\n// EVOLVE-BLOCK-START\n// EVOLVE-BLOCK-END\n", &rng, &m, &err), 1);
    assert_null(m.source);
    assert_int_equal(
        kv_mutate_gi("fixed\n// EVOLVE-BLOCK-START\n\n  \n// EVOLVE-BLOCK-END\n", &rng, &m, &err),
        0); /* blank lines can still be replaced by "fixed" */
    assert_passes_block_check("fixed\n// EVOLVE-BLOCK-START\n\n  \n// EVOLVE-BLOCK-END\n",
                              m.source);
    kv_mutation_free(&m);
    assert_int_equal(kv_mutate_gi("// EVOLVE-BLOCK-START\n\n// EVOLVE-BLOCK-END\n", &rng, &m, &err),
                     1);
}

/* A three-block program whose block bodies are X1, X2, X3. */
static char *three_blocks(const char *x1, const char *x2, const char *x3)
{
    return kv_asprintf("head\n# EVOLVE-BLOCK-START\n%s# EVOLVE-BLOCK-END\nmid\n"
                       "# EVOLVE-BLOCK-START\n%s# EVOLVE-BLOCK-END\nmid2\n"
                       "# EVOLVE-BLOCK-START\n%s# EVOLVE-BLOCK-END\ntail\n",
                       x1, x2, x3);
}

static void crossover_takes_blocks_from_both_parents(void **state)
{
    (void)state;
    char *a = three_blocks("a1\n", "a2\n", "a3\n");
    char *b = three_blocks("b1\nb1\n", "b2\n", "b3\n");
    kv_program *pa = kv_program_new(), *pb = kv_program_new();
    kv_program_set_source(pa, a);
    kv_program_set_source(pb, b);
    pa->id = 12;
    pb->id = 40;
    for (uint64_t seed = 0; seed < 50; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(
            kv_mutate_crossover_named(pa->source, pb->source, "#12", "#40", &rng, &m, &err), 0);
        int from_b[3];
        from_b[0] = strstr(m.source, "b1\nb1\n") != NULL;
        from_b[1] = strstr(m.source, "b2\n") != NULL;
        from_b[2] = strstr(m.source, "b3\n") != NULL;
        assert_int_equal(from_b[0], strstr(m.source, "a1\n") == NULL);
        assert_int_equal(from_b[1], strstr(m.source, "a2\n") == NULL);
        assert_int_equal(from_b[2], strstr(m.source, "a3\n") == NULL);
        int nb = from_b[0] + from_b[1] + from_b[2];
        assert_true(nb >= 1 && nb <= 2);
        char *expect = three_blocks(from_b[0] ? "b1\nb1\n" : "a1\n", from_b[1] ? "b2\n" : "a2\n",
                                    from_b[2] ? "b3\n" : "a3\n");
        assert_string_equal(m.source, expect);
        free(expect);
        /* "crossover: blocks 1,3 from #12, block 2 from #40" */
        char want[128] = "crossover: ";
        for (int side = 0; side < 2; side++) {
            int cnt = 0;
            for (int k = 0; k < 3; k++)
                cnt += from_b[k] == side;
            strcat(want, cnt == 1 ? "block " : "blocks ");
            const char *sep = "";
            for (int k = 0; k < 3; k++) {
                if (from_b[k] != side) continue;
                char num[16];
                snprintf(num, sizeof num, "%s%d", sep, k + 1);
                strcat(want, num);
                sep = ",";
            }
            strcat(want, side == 0 ? " from #12, " : " from #40");
        }
        assert_string_equal(m.summary, want);
        kv_mutation_free(&m);
    }
    kv_program_free(pa);
    kv_program_free(pb);
    free(a);
    free(b);
}

static void crossover_of_one_block_cuts_between_lines(void **state)
{
    (void)state;
    const char *a = "h\n// EVOLVE-BLOCK-START\nA1\nA2\nA3\nA4\n// EVOLVE-BLOCK-END\nt\n";
    const char *b = "h\n// EVOLVE-BLOCK-START\nB1\nB2\nB3\nB4\n// EVOLVE-BLOCK-END\nt\n";
    int seen[5] = {0};
    for (uint64_t seed = 0; seed < 40; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_crossover(a, b, &rng, &m, &err), 0);
        /* A's first k lines, then B's from line k + 1: */
        int k = 0;
        while (k < 4) {
            char l[16];
            snprintf(l, sizeof l, "A%d\n", k + 1);
            if (!strstr(m.source, l)) break;
            k++;
        }
        assert_true(k >= 1 && k <= 3);
        seen[k]++;
        char expect[128] = "h\n// EVOLVE-BLOCK-START\n";
        for (int i = 1; i <= 4; i++) {
            char l[16];
            snprintf(l, sizeof l, "%c%d\n", i <= k ? 'A' : 'B', i);
            strcat(expect, l);
        }
        strcat(expect, "// EVOLVE-BLOCK-END\nt\n");
        assert_string_equal(m.source, expect);
        assert_true(kv_starts_with(m.summary, "crossover: block 1 cut: "));
        kv_mutation_free(&m);
    }
    assert_true(seen[1] > 0 && seen[2] > 0 && seen[3] > 0);
}

/* Parameters a few lines apart in a long block (tune axes at the top of
 * a kernel): every crossover takes one from each parent, both ways over
 * the seeds, and keeps every line the parents share. */
static void crossover_mixes_nearby_lines_of_a_long_block(void **state)
{
    (void)state;
    kv_buf a = KV_BUF_INIT, b = KV_BUF_INIT;
    kv_buf_puts(&a, "h\n// EVOLVE-BLOCK-START\n");
    kv_buf_puts(&b, "h\n// EVOLVE-BLOCK-START\n");
    for (int i = 0; i < 1000; i++) {
        kv_buf_printf(&a, "%s%d\n", i == 10 || i == 12 ? "A" : "L", i);
        kv_buf_printf(&b, "%s%d\n", i == 10 || i == 12 ? "B" : "L", i);
    }
    kv_buf_puts(&a, "// EVOLVE-BLOCK-END\nt\n");
    kv_buf_puts(&b, "// EVOLVE-BLOCK-END\nt\n");
    int seen[2] = {0};
    for (uint64_t seed = 0; seed < 20; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_crossover(a.data, b.data, &rng, &m, &err), 0);
        int a10 = strstr(m.source, "\nA10\nL11\n") != NULL;
        assert_true(a10 ? strstr(m.source, "\nL11\nB12\n") != NULL
                        : strstr(m.source, "\nB10\nL11\nA12\n") != NULL);
        assert_non_null(strstr(m.source, "\nL9\n"));
        assert_non_null(strstr(m.source, "\nL999\n// EVOLVE-BLOCK-END"));
        assert_true(kv_starts_with(m.summary, "crossover: block 1, 2 differing parts: "));
        seen[a10]++;
        kv_mutation_free(&m);
    }
    assert_true(seen[0] > 0 && seen[1] > 0);
    kv_buf_free(&a);
    kv_buf_free(&b);
}

/* Two variants of one kernel, one with a line deleted near the top and the
 * other with a line copied further down (what gi makes): the child takes
 * each change from one parent or the other and never drops or repeats a
 * line the parents share, which a cut at the same fraction of each
 * parent's lines did (its children of such parents did not compile). */
static void crossover_aligns_parents_of_different_lengths(void **state)
{
    (void)state;
    kv_buf base = KV_BUF_INIT, a = KV_BUF_INIT, b = KV_BUF_INIT;
    for (int i = 0; i < 40; i++) {
        kv_buf_printf(&base, "S%d;\n", i);
        if (i != 5) kv_buf_printf(&a, "S%d;\n", i); /* A deleted S5 */
        kv_buf_printf(&b, "S%d;\n", i);             /* B copied S30 */
        if (i == 30) kv_buf_printf(&b, "S%d;\n", i);
    }
    char *pa = kv_asprintf("h\n// EVOLVE-BLOCK-START\n%s// EVOLVE-BLOCK-END\nt\n", a.data);
    char *pb = kv_asprintf("h\n// EVOLVE-BLOCK-START\n%s// EVOLVE-BLOCK-END\nt\n", b.data);
    int seen[2] = {0};
    for (uint64_t seed = 0; seed < 30; seed++) {
        kv_rng rng;
        kv_rng_seed(&rng, seed);
        kv_mutation m;
        char *err = NULL;
        assert_int_equal(kv_mutate_crossover(pa, pb, &rng, &m, &err), 0);
        /* Either both changes or neither: that would be a parent. So the
         * child is the base with S5 and one S30, or without S5 and two. */
        int has5 = strstr(m.source, "\nS5;\n") != NULL;
        char *want =
            has5 ? kv_asprintf("h\n// EVOLVE-BLOCK-START\n%s// EVOLVE-BLOCK-END\nt\n", base.data)
                 : NULL;
        if (!has5) {
            kv_buf c = KV_BUF_INIT;
            for (int i = 0; i < 40; i++) {
                if (i != 5) kv_buf_printf(&c, "S%d;\n", i);
                if (i == 30) kv_buf_printf(&c, "S%d;\n", i);
            }
            want = kv_asprintf("h\n// EVOLVE-BLOCK-START\n%s// EVOLVE-BLOCK-END\nt\n", c.data);
            kv_buf_free(&c);
        }
        assert_string_equal(m.source, want);
        seen[has5]++;
        free(want);
        kv_mutation_free(&m);
    }
    assert_true(seen[0] > 0 && seen[1] > 0);
    /* One differing part of unequal lengths: nothing to mix. */
    const char *c = "h\n// EVOLVE-BLOCK-START\nL0\nX\nL2\n// EVOLVE-BLOCK-END\nt\n";
    const char *d = "h\n// EVOLVE-BLOCK-START\nL0\nY1\nY2\nY3\nL2\n// EVOLVE-BLOCK-END\nt\n";
    kv_rng rng;
    kv_rng_seed(&rng, 7);
    kv_mutation m;
    char *err = NULL;
    assert_int_equal(kv_mutate_crossover(c, d, &rng, &m, &err), 1);
    /* Two rewrites that share under half their lines are not variants of
     * one program: nothing to cross. */
    const char *e = "h\n// EVOLVE-BLOCK-START\nP1\n}\nP2\n}\nP3\n}\nP4\n// EVOLVE-BLOCK-END\nt\n";
    const char *f = "h\n// EVOLVE-BLOCK-START\nQ1\n}\nQ2\n}\nQ3\n}\nQ4\n// EVOLVE-BLOCK-END\nt\n";
    assert_int_equal(kv_mutate_crossover(e, f, &rng, &m, &err), 1);
    free(pa);
    free(pb);
    kv_buf_free(&base);
    kv_buf_free(&a);
    kv_buf_free(&b);
}

static void crossover_needs_the_same_fixed_text(void **state)
{
    (void)state;
    char *a = three_blocks("a1\n", "a2\n", "a3\n");
    char *b = three_blocks("b1\n", "b2\n", "b3\n");
    b[0] = 'H'; /* "Head": the fixed text differs */
    kv_rng rng;
    kv_rng_seed(&rng, 1);
    kv_mutation m;
    char *err = NULL;
    assert_int_equal(kv_mutate_crossover(a, b, &rng, &m, &err), 1);
    assert_null(m.source);
    assert_null(err);
    /* Equal blocks: nothing to cross. */
    assert_int_equal(kv_mutate_crossover(a, a, &rng, &m, &err), 1);
    /* A single differing line cannot make a new child. */
    char *c = three_blocks("a1\n", "a2\n", "c3\n");
    assert_int_equal(kv_mutate_crossover(a, c, &rng, &m, &err), 1);
    /* No second parent: builtin:crossover says so (test_registry.c). */
    free(a);
    free(b);
    free(c);
}

/* The three edits with one signature (B: crossover's other parent), as
 * their registry entries call them (builtin.c). */
static int edit_tune(const char *a, const char *b, kv_rng *rng, kv_mutation *m, char **err)
{
    (void)b;
    return kv_mutate_tune(a, rng, m, err);
}
static int edit_gi(const char *a, const char *b, kv_rng *rng, kv_mutation *m, char **err)
{
    (void)b;
    return kv_mutate_gi(a, rng, m, err);
}
static const struct {
    const char *name;
    int (*edit)(const char *a, const char *b, kv_rng *rng, kv_mutation *m, char **err);
} EDITS[] = {{"tune", edit_tune}, {"gi", edit_gi}, {"crossover", kv_mutate_crossover}};
#define NEDITS (sizeof EDITS / sizeof EDITS[0])

/* A variant of SRC made by a few gi and tune steps from SEED. */
static char *variant(const char *src, uint64_t seed)
{
    char *cur = strdup(src);
    kv_rng rng;
    kv_rng_seed(&rng, seed ^ 0x9e3779b97f4a7c15u);
    for (int step = 0; step < 4; step++) {
        kv_mutation m;
        char *err = NULL;
        int rc = step % 2 ? kv_mutate_tune(cur, &rng, &m, &err) : kv_mutate_gi(cur, &rng, &m, &err);
        if (rc < 0) fail_msg("%s\n--- source ---\n%s", err, cur);
        if (rc == 0) {
            free(cur);
            cur = m.source;
            m.source = NULL;
            kv_mutation_free(&m);
        }
    }
    return cur;
}

static void every_mutator_child_passes_block_check(void **state)
{
    (void)state;
    for (size_t s = 0; s < NSAMPLES; s++) {
        const char *src = SAMPLES[s];
        int made[NEDITS] = {0};
        for (uint64_t seed = 0; seed < 150; seed++) {
            char *other = variant(src, seed);
            /* Children of children too: the parent may already be evolved. */
            char *parent = seed % 3 == 0 ? variant(src, seed + 1000) : strdup(src);
            kv_program *pp = kv_program_new(), *po = kv_program_new();
            kv_program_set_source(pp, parent);
            kv_program_set_source(po, other);
            for (size_t k = 0; k < NEDITS; k++) {
                kv_rng rng;
                kv_rng_seed(&rng, seed);
                kv_mutation m;
                char *err = NULL;
                int rc = EDITS[k].edit(pp->source, po->source, &rng, &m, &err);
                if (rc < 0) fail_msg("%s on sample %zu: %s", EDITS[k].name, s, err);
                if (rc == 1) continue;
                made[k]++;
                assert_passes_block_check(parent, m.source);
                assert_passes_block_check(src, m.source);
                assert_string_not_equal(m.source, parent);
                assert_true(kv_starts_with(m.summary, EDITS[k].name));
                kv_mutation_free(&m);
            }
            kv_program_free(pp);
            kv_program_free(po);
            free(parent);
            free(other);
        }
        /* Three lines, one of them a tune axis: two variants seldom differ
         * in two places, and crossover mixes only whole differing parts. */
        for (size_t k = 0; k < NEDITS; k++)
            if (made[k] < (SAMPLES[s] == WHOLE_SRC && k == 2 ? 1 : 50))
                fail_msg("%s made only %d children of sample %zu", EDITS[k].name, made[k], s);
    }
}

static void same_seed_same_child(void **state)
{
    (void)state;
    kv_program *pa = kv_program_new(), *pb = kv_program_new();
    kv_program_set_source(pa, C_SRC);
    char *other = variant(C_SRC, 77);
    kv_program_set_source(pb, other);
    for (size_t k = 0; k < NEDITS; k++) {
        int distinct = 0;
        char *first = NULL;
        for (uint64_t seed = 0; seed < 10; seed++) {
            kv_mutation m1, m2;
            char *err = NULL;
            kv_rng r1, r2;
            kv_rng_seed(&r1, seed);
            kv_rng_seed(&r2, seed);
            assert_int_equal(EDITS[k].edit(pa->source, pb->source, &r1, &m1, &err), 0);
            assert_int_equal(EDITS[k].edit(pa->source, pb->source, &r2, &m2, &err), 0);
            assert_string_equal(m1.source, m2.source);
            assert_string_equal(m1.summary, m2.summary);
            if (!first)
                first = strdup(m1.source);
            else
                distinct |= strcmp(first, m1.source) != 0;
            kv_mutation_free(&m1);
            kv_mutation_free(&m2);
        }
        assert_true(distinct); /* the seed matters */
        free(first);
    }
    free(other);
    kv_program_free(pa);
    kv_program_free(pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tune_changes_one_to_three_annotated_values_to_allowed_ones),
        cmocka_unit_test(tune_range_form),
        cmocka_unit_test(tune_restart_draws_every_axis_uniformly),
        cmocka_unit_test(tune_moves_mostly_to_neighbouring_values),
        cmocka_unit_test(tune_value_not_listed_moves_to_a_listed_one),
        cmocka_unit_test(tune_in_python_lua_c_styles),
        cmocka_unit_test(tune_returns_nothing_to_do_without_annotations),
        cmocka_unit_test(tune_ignores_annotations_outside_blocks),
        cmocka_unit_test(tune_malformed_annotation_names_its_line),
        cmocka_unit_test(gi_edits_only_mutable_lines),
        cmocka_unit_test(gi_swap_summary_names_both_lines),
        cmocka_unit_test(gi_keeps_multiline_strings_whole),
        cmocka_unit_test(gi_deletes_clamps_three_times_in_four),
        cmocka_unit_test(gi_moves_whole_statements_within_their_scope),
        cmocka_unit_test(gi_keeps_the_lone_body_of_a_braceless_if_with_its_head),
        cmocka_unit_test(gi_returns_nothing_to_do_without_mutable_lines),
        cmocka_unit_test(gi_leaves_synchronisation_alone),
        cmocka_unit_test(crossover_takes_blocks_from_both_parents),
        cmocka_unit_test(crossover_of_one_block_cuts_between_lines),
        cmocka_unit_test(crossover_mixes_nearby_lines_of_a_long_block),
        cmocka_unit_test(crossover_aligns_parents_of_different_lengths),
        cmocka_unit_test(crossover_needs_the_same_fixed_text),
        cmocka_unit_test(every_mutator_child_passes_block_check),
        cmocka_unit_test(same_seed_same_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
