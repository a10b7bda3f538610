/* Tests of EVOLVE-BLOCK enforcement: finding the blocks in any comment
 * syntax, and rejecting children that change text outside them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mutate/blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const C_PROGRAM = "#include <stdio.h>\n"                    /* 1 */
                                     "/* fixed header */\n"                    /* 2 */
                                     "#define N 1024\n"                        /* 3 */
                                     "// EVOLVE-BLOCK-START\n"                 /* 4 */
                                     "static int f(int x)\n"                   /* 5 */
                                     "{\n"                                     /* 6 */
                                     "    return x * 2;\n"                     /* 7 */
                                     "}\n"                                     /* 8 */
                                     "// EVOLVE-BLOCK-END\n"                   /* 9 */
                                     "int main(void) { return f(N); }\n"       /* 10 */
                                     "// EVOLVE-BLOCK-START\n"                 /* 11 */
                                     "static int g(int x) { return x + 1; }\n" /* 12 */
                                     "// EVOLVE-BLOCK-END\n"                   /* 13 */
                                     "/* end */\n";                            /* 14 */

/* Returns a malloc'd copy of S with the first FROM replaced by TO. */
static char *replace(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    assert_non_null(at);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    size_t pre = (size_t)(at - s);
    memcpy(out, s, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
    return out;
}

static void expect_rejected(const char *parent, const char *child, const char *needle1,
                            const char *needle2)
{
    char *reason = NULL;
    assert_int_equal(kv_blocks_check_child(parent, child, &reason), 1);
    assert_non_null(reason);
    if (needle1 && !strstr(reason, needle1))
        fail_msg("reason \"%s\" lacks \"%s\"", reason, needle1);
    if (needle2 && !strstr(reason, needle2))
        fail_msg("reason \"%s\" lacks \"%s\"", reason, needle2);
    free(reason);
}

static void expect_passes(const char *parent, const char *child)
{
    char *reason = NULL;
    int rc = kv_blocks_check_child(parent, child, &reason);
    if (rc != 0) fail_msg("rejected: %s", reason ? reason : "(no reason)");
    assert_null(reason);
}

static void child_editing_outside_block_is_rejected_with_line(void **state)
{
    (void)state;
    char *child = replace(C_PROGRAM, "#define N 1024", "#define N 2048");
    expect_rejected(C_PROGRAM, child, "line 3:", "#define N 2048");
    free(child);

    /* Two lines added inside block 1 shift the changed line 10 to line 12 of the child. */
    char *grown = replace(C_PROGRAM, "    return x * 2;\n",
                          "    int y = x;\n    y *= 2;\n"
                          "    return y;\n");
    char *bad = replace(grown, "return f(N);", "return f(N) + 1;");
    expect_rejected(C_PROGRAM, bad, "line 12:", "return f(N) + 1;");
    free(grown);
    free(bad);

    /* A change in the fixed tail after the last block. */
    char *tail = replace(C_PROGRAM, "/* end */", "/* the end */");
    expect_rejected(C_PROGRAM, tail, "line 14:", "outside EVOLVE-BLOCKs");
    free(tail);
}

static void child_editing_inside_block_passes(void **state)
{
    (void)state;
    char *a = replace(C_PROGRAM, "    return x * 2;\n", "    int y = x << 1;\n    return y;\n");
    char *b = replace(a, "static int g(int x) { return x + 1; }\n", "");
    expect_passes(C_PROGRAM, a);
    expect_passes(C_PROGRAM, b);
    expect_passes(C_PROGRAM, C_PROGRAM);
    free(a);
    free(b);
}

static void child_losing_final_newline_passes(void **state)
{
    (void)state;
    char *child = strdup(C_PROGRAM);
    child[strlen(child) - 1] = '\0';
    expect_passes(C_PROGRAM, child);
    free(child);
}

static void markers_in_all_comment_styles_are_found(void **state)
{
    (void)state;
    const char *styles[][2] = {{"// ", ""}, {"# ", ""}, {"-- ", ""},       {"/* ", " */"},
                               {"; ", ""},  {"% ", ""}, {"<!-- ", " -->"}, {"#", ""}};
    for (size_t i = 0; i < sizeof styles / sizeof styles[0]; i++) {
        char src[256];
        snprintf(src, sizeof src,
                 "fixed\n%sEVOLVE-BLOCK-START%s\nbody 1\nbody 2\n%sEVOLVE-BLOCK-END%s\n"
                 "tail\n",
                 styles[i][0], styles[i][1], styles[i][0], styles[i][1]);
        kv_blocks b;
        char *err = NULL;
        assert_int_equal(kv_blocks_find(src, &b, &err), 0);
        assert_int_equal(b.n, 1);
        assert_false(b.whole_file);
        assert_int_equal(strncmp(src + b.blocks[0].start, "body 1\nbody 2\n",
                                 b.blocks[0].end - b.blocks[0].start),
                         0);
        assert_int_equal(b.blocks[0].end - b.blocks[0].start, strlen("body 1\nbody 2\n"));
        kv_blocks_free(&b);
        int *ranges = NULL;
        assert_int_equal(kv_blocks_line_ranges(src, &ranges), 1);
        assert_int_equal(ranges[0], 3);
        assert_int_equal(ranges[1], 4);
        free(ranges);
    }
}

static void several_blocks_are_found_with_their_lines(void **state)
{
    (void)state;
    int *ranges = NULL;
    assert_int_equal(kv_blocks_line_ranges(C_PROGRAM, &ranges), 2);
    assert_int_equal(ranges[0], 5);
    assert_int_equal(ranges[1], 8);
    assert_int_equal(ranges[2], 12);
    assert_int_equal(ranges[3], 12);
    free(ranges);
}

static void expect_malformed(const char *src, const char *needle)
{
    kv_blocks b;
    char *err = NULL;
    assert_int_equal(kv_blocks_find(src, &b, &err), -1);
    assert_non_null(err);
    if (!strstr(err, needle)) fail_msg("error \"%s\" lacks \"%s\"", err, needle);
    free(err);
    char *reason = NULL;
    assert_int_equal(kv_blocks_check_child(src, src, &reason), -1);
    assert_non_null(reason);
    free(reason);
    int *ranges = NULL;
    assert_int_equal(kv_blocks_line_ranges(src, &ranges), -1);
}

static void unbalanced_markers_are_an_error(void **state)
{
    (void)state;
    expect_malformed("a\nb\n# EVOLVE-BLOCK-END\n", "line 3: EVOLVE-BLOCK-END without START");
    expect_malformed("a\n# EVOLVE-BLOCK-START\nb\n", "line 2: EVOLVE-BLOCK-START without END");
    expect_malformed("// EVOLVE-BLOCK-START\n// EVOLVE-BLOCK-START\n// EVOLVE-BLOCK-END\n"
                     "// EVOLVE-BLOCK-END\n",
                     "line 2:");
    expect_malformed("// EVOLVE-BLOCK-START EVOLVE-BLOCK-END\n", "line 1:");
}

static void removing_a_marker_is_rejected(void **state)
{
    (void)state;
    /* The first END marker (line 9) removed: a START stands where the END was expected. */
    char *no_end = replace(C_PROGRAM, "// EVOLVE-BLOCK-END\nint main", "int main");
    expect_rejected(C_PROGRAM, no_end, "marker changed, added or removed at line 10:", NULL);
    free(no_end);
    /* The last END marker removed. */
    char *no_last = replace(C_PROGRAM, "// EVOLVE-BLOCK-END\n/* end */", "/* end */");
    expect_rejected(C_PROGRAM, no_last, "marker", NULL);
    free(no_last);
    /* The first START removed. */
    char *no_start = replace(C_PROGRAM, "// EVOLVE-BLOCK-START\nstatic int f", "static int f");
    expect_rejected(C_PROGRAM, no_start, "marker", "line 4:");
    free(no_start);
    /* A marker added inside a block. */
    char *added = replace(C_PROGRAM, "    return x * 2;\n",
                          "    return x * 2;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START\n");
    expect_rejected(C_PROGRAM, added, "marker added at line 9", NULL);
    free(added);
    /* A marker rewritten in another comment style. */
    char *restyled = replace(C_PROGRAM, "// EVOLVE-BLOCK-END\nint", "/* EVOLVE-BLOCK-END */\nint");
    expect_rejected(C_PROGRAM, restyled, "line 9:", NULL);
    free(restyled);
}

static void file_without_markers_is_mutable_everywhere(void **state)
{
    (void)state;
    const char *src = "x = 1\ny = 2\nprint(x + y)\n";
    kv_blocks b;
    char *err = NULL;
    assert_int_equal(kv_blocks_find(src, &b, &err), 0);
    assert_true(b.whole_file);
    assert_int_equal(b.n, 0);
    kv_blocks_free(&b);
    int *ranges = NULL;
    assert_int_equal(kv_blocks_line_ranges(src, &ranges), 1);
    assert_int_equal(ranges[0], 1);
    assert_int_equal(ranges[1], 3);
    free(ranges);
    expect_passes(src, "import os\nprint(3)\n");
    expect_rejected(src, "  \n\n", "empty", NULL);
    expect_rejected(src, "x = 1\n# EVOLVE-BLOCK-START\ny = 2\n# EVOLVE-BLOCK-END\n",
                    "marker added at line 2", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(child_editing_outside_block_is_rejected_with_line),
        cmocka_unit_test(child_editing_inside_block_passes),
        cmocka_unit_test(child_losing_final_newline_passes),
        cmocka_unit_test(markers_in_all_comment_styles_are_found),
        cmocka_unit_test(several_blocks_are_found_with_their_lines),
        cmocka_unit_test(unbalanced_markers_are_an_error),
        cmocka_unit_test(removing_a_marker_is_rejected),
        cmocka_unit_test(file_without_markers_is_mutable_everywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
