/* The dashboard's JSON API: routing of /api/ paths, parameter checks, and
 * the answers built from the store's read queries (store_web.c). Shared by
 * the HTTP server and the static report; routes are documented in
 * docs/dashboard.md. */
#include "web/api.h"
#include "config/objectives.h"

#include "config/config.h"
#include "util/buf.h"
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
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

/* What the dashboard needs from the run's config: read from the effective
 * config the manifest holds (config_effective: ${VAR} expanded, command
 * line applied), else from the config text. */
typedef struct run_layout {
    json_t *dims;     /* feature dimension names (array, maybe empty) */
    json_t *bins;     /* their bin counts */
    int num_islands;  /* 0 when unknown */
    json_t *settings; /* {task, backend, quick, language, num_islands, ...} (object) */
} run_layout;

/* Serializes config parsing: it may log warnings, which belong to the run
 * and not the dashboard, so the log level is lowered around it; the level
 * is process-wide and the server's threads must not interleave. */
static pthread_mutex_t g_config_lock = PTHREAD_MUTEX_INITIALIZER;

/* Fills *L from the store's config; empty arrays, 0 and an empty object
 * when the config is absent or cannot be read (the grid then sizes itself
 * from the bins it sees). Free with layout_free. */
static void layout_read(kv_store *s, run_layout *l)
{
    l->dims = json_array();
    l->bins = json_array();
    l->num_islands = 0;
    l->settings = json_object();
    char *text = kv_store_get_meta(s, "config_effective");
    if (!text) text = kv_store_get_meta(s, "config_text");
    if (!text) return;
    kv_config c;
    kv_config_error err;
    pthread_mutex_lock(&g_config_lock);
    kv_log_level level = kv_log_get_level();
    kv_log_set_level(KV_LOG_ERROR);
    int rc = kv_config_load_string(text, "stored config", NULL, &c, &err);
    kv_log_set_level(level);
    pthread_mutex_unlock(&g_config_lock);
    free(text);
    if (rc == 0) {
        for (size_t i = 0; i < c.database.n_feature_dimensions; i++) {
            json_array_append_new(l->dims, json_string(c.database.feature_dimensions[i]));
            json_array_append_new(l->bins, json_integer(c.database.feature_bins[i]));
        }
        l->num_islands = c.database.num_islands;
        json_t *o = l->settings;
        const char *task = c.evaluator.task && *c.evaluator.task ? c.evaluator.task : NULL;
        json_object_set_new(o, "task", task ? json_string(task) : json_null());
        json_object_set_new(o, "backend",
                            task ? json_string(c.evaluator.backend ? c.evaluator.backend : "auto")
                                 : json_null());
        json_object_set_new(o, "quick", task ? json_boolean(c.evaluator.quick) : json_null());
        json_object_set_new(o, "language", c.language ? json_string(c.language) : json_null());
        json_object_set_new(o, "num_islands", json_integer(c.database.num_islands));
        json_object_set_new(o, "population_size", json_integer(c.database.population_size));
        json_object_set_new(o, "parallel_evaluations",
                            json_integer(c.evaluator.parallel_evaluations));
        json_object_set_new(o, "evaluator_timeout", json_real(c.evaluator.timeout));
    }
    kv_config_free(&c);
}

static void layout_free(run_layout *l)
{
    json_decref(l->dims);
    json_decref(l->bins);
    json_decref(l->settings);
}

/* Meta value KEY of SUMMARY as a JSON string, or null. New reference. */
static json_t *meta_value(json_t *summary, const char *key)
{
    json_t *v = json_object_get(json_object_get(summary, "meta"), key);
    return v ? json_incref(v) : json_null();
}

/* The facts a reader checks first, in one object: what task on what
 * backend and device, from which initial programs, with what seed and
 * kevolve, where the store is. From the effective config, the manifest and
 * what the harness reported (SUMMARY's harness). New reference. */
static json_t *run_facts(json_t *summary, const run_layout *l, const char *store_path)
{
    json_t *harness = json_object_get(summary, "harness");
    json_t *f = json_deep_copy(l->settings);
    /* The backend that ran: the harness names it ("auto" resolves per
     * program); the configured one stays beside it. */
    json_t *used = json_object_get(harness, "backend");
    json_object_set(f, "backend_configured", json_object_get(l->settings, "backend"));
    if (json_is_string(used)) json_object_set(f, "backend", used);
    if (!json_is_string(json_object_get(f, "task")) &&
        json_is_string(json_object_get(harness, "task")))
        json_object_set(f, "task", json_object_get(harness, "task"));
    json_t *dev = json_object_get(harness, "device");
    json_t *name = json_is_object(dev) ? json_object_get(dev, "name") : dev;
    json_object_set_new(f, "device", json_is_string(name) ? json_incref(name) : json_null());
    json_object_set(f, "device_info", dev ? dev : json_null());
    json_object_set_new(f, "initial_program", meta_value(summary, "initial_program"));
    json_object_set(f, "initial_programs", json_object_get(summary, "initial_programs"));
    json_object_set_new(f, "random_seed", meta_value(summary, "random_seed"));
    json_object_set_new(f, "max_iterations", meta_value(summary, "max_iterations"));
    json_object_set_new(f, "kevolve_version", meta_value(summary, "kevolve_version"));
    json_object_set_new(f, "created_at", meta_value(summary, "created_at"));
    json_object_set_new(f, "host", meta_value(summary, "host"));
    json_object_set_new(f, "config_path", meta_value(summary, "config_path"));
    json_t *ev = json_object_get(json_object_get(summary, "meta"), "evaluator_command");
    json_object_set_new(f, "evaluator",
                        ev && *json_string_value(ev) ? json_incref(ev)
                                                     : meta_value(summary, "evaluator"));
    json_object_set_new(f, "store", store_path ? json_string(store_path) : json_null());
    return f;
}

/* GET /api/summary */
static int route_summary(kv_store *s, const char *store_path, json_t **body)
{
    json_t *sum = kv_store_web_summary(s);
    if (!sum) return store_fail(s, body);
    run_layout l;
    layout_read(s, &l);
    json_object_set(sum, "feature_dimensions", l.dims);
    json_object_set(sum, "feature_bins", l.bins);
    json_object_set_new(sum, "num_islands", json_integer(l.num_islands));
    json_object_set_new(sum, "facts", run_facts(sum, &l, store_path));
    json_object_set_new(sum, "store_path", store_path ? json_string(store_path) : json_null());
    layout_free(&l);
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
    *body = json_pack("{s:[s,s,s,s,s,s,s,s,s,s,s,s], s:o, s:I, s:I, s:b}", "columns", "id",
                      "parent_id", "other_parent_id", "island", "iteration", "generation", "status",
                      "fitness", "mutator", "is_migrant", "migrated_from", "reason", "programs",
                      rows, "since", (json_int_t)since, "next_since",
                      (json_int_t)(last ? json_integer_value(last) : since), "more",
                      (int)(n == (size_t)limit));
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

/* GET /api/series?buckets=N&window=W */
static int route_series(kv_store *s, kv_web_param_fn param, void *ud, json_t **body)
{
    long long buckets, window;
    int rc = int_param(param, ud, "buckets", 1, 2000, 200, &buckets, body);
    if (!rc) rc = int_param(param, ud, "window", 1, 1000, 0, &window, body);
    if (rc) return rc;
    int64_t max_iter = kv_store_web_max_iteration(s);
    if (max_iter < 0) return store_fail(s, body);
    json_t *scores = kv_store_web_scores(s);
    if (!scores) return store_fail(s, body);
    run_layout l;
    layout_read(s, &l);
    *body = kv_web_series(scores, (int)buckets, (json_int_t)max_iter, l.num_islands, (int)window);
    layout_free(&l);
    json_decref(scores);
    return 200;
}

/* The scenario entries of a harness's "scenarios" artifact, cut to what a
 * chart of them needs. New reference. */
static json_t *scenario_points(json_t *scenarios)
{
    static const char *const keep[] = {"name",    "speedup", "median_us", "roofline_fraction",
                                       "correct", "tags"};
    json_t *out = json_array();
    size_t i;
    json_t *sc;
    json_array_foreach(scenarios, i, sc)
    {
        if (!json_is_object(sc)) continue;
        json_t *o = json_object();
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
            json_t *v = json_object_get(sc, keep[k]);
            if (v) json_object_set(o, keep[k], v);
        }
        json_array_append_new(out, o);
    }
    return out;
}

/* GET /api/best_history */
static int route_best_history(kv_store *s, json_t **body)
{
    int64_t max_iter = kv_store_web_max_iteration(s);
    if (max_iter < 0) return store_fail(s, body);
    json_t *rows = kv_store_web_best_history(s);
    if (!rows) return store_fail(s, body);
    json_t *points = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        json_t *scen = json_array_get(row, 4);
        json_array_append_new(
            points, json_pack("{s:O, s:O, s:O, s:O, s:o}", "id", json_array_get(row, 0),
                              "iteration", json_array_get(row, 1), "fitness",
                              json_array_get(row, 2), "island", json_array_get(row, 3), "scenarios",
                              json_is_array(scen) ? scenario_points(scen) : json_array()));
    }
    json_decref(rows);
    *body = json_pack("{s:I, s:o}", "max_iteration", (json_int_t)max_iter, "points", points);
    return 200;
}

/* Adds to GRID "axes": per dimension {name, bins, range: [min, max] or
 * null}, the values the bins cut (the search scales each dimension by the
 * range it has seen and cuts it into equal bins). Returns 0 or -1 (the
 * store's error set). */
static int add_axes(kv_store *s, json_t *grid)
{
    json_t *axes = json_array();
    json_t *dims = json_object_get(grid, "dimensions"), *bins = json_object_get(grid, "bins");
    size_t i;
    json_t *d;
    json_array_foreach(dims, i, d)
    {
        if (i >= json_array_size(bins)) break;
        json_t *range = kv_store_web_feature_range(s, json_string_value(d));
        if (!range) {
            json_decref(axes);
            return -1;
        }
        json_array_append_new(axes, json_pack("{s:O, s:O, s:o}", "name", d, "bins",
                                              json_array_get(bins, i), "range", range));
    }
    json_object_set_new(grid, "axes", axes);
    return 0;
}

/* GET /api/grid?island=K */
static int route_grid(kv_store *s, kv_web_param_fn param, void *ud, json_t **body)
{
    long long island;
    const char *text = param ? param(ud, "island") : NULL;
    if (!text) return fail(body, 400, "parameter 'island' is required");
    int rc = int_param(param, ud, "island", 0, 1000000, 0, &island, body);
    if (rc) return rc;
    run_layout l;
    layout_read(s, &l);
    json_t *placed = NULL;
    if (l.num_islands > 0 && island >= l.num_islands)
        rc = fail(body, 404, "no island %lld (this run has %d)", island, l.num_islands);
    else if (!(placed = kv_store_web_placed(s, (int)island)))
        rc = store_fail(s, body);
    else if (!(*body = kv_web_grid((int)island, placed, l.dims, l.bins)) ||
             add_axes(s, *body) != 0) {
        json_decref(*body);
        *body = NULL;
        rc = store_fail(s, body);
    } else {
        rc = 200;
    }
    json_decref(placed);
    layout_free(&l);
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

/* Rows of route_objectives: each OK program's id and values. */
typedef struct objective_rows {
    const kv_objective *o;
    size_t n;
    json_t *rows;
    json_t *screened; /* the ids of programs the screen stopped */
} objective_rows;

static int objective_row(kv_program *p, void *ud)
{
    objective_rows *r = ud;
    if (!kv_objectives_whole(p->metrics))
        json_array_append_new(r->screened, json_integer((json_int_t)p->id));
    json_t *row = json_pack("[I]", (json_int_t)p->id);
    for (size_t k = 0; k < r->n; k++) {
        double v;
        json_array_append_new(row, kv_objective_value(&r->o[k], p->metrics, &v) == 0 ? json_real(v)
                                                                                     : json_null());
    }
    json_array_append_new(r->rows, row);
    return 0;
}

/* GET /api/objectives: the run's objectives (the config's `objectives`),
 * the names the dashboard can draw (those, then speedup, energy and error),
 * whether each is maximised, every OK program's values ([id, value, ...],
 * null where it has none), and "screened": the ids of those the screen
 * stopped after a few scenarios (drawn, marked, never on the front). The
 * front of the two drawn is the page's to find. */
static int route_objectives(kv_store *s, json_t **body)
{
    char *list = kv_store_get_meta(s, "objectives");
    json_t *run = json_array();
    char *names[64];
    size_t n = 0;
    char *save = NULL, *copy = kv_strdup(list ? list : "");
    for (char *t = strtok_r(copy, ",", &save); t && n < 61; t = strtok_r(NULL, ",", &save)) {
        json_array_append_new(run, json_string(t));
        names[n++] = t;
    }
    static char *const extra[] = {"speedup", "energy", "error"};
    for (size_t e = 0; e < 3; e++) {
        size_t k = 0;
        while (k < n && strcmp(names[k], extra[e]) != 0)
            k++;
        if (k == n) names[n++] = extra[e];
    }
    kv_objective *o = NULL;
    char *err = NULL;
    if (kv_objectives_parse(names, n, &o, &err) != 0) {
        /* A store written by another kevolve may name what this one lacks. */
        int st = fail(body, 500, "the run's objectives: %s", err);
        free(err);
        free(copy);
        free(list);
        json_decref(run);
        return st;
    }
    objective_rows r = {o, n, json_array(), json_array()};
    int rc = kv_store_each_program(s, KV_STATUS_OK, 0, objective_row, &r);
    json_t *jn = json_array(), *jmax = json_array();
    for (size_t k = 0; k < n; k++) {
        json_array_append_new(jn, json_string(o[k].name));
        json_array_append_new(jmax, json_boolean(o[k].maximise));
    }
    kv_objectives_free(o, n);
    free(copy);
    free(list);
    if (rc != 0) {
        json_decref(run);
        json_decref(jn);
        json_decref(jmax);
        json_decref(r.rows);
        json_decref(r.screened);
        return store_fail(s, body);
    }
    *body = json_pack("{s:o,s:o,s:o,s:o,s:o}", "objectives", run, "names", jn, "maximise", jmax,
                      "programs", r.rows, "screened", r.screened);
    return 200;
}

int kv_web_api(kv_store *s, const char *store_path, const char *path, kv_web_param_fn param,
               void *ud, json_t **body)
{
    *body = NULL;
    if (!path || !kv_starts_with(path, "/api/")) return fail(body, 404, "no such route");
    const char *route = path + 5;
    /* One snapshot per answer, so its parts agree while a run writes. */
    if (kv_store_begin(s) != 0) return store_fail(s, body);
    int status;
    if (strcmp(route, "summary") == 0)
        status = route_summary(s, store_path, body);
    else if (strcmp(route, "programs") == 0)
        status = route_programs(s, param, ud, body);
    else if (kv_starts_with(route, "programs/"))
        status = route_program(s, route + 9, body);
    else if (strcmp(route, "series") == 0)
        status = route_series(s, param, ud, body);
    else if (strcmp(route, "best_history") == 0)
        status = route_best_history(s, body);
    else if (strcmp(route, "grid") == 0)
        status = route_grid(s, param, ud, body);
    else if (strcmp(route, "events") == 0)
        status = route_events(s, param, ud, body);
    else if (strcmp(route, "objectives") == 0)
        status = route_objectives(s, body);
    else
        status = fail(body, 404, "no such route: %.80s", path);
    kv_store_commit(s); /* ends the read snapshot; nothing to lose */
    return status;
}
