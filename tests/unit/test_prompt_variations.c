/* OpenEvolve's template stochasticity and diff summaries, as kevolve builds
 * them: a {placeholder} of prompt.template_variations in the user template
 * becomes one of its phrasings (the same everywhere in one prompt, drawn
 * from the run's seed), nothing changes when the option is off; a diff
 * child's change summary shows its blocks within diff_summary_max_line_len
 * and diff_summary_max_lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mutate/diff.h"
#include "mutate/prompt.h"
#include "store/program.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static json_t *phrasings(void)
{
    return json_pack("{s:[s,s,s]}", "improvement_suggestion",
                     "Here's how:", "I suggest:", "We can enhance it by:");
}

static void placeholder_becomes_one_phrasing_everywhere(void **state)
{
    (void)state;
    json_t *v = phrasings();
    int seen[3] = {0, 0, 0};
    for (uint64_t seed = 0; seed < 60; seed++) {
        char *out = kv_prompt_vary("A {improvement_suggestion} B {improvement_suggestion} {other}",
                                   v, seed);
        assert_null(strstr(out, "{improvement_suggestion}"));
        assert_non_null(strstr(out, "{other}")); /* not a variation: left for the renderer */
        const char *names[] = {"Here's how:", "I suggest:", "We can enhance it by:"};
        int which = -1;
        for (int i = 0; i < 3; i++)
            if (strstr(out, names[i])) which = i;
        assert_true(which >= 0);
        /* the same phrasing in both places */
        char *want = kv_asprintf("A %s B %s {other}", names[which], names[which]);
        assert_string_equal(out, want);
        seen[which]++;
        free(want);
        char *again = kv_prompt_vary(
            "A {improvement_suggestion} B {improvement_suggestion} {other}", v, seed);
        assert_string_equal(out, again); /* reproducible from the seed */
        free(again);
        free(out);
    }
    assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
    json_decref(v);
}

static void prompt_uses_variations_only_when_stochasticity_is_on(void **state)
{
    (void)state;
    char dir[] = "/tmp/kv_test_var_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = kv_path_join(dir, "diff_user.txt");
    const char *tpl = "{improvement_suggestion}\n```{language}\n{current_program}\n```\n";
    assert_int_equal(kv_write_file(path, tpl, strlen(tpl)), 0);
    char *err = NULL;
    kv_prompt_templates *t = kv_prompt_templates_load(dir, &err);
    assert_non_null(t);
    kv_program *parent = kv_program_new();
    kv_program_set_source(parent, "x = 1\n");
    kv_prompt_config cfg = {.use_template_stochasticity = 1,
                            .template_variations = phrasings(),
                            .max_prompt_chars = 60000,
                            .max_artifact_bytes = 1000};
    kv_prompt_inputs in = {
        .parent = parent, .diff_mode = 1, .language = "python", .variation_seed = 3};
    kv_prompt p;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    assert_null(strstr(p.user, "{improvement_suggestion}"));
    assert_true(strstr(p.user, "Here's how:") || strstr(p.user, "I suggest:") ||
                strstr(p.user, "We can enhance it by:"));
    kv_prompt_free(&p);
    cfg.use_template_stochasticity = 0;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    assert_non_null(strstr(p.user, "{improvement_suggestion}")); /* used as written */
    kv_prompt_free(&p);
    json_decref(cfg.template_variations);
    kv_program_free(parent);
    kv_prompt_templates_free(t);
    unlink(path);
    rmdir(dir);
    free(path);
}

static void diff_summary_shows_blocks_within_the_limits(void **state)
{
    (void)state;
    kv_diff_block b[2] = {
        {"x = 1", "x = 2"},
        {"def f():\n    return 1\n    # a very long comment line here", "def f():\n    return 2"}};
    char *s = kv_diff_summary(b, 2, 20, 2);
    assert_string_equal(s, "Change 1: 'x = 1' to 'x = 2'\n"
                           "Change 2: Replace:\n"
                           "  def f():\n"
                           "      return 1\n"
                           "  ... (1 more lines)\n"
                           "with:\n"
                           "  def f():\n"
                           "      return 2");
    free(s);
    s = kv_diff_summary(b + 1, 1, 10, 30);
    assert_non_null(strstr(s, "\n      # a...")); /* cut to 10 characters, "..." included */
    free(s);

    /* A child made from a reply carries the summary under its one-line head. */
    kv_reply_options opt = {1, "python", 10000, 100, 30};
    char *child = NULL, *summary = NULL, *reason = NULL;
    assert_int_equal(kv_reply_to_child("x = 1\n",
                                       "<<<<<<< SEARCH\nx = 1\n=======\nx = 5\n>>>>>>> REPLACE\n",
                                       &opt, &child, &summary, &reason),
                     0);
    assert_string_equal(summary, "diff: 1 SEARCH/REPLACE block\nChange 1: 'x = 1' to 'x = 5'");
    free(child);
    free(summary);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(placeholder_becomes_one_phrasing_everywhere),
        cmocka_unit_test(prompt_uses_variations_only_when_stochasticity_is_on),
        cmocka_unit_test(diff_summary_shows_blocks_within_the_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
