/* Reading an evaluator's stdout: {"metrics": {...}, "artifacts": {...}}, or
 * a bare object of metrics (OpenEvolve's dict style), with Python's NaN and
 * Infinity tolerated as null, and an "error" key taken as the evaluator's
 * verdict. Also the cascade score and text clean-up for artifacts. */
#include "eval/eval_output.h"
#include "eval/evaluator.h"
#include "util/buf.h"
#include "util/json.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at S (at most LEFT bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
    unsigned char c = s[0];
    size_t n;
    unsigned min;
    unsigned cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, min = 0x80, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, min = 0x800, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (left < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

char *kv_eval_clean_text(const char *s, size_t len)
{
    char *out = kv_malloc(len + 1);
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        size_t n = u[i] ? utf8_len(u + i, len - i) : 0;
        if (n == 0) {
            out[i++] = '?';
        } else {
            memcpy(out + i, s + i, n);
            i += n;
        }
    }
    out[len] = '\0';
    return out;
}

static int is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Length of the JSON number at S when its value is beyond a double's range
 * (1e999: valid JSON, which jansson refuses as an overflow), else 0. */
static size_t overflowing_number(const char *s)
{
    const char *p = s + (*s == '-');
    if (!isdigit((unsigned char)*p)) return 0;
    int exponent = 0;
    while (isdigit((unsigned char)*p) || *p == '.' || *p == 'e' || *p == 'E' ||
           ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E'))) {
        exponent |= *p == 'e' || *p == 'E';
        p++;
    }
    if (!exponent && p - s < 300) return 0; /* DBL_MAX has 309 digits */
    char *num = kv_strndup(s, (size_t)(p - s)), *end;
    double v = strtod(num, &end);
    int whole = *end == '\0';
    free(num);
    return whole && isinf(v) ? (size_t)(p - s) : 0;
}

/* A copy of TEXT with the bare tokens NaN, Infinity and -Infinity, and the
 * numbers too large for a double (outside strings), replaced by null, which
 * strict JSON parsers accept. NULL when memory runs out. */
static char *replace_nonfinite(const char *text)
{
    static const char *const tokens[] = {"-Infinity", "Infinity", "NaN"};
    kv_buf out = KV_BUF_INIT;
    int in_string = 0, escaped = 0, ok = 1;
    for (size_t i = 0; text[i];) {
        char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = 0;
            else if (c == '\\')
                escaped = 1;
            else if (c == '"')
                in_string = 0;
            ok &= kv_buf_putc(&out, c) == 0;
            i++;
            continue;
        }
        if (c == '"') in_string = 1;
        int replaced = 0;
        if (i == 0 || !is_ident_char(text[i - 1])) {
            size_t big = overflowing_number(text + i);
            if (big) {
                ok &= kv_buf_puts(&out, "null") == 0;
                i += big;
                replaced = 1;
            }
            for (size_t t = 0; t < 3 && !replaced; t++) {
                size_t n = strlen(tokens[t]);
                if (strncmp(text + i, tokens[t], n) == 0 && !is_ident_char(text[i + n])) {
                    ok &= kv_buf_puts(&out, "null") == 0;
                    i += n;
                    replaced = 1;
                }
            }
        }
        if (!replaced) {
            ok &= kv_buf_putc(&out, c) == 0;
            i++;
        }
    }
    if (!ok) {
        kv_buf_free(&out);
        return NULL;
    }
    return kv_buf_steal(&out);
}

/* Parses the evaluator's text as one JSON value: the whole of it, else from
 * the last line that starts with '{' (tried backwards, a few at most). */
static json_t *load_lenient(const char *text)
{
    json_error_t e;
    json_t *root = json_loads(text, 0, &e);
    if (root) return root;
    size_t len = strlen(text);
    int tries = 0;
    for (size_t i = len; i-- > 0 && tries < 32;) {
        if (text[i] == '{' && (i == 0 || text[i - 1] == '\n')) {
            tries++;
            root = json_loads(text + i, 0, &e);
            if (root) return root;
        }
    }
    return NULL;
}

/* "evaluator output is not JSON: <first 200 chars on one line>". */
static char *not_json_reason(const char *what, const char *text)
{
    size_t len = strlen(text);
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        len--;
    if (len == 0) return kv_asprintf("evaluator output is %s: (empty)", what);
    size_t n = len > 200 ? 200 : len;
    while (n < len && n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
        n--; /* whole chars */
    char *excerpt = kv_eval_clean_text(text, n);
    for (char *p = excerpt; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
    char *r = kv_asprintf("evaluator output is %s: %s%s", what, excerpt, n < len ? "..." : "");
    free(excerpt);
    return r;
}

/* The evaluator's error message in V, or NULL when V says no error: a
 * non-empty string, true, or an object/array (dumped). Numbers are metrics
 * (a kernel's max error is not a failure). */
static char *error_message(const json_t *v)
{
    if (json_is_string(v) && json_string_length(v) > 0) return kv_strdup(json_string_value(v));
    if (json_is_true(v)) return kv_strdup("the evaluator reported an error");
    if (json_is_object(v) || json_is_array(v)) return kv_json_dumps(v);
    return NULL;
}

int kv_eval_parse_output_ex(const char *text, json_t **metrics, json_t **artifacts, char **reason)
{
    *metrics = *artifacts = NULL;
    *reason = NULL;
    if (!text) text = "";
    char *clean = replace_nonfinite(text);
    if (!clean) {
        *reason = kv_strdup("evaluator output: out of memory while reading it");
        return KV_EVAL_OUTPUT_BAD;
    }
    json_t *root = load_lenient(clean);
    free(clean);
    if (!root) {
        *reason = not_json_reason("not JSON", text);
        return KV_EVAL_OUTPUT_BAD;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *reason = not_json_reason("not a JSON object", text);
        return KV_EVAL_OUTPUT_BAD;
    }

    json_t *m = json_object_get(root, "metrics");
    json_t *a = json_object_get(root, "artifacts");
    if (m && !json_is_object(m)) {
        json_decref(root);
        *reason = kv_strdup("evaluator output: \"metrics\" is not an object");
        return KV_EVAL_OUTPUT_BAD;
    }
    if (m) {
        *metrics = json_incref(m);
    } else {
        /* Bare object: everything but the artifacts is a metric. */
        *metrics = json_copy(root);
        if (json_is_object(a)) json_object_del(*metrics, "artifacts");
    }
    *artifacts = json_is_object(a) ? json_copy(a) : json_object();

    char *msg = error_message(json_object_get(root, "error"));
    if (!msg) msg = error_message(json_object_get(*metrics, "error"));
    json_decref(root);
    if (msg) {
        *reason = msg;
        return KV_EVAL_OUTPUT_ERROR;
    }
    return KV_EVAL_OUTPUT_OK;
}

/* "4 MiB", "512 KiB", "100 bytes". */
static char *size_text(size_t n)
{
    if (n >= ((size_t)1 << 20) && n % ((size_t)1 << 20) == 0)
        return kv_asprintf("%zu MiB", n >> 20);
    if (n >= ((size_t)1 << 20)) return kv_asprintf("%.1f MiB", (double)n / (1 << 20));
    if (n >= 1024 && n % 1024 == 0) return kv_asprintf("%zu KiB", n >> 10);
    return kv_asprintf("%zu bytes", n);
}

int kv_eval_parse_output_full(const char *text, size_t len, size_t dropped, size_t cap,
                              json_t **metrics, json_t **artifacts, char **reason)
{
    if (!text) {
        text = "";
        len = 0;
    }
    int rc = kv_eval_parse_output_ex(text, metrics, artifacts, reason);
    if (rc != KV_EVAL_OUTPUT_BAD) return rc;
    /* Say why it could not be read, when a plainer reason than "not JSON"
     * is known. */
    char *why = NULL;
    if (dropped > 0) {
        char *c = size_text(cap), *total = size_text(len + dropped);
        why = kv_asprintf("evaluator output is over the %s cap (%s printed; kevolve reads the "
                          "first %s): print only the result's JSON on stdout, and put large "
                          "outputs in files",
                          c, total, c);
        free(c);
        free(total);
    } else if (strlen(text) < len) {
        why = kv_asprintf("evaluator output holds a NUL byte at offset %zu: it must be UTF-8 "
                          "text (JSON)",
                          strlen(text));
    } else {
        const unsigned char *u = (const unsigned char *)text;
        for (size_t i = 0; i < len;) {
            size_t n = utf8_len(u + i, len - i);
            if (n == 0) {
                why = kv_asprintf("evaluator output is not valid UTF-8 (byte 0x%02x at offset "
                                  "%zu): JSON must be UTF-8 (Python: json.dumps escapes "
                                  "non-ASCII by default)",
                                  u[i], i);
                break;
            }
            i += n;
        }
    }
    if (why) {
        free(*reason);
        *reason = why;
    }
    return rc;
}

int kv_eval_parse_output(const char *text, json_t **metrics, json_t **artifacts, char **reason)
{
    int rc = kv_eval_parse_output_ex(text, metrics, artifacts, reason);
    if (rc == KV_EVAL_OUTPUT_OK) return 0;
    json_decref(*metrics);
    json_decref(*artifacts);
    *metrics = *artifacts = NULL;
    return -1;
}

double kv_eval_score(const json_t *metrics)
{
    if (!json_is_object(metrics)) return NAN;
    json_t *cs = json_object_get(metrics, "combined_score");
    if (cs) {
        double v = kv_json_number(cs);
        return isfinite(v) ? v : NAN;
    }
    double sum = 0;
    size_t n = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)metrics, key, v)
    {
        double x = kv_json_number(v);
        if (isfinite(x)) {
            sum += x;
            n++;
        }
    }
    (void)key;
    return n ? sum / (double)n : NAN;
}

/* Number KEY of O, NAN when absent or not a number. */
static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void kv_eval_scenario_rows(const json_t *artifacts, const json_t *metrics, kv_scenario_results *out)
{
    memset(out, 0, sizeof *out);
    const json_t *scen = json_object_get(artifacts, "scenarios");
    if (!json_is_array(scen) || !json_array_size(scen)) return;
    int screened = json_integer_value(json_object_get(metrics, "screened_out")) == 1;
    out->rows = kv_calloc(json_array_size(scen), sizeof *out->rows);
    size_t i;
    const json_t *s;
    json_array_foreach(scen, i, s)
    {
        const char *name = json_string_value(json_object_get(s, "name"));
        if (!name || !json_is_number(json_object_get(s, "median_us"))) continue;
        kv_scenario_result *x = &out->rows[out->n++];
        const char *tags = json_string_value(json_object_get(s, "tags"));
        x->scenario = kv_strdup(name);
        x->kind = tags ? kv_strndup(tags, strcspn(tags, ",")) : NULL;
        x->weight = num(s, "weight");
        x->median_us = num(s, "median_us");
        x->iqr_us = num(s, "iqr_us");
        x->baseline_us = num(s, "baseline_median_us");
        x->speedup = num(s, "speedup");
        x->roofline_fraction = num(s, "roofline_fraction");
        x->max_abs_err = num(s, "max_abs_err");
        x->tol_ratio = num(s, "tol_ratio");
        x->energy_j = num(s, "energy_j");
        x->screened = screened;
    }
    if (!out->n) {
        kv_scenario_results_clear(out);
        return;
    }
    const json_t *device = json_object_get(artifacts, "device");
    out->task = kv_strdup(json_string_value(json_object_get(artifacts, "task")));
    out->backend = kv_strdup(json_string_value(json_object_get(artifacts, "backend")));
    out->device = kv_strdup(json_string_value(json_object_get(device, "name")));
    out->device_index = (int)json_integer_value(json_object_get(device, "index"));
}
