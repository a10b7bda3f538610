/* Internals shared by the store's files (store.c: connection, transactions,
 * meta, events; store_program.c: program rows). Not for other modules. */
#ifndef KV_STORE_STORE_INTERNAL_H
#define KV_STORE_STORE_INTERNAL_H

#include "store/store.h"

#include <sqlite3.h>

/* Statements prepared once per connection and kept (the hot paths). */
typedef enum kv_stmt {
    KV_STMT_BEGIN_WRITE, /* BEGIN IMMEDIATE: take the write lock now, so no deadlock later */
    KV_STMT_BEGIN_READ,  /* BEGIN: a consistent snapshot for a read-only connection */
    KV_STMT_COMMIT,
    KV_STMT_ROLLBACK,
    KV_STMT_SAVEPOINT, /* insert_program inside the caller's transaction */
    KV_STMT_RELEASE,
    KV_STMT_GET_META,
    KV_STMT_SET_META,
    KV_STMT_DELETE_META,
    KV_STMT_ADD_EVENT,
    KV_STMT_INSERT_PROGRAM,
    KV_STMT_INSERT_STAGE,
    KV_STMT_INSERT_ARTIFACT,
    KV_STMT_UPDATE_PLACEMENT,
    KV_STMT_FIND_BY_HASH,
    KV_STMT_GET_PROGRAM,
    KV_STMT_GET_STAGES,
    KV_STMT_GET_ARTIFACTS,
    KV_STMT_INSERT_SCENARIO,
    KV_STMT_GET_SCENARIOS,
    KV_STMT_COUNT
} kv_stmt;

struct kv_store {
    sqlite3 *db;
    char *path;   /* as given to kv_store_open, for messages */
    int readonly; /* opened KV_STORE_READONLY */
    int in_txn;   /* 1 between kv_store_begin and kv_store_commit/rollback */
    char *err;    /* last error ("" when none), malloc'd */
    int fault;    /* kv_store_fault of the last error */
    int cause;    /* SQLite's primary result code behind it (0: none) */
    sqlite3_stmt *stmts[KV_STMT_COUNT];
};

/* The columns a program is read with, in the order kv_store_read_program
 * expects; KV_PROGRAM_COLUMNS(src) puts SRC (source or NULL) in place. */
#define KV_PROGRAM_COLUMNS(src)                                                                    \
    "id, parent_id, other_parent_id, island, generation, iteration, " src ", mutator, "            \
    "change_summary, metrics, features, fitness, status, status_reason, is_migrant, "              \
    "migrated_from, code_hash, created_at, eval_seconds, reason_code, duplicate_of"

/* The columns a scenario row is read with (kv_store_read_scenario). */
#define KV_SCENARIO_COLUMNS                                                                        \
    "scenario, kind, weight, median_us, iqr_us, baseline_us, speedup, roofline_fraction, "         \
    "max_abs_err, tol_ratio, energy_j, screened, task, backend, device, device_index, program_id"

/* The cached statement WHICH, ready to bind (NULL with the error set when it
 * cannot be prepared). The caller resets it after use (kv_store_step_done
 * does). */
sqlite3_stmt *kv_store_stmt(kv_store *s, kv_stmt which);
/* Steps ST once expecting no row, then resets it. Returns 0, or -1 with the
 * error "WHAT: <sqlite message>" set. */
int kv_store_step_done(kv_store *s, sqlite3_stmt *st, const char *what);
/* Runs the cached statement WHICH (no parameters, no rows): 0 or -1. */
int kv_store_run(kv_store *s, kv_stmt which, const char *what);
/* Sets the error to "PATH: WHAT: <sqlite message>"; returns -1. */
int kv_store_db_fail(kv_store *s, const char *what);
/* Sets the error to "PATH: <formatted text>" (of kind KV_STORE_FAULT_OTHER
 * unless SQLite's last result names one); returns -1. */
int kv_store_fail(kv_store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the error as kv_store_fail, of kind KV_STORE_FAULT_DAMAGED. */
int kv_store_fail_damaged(kv_store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empties the error (for calls whose NULL/0 result may mean "absent"). */
void kv_store_clear_err(kv_store *s);

/* Reads the current row of ST (columns KV_PROGRAM_COLUMNS) into a new
 * program (stages and artifacts not loaded). Returns it, or NULL with the
 * error set (invalid JSON, unknown status). */
kv_program *kv_store_read_program(kv_store *s, sqlite3_stmt *st);

/* Loads the stages and artifacts of P (p->id) into p->stages and
 * p->artifacts (left NULL when it has none), and its scenario rows into
 * p->scenarios. Returns 0 or -1. */
int kv_store_load_details(kv_store *s, kv_program *p);

/* Writes P's scenario rows (program ID), inside the caller's transaction.
 * Returns 0 or -1. */
int kv_store_write_scenarios(kv_store *s, int64_t id, const kv_scenario_results *r);
/* Reads P's scenario rows (p->id) into p->scenarios. Returns 0 or -1. */
int kv_store_load_scenarios(kv_store *s, kv_program *p);

#endif
