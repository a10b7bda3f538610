/* The dashboard's JSON API: routing of /api/ paths, parameter checks, and
 * the answers built from the store's read queries (store_web.c). Shared by
 * the HTTP server and the static report; routes are documented in
 * docs/dashboard.md. */
#include "web/api.h"

#include "config/config.h"
#include "util/buf.h"
#include "util/log.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

json_t *kv_web_error(int status, const char *msg)
{
    return json_pack("{s:s, s:i}", "error", msg, "status", status);
}

/* Sets *BODY to an error and returns STATUS. */
static int fail(json_t **body, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(json_t **body, int status, const char *fmt, ...)
{
    kv_buf b = KV_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    *body = kv_web_error(status, b.data ? b.data : "");
    kv_buf_free(&b);
    return status;
}

/* Parses decimal TEXT strictly into *OUT within [MIN, MAX]. Returns 0, -1
 * when it is not an integer, -2 when out of range. */
static int parse_int(const char *text, long long min, long long max, long long *out)
{
    if (!text || !*text || strlen(text) > 20) return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*end != '\0' || end == text) return -1;
    if (errno == ERANGE || v < min || v > max) return -2;
    *out = v;
    return 0;
}

/* Reads integer parameter NAME into *OUT (DEF when absent). Returns 0, or an
 * HTTP status with *BODY set: 400 when not an integer or below MIN, 413
 * when above MAX (a page larger than the server hands out). */
static int int_param(kv_web_param_fn param, void *ud, const char *name, long long min,
                     long long max, long long def, long long *out, json_t **body)
{
    const char *text = param ? param(ud, name) : NULL;
    *out = def;
    if (!text) return 0;
    int rc = parse_int(text, min, INT64_MAX, out);
    if (rc == -1) return fail(body, 400, "parameter '%s': '%.40s' is not an integer", name, text);
    if (rc == -2)
        return fail(body, 400, "parameter '%s': %.40s is below the minimum %lld", name, text, min);
    if (*out > max)
        return fail(body, 413, "parameter '%s': %lld exceeds the maximum %lld", name, *out, max);
    return 0;
}

/* A store error as a 500 answer. */
static int store_fail(kv_store *s, json_t **body)
{
    const char *msg = kv_store_errmsg(s);
    return fail(body, 500, "store: %s", *msg ? msg : "unknown error");
}

/* The run's feature dimensions, their bin counts and the number of islands,
 * read from the config stored in the manifest. Leaves empty arrays and 0
 * when the config is absent or cannot be read (the grid then sizes itself
 * from the bins it sees). */
static void run_layout(kv_store *s, json_t **dims, json_t **bins, int *num_islands)
{
    *dims = json_array();
    *bins = json_array();
    *num_islands = 0;
    char *text = kv_store_get_meta(s, "config_effective");
    if (!text) text = kv_store_get_meta(s, "config_text");
    if (!text) return;
    kv_config c;
    kv_config_error err;
    kv_log_level level = kv_log_get_level();
    kv_log_set_level(KV_LOG_ERROR); /* warnings belong to the run, not the dashboard */
    int rc = kv_config_load_string(text, "stored config", NULL, &c, &err);
    kv_log_set_level(level);
    free(text);
    if (rc == 0) {
        for (size_t i = 0; i < c.database.n_feature_dimensions; i++) {
            json_array_append_new(*dims, json_string(c.database.feature_dimensions[i]));
            json_array_append_new(*bins, json_integer(c.database.feature_bins[i]));
        }
        *num_islands = c.database.num_islands;
    }
    kv_config_free(&c);
}

/* GET /api/summary */
static int route_summary(kv_store *s, json_t **body)
{
    json_t *sum = kv_store_web_summary(s);
    if (!sum) return store_fail(s, body);
    json_t *dims, *bins;
    int num_islands;
    run_layout(s, &dims, &bins, &num_islands);
    json_object_set_new(sum, "feature_dimensions", dims);
    json_object_set_new(sum, "feature_bins", bins);
    json_object_set_new(sum, "num_islands", json_integer(num_islands));
    kv_program *best = kv_store_best_program(s);
    json_object_set_new(sum, "best",
                        best ? json_pack("{s:I, s:f, s:i, s:I}", "id", (json_int_t)best->id,
                                         "fitness", best->fitness, "island", best->island,
                                         "iteration", (json_int_t)best->iteration)
                             : json_null());
    kv_program_free(best);
    *body = sum;
    return 200;
}

/* GET /api/programs?since=ID&limit=N */
static int route_programs(kv_store *s, kv_web_param_fn param, void *ud, json_t **body)
{
    long long since, limit;
    int rc = int_param(param, ud, "since", 0, INT64_MAX, 0, &since, body);
    if (!rc)
        rc = int_param(param, ud, "limit", 1, KV_WEB_PAGE_MAX, KV_WEB_PAGE_DEFAULT, &limit, body);
    if (rc) return rc;
    json_t *rows = kv_store_web_programs(s, since, (int)limit);
    if (!rows) return store_fail(s, body);
    size_t n = json_array_size(rows);
    json_t *last = json_array_get(json_array_get(rows, n ? n - 1 : 0), 0);
    *body = json_pack(
        "{s:[s,s,s,s,s,s,s,s,s,s,s], s:o, s:I, s:I, s:b}", "columns", "id", "parent_id",
        "other_parent_id", "island", "iteration", "generation", "status", "fitness", "mutator",
        "is_migrant", "migrated_from", "programs", rows, "since", (json_int_t)since, "next_since",
        (json_int_t)(last ? json_integer_value(last) : since), "more", (int)(n == (size_t)limit));
    return 200;
}

/* GET /api/programs/ID and /api/programs/ID/llm_calls */
static int route_program(kv_store *s, const char *rest, json_t **body)
{
    char idtext[32];
    size_t len = strcspn(rest, "/");
    const char *sub = rest[len] ? rest + len + 1 : NULL;
    long long id;
    if (len == 0 || len >= sizeof idtext) return fail(body, 404, "no such program");
    memcpy(idtext, rest, len);
    idtext[len] = '\0';
    if (parse_int(idtext, 1, INT64_MAX, &id) != 0)
        return fail(body, 400, "program id '%s' is not a positive integer", idtext);
    if (sub && strcmp(sub, "llm_calls") != 0)
        return fail(body, 404, "no such route: /api/programs/%lld/%.40s", id, sub);
    kv_program *p = kv_store_get_program(s, id);
    if (!p) {
        if (*kv_store_errmsg(s)) return store_fail(s, body);
        return fail(body, 404, "no program %lld in this run", id);
    }
    json_t *calls = kv_store_web_llm_calls(s, id);
    if (!calls) {
        kv_program_free(p);
        return store_fail(s, body);
    }
    if (sub) {
        kv_program_free(p);
        *body = calls;
        return 200;
    }
    json_t *out = json_object();
    json_object_set_new(out, "program", kv_web_program_json(p));
    json_object_set_new(out, "llm_calls", calls);
    kv_program *parent = p->parent_id ? kv_store_get_program(s, p->parent_id) : NULL;
    json_object_set_new(out, "parent_source",
                        parent && parent->source ? json_string(parent->source) : json_null());
    kv_program_free(parent);
    kv_program_free(p);
    *body = out;
    return 200;
}

/* GET /api/series?buckets=N */
static int route_series(kv_store *s, kv_web_param_fn param, void *ud, json_t **body)
{
    long long buckets;
    int rc = int_param(param, ud, "buckets", 1, 2000, 200, &buckets, body);
    if (rc) return rc;
    json_t *scores = kv_store_web_scores(s);
    if (!scores) return store_fail(s, body);
    *body = kv_web_series(scores, (int)buckets);
    json_decref(scores);
    return 200;
}

/* GET /api/grid?island=K */
static int route_grid(kv_store *s, kv_web_param_fn param, void *ud, json_t **body)
{
    long long island;
    const char *text = param ? param(ud, "island") : NULL;
    if (!text) return fail(body, 400, "parameter 'island' is required");
    int rc = int_param(param, ud, "island", 0, 1000000, 0, &island, body);
    if (rc) return rc;
    json_t *dims, *bins;
    int num_islands;
    run_layout(s, &dims, &bins, &num_islands);
    json_t *placed = NULL;
    if (num_islands > 0 && island >= num_islands)
        rc = fail(body, 404, "no island %lld (this run has %d)", island, num_islands);
    else if (!(placed = kv_store_web_placed(s, (int)island)))
        rc = store_fail(s, body);
    else {
        *body = kv_web_grid((int)island, placed, dims, bins);
        rc = 200;
    }
    json_decref(placed);
    json_decref(dims);
    json_decref(bins);
    return rc;
}

/* GET /api/events?since=ID&limit=N */
static int route_events(kv_store *s, kv_web_param_fn param, void *ud, json_t **body)
{
    long long since, limit;
    int rc = int_param(param, ud, "since", 0, INT64_MAX, 0, &since, body);
    if (!rc) rc = int_param(param, ud, "limit", 1, KV_WEB_PAGE_MAX, 1000, &limit, body);
    if (rc) return rc;
    json_t *events = kv_store_web_events(s, since, (int)limit);
    if (!events) return store_fail(s, body);
    *body = json_pack("{s:o}", "events", events);
    return 200;
}

int kv_web_api(kv_store *s, const char *path, kv_web_param_fn param, void *ud, json_t **body)
{
    *body = NULL;
    if (!path || !kv_starts_with(path, "/api/")) return fail(body, 404, "no such route");
    const char *route = path + 5;
    /* One snapshot per answer, so its parts agree while a run writes. */
    if (kv_store_begin(s) != 0) return store_fail(s, body);
    int status;
    if (strcmp(route, "summary") == 0)
        status = route_summary(s, body);
    else if (strcmp(route, "programs") == 0)
        status = route_programs(s, param, ud, body);
    else if (kv_starts_with(route, "programs/"))
        status = route_program(s, route + 9, body);
    else if (strcmp(route, "series") == 0)
        status = route_series(s, param, ud, body);
    else if (strcmp(route, "grid") == 0)
        status = route_grid(s, param, ud, body);
    else if (strcmp(route, "events") == 0)
        status = route_events(s, param, ud, body);
    else
        status = fail(body, 404, "no such route: %.80s", path);
    kv_store_commit(s); /* ends the read snapshot; nothing to lose */
    return status;
}
