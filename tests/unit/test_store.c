/* Tests of the run store (src/store/): programs round-trip through SQLite
 * whole, transactions are atomic, commits survive kill -9, readers see the
 * writer's commits, and files that are not kevolve stores are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_store_fixture.h"

/* Opening PATH in MODE fails with a message containing every NEEDLE. */
static void assert_open_fails(const char *path, int mode, const char *needle1, const char *needle2)
{
    kv_store *s = NULL;
    char *err = NULL;
    assert_int_equal(kv_store_open(path, mode, &s, &err), -1);
    assert_null(s);
    assert_non_null(err);
    if (!strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
        fail_msg("message '%s' lacks '%s' / '%s'", err, needle1, needle2 ? needle2 : "");
    free(err);
}

/* A small evaluated program; I makes its source (and hash) distinct. */
static kv_program *make_program(int i, kv_status status, double fitness)
{
    kv_program *p = kv_program_new();
    char *src = kv_asprintf("int f(void) { return %d; }\n", i);
    kv_program_set_source(p, src);
    free(src);
    p->mutator = kv_strdup("tune");
    p->iteration = i;
    p->status = status;
    p->fitness = fitness;
    p->metrics = json_pack("{s:f}", "combined_score", isnan(fitness) ? 0.0 : fitness);
    return p;
}

/* Inserts P and frees it; returns its new id. */
static int64_t insert_and_free(kv_store *s, kv_program *p)
{
    assert_int_equal(kv_store_insert_program(s, p), 0);
    int64_t id = p->id;
    assert_true(id > 0);
    kv_program_free(p);
    return id;
}

static void assert_json_equal(const json_t *a, const json_t *b)
{
    if (!a || !b) {
        assert_true(a == b);
        return;
    }
    if (!json_equal(a, b)) {
        char *sa = kv_json_dumps(a), *sb = kv_json_dumps(b);
        fail_msg("JSON differs: %s vs %s", sa, sb);
    }
}

static void assert_double_same(double a, double b)
{
    if (isnan(a) || isnan(b))
        assert_true(isnan(a) && isnan(b));
    else
        assert_true(a == b);
}

static void test_insert_then_get_round_trips_every_field(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    int64_t parent = insert_and_free(s, make_program(1, KV_STATUS_OK, 1.0));
    int64_t other = insert_and_free(s, make_program(2, KV_STATUS_OK, 2.0));

    kv_program *p = kv_program_new();
    kv_program_set_source(p, "__global__ void k() {}\n/* ünïcode */\n");
    p->parent_id = parent;
    p->other_parent_id = other;
    p->island = 3;
    p->generation = 7;
    p->iteration = 1234567890123LL;
    p->mutator = kv_strdup("llm:qwen3");
    p->change_summary = kv_strdup("unrolled the inner loop\nand fused the scale");
    p->metrics = json_pack("{s:f,s:i,s:s,s:[i,i]}", "combined_score", 1.0 / 3.0, "passed", 1,
                           "note", "fine", "per", 1, 2);
    p->features = json_pack("{s:i,s:i}", "complexity", 4, "diversity", 9);
    p->stages =
        json_pack("[{s:i,s:s,s:{s:f},s:f},{s:i,s:s,s:{},s:f,s:s,s:s}]", "stage", 1, "status", "ok",
                  "metrics", "max_error", 1e-7, "seconds", 0.25, "stage", 2, "status", "failed",
                  "metrics", "seconds", 3.5, "reason", "mismatch at 17", "device", "H200");
    p->artifacts =
        json_pack("{s:s,s:{s:i},s:[s],s:s,s:n}", "stderr", "warning: unused variable\n", "launch",
                  "grid", 132, "list", "x", "looks_like_json", "{\"a\":1}", "nothing");
    p->fitness = NAN;
    p->status = KV_STATUS_FAILED;
    p->status_reason = kv_strdup("stage 2: mismatch");
    p->is_migrant = 1;
    p->migrated_from = parent;
    p->code_hash = 0xfedcba9876543210ULL; /* top bit set: must not come back signed */
    p->created_at = 1700000000.125;
    p->eval_seconds = 3.75;
    assert_int_equal(kv_store_insert_program(s, p), 0);
    assert_int_equal(p->id, 3);

    /* Read back through a fresh connection, so nothing comes from memory. */
    kv_store_close(s);
    s = open_ok(f->path, KV_STORE_READONLY);
    kv_program *q = kv_store_get_program(s, p->id);
    assert_non_null(q);
    assert_int_equal(q->id, p->id);
    assert_int_equal(q->parent_id, parent);
    assert_int_equal(q->other_parent_id, other);
    assert_int_equal(q->island, 3);
    assert_int_equal(q->generation, 7);
    assert_int_equal(q->iteration, 1234567890123LL);
    assert_string_equal(q->source, p->source);
    assert_string_equal(q->mutator, "llm:qwen3");
    assert_string_equal(q->change_summary, p->change_summary);
    assert_json_equal(q->metrics, p->metrics);
    assert_json_equal(q->features, p->features);
    assert_json_equal(q->stages, p->stages);
    assert_json_equal(q->artifacts, p->artifacts);
    assert_true(json_is_string(json_object_get(q->artifacts, "looks_like_json")));
    assert_true(isnan(q->fitness));
    assert_int_equal(q->status, KV_STATUS_FAILED);
    assert_string_equal(q->status_reason, "stage 2: mismatch");
    assert_int_equal(q->is_migrant, 1);
    assert_int_equal(q->migrated_from, parent);
    assert_true(q->code_hash == 0xfedcba9876543210ULL);
    assert_double_same(q->created_at, 1700000000.125);
    assert_double_same(q->eval_seconds, 3.75);

    /* The first program: no lineage, no stages, no artifacts, a real fitness. */
    kv_program *first = kv_store_get_program(s, parent);
    assert_non_null(first);
    assert_int_equal(first->parent_id, 0);
    assert_int_equal(first->other_parent_id, 0);
    assert_int_equal(first->migrated_from, 0);
    assert_null(first->stages);
    assert_null(first->artifacts);
    assert_null(first->change_summary);
    assert_double_same(first->fitness, 1.0);
    assert_null(kv_store_get_program(s, 999));
    assert_string_equal(kv_store_errmsg(s), ""); /* absent, not an error */

    kv_program_free(first);
    kv_program_free(q);
    kv_program_free(p);
    kv_store_close(s);
}

/* Collects what each_program visits. */
typedef struct visits {
    kv_store *s;
    int n;
    int64_t ids[16];
    int sources_present;
    int metrics_present;
    int stop_after; /* 0: never */
} visits;

static int record_visit(kv_program *p, void *ud)
{
    visits *v = ud;
    if (v->n < 16) v->ids[v->n] = p->id;
    v->n++;
    v->sources_present += p->source != NULL;
    v->metrics_present += p->metrics != NULL;
    assert_null(p->stages); /* each_program leaves stages and artifacts to get_program */
    kv_program *full = kv_store_get_program(v->s, p->id); /* reading back in is allowed */
    assert_non_null(full);
    assert_non_null(full->stages);
    kv_program_free(full);
    return v->stop_after && v->n == v->stop_after ? 42 : 0;
}

static void test_each_program_visits_in_id_order_and_filters_status(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    kv_status statuses[] = {KV_STATUS_OK, KV_STATUS_FAILED, KV_STATUS_OK, KV_STATUS_TIMEOUT,
                            KV_STATUS_OK};
    for (int i = 0; i < 5; i++) {
        kv_program *p = make_program(i, statuses[i], i);
        p->stages = json_pack("[{s:i}]", "stage", 1);
        insert_and_free(s, p);
    }

    visits all = {.s = s};
    assert_int_equal(kv_store_each_program(s, -1, 1, record_visit, &all), 0);
    assert_int_equal(all.n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(all.ids[i], i + 1);
    assert_int_equal(all.sources_present, 5);
    assert_int_equal(all.metrics_present, 5);

    visits ok = {.s = s};
    assert_int_equal(kv_store_each_program(s, KV_STATUS_OK, 0, record_visit, &ok), 0);
    assert_int_equal(ok.n, 3);
    assert_int_equal(ok.ids[0], 1);
    assert_int_equal(ok.ids[1], 3);
    assert_int_equal(ok.ids[2], 5);
    assert_int_equal(ok.sources_present, 0); /* with_source = 0 */
    assert_int_equal(ok.metrics_present, 3);

    visits none = {.s = s};
    assert_int_equal(kv_store_each_program(s, KV_STATUS_REJECTED, 1, record_visit, &none), 0);
    assert_int_equal(none.n, 0);

    visits stopped = {.s = s, .stop_after = 2};
    assert_int_equal(kv_store_each_program(s, -1, 0, record_visit, &stopped), 42);
    assert_int_equal(stopped.n, 2);
    kv_store_close(s);
}

static void test_best_program_is_highest_fitness_ok_program(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    assert_null(kv_store_best_program(s)); /* empty store */
    insert_and_free(s, make_program(1, KV_STATUS_OK, 0.5));
    int64_t tie_first = insert_and_free(s, make_program(2, KV_STATUS_OK, 2.0));
    insert_and_free(s, make_program(3, KV_STATUS_OK, 2.0));      /* tie: later id loses */
    insert_and_free(s, make_program(4, KV_STATUS_FAILED, 9.0));  /* not OK */
    insert_and_free(s, make_program(5, KV_STATUS_OK, NAN));      /* not placed yet */
    insert_and_free(s, make_program(6, KV_STATUS_TIMEOUT, 8.0)); /* not OK */

    kv_program *best = kv_store_best_program(s);
    assert_non_null(best);
    assert_int_equal(best->id, tie_first);
    assert_double_same(best->fitness, 2.0);
    assert_non_null(best->source);
    kv_program_free(best);
    kv_store_close(s);
}

static void test_find_by_hash_ignores_duplicates(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    kv_program *dup = make_program(1, KV_STATUS_DUPLICATE, NAN);
    uint64_t hash = dup->code_hash;
    insert_and_free(s, dup);
    assert_int_equal(kv_store_find_by_hash(s, hash), 0); /* only a duplicate has it */

    int64_t failed = insert_and_free(s, make_program(1, KV_STATUS_FAILED, NAN));
    insert_and_free(s, make_program(1, KV_STATUS_OK, 1.0));
    assert_int_equal(kv_store_find_by_hash(s, hash), failed); /* the earliest non-duplicate */
    assert_int_equal(kv_store_find_by_hash(s, hash ^ 1), 0);
    assert_string_equal(kv_store_errmsg(s), "");
    kv_store_close(s);
}

static void test_meta_round_trips(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    assert_null(kv_store_get_meta(s, "seed"));
    assert_int_equal(kv_store_set_meta(s, "seed", "42"), 0);
    assert_int_equal(kv_store_set_meta(s, "config", "max_iterations: 10\nllm:\n  models: []\n"), 0);
    assert_int_equal(kv_store_set_meta(s, "seed", "43"), 0); /* overwrites */
    assert_int_equal(kv_store_set_meta(s, "gone", "x"), 0);
    assert_int_equal(kv_store_set_meta(s, "gone", NULL), 0); /* NULL deletes */
    kv_store_close(s);

    s = open_ok(f->path, KV_STORE_READWRITE);
    char *seed = kv_store_get_meta(s, "seed");
    char *config = kv_store_get_meta(s, "config");
    assert_string_equal(seed, "43");
    assert_string_equal(config, "max_iterations: 10\nllm:\n  models: []\n");
    assert_null(kv_store_get_meta(s, "gone"));
    free(seed);
    free(config);
    kv_store_close(s);
}

/* In a child: opens the store, commits program 1, then inserts program 2
 * inside a transaction left open, and dies by SIGKILL before closing. */
static void child_commit_then_die(const char *path)
{
    kv_store *s = NULL;
    char *err = NULL;
    if (kv_store_open(path, KV_STORE_CREATE, &s, &err) != 0) _exit(10);
    kv_program *p = make_program(1, KV_STATUS_OK, 1.0);
    if (kv_store_insert_program(s, p) != 0) _exit(11);
    if (kv_store_set_meta(s, "next_iteration", "2") != 0) _exit(12);
    kv_program *q = make_program(2, KV_STATUS_OK, 2.0);
    if (kv_store_begin(s) != 0 || kv_store_insert_program(s, q) != 0) _exit(13);
    kill(getpid(), SIGKILL);
    _exit(14);
}

static void test_committed_program_survives_process_kill(void **state)
{
    fixture *f = *state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) child_commit_then_die(f->path);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status)) fail_msg("child exited with %d", WEXITSTATUS(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);

    kv_store *s = open_ok(f->path, KV_STORE_READWRITE);
    kv_program *p = kv_store_get_program(s, 1);
    assert_non_null(p);
    assert_int_equal(p->iteration, 1);
    char *next = kv_store_get_meta(s, "next_iteration");
    assert_string_equal(next, "2");
    free(next);
    assert_int_equal(kv_store_count_programs(s, -1), 1); /* the uncommitted one is gone */
    kv_program_free(p);
    kv_store_close(s);
}

static void test_reader_sees_commits_while_writer_is_open(void **state)
{
    fixture *f = *state;
    kv_store *w = open_ok(f->path, KV_STORE_CREATE);
    insert_and_free(w, make_program(1, KV_STATUS_OK, 1.0));
    kv_store *r = open_ok(f->path, KV_STORE_READONLY);
    assert_int_equal(kv_store_count_programs(r, -1), 1);

    insert_and_free(w, make_program(2, KV_STATUS_OK, 2.0));
    assert_int_equal(kv_store_count_programs(r, -1), 2);

    /* A writer's open transaction neither blocks the reader nor shows. */
    assert_int_equal(kv_store_begin(w), 0);
    insert_and_free(w, make_program(3, KV_STATUS_OK, 3.0));
    assert_int_equal(kv_store_count_programs(r, -1), 2);
    kv_program *best = kv_store_best_program(r);
    assert_non_null(best);
    assert_int_equal(best->id, 2);
    kv_program_free(best);
    assert_int_equal(kv_store_commit(w), 0);
    assert_int_equal(kv_store_count_programs(r, -1), 3);

    /* A second reader can open while the writer holds the write lock. */
    assert_int_equal(kv_store_begin(w), 0);
    kv_store *r2 = open_ok(f->path, KV_STORE_READONLY);
    assert_int_equal(kv_store_count_programs(r2, -1), 3);
    assert_int_equal(kv_store_rollback(w), 0);

    /* The reader cannot write. */
    kv_program *p = make_program(4, KV_STATUS_OK, 4.0);
    assert_int_equal(kv_store_insert_program(r, p), -1);
    assert_non_null(strstr(kv_store_errmsg(r), f->path));
    kv_program_free(p);
    kv_store_close(r2);
    kv_store_close(r);
    kv_store_close(w);
}

static void test_transaction_rollback_discards_program(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    assert_int_equal(kv_store_begin(s), 0);
    assert_int_equal(kv_store_begin(s), -1); /* no nesting */
    kv_program *p = make_program(1, KV_STATUS_OK, 1.0);
    p->stages = json_pack("[{s:i,s:s}]", "stage", 1, "status", "ok");
    p->artifacts = json_pack("{s:s}", "log", "x");
    assert_int_equal(kv_store_insert_program(s, p), 0);
    assert_int_equal(kv_store_set_meta(s, "next_iteration", "2"), 0);
    assert_int_equal(kv_store_rollback(s), 0);
    assert_null(kv_store_get_program(s, p->id));
    assert_null(kv_store_get_meta(s, "next_iteration"));
    assert_int_equal(kv_store_count_programs(s, -1), 0);
    assert_int_equal(kv_store_commit(s), -1); /* nothing open any more */

    /* The same id is used again, and the new program has none of the old rows. */
    kv_program *q = make_program(2, KV_STATUS_OK, 2.0);
    assert_int_equal(kv_store_insert_program(s, q), 0);
    assert_int_equal(q->id, p->id);
    kv_program *back = kv_store_get_program(s, q->id);
    assert_null(back->stages);
    assert_null(back->artifacts);
    kv_program_free(back);
    kv_program_free(q);
    kv_program_free(p);
    kv_store_close(s);
}

static void test_failed_insert_inside_transaction_leaves_no_partial_rows(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    assert_int_equal(kv_store_begin(s), 0);
    int64_t good = insert_and_free(s, make_program(1, KV_STATUS_OK, 1.0));
    kv_program *bad = make_program(2, KV_STATUS_OK, 2.0);
    bad->stages = json_pack("[{s:i},i]", "stage", 1, 7); /* the second stage is no object */
    assert_int_equal(kv_store_insert_program(s, bad), -1);
    assert_non_null(strstr(kv_store_errmsg(s), "stage 1"));
    assert_int_equal(bad->id, 0);
    kv_program_free(bad);
    assert_int_equal(kv_store_commit(s), 0); /* the caller's transaction goes on */

    assert_int_equal(kv_store_count_programs(s, -1), 1);
    kv_program *kept = kv_store_get_program(s, good);
    assert_non_null(kept);
    kv_program_free(kept);
    /* The bad program's first stage row is gone too: its id, reused, has none. */
    int64_t next = insert_and_free(s, make_program(3, KV_STATUS_OK, 3.0));
    kv_program *p = kv_store_get_program(s, next);
    assert_null(p->stages);
    kv_program_free(p);

    /* Outside a transaction, a failed insert leaves nothing either. */
    bad = make_program(4, KV_STATUS_OK, 4.0);
    bad->artifacts = json_pack("[s]", "not an object");
    assert_int_equal(kv_store_insert_program(s, bad), -1);
    kv_program_free(bad);
    assert_int_equal(kv_store_count_programs(s, -1), 2);
    kv_store_close(s);
}

static void test_open_rejects_non_kevolve_file(void **state)
{
    fixture *f = *state;
    /* Missing. */
    assert_open_fails(f->path, KV_STORE_READONLY, f->path, "no such file");
    assert_open_fails(f->path, KV_STORE_READWRITE, f->path, "no such file");

    /* Not SQLite at all, in every mode. */
    const char *text = "max_iterations: 10\nthis is a YAML file, not a database\n";
    assert_int_equal(kv_write_file(f->path, text, strlen(text)), 0);
    assert_open_fails(f->path, KV_STORE_READONLY, f->path, "not a kevolve store");
    assert_open_fails(f->path, KV_STORE_READWRITE, f->path, "not a kevolve store");
    assert_open_fails(f->path, KV_STORE_CREATE, f->path, "not a kevolve store");

    /* SQLite, but another application's. */
    char *other = kv_path_join(f->dir, "other.db");
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    assert_open_fails(other, KV_STORE_READONLY, other, "not a kevolve store");
    assert_open_fails(other, KV_STORE_CREATE, other, "not a kevolve store");

    /* SQLite with a meta table but no schema_version. */
    assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)", NULL, NULL, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    assert_open_fails(other, KV_STORE_READWRITE, other, "schema_version");
    free(other);
}

static void test_open_rejects_store_from_newer_schema(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    assert_int_equal(kv_store_set_meta(s, "schema_version", "999"), 0);
    kv_store_close(s);
    assert_open_fails(f->path, KV_STORE_READWRITE, f->path, "newer kevolve");
    assert_open_fails(f->path, KV_STORE_READONLY, f->path, "newer kevolve");
}

static void test_create_reopens_an_existing_store_without_losing_it(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    insert_and_free(s, make_program(1, KV_STATUS_OK, 1.0));
    kv_store_close(s);
    s = open_ok(f->path, KV_STORE_CREATE);
    assert_int_equal(kv_store_count_programs(s, -1), 1);
    kv_store_close(s);
}

static void test_in_memory_store_works_for_tests(void **state)
{
    (void)state;
    kv_store *s = open_ok(":memory:", KV_STORE_CREATE);
    int64_t id = insert_and_free(s, make_program(1, KV_STATUS_OK, 1.0));
    kv_program *p = kv_store_get_program(s, id);
    assert_non_null(p);
    kv_program_free(p);
    kv_store_close(s);
}

static void test_status_counts_count_each_status(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    assert_int_equal(kv_store_max_iteration(s), 0);
    int64_t counts[KV_STATUS_COUNT];
    assert_int_equal(kv_store_status_counts(s, counts), 0);
    for (int i = 0; i < KV_STATUS_COUNT; i++)
        assert_int_equal(counts[i], 0);

    int per_status[KV_STATUS_COUNT] = {4, 3, 2, 1, 5};
    int iteration = 0;
    for (int st = 0; st < KV_STATUS_COUNT; st++)
        for (int k = 0; k < per_status[st]; k++)
            insert_and_free(s, make_program(++iteration, (kv_status)st, 1.0));

    assert_int_equal(kv_store_status_counts(s, counts), 0);
    for (int st = 0; st < KV_STATUS_COUNT; st++) {
        assert_int_equal(counts[st], per_status[st]);
        assert_int_equal(kv_store_count_programs(s, st), per_status[st]);
    }
    assert_int_equal(kv_store_count_programs(s, -1), iteration);
    assert_int_equal(kv_store_max_iteration(s), iteration);
    kv_store_close(s);
}

static void test_update_placement_records_fitness_and_features(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    kv_program *p = make_program(1, KV_STATUS_OK, NAN);
    assert_int_equal(kv_store_insert_program(s, p), 0);
    p->fitness = 1.5;
    p->features = json_pack("{s:i}", "complexity", 2);
    assert_int_equal(kv_store_update_placement(s, p), 0);
    kv_program *q = kv_store_get_program(s, p->id);
    assert_double_same(q->fitness, 1.5);
    assert_json_equal(q->features, p->features);
    kv_program_free(q);

    p->id = 77; /* not stored */
    assert_int_equal(kv_store_update_placement(s, p), -1);
    assert_non_null(strstr(kv_store_errmsg(s), "77"));
    kv_program_free(p);
    kv_store_close(s);
}

static void test_events_are_recorded_with_and_without_data(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    json_t *data = json_pack("{s:i,s:i}", "from", 1, "to", 2);
    assert_int_equal(kv_store_add_event(s, "run_started", NULL), 0);
    assert_int_equal(kv_store_add_event(s, "migration", data), 0);
    assert_int_equal(json_object_get(data, "from") != NULL, 1); /* not stolen */
    json_decref(data);
    kv_store_close(s);

    /* Check the rows with SQLite directly: no reader API for events yet. */
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT kind, data, time FROM events ORDER BY id", -1, &st, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "run_started");
    assert_int_equal(sqlite3_column_type(st, 1), SQLITE_NULL);
    assert_true(sqlite3_column_double(st, 2) > 1.6e9);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "migration");
    assert_string_equal((const char *)sqlite3_column_text(st, 1), "{\"from\":1,\"to\":2}");
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static int count_visit(kv_program *p, void *ud)
{
    int64_t *expected = ud;
    if (p->id != *expected + 1 || p->source != NULL) return -2;
    *expected = p->id;
    return 0;
}

static void test_ten_thousand_programs_store_and_iterate_in_order(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    enum { N = 10000 };
    assert_int_equal(kv_store_begin(s), 0);
    for (int i = 1; i <= N; i++) {
        kv_program *p = make_program(i, i % 7 ? KV_STATUS_OK : KV_STATUS_FAILED, i);
        p->parent_id = i > 1 ? i - 1 : 0;
        p->stages = json_pack("[{s:i,s:s,s:f}]", "stage", 1, "status", "ok", "seconds", 0.1);
        p->artifacts = json_pack("{s:s}", "stdout", "ok");
        assert_int_equal(kv_store_insert_program(s, p), 0);
        kv_program_free(p);
    }
    assert_int_equal(kv_store_commit(s), 0);
    assert_int_equal(kv_store_count_programs(s, -1), N);
    assert_int_equal(kv_store_max_iteration(s), N);
    int64_t last = 0;
    assert_int_equal(kv_store_each_program(s, -1, 0, count_visit, &last), 0);
    assert_int_equal(last, N);
    kv_program *best = kv_store_best_program(s);
    assert_int_equal(best->id, N); /* fitness = i, and 10000 % 7 != 0 makes it OK */
    kv_program_free(best);
    kv_store_close(s);
}

static void test_failures_count_by_reason_code_and_duplicates_point_at_their_program(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    kv_program *p = make_program(1, KV_STATUS_OK, 1.0);
    p->artifacts = json_pack("{s:s}", "artifact_hash", "00ff00ff");
    int64_t judged = insert_and_free(s, p);
    static const char *const codes[] = {"compile_error", "wrong_result", "compile_error", NULL};
    for (int i = 0; i < 4; i++) {
        p = make_program(10 + i, KV_STATUS_FAILED, NAN);
        p->reason_code = kv_strdup(codes[i]);
        p->status_reason = kv_strdup(codes[i] ? "rejected by the harness" : "legacy\nsecond line");
        insert_and_free(s, p);
    }
    p = make_program(20, KV_STATUS_DUPLICATE, NAN);
    p->duplicate_of = judged;
    p->reason_code = kv_strdup("same_artifact");
    p->artifacts = json_pack("{s:s}", "artifact_hash", "00ff00ff");
    int64_t dup = insert_and_free(s, p);

    json_t *rows = kv_store_failure_counts(s, 0);
    assert_non_null(rows);
    assert_int_equal(json_array_size(rows), 3);
    json_t *top = json_array_get(rows, 0);
    assert_string_equal(json_string_value(json_object_get(top, "reason")), "compile_error");
    assert_int_equal(json_integer_value(json_object_get(top, "count")), 2);
    int legacy = 0; /* a row without a code counts under its reason's first line */
    for (size_t i = 0; i < 3; i++)
        legacy |= strcmp(json_string_value(json_object_get(json_array_get(rows, i), "reason")),
                         "legacy") == 0;
    assert_true(legacy);
    json_decref(rows);
    /* The artifact's program, never the duplicate that repeats it. */
    assert_int_equal(kv_store_find_by_artifact_hash(s, "00ff00ff"), judged);
    assert_int_equal(kv_store_find_by_artifact_hash(s, "ffff"), 0);
    kv_program *back = kv_store_get_program(s, dup);
    assert_int_equal(back->duplicate_of, judged);
    assert_string_equal(back->reason_code, "same_artifact");
    kv_program_free(back);
    kv_store_close(s);
}

static void test_mutator_stats_are_replaced_per_arm_and_read_back(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    kv_mutator_stat a = {"builtin:tune", 3, 1, 1, 0.5, 0.6};
    kv_mutator_stat b = {"gpt-x", 1, 0, 1, 0, NAN};
    assert_int_equal(kv_store_put_mutator_stat(s, &a), 0);
    assert_int_equal(kv_store_put_mutator_stat(s, &b), 0);
    a.draws = 4;
    a.successes = 2;
    a.reward_sum = 1.25;
    assert_int_equal(kv_store_put_mutator_stat(s, &a), 0);
    json_t *rows = kv_store_mutator_stats(s);
    assert_int_equal(json_array_size(rows), 2);
    json_t *t = json_array_get(rows, 0); /* by arm name */
    assert_string_equal(json_string_value(json_object_get(t, "arm")), "builtin:tune");
    assert_int_equal(json_integer_value(json_object_get(t, "draws")), 4);
    assert_int_equal(json_integer_value(json_object_get(t, "successes")), 2);
    assert_int_equal(json_integer_value(json_object_get(t, "failures")), 1);
    assert_true(json_real_value(json_object_get(t, "reward_sum")) == 1.25);
    assert_true(json_real_value(json_object_get(t, "weight")) == 0.6);
    assert_true(json_is_number(json_object_get(t, "updated_at")));
    assert_true(json_is_null(json_object_get(json_array_get(rows, 1), "weight")));
    json_decref(rows);
    kv_store_close(s);
}

static void test_missing_iterations_are_those_that_left_no_trace(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    insert_and_free(s, make_program(1, KV_STATUS_OK, 1.0));
    insert_and_free(s, make_program(4, KV_STATUS_REJECTED, NAN));
    kv_program *m = make_program(2, KV_STATUS_OK, 1.0); /* a migrant made no iteration */
    m->is_migrant = 1;
    insert_and_free(s, m);
    kv_llm_call_record spent = {.iteration = 3, .model = "m", .outcome = "error: HTTP 400"};
    kv_llm_call_record given_back = {.iteration = 5, .model = "m", .outcome = "retry: HTTP 500"};
    assert_int_equal(kv_store_insert_llm_call(s, &spent, 0), 0);
    assert_int_equal(kv_store_insert_llm_call(s, &given_back, 0), 0);
    int64_t *lost = NULL;
    assert_int_equal(kv_store_missing_iterations(s, 6, &lost), 3);
    assert_int_equal(lost[0], 2);
    assert_int_equal(lost[1], 5);
    assert_int_equal(lost[2], 6);
    free(lost);
    assert_int_equal(kv_store_missing_iterations(s, 0, &lost), 0);
    assert_null(lost);
    kv_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)
        T(insert_then_get_round_trips_every_field),
        T(each_program_visits_in_id_order_and_filters_status),
        T(best_program_is_highest_fitness_ok_program),
        T(find_by_hash_ignores_duplicates),
        T(meta_round_trips),
        T(committed_program_survives_process_kill),
        T(reader_sees_commits_while_writer_is_open),
        T(transaction_rollback_discards_program),
        T(failed_insert_inside_transaction_leaves_no_partial_rows),
        T(open_rejects_non_kevolve_file),
        T(open_rejects_store_from_newer_schema),
        T(create_reopens_an_existing_store_without_losing_it),
        T(in_memory_store_works_for_tests),
        T(status_counts_count_each_status),
        T(update_placement_records_fitness_and_features),
        T(events_are_recorded_with_and_without_data),
        T(ten_thousand_programs_store_and_iterate_in_order),
        T(failures_count_by_reason_code_and_duplicates_point_at_their_program),
        T(mutator_stats_are_replaced_per_arm_and_read_back),
        T(missing_iterations_are_those_that_left_no_trace),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
