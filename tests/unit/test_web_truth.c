/* Tests that the dashboard tells the truth about a run (src/web/): over
 * HTTP against a store written through the store API with programs of
 * every status (failed, timed out, rejected, duplicate, with their
 * reasons), kernel-harness artifacts and the search's mutator statistics,
 * the API counts each status as such, groups failures by reason, gives the
 * run facts from the effective config and the harness (not the raw config
 * text), the store's real path, a score series over the whole iteration
 * range with every island, and the best program's scenarios over time.
 * Then the serving: a replaced store is served under a new identity, a
 * deleted one is answered 410, a malformed one 500 with its message, and
 * 300 idle connections do not stop a normal request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eval/eval_output.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "web/web.h"

#include "test_web_http.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[64];
static char *g_db;
static kv_web_server *g_srv;
static int g_port;

/* The effective config as the manifest stores it, and the file as written
 * (with a ${VAR} the dashboard must not show as the task). */
static const char *const EFFECTIVE = "max_iterations: 12\n"
                                     "language: \"c\"\n"
                                     "database:\n"
                                     "  num_islands: 3\n"
                                     "  feature_dimensions: [\"complexity\", \"speedup\"]\n"
                                     "  feature_bins: 4\n"
                                     "evaluator:\n"
                                     "  task: \"gqa_attention_small\"\n"
                                     "  backend: \"auto\"\n"
                                     "  quick: true\n";
static const char *const RAW = "max_iterations: 40\n"
                               "evaluator:\n"
                               "  task: ${KV_TASK:-gqa_attention_search}\n";

/* The harness's scenarios with speedups A and B. New reference. */
static json_t *scenarios(double a, double b)
{
    return json_pack("[{s:s, s:f, s:f, s:f, s:f, s:i}, {s:s, s:f, s:f, s:f, s:f, s:i}]", "name",
                     "decode_a", "speedup", a, "median_us", 100.0 / a, "iqr_us", 3.0,
                     "roofline_fraction", 0.1 * a, "correct", 1, "name", "prefill_b", "speedup", b,
                     "median_us", 900.0 / b, "iqr_us", 20.0, "roofline_fraction", 0.05 * b,
                     "correct", 1);
}

/* Adds one program; FITNESS is used when STATUS is OK, REASON is
 * "CODE|long text" or a long text alone. Returns its id. */
static int64_t add(kv_store *s, int64_t parent, int island, int64_t iteration, const char *mutator,
                   kv_status status, double fitness, const char *reason, json_t *artifacts)
{
    kv_program *p = kv_program_new();
    char src[96];
    snprintf(src, sizeof src, "// program of iteration %lld\nint x = %lld;\n", (long long)iteration,
             (long long)iteration);
    kv_program_set_source(p, src);
    p->parent_id = parent;
    p->island = island;
    p->iteration = iteration;
    p->generation = parent ? 1 : 0;
    p->mutator = kv_strdup(mutator);
    p->status = status;
    if (status == KV_STATUS_OK) {
        p->fitness = fitness;
        p->metrics = json_pack("{s:f}", "combined_score", fitness);
    }
    const char *bar = reason ? strchr(reason, '|') : NULL;
    if (bar) {
        p->reason_code = kv_strndup(reason, (size_t)(bar - reason));
        p->status_reason = kv_strdup(bar + 1);
    } else if (reason) {
        p->status_reason = kv_strdup(reason);
    }
    p->artifacts = artifacts;
    /* The harness's scenarios become the program's rows, as the evaluator makes them. */
    if (status == KV_STATUS_OK) kv_eval_scenario_rows(artifacts, p->metrics, &p->scenarios);
    assert_int_equal(kv_store_insert_program(s, p), 0);
    int64_t id = p->id;
    kv_program_free(p);
    return id;
}

/* Writes the run: 9 programs over 3 islands and iterations 0..9; island 2
 * never scores. */
static void write_run(const char *path)
{
    kv_store *s = NULL;
    char *err = NULL;
    if (kv_store_open(path, KV_STORE_CREATE, &s, &err) != 0) fail_msg("%s", err);
    assert_int_equal(kv_store_set_meta(s, "config_effective", EFFECTIVE), 0);
    assert_int_equal(kv_store_set_meta(s, "config_text", RAW), 0);
    assert_int_equal(kv_store_set_meta(s, "random_seed", "7"), 0);
    assert_int_equal(kv_store_set_meta(s, "max_iterations", "12"), 0);
    assert_int_equal(kv_store_set_meta(s, "kevolve_version", "9.9.9"), 0);
    assert_int_equal(kv_store_set_meta(s, "initial_program", "/tasks/naive.c"), 0);
    json_t *a1 =
        json_pack("{s:s, s:{s:s}, s:s, s:o}", "backend", "cpu", "device", "name", "test cpu",
                  "task", "gqa_attention_small", "scenarios", scenarios(1.0, 1.0));
    int64_t p1 = add(s, 0, 0, 0, "initial", KV_STATUS_OK, 1.0, NULL, a1);
    int64_t p2 = add(s, p1, 1, 1, "tune", KV_STATUS_OK, 1.5, NULL,
                     json_pack("{s:s, s:o}", "backend", "cpu", "scenarios", scenarios(2.25, 1.0)));
    add(s, p1, 2, 2, "gi", KV_STATUS_FAILED, 0, "compile_error|naive.c:3: expected ';'",
        json_pack("{s:s, s:s, s:s}", "verdict", "rejected", "reason", "compile_error",
                  "compile_log", "naive.c:3: error: expected ';'"));
    add(s, p2, 0, 3, "gi", KV_STATUS_TIMEOUT, 0, "timeout|killed after 10 s", NULL);
    add(s, p2, 1, 4, "llm:m", KV_STATUS_REJECTED, 0, "edit outside an EVOLVE-BLOCK", NULL);
    add(s, p2, 2, 5, "tune", KV_STATUS_DUPLICATE, 0, "identical to program 2", NULL);
    add(s, p1, 0, 6, "gi", KV_STATUS_FAILED, 0, "compile_error|naive.c:9: another error", NULL);
    add(s, p2, 1, 7, "tune", KV_STATUS_OK, 1.2, NULL, NULL);
    add(s, p1, 0, 9, "gi", KV_STATUS_FAILED, 0, "wrong_result: decode_a element 7", NULL);
    kv_store_close(s);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/kv_test_web_truth.XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    g_db = kv_asprintf("%s/run.db", g_dir);
    write_run(g_db);
    kv_web_options opts = {g_db, NULL, 0, 2};
    char *err = NULL;
    if (kv_web_start(&opts, &g_srv, &err) != 0) {
        fprintf(stderr, "test_web_truth: %s\n", err);
        free(err);
        return -1;
    }
    g_port = kv_web_port(g_srv);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    kv_web_stop(g_srv);
    kv_remove_tree(g_dir);
    free(g_db);
    return 0;
}

/* GET TARGET from PORT expecting STATUS; returns the parsed body and, when
 * TOKEN is given, the X-Kevolve-Store header (malloc'd, or NULL). */
static json_t *get_at(int port, const char *target, int status, char **token)
{
    http_answer a;
    assert_int_equal(http_request(port, "GET", target, &a), 0);
    if (a.status != status)
        fail_msg("GET %s: status %d, expected %d: %s", target, a.status, status, a.body);
    json_t *v = kv_json_loads(a.body);
    if (!v) fail_msg("GET %s: body is not JSON: %.200s", target, a.body);
    if (token) {
        const char *h = strstr(a.headers, "X-Kevolve-Store: ");
        *token = h ? kv_strndup(h + 17, strcspn(h + 17, "\r\n")) : NULL;
    }
    http_answer_free(&a);
    return v;
}

static json_t *get_json(const char *target, int status)
{
    return get_at(g_port, target, status, NULL);
}

static json_int_t int_at(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) fail_msg("%s is not an integer", key);
    return json_integer_value(v);
}

static const char *str_at(json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v) fail_msg("%s is not a string", key);
    return v;
}

static void every_status_is_counted_as_such(void **state)
{
    (void)state;
    json_t *sum = get_json("/api/summary", 200);
    json_t *by = json_object_get(sum, "by_status");
    assert_int_equal(int_at(by, "ok"), 3);
    assert_int_equal(int_at(by, "failed"), 3);
    assert_int_equal(int_at(by, "timeout"), 1);
    assert_int_equal(int_at(by, "rejected"), 1);
    assert_int_equal(int_at(by, "duplicate"), 1);
    /* Per island: island 0 holds the initial program, two failures and the timeout. */
    json_t *i0 = json_array_get(json_object_get(sum, "islands"), 0);
    assert_int_equal(int_at(i0, "programs"), 4);
    assert_int_equal(int_at(i0, "ok"), 1);
    assert_int_equal(int_at(i0, "failed"), 2);
    assert_int_equal(int_at(i0, "timeout"), 1);
    /* The tree's rows carry each failure's reason (first line); OK ones none. */
    json_t *page = get_json("/api/programs?since=0", 200);
    json_t *rows = json_object_get(page, "programs");
    assert_int_equal(json_array_size(rows), 9);
    assert_string_equal(json_string_value(json_array_get(json_object_get(page, "columns"), 11)),
                        "reason");
    assert_true(json_is_null(json_array_get(json_array_get(rows, 0), 11)));
    assert_string_equal(json_string_value(json_array_get(json_array_get(rows, 2), 6)), "failed");
    assert_string_equal(json_string_value(json_array_get(json_array_get(rows, 2), 11)),
                        "compile_error");
    assert_string_equal(json_string_value(json_array_get(json_array_get(rows, 3), 6)), "timeout");
    json_decref(page);
    json_decref(sum);
}

static void failures_are_grouped_by_reason_with_example_programs(void **state)
{
    (void)state;
    json_t *sum = get_json("/api/summary", 200);
    json_t *reasons = json_object_get(sum, "failure_reasons");
    assert_int_equal(json_array_size(reasons), 4);
    json_t *first = json_array_get(reasons, 0); /* the most frequent first */
    assert_string_equal(str_at(first, "status"), "failed");
    assert_string_equal(str_at(first, "reason"), "compile_error");
    assert_int_equal(int_at(first, "count"), 2);
    assert_int_equal(int_at(first, "example_id"), 3);
    assert_int_equal(int_at(first, "last_id"), 7);
    int seen_timeout = 0, seen_rejected = 0;
    size_t i;
    json_t *r;
    json_array_foreach(reasons, i, r)
    {
        if (strcmp(str_at(r, "status"), "timeout") == 0) {
            seen_timeout = 1;
            assert_string_equal(str_at(r, "reason"), "timeout");
        }
        if (strcmp(str_at(r, "status"), "rejected") == 0) seen_rejected = 1;
        assert_string_not_equal(str_at(r, "status"), "duplicate");
    }
    assert_true(seen_timeout && seen_rejected);
    /* Children by mutator: tune made 2 (ok), 6 (duplicate), 8 (ok, below its parent). */
    json_t *bm = json_object_get(sum, "by_mutator");
    int found = 0;
    json_array_foreach(bm, i, r)
    {
        if (strcmp(str_at(r, "mutator"), "tune") != 0) continue;
        found = 1;
        assert_int_equal(int_at(r, "children"), 3);
        assert_int_equal(int_at(r, "ok"), 2);
        assert_int_equal(int_at(r, "duplicate"), 1);
        assert_int_equal(int_at(r, "improved"), 1);
    }
    assert_true(found);
    json_decref(sum);
}

static void facts_come_from_the_effective_config_and_the_harness(void **state)
{
    (void)state;
    json_t *sum = get_json("/api/summary", 200);
    json_t *f = json_object_get(sum, "facts");
    /* The effective task, not the raw text's ${KV_TASK:-...} default. */
    assert_string_equal(str_at(f, "task"), "gqa_attention_small");
    assert_string_equal(str_at(f, "backend"), "cpu"); /* what ran; "auto" was configured */
    assert_string_equal(str_at(f, "backend_configured"), "auto");
    assert_string_equal(str_at(f, "device"), "test cpu");
    assert_true(json_is_true(json_object_get(f, "quick")));
    assert_string_equal(str_at(f, "random_seed"), "7");
    assert_string_equal(str_at(f, "max_iterations"), "12");
    assert_string_equal(str_at(f, "kevolve_version"), "9.9.9");
    assert_string_equal(str_at(f, "initial_program"), "/tasks/naive.c");
    assert_int_equal(json_array_size(json_object_get(f, "initial_programs")), 1);
    /* The store's real path: run.db itself, absolute. */
    assert_string_equal(str_at(f, "store"), g_db);
    assert_string_equal(str_at(sum, "store_path"), g_db);
    /* The search's statistics table is there, empty: no draws yet. */
    assert_int_equal(json_array_size(json_object_get(sum, "mutators")), 0);
    json_decref(sum);
}

static void mutator_statistics_are_read_when_the_table_exists(void **state)
{
    (void)state;
    kv_store *s = NULL;
    char *err = NULL;
    if (kv_store_open(g_db, KV_STORE_READWRITE, &s, &err) != 0) fail_msg("%s", err);
    kv_mutator_stat tune = {"builtin:tune", 10, 4, 2, 3.5, 0.6};
    kv_mutator_stat gi = {"builtin:gi", 12, 1, 7, 0.5, 0.3};
    assert_int_equal(kv_store_put_mutator_stat(s, &tune), 0);
    assert_int_equal(kv_store_put_mutator_stat(s, &gi), 0);
    kv_store_close(s);
    json_t *sum = get_json("/api/summary", 200);
    json_t *m = json_object_get(sum, "mutators");
    assert_int_equal(json_array_size(m), 2);
    json_t *first = json_array_get(m, 0); /* by arm */
    assert_string_equal(str_at(first, "arm"), "builtin:gi");
    assert_int_equal(int_at(first, "draws"), 12);
    assert_int_equal(int_at(first, "failures"), 7);
    assert_true(json_number_value(json_object_get(json_array_get(m, 1), "weight")) == 0.6);
    json_decref(sum);
}

static void series_spans_every_iteration_and_every_island(void **state)
{
    (void)state;
    json_t *s = get_json("/api/series", 200);
    /* Iteration 9 holds only a failure: the range still ends there. */
    assert_int_equal(int_at(s, "max_iteration"), 9);
    assert_int_equal(int_at(s, "median_window"), 5);
    json_t *islands = json_object_get(s, "islands");
    assert_int_equal(json_array_size(islands), 3); /* island 2 never scored */
    json_t *i2 = json_array_get(islands, 2);
    assert_int_equal(json_array_size(json_object_get(i2, "points")), 0);
    assert_int_equal(int_at(i2, "scored"), 0);
    json_t *i1 = json_array_get(islands, 1);
    json_t *rises = json_object_get(i1, "rises");
    assert_int_equal(json_array_size(rises), 1); /* 1.5 at iteration 1; 1.2 is no rise */
    assert_int_equal(json_integer_value(json_array_get(json_array_get(rises, 0), 0)), 1);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(rises, 0), 2)), 2);
    /* The rolling median at iteration 7: of 1.5 and 1.2. */
    json_t *pts = json_object_get(i1, "points");
    json_t *last = json_array_get(pts, json_array_size(pts) - 1);
    assert_int_equal(int_at(last, "iteration"), 7);
    assert_true(fabs(json_number_value(json_object_get(last, "median")) - 1.35) < 1e-12);
    assert_true(json_number_value(json_object_get(last, "best")) == 1.5);
    json_decref(s);
    /* A window asked for is used. */
    s = get_json("/api/series?window=1", 200);
    assert_int_equal(int_at(s, "median_window"), 1);
    i1 = json_array_get(json_object_get(s, "islands"), 1);
    pts = json_object_get(i1, "points");
    last = json_array_get(pts, json_array_size(pts) - 1);
    assert_true(json_number_value(json_object_get(last, "median")) == 1.2);
    json_decref(s);
    json_decref(get_json("/api/series?window=0", 400));
}

static void best_history_follows_each_new_best_with_its_scenarios(void **state)
{
    (void)state;
    json_t *h = get_json("/api/best_history", 200);
    json_t *pts = json_object_get(h, "points");
    assert_int_equal(json_array_size(pts), 2);
    assert_int_equal(int_at(json_array_get(pts, 0), "id"), 1);
    json_t *p2 = json_array_get(pts, 1);
    assert_int_equal(int_at(p2, "id"), 2);
    assert_int_equal(int_at(p2, "iteration"), 1);
    json_t *sc = json_array_get(json_object_get(p2, "scenarios"), 0);
    assert_string_equal(str_at(sc, "name"), "decode_a");
    assert_true(json_number_value(json_object_get(sc, "speedup")) == 2.25);
    assert_int_equal(int_at(h, "max_iteration"), 9);
    json_decref(h);
}

static void a_failed_program_page_has_its_reason_and_artifacts(void **state)
{
    (void)state;
    json_t *d = get_json("/api/programs/3", 200);
    json_t *p = json_object_get(d, "program");
    assert_string_equal(str_at(p, "status"), "failed");
    assert_non_null(strstr(str_at(p, "status_reason"), "expected ';'"));
    assert_true(json_is_null(json_object_get(p, "fitness")));
    json_t *a = json_object_get(p, "artifacts");
    assert_string_equal(str_at(a, "reason"), "compile_error");
    assert_string_equal(str_at(a, "compile_log"), "naive.c:3: error: expected ';'");
    assert_non_null(json_string_value(json_object_get(d, "parent_source")));
    json_decref(d);
}

/* Serves a fresh copy of the run at DIR/run.db; returns the server. */
static kv_web_server *serve_copy(const char *dir, int *port)
{
    char *path = kv_asprintf("%s/run.db", dir);
    write_run(path);
    kv_web_options opts = {path, NULL, 0, 2};
    kv_web_server *srv = NULL;
    char *err = NULL;
    if (kv_web_start(&opts, &srv, &err) != 0) fail_msg("%s", err);
    *port = kv_web_port(srv);
    free(path);
    return srv;
}

static void a_replaced_store_is_served_under_a_new_identity(void **state)
{
    (void)state;
    char *dir = kv_asprintf("%s/replaced", g_dir);
    assert_int_equal(kv_mkdir_p(dir, 0755), 0);
    int port;
    kv_web_server *srv = serve_copy(dir, &port);
    char *before = NULL, *after = NULL, *again = NULL;
    json_decref(get_at(port, "/api/summary", 200, &before));
    assert_non_null(before);
    /* kevolve run --force: the file is deleted and a new run written. */
    char *path = kv_asprintf("%s/run.db", dir), *tmp = kv_asprintf("%s/new.db", dir);
    kv_store *s = NULL;
    char *err = NULL;
    if (kv_store_open(tmp, KV_STORE_CREATE, &s, &err) != 0) fail_msg("%s", err);
    add(s, 0, 0, 0, "initial", KV_STATUS_OK, 3.0, NULL, NULL);
    kv_store_close(s);
    assert_int_equal(rename(tmp, path), 0);
    json_t *sum = get_at(port, "/api/summary", 200, &after);
    assert_non_null(after);
    assert_string_not_equal(before, after);
    assert_int_equal(int_at(sum, "programs"), 1);
    json_decref(sum);
    /* The identity stays the same while the file does. */
    json_decref(get_at(port, "/api/programs", 200, &again));
    assert_string_equal(after, again);
    kv_web_stop(srv);
    free(before);
    free(after);
    free(again);
    free(path);
    free(tmp);
    free(dir);
}

static void a_deleted_store_is_answered_410_and_the_page_still_loads(void **state)
{
    (void)state;
    char *dir = kv_asprintf("%s/deleted", g_dir);
    assert_int_equal(kv_mkdir_p(dir, 0755), 0);
    int port;
    kv_web_server *srv = serve_copy(dir, &port);
    char *path = kv_asprintf("%s/run.db", dir);
    assert_int_equal(unlink(path), 0);
    json_t *e = get_at(port, "/api/summary", 410, NULL);
    assert_non_null(strstr(str_at(e, "error"), path));
    assert_string_equal(str_at(e, "store"), "gone");
    json_decref(e);
    http_answer a;
    assert_int_equal(http_request(port, "GET", "/", &a), 0);
    assert_int_equal(a.status, 200);
    http_answer_free(&a);
    kv_web_stop(srv);
    free(path);
    free(dir);
}

static void a_malformed_store_is_a_500_with_its_message(void **state)
{
    (void)state;
    char *dir = kv_asprintf("%s/malformed", g_dir);
    assert_int_equal(kv_mkdir_p(dir, 0755), 0);
    int port;
    kv_web_server *srv = serve_copy(dir, &port);
    char *path = kv_asprintf("%s/run.db", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE llm_calls", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    json_t *e = get_at(port, "/api/summary", 500, NULL);
    assert_non_null(strstr(str_at(e, "error"), "no such table: llm_calls"));
    assert_int_equal(int_at(e, "status"), 500);
    json_decref(e);
    kv_web_stop(srv);
    free(path);
    free(dir);
}

static void idle_connections_do_not_stop_a_normal_request(void **state)
{
    (void)state;
    enum { IDLE = 300 };
    int fds[IDLE];
    for (int i = 0; i < IDLE; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fds[i] >= 0);
        struct sockaddr_in addr = {0};
        addr.sin_family = AF_INET;
        addr.sin_port = htons((uint16_t)g_port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(connect(fds[i], (struct sockaddr *)&addr, sizeof addr), 0);
        /* A third of them send half a request and stall. */
        if (i % 3 == 0) assert_true(send(fds[i], "GET /api/summ", 13, MSG_NOSIGNAL) == 13);
    }
    json_t *sum = get_json("/api/summary", 200);
    assert_int_equal(int_at(sum, "programs"), 9);
    json_decref(sum);
    http_answer a;
    assert_int_equal(http_request(g_port, "GET", "/index.html", &a), 0);
    assert_int_equal(a.status, 200);
    http_answer_free(&a);
    for (int i = 0; i < IDLE; i++)
        close(fds[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_status_is_counted_as_such),
        cmocka_unit_test(failures_are_grouped_by_reason_with_example_programs),
        cmocka_unit_test(facts_come_from_the_effective_config_and_the_harness),
        cmocka_unit_test(series_spans_every_iteration_and_every_island),
        cmocka_unit_test(best_history_follows_each_new_best_with_its_scenarios),
        cmocka_unit_test(a_failed_program_page_has_its_reason_and_artifacts),
        cmocka_unit_test(idle_connections_do_not_stop_a_normal_request),
        cmocka_unit_test(a_replaced_store_is_served_under_a_new_identity),
        cmocka_unit_test(a_deleted_store_is_answered_410_and_the_page_still_loads),
        cmocka_unit_test(a_malformed_store_is_a_500_with_its_message),
        /* Last: it changes the shared store. */
        cmocka_unit_test(mutator_statistics_are_read_when_the_table_exists),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
