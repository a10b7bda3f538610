/* Prompts for the LLM mutator: they carry the parent, its metrics and the
 * reasons earlier attempts were rejected; the size budget drops the least
 * useful parts first and never the parent; a template directory overrides
 * the defaults; secrets never reach the model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "mutate/prompt.h"
#include "util/buf.h"
#include "util/fs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char PARENT_SRC[] = "// EVOLVE-BLOCK-START\nint kernel_body(void) { return 42; }\n"
                                 "// EVOLVE-BLOCK-END\n";

static kv_prompt_config config(void)
{
    kv_prompt_config c;
    memset(&c, 0, sizeof c);
    c.num_top_programs = 3;
    c.num_diverse_programs = 2;
    c.include_artifacts = 1;
    c.max_artifact_bytes = 20480;
    c.artifact_security_filter = 1;
    c.suggest_simplification_after_chars = 500;
    c.max_prompt_chars = 60000;
    return c;
}

static kv_program *program(const char *src, double fitness, const char *metrics_json)
{
    kv_program *p = kv_program_new();
    kv_program_set_source(p, src);
    p->fitness = fitness;
    if (metrics_json) p->metrics = json_loads(metrics_json, 0, NULL);
    return p;
}

static kv_program *attempt(kv_status st, const char *summary, const char *reason)
{
    kv_program *a = program("x", NAN, NULL);
    a->status = st;
    a->change_summary = kv_strdup(summary);
    a->status_reason = reason ? kv_strdup(reason) : NULL;
    return a;
}

static void prompt_carries_parent_metrics_and_rejection_reasons(void **state)
{
    (void)state;
    kv_program *parent = program(PARENT_SRC, 0.5, "{\"combined_score\": 0.5, \"speedup\": 1.25}");
    json_t *scen =
        json_loads("[{\"name\": \"decode_b1\", \"speedup\": 1.5, \"time_us\": 12.5}]", 0, NULL);
    kv_program *a1 = attempt(KV_STATUS_REJECTED, "diff: 1 SEARCH/REPLACE block",
                             "SEARCH block 2 not found: its lines do not appear");
    kv_program *a2 = attempt(KV_STATUS_FAILED, "unrolled the loop", "compile error: x undeclared");
    const kv_program *attempts[] = {a1, a2};
    kv_prompt_inputs in = {.parent = parent,
                           .scenarios = scen,
                           .attempts = attempts,
                           .n_attempts = 2,
                           .diff_mode = 1,
                           .language = "c"};
    char *err = NULL;
    kv_prompt_templates *t = kv_prompt_templates_load(NULL, &err);
    assert_non_null(t);
    kv_prompt_config cfg = config();
    kv_prompt p;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    assert_non_null(strstr(p.system, "EVOLVE-BLOCK"));
    assert_non_null(strstr(p.user, "```c\n// EVOLVE-BLOCK-START\nint kernel_body(void)"));
    assert_non_null(strstr(p.user, "- combined_score: 0.5\n"));
    assert_non_null(strstr(p.user, "- speedup: 1.25\n"));
    assert_non_null(strstr(p.user, "decode_b1: speedup=1.5, time_us=12.5"));
    assert_non_null(strstr(p.user, "rejected before evaluation: SEARCH block 2 not found"));
    assert_non_null(strstr(p.user, "failed: compile error: x undeclared"));
    assert_non_null(strstr(p.user, "<<<<<<< SEARCH")); /* diff-mode instructions */
    assert_int_equal(p.dropped_attempts, 0);
    kv_prompt_free(&p);

    in.diff_mode = 0;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    assert_null(strstr(p.user, "<<<<<<< SEARCH"));
    assert_non_null(strstr(p.user, "complete new program"));
    kv_prompt_free(&p);

    kv_prompt_templates_free(t);
    json_decref(scen);
    kv_program_free(parent);
    kv_program_free(a1);
    kv_program_free(a2);
}

/* A program whose source is N copies of a marked line. */
static char *big_source(const char *tag, int n)
{
    kv_buf b = KV_BUF_INIT;
    for (int i = 0; i < n; i++)
        kv_buf_printf(&b, "line %d of %s\n", i, tag);
    return kv_buf_steal(&b);
}

static void budget_drops_least_useful_parts_first_never_the_parent(void **state)
{
    (void)state;
    char *psrc = big_source("PARENTCODE", 50);
    kv_program *parent = program(psrc, 0.5, "{\"combined_score\": 0.5}");
    char *log = big_source("LOGLINE", 300);
    parent->artifacts = json_pack("{s:s}", "stderr", log);
    kv_program *attempts[4], *tops[2], *insp[2];
    for (int i = 0; i < 4; i++) {
        char summary[32];
        snprintf(summary, sizeof summary, "ATTEMPT-%d", i);
        attempts[i] = attempt(KV_STATUS_REJECTED, summary, "not found");
    }
    char *tsrc = big_source("TOPCODE", 60), *isrc = big_source("INSPCODE", 60);
    for (int i = 0; i < 2; i++) {
        tops[i] = program(tsrc, 0.9 - 0.1 * i, NULL);
        insp[i] = program(isrc, 0.1, NULL);
    }
    kv_prompt_inputs in = {.parent = parent,
                           .top = (const kv_program *const *)tops,
                           .n_top = 2,
                           .inspirations = (const kv_program *const *)insp,
                           .n_inspirations = 2,
                           .attempts = (const kv_program *const *)attempts,
                           .n_attempts = 4,
                           .diff_mode = 1,
                           .language = "c"};
    char *err = NULL;
    kv_prompt_templates *t = kv_prompt_templates_load(NULL, &err);
    kv_prompt_config cfg = config();
    kv_prompt p;

    /* Unlimited: everything is there. */
    cfg.max_prompt_chars = 0;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    size_t full = strlen(p.system) + strlen(p.user);
    assert_non_null(strstr(p.user, "ATTEMPT-0"));
    assert_non_null(strstr(p.user, "INSPCODE"));
    kv_prompt_free(&p);

    /* A little less: only the oldest attempt goes. */
    cfg.max_prompt_chars = (int)full - 10;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    assert_true(strlen(p.system) + strlen(p.user) <= full - 10);
    assert_int_equal(p.dropped_attempts, 1);
    assert_null(strstr(p.user, "ATTEMPT-0"));
    assert_non_null(strstr(p.user, "ATTEMPT-3"));
    assert_non_null(strstr(p.user, "INSPCODE"));
    kv_prompt_free(&p);

    /* Tighter: attempts, then inspirations, then top sources go; the artifact
     * is trimmed; the parent stays whole. */
    cfg.max_prompt_chars = (int)strlen(psrc) + 5000;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    assert_true(strlen(p.system) + strlen(p.user) <= (size_t)cfg.max_prompt_chars);
    assert_int_equal(p.dropped_attempts, 4);
    assert_int_equal(p.dropped_inspirations, 2);
    assert_int_equal(p.omitted_top_sources, 2);
    assert_true(p.artifacts_trimmed);
    assert_null(strstr(p.user, "INSPCODE"));
    assert_null(strstr(p.user, "TOPCODE"));
    assert_non_null(strstr(p.user, psrc));
    assert_non_null(strstr(p.user, "LOGLINE")); /* the tail of the log is kept */
    assert_false(p.over_budget);
    kv_prompt_free(&p);

    /* Impossible: the parent alone is larger; it is still there, whole. */
    cfg.max_prompt_chars = 100;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    assert_true(p.over_budget);
    assert_non_null(strstr(p.user, psrc));
    kv_prompt_free(&p);

    kv_prompt_templates_free(t);
    for (int i = 0; i < 4; i++)
        kv_program_free(attempts[i]);
    for (int i = 0; i < 2; i++) {
        kv_program_free(tops[i]);
        kv_program_free(insp[i]);
    }
    kv_program_free(parent);
    free(psrc);
    free(log);
    free(tsrc);
    free(isrc);
}

static void template_dir_overrides_defaults_file_by_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/kv_prompt_tpl_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = kv_path_join(dir, "diff_user.txt");
    const char *tpl = "CUSTOM {language} / {metrics} / {current_program} / {unknown}";
    assert_int_equal(kv_write_file(path, tpl, strlen(tpl)), 0);
    kv_program *parent = program(PARENT_SRC, 0.5, "{\"combined_score\": 0.5}");
    kv_prompt_inputs in = {.parent = parent, .diff_mode = 1, .language = "cuda"};
    char *err = NULL;
    kv_prompt_templates *t = kv_prompt_templates_load(dir, &err);
    assert_non_null(t);
    kv_prompt_config cfg = config();
    kv_prompt p;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    assert_true(kv_starts_with(p.user, "CUSTOM cuda / - combined_score: 0.5 / // EVOLVE"));
    assert_true(kv_ends_with(p.user, "/ {unknown}"));
    /* Templates the dir lacks keep their defaults. */
    assert_string_equal(p.system, kv_prompt_default_template("system_message"));
    kv_prompt_free(&p);
    /* prompt.system_message: literal text. */
    cfg.system_message = "You write CUDA.";
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    assert_string_equal(p.system, "You write CUDA.");
    kv_prompt_free(&p);
    kv_prompt_templates_free(t);
    kv_program_free(parent);
    unlink(path);
    free(path);
    rmdir(dir);

    assert_null(kv_prompt_templates_load("/nonexistent/kv_templates", &err));
    assert_non_null(strstr(err, "/nonexistent/kv_templates"));
    free(err);
}

static void secrets_in_artifacts_are_redacted(void **state)
{
    (void)state;
    setenv("KV_TEST_SERVICE_TOKEN", "tok-7f3a9b2c1d", 1);
    kv_program *parent = program(PARENT_SRC, 0.5, NULL);
    parent->artifacts = json_pack("{s:s}", "stderr",
                                  "using key sk-proj-abcdef0123456789XYZ\n"
                                  "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload\n"
                                  "config api_key=hunter2hunter2 and password: \"pa55word!\"\n"
                                  "env says tok-7f3a9b2c1d\n"
                                  "github ghp_0123456789abcdefghij\n"
                                  "error: illegal memory access at line 12\n");
    kv_prompt_inputs in = {.parent = parent, .diff_mode = 1, .language = "c"};
    char *err = NULL;
    kv_prompt_templates *t = kv_prompt_templates_load(NULL, &err);
    kv_prompt_config cfg = config();
    kv_prompt p;
    assert_int_equal(kv_prompt_build(t, &cfg, &in, &p, &err), 0);
    const char *secrets[] = {"abcdef0123456789XYZ", "eyJhbGciOiJIUzI1NiJ9", "hunter2", "pa55word",
                             "tok-7f3a9b2c1d",      "0123456789abcdefghij"};
    for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++) {
        if (strstr(p.user, secrets[i])) fail_msg("secret %s leaked", secrets[i]);
    }
    assert_non_null(strstr(p.user, "error: illegal memory access at line 12"));
    assert_non_null(strstr(p.user, "Bearer ***"));
    assert_non_null(strstr(p.user, "api_key=***"));
    kv_prompt_free(&p);
    kv_prompt_templates_free(t);
    kv_program_free(parent);
    unsetenv("KV_TEST_SERVICE_TOKEN");
}

static void builtin_templates_match_the_files_in_templates_dir(void **state)
{
    (void)state;
    const char *src = getenv("KV_SOURCE_DIR");
    char *dir = src ? kv_path_join(src, "templates") : NULL;
    if (!dir) {
        char *here = kv_path_dirname(__FILE__);
        dir = kv_asprintf("%s/../../templates", here);
        free(here);
    }
    size_t n = 0;
    for (size_t i = 0; kv_prompt_template_name(i); i++, n++) {
        const char *name = kv_prompt_template_name(i);
        char *file = kv_asprintf("%s/%s.txt", dir, name);
        char *text = kv_read_file(file, NULL);
        assert_non_null(text);
        if (strcmp(text, kv_prompt_default_template(name)) != 0)
            fail_msg("%s differs from the built-in copy: run python3 templates/embed.py", file);
        free(text);
        free(file);
    }
    assert_true(n >= 10);
    const char *needed[] = {
        "system_message",     "diff_user",        "full_rewrite_user", "evaluator_system_message",
        "evolution_history",  "previous_attempt", "top_program",       "inspirations_section",
        "inspiration_program"};
    for (size_t i = 0; i < sizeof needed / sizeof *needed; i++)
        assert_non_null(kv_prompt_default_template(needed[i]));
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prompt_carries_parent_metrics_and_rejection_reasons),
        cmocka_unit_test(budget_drops_least_useful_parts_first_never_the_parent),
        cmocka_unit_test(template_dir_overrides_defaults_file_by_file),
        cmocka_unit_test(secrets_in_artifacts_are_redacted),
        cmocka_unit_test(builtin_templates_match_the_files_in_templates_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
