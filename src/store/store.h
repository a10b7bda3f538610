/* The run store: one SQLite file per run, WAL mode. The only module that
 * speaks SQL. Everything a run learns lands here the moment it is known, so
 * `kill -9` loses at most the children in flight and a run can resume from
 * the file alone. A reader (status, best, the dashboard) may open the same
 * file while a run writes it.
 *
 * Tables: meta (key/value: manifest and run state), programs, evaluations
 * (one row per cascade stage), artifacts, events. */
#ifndef KV_STORE_STORE_H
#define KV_STORE_STORE_H

#include "store/program.h"

#include <jansson.h>
#include <stdint.h>

typedef struct kv_store kv_store;

enum { KV_STORE_READONLY = 0, KV_STORE_CREATE = 1, KV_STORE_READWRITE = 2 };

/* Opens PATH. MODE: KV_STORE_CREATE creates the file and schema when missing;
 * KV_STORE_READWRITE requires an existing kevolve store; KV_STORE_READONLY
 * opens for reading (works while another process writes). Returns 0, or -1
 * with a malloc'd message in *err ("run.db: not a kevolve store", ...). */
int kv_store_open(const char *path, int mode, kv_store **out, char **err);
void kv_store_close(kv_store *s);
/* Last error text of this connection (valid until the next call). */
const char *kv_store_errmsg(kv_store *s);

/* Transactions: every write below may run inside one; nesting is not allowed. */
int kv_store_begin(kv_store *s);
int kv_store_commit(kv_store *s);
int kv_store_rollback(kv_store *s);

/* Run metadata: the manifest (config text, seed, version, host, compilers) and
 * the run state (next iteration, RNG state, ...). Values are text. */
int kv_store_set_meta(kv_store *s, const char *key, const char *value);
/* Returns a malloc'd copy, or NULL when absent. */
char *kv_store_get_meta(kv_store *s, const char *key);

/* Inserts P with its stages (evaluations table) and artifacts, sets p->id.
 * Returns 0 or -1. */
int kv_store_insert_program(kv_store *s, kv_program *p);
/* Records search's view of a stored program: its fitness and feature bins. */
int kv_store_update_placement(kv_store *s, const kv_program *p);
/* Loads one program (with metrics, artifacts, stages, features). NULL when absent. */
kv_program *kv_store_get_program(kv_store *s, int64_t id);

/* Calls FN for every program in id order (ascending), STATUS filter:
 * -1 = all, else only that status. The program passed is owned by the
 * iterator and freed after FN returns (clone it to keep it). Sources are
 * loaded only when WITH_SOURCE. Returns 0, or the first non-zero FN result,
 * or -1 on a database error. */
typedef int (*kv_program_fn)(kv_program *p, void *ud);
int kv_store_each_program(kv_store *s, int status, int with_source, kv_program_fn fn, void *ud);

/* Counts. */
int64_t kv_store_count_programs(kv_store *s, int status); /* -1 = all */
int64_t kv_store_max_iteration(kv_store *s);
/* The OK program with the highest fitness (ties: lowest id); NULL when none. */
kv_program *kv_store_best_program(kv_store *s);
/* Id of a program with this code hash (any status but duplicate), or 0. */
int64_t kv_store_find_by_hash(kv_store *s, uint64_t code_hash);

/* Appends an event (run started, resumed, migration, interrupted, ...).
 * DATA may be NULL; it is not stolen. */
int kv_store_add_event(kv_store *s, const char *kind, const json_t *data);
/* Counts programs per status into counts[KV_STATUS_COUNT]. */
int kv_store_status_counts(kv_store *s, int64_t counts[KV_STATUS_COUNT]);

#endif
