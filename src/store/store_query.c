/* The store's read queries over programs: one program with everything it
 * has, iteration over all of them, counts, the best one, and lookup of an
 * earlier program by code hash. */
#include "store/store_internal.h"
#include "util/buf.h"
#include "util/hash.h"

#include <stdlib.h>

kv_program *kv_store_get_program(kv_store *s, int64_t id)
{
    kv_store_clear_err(s);
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_GET_PROGRAM);
    if (!st) return NULL;
    sqlite3_bind_int64(st, 1, id);
    kv_program *p = NULL;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        p = kv_store_read_program(s, st);
    else if (rc != SQLITE_DONE)
        kv_store_db_fail(s, "get program");
    sqlite3_reset(st);
    if (p && kv_store_load_details(s, p) != 0) {
        kv_program_free(p);
        return NULL;
    }
    return p;
}

/* Checks a status filter argument (-1 or a kv_status). */
static int valid_filter(int status)
{
    return status == -1 || (status >= 0 && status < KV_STATUS_COUNT);
}

int kv_store_each_program(kv_store *s, int status, int with_source, kv_program_fn fn, void *ud)
{
    if (!valid_filter(status)) return kv_store_fail(s, "each program: invalid status %d", status);
    /* Prepared per call, not cached: FN may call back into the store, even
     * into another iteration. One query; stages and artifacts not loaded. */
    static const char *const sql[2][2] = {
        {"SELECT " KV_PROGRAM_COLUMNS("NULL") " FROM programs ORDER BY id",
         "SELECT " KV_PROGRAM_COLUMNS("NULL") " FROM programs WHERE status = ?1 ORDER BY id"},
        {"SELECT " KV_PROGRAM_COLUMNS("source") " FROM programs ORDER BY id",
         "SELECT " KV_PROGRAM_COLUMNS("source") " FROM programs WHERE status = ?1 ORDER BY id"},
    };
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql[with_source ? 1 : 0][status >= 0], -1, &st, NULL) !=
        SQLITE_OK)
        return kv_store_db_fail(s, "each program");
    if (status >= 0) sqlite3_bind_text(st, 1, kv_status_name((kv_status)status), -1, SQLITE_STATIC);
    int rc, result = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        kv_program *p = kv_store_read_program(s, st);
        if (!p) {
            result = -1;
            break;
        }
        result = fn(p, ud);
        kv_program_free(p);
        if (result != 0) break;
    }
    if (result == 0 && rc != SQLITE_DONE) result = kv_store_db_fail(s, "each program");
    sqlite3_finalize(st);
    return result;
}

/* Runs SQL (uncached) with optional text parameter ?1 = ARG and returns the
 * integer in the first column of its first row (0 when no row), or -1. */
static int64_t query_int(kv_store *s, const char *sql, const char *arg, const char *what)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return kv_store_db_fail(s, what);
    if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
    int64_t v = 0;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else if (rc != SQLITE_DONE)
        v = kv_store_db_fail(s, what);
    sqlite3_finalize(st);
    return v;
}

int64_t kv_store_count_programs(kv_store *s, int status)
{
    if (!valid_filter(status)) return kv_store_fail(s, "count programs: invalid status %d", status);
    if (status < 0) return query_int(s, "SELECT count(*) FROM programs", NULL, "count programs");
    return query_int(s, "SELECT count(*) FROM programs WHERE status = ?1",
                     kv_status_name((kv_status)status), "count programs");
}

int64_t kv_store_max_iteration(kv_store *s)
{
    return query_int(s, "SELECT coalesce(max(iteration), 0) FROM programs", NULL, "max iteration");
}

kv_program *kv_store_best_program(kv_store *s)
{
    kv_store_clear_err(s);
    int64_t id = query_int(s,
                           "SELECT id FROM programs WHERE status = 'ok' AND fitness IS NOT NULL"
                           " ORDER BY fitness DESC, id ASC LIMIT 1",
                           NULL, "best program");
    return id > 0 ? kv_store_get_program(s, id) : NULL;
}

int64_t kv_store_find_by_hash(kv_store *s, uint64_t code_hash)
{
    kv_store_clear_err(s);
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_FIND_BY_HASH);
    if (!st) return 0;
    char hex[17];
    kv_hash_hex(code_hash, hex);
    sqlite3_bind_text(st, 1, hex, 16, SQLITE_STATIC);
    int64_t id = 0;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    else if (rc != SQLITE_DONE)
        kv_store_db_fail(s, "find by hash"); /* 0 with the error set */
    sqlite3_reset(st);
    return id;
}

int kv_store_status_counts(kv_store *s, int64_t counts[KV_STATUS_COUNT])
{
    for (int i = 0; i < KV_STATUS_COUNT; i++)
        counts[i] = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT status, count(*) FROM programs GROUP BY status", -1, &st,
                           NULL) != SQLITE_OK)
        return kv_store_db_fail(s, "status counts");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        kv_status status;
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (name && kv_status_parse(name, &status) == 0)
            counts[status] = sqlite3_column_int64(st, 1);
    }
    int result = rc == SQLITE_DONE ? 0 : kv_store_db_fail(s, "status counts");
    sqlite3_finalize(st);
    return result;
}
