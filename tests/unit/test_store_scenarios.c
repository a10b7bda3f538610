/* A kernel program's results per scenario are rows stored with it, in its
 * transaction: they read back whole, give a child its parent's speedups to
 * screen against, and give the run's best program per scenario (not one a
 * screen stopped, not a failed one). A store written before the rows
 * existed (schema 2) reads the same, read-only without a write, and gains
 * its rows when opened read-write. */
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
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_store_fixture.h"

/* A kernel program I whose scenarios "decode" and "prefill" ran SPEEDUP and
 * 2 * SPEEDUP times as fast as the baseline; SCREENED: the screen stopped
 * it. Its harness artifacts hold the same (what a schema-2 store kept). */
static kv_program *kernel_program(int i, kv_status status, double speedup, int screened)
{
    kv_program *p = kv_program_new();
    char *src = kv_asprintf("int kv_launch(void) { return %d; }\n", i);
    kv_program_set_source(p, src);
    free(src);
    p->mutator = kv_strdup("tune");
    p->iteration = i;
    p->status = status;
    p->fitness = status == KV_STATUS_OK ? speedup : NAN;
    p->metrics = json_pack("{s:f}", "combined_score", speedup);
    if (screened) json_object_set_new(p->metrics, "screened_out", json_integer(1));
    kv_scenario_results *r = &p->scenarios;
    r->task = kv_strdup("gqa_attention_small");
    r->backend = kv_strdup("cpu");
    r->device = kv_strdup("host cpu");
    r->n = 2;
    r->rows = kv_calloc(2, sizeof *r->rows);
    json_t *scen = json_array();
    static const char *const names[] = {"decode", "prefill"};
    for (int k = 0; k < 2; k++) {
        kv_scenario_result *x = &r->rows[k];
        x->scenario = kv_strdup(names[k]);
        x->kind = kv_strdup(names[k]);
        x->weight = 1;
        x->baseline_us = 100;
        x->speedup = speedup * (k + 1);
        x->median_us = 100 / x->speedup;
        x->iqr_us = 1;
        x->roofline_fraction = 0.1 * (k + 1);
        x->max_abs_err = 1e-3;
        x->tol_ratio = 0.2;
        x->energy_j = NAN;
        x->screened = screened;
        json_array_append_new(scen, json_pack("{s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "name",
                                              x->scenario, "tags", x->kind, "weight", 1.0,
                                              "median_us", x->median_us, "iqr_us", 1.0,
                                              "baseline_median_us", 100.0, "speedup", x->speedup,
                                              "roofline_fraction", x->roofline_fraction,
                                              "max_abs_err", 1e-3, "tol_ratio", 0.2));
    }
    p->artifacts = json_pack("{s:s,s:s,s:{s:s,s:i},s:o}", "task", r->task, "backend", r->backend,
                             "device", "name", r->device, "index", 0, "scenarios", scen);
    return p;
}

static int64_t insert(kv_store *s, kv_program *p)
{
    assert_int_equal(kv_store_insert_program(s, p), 0);
    int64_t id = p->id;
    kv_program_free(p);
    return id;
}

/* The run of every test: program 1 (2x), 2 (3x), 3 (5x but screened), 4
 * (failed, with rows it should never have had). */
static void fill(kv_store *s)
{
    insert(s, kernel_program(1, KV_STATUS_OK, 2, 0));
    insert(s, kernel_program(2, KV_STATUS_OK, 3, 0));
    insert(s, kernel_program(3, KV_STATUS_OK, 5, 1));
    insert(s, kernel_program(4, KV_STATUS_FAILED, 9, 0));
}

/* Asserts the run of fill() reads as it was written through S. */
static void check_rows(kv_store *s)
{
    kv_program *p = kv_store_get_program(s, 2);
    assert_non_null(p);
    assert_int_equal(p->scenarios.n, 2);
    assert_string_equal(p->scenarios.task, "gqa_attention_small");
    assert_string_equal(p->scenarios.device, "host cpu");
    assert_string_equal(p->scenarios.rows[1].scenario, "prefill");
    assert_string_equal(p->scenarios.rows[1].kind, "prefill");
    assert_true(fabs(p->scenarios.rows[1].speedup - 6) < 1e-12);
    assert_true(fabs(p->scenarios.rows[1].baseline_us - 100) < 1e-12);
    assert_true(isnan(p->scenarios.rows[1].energy_j)); /* no counter: absent, not zero */
    kv_program_free(p);
    /* Screening: a child of 2 is judged against 2's speedups. */
    json_t *parent = kv_store_screen_parent(s, 2);
    assert_non_null(parent);
    assert_true(json_number_value(json_object_get(json_object_get(parent, "speedup"), "decode")) ==
                3);
    assert_true(json_number_value(json_object_get(parent, "combined_score")) == 3);
    json_decref(parent);
    assert_null(kv_store_screen_parent(s, 4)); /* a failed parent screens nothing */
    /* The best per scenario: program 2 (3x, 6x); 3 was screened, 4 failed. */
    json_t *best = kv_store_best_per_scenario(s);
    assert_non_null(best);
    assert_int_equal(json_array_size(best), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *b = json_array_get(best, i);
        assert_string_equal(json_string_value(json_object_get(b, "name")),
                            i ? "prefill" : "decode");
        assert_int_equal(json_integer_value(json_object_get(b, "program_id")), 2);
        assert_int_equal(json_integer_value(json_object_get(b, "programs")), 2);
    }
    json_decref(best);
}

static void test_rows_are_stored_with_their_program_and_read_back(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    fill(s);
    check_rows(s);
    kv_store_close(s);
    s = open_ok(f->path, KV_STORE_READONLY);
    check_rows(s);
    kv_store_close(s);
}

static void test_a_failed_insert_leaves_no_row(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    kv_program *p = kernel_program(1, KV_STATUS_OK, 2, 0);
    free(p->scenarios.rows[1].scenario);
    p->scenarios.rows[1].scenario = kv_strdup("decode"); /* the same scenario twice */
    assert_int_equal(kv_store_insert_program(s, p), -1);
    kv_program_free(p);
    assert_int_equal(kv_store_count_programs(s, -1), 0);
    json_t *best = kv_store_best_per_scenario(s);
    assert_int_equal(json_array_size(best), 0);
    json_decref(best);
    kv_store_close(s);
}

/* Turns the store at PATH into what kevolve wrote before the rows
 * (schema 2): the same programs and artifacts, no scenario_results. */
static void make_schema_2(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "DROP TABLE scenario_results;"
                                  "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
}

static int64_t rows_in_file(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM scenario_results", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void test_an_old_store_reads_the_same_and_migrates(void **state)
{
    fixture *f = *state;
    kv_store *s = open_ok(f->path, KV_STORE_CREATE);
    fill(s);
    kv_store_close(s);
    make_schema_2(f->path);
    assert_int_equal(rows_in_file(f->path), -1); /* no table: as kevolve wrote it */
    /* Read-only: the rows come from the artifacts, and the file is left as it was. */
    s = open_ok(f->path, KV_STORE_READONLY);
    check_rows(s);
    kv_store_close(s);
    assert_int_equal(rows_in_file(f->path), -1);
    /* Read-write: migrated, rows in the file (the failed program's too, as
     * its artifacts hold them; the best per scenario still skips it). */
    s = open_ok(f->path, KV_STORE_READWRITE);
    check_rows(s);
    char *v = kv_store_get_meta(s, "schema_version");
    assert_string_equal(v, "3");
    free(v);
    kv_store_close(s);
    assert_int_equal(rows_in_file(f->path), 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)
        T(rows_are_stored_with_their_program_and_read_back),
        T(a_failed_insert_leaves_no_row),
        T(an_old_store_reads_the_same_and_migrates),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
