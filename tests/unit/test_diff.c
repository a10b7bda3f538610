/* Applying a model's reply to its parent: SEARCH/REPLACE blocks (exact, then
 * whitespace-tolerant, never ambiguous), fenced full rewrites, and the
 * rejections (not found, ambiguous, outside the EVOLVE-BLOCKs, empty edit,
 * too long), each with a reason for the next prompt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "mutate/diff.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

static const char PARENT[] = "#include <stdio.h>\n"
                             "// EVOLVE-BLOCK-START\n"
                             "int f(int x) {\n"
                             "    int y = x * 2;\n"
                             "    return y + 1;\n"
                             "}\n"
                             "// EVOLVE-BLOCK-END\n"
                             "int main(void) { return f(1); }\n";

static const kv_reply_options DIFF = {1, "c", 10000};
static const kv_reply_options FULL = {0, "c", 10000};

/* Runs the reply; expects RC and returns child or reason (caller frees). */
static char *run(const char *parent, const char *reply, const kv_reply_options *opt, int want_rc)
{
    char *child = NULL, *summary = NULL, *reason = NULL;
    int rc = kv_reply_to_child(parent, reply, opt, &child, &summary, &reason);
    if (rc != want_rc) fail_msg("rc %d, want %d; reason: %s", rc, want_rc, reason ? reason : "-");
    if (rc == 0) {
        assert_non_null(summary);
        assert_null(reason);
        free(summary);
        return child;
    }
    assert_null(child);
    assert_null(summary);
    assert_non_null(reason);
    return reason;
}

static void exact_search_replace_is_applied(void **state)
{
    (void)state;
    char *child = run(PARENT,
                      "I will triple it.\n"
                      "<<<<<<< SEARCH\n"
                      "    int y = x * 2;\n"
                      "=======\n"
                      "    int y = x * 3;\n"
                      ">>>>>>> REPLACE\n",
                      &DIFF, 0);
    assert_non_null(strstr(child, "    int y = x * 3;\n    return y + 1;\n"));
    assert_null(strstr(child, "x * 2"));
    assert_non_null(strstr(child, "int main(void) { return f(1); }\n"));
    free(child);
}

static void blocks_apply_in_order_each_on_the_previous_result(void **state)
{
    (void)state;
    char *child = run(PARENT,
                      "<<<<<<< SEARCH\n"
                      "    int y = x * 2;\n"
                      "=======\n"
                      "    int y = x * 4;\n"
                      ">>>>>>> REPLACE\n"
                      "and then\n"
                      "```\n"
                      "<<<<<<< SEARCH\n"
                      "    int y = x * 4;\n"
                      "    return y + 1;\n"
                      "=======\n"
                      "    return x * 4 + 1;\n"
                      ">>>>>>> REPLACE\n"
                      "```\n",
                      &DIFF, 0);
    assert_non_null(strstr(child, "int f(int x) {\n    return x * 4 + 1;\n}\n"));
    free(child);
}

static void whitespace_differences_are_tolerated(void **state)
{
    (void)state;
    /* The model lost the indentation and added trailing spaces. */
    char *child = run(PARENT,
                      "<<<<<<< SEARCH\n"
                      "int y = x * 2;   \n"
                      "\treturn y + 1;\n"
                      "=======\n"
                      "    return 2 * x + 1;\n"
                      ">>>>>>> REPLACE\n",
                      &DIFF, 0);
    assert_non_null(strstr(child, "int f(int x) {\n    return 2 * x + 1;\n}\n"));
    free(child);
}

static void ambiguous_search_is_rejected(void **state)
{
    (void)state;
    const char *parent = "// EVOLVE-BLOCK-START\n"
                         "a = 1;\n"
                         "b = 2;\n"
                         "a = 1;\n"
                         "// EVOLVE-BLOCK-END\n";
    char *reason =
        run(parent, "<<<<<<< SEARCH\na = 1;\n=======\na = 5;\n>>>>>>> REPLACE\n", &DIFF, 1);
    assert_non_null(strstr(reason, "SEARCH block 1"));
    assert_non_null(strstr(reason, "ambiguous"));
    assert_non_null(strstr(reason, "lines 2, 4"));
    free(reason);
}

static void search_not_found_is_rejected_naming_the_block(void **state)
{
    (void)state;
    char *reason = run(PARENT,
                       "<<<<<<< SEARCH\n    int y = x * 2;\n=======\n    int y = x;\n"
                       ">>>>>>> REPLACE\n"
                       "<<<<<<< SEARCH\n    return y - 1;\n=======\n    return y;\n"
                       ">>>>>>> REPLACE\n",
                       &DIFF, 1);
    assert_non_null(strstr(reason, "SEARCH block 2 not found"));
    free(reason);
}

static void edit_outside_evolve_blocks_is_rejected(void **state)
{
    (void)state;
    char *reason = run(PARENT,
                       "<<<<<<< SEARCH\nint main(void) { return f(1); }\n=======\n"
                       "int main(void) { return 0; }\n>>>>>>> REPLACE\n",
                       &DIFF, 1);
    assert_non_null(strstr(reason, "outside"));
    free(reason);
}

static void reply_without_blocks_is_rejected(void **state)
{
    (void)state;
    char *reason = run(PARENT, "I think the code is fine as it is.", &DIFF, 1);
    assert_non_null(strstr(reason, "no SEARCH/REPLACE blocks"));
    free(reason);
    reason = run(PARENT, "<<<<<<< SEARCH\nint y\n", &DIFF, 1);
    assert_non_null(strstr(reason, "SEARCH block 1 has no ======="));
    free(reason);
}

static void empty_edit_is_rejected(void **state)
{
    (void)state;
    char *reason = run(PARENT,
                       "<<<<<<< SEARCH\n    return y + 1;\n=======\n    return y + 1;\n"
                       ">>>>>>> REPLACE\n",
                       &DIFF, 1);
    assert_non_null(strstr(reason, "empty edit"));
    free(reason);
}

static void over_long_program_is_rejected(void **state)
{
    (void)state;
    kv_reply_options small = {1, "c", 120};
    char *reason = run(PARENT,
                       "<<<<<<< SEARCH\n    return y + 1;\n=======\n"
                       "    return y + 1 + 0 + 0 + 0 + 0 + 0 + 0 + 0;\n>>>>>>> REPLACE\n",
                       &small, 1);
    assert_non_null(strstr(reason, "max_code_length 120"));
    free(reason);
}

static const char REWRITE[] = "#include <stdio.h>\n"
                              "// EVOLVE-BLOCK-START\n"
                              "int f(int x) { return 2 * x + 1; }\n"
                              "// EVOLVE-BLOCK-END\n"
                              "int main(void) { return f(1); }\n";

static void full_rewrite_takes_the_fenced_block_in_the_language(void **state)
{
    (void)state;
    /* A longer block in another language must not win over the C one. */
    char *reply =
        kv_asprintf("Here is the plan:\n```python\n# a long python sketch\n# more\n# more\n"
                    "# more\n# more\n# more\n# more\n# more\n# more\n# more\n# more\n```\n"
                    "And the program:\n```c\n%s```\nDone.\n",
                    REWRITE);
    char *child = run(PARENT, reply, &FULL, 0);
    assert_string_equal(child, REWRITE);
    free(child);
    free(reply);
}

static void full_rewrite_takes_the_longest_block_when_none_is_tagged(void **state)
{
    (void)state;
    char *reply = kv_asprintf("```\nshort\n```\n```\n%s```\n", REWRITE);
    char *code = kv_diff_extract_code(reply, "c");
    assert_string_equal(code, REWRITE);
    free(code);
    free(reply);
    assert_null(kv_diff_extract_code("no code here", "c"));
    assert_null(kv_diff_extract_code("```c\nint x; /* cut off", "c"));
    code = kv_diff_extract_code("```cpp\na\n```\n```c++\nlonger\n```\n", "C++");
    assert_string_equal(code, "longer\n");
    free(code);
}

static void full_rewrite_without_fence_or_outside_blocks_is_rejected(void **state)
{
    (void)state;
    char *reason = run(PARENT, "int f(int x) { return x; }", &FULL, 1);
    assert_non_null(strstr(reason, "no fenced code block"));
    free(reason);
    reason = run(PARENT, "```c\nint main(void) { return 0; }\n```\n", &FULL, 1);
    assert_non_null(strstr(reason, "outside"));
    free(reason);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_search_replace_is_applied),
        cmocka_unit_test(blocks_apply_in_order_each_on_the_previous_result),
        cmocka_unit_test(whitespace_differences_are_tolerated),
        cmocka_unit_test(ambiguous_search_is_rejected),
        cmocka_unit_test(search_not_found_is_rejected_naming_the_block),
        cmocka_unit_test(edit_outside_evolve_blocks_is_rejected),
        cmocka_unit_test(reply_without_blocks_is_rejected),
        cmocka_unit_test(empty_edit_is_rejected),
        cmocka_unit_test(over_long_program_is_rejected),
        cmocka_unit_test(full_rewrite_takes_the_fenced_block_in_the_language),
        cmocka_unit_test(full_rewrite_takes_the_longest_block_when_none_is_tagged),
        cmocka_unit_test(full_rewrite_without_fence_or_outside_blocks_is_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
