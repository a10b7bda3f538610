/* Chat-completions wire format: request bodies, reply parsing, and the
 * redaction that keeps API keys out of every message built from a reply. */
#include "llm/request.h"
#include "util/buf.h"
#include "util/json.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

/* Lowercase copy of the part of NAME after its last '/'. */
static char *base_name_lower(const char *name)
{
    const char *slash = strrchr(name, '/');
    char *s = kv_strdup(slash ? slash + 1 : name);
    for (char *p = s; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return s;
}

int kv_llm_is_reasoning_name(const char *name)
{
    if (!name) return 0;
    char *b = base_name_lower(name);
    static const char *const prefixes[] = {"o1", "o3", "o4-", "gpt-5", "gpt-oss"};
    int yes = 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes && !yes; i++) {
        size_t n = strlen(prefixes[i]);
        /* "o1" and "o3" must stand alone or be followed by '-': "o1", "o3-mini". */
        if (strncmp(b, prefixes[i], n) == 0)
            yes = prefixes[i][n - 1] == '-' || kv_starts_with(prefixes[i], "gpt") || b[n] == '\0' ||
                  b[n] == '-';
    }
    free(b);
    return yes;
}

void kv_llm_model_resolve(const kv_llm_config *llm, const kv_model_config *m,
                          kv_llm_model_settings *out)
{
    memset(out, 0, sizeof *out);
    out->name = m->name;
    out->api_base = m->api_base ? m->api_base : llm->api_base;
    if (!out->api_base) out->api_base = "https://api.openai.com/v1";
    out->api_key = m->api_key ? m->api_key : llm->api_key;
    out->temperature = isnan(m->temperature) ? llm->temperature : m->temperature;
    out->top_p = isnan(m->top_p) ? llm->top_p : m->top_p;
    out->max_tokens = m->max_tokens > 0 ? m->max_tokens : llm->max_tokens;
    out->timeout = m->timeout > 0 ? m->timeout : llm->timeout;
    if (out->timeout <= 0) out->timeout = 60;
    out->retries = m->retries >= 0 ? m->retries : llm->retries;
    if (out->retries < 0) out->retries = 0;
    out->retry_delay = isnan(m->retry_delay) ? llm->retry_delay : m->retry_delay;
    if (isnan(out->retry_delay) || out->retry_delay < 0) out->retry_delay = 0;
    out->reasoning = m->is_reasoning >= 0 ? m->is_reasoning : kv_llm_is_reasoning_name(m->name);
    out->reasoning_effort = m->reasoning_effort ? m->reasoning_effort : llm->reasoning_effort;
    if (m->has_random_seed) {
        out->has_seed = 1;
        out->seed = m->random_seed;
    } else if (llm->has_random_seed) {
        out->has_seed = 1;
        out->seed = llm->random_seed;
    }
}

char *kv_llm_build_body(const kv_llm_model_settings *s, const char *system, const char *user)
{
    json_t *body = json_object();
    json_object_set_new(body, "model", json_string(s->name ? s->name : ""));
    json_t *msgs = json_array();
    if (system && *system)
        json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content", system));
    json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content", user));
    json_object_set_new(body, "messages", msgs);
    if (s->reasoning) {
        if (s->max_tokens > 0)
            json_object_set_new(body, "max_completion_tokens", json_integer(s->max_tokens));
    } else {
        if (s->max_tokens > 0) json_object_set_new(body, "max_tokens", json_integer(s->max_tokens));
        if (!isnan(s->temperature))
            json_object_set_new(body, "temperature", json_real(s->temperature));
        if (!isnan(s->top_p)) json_object_set_new(body, "top_p", json_real(s->top_p));
    }
    if (s->has_seed) json_object_set_new(body, "seed", json_integer(s->seed));
    if (s->reasoning_effort && *s->reasoning_effort)
        json_object_set_new(body, "reasoning_effort", json_string(s->reasoning_effort));
    char *text = kv_json_dumps(body);
    json_decref(body);
    return text;
}

static long usage_field(const json_t *usage, const char *key)
{
    const json_t *v = json_object_get(usage, key);
    return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

int kv_llm_parse_reply(const char *body, size_t len, kv_llm_reply *out, char **why)
{
    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = -1;
    json_error_t e;
    json_t *root = json_loadb(body ? body : "", len, 0, &e);
    if (!root) {
        *why = kv_asprintf("invalid JSON reply (%s at byte %d; truncated?)", e.text, e.position);
        return -1;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *why = kv_strdup("reply is JSON but not an object");
        return -1;
    }
    const json_t *usage = json_object_get(root, "usage");
    if (json_is_object(usage)) {
        out->prompt_tokens = usage_field(usage, "prompt_tokens");
        out->completion_tokens = usage_field(usage, "completion_tokens");
    }
    const char *model = json_string_value(json_object_get(root, "model"));
    if (model) out->response_model = kv_strdup(model);
    const json_t *choices = json_object_get(root, "choices");
    int rc = -1;
    if (!json_is_array(choices) || json_array_size(choices) == 0) {
        *why = kv_strdup("reply has no choices");
    } else {
        const json_t *c0 = json_array_get(choices, 0);
        const json_t *msg = json_object_get(c0, "message");
        const char *content = json_string_value(json_object_get(msg, "content"));
        const char *finish = json_string_value(json_object_get(c0, "finish_reason"));
        if (!content || !*content) {
            *why = kv_asprintf("reply has no message content (finish_reason: %s)",
                               finish ? finish : "none");
        } else {
            out->content = kv_strdup(content);
            rc = 0;
        }
    }
    json_decref(root);
    return rc;
}

void kv_llm_reply_clear(kv_llm_reply *r)
{
    free(r->content);
    free(r->response_model);
    memset(r, 0, sizeof *r);
}

/* 1 when C can be part of a key-like token. */
static int token_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

char *kv_llm_redact(const char *text, const char *key)
{
    if (!text) return NULL;
    size_t klen = key ? strlen(key) : 0;
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    for (const char *p = text; *p;) {
        if (klen > 0 && strncmp(p, key, klen) == 0) {
            kv_buf_puts(&b, "***");
            p += klen;
            continue;
        }
        int at_word = p == text || !token_char(p[-1]);
        if (at_word && strncmp(p, "sk-", 3) == 0 && token_char(p[3])) {
            kv_buf_puts(&b, "sk-***");
            for (p += 3; token_char(*p) || *p == '*'; p++) {
            }
            continue;
        }
        if (at_word && strncasecmp(p, "bearer ", 7) == 0 && token_char(p[7])) {
            kv_buf_append(&b, p, 7);
            kv_buf_puts(&b, "***");
            for (p += 7; token_char(*p); p++) {
            }
            continue;
        }
        kv_buf_putc(&b, *p++);
    }
    return kv_buf_steal(&b);
}

char *kv_llm_error_excerpt(const char *body, size_t len, const char *key, size_t max)
{
    char *raw = NULL;
    json_error_t e;
    json_t *root = body && len ? json_loadb(body, len, 0, &e) : NULL;
    if (root) {
        const json_t *err = json_object_get(root, "error");
        const char *msg = json_string_value(json_object_get(err, "message"));
        if (!msg) msg = json_string_value(err);
        if (!msg) msg = json_string_value(json_object_get(root, "message"));
        if (msg) raw = kv_strdup(msg);
        json_decref(root);
    }
    if (!raw) raw = kv_strndup(body ? body : "", body ? len : 0);
    /* One line: newlines and tabs become spaces. */
    for (char *p = raw; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
    char *red = kv_llm_redact(raw, key);
    free(raw);
    if (strlen(red) > max) {
        red[max] = '\0';
        char *t = kv_asprintf("%s...", red);
        free(red);
        red = t;
    }
    return red;
}
