/* Config loading: libyaml's document API turns the text into a node tree,
 * which is walked against the key table (config_keys.c). Each value is
 * ${VAR}-expanded, converted to its key's type, and stored by offset. Errors
 * carry origin:line, the dotted key and, for unknown keys, the nearest known
 * one; the first error ends the load. After the walk: aliases (old places of
 * keys), feature_bins against feature_dimensions, models from
 * primary_model, language from initial_program, then validation. */
#include "config/config_keys.h"
#include "util/fs.h"
#include "util/log.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_ALIASES 32

typedef struct alias_use {
    const kv_key *key;
    yaml_node_t *node;
    char dotted[256];
} alias_use;

typedef struct load_ctx {
    yaml_document_t *doc;
    const char *origin;
    kv_config *c;
    kv_config_error *err;
    json_t *seen; /* dotted key -> line of every key given */
    alias_use aliases[MAX_ALIASES];
    size_t n_aliases;
    yaml_node_t *bins; /* database.feature_bins, resolved after the walk */
    unsigned flags;    /* KV_CONFIG_* */
} load_ctx;

static size_t line_of(const yaml_node_t *n)
{
    return n ? n->start_mark.line + 1 : 0;
}

/* Fills the error as "origin:line: key: message". Returns -1. */
static int fail(load_ctx *x, const yaml_node_t *n, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(load_ctx *x, const yaml_node_t *n, const char *key, const char *fmt, ...)
{
    char *msg = x->err->message;
    size_t cap = sizeof x->err->message;
    int len = snprintf(msg, cap, "%s:%zu: %s: ", x->origin, line_of(n), key);
    if (len < 0 || (size_t)len >= cap) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + len, cap - (size_t)len, fmt, ap);
    va_end(ap);
    return -1;
}

/* What a node is, for "got ..." in messages (static buffer of the ctx-free kind). */
static const char *describe(const yaml_node_t *n, char *buf, size_t cap)
{
    if (n->type == YAML_SEQUENCE_NODE) return "a list";
    if (n->type == YAML_MAPPING_NODE) return "a mapping";
    snprintf(buf, cap, "'%.60s%s'", (const char *)n->data.scalar.value,
             n->data.scalar.length > 60 ? "..." : "");
    return buf;
}

static int fail_type(load_ctx *x, const yaml_node_t *n, const char *key, const char *expect)
{
    char buf[80];
    return fail(x, n, key, "expected %s, got %s", expect, describe(n, buf, sizeof buf));
}

/* 1 when N is a plain scalar spelling null ("", "~", "null"). */
static int is_null_text(const yaml_node_t *n, const char *s)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

/* The ${VAR}-expanded text of scalar N in *OUT (caller frees) and whether it
 * is null. Returns 0 or -1 with the error filled. */
static int scalar_text(load_ctx *x, const yaml_node_t *n, const char *key, char **out, int *null)
{
    char *problem = NULL;
    *out = kv_config_expand_env((const char *)n->data.scalar.value, &problem);
    if (!*out) {
        fail(x, n, key, "%s", problem);
        free(problem);
        return -1;
    }
    *null = is_null_text(n, *out);
    return 0;
}

/* scalar_text for the value of key K: with KV_CONFIG_SECRETS_OPTIONAL, a
 * secret whose ${VAR} is not set is null, with a warning. */
static int value_text(load_ctx *x, const kv_key *k, const yaml_node_t *n, const char *key,
                      char **out, int *null)
{
    if (!((x->flags & KV_CONFIG_SECRETS_OPTIONAL) && (k->flags & KV_KEY_SECRET)))
        return scalar_text(x, n, key, out, null);
    char *problem = NULL, *missing = NULL;
    *out = kv_config_expand_env_ex((const char *)n->data.scalar.value, &problem, &missing);
    if (!*out) {
        fail(x, n, key, "%s", problem);
        free(problem);
        return -1;
    }
    *null = is_null_text(n, *out);
    if (missing) {
        kv_config_warn(x->c,
                       "%s:%zu: %s: environment variable %s is not set; checked without "
                       "it (a run needs it)",
                       x->origin, line_of(n), key, missing);
        free(missing);
        *null = 1;
    }
    return 0;
}

/* Integer in decimal, 0x hex or 0o octal. Returns 0 or -1. */
static int parse_int(const char *s, long long *v)
{
    const char *p = s;
    int neg = 0, base = 10;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        base = 16, p += 2;
    else if (p[0] == '0' && p[1] == 'o')
        base = 8, p += 2;
    if (!*p || *p == '+' || *p == '-' || *p == ' ') return -1;
    char *end;
    errno = 0;
    unsigned long long u = strtoull(p, &end, base);
    if (*end || errno == ERANGE || u > (unsigned long long)LLONG_MAX + (unsigned long long)neg)
        return -1;
    *v = neg ? (long long)(0 - u) : (long long)u;
    return 0;
}

/* Number, YAML's .inf/.nan spellings included. Returns 0 or -1. */
static int parse_double(const char *s, double *v)
{
    const char *p = s;
    int neg = *p == '-';
    if (*p == '+' || *p == '-') p++;
    if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF")) {
        *v = neg ? -INFINITY : INFINITY;
        return 0;
    }
    if (!strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN")) {
        *v = NAN;
        return 0;
    }
    if (!*s || strpbrk(s, " \t\n")) return -1;
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (*end || errno == ERANGE) return -1;
    *v = d;
    return 0;
}

/* YAML 1.1 booleans as PyYAML reads them, plus 0 and 1. Returns 1, 0 or -1. */
static int parse_bool(const char *s)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                      "on",   "On",   "ON",   "1",   NULL};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO",
                                     "off",   "Off",   "OFF",   "0",  NULL};
    for (size_t i = 0; yes[i]; i++)
        if (!strcmp(s, yes[i])) return 1;
    for (size_t i = 0; no[i]; i++)
        if (!strcmp(s, no[i])) return 0;
    return -1;
}

/* Absolute form of path S: relative paths are taken from the config's folder. */
static char *resolve_path(load_ctx *x, const char *s)
{
    if (s[0] == '/') return kv_strdup(s);
    char *joined = kv_path_join(x->c->dir, s);
    char *abs = kv_path_absolute(joined);
    free(joined);
    return abs;
}

static json_t *yaml_to_json(load_ctx *x, yaml_node_t *n, const char *key);
static int walk_mapping(load_ctx *x, yaml_node_t *n, const char *section, const char *prefix,
                        void *base);

/* A plain scalar typed as YAML would (null, bool, int, float), else a string. */
static json_t *typed_scalar(const yaml_node_t *n, const char *s)
{
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return json_string(s);
    if (is_null_text(n, s)) return json_null();
    int b = strcmp(s, "0") && strcmp(s, "1") ? parse_bool(s) : -1;
    if (b >= 0) return json_boolean(b);
    long long i;
    if (parse_int(s, &i) == 0) return json_integer((json_int_t)i);
    double d;
    if (strpbrk(s, "0123456789") && parse_double(s, &d) == 0 && isfinite(d)) return json_real(d);
    return json_string(s);
}

/* Converts node N (and below) to JSON, expanding ${VAR}s. NULL on error. */
static json_t *yaml_to_json(load_ctx *x, yaml_node_t *n, const char *key)
{
    if (n->type == YAML_SCALAR_NODE) {
        char *s;
        int null;
        if (scalar_text(x, n, key, &s, &null) != 0) return NULL;
        json_t *j = typed_scalar(n, s);
        free(s);
        if (!j) fail(x, n, key, "not valid UTF-8 text");
        return j;
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        json_t *arr = json_array();
        size_t i = 0;
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
             it++, i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s[%zu]", key, i);
            json_t *v = yaml_to_json(x, yaml_document_get_node(x->doc, *it), sub);
            if (!v) {
                json_decref(arr);
                return NULL;
            }
            json_array_append_new(arr, v);
        }
        return arr;
    }
    json_t *obj = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(x->doc, p->key);
        if (kn->type != YAML_SCALAR_NODE) {
            json_decref(obj);
            fail_type(x, kn, key, "plain keys");
            return NULL;
        }
        const char *name = (const char *)kn->data.scalar.value;
        char sub[256];
        snprintf(sub, sizeof sub, "%s.%s", key, name);
        json_t *v = yaml_to_json(x, yaml_document_get_node(x->doc, p->value), sub);
        if (!v) {
            json_decref(obj);
            return NULL;
        }
        json_object_set_new(obj, name, v);
    }
    return obj;
}

/* Sets a list of strings or numbers from sequence N. */
static int set_list(load_ctx *x, const kv_key *k, void *base, yaml_node_t *n, const char *key)
{
    if (n->type == YAML_SCALAR_NODE && (k->flags & KV_KEY_SCALAR_LIST)) {
        char *s;
        int null;
        if (scalar_text(x, n, key, &s, &null) != 0) return -1;
        if (null) {
            free(s);
            return fail_type(x, n, key, kv_config_type_expect(k->type));
        }
        kv_config_field_free(k, base);
        char **one = kv_calloc(1, sizeof *one);
        one[0] = s;
        *KV_FIELD(base, k->off, char **) = one;
        *KV_FIELD(base, k->aux, size_t) = 1;
        return 0;
    }
    if (n->type != YAML_SEQUENCE_NODE) return fail_type(x, n, key, kv_config_type_expect(k->type));
    kv_config_field_free(k, base);
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    size_t *np = KV_FIELD(base, k->aux, size_t);
    void *arr = count
                    ? kv_calloc(count, k->type == KV_KEY_STRINGS ? sizeof(char *) : sizeof(double))
                    : NULL;
    *KV_FIELD(base, k->off, void *) = arr;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = yaml_document_get_node(x->doc, n->data.sequence.items.start[i]);
        char sub[160];
        snprintf(sub, sizeof sub, "%s[%zu]", key, i);
        const char *expect = k->type == KV_KEY_STRINGS ? "a string" : "a number";
        if (item->type != YAML_SCALAR_NODE) return fail_type(x, item, sub, expect);
        char *s;
        int null;
        if (scalar_text(x, item, sub, &s, &null) != 0) return -1;
        double d;
        if (null || (k->type == KV_KEY_DOUBLES && parse_double(s, &d) != 0)) {
            free(s);
            return fail_type(x, item, sub, expect);
        }
        if (k->type == KV_KEY_STRINGS && (k->flags & KV_KEY_PATHS)) {
            ((char **)arr)[i] = resolve_path(x, s);
            free(s);
        } else if (k->type == KV_KEY_STRINGS) {
            ((char **)arr)[i] = s;
        } else {
            ((double *)arr)[i] = d;
            free(s);
        }
        *np = i + 1;
    }
    return 0;
}

/* Sets a models list from sequence N: each entry a mapping of model keys, or
 * a bare model name. */
static int set_models(load_ctx *x, const kv_key *k, void *base, yaml_node_t *n, const char *key)
{
    if (n->type != YAML_SEQUENCE_NODE) return fail_type(x, n, key, "a list of models");
    kv_config_field_free(k, base);
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    kv_model_config *arr = count ? kv_calloc(count, sizeof *arr) : NULL;
    size_t *np = KV_FIELD(base, k->aux, size_t);
    *KV_FIELD(base, k->off, kv_model_config *) = arr;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = yaml_document_get_node(x->doc, n->data.sequence.items.start[i]);
        char sub[160];
        snprintf(sub, sizeof sub, "%s[%zu]", key, i);
        kv_config_model_init(&arr[i]);
        *np = i + 1;
        if (item->type == YAML_MAPPING_NODE) {
            if (walk_mapping(x, item, KV_SECTION_MODEL, sub, &arr[i]) != 0) return -1;
        } else if (item->type == YAML_SCALAR_NODE) {
            int null;
            if (scalar_text(x, item, sub, &arr[i].name, &null) != 0) return -1;
            if (null) return fail_type(x, item, sub, "a model (a mapping with a name)");
        } else {
            return fail_type(x, item, sub, "a model (a mapping with a name)");
        }
    }
    return 0;
}

/* Stores node N as the value of key K in BASE. *PRESENT tells whether the
 * value counts as given for K's note: not null, not false. */
static int set_value(load_ctx *x, const kv_key *k, void *base, yaml_node_t *n, const char *key,
                     int *present)
{
    *present = 1;
    if (n->type == YAML_SCALAR_NODE && is_null_text(n, (const char *)n->data.scalar.value)) {
        *present = 0;
        kv_config_field_default(k, base);
        if (k->aux && k->type != KV_KEY_STRINGS && k->type != KV_KEY_DOUBLES &&
            k->type != KV_KEY_MODELS && k->type != KV_KEY_BINS)
            *KV_FIELD(base, k->aux, int) = 0;
        if (k->type == KV_KEY_BINS) x->bins = NULL;
        return 0;
    }
    switch (k->type) {
    case KV_KEY_IGNORED:
        if (n->type == YAML_SCALAR_NODE && parse_bool((const char *)n->data.scalar.value) == 0)
            *present = 0;
        return 0;
    case KV_KEY_STRINGS:
    case KV_KEY_DOUBLES:
        return set_list(x, k, base, n, key);
    case KV_KEY_MODELS:
        return set_models(x, k, base, n, key);
    case KV_KEY_BINS:
        if (n->type == YAML_SEQUENCE_NODE)
            return fail_type(x, n, key, kv_config_type_expect(k->type));
        x->bins = n;
        return 0;
    case KV_KEY_JSON: {
        if (n->type != YAML_MAPPING_NODE) return fail_type(x, n, key, "a mapping");
        json_t *j = yaml_to_json(x, n, key);
        if (!j) return -1;
        kv_config_field_free(k, base);
        *KV_FIELD(base, k->off, json_t *) = j;
        return 0;
    }
    default:
        break;
    }
    const char *expect = kv_config_type_expect(k->type);
    if (n->type != YAML_SCALAR_NODE) return fail_type(x, n, key, expect);
    char *s;
    int null;
    if (value_text(x, k, n, key, &s, &null) != 0) return -1;
    if (null) { /* a ${VAR} that expanded to nothing */
        free(s);
        *present = 0;
        kv_config_field_default(k, base);
        if (k->aux) *KV_FIELD(base, k->aux, int) = 0;
        return 0;
    }
    int rc = 0;
    long long i;
    double d;
    switch (k->type) {
    case KV_KEY_INT:
        if (parse_int(s, &i) != 0 || i < INT_MIN || i > INT_MAX)
            rc = fail(x, n, key, "expected %s, got '%.60s'", expect, s);
        else
            *KV_FIELD(base, k->off, int) = (int)i;
        break;
    case KV_KEY_INT64:
        if (parse_int(s, &i) != 0)
            rc = fail(x, n, key, "expected %s, got '%.60s'", expect, s);
        else
            *KV_FIELD(base, k->off, int64_t) = (int64_t)i;
        break;
    case KV_KEY_LONG:
        if (parse_int(s, &i) != 0 || i < LONG_MIN || i > LONG_MAX)
            rc = fail(x, n, key, "expected %s, got '%.60s'", expect, s);
        else
            *KV_FIELD(base, k->off, long) = (long)i;
        break;
    case KV_KEY_DOUBLE:
        if (parse_double(s, &d) != 0)
            rc = fail(x, n, key, "expected %s, got '%.60s'", expect, s);
        else
            *KV_FIELD(base, k->off, double) = d;
        break;
    case KV_KEY_BOOL:
    case KV_KEY_TRIBOOL: {
        int b = parse_bool(s);
        if (b < 0)
            rc = fail(x, n, key, "expected %s, got '%.60s'", expect, s);
        else
            *KV_FIELD(base, k->off, int) = b;
        if (b == 0) *present = 0;
        break;
    }
    case KV_KEY_STRING:
        kv_config_field_free(k, base);
        *KV_FIELD(base, k->off, char *) = s;
        s = NULL;
        break;
    case KV_KEY_PATH:
        kv_config_field_free(k, base);
        *KV_FIELD(base, k->off, char *) = resolve_path(x, s);
        break;
    default:
        break;
    }
    if (rc == 0 && k->aux) *KV_FIELD(base, k->aux, int) = 1;
    free(s);
    return rc;
}

/* A top-level key that is not in the table: a mapping is an evaluator
 * section (unless its name looks like a misspelt kevolve section); anything
 * else is a misspelt key. */
static int unknown_top(load_ctx *x, yaml_node_t *kn, yaml_node_t *vn, const char *name)
{
    if (kv_config_is_section(name)) {
        char what[64];
        snprintf(what, sizeof what, "a mapping (the %s section)", name);
        return fail_type(x, vn, name, what);
    }
    size_t dist;
    const char *near = kv_config_key_nearest("", name, &dist);
    if (vn->type != YAML_MAPPING_NODE)
        return fail(x, kn, name, "unknown key; did you mean '%s'?", near);
    for (size_t i = 0; kv_config_sections[i]; i++) {
        const char *sec = kv_config_sections[i];
        size_t d = kv_edit_distance(name, sec, 8);
        if (d <= (strlen(sec) <= 4 ? 1u : 2u))
            return fail(x, kn, name,
                        "unknown section; did you mean '%s'? (a section for the evaluator must "
                        "not look like one of kevolve's)",
                        sec);
    }
    json_t *j = yaml_to_json(x, vn, name);
    if (!j) return -1;
    json_object_set_new(x->c->evaluator_sections, name, j);
    kv_info("%s:%zu: section '%s' is not kevolve's; it is passed to the evaluator", x->origin,
            line_of(kn), name);
    return 0;
}

/* Walks mapping N of SECTION, storing into BASE; PREFIX is the dotted name
 * of the mapping ("" for the top level). Returns 0 or -1. */
static int walk_mapping(load_ctx *x, yaml_node_t *n, const char *section, const char *prefix,
                        void *base)
{
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(x->doc, p->value);
        if (kn->type != YAML_SCALAR_NODE)
            return fail_type(x, kn, *prefix ? prefix : "(top level)", "plain keys");
        const char *name = (const char *)kn->data.scalar.value;
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", name);
        if (!*section && kv_config_is_section(name) &&
            (vn->type == YAML_MAPPING_NODE ||
             is_null_text(vn, (const char *)vn->data.scalar.value))) {
            if (vn->type == YAML_MAPPING_NODE && walk_mapping(x, vn, name, name, x->c) != 0)
                return -1;
            continue;
        }
        const kv_key *k = kv_config_key_find(section, name);
        if (!k) {
            if (!*section) {
                if (unknown_top(x, kn, vn, name) != 0) return -1;
                continue;
            }
            return fail(x, kn, key, "unknown key; did you mean '%s'?",
                        kv_config_key_nearest(section, name, NULL));
        }
        if (json_object_get(x->seen, key))
            kv_config_warn(x->c, "%s:%zu: %s: given twice; the last value wins", x->origin,
                           line_of(kn), key);
        json_object_set_new(x->seen, key, json_integer((json_int_t)line_of(kn)));
        int present = 1;
        if (k->alias_of) {
            if (x->n_aliases == MAX_ALIASES) return fail(x, kn, key, "given too often");
            /* Its type is checked now, at its own line, whether or not it is
             * used in the end: a wrong value is an error wherever it is. */
            const kv_key *target = kv_config_key_find_dotted(k->alias_of);
            if (target) {
                kv_config *scratch = kv_calloc(1, sizeof *scratch);
                int given;
                int rc = set_value(x, target, scratch, vn, key, &given);
                kv_config_field_free(target, scratch);
                free(scratch);
                if (rc != 0) return -1;
            }
            alias_use *a = &x->aliases[x->n_aliases++];
            a->key = k;
            a->node = vn;
            snprintf(a->dotted, sizeof a->dotted, "%s", key);
        } else if (set_value(x, k, base, vn, key, &present) != 0) {
            return -1;
        }
        if (k->note && (present || (k->flags & KV_KEY_WARN_ALWAYS)))
            kv_config_warn(x->c, "%s:%zu: %s: %s", x->origin, line_of(kn), key, k->note);
    }
    return 0;
}

/* Old places of keys: their value goes to the new place unless that was
 * given itself; of several uses of an old place, the last wins (as the
 * "given twice" warning says). */
static int apply_aliases(load_ctx *x)
{
    json_t *given = json_copy(x->seen); /* keys given in their own place */
    int rc = 0;
    for (size_t i = 0; i < x->n_aliases && rc == 0; i++) {
        alias_use *a = &x->aliases[i];
        if (json_object_get(given, a->key->alias_of)) continue;
        const kv_key *target = kv_config_key_find_dotted(a->key->alias_of);
        if (!target) continue;
        int present;
        rc = set_value(x, target, x->c, a->node, a->dotted, &present);
        if (rc == 0)
            json_object_set_new(x->seen, a->key->alias_of,
                                json_integer((json_int_t)line_of(a->node)));
    }
    json_decref(given);
    return rc;
}

/* feature_bins: one integer for every dimension, or {dimension: bins}. */
static int resolve_bins(load_ctx *x)
{
    kv_database_config *d = &x->c->database;
    kv_config_field_default(kv_config_key_find("database", "feature_bins"), x->c);
    yaml_node_t *n = x->bins;
    const char *key = "database.feature_bins";
    if (!n) return 0;
    long long v;
    if (n->type == YAML_SCALAR_NODE) {
        char *s;
        int null;
        if (scalar_text(x, n, key, &s, &null) != 0) return -1;
        int ok = parse_int(s, &v) == 0 && v >= INT_MIN && v <= INT_MAX;
        free(s);
        if (!ok) return fail_type(x, n, key, kv_config_type_expect(KV_KEY_BINS));
        for (size_t i = 0; i < d->n_feature_dimensions; i++)
            d->feature_bins[i] = (int)v;
        return 0;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(x->doc, p->value);
        if (kn->type != YAML_SCALAR_NODE) return fail_type(x, kn, key, "dimension names");
        const char *dim = (const char *)kn->data.scalar.value;
        char sub[256];
        snprintf(sub, sizeof sub, "%s.%s", key, dim);
        size_t i = 0;
        while (i < d->n_feature_dimensions && strcmp(d->feature_dimensions[i], dim) != 0)
            i++;
        if (i == d->n_feature_dimensions) {
            kv_buf dims = KV_BUF_INIT;
            kv_buf_puts(&dims, "");
            for (size_t j = 0; j < d->n_feature_dimensions; j++)
                kv_buf_printf(&dims, "%s%s", j ? ", " : "", d->feature_dimensions[j]);
            fail(x, kn, sub, "'%s' is not one of database.feature_dimensions (%s)", dim, dims.data);
            kv_buf_free(&dims);
            return -1;
        }
        if (vn->type != YAML_SCALAR_NODE) return fail_type(x, vn, sub, "an integer");
        char *s;
        int null;
        if (scalar_text(x, vn, sub, &s, &null) != 0) return -1;
        int ok = parse_int(s, &v) == 0 && v >= INT_MIN && v <= INT_MAX;
        free(s);
        if (!ok) return fail_type(x, vn, sub, "an integer");
        d->feature_bins[i] = (int)v;
    }
    return 0;
}

/* OpenEvolve's primary_model/secondary_model shorthand, when models is empty. */
void kv_config_models_from_shorthand(kv_llm_config *l)
{
    if (l->n_models || !l->primary_model) return;
    size_t n = l->secondary_model ? 2 : 1;
    l->models = kv_calloc(n, sizeof *l->models);
    for (size_t i = 0; i < n; i++)
        kv_config_model_init(&l->models[i]);
    l->models[0].name = kv_strdup(l->primary_model);
    l->models[0].weight = l->primary_model_weight;
    if (n == 2) {
        l->models[1].name = kv_strdup(l->secondary_model);
        l->models[1].weight = l->secondary_model_weight;
    }
    l->n_models = n;
}

static const struct {
    const char *suffix, *language;
} languages[] = {
    {".py", "python"},      {".c", "c"},           {".h", "c"},
    {".cu", "cuda"},        {".cuh", "cuda"},      {".cl", "opencl"},
    {".cpp", "cpp"},        {".cc", "cpp"},        {".cxx", "cpp"},
    {".hpp", "cpp"},        {".rs", "rust"},       {".js", "javascript"},
    {".mjs", "javascript"}, {".ts", "typescript"}, {".go", "go"},
    {".java", "java"},      {".jl", "julia"},      {".rb", "ruby"},
    {".sh", "bash"},        {".lua", "lua"},       {".f90", "fortran"},
    {".zig", "zig"},        {".metal", "metal"},   {".swift", "swift"},
    {".kt", "kotlin"},      {".scala", "scala"},   {".hs", "haskell"},
    {".ml", "ocaml"},       {".r", "r"},           {".R", "r"},
    {".sql", "sql"},
};

static const char *language_of_suffix(const char *suffix)
{
    for (size_t i = 0; suffix && i < sizeof languages / sizeof languages[0]; i++)
        if (!strcmp(languages[i].suffix, suffix)) return languages[i].language;
    return NULL;
}

static const char *suffix_of_language(const char *language)
{
    for (size_t i = 0; language && i < sizeof languages / sizeof languages[0]; i++)
        if (!strcmp(languages[i].language, language)) return languages[i].suffix;
    return NULL;
}

/* language and file_suffix, when not given, from initial_program (or the
 * first of initial_programs, or each other). */
static void guess_language(load_ctx *x)
{
    kv_config *c = x->c;
    int lang_given = json_object_get(x->seen, "language") != NULL;
    int suffix_given = json_object_get(x->seen, "file_suffix") != NULL;
    const char *prog_suffix = NULL;
    const char *prog = c->initial_program      ? c->initial_program
                       : c->n_initial_programs ? c->initial_programs[0]
                                               : NULL;
    if (prog) {
        const char *base = strrchr(prog, '/');
        base = base ? base + 1 : prog;
        const char *dot = strrchr(base, '.');
        if (dot && dot != base) prog_suffix = dot;
    }
    const char *guess = NULL;
    if (!lang_given) {
        guess = language_of_suffix(prog_suffix    ? prog_suffix
                                   : suffix_given ? c->file_suffix
                                                  : NULL);
        if (guess) {
            free(c->language);
            c->language = kv_strdup(guess);
        }
    }
    if (!suffix_given) {
        const char *s = prog_suffix;
        if (!s && (lang_given || guess)) s = suffix_of_language(c->language);
        if (s) {
            free(c->file_suffix);
            c->file_suffix = kv_strdup(s);
        }
    }
}

/* Warns about one OpenEvolve provider value other than openai, at KEY. */
static void warn_provider(load_ctx *x, const char *key, const char *provider, const char *who,
                          const char *api_base)
{
    if (!provider || !*provider || strcmp(provider, "openai") == 0) return;
    json_t *line = json_object_get(x->seen, key);
    kv_config_warn(x->c,
                   "%s:%" JSON_INTEGER_FORMAT ": %s: provider '%s' is not built in kevolve: %s "
                   "through the OpenAI-compatible API at %s",
                   x->origin, line ? json_integer_value(line) : (json_int_t)0, key, provider, who,
                   api_base ? api_base : "llm.api_base");
}

/* OpenEvolve's llm.provider and models' provider name backends (its Claude
 * Code CLI); kevolve has one, the OpenAI-compatible API: say so. */
static void warn_providers(load_ctx *x)
{
    kv_llm_config *l = &x->c->llm;
    struct {
        kv_model_config *m;
        size_t n;
        const char *list;
    } lists[] = {{l->models, l->n_models, "models"},
                 {l->evaluator_models, l->n_evaluator_models, "evaluator_models"}};
    int any_own = 0;
    for (size_t s = 0; s < 2; s++)
        for (size_t i = 0; i < lists[s].n; i++) {
            kv_model_config *m = &lists[s].m[i];
            char key[96], who[200];
            snprintf(key, sizeof key, "llm.%s[%zu].provider", lists[s].list, i);
            snprintf(who, sizeof who, "model '%s' is called", m->name ? m->name : "?");
            if (m->provider) any_own = 1;
            warn_provider(x, key, m->provider, who, m->api_base ? m->api_base : l->api_base);
        }
    if (l->provider && !any_own)
        warn_provider(x, "llm.provider", l->provider, "every model is called", l->api_base);
    else if (l->provider)
        warn_provider(x, "llm.provider", l->provider,
                      "models without their own provider are called", l->api_base);
}

/* Validation with the line of the key at fault, when the file gave it. */
static int validate_with_lines(load_ctx *x)
{
    kv_config_error verr;
    char key[256];
    if (kv_config_validate_key(x->c, &verr, key, sizeof key) == 0) return 0;
    json_t *line = NULL;
    char probe[256];
    snprintf(probe, sizeof probe, "%s", key);
    while (!(line = json_object_get(x->seen, probe))) {
        char *cut = strrchr(probe, '.');
        char *br = strrchr(probe, '[');
        if (br > cut) cut = br;
        if (!cut) break;
        *cut = '\0';
    }
    char *msg = line ? kv_asprintf("%s:%" JSON_INTEGER_FORMAT ": %s", x->origin,
                                   json_integer_value(line), verr.message)
                     : kv_asprintf("%s: %s", x->origin, verr.message);
    size_t n = strlen(msg);
    if (n >= sizeof x->err->message) n = sizeof x->err->message - 1;
    memcpy(x->err->message, msg, n);
    x->err->message[n] = '\0';
    free(msg);
    return -1;
}

/* Parses TEXT into C (already initialised, c->dir set) under FLAGS. Returns 0 or -1. */
static int load_text(kv_config *c, const char *text, const char *origin, kv_config_error *err,
                     unsigned flags)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err->message, sizeof err->message, "%s: out of memory", origin);
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err->message, sizeof err->message, "%s:%zu:%zu: YAML syntax error: %s%s%s", origin,
                 parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                 parser.problem ? parser.problem : "unknown", parser.context ? " " : "",
                 parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return -1;
    }
    load_ctx x = {
        .doc = &doc, .origin = origin, .c = c, .err = err, .seen = json_object(), .flags = flags};
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root) {
        yaml_document_t next;
        if (yaml_parser_load(&parser, &next)) {
            yaml_node_t *second = yaml_document_get_root_node(&next);
            if (second)
                rc = fail(&x, second, "(document)",
                          "a config is one YAML document; a second one starts here");
            yaml_document_delete(&next);
        }
    }
    if (rc == 0 && root && root->type != YAML_MAPPING_NODE &&
        !is_null_text(root,
                      root->type == YAML_SCALAR_NODE ? (const char *)root->data.scalar.value : "x"))
        rc = fail_type(&x, root, "(top level)", "a mapping of keys");
    if (rc == 0 && root && root->type == YAML_MAPPING_NODE) rc = walk_mapping(&x, root, "", "", c);
    if (rc == 0) rc = apply_aliases(&x);
    if (rc == 0) rc = resolve_bins(&x);
    if (rc == 0 && !json_object_get(x.seen, "llm.api_base")) {
        /* Unset in the file: the environment's endpoint, as OpenAI's tools
         * read it (and OpenEvolve without a config). */
        const char *env = getenv("OPENAI_API_BASE");
        if (env && *env) {
            free(c->llm.api_base);
            c->llm.api_base = kv_strdup(env);
        }
    }
    if (rc == 0) {
        kv_config_models_from_shorthand(&c->llm);
        warn_providers(&x);
        guess_language(&x);
        rc = validate_with_lines(&x);
    }
    json_decref(x.seen);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

int kv_config_load_string(const char *text, const char *origin, const char *dir, kv_config *c,
                          kv_config_error *err)
{
    kv_config_error local;
    if (!err) err = &local;
    err->message[0] = '\0';
    kv_config_init(c);
    if (!origin) origin = "<config>";
    c->text = kv_strdup(text ? text : "");
    if (dir) c->dir = kv_path_absolute(dir);
    return load_text(c, c->text, origin, err, 0);
}

int kv_config_load(const char *path, kv_config *c, kv_config_error *err)
{
    return kv_config_load_ex(path, c, err, 0);
}

int kv_config_load_ex(const char *path, kv_config *c, kv_config_error *err, unsigned flags)
{
    kv_config_error local;
    if (!err) err = &local;
    err->message[0] = '\0';
    kv_config_init(c);
    char *text = kv_read_file(path, NULL);
    if (!text) {
        snprintf(err->message, sizeof err->message, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    c->text = text;
    c->path = kv_path_absolute(path);
    c->dir = kv_path_dirname(c->path);
    return load_text(c, text, path, err, flags);
}
