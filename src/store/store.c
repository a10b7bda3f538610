/* The run store's connection: opening (with schema checks and migrations),
 * the statement cache, errors, transactions, run metadata and events.
 * Program rows live in store_program.c; the schema in schema.c.
 *
 * Durability: the file is in WAL mode with synchronous=NORMAL. A commit has
 * been written to the WAL file (not yet fsync'ed) when kv_store_commit (or an
 * insert outside a transaction) returns, so it survives the process being
 * killed (kill -9, a crash, the OOM killer): the operating system still
 * holds the data. Only a power loss or kernel crash can roll back the last
 * few commits, and even then the file stays consistent and a run resumes
 * from it. synchronous=FULL would fsync every commit to close that gap too,
 * at a cost per program that the evaluation loop does not need to pay.
 *
 * Concurrency: one writer and any number of readers (other processes) at
 * once; readers see each commit as it lands and never block the writer.
 * busy_timeout makes a connection wait (up to KV_BUSY_TIMEOUT_MS) instead of
 * failing when another holds a lock it needs. Writes start with BEGIN
 * IMMEDIATE so a writer takes its lock up front. A kv_store is one
 * connection and is not meant for use by several threads at once. */
#include "store/schema.h"
#include "store/store_internal.h"

#include <kevolve/kevolve.h>
#include "util/buf.h"
#include "util/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define KV_BUSY_TIMEOUT_MS 5000

static const char *const stmt_sql[KV_STMT_COUNT] = {
    [KV_STMT_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [KV_STMT_BEGIN_READ] = "BEGIN",
    [KV_STMT_COMMIT] = "COMMIT",
    [KV_STMT_ROLLBACK] = "ROLLBACK",
    [KV_STMT_SAVEPOINT] = "SAVEPOINT kv_insert",
    [KV_STMT_RELEASE] = "RELEASE kv_insert",
    [KV_STMT_GET_META] = "SELECT value FROM meta WHERE key = ?1",
    [KV_STMT_SET_META] = "INSERT INTO meta(key, value) VALUES(?1, ?2)"
                         " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    [KV_STMT_DELETE_META] = "DELETE FROM meta WHERE key = ?1",
    [KV_STMT_ADD_EVENT] = "INSERT INTO events(time, kind, data) VALUES(?1, ?2, ?3)",
    [KV_STMT_INSERT_PROGRAM] =
        "INSERT INTO programs(parent_id, other_parent_id, island, generation, iteration, source,"
        " mutator, change_summary, metrics, features, fitness, status, status_reason, is_migrant,"
        " migrated_from, code_hash, created_at, eval_seconds, reason_code, duplicate_of)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
        " ?19, ?20)",
    [KV_STMT_INSERT_STAGE] = "INSERT INTO evaluations(program_id, stage, status, metrics, seconds,"
                             " reason, extra) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [KV_STMT_INSERT_ARTIFACT] =
        "INSERT INTO artifacts(program_id, name, value, is_json) VALUES(?1, ?2, ?3, ?4)",
    [KV_STMT_UPDATE_PLACEMENT] = "UPDATE programs SET fitness = ?1, features = ?2 WHERE id = ?3",
    [KV_STMT_FIND_BY_HASH] = "SELECT id FROM programs WHERE code_hash = ?1"
                             " AND status <> 'duplicate' ORDER BY id LIMIT 1",
    [KV_STMT_GET_PROGRAM] = "SELECT " KV_PROGRAM_COLUMNS("source") " FROM programs WHERE id = ?1",
    [KV_STMT_GET_STAGES] = "SELECT stage, status, metrics, seconds, reason, extra"
                           " FROM evaluations WHERE program_id = ?1 ORDER BY id",
    [KV_STMT_GET_ARTIFACTS] =
        "SELECT name, value, is_json FROM artifacts WHERE program_id = ?1 ORDER BY id",
    [KV_STMT_INSERT_SCENARIO] =
        "INSERT INTO scenario_results(program_id, scenario, task, backend, device, device_index,"
        " kind, weight, median_us, iqr_us, baseline_us, speedup, roofline_fraction, max_abs_err,"
        " tol_ratio, screened, energy_j)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    [KV_STMT_GET_SCENARIOS] = "SELECT " KV_SCENARIO_COLUMNS " FROM scenario_results"
                              " WHERE program_id = ?1 ORDER BY rowid",
};

/* Replaces the connection's error text with MSG (taken). */
static void set_err(kv_store *s, char *msg)
{
    free(s->err);
    s->err = msg;
}

/* The kind of failure behind SQLite result CODE (extended or primary). */
static kv_store_fault classify(int code)
{
    switch (code & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return KV_STORE_FAULT_NONE;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return KV_STORE_FAULT_DAMAGED;
    case SQLITE_FULL:
        return KV_STORE_FAULT_FULL;
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_NOLFS:
        return KV_STORE_FAULT_IO;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return KV_STORE_FAULT_BUSY;
    default:
        return KV_STORE_FAULT_OTHER;
    }
}

/* Sets the error text from FMT/AP and its kind: FAULT, or when that is
 * NONE, the kind of SQLite's last result (OTHER when that was a success). */
static int fail_v(kv_store *s, kv_store_fault fault, const char *fmt, va_list ap)
{
    int code = s->db ? sqlite3_errcode(s->db) : SQLITE_OK;
    if (fault == KV_STORE_FAULT_NONE) {
        fault = classify(code);
        if (fault == KV_STORE_FAULT_NONE) fault = KV_STORE_FAULT_OTHER;
    }
    s->fault = fault;
    s->cause = classify(code) == fault ? (code & 0xff) : 0;
    kv_buf b = KV_BUF_INIT;
    kv_buf_printf(&b, "%s: ", s->path);
    kv_buf_vprintf(&b, fmt, ap);
    set_err(s, kv_buf_steal(&b));
    return -1;
}

int kv_store_fail(kv_store *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(s, KV_STORE_FAULT_NONE, fmt, ap);
    va_end(ap);
    return -1;
}

int kv_store_fail_damaged(kv_store *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(s, KV_STORE_FAULT_DAMAGED, fmt, ap);
    va_end(ap);
    return -1;
}

int kv_store_db_fail(kv_store *s, const char *what)
{
    return kv_store_fail(s, "%s: %s", what, sqlite3_errmsg(s->db));
}

void kv_store_clear_err(kv_store *s)
{
    if (s->err && *s->err) set_err(s, kv_strdup(""));
    s->fault = KV_STORE_FAULT_NONE;
    s->cause = 0;
}

kv_store_fault kv_store_last_fault(kv_store *s)
{
    return s->err && *s->err ? (kv_store_fault)s->fault : KV_STORE_FAULT_NONE;
}

int kv_store_fault_exit(kv_store_fault fault)
{
    switch (fault) {
    case KV_STORE_FAULT_NONE:
        return KV_EXIT_OK;
    case KV_STORE_FAULT_MISSING:
        return KV_EXIT_USAGE;
    case KV_STORE_FAULT_DAMAGED:
        return KV_EXIT_STORE;
    case KV_STORE_FAULT_FULL:
    case KV_STORE_FAULT_IO:
        return KV_EXIT_IO;
    case KV_STORE_FAULT_BUSY:
        return KV_EXIT_BUSY;
    default:
        return KV_EXIT_FAILURE;
    }
}

/* DETAIL without a leading "PATH: ". */
static const char *strip_path(const char *path, const char *detail)
{
    size_t n = strlen(path);
    if (detail && strncmp(detail, path, n) == 0 && strncmp(detail + n, ": ", 2) == 0)
        return detail + n + 2;
    return detail ? detail : "";
}

/* The message of a failure of kind FAULT with SQLite cause CAUSE (0: none). */
static char *fault_message(const char *path, kv_store_fault fault, int cause, const char *detail)
{
    const char *why = strip_path(path, detail);
    switch (fault) {
    case KV_STORE_FAULT_MISSING:
        return kv_asprintf("%s: no such file", path);
    case KV_STORE_FAULT_DAMAGED:
        /* SQLite's own wording, not the query that met it, so that every
         * command says the same about the same file. */
        if (cause == SQLITE_CORRUPT)
            return kv_asprintf("%s: the store is damaged (%s); restore a copy, or start a new "
                               "run in its place with `kevolve run --force`",
                               path, sqlite3_errstr(cause));
        return kv_asprintf("%s: the store cannot be used: %s", path, why);
    case KV_STORE_FAULT_FULL:
        return kv_asprintf("disk full writing %s (%s)", path, why);
    case KV_STORE_FAULT_IO:
        return kv_asprintf("I/O error on %s (%s)", path, why);
    case KV_STORE_FAULT_BUSY:
        return kv_asprintf("%s: another process holds the store's write lock (%s)", path, why);
    default:
        return kv_asprintf("%s: %s", path, why);
    }
}

char *kv_store_fault_message(const char *path, kv_store_fault fault, const char *detail)
{
    return fault_message(path, fault, 0, detail);
}

char *kv_store_fault_text(kv_store *s)
{
    return fault_message(s->path, kv_store_last_fault(s), s->cause, kv_store_errmsg(s));
}

const char *kv_store_errmsg(kv_store *s)
{
    return s->err ? s->err : "";
}

sqlite3_stmt *kv_store_stmt(kv_store *s, kv_stmt which)
{
    if (!s->stmts[which]) {
        if (sqlite3_prepare_v3(s->db, stmt_sql[which], -1, SQLITE_PREPARE_PERSISTENT,
                               &s->stmts[which], NULL) != SQLITE_OK) {
            kv_store_fail(s, "cannot prepare \"%s\": %s", stmt_sql[which], sqlite3_errmsg(s->db));
            sqlite3_finalize(s->stmts[which]);
            s->stmts[which] = NULL;
        }
    }
    return s->stmts[which];
}

int kv_store_step_done(kv_store *s, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
        sqlite3_reset(st);
        return 0;
    }
    kv_store_db_fail(s, what);
    sqlite3_reset(st);
    return -1;
}

int kv_store_run(kv_store *s, kv_stmt which, const char *what)
{
    sqlite3_stmt *st = kv_store_stmt(s, which);
    return st ? kv_store_step_done(s, st, what) : -1;
}

/* Runs one uncached statement; the first row's first column goes to OUT
 * (malloc'd, may be NULL) when OUT is not NULL. Returns 0 or -1. */
static int exec_text(kv_store *s, const char *sql, char **out)
{
    sqlite3_stmt *st = NULL;
    if (out) *out = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return kv_store_db_fail(s, sql);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && out) *out = kv_strdup((const char *)sqlite3_column_text(st, 0));
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        kv_store_db_fail(s, sql);
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    return 0;
}

/* Reads the schema version: sets *version (0 for an empty database, which
 * only KV_STORE_CREATE initialises). Returns 0, or -1 with the error set
 * ("not a kevolve store" when the file is SQLite but not ours). */
static int read_schema_version(kv_store *s, int mode, int *version)
{
    char *n_objects = NULL, *has_meta = NULL, *text = NULL;
    if (exec_text(s, "SELECT count(*) FROM sqlite_master", &n_objects) != 0) return -1;
    int empty = n_objects && strcmp(n_objects, "0") == 0;
    free(n_objects);
    if (empty) {
        *version = 0;
        if (mode == KV_STORE_CREATE) return 0;
        return kv_store_fail_damaged(s, "not a kevolve store (an empty database)");
    }
    if (exec_text(s, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
                  &has_meta) != 0)
        return -1;
    if (!has_meta) return kv_store_fail_damaged(s, "not a kevolve store (no meta table)");
    free(has_meta);
    if (exec_text(s, "SELECT value FROM meta WHERE key = 'schema_version'", &text) != 0) return -1;
    char *end = NULL;
    long v = text ? strtol(text, &end, 10) : 0;
    int valid = text && end != text && *end == '\0' && v >= 1 && v < 1000000;
    free(text);
    if (!valid)
        return kv_store_fail_damaged(s, "not a kevolve store (no valid meta.schema_version)");
    *version = (int)v;
    if (v > kv_schema_version())
        return kv_store_fail_damaged(
            s,
            "written by a newer kevolve (schema version %ld; this build reads up"
            " to %d)",
            v, kv_schema_version());
    return 0;
}

/* Write connections: WAL, synchronous, and the schema created or migrated
 * inside one write transaction (so two processes creating the same file
 * cannot both initialise it). Returns 0 or -1. */
static int prepare_for_writing(kv_store *s, int mode)
{
    char *journal = NULL;
    if (exec_text(s, "PRAGMA journal_mode = WAL", &journal) != 0) return -1;
    int ok = journal && (strcmp(journal, "wal") == 0 || strcmp(journal, "memory") == 0);
    if (!ok) {
        kv_store_fail(s, "cannot use WAL mode (journal mode stays '%s')", journal ? journal : "?");
        free(journal);
        return -1;
    }
    free(journal);
    if (exec_text(s, "PRAGMA synchronous = NORMAL", NULL) != 0) return -1;
    if (exec_text(s, "BEGIN IMMEDIATE", NULL) != 0) return -1;
    int version = 0;
    if (read_schema_version(s, mode, &version) != 0) goto fail;
    if (version < kv_schema_version()) {
        char *err = NULL;
        if (kv_schema_migrate(s->db, version, &err) != 0) {
            kv_store_fail(s, "%s", err);
            free(err);
            goto fail;
        }
    }
    if (exec_text(s, "COMMIT", NULL) != 0) goto fail;
    return 0;
fail:
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

/* Read-only connections read the schema of this build's version: an older
 * store is shimmed in temporary tables where it can be (its file is left as
 * it is), else it must be opened read-write once. Returns 0 or -1. */
static int check_for_reading(kv_store *s)
{
    int version = 0;
    if (read_schema_version(s, KV_STORE_READONLY, &version) != 0) return -1;
    char *err = NULL;
    if (version < kv_schema_version() && kv_schema_read_shim(s->db, version, &err) != 0) {
        kv_store_fail(s, "%s", err);
        free(err);
        return -1;
    }
    return 0;
}

/* "file:PATH?immutable=1" with PATH's URI specials escaped (SQLite URIs). */
static char *immutable_uri(const char *path)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "file:");
    for (const char *p = path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#')
            kv_buf_printf(&b, "%%%02X", (unsigned char)*p);
        else
            kv_buf_putc(&b, *p);
    }
    kv_buf_puts(&b, "?immutable=1");
    return kv_buf_steal(&b);
}

/* The first read of the file: a file that is not SQLite, or one whose WAL
 * index cannot be opened, fails here. Returns SQLite's result code. */
static int probe(kv_store *s)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(s->db);
    sqlite3_finalize(st);
    return rc;
}

/* A store on a read-only file system (an archive, a shared results folder)
 * cannot get the WAL index (-shm) that reading in WAL mode needs. When no
 * write is left in its -wal (a run that ended closes it empty or removes
 * it), the file alone holds everything, and SQLite may read it as
 * immutable: nobody can write where nothing can be created. Reopens S that
 * way. Returns SQLite's result code of the probe (SQLITE_CANTOPEN, with a
 * message that says why, when writes are left in the -wal). */
static int reopen_immutable(kv_store *s)
{
    char *wal = kv_asprintf("%s-wal", s->path);
    struct stat st;
    int pending = stat(wal, &st) == 0 && st.st_size > 0;
    free(wal);
    if (pending) {
        kv_store_fail(s,
                      "cannot read: its last writes are in %s-wal, and its folder cannot be "
                      "written to open them (a run that did not end cleanly): copy the "
                      "folder somewhere writable and read the copy",
                      s->path);
        return SQLITE_CANTOPEN;
    }
    sqlite3_close(s->db);
    s->db = NULL;
    char *uri = immutable_uri(s->path);
    int rc = sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    free(uri);
    if (rc != SQLITE_OK) return rc;
    sqlite3_extended_result_codes(s->db, 1);
    return probe(s);
}

int kv_store_open(const char *path, int mode, kv_store **out, char **err)
{
    return kv_store_open_ex(path, mode, out, err, NULL);
}

int kv_store_open_ex(const char *path, int mode, kv_store **out, char **err, kv_store_fault *fault)
{
    *out = NULL;
    *err = NULL;
    if (fault) *fault = KV_STORE_FAULT_NONE;
    if (mode != KV_STORE_READONLY && mode != KV_STORE_CREATE && mode != KV_STORE_READWRITE) {
        *err = kv_asprintf("%s: invalid open mode %d", path, mode);
        if (fault) *fault = KV_STORE_FAULT_OTHER;
        return -1;
    }
    struct stat st;
    if (mode != KV_STORE_CREATE && stat(path, &st) != 0) {
        kv_store_fault f = errno == ENOENT ? KV_STORE_FAULT_MISSING : KV_STORE_FAULT_IO;
        *err = f == KV_STORE_FAULT_MISSING ? kv_asprintf("%s: no such file", path)
                                           : kv_asprintf("%s: %s", path, strerror(errno));
        if (fault) *fault = f;
        return -1;
    }
    if (mode != KV_STORE_CREATE && S_ISDIR(st.st_mode)) {
        *err = kv_asprintf("%s: is a folder, not a run's store (run.db)", path);
        if (fault) *fault = KV_STORE_FAULT_MISSING;
        return -1;
    }
    kv_store *s = kv_calloc(1, sizeof *s);
    s->path = kv_strdup(path);
    s->readonly = mode == KV_STORE_READONLY;
    int flags = s->readonly
                    ? SQLITE_OPEN_READONLY
                    : SQLITE_OPEN_READWRITE | (mode == KV_STORE_CREATE ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        kv_store_fail(s, "cannot open: %s", s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, KV_BUSY_TIMEOUT_MS);
    int rc = probe(s);
    if (s->readonly && (rc & 0xff) == SQLITE_CANTOPEN) {
        rc = reopen_immutable(s);
        if (rc == SQLITE_CANTOPEN && *kv_store_errmsg(s)) goto fail;
    }
    if ((rc & 0xff) == SQLITE_NOTADB) {
        kv_store_fail_damaged(s, "not a kevolve store (not an SQLite database)");
        goto fail;
    }
    if (rc != SQLITE_OK) {
        kv_store_db_fail(s, "cannot read");
        goto fail;
    }
    if (exec_text(s, "PRAGMA foreign_keys = ON", NULL) != 0) goto fail;
    if (s->readonly ? check_for_reading(s) : prepare_for_writing(s, mode)) goto fail;
    kv_store_clear_err(s);
    *out = s;
    return 0;
fail:
    *err = kv_store_fault_text(s);
    if (fault) *fault = kv_store_last_fault(s);
    kv_store_close(s);
    return -1;
}

int kv_store_checkpoint(kv_store *s)
{
    if (s->readonly) return 0;
    int log = 0, moved = 0;
    int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &moved);
    if (rc == SQLITE_OK) return 0;
    return kv_store_fail(s,
                         "cannot empty the write-ahead log into the database (%d of %d pages "
                         "moved): %s",
                         moved, log, sqlite3_errstr(rc));
}

void kv_store_close(kv_store *s)
{
    if (!s) return;
    for (int i = 0; i < KV_STMT_COUNT; i++)
        sqlite3_finalize(s->stmts[i]);
    if (s->db && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); /* uncommitted work is discarded */
    sqlite3_close(s->db);
    free(s->path);
    free(s->err);
    free(s);
}

int kv_store_begin(kv_store *s)
{
    if (s->in_txn) return kv_store_fail(s, "begin: a transaction is already open (no nesting)");
    if (kv_store_run(s, s->readonly ? KV_STMT_BEGIN_READ : KV_STMT_BEGIN_WRITE, "begin") != 0)
        return -1;
    s->in_txn = 1;
    return 0;
}

int kv_store_commit(kv_store *s)
{
    if (!s->in_txn) return kv_store_fail(s, "commit: no transaction is open");
    int rc = kv_store_run(s, KV_STMT_COMMIT, "commit");
    /* A failed COMMIT may leave the transaction open (the caller can retry or
     * roll back) or may have rolled it back already. */
    s->in_txn = !sqlite3_get_autocommit(s->db);
    return rc;
}

int kv_store_rollback(kv_store *s)
{
    if (!s->in_txn) return kv_store_fail(s, "rollback: no transaction is open");
    int rc = 0;
    if (!sqlite3_get_autocommit(s->db)) rc = kv_store_run(s, KV_STMT_ROLLBACK, "rollback");
    s->in_txn = !sqlite3_get_autocommit(s->db);
    return rc;
}

int kv_store_set_meta(kv_store *s, const char *key, const char *value)
{
    sqlite3_stmt *st = kv_store_stmt(s, value ? KV_STMT_SET_META : KV_STMT_DELETE_META);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (value) sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    return kv_store_step_done(s, st, "set meta");
}

char *kv_store_get_meta(kv_store *s, const char *key)
{
    kv_store_clear_err(s);
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_GET_META);
    if (!st) return NULL;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    char *value = NULL;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        value = kv_strdup((const char *)sqlite3_column_text(st, 0));
    else if (rc != SQLITE_DONE)
        kv_store_db_fail(s, "get meta");
    sqlite3_reset(st);
    return value;
}

int kv_store_add_event(kv_store *s, const char *kind, const json_t *data)
{
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_ADD_EVENT);
    if (!st) return -1;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    sqlite3_bind_double(st, 1, (double)now.tv_sec + (double)now.tv_nsec * 1e-9);
    sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    if (data)
        sqlite3_bind_text(st, 3, kv_json_dumps(data), -1, free);
    else
        sqlite3_bind_null(st, 3);
    return kv_store_step_done(s, st, "add event");
}

int kv_store_check(kv_store *s)
{
    char *verdict = NULL;
    if (exec_text(s, "PRAGMA quick_check(1)", &verdict) != 0) return -1;
    int ok = verdict && strcmp(verdict, "ok") == 0;
    if (!ok) {
        kv_store_fail_damaged(s, "integrity check: %s", verdict ? verdict : "no answer");
        s->cause = SQLITE_CORRUPT;
    }
    free(verdict);
    return ok ? 0 : -1;
}
