/* The config key table: every key kevolve reads, with its section, type,
 * default and one line of documentation. This is the only place a key is
 * listed: the loader checks names against it, kv_config_init takes defaults
 * from it, kv_config_dump walks it, and kv_config_reference_markdown renders
 * it for the README. */
#include "config/config_keys.h"

#include <stdio.h>
#include <string.h>

#define C(f) offsetof(kv_config, f)
#define M(f) offsetof(kv_model_config, f)

/* Keys OpenEvolve example configs carry that kevolve does not use. */
#define IGN(sec, nm, why)                                                                          \
    {                                                                                              \
        .section = sec, .name = nm, .type = KV_KEY_IGNORED, .doc = "Ignored.", .note = why         \
    }

const kv_key kv_config_key_table[] = {
    /* ---- top level ---- */
    {"", "max_iterations", KV_KEY_INT, C(max_iterations), 0, "100", NULL,
     "Children to evaluate before the run stops.", NULL, NULL, KV_KEY_RESUMABLE},
    {"", "checkpoint_interval", KV_KEY_INT, C(checkpoint_interval), 0, "10", NULL,
     "OpenEvolve's checkpoint period; kevolve needs none: every result is committed as it "
     "arrives and best/ is rewritten on every improvement.",
     NULL, NULL, KV_KEY_RESUMABLE},
    {"", "log_level", KV_KEY_STRING, C(log_level), 0, "INFO", NULL,
     "Lowest level logged: DEBUG, INFO, WARNING or ERROR.", NULL, NULL, KV_KEY_RESUMABLE},
    {"", "random_seed", KV_KEY_INT64, C(random_seed), C(has_random_seed), "42", NULL,
     "Seed of every random choice; null: seeded from the clock."},
    {"", "objectives", KV_KEY_STRINGS, C(database.objectives), C(database.n_objectives), NULL,
     "none",
     "What the run weighs beside combined_score: speedup, energy, error (the share of the "
     "tolerance used), score, or max:METRIC / min:METRIC. Each island keeps the programs no "
     "other beats on every one (its Pareto front), parents of the exploitation share are drawn "
     "from it, and kevolve best --pareto lists the run's front."},
    {"", "language", KV_KEY_STRING, C(language), 0, "python",
     "guessed from initial_program, else python",
     "Language of the evolved program (python, c, cuda, opencl, cpp, rust, ...)."},
    {"", "file_suffix", KV_KEY_STRING, C(file_suffix), 0, ".py",
     "initial_program's suffix, else from language", "Suffix of program files written to disk."},
    {"", "diff_based_evolution", KV_KEY_BOOL, C(diff_based_evolution), 0, "true", NULL,
     "Ask models for SEARCH/REPLACE diffs (false: full rewrites of the blocks)."},
    {"", "max_code_length", KV_KEY_INT, C(max_code_length), 0, "200000", NULL,
     "Children longer than this many characters are rejected; an initial program longer is "
     "an error at the start. The default leaves a large kernel (the CUDA gqa_attention seed "
     "is 62 kB) room to grow threefold; OpenEvolve's is 10000."},
    {"", "early_stopping_patience", KV_KEY_INT, C(early_stopping_patience), 0, "0", NULL,
     "Stop after this many iterations without improvement; 0 or null: never; negative "
     "(OpenEvolve's event-based stopping): stop when early_stopping_metric of a child equals "
     "convergence_threshold (the score of a solved task).",
     NULL, NULL, KV_KEY_RESUMABLE},
    {"", "convergence_threshold", KV_KEY_DOUBLE, C(convergence_threshold), 0, "0.001", NULL,
     "An improvement smaller than this does not reset early stopping.", NULL, NULL,
     KV_KEY_RESUMABLE},
    {"", "early_stopping_metric", KV_KEY_STRING, C(early_stopping_metric), 0, "combined_score",
     NULL, "Metric watched by early stopping.", NULL, NULL, KV_KEY_RESUMABLE},
    {"", "initial_program", KV_KEY_PATH, C(initial_program), 0, NULL, NULL,
     "Program the run starts from (relative to the config file's folder)."},
    {"", "initial_programs", KV_KEY_STRINGS, C(initial_programs), C(n_initial_programs), NULL, "[]",
     "Several programs the run starts from, instead of initial_program (relative to the config "
     "file's folder): each is evaluated, and program i seeds island i mod database.num_islands, "
     "so a run searches several designs at once and migration carries the winners; islands "
     "beyond the programs start from any island's.",
     NULL, NULL, KV_KEY_PATHS},
    {.section = "",
     .name = "evaluator",
     .type = KV_KEY_PATH,
     .doc = "Shorthand for evaluator.program when given a path instead of a mapping.",
     .alias_of = "evaluator.program"},
    {"", "target_score", KV_KEY_DOUBLE, C(target_score), C(has_target_score), NULL, "unset",
     "Stop when the best fitness reaches this; null: never.", NULL, NULL, KV_KEY_RESUMABLE},
    IGN("", "parallel_evaluations",
        "OpenEvolve ignores a top-level parallel_evaluations and so does kevolve; "
        "evaluator.parallel_evaluations sets the evaluations run at once"),
    IGN("", "diff_pattern",
        "kevolve parses SEARCH/REPLACE blocks with its own parser (<<<<<<< SEARCH, =======, "
        ">>>>>>> REPLACE; exact match, then ignoring indentation); the pattern is not used"),
    {.section = "",
     .name = "enforce_evolve_blocks",
     .type = KV_KEY_IGNORED,
     .doc = "Ignored.",
     .note = "kevolve always enforces EVOLVE-BLOCKs: a child that changes text outside them is "
             "rejected with the reason kept",
     .flags = KV_KEY_WARN_ALWAYS},
    IGN("", "allow_full_rewrites",
        "not read by OpenEvolve either; kevolve ignores it (use diff_based_evolution: false for "
        "full rewrites)"),
    IGN("", "log_dir", "OpenEvolve's log folder; kevolve ignores it (logs go to the run's folder)"),
    IGN("", "max_tasks_per_child",
        "OpenEvolve's process-pool setting; kevolve ignores it (every evaluation runs in a "
        "sandboxed worker)"),
    IGN("", "evolution_trace",
        "OpenEvolve's trace log; kevolve ignores it (the store keeps every program and its "
        "lineage)"),
    IGN("", "max_program_length",
        "not read by OpenEvolve (its key is max_code_length) and ignored by kevolve: "
        "max_code_length limits the length of a program"),
    IGN("", "evaluation",
        "a section OpenEvolve does not read, ignored by kevolve too: the evaluator's settings "
        "go under evaluator: (timeout, max_retries, parallel_evaluations, ...)"),

    /* ---- llm ---- */
    {"llm", "models", KV_KEY_MODELS, C(llm.models), C(llm.n_models), NULL, "[]",
     "Ensemble of models and built-in mutators (builtin:NAME), chosen by weight; entries below."},
    {"llm", "evaluator_models", KV_KEY_MODELS, C(llm.evaluator_models), C(llm.n_evaluator_models),
     NULL, "[]", "Models that grade programs when evaluator.use_llm_feedback is on."},
    {"llm", "api_base", KV_KEY_STRING, C(llm.api_base), 0, "https://api.openai.com/v1",
     "$OPENAI_API_BASE, else https://api.openai.com/v1", "OpenAI-compatible endpoint."},
    {"llm", "api_key", KV_KEY_STRING, C(llm.api_key), 0, NULL, "$OPENAI_API_KEY at call time",
     "API key; write ${VAR} to read it from the environment. Never stored or logged.", NULL, NULL,
     KV_KEY_SECRET},
    {"llm", "temperature", KV_KEY_DOUBLE, C(llm.temperature), 0, "0.7", NULL,
     "Sampling temperature."},
    {"llm", "top_p", KV_KEY_DOUBLE, C(llm.top_p), 0, "0.95", NULL, "Nucleus sampling mass."},
    {"llm", "max_tokens", KV_KEY_INT, C(llm.max_tokens), 0, "4096", NULL,
     "Completion token limit."},
    {"llm", "timeout", KV_KEY_DOUBLE, C(llm.timeout), 0, "60", NULL,
     "Seconds before a request is abandoned."},
    {"llm", "retries", KV_KEY_INT, C(llm.retries), 0, "3", NULL, "Retries of a failed request."},
    {"llm", "retry_delay", KV_KEY_DOUBLE, C(llm.retry_delay), 0, "5", NULL,
     "Seconds between retries (doubled each time)."},
    {"llm", "random_seed", KV_KEY_INT64, C(llm.random_seed), C(llm.has_random_seed), NULL, "unset",
     "Seed sent with requests, where the API takes one."},
    {"llm", "reasoning_effort", KV_KEY_STRING, C(llm.reasoning_effort), 0, NULL, "unset",
     "Default reasoning effort of reasoning models (low, medium, high)."},
    {.section = "llm",
     .name = "system_message",
     .type = KV_KEY_STRING,
     .doc = "Old place of prompt.system_message (used when that is not set).",
     .alias_of = "prompt.system_message"},
    {.section = "llm",
     .name = "evaluator_system_message",
     .type = KV_KEY_STRING,
     .doc = "Old place of prompt.evaluator_system_message (used when that is not set).",
     .alias_of = "prompt.evaluator_system_message"},
    {"llm", "primary_model", KV_KEY_STRING, C(llm.primary_model), 0, NULL, "unset",
     "OpenEvolve's shorthand: becomes a models entry when models is empty."},
    {"llm", "primary_model_weight", KV_KEY_DOUBLE, C(llm.primary_model_weight), 0, "0.8", NULL,
     "Weight of primary_model."},
    {"llm", "secondary_model", KV_KEY_STRING, C(llm.secondary_model), 0, NULL, "unset",
     "Second shorthand model (with primary_model)."},
    {"llm", "secondary_model_weight", KV_KEY_DOUBLE, C(llm.secondary_model_weight), 0, "0.2", NULL,
     "Weight of secondary_model."},
    {"llm", "max_budget_usd", KV_KEY_DOUBLE, C(llm.max_budget_usd), 0, "0", NULL,
     "Stop asking models once this much was spent; 0: no budget."},
    {"llm", "max_concurrency", KV_KEY_INT, C(llm.max_concurrency), 0, "8", NULL,
     "Requests in flight at once."},
    {.section = "llm",
     .name = "provider",
     .type = KV_KEY_STRING,
     .off = C(llm.provider),
     .shown = "unset (openai)",
     .doc = "OpenEvolve's backend of the models without their own provider. kevolve calls every "
            "model through the OpenAI-compatible API at its api_base; another provider (e.g. "
            "claude_code) is warned about."},
    {.section = "llm",
     .name = "manual_mode",
     .type = KV_KEY_BOOL,
     .off = C(llm.manual_mode),
     .def = "false",
     .doc = "OpenEvolve's human-in-the-loop mode; not supported.",
     .note = "not supported: kevolve asks the configured models (use builtin:NAME entries for "
             "no model at all)"},
    IGN("llm", "name",
        "OpenEvolve does not use it at this level either; name models in llm.models"),
    IGN("llm", "weight",
        "OpenEvolve does not use it at this level either; weigh models in llm.models"),
    IGN("llm", "init_client", "OpenEvolve's client hook (Python only); kevolve ignores it"),
    IGN("llm", "_manual_queue_dir", "OpenEvolve's manual-mode folder; kevolve ignores it"),
    {"llm", "fallback_after", KV_KEY_INT, C(llm.fallback_after), 0, "3", NULL,
     "Failed calls in a row after which a model's draws go to the other models (it is still "
     "probed now and then; one success restores it); 0: never."},
    {"llm", "give_up_after", KV_KEY_INT, C(llm.give_up_after), 0, "5", NULL,
     "Calls to one model failing in a row by faults that may heal (timeouts, 429, 5xx), each "
     "after its own retries, before the run stops with exit 1; each such iteration is asked "
     "again, not spent. Faults that will not heal (401, 403, unknown model, unreachable host) "
     "stop the run at once."},
    {"llm", "bandit", KV_KEY_BOOL, C(llm.bandit), 0, "true", NULL,
     "Learn which entry of llm.models to draw (Thompson sampling seeded by the weights, "
     "rewarded by fitness gain per second of evaluation); false: draw by the fixed weights."},
    {"llm", "bandit_min_share", KV_KEY_DOUBLE, C(llm.bandit_min_share), 0, "0.05", NULL,
     "Least share of the draws the bandit leaves each entry of weight > 0 (at most half of "
     "the draws go to this floor)."},
    {"llm", "bandit_prior_results", KV_KEY_DOUBLE, C(llm.bandit_prior_results), 0, "8", NULL,
     "Results after which the bandit, not the configured weights, makes half the draws."},
    {"llm", "bandit_cost_floor", KV_KEY_DOUBLE, C(llm.bandit_cost_floor), 0, "1", NULL,
     "Seconds: an evaluation shorter than this costs this much in the bandit's reward."},

    /* ---- one entry of llm.models / llm.evaluator_models ---- */
    {"model", "name", KV_KEY_STRING, M(name), 0, NULL, NULL,
     "Model name sent to the API, or builtin:NAME for the built-in mutator NAME (README: "
     "Built-in mutators)."},
    {"model", "weight", KV_KEY_DOUBLE, M(weight), 0, "1.0", NULL,
     "Relative chance of being picked."},
    {"model", "api_base", KV_KEY_STRING, M(api_base), 0, NULL, "llm.api_base",
     "Endpoint of this model."},
    {"model", "api_key", KV_KEY_STRING, M(api_key), 0, NULL, "llm.api_key",
     "API key of this model (${VAR} recommended).", NULL, NULL, KV_KEY_SECRET},
    {"model", "temperature", KV_KEY_DOUBLE, M(temperature), 0, "nan", "llm.temperature",
     "Sampling temperature."},
    {"model", "top_p", KV_KEY_DOUBLE, M(top_p), 0, "nan", "llm.top_p", "Nucleus sampling mass."},
    {"model", "max_tokens", KV_KEY_INT, M(max_tokens), 0, "0", "llm.max_tokens (0)",
     "Completion token limit."},
    {"model", "timeout", KV_KEY_DOUBLE, M(timeout), 0, "0", "llm.timeout (0)",
     "Seconds before a request is abandoned."},
    {"model", "retries", KV_KEY_INT, M(retries), 0, "-1", "llm.retries (-1)",
     "Retries of a failed request."},
    {"model", "retry_delay", KV_KEY_DOUBLE, M(retry_delay), 0, "nan", "llm.retry_delay",
     "Seconds between retries."},
    {"model", "random_seed", KV_KEY_INT64, M(random_seed), M(has_random_seed), NULL,
     "llm.random_seed", "Seed sent with requests."},
    {"model", "reasoning_effort", KV_KEY_STRING, M(reasoning_effort), 0, NULL,
     "llm.reasoning_effort", "Reasoning effort (low, medium, high)."},
    {"model", "reasoning", KV_KEY_TRIBOOL, M(is_reasoning), 0, NULL, "guessed from the name",
     "Whether the model is a reasoning model (changes which parameters are sent)."},
    {"model", "price_input_per_mtok", KV_KEY_DOUBLE, M(price_input_per_mtok), 0, "0", "0 (unknown)",
     "USD per million prompt tokens, for cost accounting."},
    {"model", "price_output_per_mtok", KV_KEY_DOUBLE, M(price_output_per_mtok), 0, "0",
     "0 (unknown)", "USD per million completion tokens."},
    {.section = "model",
     .name = "provider",
     .type = KV_KEY_STRING,
     .off = M(provider),
     .shown = "llm.provider",
     .doc = "OpenEvolve's backend of this model; kevolve calls it through the OpenAI-compatible "
            "API whatever this says (another provider than openai is warned about)."},
    {.section = "model",
     .name = "max_budget_usd",
     .type = KV_KEY_DOUBLE,
     .off = M(max_budget_usd),
     .def = "0",
     .shown = "unset",
     .doc = "OpenEvolve's budget of one call through the Claude Code CLI.",
     .note = "a per-call budget of OpenEvolve's CLI backends; kevolve does not cap single "
             "calls: llm.max_budget_usd stops the whole run when spent"},
    IGN("model", "manual_mode", "OpenEvolve's human-in-the-loop mode; not supported"),
    IGN("model", "_manual_queue_dir", "OpenEvolve's manual-mode folder; kevolve ignores it"),
    IGN("model", "init_client", "OpenEvolve's client hook; kevolve ignores it"),
    IGN("model", "system_message",
        "kevolve sends prompt.system_message to every model; this one is ignored"),

    /* ---- prompt ---- */
    {"prompt", "template_dir", KV_KEY_PATH, C(prompt.template_dir), 0, NULL, "built-in templates",
     "Folder of prompt templates overriding the built-in ones."},
    {"prompt", "system_message", KV_KEY_STRING, C(prompt.system_message), 0, NULL, "built-in",
     "System message sent to mutating models."},
    {"prompt", "evaluator_system_message", KV_KEY_STRING, C(prompt.evaluator_system_message), 0,
     NULL, "built-in", "System message sent to grading models."},
    {"prompt", "num_top_programs", KV_KEY_INT, C(prompt.num_top_programs), 0, "3", NULL,
     "Best programs shown in a prompt."},
    {"prompt", "num_diverse_programs", KV_KEY_INT, C(prompt.num_diverse_programs), 0, "2", NULL,
     "Diverse programs shown in a prompt."},
    {"prompt", "use_template_stochasticity", KV_KEY_BOOL, C(prompt.use_template_stochasticity), 0,
     "true", NULL,
     "Vary the phrasing of prompts: each {placeholder} of template_variations found in the "
     "user template is replaced by one of its phrasings, drawn at random per prompt (as "
     "OpenEvolve does; the draw follows random_seed)."},
    {"prompt", "template_variations", KV_KEY_JSON, C(prompt.template_variations), 0, NULL, "{}",
     "Mapping placeholder -> list of phrasings, e.g. {improvement_suggestion: [\"...\", "
     "\"...\"]}; put {improvement_suggestion} in a template of prompt.template_dir."},
    {"prompt", "diff_summary_max_line_len", KV_KEY_INT, C(prompt.diff_summary_max_line_len), 0,
     "100", NULL,
     "Change summaries of diff children (shown as previous attempts): longer lines are cut with "
     "\"...\"."},
    {"prompt", "diff_summary_max_lines", KV_KEY_INT, C(prompt.diff_summary_max_lines), 0, "30",
     NULL, "Change summaries of diff children: lines shown per SEARCH or REPLACE text."},
    {.section = "prompt",
     .name = "programs_as_changes_description",
     .type = KV_KEY_BOOL,
     .off = C(prompt.programs_as_changes_description),
     .def = "false",
     .doc = "OpenEvolve's large-codebase mode (programs shown as an evolving changes "
            "description); not built.",
     .note = "not built: kevolve shows programs' code in prompts, fitted to "
             "prompt.max_prompt_chars by dropping the least useful parts first; "
             "system_message_changes_description and initial_changes_description are not used"},
    {"prompt", "system_message_changes_description", KV_KEY_STRING,
     C(prompt.system_message_changes_description), 0, NULL, "unset",
     "OpenEvolve's instructions for the changes description (see "
     "programs_as_changes_description); not used."},
    {"prompt", "initial_changes_description", KV_KEY_STRING, C(prompt.initial_changes_description),
     0, NULL, "unset",
     "OpenEvolve's changes description of the initial program (see "
     "programs_as_changes_description); not used."},
    {"prompt", "include_artifacts", KV_KEY_BOOL, C(prompt.include_artifacts), 0, "true", NULL,
     "Show a parent's evaluation artifacts (errors, logs) in the prompt."},
    {"prompt", "max_artifact_bytes", KV_KEY_INT, C(prompt.max_artifact_bytes), 0, "20480", NULL,
     "Artifact bytes shown per prompt."},
    {"prompt", "artifact_security_filter", KV_KEY_BOOL, C(prompt.artifact_security_filter), 0,
     "true", NULL, "Strip secrets and control characters from artifacts shown."},
    {"prompt", "suggest_simplification_after_chars", KV_KEY_INT,
     C(prompt.suggest_simplification_after_chars), 0, "500", NULL,
     "Suggest simplifying programs longer than this."},
    {"prompt", "include_changes_under_chars", KV_KEY_INT, C(prompt.include_changes_under_chars), 0,
     "100", NULL, "Show change descriptions shorter than this."},
    {"prompt", "concise_implementation_max_lines", KV_KEY_INT,
     C(prompt.concise_implementation_max_lines), 0, "10", NULL,
     "Programs up to this many lines are called concise."},
    {"prompt", "comprehensive_implementation_min_lines", KV_KEY_INT,
     C(prompt.comprehensive_implementation_min_lines), 0, "50", NULL,
     "Programs from this many lines are called comprehensive."},
    {"prompt", "max_prompt_chars", KV_KEY_INT, C(prompt.max_prompt_chars), 0, "60000", NULL,
     "Size budget of a prompt; older context is dropped to fit."},
    IGN("prompt", "use_meta_prompting", "not implemented in OpenEvolve; kevolve ignores it"),
    IGN("prompt", "meta_prompt_weight", "not implemented in OpenEvolve; kevolve ignores it"),
    IGN("prompt", "code_length_threshold",
        "deprecated in OpenEvolve; kevolve ignores it (see suggest_simplification_after_chars)"),

    /* ---- database ---- */
    {"database", "db_path", KV_KEY_STRING, C(database.db_path), 0, NULL, "unset",
     "OpenEvolve's checkpoint folder; kept, but not used.",
     "OpenEvolve's checkpoint folder; kevolve ignores it (the run's SQLite store holds "
     "everything)"},
    {"database", "in_memory", KV_KEY_BOOL, C(database.in_memory), 0, "true", NULL,
     "Keep the population in memory (the store is written either way)."},
    {"database", "log_prompts", KV_KEY_BOOL, C(database.log_prompts), 0, "true", NULL,
     "Keep prompts and responses (redacted) in the store."},
    {"database", "population_size", KV_KEY_INT, C(database.population_size), 0, "1000", NULL,
     "Programs kept across all islands."},
    {"database", "archive_size", KV_KEY_INT, C(database.archive_size), 0, "100", NULL,
     "Elite archive size."},
    {"database", "num_islands", KV_KEY_INT, C(database.num_islands), 0, "5", NULL,
     "Islands evolving apart between migrations."},
    {"database", "elite_selection_ratio", KV_KEY_DOUBLE, C(database.elite_selection_ratio), 0,
     "0.1", NULL, "Fraction of inspirations drawn from the elite."},
    {"database", "exploration_ratio", KV_KEY_DOUBLE, C(database.exploration_ratio), 0, "0.2", NULL,
     "Chance a parent is drawn at random from its island."},
    {"database", "failed_parent_probability", KV_KEY_DOUBLE, C(database.failed_parent_probability),
     0, "0", NULL,
     "Chance a parent is drawn from its island's recent failed children (they never own a "
     "cell nor count as a best); 0: failures are never parents."},
    {"database", "exploitation_ratio", KV_KEY_DOUBLE, C(database.exploitation_ratio), 0, "0.7",
     NULL, "Chance a parent is drawn from the archive (the rest: by fitness)."},
    {.section = "database",
     .name = "diversity_metric",
     .type = KV_KEY_STRING,
     .off = C(database.diversity_metric),
     .def = "edit_distance",
     .doc = "OpenEvolve's choice of diversity measure; kevolve always uses MinHash distance "
            "over token 3-grams (fast at any population).",
     .note = "kevolve measures diversity by MinHash distance over token 3-grams whatever this "
             "says"},
    {"database", "feature_dimensions", KV_KEY_STRINGS, C(database.feature_dimensions),
     C(database.n_feature_dimensions), "complexity,diversity", "[complexity, diversity]",
     "MAP-Elites axes: built-in features or metric names."},
    {"database", "feature_bins", KV_KEY_BINS, C(database.feature_bins),
     C(database.n_feature_dimensions), "10", NULL,
     "Bins per dimension: one integer for all, or a mapping {dimension: bins}."},
    {"database", "diversity_reference_size", KV_KEY_INT, C(database.diversity_reference_size), 0,
     "20", NULL, "Programs the diversity feature compares against."},
    {"database", "migration_interval", KV_KEY_INT, C(database.migration_interval), 0, "50", NULL,
     "Generations between migrations."},
    {"database", "migration_rate", KV_KEY_DOUBLE, C(database.migration_rate), 0, "0.1", NULL,
     "Fraction of an island that migrates."},
    {"database", "random_seed", KV_KEY_INT64, C(database.random_seed), C(database.has_random_seed),
     NULL, "the top-level random_seed", "Seed of the database's random choices."},
    {.section = "database",
     .name = "artifacts_base_path",
     .type = KV_KEY_PATH,
     .off = C(database.artifacts_base_path),
     .shown = "unset",
     .doc = "OpenEvolve's folder for large artifacts; kevolve keeps artifacts in the store.",
     .note = "not used: kevolve keeps artifacts in the store (evaluator.max_artifact_storage "
             "bytes each)"},
    {.section = "database",
     .name = "artifact_size_threshold",
     .type = KV_KEY_INT,
     .off = C(database.artifact_size_threshold),
     .def = "32768",
     .doc = "OpenEvolve's size above which artifacts go to files; not used by kevolve.",
     .note = "not used: kevolve keeps artifacts in the store (evaluator.max_artifact_storage "
             "bytes each)"},
    {.section = "database",
     .name = "cleanup_old_artifacts",
     .type = KV_KEY_BOOL,
     .off = C(database.cleanup_old_artifacts),
     .def = "true",
     .doc = "OpenEvolve's clean-up of artifact files; kevolve writes none.",
     .note = "not used: kevolve writes no artifact files"},
    {.section = "database",
     .name = "artifact_retention_days",
     .type = KV_KEY_INT,
     .off = C(database.artifact_retention_days),
     .def = "30",
     .doc = "OpenEvolve's age for deleting artifact files; kevolve writes none.",
     .note = "not used: kevolve writes no artifact files"},
    IGN("database", "embedding_model", "OpenEvolve's embedding novelty filter; kevolve ignores it"),
    IGN("database", "similarity_threshold",
        "OpenEvolve's embedding novelty filter; kevolve ignores it"),
    IGN("database", "novelty_llm", "OpenEvolve's novelty judge; kevolve ignores it"),
    IGN("database", "max_snapshot_artifacts",
        "OpenEvolve's worker snapshots; kevolve has none (workers get only the program)"),

    /* ---- evaluator ---- */
    {"evaluator", "program", KV_KEY_PATH, C(evaluator_program), 0, NULL, "unset",
     "Evaluator: a command (`EVALUATOR PROGRAM_PATH` prints {\"metrics\": ..., \"artifacts\": "
     "...}), or an OpenEvolve Python module (see python_module)."},
    {"evaluator", "timeout", KV_KEY_DOUBLE, C(evaluator.timeout), 0, "300", NULL,
     "Seconds per evaluation (each stage); the process group is killed after. With "
     "evaluator.task, the whole evaluation's one budget: compile, checks and timing (waiting "
     "for the device is not counted; see docs/evaluation.md).",
     NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "max_retries", KV_KEY_INT, C(evaluator.max_retries), 0, "3", NULL,
     "Retries after a crash (not after a timeout).", NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "cascade_evaluation", KV_KEY_TRIBOOL, C(evaluator.cascade_evaluation), 0, NULL,
     "unset",
     "Run the evaluator in stages, stopping early on poor programs: an OpenEvolve module's "
     "evaluate_stage1/2/3, or `EVALUATOR PROGRAM --stage N` for a command. Unset: on for an "
     "OpenEvolve module (OpenEvolve's default), off for a command (it must know --stage)."},
    {"evaluator", "cascade_thresholds", KV_KEY_DOUBLES, C(evaluator.cascade_thresholds),
     C(evaluator.n_cascade_thresholds), "0.5,0.75,0.9", "[0.5, 0.75, 0.9]",
     "Score needed after stage i to run stage i+1."},
    {"evaluator", "parallel_evaluations", KV_KEY_INT, C(evaluator.parallel_evaluations), 0, "1",
     NULL, "Evaluations at once (worker processes).", NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "use_llm_feedback", KV_KEY_BOOL, C(evaluator.use_llm_feedback), 0, "false", NULL,
     "Have llm.evaluator_models grade programs too."},
    {"evaluator", "llm_feedback_weight", KV_KEY_DOUBLE, C(evaluator.llm_feedback_weight), 0, "0.1",
     NULL, "Weight of the models' grade in the score."},
    {"evaluator", "enable_artifacts", KV_KEY_BOOL, C(evaluator.enable_artifacts), 0, "true", NULL,
     "Keep evaluators' artifacts.", NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "max_artifact_storage", KV_KEY_INT, C(evaluator.max_artifact_storage), 0,
     "102400", NULL, "Bytes kept per artifact.", NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "memory_limit_mb", KV_KEY_LONG, C(evaluator.memory_limit_mb), 0, "0", NULL,
     "Address-space limit of an evaluation in MiB; 0: none.", NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "task", KV_KEY_STRING, C(evaluator.task), 0, NULL, "unset",
     "Built-in kernel task to evaluate with, instead of a command."},
    {"evaluator", "backend", KV_KEY_STRING, C(evaluator.backend), 0, "auto", NULL,
     "Kernel backend: auto, cpu, opencl or cuda."},
    {"evaluator", "quick", KV_KEY_BOOL, C(evaluator.quick), 0, "false", NULL,
     "With evaluator.task: the harness's quick mode for every child (fewer trials, shorter "
     "timing); evaluate the best in full afterwards with kevolve eval."},
    {"evaluator", "energy", KV_KEY_BOOL, C(evaluator.energy), 0, "false", NULL,
     "With evaluator.task: after timing each scenario, run its calls for about a second more "
     "and report the energy per call and the mean power from the device's energy counter "
     "(cuda: NVML); absent where the device has no counter."},
    {"evaluator", "screening", KV_KEY_BOOL, C(evaluator.screening), 0, "true", NULL,
     "With evaluator.task: the harness times one scenario of each class first, cheapest "
     "first, and stops a child slower than evaluator.screen_keep times its parent there (its "
     "score is then the parent's times that ratio, marked screened_out)."},
    {"evaluator", "screen_keep", KV_KEY_DOUBLE, C(evaluator.screen_keep), 0, "0", NULL,
     "With evaluator.screening: the least fraction of its parent's speed, on the "
     "representative scenarios, that a child needs to be evaluated in full; 0: the task's own "
     "(0.95 on a GPU's tasks, 0.85 on gqa_attention_small, whose CPU timings are noisier)."},
    {"evaluator", "kernel_timeout", KV_KEY_DOUBLE, C(evaluator.kernel_timeout), 0, "0", NULL,
     "With evaluator.task: seconds one call of a candidate kernel may take before it is a "
     "timeout verdict; 0: the judge's own (10, 5 in quick mode). Inside evaluator.timeout, "
     "which bounds the whole evaluation.",
     NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "device_wait", KV_KEY_DOUBLE, C(evaluator.device_wait), 0, "600", NULL,
     "With evaluator.task: the longest an evaluation waits for its device while another "
     "process (another run, a kevolve eval) holds it, then fails as \"device busy\" (never the "
     "candidate's failure). Not counted in evaluator.timeout.",
     NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "baseline_max_age", KV_KEY_DOUBLE, C(evaluator.baseline_max_age), 0, "900", NULL,
     "With evaluator.task: seconds the task baseline's timings are kept; older ones are timed "
     "again (so are they when the device, its clock or temperature moved)."},
    {"evaluator", "scenarios", KV_KEY_STRINGS, C(evaluator.scenarios), C(evaluator.n_scenarios),
     NULL, "[] (every one)",
     "With evaluator.task: the task's scenarios to time, by name or tag (decode, prefill); "
     "held-out shapes are always checked."},
    {"evaluator", "devices", KV_KEY_STRINGS, C(evaluator.devices), C(evaluator.n_devices), "auto",
     "auto",
     "With evaluator.task: the backend's devices to evaluate on, `auto` (every device the "
     "backend sees: `kevolve devices`) or a list of indices such as [0, 1]. Each device takes "
     "one evaluation's device work at a time; compiles overlap.",
     .flags = KV_KEY_SCALAR_LIST | KV_KEY_RESUMABLE},
    {"evaluator", "launcher", KV_KEY_STRING, C(evaluator.launcher), 0, "local", NULL,
     "How each evaluation starts: `local` (a process on this machine) or `slurm` (one `srun` "
     "each: a job step of the allocation kevolve runs in, under salloc or sbatch, else a job of "
     "its own). With slurm the kevolve binary, the run folder and the config's files must be on "
     "a path the compute nodes share; each step's device is the one Slurm gives it.",
     NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "slurm_partition", KV_KEY_STRING, C(evaluator.slurm_partition), 0, NULL,
     "Slurm's default", "With evaluator.launcher slurm: srun --partition.", NULL, NULL,
     KV_KEY_RESUMABLE},
    {"evaluator", "slurm_account", KV_KEY_STRING, C(evaluator.slurm_account), 0, NULL,
     "Slurm's default", "With evaluator.launcher slurm: srun --account.", NULL, NULL,
     KV_KEY_RESUMABLE},
    {"evaluator", "slurm_gres", KV_KEY_STRING, C(evaluator.slurm_gres), 0, NULL, "none",
     "With evaluator.launcher slurm: srun --gres, such as gpu:1 (one GPU per evaluation).", NULL,
     NULL, KV_KEY_RESUMABLE},
    {"evaluator", "slurm_time", KV_KEY_DOUBLE, C(evaluator.slurm_time), 0, "0", NULL,
     "With evaluator.launcher slurm: each step's time limit in seconds (srun --time, rounded "
     "up to minutes); 0: evaluator.timeout plus evaluator.device_wait plus a minute. "
     "kevolve's own evaluator.timeout still ends the evaluation first.",
     NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "slurm_args", KV_KEY_STRINGS, C(evaluator.slurm_args), C(evaluator.n_slurm_args),
     NULL, "[]", "With evaluator.launcher slurm: further srun arguments, such as [--qos=short].",
     .flags = KV_KEY_SCALAR_LIST | KV_KEY_RESUMABLE},
    {"evaluator", "slurm_retries", KV_KEY_INT, C(evaluator.slurm_retries), 0, "3", NULL,
     "With evaluator.launcher slurm: how many times an evaluation lost to Slurm (a node "
     "failure, a preemption, a step cancelled from outside, a step that could not start) is "
     "started again; never the candidate's failure.",
     NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "srun", KV_KEY_STRING, C(evaluator.srun), 0, "srun", NULL,
     "With evaluator.launcher slurm: the srun program.", NULL, NULL, KV_KEY_RESUMABLE},
    {"evaluator", "distributed", KV_KEY_BOOL, C(evaluator.distributed), 0, "false", NULL,
     "OpenEvolve's flag; not supported.",
     "not supported; kevolve spreads evaluations over a cluster with evaluator.launcher: slurm"},
    IGN("evaluator", "cpu_limit", "OpenEvolve does not use it either; kevolve ignores it"),
    {"evaluator", "python_module", KV_KEY_TRIBOOL, C(evaluator.python_module), 0, NULL,
     "unset (auto)",
     "Run a Python evaluator as an OpenEvolve module (evaluate(program_path) returning a dict or "
     "an EvaluationResult) through kevolve's runner. Unset: yes when the .py file defines a "
     "top-level evaluate or evaluate_stage1 and no __main__ block that reads sys.argv."},
    {"evaluator", "python", KV_KEY_STRING, C(evaluator.python), 0, "python3", NULL,
     "Python interpreter of OpenEvolve modules (the one with the evaluator's packages).", NULL,
     NULL, KV_KEY_RESUMABLE},
    {"evaluator", "python_pool", KV_KEY_BOOL, C(evaluator.python_pool), 0, "false", NULL,
     "Evaluate an OpenEvolve module in parallel_evaluations warm interpreters that import it "
     "once (OpenEvolve's speed, for trusted evaluators: state persists between evaluations of a "
     "worker, and the memory limit does not apply); timeouts still kill. Off: a fresh "
     "interpreter per evaluation.",
     NULL, NULL, KV_KEY_RESUMABLE},
};

const size_t kv_config_key_count = sizeof kv_config_key_table / sizeof kv_config_key_table[0];

const char *const kv_config_sections[] = {"llm", "prompt", "database", "evaluator", NULL};

int kv_config_key_resumable(const kv_key *k)
{
    /* How children are asked for: the models, their endpoint, keys and
     * limits, the prompts; only the seed sent with requests stays. */
    if (!strcmp(k->section, "llm") || !strcmp(k->section, "prompt") ||
        !strcmp(k->section, KV_SECTION_MODEL))
        return strcmp(k->name, "random_seed") != 0;
    return (k->flags & KV_KEY_RESUMABLE) != 0;
}

const kv_key *kv_config_key_find(const char *section, const char *name)
{
    for (size_t i = 0; i < kv_config_key_count; i++) {
        const kv_key *k = &kv_config_key_table[i];
        if (strcmp(k->section, section) == 0 && strcmp(k->name, name) == 0) return k;
    }
    return NULL;
}

const kv_key *kv_config_key_find_dotted(const char *dotted)
{
    const char *dot = strchr(dotted, '.');
    if (!dot) return kv_config_key_find("", dotted);
    char section[32];
    size_t n = (size_t)(dot - dotted);
    if (n >= sizeof section) return NULL;
    memcpy(section, dotted, n);
    section[n] = '\0';
    return kv_config_key_find(section, dot + 1);
}

int kv_config_is_section(const char *name)
{
    for (size_t i = 0; kv_config_sections[i]; i++)
        if (strcmp(kv_config_sections[i], name) == 0) return 1;
    return 0;
}

const char *kv_config_key_nearest(const char *section, const char *name, size_t *distance)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < kv_config_key_count; i++) {
        const kv_key *k = &kv_config_key_table[i];
        if (strcmp(k->section, section) != 0) continue;
        size_t d = kv_edit_distance(name, k->name, 64);
        if (d < best_d) best = k->name, best_d = d;
    }
    if (section[0] == '\0') {
        for (size_t i = 0; kv_config_sections[i]; i++) {
            size_t d = kv_edit_distance(name, kv_config_sections[i], 64);
            if (d < best_d) best = kv_config_sections[i], best_d = d;
        }
    }
    if (distance) *distance = best_d;
    return best;
}

const char *kv_config_type_expect(kv_key_type t)
{
    switch (t) {
    case KV_KEY_INT:
    case KV_KEY_INT64:
    case KV_KEY_LONG:
        return "an integer";
    case KV_KEY_DOUBLE:
        return "a number";
    case KV_KEY_BOOL:
        return "a boolean (true or false)";
    case KV_KEY_TRIBOOL:
        return "a boolean (true or false) or null";
    case KV_KEY_STRING:
        return "a string";
    case KV_KEY_PATH:
        return "a path";
    case KV_KEY_STRINGS:
        return "a list of strings";
    case KV_KEY_DOUBLES:
        return "a list of numbers";
    case KV_KEY_BINS:
        return "an integer or a mapping {dimension: bins}";
    case KV_KEY_MODELS:
        return "a list of models";
    case KV_KEY_JSON:
        return "a mapping";
    case KV_KEY_IGNORED:
        return "anything";
    }
    return "a value";
}

/* Type column of the reference. */
static const char *type_doc(kv_key_type t)
{
    switch (t) {
    case KV_KEY_INT:
    case KV_KEY_INT64:
    case KV_KEY_LONG:
        return "integer";
    case KV_KEY_DOUBLE:
        return "number";
    case KV_KEY_BOOL:
        return "boolean";
    case KV_KEY_TRIBOOL:
        return "boolean or null";
    case KV_KEY_STRING:
        return "string";
    case KV_KEY_PATH:
        return "path";
    case KV_KEY_STRINGS:
        return "list of strings";
    case KV_KEY_DOUBLES:
        return "list of numbers";
    case KV_KEY_BINS:
        return "integer or mapping";
    case KV_KEY_MODELS:
        return "list of models";
    case KV_KEY_JSON:
        return "mapping";
    case KV_KEY_IGNORED:
        return "any";
    }
    return "";
}

/* Appends S with '|' escaped, so it stays inside its table cell. */
static void cell(kv_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') kv_buf_putc(b, '\\');
        kv_buf_putc(b, *s);
    }
}

char *kv_config_reference_markdown(void)
{
    static const char *const order[] = {"", "llm", "model", "prompt", "database", "evaluator"};
    static const char *const titles[] = {
        "Top level", "`llm`",      "Entries of `llm.models` and `llm.evaluator_models`",
        "`prompt`",  "`database`", "`evaluator`"};
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "<!-- generated by kevolve config-keys from src/config/config_keys.c -->\n");
    for (size_t s = 0; s < sizeof order / sizeof order[0]; s++) {
        kv_buf_printf(&b,
                      "\n### %s\n\n| Key | Type | Default | Description |\n"
                      "|-----|------|---------|-------------|\n",
                      titles[s]);
        for (size_t i = 0; i < kv_config_key_count; i++) {
            const kv_key *k = &kv_config_key_table[i];
            if (strcmp(k->section, order[s]) != 0) continue;
            const char *def = k->shown ? k->shown : k->def;
            if (k->alias_of || k->type == KV_KEY_IGNORED) def = NULL;
            kv_buf_printf(&b, "| `%s` | %s | ", k->name, type_doc(k->type));
            if (def) {
                kv_buf_putc(&b, '`');
                cell(&b, def);
                kv_buf_putc(&b, '`');
            } else {
                kv_buf_puts(&b, "-");
            }
            kv_buf_puts(&b, " | ");
            cell(&b, k->doc);
            if (k->note) {
                kv_buf_puts(&b, k->type == KV_KEY_IGNORED ? " " : " Warned: ");
                cell(&b, k->note);
                kv_buf_putc(&b, '.');
            }
            if (k->type != KV_KEY_IGNORED && !k->alias_of && kv_config_key_resumable(k))
                kv_buf_puts(&b, " *Resume may change it.*");
            kv_buf_puts(&b, " |\n");
        }
    }
    kv_buf_puts(&b, "\nAny other top-level mapping (e.g. `algotune:`) is passed to the evaluator "
                    "as JSON. `${VAR}` and `${VAR:-default}` in values expand from the "
                    "environment; `$${` writes a literal `${`.\n\n"
                    "*Resume may change it*: `kevolve resume DIR --config FILE` takes the "
                    "key's new value from FILE (recorded in the run's manifest); a change of "
                    "any other key, which would change what the run searched, is refused.\n");
    return kv_buf_steal(&b);
}
