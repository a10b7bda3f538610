/* Run configuration: defaults, cross-field validation, freeing, warnings.
 * Defaults come from the key table (config_keys.c); loading is in
 * yaml_load.c and the dump in config_dump.c. */
#include "config/config_keys.h"
#include "config/objectives.h"
#include "util/log.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kv_config_init(kv_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < kv_config_key_count; i++) {
        const kv_key *k = &kv_config_key_table[i];
        if (strcmp(k->section, KV_SECTION_MODEL) != 0) kv_config_field_default(k, c);
    }
    c->evaluator_sections = json_object();
}

void kv_config_free(kv_config *c)
{
    if (!c) return;
    for (size_t i = 0; i < kv_config_key_count; i++) {
        const kv_key *k = &kv_config_key_table[i];
        if (strcmp(k->section, KV_SECTION_MODEL) != 0) kv_config_field_free(k, c);
    }
    free(c->path);
    free(c->dir);
    free(c->text);
    json_decref(c->evaluator_sections);
    for (size_t i = 0; i < c->n_warnings; i++)
        free(c->warnings[i]);
    free(c->warnings);
    memset(c, 0, sizeof *c);
}

void kv_config_warn(kv_config *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kv_buf b = KV_BUF_INIT;
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *msg = kv_buf_steal(&b);
    kv_warn("%s", msg);
    c->warnings = kv_realloc(c->warnings, (c->n_warnings + 1) * sizeof *c->warnings);
    c->warnings[c->n_warnings++] = msg;
}

/* Validation state: the first error wins. */
typedef struct check {
    kv_config_error *err;
    char *key;
    size_t keysz;
    int failed;
} check;

/* Records "KEY: message" unless an error is already recorded. */
static void bad(check *ck, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void bad(check *ck, const char *key, const char *fmt, ...)
{
    if (ck->failed) return;
    ck->failed = 1;
    if (ck->key) snprintf(ck->key, ck->keysz, "%s", key);
    if (!ck->err) return;
    int n = snprintf(ck->err->message, sizeof ck->err->message, "%s: ", key);
    if (n < 0 || (size_t)n >= sizeof ck->err->message) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ck->err->message + n, sizeof ck->err->message - (size_t)n, fmt, ap);
    va_end(ap);
}

static void ratio(check *ck, const char *key, double v)
{
    if (!(v >= 0.0 && v <= 1.0)) bad(ck, key, "must be between 0 and 1, got %g", v);
}

static void at_least(check *ck, const char *key, long v, long min)
{
    if (v < min) bad(ck, key, "must be at least %ld, got %ld", min, v);
}

/* Sizes beyond these are mistakes (a stray digit, a unit slip), not runs: they
 * would exhaust memory, processes or patience long before anything useful. */
#define KV_MAX_ISLANDS 10000
#define KV_MAX_POPULATION 1000000
#define KV_MAX_PARALLEL 4096
#define KV_MAX_CODE_LENGTH 100000000L
#define KV_MAX_TIMEOUT_S (30.0 * 24 * 3600)
#define KV_MAX_DIMENSIONS 16
#define KV_MAX_BINS 100000

static void between(check *ck, const char *key, long v, long min, long max)
{
    if (v < min)
        bad(ck, key, "must be at least %ld, got %ld", min, v);
    else if (v > max)
        bad(ck, key, "must be at most %ld, got %ld", max, v);
}

static void positive(check *ck, const char *key, double v)
{
    if (!(v > 0.0) || !isfinite(v)) bad(ck, key, "must be a positive number, got %g", v);
}

static void non_negative(check *ck, const char *key, double v)
{
    if (!(v >= 0.0) || !isfinite(v)) bad(ck, key, "must be a number >= 0, got %g", v);
}

/* Rules of one llm.models entry; PREFIX is "llm.models[i]". */
static void check_model(check *ck, const char *prefix, const kv_model_config *m)
{
    char key[96];
    snprintf(key, sizeof key, "%s.name", prefix);
    if (!m->name || !*m->name) bad(ck, key, "every model needs a name");
    snprintf(key, sizeof key, "%s.weight", prefix);
    non_negative(ck, key, m->weight);
    snprintf(key, sizeof key, "%s.temperature", prefix);
    if (!isnan(m->temperature)) non_negative(ck, key, m->temperature);
    snprintf(key, sizeof key, "%s.top_p", prefix);
    if (!isnan(m->top_p)) ratio(ck, key, m->top_p);
    snprintf(key, sizeof key, "%s.max_tokens", prefix);
    at_least(ck, key, m->max_tokens, 0);
    snprintf(key, sizeof key, "%s.timeout", prefix);
    non_negative(ck, key, m->timeout);
    snprintf(key, sizeof key, "%s.retries", prefix);
    at_least(ck, key, m->retries, -1);
    snprintf(key, sizeof key, "%s.retry_delay", prefix);
    if (!isnan(m->retry_delay)) non_negative(ck, key, m->retry_delay);
    snprintf(key, sizeof key, "%s.price_input_per_mtok", prefix);
    non_negative(ck, key, m->price_input_per_mtok);
    snprintf(key, sizeof key, "%s.price_output_per_mtok", prefix);
    non_negative(ck, key, m->price_output_per_mtok);
}

int kv_config_validate_key(const kv_config *c, kv_config_error *err, char *key, size_t keysz)
{
    check ck = {err, key, keysz, 0};
    if (key && keysz) key[0] = '\0';
    kv_log_level lvl;
    if (!c->log_level || kv_log_parse_level(c->log_level, &lvl) != 0)
        bad(&ck, "log_level", "unknown level '%s' (debug, info, warning or error)",
            c->log_level ? c->log_level : "");
    at_least(&ck, "max_iterations", c->max_iterations, 0);
    at_least(&ck, "checkpoint_interval", c->checkpoint_interval, 0);
    between(&ck, "max_code_length", c->max_code_length, 1, KV_MAX_CODE_LENGTH);
    non_negative(&ck, "convergence_threshold", c->convergence_threshold);
    if (c->has_target_score && !isfinite(c->target_score))
        bad(&ck, "target_score", "must be a finite number");
    if (c->initial_program && c->n_initial_programs)
        bad(&ck, "initial_programs", "give initial_program or initial_programs, not both");

    const kv_llm_config *l = &c->llm;
    for (size_t i = 0; i < l->n_models; i++) {
        char prefix[48];
        snprintf(prefix, sizeof prefix, "llm.models[%zu]", i);
        check_model(&ck, prefix, &l->models[i]);
    }
    for (size_t i = 0; i < l->n_evaluator_models; i++) {
        char prefix[48];
        snprintf(prefix, sizeof prefix, "llm.evaluator_models[%zu]", i);
        check_model(&ck, prefix, &l->evaluator_models[i]);
    }
    non_negative(&ck, "llm.temperature", l->temperature);
    ratio(&ck, "llm.top_p", l->top_p);
    at_least(&ck, "llm.max_tokens", l->max_tokens, 1);
    positive(&ck, "llm.timeout", l->timeout);
    at_least(&ck, "llm.retries", l->retries, 0);
    non_negative(&ck, "llm.retry_delay", l->retry_delay);
    non_negative(&ck, "llm.primary_model_weight", l->primary_model_weight);
    non_negative(&ck, "llm.secondary_model_weight", l->secondary_model_weight);
    non_negative(&ck, "llm.max_budget_usd", l->max_budget_usd);
    between(&ck, "llm.max_concurrency", l->max_concurrency, 1, KV_MAX_PARALLEL);
    at_least(&ck, "llm.fallback_after", l->fallback_after, 0);
    at_least(&ck, "llm.give_up_after", l->give_up_after, 1);
    ratio(&ck, "llm.bandit_min_share", l->bandit_min_share);
    non_negative(&ck, "llm.bandit_prior_results", l->bandit_prior_results);
    positive(&ck, "llm.bandit_cost_floor", l->bandit_cost_floor);

    const kv_prompt_config *p = &c->prompt;
    between(&ck, "prompt.num_top_programs", p->num_top_programs, 0, KV_MAX_POPULATION);
    between(&ck, "prompt.num_diverse_programs", p->num_diverse_programs, 0, KV_MAX_POPULATION);
    at_least(&ck, "prompt.max_artifact_bytes", p->max_artifact_bytes, 0);
    at_least(&ck, "prompt.max_prompt_chars", p->max_prompt_chars, 1);
    at_least(&ck, "prompt.diff_summary_max_line_len", p->diff_summary_max_line_len, 4);
    at_least(&ck, "prompt.diff_summary_max_lines", p->diff_summary_max_lines, 1);
    const char *tkey;
    json_t *tval;
    json_object_foreach(p->template_variations, tkey, tval)
    {
        int ok = json_is_array(tval);
        for (size_t i = 0; ok && i < json_array_size(tval); i++)
            ok = json_is_string(json_array_get(tval, i));
        if (!ok) {
            char vkey[160];
            snprintf(vkey, sizeof vkey, "prompt.template_variations.%s", tkey);
            bad(&ck, vkey, "expected a list of phrasings (strings)");
        }
    }

    const kv_database_config *d = &c->database;
    kv_objective *objectives = NULL;
    char *why = NULL;
    if (kv_objectives_parse(d->objectives, d->n_objectives, &objectives, &why) != 0) {
        bad(&ck, "objectives", "%s", why);
        free(why);
    } else {
        kv_objectives_free(objectives, d->n_objectives);
    }
    if (d->n_objectives == 1)
        bad(&ck, "objectives", "one objective is combined_score's job: name two or more");
    between(&ck, "database.population_size", d->population_size, 1, KV_MAX_POPULATION);
    between(&ck, "database.archive_size", d->archive_size, 1, KV_MAX_POPULATION);
    between(&ck, "database.num_islands", d->num_islands, 1, KV_MAX_ISLANDS);
    ratio(&ck, "database.elite_selection_ratio", d->elite_selection_ratio);
    ratio(&ck, "database.exploration_ratio", d->exploration_ratio);
    ratio(&ck, "database.exploitation_ratio", d->exploitation_ratio);
    ratio(&ck, "database.failed_parent_probability", d->failed_parent_probability);
    if (d->exploration_ratio + d->exploitation_ratio > 1.0 + 1e-9)
        bad(&ck, "database.exploitation_ratio",
            "exploration_ratio + exploitation_ratio must not exceed 1, got %g + %g",
            d->exploration_ratio, d->exploitation_ratio);
    for (size_t i = 0; i < d->n_feature_dimensions; i++) {
        const char *dim = d->feature_dimensions[i];
        if (!dim || !*dim) {
            bad(&ck, "database.feature_dimensions", "entry %zu is empty", i);
            continue;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(d->feature_dimensions[j], dim) == 0)
                bad(&ck, "database.feature_dimensions", "'%s' is listed twice", dim);
        if (d->feature_bins && d->feature_bins[i] < 1) {
            char bkey[160];
            snprintf(bkey, sizeof bkey, "database.feature_bins.%s", dim);
            bad(&ck, bkey, "must be at least 1, got %d", d->feature_bins[i]);
        }
    }
    if (d->n_feature_dimensions && !d->feature_bins) bad(&ck, "database.feature_bins", "missing");
    if (d->n_feature_dimensions > KV_MAX_DIMENSIONS)
        bad(&ck, "database.feature_dimensions", "at most %d dimensions, got %zu", KV_MAX_DIMENSIONS,
            d->n_feature_dimensions);
    /* A cell is named by a 64-bit key: the grid must fit. */
    double cells = 1;
    for (size_t i = 0; d->feature_bins && i < d->n_feature_dimensions; i++) {
        if (d->feature_bins[i] > KV_MAX_BINS) {
            char bkey[160];
            snprintf(bkey, sizeof bkey, "database.feature_bins.%s", d->feature_dimensions[i]);
            bad(&ck, bkey, "must be at most %d, got %d", KV_MAX_BINS, d->feature_bins[i]);
        }
        cells *= d->feature_bins[i] > 0 ? d->feature_bins[i] : 1;
    }
    if (cells > 1e18)
        bad(&ck, "database.feature_bins", "the grid would have %.3g cells; at most 1e18", cells);
    between(&ck, "database.diversity_reference_size", d->diversity_reference_size, 1,
            KV_MAX_POPULATION);
    at_least(&ck, "database.migration_interval", d->migration_interval, 1);
    ratio(&ck, "database.migration_rate", d->migration_rate);
    at_least(&ck, "database.artifact_size_threshold", d->artifact_size_threshold, 0);
    at_least(&ck, "database.artifact_retention_days", d->artifact_retention_days, 0);

    const kv_evaluator_config *e = &c->evaluator;
    positive(&ck, "evaluator.timeout", e->timeout);
    if (e->timeout > KV_MAX_TIMEOUT_S)
        bad(&ck, "evaluator.timeout", "must be at most %.0f seconds (30 days), got %g",
            KV_MAX_TIMEOUT_S, e->timeout);
    at_least(&ck, "evaluator.max_retries", e->max_retries, 0);
    for (size_t i = 0; i < e->n_cascade_thresholds; i++)
        if (!isfinite(e->cascade_thresholds[i]))
            bad(&ck, "evaluator.cascade_thresholds", "entry %zu is not a finite number", i);
    between(&ck, "evaluator.parallel_evaluations", e->parallel_evaluations, 1, KV_MAX_PARALLEL);
    non_negative(&ck, "evaluator.llm_feedback_weight", e->llm_feedback_weight);
    at_least(&ck, "evaluator.max_artifact_storage", e->max_artifact_storage, 0);
    at_least(&ck, "evaluator.memory_limit_mb", e->memory_limit_mb, 0);
    if (e->backend && strcmp(e->backend, "auto") && strcmp(e->backend, "cpu") &&
        strcmp(e->backend, "opencl") && strcmp(e->backend, "cuda"))
        bad(&ck, "evaluator.backend", "unknown backend '%s' (auto, cpu, opencl or cuda)",
            e->backend);
    if (!e->python || !*e->python) bad(&ck, "evaluator.python", "names no interpreter");
    if (!(e->screen_keep >= 0 && e->screen_keep <= 1))
        bad(&ck, "evaluator.screen_keep", "must be in (0, 1], or 0 for the task's own");
    if (e->energy && !(e->task && *e->task))
        bad(&ck, "evaluator.energy",
            "only the built-in harness measures energy: set evaluator.task too, or leave "
            "energy out");
    if (e->quick && !(e->task && *e->task))
        bad(&ck, "evaluator.quick",
            "only the built-in harness has a quick mode: set evaluator.task "
            "too, or leave quick out");
    non_negative(&ck, "evaluator.kernel_timeout", e->kernel_timeout);
    non_negative(&ck, "evaluator.device_wait", e->device_wait);
    positive(&ck, "evaluator.baseline_max_age", e->baseline_max_age);
    if (e->kernel_timeout > e->timeout)
        bad(&ck, "evaluator.kernel_timeout",
            "%g s for one call is more than the whole evaluation's evaluator.timeout (%g s)",
            e->kernel_timeout, e->timeout);
    if (e->n_scenarios && !(e->task && *e->task))
        bad(&ck, "evaluator.scenarios", "only a built-in task has scenarios: set evaluator.task");
    for (size_t i = 0; i < e->n_devices; i++) {
        const char *dev = e->devices[i];
        char *end = NULL;
        long v = dev ? strtol(dev, &end, 10) : -1;
        if (dev && strcmp(dev, "auto") == 0 && e->n_devices == 1) continue;
        if (!dev || !*dev || *end || v < 0 || v > 4095)
            bad(&ck, "evaluator.devices",
                "'%s' is not a device index (give auto, or a list of indices such as [0, 1])",
                dev ? dev : "");
        for (size_t j = 0; dev && j < i; j++)
            if (strcmp(e->devices[j], dev) == 0)
                bad(&ck, "evaluator.devices", "device %s is listed twice", dev);
    }
    int slurm = e->launcher && strcmp(e->launcher, "slurm") == 0;
    if (e->launcher && !slurm && strcmp(e->launcher, "local") != 0)
        bad(&ck, "evaluator.launcher", "unknown launcher '%s' (local or slurm)", e->launcher);
    non_negative(&ck, "evaluator.slurm_time", e->slurm_time);
    at_least(&ck, "evaluator.slurm_retries", e->slurm_retries, 0);
    if (slurm && (!e->srun || !*e->srun)) bad(&ck, "evaluator.srun", "names no program");
    if (slurm && e->python_pool)
        bad(&ck, "evaluator.python_pool",
            "warm interpreters live on this machine: with evaluator.launcher slurm, leave "
            "python_pool out");
    if (slurm && e->n_devices && !(e->n_devices == 1 && strcmp(e->devices[0], "auto") == 0))
        bad(&ck, "evaluator.devices",
            "with evaluator.launcher slurm each step evaluates on the device Slurm gives it "
            "(evaluator.slurm_gres): leave devices at auto");
    return ck.failed ? -1 : 0;
}

int kv_config_validate(const kv_config *c, kv_config_error *err)
{
    return kv_config_validate_key(c, err, NULL, 0);
}

void kv_config_use_models(kv_config *c, const char *primary, const char *secondary,
                          const char *api_base)
{
    kv_llm_config *l = &c->llm;
    if (api_base) {
        free(l->api_base);
        l->api_base = kv_strdup(api_base);
    }
    if (!primary) return;
    for (size_t i = 0; i < l->n_models; i++)
        kv_config_model_free(&l->models[i]);
    free(l->models);
    l->models = NULL;
    l->n_models = 0;
    free(l->primary_model);
    l->primary_model = kv_strdup(primary);
    free(l->secondary_model);
    l->secondary_model = kv_strdup(secondary);
    kv_config_models_from_shorthand(l);
}
