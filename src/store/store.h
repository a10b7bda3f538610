/* The run store: one SQLite file per run, WAL mode. The only module that
 * speaks SQL. Everything a run learns lands here the moment it is known, so
 * `kill -9` loses at most the children in flight and a run can resume from
 * the file alone. A reader (status, best, the dashboard) may open the same
 * file while a run writes it.
 *
 * Tables: meta (key/value: manifest and run state), programs, evaluations
 * (one row per cascade stage), artifacts, events. The schema and its
 * migrations are in schema.c.
 *
 * Durability: WAL with synchronous=NORMAL. A commit survives the process
 * being killed (kill -9, crash); a power loss or kernel crash may roll back
 * the last few commits but leaves the file consistent. */
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
 * with a malloc'd message in *err ("run.db: not a kevolve store", ...).
 * PATH ":memory:" with KV_STORE_CREATE gives a private in-memory store
 * (tests). A store from an older schema is migrated when opened for
 * writing; one from a newer kevolve is refused. */
int kv_store_open(const char *path, int mode, kv_store **out, char **err);

/* What kind of failure a store call met: one kind, one exit code
 * (kv_store_fault_exit), the same in every subcommand. */
typedef enum kv_store_fault {
    KV_STORE_FAULT_NONE = 0,
    KV_STORE_FAULT_MISSING, /* no such file */
    KV_STORE_FAULT_DAMAGED, /* not SQLite, corrupt, not a kevolve store, or a newer schema */
    KV_STORE_FAULT_FULL,    /* the disk (or quota) is full */
    KV_STORE_FAULT_IO,      /* an I/O error, a read-only file or folder, no permission */
    KV_STORE_FAULT_BUSY,    /* another connection held the write lock past the busy timeout */
    KV_STORE_FAULT_OTHER    /* anything else (out of memory, a bug) */
} kv_store_fault;

/* kv_store_open that also says, on failure, which kind it was (*FAULT may be
 * NULL). */
int kv_store_open_ex(const char *path, int mode, kv_store **out, char **err, kv_store_fault *fault);
/* The kind of the last failure of S (KV_STORE_FAULT_NONE when the last call
 * succeeded or failed for a reason of its own, like "absent"). */
kv_store_fault kv_store_last_fault(kv_store *s);
/* The KV_EXIT_* code for FAULT: DAMAGED 3 (KV_EXIT_STORE), FULL and IO 5
 * (KV_EXIT_IO), BUSY 4, MISSING 2, others 1. */
int kv_store_fault_exit(kv_store_fault fault);
/* The message for a failure of kind FAULT of the store at PATH, worded the
 * same whatever the subcommand: "PATH: the store is damaged (REASON): ...".
 * DETAIL is the store's own text (kv_store_errmsg), used for kinds without a
 * fixed wording. Malloc'd. */
char *kv_store_fault_message(const char *path, kv_store_fault fault, const char *detail);
/* Checks the whole file's integrity (SQLite's quick_check: reads every
 * page, so it takes time on a large store). Returns 0, or -1 with the
 * error set (KV_STORE_FAULT_DAMAGED when the file is damaged). */
int kv_store_check(kv_store *s);
/* The message for the last failure of S, as kv_store_fault_message. Malloc'd. */
char *kv_store_fault_text(kv_store *s);
/* Closes S (NULL is fine); a transaction still open is rolled back. */
void kv_store_close(kv_store *s);
/* Empties the write-ahead log into the database file and truncates it
 * (wal_checkpoint(TRUNCATE)), so that the file alone holds every result:
 * what a read-only copy of the run reads. A finished run calls it; closing
 * does the same only when nothing stands in its way, and says nothing when
 * something does. Returns 0 (also for a store opened read-only: nothing to
 * do), or -1 with the store's error: FULL or IO when the database cannot
 * grow, BUSY when a reader (a dashboard) kept the log in use past the busy
 * timeout. */
int kv_store_checkpoint(kv_store *s);
/* Last error text of this connection, "PATH: what: why" (valid until the
 * next call). Calls whose NULL/0 result may mean "absent" (get_meta,
 * get_program, best_program, find_by_hash) leave it "" when nothing failed. */
const char *kv_store_errmsg(kv_store *s);

/* Transactions: every write below may run inside one; nesting is not allowed
 * (a second begin fails). A write transaction takes the write lock at begin
 * (waiting up to 5 s for another writer). On a read-only store, begin opens
 * a consistent snapshot. */
int kv_store_begin(kv_store *s);
int kv_store_commit(kv_store *s);
int kv_store_rollback(kv_store *s);

/* Run metadata: the manifest (config text, seed, version, host, compilers) and
 * the run state (next iteration, RNG state, ...). Values are text; set_meta
 * with VALUE NULL deletes KEY. */
int kv_store_set_meta(kv_store *s, const char *key, const char *value);
/* Returns a malloc'd copy, or NULL when absent. */
char *kv_store_get_meta(kv_store *s, const char *key);

/* Inserts P with its stages (evaluations table) and artifacts, sets p->id.
 * Returns 0 or -1. Atomic: outside a transaction it commits its own; inside
 * one (kv_store_begin) it joins it, and a failure undoes only this program
 * (the caller's transaction goes on). p->id is left alone on failure; a
 * p->id already set is ignored (a new row is always made).
 * p->stages must be an array of objects, p->artifacts an object: string
 * artifacts are kept as text, any other value as JSON. */
int kv_store_insert_program(kv_store *s, kv_program *p);
/* Records search's view of a stored program: its fitness and feature bins
 * (p->fitness, p->features of row p->id). -1 when p->id is not stored. */
int kv_store_update_placement(kv_store *s, const kv_program *p);
/* Loads one program (with metrics, artifacts, stages, features, scenario
 * rows). NULL when absent.
 * Stages and artifacts come back as stored (a stage's "seconds" as a real,
 * a missing "stage" key as its index); none at all reads back as NULL. */
kv_program *kv_store_get_program(kv_store *s, int64_t id);

/* Calls FN for every program in id order (ascending), STATUS filter:
 * -1 = all, else only that status. The program passed is owned by the
 * iterator and freed after FN returns (clone it to keep it). Sources are
 * loaded only when WITH_SOURCE. Returns 0, or the first non-zero FN result,
 * or -1 on a database error.
 * For speed (one query for 100,000 programs) it does NOT fill p->stages and
 * p->artifacts (left NULL); call kv_store_get_program for those. FN may
 * read from the store (get_program, another each_program, ...). */
typedef int (*kv_program_fn)(kv_program *p, void *ud);
int kv_store_each_program(kv_store *s, int status, int with_source, kv_program_fn fn, void *ud);

/* ---- a kernel task's results per scenario (kv_program.scenarios) ---- */

/* P's scenario rows as a JSON array of {"name", "kind", "median_us",
 * "iqr_us", "baseline_us", "speedup", "roofline_fraction", "max_abs_err",
 * "tol_ratio", "energy_j", "weight", "screened", "device"} (numbers only
 * where known; new reference). */
json_t *kv_store_scenarios_json(const kv_program *p);
/* What a child of program ID is screened against: {"combined_score",
 * "speedup": {scenario: x}} from its rows (new reference), or NULL when it
 * has none or is not OK. */
json_t *kv_store_screen_parent(kv_store *s, int64_t id);
/* For each scenario of the run, in the task's order, the row of the OK
 * program judged on every scenario that was fastest against the baseline
 * there: kv_store_scenarios_json's keys plus "program_id", "programs" (how
 * many were judged there), "task", "backend". An empty array when the run
 * has no rows; NULL with the error set on a database error. */
json_t *kv_store_best_per_scenario(kv_store *s);

/* Counts; -1 on a database error. */
int64_t kv_store_count_programs(kv_store *s, int status); /* -1 = all */
int64_t kv_store_max_iteration(kv_store *s);              /* 0 when empty */
/* The OK program with the highest fitness (ties: lowest id); NULL when none. */
kv_program *kv_store_best_program(kv_store *s);
/* Id of a program with this code hash (any status but duplicate), or 0.
 * The earliest such program; 0 also on a database error (errmsg set). */
int64_t kv_store_find_by_hash(kv_store *s, uint64_t code_hash);

/* Appends an event (run started, resumed, migration, interrupted, ...).
 * DATA may be NULL; it is not stolen. */
int kv_store_add_event(kv_store *s, const char *kind, const json_t *data);
/* Counts programs per status into counts[KV_STATUS_COUNT]. Returns 0 or -1. */
int kv_store_status_counts(kv_store *s, int64_t counts[KV_STATUS_COUNT]);

/* ---- Run statistics (store_stats.c) ---------------------------------------- */

/* Programs that failed, timed out or were rejected, counted by status and
 * reason: the reason code (programs.reason_code: "compile_error",
 * "evaluator_crash", "non_finite_fitness", ...), else the first line of the
 * reason. An array of {status, reason, count}, most frequent first, at most
 * LIMIT rows (<= 0: 50); NULL with the error set. Caller decrefs. */
json_t *kv_store_failure_counts(kv_store *s, int limit);

/* The run's devices: [{"backend", "device", "name", "evaluations" (stored
 * with it), "state" ("in rotation" or "out of rotation"), "reason" (why it
 * went out)}], from the manifest's listing, the programs' device_index and
 * the device_out events; a new array, or NULL on a store error. */
json_t *kv_store_devices(kv_store *s);
/* Id of the earliest program (not a duplicate) whose artifact
 * "artifact_hash" is HASH, or 0 (also on a database error: errmsg set). */
int64_t kv_store_find_by_artifact_hash(kv_store *s, const char *hash);

/* The iterations in [1, UPTO] that left no trace (no program but
 * migrants, no model call that failed for its request): those a run lost
 * when it stopped (kill -9, a fault that stopped it with calls in flight),
 * which a resume makes again. Returns the count with a malloc'd ascending
 * array in *out (NULL when none), or -1. */
int64_t kv_store_missing_iterations(kv_store *s, int64_t upto, int64_t **out);

/* One row of mutator_stats: what the bandit knows of one mutator arm. */
typedef struct kv_mutator_stat {
    const char *arm;   /* "builtin:tune", "builtin:gi", a model name, ... */
    int64_t draws;     /* children (or failed calls) with a known outcome */
    int64_t successes; /* children that beat their parent */
    int64_t failures;  /* children failed, timed out or rejected; calls that failed */
    double reward_sum; /* sum of each child's fitness gain per second of evaluation */
    double weight;     /* the arm's share of the next draws (NAN: unknown) */
} kv_mutator_stat;

/* Writes (inserts or replaces) the row of M->arm, stamped with the time.
 * Joins the caller's transaction when one is open. Returns 0 or -1. */
int kv_store_put_mutator_stat(kv_store *s, const kv_mutator_stat *m);
/* Every row of mutator_stats by arm name: an array of {arm, draws,
 * successes, failures, reward_sum, weight, updated_at} (weight and
 * updated_at may be null); NULL with the error set. Caller decrefs. */
json_t *kv_store_mutator_stats(kv_store *s);

/* ---- Dashboard reads (store_web.c) ---------------------------------------
 * Read-only queries for the web dashboard and the static report. Each
 * returns a new JSON value (the caller decrefs it), or NULL with
 * kv_store_errmsg set. Callers wanting one consistent view of a store that
 * a run is writing wrap several calls in kv_store_begin/kv_store_commit. */

/* Most rows one paged call returns. */
#define KV_STORE_WEB_PAGE_MAX 10000

/* Programs with id > SINCE in id order, at most LIMIT (1..KV_STORE_WEB_PAGE_MAX),
 * in compact form: an array of arrays, one per program, holding
 * [id, parent_id, other_parent_id, island, iteration, generation, status,
 *  fitness, mutator, is_migrant, migrated_from, reason]; absent links and
 * NaN fitness are null, status is kv_status_name(), reason is the reason
 * code (else the first line of status_reason) of a program that is not OK
 * (null for OK ones). */
json_t *kv_store_web_programs(kv_store *s, int64_t since, int limit);
/* The language-model calls recorded for PROGRAM_ID, oldest first: an array
 * of objects with the llm_calls columns (prompts and reply included). */
json_t *kv_store_web_llm_calls(kv_store *s, int64_t program_id);
/* Events with id > SINCE, oldest first, at most LIMIT (1..KV_STORE_WEB_PAGE_MAX):
 * an array of {id, time, kind, data} (data parsed JSON or null). */
json_t *kv_store_web_events(kv_store *s, int64_t since, int limit);
/* Fitness of every OK program with a fitness, in (iteration, id) order:
 * an array of [island, iteration, fitness, id]. */
json_t *kv_store_web_scores(kv_store *s);
/* The OK programs of ISLAND that search placed (features set) with a
 * fitness: an array of [id, fitness, features-object]. */
json_t *kv_store_web_placed(kv_store *s, int island);
/* The range the search saw along feature dimension DIM, over every program
 * it placed: [min, max] of the source's length in bytes (complexity), the
 * fitness (score) or the metric DIM; null when no program has one, or for
 * diversity (not stored). */
json_t *kv_store_web_feature_range(kv_store *s, const char *dim);
/* Aggregates for the run summary: an object with meta (every meta key),
 * programs, max_id, max_iteration, by_status {name: count}, migrants,
 * islands [{island, programs, ok, failed, timeout, rejected, duplicate,
 * best_fitness, best_id}], failure_reasons [{status, reason, count,
 * example_id, last_id}] (reason: the reason code, else the first line of
 * the reason, as kv_store_failure_counts; most frequent first, at most
 * 50), by_mutator [{mutator, children, ok, failed, timeout, rejected,
 * duplicate, improved (OK and above its OK parent), best_fitness}],
 * mutators (kv_store_mutator_stats), initial_programs [{id, island, status, fitness}], harness
 * {backend, device, task} (from the first program whose artifacts name a backend; null each when
 * none), llm {calls, prompt_tokens, completion_tokens, cost_usd, errors, by_model [{model, calls,
 * prompt_tokens, completion_tokens, cost_usd}]}. */
json_t *kv_store_web_summary(kv_store *s);
/* The highest iteration of any program (0 for an empty store), or -1 with
 * the error set. */
int64_t kv_store_web_max_iteration(kv_store *s);
/* The run's best program over time: each OK program that scored above
 * every one before it in (iteration, id) order, as [id, iteration,
 * fitness, island, scenarios] (scenarios: its "scenarios" artifact parsed,
 * or null). */
json_t *kv_store_web_best_history(kv_store *s);

/* ---- Language-model calls (store_llm.c) ---- */

/* One call to a model, as stored in llm_calls. Strings may be NULL. */
typedef struct kv_llm_call_record {
    int64_t iteration;
    const char *model;
    const char *endpoint;
    const char *system_prompt; /* redacted by the caller */
    const char *user_prompt;   /* redacted by the caller */
    const char *reply;
    long prompt_tokens, completion_tokens;
    double cost_usd, latency_s;
    int attempts;
    long http_status;
    const char *outcome; /* "child", "rejected: ...", "duplicate", "error: ..." */
    const char *error;
} kv_llm_call_record;

/* Inserts REC linked to PROGRAM_ID (0: no program). Joins the caller's
 * transaction when one is open. Returns 0 or -1. */
int kv_store_insert_llm_call(kv_store *s, const kv_llm_call_record *rec, int64_t program_id);
/* The latest LIMIT children of PARENT_ID (any status but duplicate), oldest
 * first, with status, reason, summary and metrics (no source): the previous
 * attempts on a lineage, for prompts. Returns the count (0..LIMIT) with a
 * malloc'd array of new programs in *out (free each and the array), or -1. */
int kv_store_recent_children(kv_store *s, int64_t parent_id, int limit, kv_program ***out);
/* Sum of llm_calls.cost_usd (0 when none), and the token totals. Returns 0 or -1. */
int kv_store_llm_totals(kv_store *s, double *cost_usd, int64_t *prompt_tokens,
                        int64_t *completion_tokens, int64_t *calls);

#endif
