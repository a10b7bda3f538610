/* Start-up checks (see startup.h). */
#include "engine/startup.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

int kv_startup_check(const kv_config *cfg, const char *path, const char *source, char **err)
{
    *err = NULL;
    size_t len = strlen(source);
    if (cfg->max_code_length > 0 && len > (size_t)cfg->max_code_length) {
        *err = kv_asprintf("the initial program %s is %zu characters, over max_code_length (%d): "
                           "every child would be rejected; raise max_code_length in the config",
                           path, len, cfg->max_code_length);
        return -1;
    }
    return 0;
}

/* 1 when DIM is computed by kevolve itself (search/features.c). */
static int built_in(const char *dim)
{
    return strcmp(dim, "complexity") == 0 || strcmp(dim, "diversity") == 0 ||
           strcmp(dim, "score") == 0;
}

int kv_startup_check_features(const kv_config *cfg, const json_t *metrics, char **err)
{
    *err = NULL;
    const kv_database_config *d = &cfg->database;
    for (size_t i = 0; i < d->n_feature_dimensions; i++) {
        const char *dim = d->feature_dimensions[i];
        if (built_in(dim)) continue;
        json_t *v = metrics ? json_object_get(metrics, dim) : NULL;
        if (v && json_is_number(v)) continue;
        kv_buf names = KV_BUF_INIT;
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)metrics, key, value)
        {
            if (!json_is_number(value)) continue;
            kv_buf_printf(&names, "%s%s", names.len ? ", " : "", key);
        }
        char *list = kv_buf_steal(&names);
        *err = kv_asprintf("database.feature_dimensions: '%s' is %s (its numeric metrics: %s; "
                           "built in: complexity, diversity, score)",
                           dim,
                           v ? "a metric the evaluator reports, but not a number"
                             : "not a metric the evaluator reports",
                           *list ? list : "none");
        free(list);
        return -1;
    }
    return 0;
}
