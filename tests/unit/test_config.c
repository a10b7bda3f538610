/* Tests of the config module: defaults, OpenEvolve configs, error messages
 * (line, dotted key, nearest key), evaluator sections, ${VAR} expansion,
 * feature_bins forms, path resolution, dump round trip, validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"
#include "config/config_keys.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Path of a fixture under tests/data/config (caller frees). */
static char *fixture(const char *name)
{
    const char *src = getenv("KV_SOURCE_DIR");
    if (src) return kv_asprintf("%s/tests/data/config/%s", src, name);
    const char *file = __FILE__;
    const char *cut = strstr(file, "tests/unit/");
    char *rel = kv_asprintf("%.*stests/data/config/%s", (int)(cut - file), file, name);
    char *abs = kv_path_absolute(rel);
    free(rel);
    return abs;
}

static char *fixture_dir(void)
{
    char *p = fixture("x");
    p[strlen(p) - 2] = '\0';
    return p;
}

/* Loads TEXT expecting success. */
static void load_ok(const char *text, kv_config *c)
{
    kv_config_error err;
    int rc = kv_config_load_string(text, "t.yaml", "/tmp", c, &err);
    if (rc != 0) fail_msg("unexpected error: %s", err.message);
}

/* Loads TEXT expecting failure whose message contains WANT. */
static void load_fails_with(const char *text, const char *want)
{
    kv_config c;
    kv_config_error err;
    assert_int_equal(kv_config_load_string(text, "t.yaml", "/tmp", &c, &err), -1);
    if (!strstr(err.message, want)) fail_msg("message '%s' lacks '%s'", err.message, want);
    kv_config_free(&c);
}

static int has_warning(const kv_config *c, const char *part)
{
    for (size_t i = 0; i < c->n_warnings; i++)
        if (strstr(c->warnings[i], part)) return 1;
    return 0;
}

static void defaults_are_the_documented_ones(void **state)
{
    (void)state;
    kv_config c;
    kv_config_init(&c);
    assert_int_equal(c.max_iterations, 100);
    assert_int_equal(c.checkpoint_interval, 10);
    assert_string_equal(c.log_level, "INFO");
    assert_true(c.has_random_seed);
    assert_int_equal(c.random_seed, 42);
    assert_string_equal(c.language, "python");
    assert_string_equal(c.file_suffix, ".py");
    assert_int_equal(c.diff_based_evolution, 1);
    assert_false(c.has_target_score);
    assert_string_equal(c.llm.api_base, "https://api.openai.com/v1");
    assert_null(c.llm.api_key);
    assert_float_equal(c.llm.temperature, 0.7, 1e-12);
    assert_int_equal(c.llm.max_tokens, 4096);
    assert_int_equal(c.llm.max_concurrency, 8);
    assert_int_equal(c.llm.n_models, 0);
    assert_int_equal(c.prompt.num_top_programs, 3);
    assert_int_equal(c.prompt.max_prompt_chars, 60000);
    assert_int_equal(c.database.population_size, 1000);
    assert_int_equal(c.database.num_islands, 5);
    assert_int_equal(c.database.n_feature_dimensions, 2);
    assert_string_equal(c.database.feature_dimensions[0], "complexity");
    assert_string_equal(c.database.feature_dimensions[1], "diversity");
    assert_int_equal(c.database.feature_bins[0], 10);
    assert_int_equal(c.database.feature_bins[1], 10);
    assert_int_equal(c.database.migration_interval, 50);
    assert_float_equal(c.evaluator.timeout, 300, 0);
    assert_int_equal(c.evaluator.parallel_evaluations, 1);
    assert_int_equal(c.evaluator.max_artifact_storage, 102400);
    assert_string_equal(c.evaluator.backend, "auto");
    assert_non_null(c.evaluator_sections);
    assert_int_equal(json_object_size(c.evaluator_sections), 0);
    kv_config_error err;
    assert_int_equal(kv_config_validate(&c, &err), 0);
    kv_config_free(&c);
}

static void empty_file_gives_defaults(void **state)
{
    (void)state;
    kv_config c;
    load_ok("# nothing here\n", &c);
    assert_int_equal(c.max_iterations, 100);
    assert_int_equal(c.n_warnings, 0);
    kv_config_free(&c);
}

static void openevolve_config_loads_with_every_key(void **state)
{
    (void)state;
    char *path = fixture("openevolve_full.yaml");
    char *dir = fixture_dir();
    kv_config c;
    kv_config_error err;
    int rc = kv_config_load(path, &c, &err);
    if (rc != 0) fail_msg("%s", err.message);
    assert_int_equal(c.max_iterations, 250);
    assert_int_equal(c.checkpoint_interval, 25);
    assert_string_equal(c.log_level, "DEBUG");
    assert_int_equal(c.random_seed, 1234);
    assert_int_equal(c.early_stopping_patience, 40);
    assert_float_equal(c.convergence_threshold, 0.0005, 1e-15);
    assert_true(c.has_target_score);
    assert_float_equal(c.target_score, 0.98, 1e-15);
    char *want = kv_asprintf("%s/initial_program.py", dir);
    assert_string_equal(c.initial_program, want);
    free(want);
    want = kv_asprintf("%s/evaluator.py", dir);
    assert_string_equal(c.evaluator_program, want);
    free(want);

    assert_int_equal(c.llm.n_models, 3);
    assert_string_equal(c.llm.models[0].name, "gemini-2.0-flash-lite");
    assert_float_equal(c.llm.models[0].weight, 0.8, 1e-15);
    assert_float_equal(c.llm.models[0].temperature, 0.6, 1e-15);
    assert_true(isnan(c.llm.models[1].temperature)); /* inherits */
    assert_int_equal(c.llm.models[1].max_tokens, 8192);
    assert_string_equal(c.llm.models[1].reasoning_effort, "high");
    assert_int_equal(c.llm.models[1].is_reasoning, 1);
    assert_int_equal(c.llm.models[0].is_reasoning, -1);
    assert_float_equal(c.llm.models[1].price_output_per_mtok, 0.40, 1e-15);
    assert_string_equal(c.llm.models[2].name, "builtin:tune");
    assert_int_equal(c.llm.n_evaluator_models, 1);
    assert_float_equal(c.llm.timeout, 120, 0);
    assert_float_equal(c.llm.max_budget_usd, 12.5, 0);
    assert_int_equal(c.llm.max_concurrency, 4);

    assert_non_null(strstr(c.prompt.system_message, "EVOLVE-BLOCK markers.\n"));
    assert_int_equal(c.prompt.num_top_programs, 4);
    assert_int_equal(c.prompt.comprehensive_implementation_min_lines, 60);
    json_t *tv = json_object_get(c.prompt.template_variations, "improvement_suggestion");
    assert_int_equal(json_array_size(tv), 2);

    assert_int_equal(c.database.population_size, 500);
    assert_int_equal(c.database.num_islands, 4);
    assert_int_equal(c.database.n_feature_dimensions, 3);
    assert_string_equal(c.database.feature_dimensions[2], "score");
    assert_int_equal(c.database.feature_bins[0], 8);
    assert_int_equal(c.database.feature_bins[1], 10);
    assert_int_equal(c.database.feature_bins[2], 12);
    assert_true(c.database.has_random_seed);
    assert_int_equal(c.database.random_seed, 7);
    assert_int_equal(c.database.cleanup_old_artifacts, 0);
    want = kv_asprintf("%s/artifacts", dir);
    assert_string_equal(c.database.artifacts_base_path, want);
    free(want);

    assert_float_equal(c.evaluator.timeout, 90, 0);
    assert_int_equal(c.evaluator.memory_limit_mb, 4096);
    assert_int_equal(c.evaluator.n_cascade_thresholds, 3);
    assert_float_equal(c.evaluator.cascade_thresholds[2], 0.85, 1e-15);
    assert_int_equal(c.evaluator.parallel_evaluations, 4);
    assert_int_equal(c.evaluator.use_llm_feedback, 1);

    /* db_path and meta_prompt_weight are warned about; distributed: false and
     * use_meta_prompting: false are not. */
    assert_true(has_warning(&c, ":70: database.db_path: OpenEvolve's checkpoint folder"));
    assert_true(has_warning(&c, ":67: prompt.meta_prompt_weight: not implemented"));
    /* Template stochasticity is built: no warning. Keys kevolve handles
     * differently say so rather than doing nothing quietly. */
    assert_false(has_warning(&c, "use_template_stochasticity"));
    assert_true(has_warning(&c, "database.diversity_metric: kevolve measures diversity"));
    assert_true(has_warning(&c, "database.artifacts_base_path: not used"));
    assert_true(has_warning(&c, "database.artifact_size_threshold: not used"));
    assert_true(has_warning(&c, "database.artifact_retention_days: not used"));
    assert_int_equal(c.n_warnings, 6);
    assert_non_null(strstr(c.text, "migration_interval: 30"));
    kv_config_free(&c);
    free(path);
    free(dir);
}

static void misspelt_key_names_line_and_nearest_key(void **state)
{
    (void)state;
    char *path = fixture("misspelt_key.yaml");
    kv_config c;
    kv_config_error err;
    assert_int_equal(kv_config_load(path, &c, &err), -1);
    char *want = kv_asprintf(
        "%s:4: database.migraton_interval: unknown key; did you mean 'migration_interval'?", path);
    assert_string_equal(err.message, want);
    free(want);
    free(path);
    kv_config_free(&c);
}

static void misspelt_model_key_names_the_entry(void **state)
{
    (void)state;
    load_fails_with("llm:\n  models:\n    - name: a\n    - nmae: b\n",
                    "t.yaml:4: llm.models[1].nmae: unknown key; did you mean 'name'?");
}

static void word_for_an_integer_is_a_type_error(void **state)
{
    (void)state;
    char *path = fixture("wrong_type.yaml");
    kv_config c;
    kv_config_error err;
    assert_int_equal(kv_config_load(path, &c, &err), -1);
    char *want = kv_asprintf("%s:5: max_iterations: expected an integer, got 'ten'", path);
    assert_string_equal(err.message, want);
    free(want);
    free(path);
    kv_config_free(&c);
}

static void list_for_a_scalar_is_a_type_error(void **state)
{
    (void)state;
    load_fails_with("llm:\n  temperature: [1, 2]\n",
                    "t.yaml:2: llm.temperature: expected a number, got a list");
    load_fails_with("diff_based_evolution: maybe\n",
                    "t.yaml:1: diff_based_evolution: expected a boolean");
    load_fails_with("database:\n  feature_dimensions: complexity\n",
                    "database.feature_dimensions: expected a list of strings, got 'complexity'");
}

static void unknown_top_level_scalar_is_a_typo(void **state)
{
    (void)state;
    load_fails_with("max_iteration: 5\n",
                    "t.yaml:1: max_iteration: unknown key; did you mean 'max_iterations'?");
    load_fails_with("random_seeds: [1, 2]\n", "did you mean 'random_seed'?");
}

static void unknown_section_is_passed_to_evaluator_as_typed_json(void **state)
{
    (void)state;
    kv_config c;
    load_ok("novelty:\n  k: 3\n  w: 0.5\n  on: true\n  name: \"7\"\n  none: ~\n"
            "  list: [1, two, 3.5]\n  nested: {a: {b: x}}\n",
            &c);
    json_t *n = json_object_get(c.evaluator_sections, "novelty");
    assert_non_null(n);
    assert_true(json_is_integer(json_object_get(n, "k")));
    assert_int_equal(json_integer_value(json_object_get(n, "k")), 3);
    assert_true(json_is_real(json_object_get(n, "w")));
    assert_true(json_is_true(json_object_get(n, "on")));
    assert_string_equal(json_string_value(json_object_get(n, "name")), "7");
    assert_true(json_is_null(json_object_get(n, "none")));
    json_t *list = json_object_get(n, "list");
    assert_string_equal(json_string_value(json_array_get(list, 1)), "two");
    assert_true(json_is_real(json_array_get(list, 2)));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(n, "nested"), "a"), "b")),
        "x");
    kv_config_free(&c);
}

static void section_name_close_to_a_kevolve_section_is_an_error(void **state)
{
    (void)state;
    load_fails_with("databse:\n  num_islands: 3\n",
                    "t.yaml:1: databse: unknown section; did you mean 'database'?");
    load_fails_with("llm: gpt-4\n", "t.yaml:1: llm: expected a mapping (the llm section)");
}

static void allow_full_rewrites_warns_but_loads(void **state)
{
    (void)state;
    char *path = fixture("full_rewrites.yaml");
    kv_config c;
    kv_config_error err;
    int rc = kv_config_load(path, &c, &err);
    if (rc != 0) fail_msg("%s", err.message);
    assert_int_equal(c.max_iterations, 5);
    assert_true(has_warning(&c, ":2: allow_full_rewrites: not read by OpenEvolve either; kevolve "
                                "ignores it (use diff_based_evolution: false"));
    /* a top-level parallel_evaluations is ignored, as OpenEvolve does, with a warning */
    assert_true(has_warning(&c, ":3: parallel_evaluations: OpenEvolve ignores a top-level"));
    assert_int_equal(c.evaluator.parallel_evaluations, 1);
    assert_int_equal(c.n_warnings, 2);
    kv_config_free(&c);
    free(path);
}

static void evaluator_parallel_evaluations_wins_over_top_level_one(void **state)
{
    (void)state;
    kv_config c;
    load_ok("parallel_evaluations: 3\nevaluator:\n  parallel_evaluations: 6\n", &c);
    assert_int_equal(c.evaluator.parallel_evaluations, 6);
    kv_config_free(&c);
    load_ok("llm:\n  system_message: old place\n", &c);
    assert_string_equal(c.prompt.system_message, "old place");
    kv_config_free(&c);
}

static void env_vars_expand_and_stay_out_of_text_and_dump(void **state)
{
    (void)state;
    setenv("KV_TEST_SECRET", "sk-secret-123", 1);
    unsetenv("KV_TEST_UNSET");
    setenv("KV_TEST_EMPTY", "", 1);
    kv_config c;
    load_ok("max_iterations: ${KV_TEST_UNSET:-17}\n"
            "log_level: ${KV_TEST_EMPTY:-WARNING}\n"
            "llm:\n  api_key: ${KV_TEST_SECRET}\n"
            "  models:\n    - name: m-${KV_TEST_UNSET:-x}\n      api_key: \"${KV_TEST_SECRET}\"\n"
            "prompt:\n  system_message: \"cost $$5, literal $${HOME}\"\n",
            &c);
    assert_int_equal(c.max_iterations, 17);
    assert_string_equal(c.log_level, "WARNING");
    assert_string_equal(c.llm.api_key, "sk-secret-123");
    assert_string_equal(c.llm.models[0].name, "m-x");
    assert_string_equal(c.llm.models[0].api_key, "sk-secret-123");
    assert_string_equal(c.prompt.system_message, "cost $$5, literal ${HOME}");
    assert_non_null(strstr(c.text, "${KV_TEST_SECRET}"));
    assert_null(strstr(c.text, "sk-secret"));
    char *dump = kv_config_dump(&c);
    assert_null(strstr(dump, "sk-secret"));
    assert_non_null(strstr(dump, "api_key: \"***\""));
    free(dump);
    kv_config_free(&c);
}

static void missing_env_var_is_an_error_naming_it(void **state)
{
    (void)state;
    unsetenv("KV_TEST_NOPE");
    load_fails_with("max_iterations: 3\nllm:\n  api_key: ${KV_TEST_NOPE}\n",
                    "t.yaml:3: llm.api_key: environment variable KV_TEST_NOPE is not set");
    load_fails_with("log_level: ${UNCLOSED\n", "t.yaml:1: log_level: unterminated '${'");
}

static void feature_bins_as_int_applies_to_every_dimension(void **state)
{
    (void)state;
    kv_config c;
    load_ok("database:\n  feature_bins: 4\n  feature_dimensions: [a, b, c]\n", &c);
    assert_int_equal(c.database.n_feature_dimensions, 3);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(c.database.feature_bins[i], 4);
    kv_config_free(&c);
}

static void feature_bins_as_map_sets_named_dimensions(void **state)
{
    (void)state;
    kv_config c;
    load_ok("database:\n  feature_bins: {diversity: 6}\n", &c);
    assert_int_equal(c.database.feature_bins[0], 10);
    assert_int_equal(c.database.feature_bins[1], 6);
    kv_config_free(&c);
    load_fails_with("database:\n  feature_dimensions: [a]\n  feature_bins:\n    b: 3\n",
                    "t.yaml:4: database.feature_bins.b: 'b' is not one of "
                    "database.feature_dimensions (a)");
    load_fails_with("database:\n  feature_bins: {complexity: 0}\n",
                    "t.yaml:2: database.feature_bins.complexity: must be at least 1, got 0");
}

static void relative_paths_resolve_against_config_dir(void **state)
{
    (void)state;
    kv_config c;
    kv_config_error err;
    assert_int_equal(kv_config_load_string("initial_program: kern/gqa.cu\nevaluator: ../ev.sh\n",
                                           "t.yaml", "/tmp", &c, &err),
                     0);
    assert_string_equal(c.initial_program, "/tmp/kern/gqa.cu");
    assert_non_null(strstr(c.evaluator_program, "ev.sh"));
    assert_int_equal(c.evaluator_program[0], '/');
    /* language and suffix guessed from the program */
    assert_string_equal(c.language, "cuda");
    assert_string_equal(c.file_suffix, ".cu");
    kv_config_free(&c);
    load_ok("initial_program: /abs/k.cl\nlanguage: opencl-c\n", &c);
    assert_string_equal(c.initial_program, "/abs/k.cl");
    assert_string_equal(c.language, "opencl-c"); /* given wins */
    assert_string_equal(c.file_suffix, ".cl");
    kv_config_free(&c);
    load_ok("language: rust\n", &c);
    assert_string_equal(c.file_suffix, ".rs");
    kv_config_free(&c);
}

static void primary_model_shorthand_builds_models(void **state)
{
    (void)state;
    kv_config c;
    load_ok("llm:\n  primary_model: big\n  primary_model_weight: 0.7\n"
            "  secondary_model: small\n  secondary_model_weight: 0.3\n",
            &c);
    assert_int_equal(c.llm.n_models, 2);
    assert_string_equal(c.llm.models[0].name, "big");
    assert_float_equal(c.llm.models[0].weight, 0.7, 0);
    assert_string_equal(c.llm.models[1].name, "small");
    assert_float_equal(c.llm.models[1].weight, 0.3, 0);
    kv_config_free(&c);
}

static void null_unsets_optional_values(void **state)
{
    (void)state;
    kv_config c;
    load_ok("random_seed: null\nlog_level: ~\ntarget_score:\n", &c);
    assert_false(c.has_random_seed);
    assert_string_equal(c.log_level, "INFO");
    assert_false(c.has_target_score);
    kv_config_free(&c);
}

/* Loads the dump of A and checks it dumps to the same text. */
static void assert_round_trip(const kv_config *a)
{
    char *d1 = kv_config_dump(a);
    kv_config b;
    kv_config_error err;
    if (kv_config_load_string(d1, "dump.yaml", NULL, &b, &err) != 0)
        fail_msg("dump does not load: %s\n%s", err.message, d1);
    char *d2 = kv_config_dump(&b);
    assert_string_equal(d1, d2);
    assert_int_equal(a->max_iterations, b.max_iterations);
    assert_int_equal(a->llm.n_models, b.llm.n_models);
    assert_int_equal(a->database.n_feature_dimensions, b.database.n_feature_dimensions);
    for (size_t i = 0; i < a->database.n_feature_dimensions; i++)
        assert_int_equal(a->database.feature_bins[i], b.database.feature_bins[i]);
    assert_true(json_equal(a->evaluator_sections, b.evaluator_sections));
    kv_config_free(&b);
    free(d1);
    free(d2);
}

static void dump_loads_back_to_an_equal_config(void **state)
{
    (void)state;
    kv_config c;
    kv_config_init(&c);
    assert_round_trip(&c);
    kv_config_free(&c);

    char *path = fixture("openevolve_full.yaml");
    kv_config_error err;
    assert_int_equal(kv_config_load(path, &c, &err), 0);
    assert_round_trip(&c);
    char *dump = kv_config_dump(&c);
    /* every stored key of the table is in the dump */
    for (size_t i = 0; i < kv_config_key_count; i++) {
        const kv_key *k = &kv_config_key_table[i];
        if (k->alias_of || k->type == KV_KEY_IGNORED) continue;
        char *line = kv_asprintf("%s:", k->name);
        if (!strstr(dump, line)) fail_msg("dump lacks %s.%s", k->section, k->name);
        free(line);
    }
    assert_non_null(strstr(dump, "\"algotune\":"));
    free(dump);
    kv_config_free(&c);
    free(path);

    load_ok("target_score: 0.1\nprompt:\n  system_message: \"tab\\there \\\"q\\\" ${X:-y} "
            "$${lit}\\n\"\n"
            "llm:\n  models:\n    - name: a\n      temperature: 0.30000000000000004\n"
            "sec:\n  list:\n    - {a: 1}\n    - []\n  real: 2.0\n  big: 1e300\n",
            &c);
    assert_round_trip(&c);
    kv_config_free(&c);
}

static void validation_rejects_out_of_range_values(void **state)
{
    (void)state;
    load_fails_with("database:\n  exploration_ratio: 1.5\n",
                    "t.yaml:2: database.exploration_ratio: must be between 0 and 1, got 1.5");
    load_fails_with("database:\n  exploration_ratio: 0.5\n  exploitation_ratio: 0.7\n",
                    "database.exploitation_ratio: exploration_ratio + exploitation_ratio must "
                    "not exceed 1");
    load_fails_with("\n\ndatabase:\n  num_islands: 0\n",
                    "t.yaml:4: database.num_islands: must be at least 1, got 0");
    load_fails_with("evaluator:\n  timeout: 0\n", "evaluator.timeout: must be a positive number");
    load_fails_with("llm:\n  models:\n    - name: a\n      weight: -1\n",
                    "t.yaml:4: llm.models[0].weight: must be a number >= 0");
    load_fails_with("max_iterations: -1\n", "max_iterations: must be at least 0");
    load_fails_with("database:\n  feature_dimensions: [a, \"\"]\n",
                    "database.feature_dimensions: entry 1 is empty");
    load_fails_with("evaluator:\n  cascade_thresholds: [0.5, .nan]\n",
                    "evaluator.cascade_thresholds: entry 1 is not a finite number");
    load_fails_with("log_level: loud\n", "t.yaml:1: log_level: unknown level 'loud'");

    kv_config c;
    kv_config_init(&c);
    c.evaluator.parallel_evaluations = 0;
    kv_config_error err;
    assert_int_equal(kv_config_validate(&c, &err), -1);
    assert_string_equal(err.message, "evaluator.parallel_evaluations: must be at least 1, got 0");
    kv_config_free(&c);
}

static void yaml_syntax_error_reports_line(void **state)
{
    (void)state;
    load_fails_with("max_iterations: 3\nllm:\n  models: [a\n", "t.yaml:");
    load_fails_with("max_iterations: 3\nllm:\n  models: [a\n", "YAML syntax error");
    load_fails_with("- a\n- b\n", "t.yaml:1: (top level): expected a mapping of keys");
}

static void reference_markdown_documents_every_key(void **state)
{
    (void)state;
    char *md = kv_config_reference_markdown();
    assert_non_null(strstr(md, "| Key | Type | Default | Description |"));
    assert_non_null(strstr(md, "| `migration_interval` | integer | `50` |"));
    assert_non_null(strstr(md, "| `allow_full_rewrites` | any |"));
    for (size_t i = 0; i < kv_config_key_count; i++) {
        char *cell = kv_asprintf("| `%s` |", kv_config_key_table[i].name);
        if (!strstr(md, cell)) fail_msg("reference lacks %s", kv_config_key_table[i].name);
        free(cell);
    }
    free(md);
}

/* The change of KEY in DIFF, or NULL. */
static json_t *change_of(json_t *diff, const char *key)
{
    size_t i;
    json_t *c;
    json_array_foreach(diff, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "key")), key) == 0) return c;
    }
    return NULL;
}

/* What a resume compares: every key that differs, whether a resume may
 * take it, and never a secret's value. */
static void diff_names_each_changed_key_and_whether_a_resume_may_take_it(void **state)
{
    (void)state;
    setenv("KV_TEST_DIFF_KEY", "sk-secret-value", 1);
    kv_config a, b;
    kv_config_error err;
    assert_int_equal(kv_config_load_string("random_seed: 3\nllm:\n  api_base: http://a/v1\n"
                                           "database:\n  num_islands: 2\nalgotune:\n  n: 1\n",
                                           "a.yaml", "/tmp", &a, &err),
                     0);
    assert_int_equal(kv_config_load_string("random_seed: 4\nllm:\n  api_base: http://b/v1\n"
                                           "  api_key: ${KV_TEST_DIFF_KEY}\n"
                                           "database:\n  num_islands: 3\nalgotune:\n  n: 2\n"
                                           "evaluator:\n  timeout: 9\n",
                                           "b.yaml", "/tmp", &b, &err),
                     0);
    json_t *d = kv_config_diff(&a, &b);
    static const struct {
        const char *key, *from, *to;
        int resumable;
    } want[] = {{"random_seed", "3", "4", 0},
                {"llm.api_base", "\"http://a/v1\"", "\"http://b/v1\"", 1},
                {"llm.api_key", "null", "\"***\"", 1},
                {"database.num_islands", "2", "3", 0},
                {"evaluator.timeout", "300.0", "9.0", 1},
                {"algotune", "{\"n\":1}", "{\"n\":2}", 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        json_t *c = change_of(d, want[i].key);
        if (!c) fail_msg("no change of %s", want[i].key);
        assert_string_equal(json_string_value(json_object_get(c, "from")), want[i].from);
        assert_string_equal(json_string_value(json_object_get(c, "to")), want[i].to);
        assert_int_equal(json_is_true(json_object_get(c, "resumable")), want[i].resumable);
    }
    assert_int_equal(json_array_size(d), sizeof want / sizeof want[0]);
    char *text = json_dumps(d, 0);
    assert_null(strstr(text, "sk-secret"));
    free(text);
    json_decref(d);
    d = kv_config_diff(&a, &a);
    assert_int_equal(json_array_size(d), 0);
    json_decref(d);
    kv_config_free(&a);
    kv_config_free(&b);
}

/* An endpoint the file does not name comes from $OPENAI_API_BASE. */
static void api_base_unset_in_the_file_comes_from_the_environment(void **state)
{
    (void)state;
    kv_config c;
    kv_config_error err;
    setenv("OPENAI_API_BASE", "http://env.example/v1", 1);
    assert_int_equal(kv_config_load_string("max_iterations: 2\n", "t.yaml", "/tmp", &c, &err), 0);
    assert_string_equal(c.llm.api_base, "http://env.example/v1");
    kv_config_free(&c);
    assert_int_equal(
        kv_config_load_string("llm:\n  api_base: http://file/v1\n", "t.yaml", "/tmp", &c, &err), 0);
    assert_string_equal(c.llm.api_base, "http://file/v1");
    kv_config_free(&c);
    unsetenv("OPENAI_API_BASE");
    assert_int_equal(kv_config_load_string("max_iterations: 2\n", "t.yaml", "/tmp", &c, &err), 0);
    assert_string_equal(c.llm.api_base, "https://api.openai.com/v1");
    kv_config_free(&c);
}

int main(void)
{
    kv_log_set_level(KV_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_are_the_documented_ones),
        cmocka_unit_test(empty_file_gives_defaults),
        cmocka_unit_test(openevolve_config_loads_with_every_key),
        cmocka_unit_test(misspelt_key_names_line_and_nearest_key),
        cmocka_unit_test(misspelt_model_key_names_the_entry),
        cmocka_unit_test(word_for_an_integer_is_a_type_error),
        cmocka_unit_test(list_for_a_scalar_is_a_type_error),
        cmocka_unit_test(unknown_top_level_scalar_is_a_typo),
        cmocka_unit_test(unknown_section_is_passed_to_evaluator_as_typed_json),
        cmocka_unit_test(section_name_close_to_a_kevolve_section_is_an_error),
        cmocka_unit_test(allow_full_rewrites_warns_but_loads),
        cmocka_unit_test(evaluator_parallel_evaluations_wins_over_top_level_one),
        cmocka_unit_test(env_vars_expand_and_stay_out_of_text_and_dump),
        cmocka_unit_test(missing_env_var_is_an_error_naming_it),
        cmocka_unit_test(feature_bins_as_int_applies_to_every_dimension),
        cmocka_unit_test(feature_bins_as_map_sets_named_dimensions),
        cmocka_unit_test(relative_paths_resolve_against_config_dir),
        cmocka_unit_test(primary_model_shorthand_builds_models),
        cmocka_unit_test(null_unsets_optional_values),
        cmocka_unit_test(dump_loads_back_to_an_equal_config),
        cmocka_unit_test(validation_rejects_out_of_range_values),
        cmocka_unit_test(yaml_syntax_error_reports_line),
        cmocka_unit_test(reference_markdown_documents_every_key),
        cmocka_unit_test(diff_names_each_changed_key_and_whether_a_resume_may_take_it),
        cmocka_unit_test(api_base_unset_in_the_file_comes_from_the_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
