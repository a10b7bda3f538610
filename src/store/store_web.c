/* The store's read-only queries for the web dashboard and the static report
 * (src/web): programs in compact pages for the evolution tree, the score
 * series, the placed programs of an island (MAP-Elites grid), events, the
 * language-model calls behind a program, and the aggregates of the run
 * summary. Each builds a JSON value straight from its rows, so the web
 * module never speaks SQL. Declared at the end of store.h. */
#include "store/store_internal.h"
#include "util/buf.h"
#include "util/json.h"

#include <stdlib.h>
#include <string.h>

/* Column I of the current row as JSON: integers, reals and text as such,
 * NULL as null. Never returns NULL. */
static json_t *col_value(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return json_integer((json_int_t)sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(st, i));
    case SQLITE_TEXT:
    case SQLITE_BLOB: {
        json_t *v = json_stringn((const char *)sqlite3_column_text(st, i),
                                 (size_t)sqlite3_column_bytes(st, i));
        return v ? v : json_string("(not valid UTF-8)");
    }
    default:
        return json_null();
    }
}

/* Column I holding JSON text, parsed (text that is not JSON comes back as a
 * string; NULL as null). Never returns NULL. */
static json_t *col_json_value(sqlite3_stmt *st, int i)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    if (!t) return json_null();
    json_t *v = kv_json_loads(t);
    return v ? v : json_string(t);
}

/* Prepares SQL (uncached: these queries are not on a hot path). Returns the
 * statement, or NULL with the error "WHAT: ..." set. */
static sqlite3_stmt *prepare(kv_store *s, const char *sql, const char *what)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        kv_store_db_fail(s, what);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Steps ST to the end, appending each row to a new array as an array of its
 * columns (JSON_COLS: bit i set = column i holds JSON text) or, with NAMES,
 * as an object keyed by NAMES (NULL-terminated, one per column). Finalizes
 * ST. Returns the array, or NULL with the error set. */
static json_t *collect_rows(kv_store *s, sqlite3_stmt *st, unsigned json_cols,
                            const char *const *names, const char *what)
{
    if (!st) return NULL;
    json_t *rows = json_array();
    int n = sqlite3_column_count(st), rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *row = names ? json_object() : json_array();
        for (int i = 0; i < n; i++) {
            json_t *v = (json_cols >> i) & 1u ? col_json_value(st, i) : col_value(st, i);
            if (names)
                json_object_set_new(row, names[i], v);
            else
                json_array_append_new(row, v);
        }
        json_array_append_new(rows, row);
    }
    if (rc != SQLITE_DONE) {
        kv_store_db_fail(s, what);
        json_decref(rows);
        rows = NULL;
    }
    sqlite3_finalize(st);
    return rows;
}

/* SQL for the first line of the text column COL, cut to 120 characters
 * ('' when NULL): how a failure's reason is shown and grouped. */
#define REASON_SQL(col)                                                                            \
    "substr(coalesce(" col ", ''), 1, min(120, instr(coalesce(" col ", '') || char(10),"           \
    " char(10)) - 1))"

/* Checks a page size; -1 with the error set when out of range. */
static int check_limit(kv_store *s, int limit, const char *what)
{
    if (limit < 1 || limit > KV_STORE_WEB_PAGE_MAX)
        return kv_store_fail(s, "%s: limit %d is outside 1..%d", what, limit,
                             KV_STORE_WEB_PAGE_MAX);
    return 0;
}

json_t *kv_store_web_programs(kv_store *s, int64_t since, int limit)
{
    if (check_limit(s, limit, "programs") != 0) return NULL;
    /* The reason shown for a failure: its code, else its first line. */
    sqlite3_stmt *st =
        prepare(s,
                "SELECT id, parent_id, other_parent_id, island, iteration, generation, status,"
                " fitness, mutator, is_migrant, migrated_from, CASE WHEN status = 'ok' THEN NULL"
                " ELSE coalesce(reason_code, " REASON_SQL(
                    "status_reason") ") END FROM programs"
                                     " WHERE id > ?1 ORDER BY id LIMIT ?2",
                "programs page");
    if (!st) return NULL;
    sqlite3_bind_int64(st, 1, since);
    sqlite3_bind_int(st, 2, limit);
    return collect_rows(s, st, 0, NULL, "programs page");
}

json_t *kv_store_web_llm_calls(kv_store *s, int64_t program_id)
{
    static const char *const names[] = {
        "id",          "iteration", "model",         "endpoint",          "system_prompt",
        "user_prompt", "reply",     "prompt_tokens", "completion_tokens", "cost_usd",
        "latency_s",   "attempts",  "http_status",   "outcome",           "error",
        "created_at",  NULL};
    sqlite3_stmt *st = prepare(s,
                               "SELECT id, iteration, model, endpoint, system_prompt, user_prompt,"
                               " reply, prompt_tokens, completion_tokens, cost_usd, latency_s,"
                               " attempts, http_status, outcome, error, created_at"
                               " FROM llm_calls WHERE program_id = ?1 ORDER BY id",
                               "llm calls");
    if (!st) return NULL;
    sqlite3_bind_int64(st, 1, program_id);
    return collect_rows(s, st, 0, names, "llm calls");
}

json_t *kv_store_web_events(kv_store *s, int64_t since, int limit)
{
    static const char *const names[] = {"id", "time", "kind", "data", NULL};
    if (check_limit(s, limit, "events") != 0) return NULL;
    sqlite3_stmt *st = prepare(
        s, "SELECT id, time, kind, data FROM events WHERE id > ?1 ORDER BY id LIMIT ?2", "events");
    if (!st) return NULL;
    sqlite3_bind_int64(st, 1, since);
    sqlite3_bind_int(st, 2, limit);
    return collect_rows(s, st, 1u << 3, names, "events");
}

json_t *kv_store_web_scores(kv_store *s)
{
    sqlite3_stmt *st = prepare(s,
                               "SELECT island, iteration, fitness, id FROM programs"
                               " WHERE status = 'ok' AND fitness IS NOT NULL"
                               " ORDER BY iteration, id",
                               "scores");
    return collect_rows(s, st, 0, NULL, "scores");
}

json_t *kv_store_web_placed(kv_store *s, int island)
{
    sqlite3_stmt *st = prepare(s,
                               "SELECT id, fitness, features FROM programs"
                               " WHERE island = ?1 AND status = 'ok' AND fitness IS NOT NULL"
                               " AND features IS NOT NULL ORDER BY id",
                               "placed programs");
    if (!st) return NULL;
    sqlite3_bind_int(st, 1, island);
    return collect_rows(s, st, 1u << 2, NULL, "placed programs");
}

json_t *kv_store_web_feature_range(kv_store *s, const char *dim)
{
    /* What the search measures along DIM (search/features.c), over every
     * program it placed: complexity is the source's length in bytes. */
    const char *sql =
        !strcmp(dim, "complexity")
            ? "SELECT min(length(CAST(source AS BLOB))), max(length(CAST(source AS BLOB)))"
              " FROM programs WHERE status = 'ok' AND features IS NOT NULL"
        : !strcmp(dim, "score") ? "SELECT min(fitness), max(fitness) FROM programs"
                                  " WHERE status = 'ok' AND features IS NOT NULL"
        : !strcmp(dim, "diversity")
            ? NULL /* a MinHash distance the store does not keep */
            : "SELECT min(v), max(v) FROM (SELECT json_extract(metrics, ?1) AS v FROM programs"
              " WHERE status = 'ok' AND features IS NOT NULL) WHERE typeof(v) IN ('integer', "
              "'real')";
    if (!sql) return json_null();
    sqlite3_stmt *st = prepare(s, sql, "feature range");
    if (!st) return NULL;
    char *path = kv_asprintf("$.\"%s\"", dim);
    if (sqlite3_bind_parameter_count(st) > 0) sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    json_t *rows = collect_rows(s, st, 0, NULL, "feature range");
    free(path);
    if (!rows) return NULL;
    json_t *row = json_array_get(rows, 0);
    json_t *out = json_is_number(json_array_get(row, 0)) && json_is_number(json_array_get(row, 1))
                      ? json_incref(row)
                      : json_null();
    json_decref(rows);
    return out;
}

/* Runs SQL (no parameters) expecting one row and returns it as an object
 * keyed by NAMES, or NULL with the error set. */
static json_t *one_row(kv_store *s, const char *sql, const char *const *names, const char *what)
{
    json_t *rows = collect_rows(s, prepare(s, sql, what), 0, names, what);
    if (!rows) return NULL;
    json_t *row = json_array_get(rows, 0);
    json_t *out = row ? json_incref(row) : json_object();
    json_decref(rows);
    return out;
}

/* Sets KEY of OUT to V (stolen) and returns 0, or returns -1 when V is NULL
 * (the error is already set). */
static int put(json_t *out, const char *key, json_t *v)
{
    if (!v) return -1;
    json_object_set_new(out, key, v);
    return 0;
}

/* The meta table as an object (key -> text). NULL on error. */
static json_t *meta_object(kv_store *s)
{
    sqlite3_stmt *st = prepare(s, "SELECT key, value FROM meta ORDER BY key", "meta");
    if (!st) return NULL;
    json_t *meta = json_object();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_object_set_new(meta, (const char *)sqlite3_column_text(st, 0), col_value(st, 1));
    if (rc != SQLITE_DONE) {
        kv_store_db_fail(s, "meta");
        json_decref(meta);
        meta = NULL;
    }
    sqlite3_finalize(st);
    return meta;
}

/* Programs by status as an object with every status name (0 when none). */
static json_t *status_object(kv_store *s)
{
    int64_t counts[KV_STATUS_COUNT];
    if (kv_store_status_counts(s, counts) != 0) return NULL;
    json_t *o = json_object();
    for (int i = 0; i < KV_STATUS_COUNT; i++)
        json_object_set_new(o, kv_status_name((kv_status)i), json_integer(counts[i]));
    return o;
}

/* The language-model totals and their split by model. */
static json_t *llm_object(kv_store *s)
{
    static const char *const totals[] = {"calls",    "prompt_tokens", "completion_tokens",
                                         "cost_usd", "errors",        NULL};
    static const char *const per_model[] = {
        "model", "calls", "prompt_tokens", "completion_tokens", "cost_usd", NULL};
    json_t *llm = one_row(s,
                          "SELECT count(*), coalesce(sum(prompt_tokens), 0),"
                          " coalesce(sum(completion_tokens), 0), coalesce(sum(cost_usd), 0.0),"
                          " coalesce(sum(outcome LIKE 'error%' OR error IS NOT NULL), 0)"
                          " FROM llm_calls",
                          totals, "llm totals");
    if (!llm) return NULL;
    json_t *by_model = collect_rows(s,
                                    prepare(s,
                                            "SELECT model, count(*), coalesce(sum(prompt_tokens),"
                                            " 0), coalesce(sum(completion_tokens), 0),"
                                            " coalesce(sum(cost_usd), 0.0) FROM llm_calls"
                                            " GROUP BY model ORDER BY count(*) DESC",
                                            "llm by model"),
                                    0, per_model, "llm by model");
    if (put(llm, "by_model", by_model) != 0) {
        json_decref(llm);
        return NULL;
    }
    return llm;
}

/* What the harness reported about itself on the first program that
 * carries it: {backend, device, task} (device as the harness's object;
 * each null when absent: an external evaluator reports none). */
static json_t *harness_facts(kv_store *s)
{
    sqlite3_stmt *st = prepare(
        s,
        "SELECT name, value, is_json FROM artifacts WHERE name IN ('backend', 'device', 'task')"
        " AND program_id = (SELECT program_id FROM artifacts WHERE name = 'backend'"
        " ORDER BY program_id LIMIT 1)",
        "harness facts");
    if (!st) return NULL;
    json_t *out = json_pack("{s:n, s:n, s:n}", "backend", "device", "task");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        json_object_set_new(out, name,
                            sqlite3_column_int(st, 2) ? col_json_value(st, 1) : col_value(st, 1));
    }
    if (rc != SQLITE_DONE) {
        kv_store_db_fail(s, "harness facts");
        json_decref(out);
        out = NULL;
    }
    sqlite3_finalize(st);
    return out;
}

json_t *kv_store_web_summary(kv_store *s)
{
    static const char *const counts[] = {"programs", "max_id", "max_iteration", "migrants", NULL};
    static const char *const island_cols[] = {"island",  "programs", "ok",        "failed",
                                              "timeout", "rejected", "duplicate", "best_fitness",
                                              "best_id", NULL};
    static const char *const reason_cols[] = {"status",     "reason",  "count",
                                              "example_id", "last_id", NULL};
    static const char *const mutator_cols[] = {"mutator",      "children", "ok",        "failed",
                                               "timeout",      "rejected", "duplicate", "improved",
                                               "best_fitness", NULL};
    static const char *const initial_cols[] = {"id", "island", "status", "fitness", NULL};
    json_t *out = one_row(s,
                          "SELECT count(*), coalesce(max(id), 0), coalesce(max(iteration), 0),"
                          " coalesce(sum(is_migrant), 0) FROM programs",
                          counts, "summary counts");
    if (!out) return NULL;
    /* The best of an island: the OK program with the highest fitness, the
     * earliest on a tie. */
    const char *islands_sql =
        "SELECT island, count(*), sum(status = 'ok'), sum(status = 'failed'),"
        " sum(status = 'timeout'), sum(status = 'rejected'), sum(status = 'duplicate'),"
        " max(CASE WHEN status = 'ok' THEN fitness END),"
        " (SELECT p2.id FROM programs p2 WHERE p2.island = p.island AND p2.status = 'ok'"
        "  AND p2.fitness IS NOT NULL ORDER BY p2.fitness DESC, p2.id LIMIT 1)"
        " FROM programs p GROUP BY island ORDER BY island";
    /* Failures by reason: the reason code, else the first line of the
     * reason (as kv_store_failure_counts), with the first and last program. */
    const char *reasons_sql =
        "SELECT status, r, count(*), min(id), max(id) FROM (SELECT id, status,"
        " coalesce(reason_code, " REASON_SQL(
            "status_reason") ") AS r FROM programs"
                             " WHERE status IN ('failed', 'timeout', 'rejected')) GROUP BY status, "
                             "r"
                             " ORDER BY count(*) DESC, status, r LIMIT 50";
    /* Per mutator: its children by status, and how many beat their parent
     * (an OK child scoring above an OK parent). */
    const char *mutators_sql =
        "SELECT coalesce(c.mutator, '?'), count(*), sum(c.status = 'ok'),"
        " sum(c.status = 'failed'), sum(c.status = 'timeout'), sum(c.status = 'rejected'),"
        " sum(c.status = 'duplicate'), sum(c.status = 'ok' AND p.status = 'ok'"
        " AND c.fitness > p.fitness), max(CASE WHEN c.status = 'ok' THEN c.fitness END)"
        " FROM programs c LEFT JOIN programs p ON p.id = c.parent_id"
        " WHERE c.parent_id IS NOT NULL AND c.is_migrant = 0"
        " GROUP BY 1 ORDER BY count(*) DESC, 1";
    const char *initial_sql = "SELECT id, island, status, fitness FROM programs"
                              " WHERE parent_id IS NULL AND is_migrant = 0 ORDER BY id LIMIT 100";
    if (put(out, "meta", meta_object(s)) != 0 || put(out, "by_status", status_object(s)) != 0 ||
        put(out, "islands",
            collect_rows(s, prepare(s, islands_sql, "islands"), 0, island_cols, "islands")) != 0 ||
        put(out, "failure_reasons",
            collect_rows(s, prepare(s, reasons_sql, "failure reasons"), 0, reason_cols,
                         "failure reasons")) != 0 ||
        put(out, "by_mutator",
            collect_rows(s, prepare(s, mutators_sql, "by mutator"), 0, mutator_cols,
                         "by mutator")) != 0 ||
        put(out, "initial_programs",
            collect_rows(s, prepare(s, initial_sql, "initial programs"), 0, initial_cols,
                         "initial programs")) != 0 ||
        put(out, "harness", harness_facts(s)) != 0 ||
        put(out, "devices", kv_store_devices(s)) != 0 ||
        put(out, "mutators", kv_store_mutator_stats(s)) != 0 ||
        put(out, "llm", llm_object(s)) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

int64_t kv_store_web_max_iteration(kv_store *s)
{
    sqlite3_stmt *st =
        prepare(s, "SELECT coalesce(max(iteration), 0) FROM programs", "max iteration");
    if (!st) return -1;
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else
        kv_store_db_fail(s, "max iteration");
    sqlite3_finalize(st);
    return v;
}

/* A row of the best history's statement (scenario, speedup, median_us,
 * roofline_fraction, kind) as a chart point; NULL numbers as null. */
static json_t *scenario_point(sqlite3_stmt *st)
{
    static const char *const nums[] = {"speedup", "median_us", "roofline_fraction"};
    json_t *o = json_pack("{s:s?,s:s?}", "name", (const char *)sqlite3_column_text(st, 0), "tags",
                          (const char *)sqlite3_column_text(st, 4));
    for (int i = 0; i < 3; i++)
        json_object_set_new(o, nums[i],
                            sqlite3_column_type(st, i + 1) == SQLITE_NULL
                                ? json_null()
                                : json_real(sqlite3_column_double(st, i + 1)));
    return o;
}

json_t *kv_store_web_best_history(kv_store *s)
{
    sqlite3_stmt *st = prepare(s,
                               "SELECT id, iteration, fitness, island FROM programs"
                               " WHERE status = 'ok' AND fitness IS NOT NULL"
                               " ORDER BY iteration, id",
                               "best history");
    /* Each best program's rows per scenario (kernel tasks), read in C:
     * SQLite's JSON functions keep 15 digits of a double, the harness's 17. */
    sqlite3_stmt *art = prepare(s,
                                "SELECT scenario, speedup, median_us, roofline_fraction, kind"
                                " FROM scenario_results WHERE program_id = ?1 ORDER BY rowid",
                                "best history scenarios");
    if (!st || !art) {
        sqlite3_finalize(st);
        sqlite3_finalize(art);
        return NULL;
    }
    json_t *rows = json_array();
    double best = 0;
    int have = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        double f = sqlite3_column_double(st, 2);
        if (have && !(f > best)) continue;
        have = 1;
        best = f;
        int64_t id = sqlite3_column_int64(st, 0);
        sqlite3_bind_int64(art, 1, id);
        json_t *scen = json_array();
        int arc;
        while ((arc = sqlite3_step(art)) == SQLITE_ROW)
            json_array_append_new(scen, scenario_point(art));
        sqlite3_reset(art);
        if (arc != SQLITE_DONE) {
            rc = arc;
            json_decref(scen);
            break;
        }
        if (!json_array_size(scen)) {
            json_decref(scen);
            scen = json_null();
        }
        json_array_append_new(rows, json_pack("[I, I, f, i, o]", (json_int_t)id,
                                              (json_int_t)sqlite3_column_int64(st, 1), f,
                                              sqlite3_column_int(st, 3), scen));
    }
    if (rc != SQLITE_DONE) {
        kv_store_db_fail(s, "best history");
        json_decref(rows);
        rows = NULL;
    }
    sqlite3_finalize(st);
    sqlite3_finalize(art);
    return rows;
}
