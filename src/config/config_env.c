/* ${VAR} expansion of config values from the environment, shell style:
 * ${VAR}, ${VAR:-default} (the default also when VAR is empty), and "$${"
 * for a literal "${". Only scalar values are expanded, after YAML parsing,
 * so a value can never change the structure of the file. */
#include "config/config_keys.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

char *kv_config_expand_env(const char *s, char **problem)
{
    return kv_config_expand_env_ex(s, problem, NULL);
}

char *kv_config_expand_env_ex(const char *s, char **problem, char **missing)
{
    *problem = NULL;
    if (missing) *missing = NULL;
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    for (const char *p = s; *p;) {
        if (p[0] == '$' && p[1] == '$' && p[2] == '{') {
            kv_buf_puts(&b, "${");
            p += 3;
            continue;
        }
        if (!(p[0] == '$' && p[1] == '{')) {
            kv_buf_putc(&b, *p++);
            continue;
        }
        const char *name = p + 2;
        const char *end = strchr(name, '}');
        if (!end) {
            *problem = kv_asprintf("unterminated '${' (write '$${' for a literal one)");
            kv_buf_free(&b);
            return NULL;
        }
        size_t n = 0;
        while (name + n < end && (isalnum((unsigned char)name[n]) || name[n] == '_'))
            n++;
        const char *rest = name + n; /* "}" or ":-default}" */
        int has_default = rest[0] == ':' && rest[1] == '-';
        if (n == 0 || isdigit((unsigned char)name[0]) || (rest != end && !has_default)) {
            *problem = kv_asprintf("bad variable reference '%.*s'", (int)(end - p + 1), p);
            kv_buf_free(&b);
            return NULL;
        }
        char *var = kv_strndup(name, n);
        const char *val = getenv(var);
        if (has_default && (!val || !*val)) {
            kv_buf_append(&b, rest + 2, (size_t)(end - rest - 2));
        } else if (val) {
            kv_buf_puts(&b, val);
        } else if (missing) { /* left empty; the caller says so */
            if (!*missing) *missing = kv_strdup(var);
        } else {
            *problem = kv_asprintf("environment variable %s is not set (write ${%s:-default} "
                                   "for a fallback)",
                                   var, var);
            free(var);
            kv_buf_free(&b);
            return NULL;
        }
        free(var);
        p = end + 1;
    }
    return kv_buf_steal(&b);
}
