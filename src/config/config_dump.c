/* kv_config_dump: the effective settings as YAML (what `kevolve run
 * --dry-run` prints). Every key of the table is written, unset values as
 * null, secrets as "***", then the evaluator sections. The text loads back
 * with kv_config_load_string to an equal config. Also kv_config_diff, the
 * keys whose dumped values differ between two configs. */
#include "config/config_keys.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kv_config_yaml_quote(kv_buf *b, const char *s, int escape_vars)
{
    kv_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            kv_buf_puts(b, "\\\"");
            break;
        case '\\':
            kv_buf_puts(b, "\\\\");
            break;
        case '\n':
            kv_buf_puts(b, "\\n");
            break;
        case '\t':
            kv_buf_puts(b, "\\t");
            break;
        case '\r':
            kv_buf_puts(b, "\\r");
            break;
        case '$':
            kv_buf_puts(b, escape_vars && p[1] == '{' ? "$$" : "$");
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                kv_buf_printf(b, "\\x%02x", *p);
            else
                kv_buf_putc(b, (char)*p);
        }
    }
    kv_buf_putc(b, '"');
}

void kv_config_yaml_double(kv_buf *b, double x)
{
    if (isnan(x)) {
        kv_buf_puts(b, ".nan");
        return;
    }
    if (isinf(x)) {
        kv_buf_puts(b, x > 0 ? ".inf" : "-.inf");
        return;
    }
    char s[64];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, x);
        if (strtod(s, NULL) == x) break;
    }
    kv_buf_puts(b, s);
    if (!strpbrk(s, ".eE")) kv_buf_puts(b, ".0");
}

static void indent_to(kv_buf *b, int n)
{
    for (int i = 0; i < n; i++)
        kv_buf_putc(b, ' ');
}

/* Writes the JSON value V after a "key:" (leading space or newline included),
 * block style, nested content at INDENT. */
static void dump_json(kv_buf *b, const json_t *v, int indent)
{
    if (json_is_object(v)) {
        if (json_object_size(v) == 0) {
            kv_buf_puts(b, " {}\n");
            return;
        }
        kv_buf_putc(b, '\n');
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            indent_to(b, indent);
            kv_config_yaml_quote(b, key, 0);
            kv_buf_putc(b, ':');
            dump_json(b, val, indent + 2);
        }
        return;
    }
    if (json_is_array(v)) {
        if (json_array_size(v) == 0) {
            kv_buf_puts(b, " []\n");
            return;
        }
        kv_buf_putc(b, '\n');
        size_t i;
        json_t *val;
        json_array_foreach(v, i, val)
        {
            indent_to(b, indent);
            kv_buf_putc(b, '-');
            dump_json(b, val, indent + 2);
        }
        return;
    }
    kv_buf_putc(b, ' ');
    if (json_is_string(v))
        kv_config_yaml_quote(b, json_string_value(v), 1);
    else if (json_is_integer(v))
        kv_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        kv_config_yaml_double(b, json_real_value(v));
    else if (json_is_true(v))
        kv_buf_puts(b, "true");
    else if (json_is_false(v))
        kv_buf_puts(b, "false");
    else
        kv_buf_puts(b, "null");
    kv_buf_putc(b, '\n');
}

static void dump_section(kv_buf *b, const char *section, const void *base, int indent,
                         const kv_config *c);

/* Writes " value\n" (or a nested block) of key K of BASE. */
static void dump_value(kv_buf *b, const kv_key *k, const void *base, int indent, const kv_config *c)
{
    void *p = (char *)base + k->off;
    int has = 1;
    if (k->aux && (k->type == KV_KEY_INT || k->type == KV_KEY_INT64 || k->type == KV_KEY_LONG ||
                   k->type == KV_KEY_DOUBLE))
        has = *KV_FIELD((void *)base, k->aux, int);
    if (!has) {
        kv_buf_puts(b, " null\n");
        return;
    }
    switch (k->type) {
    case KV_KEY_INT:
        kv_buf_printf(b, " %d\n", *(int *)p);
        return;
    case KV_KEY_INT64:
        kv_buf_printf(b, " %" PRId64 "\n", *(int64_t *)p);
        return;
    case KV_KEY_LONG:
        kv_buf_printf(b, " %ld\n", *(long *)p);
        return;
    case KV_KEY_DOUBLE:
        if (isnan(*(double *)p)) {
            kv_buf_puts(b, " null\n");
            return;
        }
        kv_buf_putc(b, ' ');
        kv_config_yaml_double(b, *(double *)p);
        kv_buf_putc(b, '\n');
        return;
    case KV_KEY_BOOL:
        kv_buf_puts(b, *(int *)p ? " true\n" : " false\n");
        return;
    case KV_KEY_TRIBOOL:
        kv_buf_puts(b, *(int *)p < 0 ? " null\n" : *(int *)p ? " true\n" : " false\n");
        return;
    case KV_KEY_STRING:
    case KV_KEY_PATH: {
        const char *s = *(char **)p;
        if (!s) {
            kv_buf_puts(b, " null\n");
            return;
        }
        kv_buf_putc(b, ' ');
        kv_config_yaml_quote(b, (k->flags & KV_KEY_SECRET) ? "***" : s, 1);
        kv_buf_putc(b, '\n');
        return;
    }
    case KV_KEY_STRINGS: {
        char **v = *(char ***)p;
        size_t n = *KV_FIELD((void *)base, k->aux, size_t);
        kv_buf_puts(b, " [");
        for (size_t i = 0; i < n; i++) {
            if (i) kv_buf_puts(b, ", ");
            kv_config_yaml_quote(b, v[i], 1);
        }
        kv_buf_puts(b, "]\n");
        return;
    }
    case KV_KEY_DOUBLES: {
        double *v = *(double **)p;
        size_t n = *KV_FIELD((void *)base, k->aux, size_t);
        kv_buf_puts(b, " [");
        for (size_t i = 0; i < n; i++) {
            if (i) kv_buf_puts(b, ", ");
            kv_config_yaml_double(b, v[i]);
        }
        kv_buf_puts(b, "]\n");
        return;
    }
    case KV_KEY_BINS: {
        int *v = *(int **)p;
        size_t n = c->database.n_feature_dimensions;
        kv_buf_puts(b, " {");
        for (size_t i = 0; i < n && v; i++) {
            if (i) kv_buf_puts(b, ", ");
            kv_config_yaml_quote(b, c->database.feature_dimensions[i], 0);
            kv_buf_printf(b, ": %d", v[i]);
        }
        kv_buf_puts(b, "}\n");
        return;
    }
    case KV_KEY_MODELS: {
        kv_model_config *v = *(kv_model_config **)p;
        size_t n = *KV_FIELD((void *)base, k->aux, size_t);
        if (n == 0) {
            kv_buf_puts(b, " []\n");
            return;
        }
        kv_buf_putc(b, '\n');
        for (size_t i = 0; i < n; i++) {
            indent_to(b, indent);
            kv_buf_puts(b, "-\n");
            dump_section(b, KV_SECTION_MODEL, &v[i], indent + 2, c);
        }
        return;
    }
    case KV_KEY_JSON: {
        const json_t *j = *(json_t **)p;
        if (!j)
            kv_buf_puts(b, " null\n");
        else
            dump_json(b, j, indent);
        return;
    }
    case KV_KEY_IGNORED:
        return;
    }
}

/* Writes every stored key of SECTION at INDENT. */
static void dump_section(kv_buf *b, const char *section, const void *base, int indent,
                         const kv_config *c)
{
    for (size_t i = 0; i < kv_config_key_count; i++) {
        const kv_key *k = &kv_config_key_table[i];
        if (strcmp(k->section, section) != 0 || k->alias_of || k->type == KV_KEY_IGNORED) continue;
        indent_to(b, indent);
        kv_buf_printf(b, "%s:", k->name);
        dump_value(b, k, base, indent + 2, c);
    }
}

/* The dumped value of K in C (secrets as "***"), on one line when ONE (a
 * nested block's lines joined by a space, their indentation dropped). */
static char *value_text(const kv_key *k, const kv_config *c, int one)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    dump_value(&b, k, c, 0, c);
    char *t = kv_buf_steal(&b);
    if (!one) return t;
    char *w = t;
    for (const char *r = t; *r; r++) {
        if (*r != '\n') {
            *w++ = *r;
            continue;
        }
        while (r[1] == ' ')
            r++;
        if (w > t && r[1]) *w++ = ' ';
    }
    *w = '\0';
    char *start = t;
    while (*start == ' ')
        start++;
    memmove(t, start, strlen(start) + 1);
    return t;
}

/* Appends {"key", "from", "to", "resumable"} to OUT. */
static void add_change(json_t *out, const char *key, const char *from, const char *to,
                       int resumable)
{
    json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:b}", "key", key, "from", from, "to", to,
                                         "resumable", resumable));
}

json_t *kv_config_diff(const kv_config *a, const kv_config *b)
{
    json_t *out = json_array();
    for (size_t i = 0; i < kv_config_key_count; i++) {
        const kv_key *k = &kv_config_key_table[i];
        if (!strcmp(k->section, KV_SECTION_MODEL) || k->alias_of || k->type == KV_KEY_IGNORED)
            continue;
        /* Secrets compare as shown ("***" when set): a stored config
         * keeps none to compare with. */
        char *ra = value_text(k, a, 0), *rb = value_text(k, b, 0);
        if (strcmp(ra, rb) != 0) {
            char *ta = value_text(k, a, 1), *tb = value_text(k, b, 1);
            char key[96];
            snprintf(key, sizeof key, "%s%s%s", k->section, *k->section ? "." : "", k->name);
            add_change(out, key, ta, tb, kv_config_key_resumable(k));
            free(ta);
            free(tb);
        }
        free(ra);
        free(rb);
    }
    /* The sections handed to the evaluator, each a key of its own. */
    const json_t *sections[2] = {a->evaluator_sections, b->evaluator_sections};
    for (int side = 0; side < 2; side++) {
        const char *name;
        json_t *v;
        json_object_foreach((json_t *)sections[side], name, v)
        {
            json_t *other = json_object_get(sections[1 - side], name);
            if (side == 1 && other) continue; /* compared from A's side */
            if (other && json_equal(v, other)) continue;
            char *ja = json_dumps(side ? other : v, JSON_COMPACT | JSON_SORT_KEYS);
            char *jb = json_dumps(side ? v : other, JSON_COMPACT | JSON_SORT_KEYS);
            add_change(out, name, ja ? ja : "null", jb ? jb : "null", 0);
            free(ja);
            free(jb);
        }
    }
    return out;
}

char *kv_config_dump(const kv_config *c)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "# kevolve: effective configuration (null: unset or inherited)\n");
    dump_section(&b, KV_SECTION_TOP, c, 0, c);
    for (size_t s = 0; kv_config_sections[s]; s++) {
        kv_buf_printf(&b, "%s:\n", kv_config_sections[s]);
        dump_section(&b, kv_config_sections[s], c, 2, c);
    }
    if (c->evaluator_sections && json_object_size(c->evaluator_sections) > 0) {
        kv_buf_puts(&b, "# sections passed to the evaluator\n");
        const char *key;
        json_t *val;
        json_object_foreach(c->evaluator_sections, key, val)
        {
            kv_config_yaml_quote(&b, key, 0);
            kv_buf_putc(&b, ':');
            dump_json(&b, val, 2);
        }
    }
    return kv_buf_steal(&b);
}
