/* The store's program rows: inserting a program with its stages
 * (evaluations) and artifacts as one atomic unit, reading programs back,
 * and the queries over them (counts, best, duplicates by hash). */
#include "store/store_internal.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- binding ------------------------------------------------------------ */

/* Lineage ids: 0 (none) is stored as NULL. */
static void bind_id(sqlite3_stmt *st, int i, int64_t v)
{
    if (v)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* S must stay valid until the statement is reset. */
static void bind_str(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

/* NaN is stored as NULL. */
static void bind_real(sqlite3_stmt *st, int i, double d)
{
    if (isnan(d))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, d);
}

/* JSON as compact text; NULL as NULL. */
static void bind_json(sqlite3_stmt *st, int i, const json_t *v)
{
    if (v)
        sqlite3_bind_text(st, i, kv_json_dumps(v), -1, free);
    else
        sqlite3_bind_null(st, i);
}

/* ---- reading columns ------------------------------------------------------ */

/* A lineage id: NULL reads as 0. */
static int64_t col_id(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, i);
}

/* A malloc'd copy of a text column, NULL for NULL. */
static char *col_str(sqlite3_stmt *st, int i)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? kv_strdup(t) : NULL;
}

/* A real column: NULL reads as NaN. */
static double col_real(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* Parses a JSON column into *OUT (NULL for SQL NULL). Returns 0, or -1 with
 * the error naming program ID and column WHAT. */
static int col_json(kv_store *s, sqlite3_stmt *st, int i, int64_t id, const char *what,
                    json_t **out)
{
    *out = NULL;
    const char *t = (const char *)sqlite3_column_text(st, i);
    if (!t) return 0;
    *out = kv_json_loads(t);
    if (*out) return 0;
    return kv_store_fail(s, "program %lld: %s: invalid JSON in the store", (long long)id, what);
}

kv_program *kv_store_read_program(kv_store *s, sqlite3_stmt *st)
{
    kv_program *p = kv_program_new();
    p->id = sqlite3_column_int64(st, 0);
    p->parent_id = col_id(st, 1);
    p->other_parent_id = col_id(st, 2);
    p->island = sqlite3_column_int(st, 3);
    p->generation = sqlite3_column_int(st, 4);
    p->iteration = sqlite3_column_int64(st, 5);
    p->source = col_str(st, 6);
    p->mutator = col_str(st, 7);
    p->change_summary = col_str(st, 8);
    if (col_json(s, st, 9, p->id, "metrics", &p->metrics) != 0) goto fail;
    if (col_json(s, st, 10, p->id, "features", &p->features) != 0) goto fail;
    p->fitness = col_real(st, 11);
    const char *status = (const char *)sqlite3_column_text(st, 12);
    if (!status || kv_status_parse(status, &p->status) != 0) {
        kv_store_fail(s, "program %lld: unknown status '%s'", (long long)p->id,
                      status ? status : "(null)");
        goto fail;
    }
    p->status_reason = col_str(st, 13);
    p->is_migrant = sqlite3_column_int(st, 14);
    p->migrated_from = col_id(st, 15);
    const char *hex = (const char *)sqlite3_column_text(st, 16);
    char *end = NULL;
    p->code_hash = hex ? strtoull(hex, &end, 16) : 0;
    if (!hex || strlen(hex) != 16 || *end != '\0') {
        kv_store_fail(s, "program %lld: invalid code_hash '%s'", (long long)p->id,
                      hex ? hex : "(null)");
        goto fail;
    }
    p->created_at = col_real(st, 17);
    p->eval_seconds = col_real(st, 18);
    p->reason_code = col_str(st, 19);
    p->duplicate_of = col_id(st, 20);
    return p;
fail:
    kv_program_free(p);
    return NULL;
}

/* ---- inserting ------------------------------------------------------------ */

/* Inserts stage INDEX of program PID. Keys with a column of their own go
 * there when their JSON type fits; every other key goes to extra, so the
 * object reads back as it was (seconds as a real; "stage", when absent,
 * as INDEX). Returns 0 or -1. */
static int insert_stage(kv_store *s, int64_t pid, size_t index, json_t *stage)
{
    if (!json_is_object(stage))
        return kv_store_fail(s, "insert program: stage %zu is not a JSON object", index);
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_INSERT_STAGE);
    if (!st) return -1;
    json_int_t number = (json_int_t)index;
    const json_t *status = NULL, *metrics = NULL, *seconds = NULL, *reason = NULL;
    json_t *extra = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(stage, key, v)
    {
        if (strcmp(key, "stage") == 0 && json_is_integer(v))
            number = json_integer_value(v);
        else if (strcmp(key, "status") == 0 && json_is_string(v))
            status = v;
        else if (strcmp(key, "metrics") == 0)
            metrics = v;
        else if (strcmp(key, "seconds") == 0 && json_is_number(v))
            seconds = v;
        else if (strcmp(key, "reason") == 0 && json_is_string(v))
            reason = v;
        else
            json_object_set(extra, key, v);
    }
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)number);
    bind_str(st, 3, status ? json_string_value(status) : NULL);
    bind_json(st, 4, metrics);
    if (seconds)
        sqlite3_bind_double(st, 5, json_number_value(seconds));
    else
        sqlite3_bind_null(st, 5);
    bind_str(st, 6, reason ? json_string_value(reason) : NULL);
    bind_json(st, 7, json_object_size(extra) ? extra : NULL);
    int rc = kv_store_step_done(s, st, "insert stage");
    json_decref(extra);
    return rc;
}

/* Inserts artifact NAME of program PID: a string as is, anything else as
 * JSON text with is_json = 1. Returns 0 or -1. */
static int insert_artifact(kv_store *s, int64_t pid, const char *name, const json_t *v)
{
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_INSERT_ARTIFACT);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    if (json_is_string(v)) {
        sqlite3_bind_text(st, 3, json_string_value(v), (int)json_string_length(v), SQLITE_STATIC);
        sqlite3_bind_int(st, 4, 0);
    } else {
        bind_json(st, 3, v);
        sqlite3_bind_int(st, 4, 1);
    }
    return kv_store_step_done(s, st, "insert artifact");
}

/* Writes the program row, its stages and artifacts; *ID gets the new row id.
 * Runs inside a transaction or savepoint the caller undoes on failure. */
static int write_program(kv_store *s, const kv_program *p, int64_t *id)
{
    if (p->stages && !json_is_array(p->stages))
        return kv_store_fail(s, "insert program: stages must be a JSON array");
    if (p->artifacts && !json_is_object(p->artifacts))
        return kv_store_fail(s, "insert program: artifacts must be a JSON object");
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_INSERT_PROGRAM);
    if (!st) return -1;
    char hex[17];
    kv_hash_hex(p->code_hash, hex);
    bind_id(st, 1, p->parent_id);
    bind_id(st, 2, p->other_parent_id);
    sqlite3_bind_int(st, 3, p->island);
    sqlite3_bind_int(st, 4, p->generation);
    sqlite3_bind_int64(st, 5, p->iteration);
    bind_str(st, 6, p->source);
    bind_str(st, 7, p->mutator);
    bind_str(st, 8, p->change_summary);
    bind_json(st, 9, p->metrics);
    bind_json(st, 10, p->features);
    bind_real(st, 11, p->fitness);
    sqlite3_bind_text(st, 12, kv_status_name(p->status), -1, SQLITE_STATIC);
    bind_str(st, 13, p->status_reason);
    sqlite3_bind_int(st, 14, p->is_migrant ? 1 : 0);
    bind_id(st, 15, p->migrated_from);
    sqlite3_bind_text(st, 16, hex, 16, SQLITE_STATIC);
    bind_real(st, 17, p->created_at);
    bind_real(st, 18, p->eval_seconds);
    bind_str(st, 19, p->reason_code);
    bind_id(st, 20, p->duplicate_of);
    if (kv_store_step_done(s, st, "insert program") != 0) return -1;
    *id = sqlite3_last_insert_rowid(s->db);
    size_t i;
    json_t *v;
    json_array_foreach(p->stages, i, v)
    {
        if (insert_stage(s, *id, i, v) != 0) return -1;
    }
    const char *name;
    json_object_foreach(p->artifacts, name, v)
    {
        if (insert_artifact(s, *id, name, v) != 0) return -1;
    }
    return kv_store_write_scenarios(s, *id, &p->scenarios);
}

int kv_store_insert_program(kv_store *s, kv_program *p)
{
    int own = !s->in_txn; /* else join the caller's transaction, within a savepoint */
    if (!own && sqlite3_get_autocommit(s->db))
        return kv_store_fail(s, "insert program: the open transaction was rolled back by an"
                                " earlier error; call kv_store_rollback");
    if (kv_store_run(s, own ? KV_STMT_BEGIN_WRITE : KV_STMT_SAVEPOINT, "insert program: begin"))
        return -1;
    int64_t id = 0;
    if (write_program(s, p, &id) != 0) goto undo;
    if (kv_store_run(s, own ? KV_STMT_COMMIT : KV_STMT_RELEASE, "insert program: commit"))
        goto undo;
    p->id = id;
    return 0;
undo:
    /* The error is already set; undoing quietly keeps it. */
    if (own) {
        if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        sqlite3_exec(s->db, "ROLLBACK TO kv_insert; RELEASE kv_insert", NULL, NULL, NULL);
    }
    return -1;
}

int kv_store_update_placement(kv_store *s, const kv_program *p)
{
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_UPDATE_PLACEMENT);
    if (!st) return -1;
    bind_real(st, 1, p->fitness);
    bind_json(st, 2, p->features);
    sqlite3_bind_int64(st, 3, p->id);
    if (kv_store_step_done(s, st, "update placement") != 0) return -1;
    if (sqlite3_changes(s->db) != 1)
        return kv_store_fail(s, "update placement: program %lld is not in the store",
                             (long long)p->id);
    return 0;
}

/* ---- stages and artifacts ------------------------------------------------- */

/* Rebuilds one stage object from the current row of ST. Returns it or NULL. */
static json_t *read_stage(kv_store *s, sqlite3_stmt *st, int64_t pid)
{
    json_t *stage = json_object();
    json_object_set_new(stage, "stage", json_integer(sqlite3_column_int64(st, 0)));
    const char *status = (const char *)sqlite3_column_text(st, 1);
    if (status) json_object_set_new(stage, "status", json_string(status));
    json_t *metrics = NULL, *extra = NULL;
    if (col_json(s, st, 2, pid, "stage metrics", &metrics) != 0) goto fail;
    if (metrics) json_object_set_new(stage, "metrics", metrics);
    if (sqlite3_column_type(st, 3) != SQLITE_NULL)
        json_object_set_new(stage, "seconds", json_real(sqlite3_column_double(st, 3)));
    const char *reason = (const char *)sqlite3_column_text(st, 4);
    if (reason) json_object_set_new(stage, "reason", json_string(reason));
    if (col_json(s, st, 5, pid, "stage extra", &extra) != 0) goto fail;
    if (extra) {
        json_object_update(stage, extra);
        json_decref(extra);
    }
    return stage;
fail:
    json_decref(stage);
    return NULL;
}

/* Rebuilds one artifact value from the current row of ST into ARTIFACTS. */
static int read_artifact(kv_store *s, sqlite3_stmt *st, int64_t pid, json_t *artifacts)
{
    const char *name = (const char *)sqlite3_column_text(st, 0);
    const char *text = (const char *)sqlite3_column_text(st, 1);
    json_t *v = NULL;
    if (sqlite3_column_int(st, 2)) {
        if (col_json(s, st, 1, pid, "artifact", &v) != 0) return -1;
        if (!v) v = json_null();
    } else if (text) {
        int n = sqlite3_column_bytes(st, 1);
        v = json_stringn(text, (size_t)n);
        if (!v) v = json_stringn_nocheck(text, (size_t)n); /* not UTF-8: keep the bytes */
    } else {
        v = json_null();
    }
    json_object_set_new(artifacts, name ? name : "", v);
    return 0;
}

int kv_store_load_details(kv_store *s, kv_program *p)
{
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_GET_STAGES);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, p->id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *stage = read_stage(s, st, p->id);
        if (!stage) goto fail;
        if (!p->stages) p->stages = json_array();
        json_array_append_new(p->stages, stage);
    }
    if (rc != SQLITE_DONE) goto db_fail;
    sqlite3_reset(st);

    st = kv_store_stmt(s, KV_STMT_GET_ARTIFACTS);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, p->id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!p->artifacts) p->artifacts = json_object();
        if (read_artifact(s, st, p->id, p->artifacts) != 0) goto fail;
    }
    if (rc != SQLITE_DONE) goto db_fail;
    sqlite3_reset(st);
    return kv_store_load_scenarios(s, p);
db_fail:
    kv_store_db_fail(s, "load stages and artifacts");
fail:
    sqlite3_reset(st);
    return -1;
}
