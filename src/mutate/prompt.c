/* Building the LLM mutator's prompt from templates and the parent's context,
 * within a size budget. See prompt.h for the contract. */
#include "mutate/prompt.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kv_prompt_templates {
    char **names;
    char **texts;
    size_t n;
};

kv_prompt_templates *kv_prompt_templates_load(const char *dir, char **err)
{
    if (dir && *dir && !kv_is_dir(dir)) {
        *err = kv_asprintf("prompt.template_dir: %s is not a directory", dir);
        return NULL;
    }
    kv_prompt_templates *t = kv_calloc(1, sizeof *t);
    for (size_t i = 0; kv_prompt_template_name(i); i++)
        t->n++;
    t->names = kv_calloc(t->n, sizeof *t->names);
    t->texts = kv_calloc(t->n, sizeof *t->texts);
    for (size_t i = 0; i < t->n; i++) {
        const char *name = kv_prompt_template_name(i);
        t->names[i] = kv_strdup(name);
        char *text = NULL;
        if (dir && *dir) {
            char *file = kv_asprintf("%s.txt", name);
            char *path = kv_path_join(dir, file);
            free(file);
            if (kv_is_file(path)) {
                text = kv_read_file(path, NULL);
                if (!text) {
                    *err = kv_asprintf("prompt.template_dir: cannot read %s: %s", path,
                                       strerror(errno));
                    free(path);
                    kv_prompt_templates_free(t);
                    return NULL;
                }
            }
            free(path);
        }
        t->texts[i] = text ? text : kv_strdup(kv_prompt_default_template(name));
    }
    return t;
}

void kv_prompt_templates_free(kv_prompt_templates *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->names[i]);
        free(t->texts[i]);
    }
    free(t->names);
    free(t->texts);
    free(t);
}

const char *kv_prompt_template_get(const kv_prompt_templates *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->names[i], name) == 0) return t->texts[i];
    return NULL;
}

char *kv_prompt_render(const char *tpl, const char *const *keys, const char *const *vals, size_t n)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    for (const char *p = tpl; *p;) {
        if (*p == '{') {
            const char *close = strchr(p + 1, '}');
            size_t i = n;
            if (close)
                for (i = 0; i < n; i++)
                    if (strlen(keys[i]) == (size_t)(close - p - 1) &&
                        strncmp(p + 1, keys[i], (size_t)(close - p - 1)) == 0)
                        break;
            if (i < n) {
                kv_buf_puts(&b, vals[i] ? vals[i] : "");
                p = close + 1;
                continue;
            }
        }
        kv_buf_putc(&b, *p++);
    }
    return kv_buf_steal(&b);
}

/* One value as prompt text: numbers in %.6g, strings as they are, the rest as JSON. */
static void put_value(kv_buf *b, const json_t *v)
{
    if (json_is_number(v)) {
        kv_buf_printf(b, "%.6g", json_number_value(v));
    } else if (json_is_string(v)) {
        kv_buf_puts(b, json_string_value(v));
    } else {
        char *s = kv_json_dumps(v);
        kv_buf_puts(b, s);
        free(s);
    }
}

/* "key=value, key=value" of an object's scalar members (nested values and
 * a "name" member skipped), or NONE when it has none. Malloc'd. */
static char *compact_metrics(const json_t *m, const char *none)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    const char *k;
    json_t *v;
    if (json_is_object(m)) {
        json_object_foreach((json_t *)m, k, v)
        {
            if (json_is_object(v) || json_is_array(v) || strcmp(k, "name") == 0) continue;
            kv_buf_printf(&b, "%s%s=", b.len ? ", " : "", k);
            put_value(&b, v);
        }
    }
    if (b.len == 0) kv_buf_puts(&b, none);
    return kv_buf_steal(&b);
}

/* The parent's metrics, one per line, then its per-scenario results. */
static char *metrics_text(const kv_prompt_inputs *in)
{
    const kv_program *p = in->parent;
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    const char *k;
    json_t *v;
    if (json_is_object(p->metrics)) {
        json_object_foreach(p->metrics, k, v)
        {
            if (strcmp(k, "scenarios") == 0) continue;
            kv_buf_printf(&b, "- %s: ", k);
            put_value(&b, v);
            kv_buf_putc(&b, '\n');
        }
    }
    if (b.len == 0) kv_buf_puts(&b, "- (not evaluated yet)\n");
    const json_t *sc = in->scenarios;
    if (!sc && json_is_object(p->metrics)) sc = json_object_get(p->metrics, "scenarios");
    if (json_is_array(sc) && json_array_size(sc) > 0) {
        kv_buf_puts(&b, "\nPer-scenario results:\n");
        size_t i;
        json_array_foreach((json_t *)sc, i, v)
        {
            const char *name = json_string_value(json_object_get(v, "name"));
            char *m = compact_metrics(v, "-");
            kv_buf_printf(&b, "- %s: %s\n", name ? name : "scenario", m);
            free(m);
        }
    } else if (json_is_object(sc) && json_object_size(sc) > 0) {
        kv_buf_puts(&b, "\nPer-scenario results:\n");
        json_object_foreach((json_t *)sc, k, v)
        {
            char *m = compact_metrics(v, "-");
            kv_buf_printf(&b, "- %s: %s\n", k, m);
            free(m);
        }
    }
    /* No trailing newline: the template places the section. */
    while (b.len && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    return kv_buf_steal(&b);
}

/* The parent's artifacts, each cut to CAP bytes (0: none at all), redacted
 * when FILTER. Sets *trimmed when one was cut. Malloc'd ("" when none). */
static char *artifacts_text(const kv_program *p, size_t cap, int filter, int *trimmed)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    if (cap == 0 || !json_is_object(p->artifacts) || json_object_size(p->artifacts) == 0)
        return kv_buf_steal(&b);
    kv_buf_puts(&b, "\n## Output of the last evaluation\n");
    const char *k;
    json_t *v;
    json_object_foreach(p->artifacts, k, v)
    {
        kv_buf raw = KV_BUF_INIT;
        kv_buf_puts(&raw, "");
        put_value(&raw, v);
        char *text = filter ? kv_prompt_redact(raw.data) : kv_buf_steal(&raw);
        kv_buf_free(&raw);
        size_t len = strlen(text);
        kv_buf_printf(&b, "\n### %s\n```\n", k);
        if (len > cap) {
            /* Keep the tail: errors come last. */
            kv_buf_printf(&b, "[... %zu bytes cut ...]\n", len - cap);
            kv_buf_puts(&b, text + (len - cap));
            *trimmed = 1;
        } else {
            kv_buf_puts(&b, text);
        }
        if (b.len && b.data[b.len - 1] != '\n') kv_buf_putc(&b, '\n');
        kv_buf_puts(&b, "```\n");
        free(text);
    }
    return kv_buf_steal(&b);
}

/* The outcome of attempt A relative to the parent. Malloc'd. */
static char *outcome_text(const kv_program *a, const kv_program *parent)
{
    char *reason = a->status_reason ? kv_prompt_redact(a->status_reason) : NULL;
    if (reason && strlen(reason) > 600) strcpy(reason + 597, "...");
    char *out;
    switch (a->status) {
    case KV_STATUS_REJECTED:
        out = kv_asprintf("rejected before evaluation: %s", reason ? reason : "no reason given");
        break;
    case KV_STATUS_FAILED:
        out = kv_asprintf("failed: %s", reason ? reason : "no reason given");
        break;
    case KV_STATUS_TIMEOUT:
        out = kv_asprintf("timed out%s%s", reason ? ": " : "", reason ? reason : "");
        break;
    case KV_STATUS_DUPLICATE:
        out = kv_strdup("a duplicate of an earlier program (not evaluated)");
        break;
    default:
        if (isnan(a->fitness) || isnan(parent->fitness))
            out = kv_strdup("evaluated");
        else if (a->fitness > parent->fitness)
            out = kv_asprintf("improved the score (%.6g -> %.6g)", parent->fitness, a->fitness);
        else if (a->fitness < parent->fitness)
            out = kv_asprintf("made the score worse (%.6g -> %.6g)", parent->fitness, a->fitness);
        else
            out = kv_asprintf("no change in score (%.6g)", a->fitness);
        break;
    }
    free(reason);
    return out;
}

static char *improvement_text(const kv_prompt_inputs *in, const kv_prompt_config *cfg)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    const kv_program *p = in->parent;
    if (!json_is_object(p->metrics) || json_object_size(p->metrics) == 0)
        kv_buf_puts(&b, "- The program has no results yet: make it correct first.\n");
    int rejected = 0, failed = 0;
    for (size_t i = 0; i < in->n_attempts; i++) {
        rejected += in->attempts[i]->status == KV_STATUS_REJECTED;
        failed += in->attempts[i]->status == KV_STATUS_FAILED ||
                  in->attempts[i]->status == KV_STATUS_TIMEOUT;
    }
    if (rejected)
        kv_buf_printf(&b,
                      "- %d earlier attempt%s %s rejected (reasons below): copy SEARCH text "
                      "exactly and edit only inside the EVOLVE-BLOCKs.\n",
                      rejected, rejected == 1 ? "" : "s", rejected == 1 ? "was" : "were");
    if (failed)
        kv_buf_printf(&b,
                      "- %d earlier attempt%s failed or timed out (see below): avoid "
                      "repeating those changes.\n",
                      failed, failed == 1 ? "" : "s");
    size_t len = p->source ? strlen(p->source) : 0;
    if (cfg->suggest_simplification_after_chars > 0 &&
        len > (size_t)cfg->suggest_simplification_after_chars)
        kv_buf_printf(&b,
                      "- The program is %zu characters long: simpler code is welcome where "
                      "it costs no speed.\n",
                      len);
    if (b.len == 0) kv_buf_puts(&b, "- Raise combined_score while keeping the program correct.\n");
    while (b.len && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    return kv_buf_steal(&b);
}

/* What the size budget keeps. */
typedef struct keep {
    size_t attempts_from; /* first attempt kept (the oldest are dropped) */
    size_t inspirations;  /* count kept from the front */
    size_t top;           /* top programs kept */
    size_t top_sources;   /* of those, how many show their source */
    size_t artifact_cap;  /* bytes per artifact; 0: none */
} keep;

/* Copy of SRC without its final newline (code goes inside a fence that
 * starts its own line). Malloc'd. */
static char *code_text(const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n && src[n - 1] == '\n') n--;
    return kv_strndup(src ? src : "", n);
}

static char *fmt_index(size_t i)
{
    return kv_asprintf("%zu", i);
}

static char *history_text(const kv_prompt_templates *t, const kv_prompt_inputs *in, const keep *k,
                          const char *lang)
{
    kv_buf attempts = KV_BUF_INIT, tops = KV_BUF_INIT, insp = KV_BUF_INIT;
    kv_buf_puts(&attempts, "");
    kv_buf_puts(&tops, "");
    kv_buf_puts(&insp, "");
    for (size_t i = k->attempts_from; i < in->n_attempts; i++) {
        const kv_program *a = in->attempts[i];
        char *num = fmt_index(i + 1);
        char *perf = compact_metrics(a->metrics, "not evaluated");
        char *outcome = outcome_text(a, in->parent);
        const char *keys[] = {"attempt_number", "changes", "performance", "outcome"};
        const char *vals[] = {num, a->change_summary ? a->change_summary : "(not described)", perf,
                              outcome};
        char *s = kv_prompt_render(kv_prompt_template_get(t, "previous_attempt"), keys, vals, 4);
        kv_buf_puts(&attempts, s);
        free(s);
        free(num);
        free(perf);
        free(outcome);
    }
    if (attempts.len == 0) kv_buf_puts(&attempts, "(none yet)\n");
    for (size_t i = 0; i < k->top; i++) {
        const kv_program *p = in->top[i];
        char *num = fmt_index(i + 1);
        char *score = isnan(p->fitness) ? kv_strdup("n/a") : kv_asprintf("%.6g", p->fitness);
        char *features = compact_metrics(p->metrics, "-");
        char *src = i < k->top_sources && p->source
                        ? code_text(p->source)
                        : kv_strdup("(source omitted to fit the prompt size budget)");
        const char *keys[] = {"program_number", "score", "language", "program_snippet",
                              "key_features"};
        const char *vals[] = {num, score, lang, src, features};
        char *s = kv_prompt_render(kv_prompt_template_get(t, "top_program"), keys, vals, 5);
        kv_buf_puts(&tops, s);
        free(s);
        free(src);
        free(num);
        free(score);
        free(features);
    }
    if (tops.len == 0) kv_buf_puts(&tops, "(none yet)\n");
    for (size_t i = 0; i < k->inspirations; i++) {
        const kv_program *p = in->inspirations[i];
        char *num = fmt_index(i + 1);
        char *type = isnan(p->fitness) ? kv_strdup("diverse")
                                       : kv_asprintf("diverse, score %.6g", p->fitness);
        char *features = compact_metrics(p->metrics, "-");
        const char *keys[] = {"program_number", "program_type", "language", "program_snippet",
                              "unique_features"};
        char *src = code_text(p->source);
        const char *vals[] = {num, type, lang, src, features};
        char *s = kv_prompt_render(kv_prompt_template_get(t, "inspiration_program"), keys, vals, 5);
        kv_buf_puts(&insp, s);
        free(s);
        free(src);
        free(num);
        free(type);
        free(features);
    }
    char *insp_section = NULL;
    if (insp.len) {
        const char *keys[] = {"inspiration_programs"};
        const char *vals[] = {insp.data};
        insp_section =
            kv_prompt_render(kv_prompt_template_get(t, "inspirations_section"), keys, vals, 1);
    }
    const char *keys[] = {"previous_attempts", "top_programs", "inspirations_section"};
    const char *vals[] = {attempts.data, tops.data, insp_section ? insp_section : ""};
    char *out = kv_prompt_render(kv_prompt_template_get(t, "evolution_history"), keys, vals, 3);
    free(insp_section);
    kv_buf_free(&attempts);
    kv_buf_free(&tops);
    kv_buf_free(&insp);
    return out;
}

/* The user message under K. Sets *trimmed when an artifact was cut. */
static char *user_text(const kv_prompt_templates *t, const char *tpl, const kv_prompt_config *cfg,
                       const kv_prompt_inputs *in, const keep *k, int *trimmed)
{
    const char *lang = in->language ? in->language : "text";
    char *metrics = metrics_text(in);
    char *areas = improvement_text(in, cfg);
    char *arts = artifacts_text(in->parent, cfg->include_artifacts ? k->artifact_cap : 0,
                                cfg->artifact_security_filter, trimmed);
    char *hist = history_text(t, in, k, lang);
    const char *keys[] = {"metrics",           "improvement_areas", "artifacts",
                          "evolution_history", "current_program",   "language"};
    char *code = code_text(in->parent->source);
    const char *vals[] = {metrics, areas, arts, hist, code, lang};
    char *out = kv_prompt_render(tpl, keys, vals, 6);
    free(metrics);
    free(areas);
    free(arts);
    free(hist);
    free(code);
    return out;
}

int kv_prompt_build(const kv_prompt_templates *t, const kv_prompt_config *cfg,
                    const kv_prompt_inputs *in, kv_prompt *out, char **err)
{
    memset(out, 0, sizeof *out);
    if (!in->parent) {
        *err = kv_strdup("prompt: no parent program");
        return -1;
    }
    const char *sys =
        cfg->system_message && *cfg->system_message ? cfg->system_message : "system_message";
    const char *named = kv_prompt_template_get(t, sys);
    out->system = kv_strdup(named ? named : sys);

    size_t art_cap = cfg->max_artifact_bytes > 0 ? (size_t)cfg->max_artifact_bytes : 20480;
    keep k = {0, in->n_inspirations, in->n_top, in->n_top, art_cap};
    size_t budget = cfg->max_prompt_chars > 0 ? (size_t)cfg->max_prompt_chars : 0;
    size_t sys_len = strlen(out->system);
    /* The phrasing is drawn once per prompt, not once per fitting attempt. */
    const char *base = kv_prompt_template_get(t, in->diff_mode ? "diff_user" : "full_rewrite_user");
    char *tpl = cfg->use_template_stochasticity
                    ? kv_prompt_vary(base, cfg->template_variations, in->variation_seed)
                    : kv_strdup(base);
    for (;;) {
        int trimmed = 0;
        char *user = user_text(t, tpl, cfg, in, &k, &trimmed);
        if (budget == 0 || sys_len + strlen(user) <= budget) {
            out->user = user;
            out->artifacts_trimmed = trimmed;
            break;
        }
        /* Drop the least useful part and try again. */
        if (k.attempts_from < in->n_attempts) {
            k.attempts_from++;
        } else if (k.inspirations > 0) {
            k.inspirations--;
        } else if (k.top_sources > 0) {
            k.top_sources--;
        } else if (k.artifact_cap > 0) {
            k.artifact_cap = k.artifact_cap > 128 ? k.artifact_cap / 2 : 0;
        } else if (k.top > 0) {
            k.top--;
        } else {
            out->user = user;
            out->artifacts_trimmed = trimmed;
            out->over_budget = 1;
            break;
        }
        free(user);
    }
    free(tpl);
    out->dropped_attempts = (int)k.attempts_from;
    out->dropped_inspirations = (int)(in->n_inspirations - k.inspirations);
    out->dropped_top = (int)(in->n_top - k.top);
    out->omitted_top_sources = (int)(k.top - (k.top_sources < k.top ? k.top_sources : k.top));
    if (k.artifact_cap < art_cap && cfg->include_artifacts &&
        json_object_size(in->parent->artifacts) > 0)
        out->artifacts_trimmed = 1;
    return 0;
}

void kv_prompt_free(kv_prompt *p)
{
    if (!p) return;
    free(p->system);
    free(p->user);
    memset(p, 0, sizeof *p);
}
