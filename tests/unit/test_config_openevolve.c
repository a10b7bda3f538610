/* OpenEvolve users switch without editing their configs: every key of
 * OpenEvolve 0.3.2's configuration classes is known to kevolve and lands where
 * it means the same thing (or is accepted with a warning that says what
 * kevolve does instead), and the OpenEvolve repository's own example configs
 * load (tests/data/openevolve, copied unchanged; see its NOTICE). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"
#include "config/config_keys.h"
#include "util/buf.h"
#include "util/fs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Path of a file under tests/data/openevolve (caller frees). */
static char *data(const char *name)
{
    const char *src = getenv("KV_SOURCE_DIR");
    if (src) return kv_asprintf("%s/tests/data/openevolve/%s", src, name);
    const char *file = __FILE__;
    const char *cut = strstr(file, "tests/unit/");
    return kv_asprintf("%.*stests/data/openevolve/%s", (int)(cut - file), file, name);
}

/* Loads tests/data/openevolve/NAME, failing the test when it does not load. */
static void load(const char *name, kv_config *c)
{
    char *path = data(name);
    kv_config_error err;
    int rc = kv_config_load(path, c, &err);
    free(path);
    if (rc != 0) fail_msg("%s does not load: %s", name, err.message);
}

static int has_warning(const kv_config *c, const char *part)
{
    for (size_t i = 0; i < c->n_warnings; i++)
        if (strstr(c->warnings[i], part)) return 1;
    return 0;
}

static void assert_warned(const kv_config *c, const char *part)
{
    if (has_warning(c, part)) return;
    for (size_t i = 0; i < c->n_warnings; i++)
        fprintf(stderr, "  warning: %s\n", c->warnings[i]);
    fail_msg("no warning contains '%s'", part);
}

static void every_openevolve_key_is_known_and_in_the_every_key_config(void **state)
{
    (void)state;
    char *list_path = data("config_keys_0.3.2.txt");
    char *list = kv_read_file(list_path, NULL);
    assert_non_null(list);
    char *cfg_path = data("configs/every_key.yaml");
    char *yaml = kv_read_file(cfg_path, NULL);
    assert_non_null(yaml);
    size_t n = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        n++;
        const char *dot = strchr(line, '.');
        char section[32] = "";
        const char *name = line;
        if (dot) {
            snprintf(section, sizeof section, "%.*s", (int)(dot - line), line);
            name = dot + 1;
        }
        /* evolution_trace is a section kevolve accepts whole (ignored, warned). */
        const kv_key *k = strcmp(section, "evolution_trace") == 0
                              ? kv_config_key_find("", "evolution_trace")
                              : kv_config_key_find(section, name);
        if (!k) fail_msg("OpenEvolve key '%s' is unknown to kevolve", line);
        /* ... and the every-key config gives it, at its section's indentation. */
        const char *indent = !dot ? "\n" : strcmp(section, "model") == 0 ? "\n      " : "\n  ";
        char *want = kv_asprintf("%s%s:", indent, name);
        char *want_first = kv_asprintf("\n    - %s:", name); /* first key of a model entry */
        if (!strstr(yaml, want) && !(strcmp(section, "model") == 0 && strstr(yaml, want_first)))
            fail_msg("configs/every_key.yaml does not give '%s'", line);
        free(want);
        free(want_first);
    }
    assert_int_equal(n, 121); /* OpenEvolve 0.3.2 has 121 keys */
    free(list);
    free(yaml);
    free(list_path);
    free(cfg_path);
}

static void every_key_config_means_what_openevolve_means(void **state)
{
    (void)state;
    setenv("KV_EVERY_KEY_API_KEY", "sk-every-key", 1);
    kv_config c;
    load("configs/every_key.yaml", &c);
    assert_int_equal(c.max_iterations, 300);
    assert_int_equal(c.checkpoint_interval, 20);
    assert_string_equal(c.log_level, "WARNING");
    assert_int_equal(c.random_seed, 7);
    assert_int_equal(c.max_code_length, 12000);
    assert_int_equal(c.early_stopping_patience, 25);
    assert_float_equal(c.convergence_threshold, 0.002, 1e-15);

    assert_string_equal(c.llm.api_key, "sk-every-key");
    assert_string_equal(c.llm.provider, "openai");
    assert_float_equal(c.llm.temperature, 0.6, 1e-15);
    assert_float_equal(c.llm.top_p, 0.9, 1e-15);
    assert_int_equal(c.llm.max_tokens, 8192);
    assert_float_equal(c.llm.timeout, 90, 0);
    assert_int_equal(c.llm.retries, 2);
    assert_int_equal(c.llm.random_seed, 11);
    assert_string_equal(c.llm.reasoning_effort, "medium");
    assert_float_equal(c.llm.max_budget_usd, 20.0, 0);
    assert_int_equal(c.llm.n_models, 2);
    assert_string_equal(c.llm.models[0].name, "model-a");
    assert_float_equal(c.llm.models[0].weight, 0.75, 1e-15);
    assert_float_equal(c.llm.models[0].temperature, 0.4, 1e-15);
    assert_int_equal(c.llm.models[0].max_tokens, 2048);
    assert_int_equal(c.llm.models[0].retries, 1);
    assert_string_equal(c.llm.models[0].reasoning_effort, "low");
    assert_int_equal(c.llm.n_evaluator_models, 1);
    /* llm.system_message "system_message" names the built-in template. */
    assert_string_equal(c.prompt.system_message, "You improve programs.");

    assert_int_equal(c.prompt.num_top_programs, 4);
    assert_int_equal(c.prompt.use_template_stochasticity, 1);
    assert_int_equal(
        json_array_size(json_object_get(c.prompt.template_variations, "improvement_suggestion")),
        2);
    assert_int_equal(c.prompt.diff_summary_max_line_len, 80);
    assert_int_equal(c.prompt.diff_summary_max_lines, 12);
    assert_int_equal(c.prompt.max_artifact_bytes, 10240);

    assert_int_equal(c.database.population_size, 400);
    assert_int_equal(c.database.num_islands, 3);
    assert_int_equal(c.database.feature_bins[0], 6);
    assert_int_equal(c.database.feature_bins[1], 8);
    assert_int_equal(c.database.random_seed, 9);

    assert_float_equal(c.evaluator.timeout, 120, 0);
    assert_int_equal(c.evaluator.cascade_evaluation, 1);
    assert_int_equal(c.evaluator.n_cascade_thresholds, 2);
    assert_int_equal(c.evaluator.parallel_evaluations, 2);

    /* Keys kevolve handles differently say so; defaults and nulls say nothing. */
    assert_warned(&c, "diff_pattern: kevolve parses SEARCH/REPLACE blocks with its own parser");
    assert_warned(&c, "max_tasks_per_child:");
    assert_warned(&c, "evolution_trace:");
    assert_warned(&c, "database.max_snapshot_artifacts:");
    assert_false(has_warning(&c, "llm.provider")); /* openai is what kevolve speaks */
    assert_false(has_warning(&c, "manual_mode"));  /* false */
    assert_false(has_warning(&c, "programs_as_changes_description"));
    kv_config_free(&c);
}

static void default_config_of_openevolve_loads(void **state)
{
    (void)state;
    kv_config c;
    load("configs/default_config.yaml", &c);
    assert_int_equal(c.max_iterations, 100);
    assert_int_equal(c.early_stopping_patience, 0); /* null: off */
    assert_int_equal(c.prompt.use_template_stochasticity, 1);
    assert_int_equal(
        json_array_size(json_object_get(c.prompt.template_variations, "improvement_suggestion")),
        3);
    assert_int_equal(c.prompt.diff_summary_max_line_len, 100);
    assert_int_equal(c.prompt.diff_summary_max_lines, 30);
    assert_int_equal(c.evaluator.cascade_evaluation, 1);
    assert_int_equal(c.evaluator.parallel_evaluations, 4);
    assert_int_equal(c.llm.n_evaluator_models, 2);
    assert_warned(&c, "enforce_evolve_blocks: kevolve always enforces EVOLVE-BLOCKs");
    assert_false(has_warning(&c, "not built"));
    kv_config_free(&c);
}

static void claude_code_quickstart_loads_and_says_models_go_through_openai_api(void **state)
{
    (void)state;
    kv_config c;
    load("configs/claude_code_quickstart.yaml", &c);
    assert_string_equal(c.llm.provider, "claude_code");
    assert_int_equal(c.llm.n_models, 2);
    assert_float_equal(c.llm.models[0].max_budget_usd, 1.0, 0);
    assert_warned(&c, ":19: llm.provider: provider 'claude_code' is not built in kevolve: every "
                      "model is called through the OpenAI-compatible API at "
                      "https://api.openai.com/v1");
    assert_warned(&c, "llm.models[0].max_budget_usd: a per-call budget");
    assert_warned(&c, "llm.models[1].max_budget_usd: a per-call budget");
    assert_int_equal(c.evaluator.cascade_evaluation, -1); /* unset: OpenEvolve's default */
    kv_config_free(&c);
}

static void tsp_large_codebase_mode_loads_with_what_kevolve_shows_instead(void **state)
{
    (void)state;
    setenv("DEEPSEEK_API", "sk-test", 1); /* OpenEvolve refuses it unset, as kevolve does */
    kv_config c;
    load("configs/tsp_tour_minimization.yaml", &c);
    assert_string_equal(c.language, "mixed");
    assert_int_equal(c.prompt.programs_as_changes_description, 1);
    assert_non_null(strstr(c.prompt.initial_changes_description, "UTSP"));
    assert_non_null(strstr(c.prompt.system_message_changes_description, "Changes Description"));
    assert_warned(&c, "prompt.programs_as_changes_description: not built: kevolve shows "
                      "programs' code in prompts");
    assert_int_equal(c.evaluator.cascade_evaluation, 0);
    kv_config_free(&c);
}

static void arc_benchmark_event_based_early_stopping_loads(void **state)
{
    (void)state;
    setenv("OPENROUTER_API_KEY", "sk-test", 1);
    kv_config c;
    load("configs/arc_benchmark.yaml", &c);
    assert_int_equal(c.early_stopping_patience, -1);
    assert_float_equal(c.convergence_threshold, 1.0, 0);
    assert_int_equal(c.llm.n_models, 2);
    kv_config_free(&c);
}

static void function_minimization_config_loads(void **state)
{
    (void)state;
    kv_config c;
    load("function_minimization/config.yaml", &c);
    assert_int_equal(c.max_iterations, 10);
    assert_int_equal(c.llm.n_models, 2);
    assert_string_equal(c.llm.models[0].name, "gpt-5-mini");
    assert_float_equal(c.llm.models[0].weight, 0.8, 1e-15);
    assert_string_equal(c.llm.models[1].name, "gpt-5-nano");
    assert_int_equal(c.evaluator.cascade_evaluation, -1);
    assert_float_equal(c.evaluator.cascade_thresholds[0], 1.3, 1e-15);
    assert_int_equal(c.evaluator.n_cascade_thresholds, 1);
    assert_int_equal(c.evaluator.parallel_evaluations, 3);
    assert_warned(&c, "database.embedding_model:");
    kv_config_free(&c);
}

static void top_level_parallel_evaluations_is_ignored_as_openevolve_does(void **state)
{
    (void)state;
    kv_config c;
    kv_config_error err;
    int rc = kv_config_load_string("max_iterations: 5\nparallel_evaluations: 7\n", "t.yaml", "/tmp",
                                   &c, &err);
    if (rc != 0) fail_msg("%s", err.message);
    assert_int_equal(c.evaluator.parallel_evaluations, 1);
    assert_warned(&c, "t.yaml:2: parallel_evaluations: OpenEvolve ignores a top-level "
                      "parallel_evaluations and so does kevolve");
    kv_config_free(&c);
}

/* Keys OpenEvolve reads nowhere and so accepts: kevolve accepts them too,
 * with a warning that says where the setting really goes. */
static void attention_optimization_configs_load_with_what_openevolve_ignores(void **state)
{
    (void)state;
    kv_config c;
    load("configs/attention_optimization.yaml", &c);
    assert_int_equal(c.max_code_length, 200000); /* max_program_length is not it */
    assert_warned(&c, "max_program_length: not read by OpenEvolve (its key is max_code_length)");
    kv_config_free(&c);
    load("configs/attention_optimization_failing.yaml", &c);
    assert_warned(&c, "evaluation: a section OpenEvolve does not read, ignored by kevolve too");
    assert_null(json_object_get(c.evaluator_sections, "evaluation"));
    assert_non_null(json_object_get(c.evaluator_sections, "checkpoints"));
    assert_int_equal(c.evaluator.parallel_evaluations, 1); /* evaluation.* did not land there */
    kv_config_free(&c);
}

/* A run needs its API key; checking a config does not: with
 * KV_CONFIG_SECRETS_OPTIONAL an unset ${VAR} in an api_key is a warning
 * naming it, and the key stays unset. Elsewhere it is still an error. */
static void a_secret_from_an_unset_variable_is_optional_when_checking(void **state)
{
    (void)state;
    unsetenv("ANTHROPIC_API_KEY");
    char *path = data("configs/circle_packing_phase_1_anthropic.yaml");
    kv_config c;
    kv_config_error err;
    assert_int_equal(kv_config_load(path, &c, &err), -1);
    assert_non_null(strstr(err.message, "llm.api_key: environment variable ANTHROPIC_API_KEY is "
                                        "not set"));
    kv_config_free(&c);
    if (kv_config_load_ex(path, &c, &err, KV_CONFIG_SECRETS_OPTIONAL) != 0)
        fail_msg("does not load without its secret: %s", err.message);
    assert_null(c.llm.api_key);
    assert_warned(&c, ":13: llm.api_key: environment variable ANTHROPIC_API_KEY is not set; "
                      "checked without it (a run needs it)");
    kv_config_free(&c);
    free(path);
    /* Not a secret: the variable is still needed. */
    assert_int_equal(kv_config_load_string("llm:\n  api_base: ${KV_TEST_SURELY_UNSET}\n", "t.yaml",
                                           "/tmp", &c, &err),
                     -1);
    kv_config_free(&c);
}

static void template_variations_must_be_lists_of_phrasings(void **state)
{
    (void)state;
    kv_config c;
    kv_config_error err;
    assert_int_equal(kv_config_load_string("prompt:\n  template_variations:\n    greeting: hi\n",
                                           "t.yaml", "/tmp", &c, &err),
                     -1);
    assert_non_null(strstr(err.message, "prompt.template_variations.greeting: expected a list"));
    kv_config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_openevolve_key_is_known_and_in_the_every_key_config),
        cmocka_unit_test(every_key_config_means_what_openevolve_means),
        cmocka_unit_test(default_config_of_openevolve_loads),
        cmocka_unit_test(claude_code_quickstart_loads_and_says_models_go_through_openai_api),
        cmocka_unit_test(tsp_large_codebase_mode_loads_with_what_kevolve_shows_instead),
        cmocka_unit_test(arc_benchmark_event_based_early_stopping_loads),
        cmocka_unit_test(function_minimization_config_loads),
        cmocka_unit_test(top_level_parallel_evaluations_is_ignored_as_openevolve_does),
        cmocka_unit_test(template_variations_must_be_lists_of_phrasings),
        cmocka_unit_test(attention_optimization_configs_load_with_what_openevolve_ignores),
        cmocka_unit_test(a_secret_from_an_unset_variable_is_optional_when_checking),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
