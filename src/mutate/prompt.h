/* Prompts for the LLM mutator: {system, user} built from templates and the
 * parent's context (its source, metrics, per-scenario results, artifacts),
 * the island's top programs, diverse inspirations, and the previous attempts
 * on this lineage with their outcomes (rejection reasons included, so the
 * model learns why an edit was refused).
 *
 * Templates: one text file per template, named as in OpenEvolve
 * (system_message, diff_user, full_rewrite_user, evolution_history,
 * previous_attempt, top_program, inspirations_section, inspiration_program,
 * evaluator_system_message, evaluation), with {placeholders}. The defaults
 * live in templates/ and are compiled in; prompt.template_dir overrides any
 * of them file by file. Unknown {names} are left as they are.
 *
 * Size: when system + user would exceed prompt.max_prompt_chars, the least
 * useful parts go first: the oldest attempts, then the inspirations, then
 * the top programs' sources (lowest ranked first), then the artifacts are
 * trimmed, then whole top programs; the parent is never cut.
 *
 * Artifacts are redacted (keys, bearer tokens, key=value secrets, and the
 * values of secret-looking environment variables) when
 * prompt.artifact_security_filter is on. */
#ifndef KV_MUTATE_PROMPT_H
#define KV_MUTATE_PROMPT_H

#include "config/config.h"
#include "store/program.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kv_prompt_inputs {
    const kv_program *parent; /* required: source, metrics, artifacts, fitness */
    /* Per-scenario results of the parent: an array of objects (each with a
     * "name") or an object name -> object. NULL: parent->metrics["scenarios"]
     * when that exists. */
    const json_t *scenarios;
    const kv_program *const *top; /* the island's best, best first */
    size_t n_top;
    const kv_program *const *inspirations; /* diverse programs */
    size_t n_inspirations;
    const kv_program *const *attempts; /* earlier children on this lineage, oldest first;
                                          status, status_reason, change_summary, metrics */
    size_t n_attempts;
    int diff_mode;           /* 1: SEARCH/REPLACE instructions; 0: full rewrite */
    const char *language;    /* for code fences; NULL: "text" */
    uint64_t variation_seed; /* draws of prompt.template_variations (use_template_stochasticity) */
} kv_prompt_inputs;

typedef struct kv_prompt {
    char *system;
    char *user;
    /* What the size budget removed. */
    int dropped_attempts;
    int dropped_inspirations;
    int omitted_top_sources;
    int dropped_top;
    int artifacts_trimmed; /* 1 when artifacts were cut below max_artifact_bytes */
    int over_budget;       /* 1 when even the smallest form exceeds the budget */
} kv_prompt;

typedef struct kv_prompt_templates kv_prompt_templates;

/* Loads the templates: the compiled-in defaults, overridden by the NAME.txt
 * files found in DIR (NULL or "": defaults only). Returns NULL with a
 * malloc'd message in *err when DIR is not a readable directory or a file in
 * it cannot be read. */
kv_prompt_templates *kv_prompt_templates_load(const char *dir, char **err);
void kv_prompt_templates_free(kv_prompt_templates *t);
/* The text of template NAME, or NULL when unknown. */
const char *kv_prompt_template_get(const kv_prompt_templates *t, const char *name);

/* Builds the prompt for IN under CFG (cfg->system_message, when set, names a
 * template or is the system text itself). Fills OUT (free with
 * kv_prompt_free). Returns 0, or -1 with a malloc'd message in *err when IN
 * has no parent. */
int kv_prompt_build(const kv_prompt_templates *t, const kv_prompt_config *cfg,
                    const kv_prompt_inputs *in, kv_prompt *out, char **err);
void kv_prompt_free(kv_prompt *p);
/* Fills template TPL: each "{key}" of KEYS[i] becomes VALS[i] (NULL: "");
 * other braces stay. Values are not rescanned. Malloc'd. */
char *kv_prompt_render(const char *tpl, const char *const *keys, const char *const *vals, size_t n);

/* TPL with each "{key}" of VARIATIONS (an object key -> [phrasings]) that it
 * holds replaced everywhere by one phrasing drawn with SEED, keys taken in
 * order (OpenEvolve's template stochasticity). Malloc'd; a copy of TPL when
 * VARIATIONS is not an object. */
char *kv_prompt_vary(const char *tpl, const json_t *variations, uint64_t seed);

/* Copy of TEXT with secrets replaced by "***": sk-... keys, "Bearer ...",
 * api_key=/token:/password=... values, common token prefixes (ghp_, hf_,
 * xoxb-, AKIA...), and the values (8+ chars) of environment variables whose
 * names look secret. Malloc'd. */
char *kv_prompt_redact(const char *text);
/* 1 when environment variable NAME looks like it holds a secret. */
int kv_prompt_env_name_is_secret(const char *name);

/* Built-in template NAME (NULL when unknown), and the I-th built-in name
 * (NULL past the end), for tests and `kevolve` to list them. */
const char *kv_prompt_default_template(const char *name);
const char *kv_prompt_template_name(size_t i);

#endif
