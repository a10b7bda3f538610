/* Secret redaction for text that goes into prompts and the store (artifacts
 * above all: a failing program's stderr may print the environment). A
 * scanner, not regular expressions: each rule says where a secret starts and
 * the secret runs over token characters from there. */
#include "mutate/prompt.h"
#include "util/buf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

/* 1 when C can be part of a key or token. */
static int tok(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.' || c == '/' || c == '+' ||
           c == '=';
}

static size_t token_len(const char *p)
{
    size_t n = 0;
    while (tok(p[n]))
        n++;
    return n;
}

int kv_prompt_env_name_is_secret(const char *name)
{
    char up[128];
    size_t n = 0;
    for (; name[n] && name[n] != '=' && n < sizeof up - 1; n++)
        up[n] = (char)toupper((unsigned char)name[n]);
    up[n] = '\0';
    static const char *const parts[] = {"KEY",    "TOKEN",      "SECRET", "PASSWORD",
                                        "PASSWD", "CREDENTIAL", "AUTH"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (strstr(up, parts[i])) return 1;
    static const char *const prefixes[] = {"OPENAI_", "ANTHROPIC_", "HF_",        "HUGGING",
                                           "AWS_",    "GEMINI_",    "GOOGLE_API", "AZURE_OPENAI"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (kv_starts_with(up, prefixes[i])) return 1;
    return 0;
}

/* Names whose value follows "NAME=" or "NAME:" (case-insensitive). */
static const char *const ASSIGNED[] = {"api_key",    "api-key",      "apikey", "access_token",
                                       "auth_token", "token",        "secret", "password",
                                       "passwd",     "client_secret"};
/* Prefixes that start a token on their own. */
static const char *const PREFIXES[] = {"sk-",   "ghp_",  "gho_",  "ghs_", "github_pat_", "hf_",
                                       "xoxb-", "xoxp-", "xoxa-", "AKIA", "glpat-"};

/* When a "NAME = value" secret starts at P (at a word start), returns the
 * offset of its value and sets *vlen; else 0. */
static size_t assigned_secret(const char *p, size_t *vlen)
{
    for (size_t i = 0; i < sizeof ASSIGNED / sizeof *ASSIGNED; i++) {
        size_t n = strlen(ASSIGNED[i]);
        if (strncasecmp(p, ASSIGNED[i], n) != 0) continue;
        size_t k = n;
        if (p[k] == '"' || p[k] == '\'') k++;
        while (p[k] == ' ')
            k++;
        if (p[k] != '=' && p[k] != ':') continue;
        k++;
        while (p[k] == ' ' || p[k] == '"' || p[k] == '\'')
            k++;
        size_t v = token_len(p + k);
        if (v == 0) continue;
        *vlen = v;
        return k;
    }
    return 0;
}

char *kv_prompt_redact(const char *text)
{
    if (!text) return NULL;
    /* Environment values first (whole strings, wherever they appear). */
    char *cur = kv_strdup(text);
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || strlen(eq + 1) < 8 || !kv_prompt_env_name_is_secret(*e)) continue;
        const char *val = eq + 1;
        if (!strstr(cur, val)) continue;
        kv_buf b = KV_BUF_INIT;
        kv_buf_puts(&b, "");
        size_t vl = strlen(val);
        for (const char *p = cur; *p;) {
            const char *hit = strstr(p, val);
            if (!hit) {
                kv_buf_puts(&b, p);
                break;
            }
            kv_buf_append(&b, p, (size_t)(hit - p));
            kv_buf_puts(&b, "***");
            p = hit + vl;
        }
        free(cur);
        cur = kv_buf_steal(&b);
    }
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    for (const char *p = cur; *p;) {
        int word_start = p == cur || !tok(p[-1]);
        if (word_start) {
            if (strncasecmp(p, "bearer ", 7) == 0 && token_len(p + 7) > 0) {
                kv_buf_append(&b, p, 7);
                kv_buf_puts(&b, "***");
                p += 7 + token_len(p + 7);
                continue;
            }
            size_t vlen = 0, voff = assigned_secret(p, &vlen);
            if (voff) {
                kv_buf_append(&b, p, voff);
                kv_buf_puts(&b, "***");
                p += voff + vlen;
                continue;
            }
            int hit = 0;
            for (size_t i = 0; i < sizeof PREFIXES / sizeof *PREFIXES && !hit; i++) {
                size_t n = strlen(PREFIXES[i]);
                if (strncmp(p, PREFIXES[i], n) == 0 && token_len(p + n) >= 8) {
                    kv_buf_append(&b, p, n);
                    kv_buf_puts(&b, "***");
                    p += n + token_len(p + n);
                    hit = 1;
                }
            }
            if (hit) continue;
        }
        kv_buf_putc(&b, *p++);
    }
    free(cur);
    return kv_buf_steal(&b);
}
