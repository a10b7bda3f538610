/* The store's run statistics: failures counted by status and reason code,
 * the program that carries a compiled artifact (duplicates by artifact),
 * and the mutators' statistics (table mutator_stats) that the bandit
 * restores on resume and that `kevolve status` and the dashboard show.
 * Declared in store.h. */
#include "store/store_internal.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The reason a failure is counted under: its code, else the first line of
 * its long reason (at most 120 characters; stores written before codes). */
#define KV_REASON_KEY                                                                              \
    "coalesce(reason_code, substr(coalesce(status_reason, ''), 1,"                                 \
    " min(120, instr(coalesce(status_reason, '') || char(10), char(10)) - 1)))"

json_t *kv_store_failure_counts(kv_store *s, int limit)
{
    if (limit <= 0) limit = 50;
    static const char sql[] = "SELECT status, " KV_REASON_KEY " AS r, count(*) FROM programs"
                              " WHERE status IN ('failed', 'timeout', 'rejected')"
                              " GROUP BY status, r ORDER BY count(*) DESC, status, r LIMIT ?1";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        kv_store_db_fail(s, "failure counts");
        sqlite3_finalize(st);
        return NULL;
    }
    sqlite3_bind_int(st, 1, limit);
    json_t *rows = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *status = (const char *)sqlite3_column_text(st, 0);
        const char *reason = (const char *)sqlite3_column_text(st, 1);
        json_t *r = json_object();
        json_object_set_new(r, "status", json_string(status ? status : ""));
        json_t *text = json_string(reason ? reason : "");
        json_object_set_new(r, "reason", text ? text : json_string("(not valid UTF-8)"));
        json_object_set_new(r, "count", json_integer(sqlite3_column_int64(st, 2)));
        json_array_append_new(rows, r);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(rows);
        kv_store_db_fail(s, "failure counts");
        return NULL;
    }
    return rows;
}

int64_t kv_store_find_by_artifact_hash(kv_store *s, const char *hash)
{
    kv_store_clear_err(s);
    if (!hash || !*hash) return 0;
    /* The partial index artifacts_artifact_hash serves this lookup. */
    static const char sql[] = "SELECT a.program_id FROM artifacts a JOIN programs p"
                              " ON p.id = a.program_id WHERE a.name = 'artifact_hash'"
                              " AND a.value = ?1 AND p.status <> 'duplicate'"
                              " ORDER BY a.program_id LIMIT 1";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        kv_store_db_fail(s, "find by artifact hash");
        sqlite3_finalize(st);
        return 0;
    }
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int64_t id = 0;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    else if (rc != SQLITE_DONE)
        kv_store_db_fail(s, "find by artifact hash");
    sqlite3_finalize(st);
    return id;
}

int kv_store_put_mutator_stat(kv_store *s, const kv_mutator_stat *m)
{
    static const char sql[] =
        "INSERT INTO mutator_stats(arm, draws, successes, failures, reward_sum, weight,"
        " updated_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(arm) DO UPDATE SET"
        " draws = excluded.draws, successes = excluded.successes, failures = excluded.failures,"
        " reward_sum = excluded.reward_sum, weight = excluded.weight,"
        " updated_at = excluded.updated_at";
    if (!m || !m->arm) return kv_store_fail(s, "put mutator stat: no arm");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return kv_store_db_fail(s, "put mutator stat");
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    sqlite3_bind_text(st, 1, m->arm, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, m->draws);
    sqlite3_bind_int64(st, 3, m->successes);
    sqlite3_bind_int64(st, 4, m->failures);
    sqlite3_bind_double(st, 5, isfinite(m->reward_sum) ? m->reward_sum : 0.0);
    if (isfinite(m->weight))
        sqlite3_bind_double(st, 6, m->weight);
    else
        sqlite3_bind_null(st, 6);
    sqlite3_bind_double(st, 7, (double)now.tv_sec + (double)now.tv_nsec * 1e-9);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return kv_store_db_fail(s, "put mutator stat");
    return 0;
}

json_t *kv_store_mutator_stats(kv_store *s)
{
    static const char sql[] = "SELECT arm, draws, successes, failures, reward_sum, weight,"
                              " updated_at FROM mutator_stats ORDER BY arm";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        kv_store_db_fail(s, "mutator stats");
        sqlite3_finalize(st);
        return NULL;
    }
    json_t *rows = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *arm = (const char *)sqlite3_column_text(st, 0);
        json_t *arm_json = json_string(arm ? arm : "");
        json_t *r = json_object();
        json_object_set_new(r, "arm", arm_json ? arm_json : json_string("(not valid UTF-8)"));
        json_object_set_new(r, "draws", json_integer(sqlite3_column_int64(st, 1)));
        json_object_set_new(r, "successes", json_integer(sqlite3_column_int64(st, 2)));
        json_object_set_new(r, "failures", json_integer(sqlite3_column_int64(st, 3)));
        json_object_set_new(r, "reward_sum", json_real(sqlite3_column_double(st, 4)));
        json_object_set_new(r, "weight",
                            sqlite3_column_type(st, 5) == SQLITE_NULL
                                ? json_null()
                                : json_real(sqlite3_column_double(st, 5)));
        json_object_set_new(r, "updated_at",
                            sqlite3_column_type(st, 6) == SQLITE_NULL
                                ? json_null()
                                : json_real(sqlite3_column_double(st, 6)));
        json_array_append_new(rows, r);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(rows);
        kv_store_db_fail(s, "mutator stats");
        return NULL;
    }
    return rows;
}

int64_t kv_store_missing_iterations(kv_store *s, int64_t upto, int64_t **out)
{
    *out = NULL;
    if (upto < 1) return 0;
    /* A model call that failed for its request ("error: ...") spends its
     * iteration; one given back by a fault ("retry: ...", "fatal: ...")
     * does not. */
    static const char sql[] =
        "WITH RECURSIVE it(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM it WHERE i < ?1)"
        " SELECT i FROM it WHERE NOT EXISTS (SELECT 1 FROM programs p WHERE p.iteration = it.i"
        " AND p.is_migrant = 0) AND NOT EXISTS (SELECT 1 FROM llm_calls c"
        " WHERE c.iteration = it.i AND c.outcome LIKE 'error%')";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return kv_store_db_fail(s, "missing iterations");
    }
    sqlite3_bind_int64(st, 1, upto);
    int64_t n = 0, cap = 0;
    int64_t *list = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            list = kv_realloc(list, (size_t)cap * sizeof *list);
        }
        list[n++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(list);
        return kv_store_db_fail(s, "missing iterations");
    }
    *out = list;
    return n;
}
