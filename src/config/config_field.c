/* Generic operations on one config field, driven by its key table entry:
 * free it, set its default. kv_config_init and kv_config_free are walks of
 * the table over these, so a new key needs no code here. */
#include "config/config_keys.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 1 when K owns storage (aliases write into another key's field; ignored keys have none). */
static int owns_field(const kv_key *k)
{
    return !k->alias_of && k->type != KV_KEY_IGNORED;
}

void kv_config_field_free(const kv_key *k, void *base)
{
    if (!owns_field(k)) return;
    switch (k->type) {
    case KV_KEY_STRING:
    case KV_KEY_PATH: {
        char **p = KV_FIELD(base, k->off, char *);
        free(*p);
        *p = NULL;
        break;
    }
    case KV_KEY_STRINGS: {
        char ***p = KV_FIELD(base, k->off, char **);
        size_t *n = KV_FIELD(base, k->aux, size_t);
        for (size_t i = 0; i < *n; i++)
            free((*p)[i]);
        free(*p);
        *p = NULL;
        *n = 0;
        break;
    }
    case KV_KEY_DOUBLES: {
        double **p = KV_FIELD(base, k->off, double *);
        free(*p);
        *p = NULL;
        *KV_FIELD(base, k->aux, size_t) = 0;
        break;
    }
    case KV_KEY_BINS: { /* the count belongs to feature_dimensions */
        int **p = KV_FIELD(base, k->off, int *);
        free(*p);
        *p = NULL;
        break;
    }
    case KV_KEY_MODELS: {
        kv_model_config **p = KV_FIELD(base, k->off, kv_model_config *);
        size_t *n = KV_FIELD(base, k->aux, size_t);
        for (size_t i = 0; i < *n; i++)
            kv_config_model_free(&(*p)[i]);
        free(*p);
        *p = NULL;
        *n = 0;
        break;
    }
    case KV_KEY_JSON: {
        json_t **p = KV_FIELD(base, k->off, json_t *);
        json_decref(*p);
        *p = NULL;
        break;
    }
    default:
        break;
    }
}

/* Splits the comma-separated DEF into a new array of strings (count in *n). */
static char **split_list(const char *def, size_t *n)
{
    *n = 0;
    if (!def || !*def) return NULL;
    size_t cap = 1;
    for (const char *p = def; *p; p++)
        cap += *p == ',';
    char **out = kv_calloc(cap, sizeof *out);
    const char *start = def;
    for (;;) {
        const char *comma = strchr(start, ',');
        size_t len = comma ? (size_t)(comma - start) : strlen(start);
        out[(*n)++] = kv_strndup(start, len);
        if (!comma) break;
        start = comma + 1;
    }
    return out;
}

void kv_config_field_default(const kv_key *k, void *base)
{
    if (!owns_field(k)) return;
    kv_config_field_free(k, base);
    const char *def = k->def;
    switch (k->type) {
    case KV_KEY_INT:
        *KV_FIELD(base, k->off, int) = def ? atoi(def) : 0;
        break;
    case KV_KEY_INT64:
        *KV_FIELD(base, k->off, int64_t) = def ? (int64_t)strtoll(def, NULL, 10) : 0;
        break;
    case KV_KEY_LONG:
        *KV_FIELD(base, k->off, long) = def ? strtol(def, NULL, 10) : 0;
        break;
    case KV_KEY_DOUBLE:
        *KV_FIELD(base, k->off, double) = def ? strtod(def, NULL) : 0.0;
        break;
    case KV_KEY_BOOL:
        *KV_FIELD(base, k->off, int) = def && strcmp(def, "true") == 0;
        break;
    case KV_KEY_TRIBOOL:
        *KV_FIELD(base, k->off, int) = !def ? -1 : strcmp(def, "true") == 0;
        break;
    case KV_KEY_STRING:
    case KV_KEY_PATH:
        *KV_FIELD(base, k->off, char *) = kv_strdup(def);
        break;
    case KV_KEY_STRINGS:
        *KV_FIELD(base, k->off, char **) = split_list(def, KV_FIELD(base, k->aux, size_t));
        break;
    case KV_KEY_DOUBLES: {
        size_t n = 0;
        char **parts = split_list(def, &n);
        double *v = n ? kv_malloc(n * sizeof *v) : NULL;
        for (size_t i = 0; i < n; i++) {
            v[i] = strtod(parts[i], NULL);
            free(parts[i]);
        }
        free(parts);
        *KV_FIELD(base, k->off, double *) = v;
        *KV_FIELD(base, k->aux, size_t) = n;
        break;
    }
    case KV_KEY_BINS: {
        size_t n = *KV_FIELD(base, k->aux, size_t);
        int *v = n ? kv_malloc(n * sizeof *v) : NULL;
        for (size_t i = 0; i < n; i++)
            v[i] = def ? atoi(def) : 1;
        *KV_FIELD(base, k->off, int *) = v;
        break;
    }
    default:
        break; /* models, JSON: empty */
    }
    if (k->aux && (k->type == KV_KEY_INT || k->type == KV_KEY_INT64 || k->type == KV_KEY_LONG ||
                   k->type == KV_KEY_DOUBLE))
        *KV_FIELD(base, k->aux, int) = def != NULL;
}

void kv_config_model_init(kv_model_config *m)
{
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < kv_config_key_count; i++)
        if (strcmp(kv_config_key_table[i].section, KV_SECTION_MODEL) == 0)
            kv_config_field_default(&kv_config_key_table[i], m);
}

void kv_config_model_free(kv_model_config *m)
{
    for (size_t i = 0; i < kv_config_key_count; i++)
        if (strcmp(kv_config_key_table[i].section, KV_SECTION_MODEL) == 0)
            kv_config_field_free(&kv_config_key_table[i], m);
}
