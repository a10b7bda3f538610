/* Tests of the dashboard's HTTP API (src/web/) over real HTTP against a
 * store made by a real run of the kevolve binary ($KV_BINARY) on the tiny
 * example: the answers agree with the store, pages cover every program,
 * new programs show up while a writer adds them, bad requests get a 4xx
 * with a message and never bring the server down, and the static report
 * holds the same data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "web/web.h"

#include "test_web_http.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[64];
static char *g_db;
static kv_web_server *g_srv;
static int g_port;

/* Runs the tiny example once into a fresh directory and serves its store. */
static int group_setup(void **state)
{
    (void)state;
    const char *bin = getenv("KV_BINARY"), *src = getenv("KV_SOURCE_DIR");
    if (!bin || !src) {
        fprintf(stderr,
                "test_web_api: KV_BINARY and KV_SOURCE_DIR must be set (ctest sets them)\n");
        return -1;
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/kv_test_web.XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    char *cmd = kv_asprintf("'%s' run --config "
                            "'%s/tests/data/tiny/config.yaml' --output '%s/out'"
                            " --iterations 40 >'%s/run.log' 2>&1",
                            bin, src, g_dir, g_dir);
    int rc = system(cmd);
    free(cmd);
    if (rc != 0) {
        fprintf(stderr, "test_web_api: the example run failed (see %s/run.log)\n", g_dir);
        return -1;
    }
    g_db = kv_asprintf("%s/out/run.db", g_dir);
    kv_web_options opts = {g_db, NULL, 0, 4};
    char *err = NULL;
    if (kv_web_start(&opts, &g_srv, &err) != 0) {
        fprintf(stderr, "test_web_api: %s\n", err);
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

/* GET TARGET expecting STATUS; returns the parsed JSON body (never NULL). */
static json_t *get_json(const char *target, int status)
{
    http_answer a;
    assert_int_equal(http_request(g_port, "GET", target, &a), 0);
    if (a.status != status)
        fail_msg("GET %s: status %d, expected %d: %s", target, a.status, status, a.body);
    json_t *v = kv_json_loads(a.body);
    if (!v) fail_msg("GET %s: body is not JSON: %.200s", target, a.body);
    assert_non_null(strstr(a.headers, "application/json"));
    http_answer_free(&a);
    return v;
}

static kv_store *open_store(int mode)
{
    kv_store *s = NULL;
    char *err = NULL;
    if (kv_store_open(g_db, mode, &s, &err) != 0) fail_msg("%s", err);
    return s;
}

static void summary_agrees_with_the_store(void **state)
{
    (void)state;
    kv_store *s = open_store(KV_STORE_READONLY);
    int64_t counts[KV_STATUS_COUNT];
    assert_int_equal(kv_store_status_counts(s, counts), 0);
    kv_program *best = kv_store_best_program(s);
    assert_non_null(best);
    json_t *sum = get_json("/api/summary", 200);
    assert_int_equal(json_integer_value(json_object_get(sum, "programs")),
                     kv_store_count_programs(s, -1));
    assert_int_equal(json_integer_value(json_object_get(sum, "max_iteration")), 40);
    json_t *by = json_object_get(sum, "by_status");
    for (int i = 0; i < KV_STATUS_COUNT; i++)
        assert_int_equal(json_integer_value(json_object_get(by, kv_status_name((kv_status)i))),
                         counts[i]);
    json_t *b = json_object_get(sum, "best");
    assert_int_equal(json_integer_value(json_object_get(b, "id")), best->id);
    assert_true(json_number_value(json_object_get(b, "fitness")) == best->fitness);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(sum, "meta"), "random_seed")), "1234");
    assert_int_equal(json_integer_value(json_object_get(sum, "num_islands")), 3);
    assert_int_equal(json_array_size(json_object_get(sum, "islands")), 3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sum, "llm"), "calls")), 0);
    json_decref(sum);
    kv_program_free(best);
    kv_store_close(s);
}

static void program_pages_cover_every_program_once_in_id_order(void **state)
{
    (void)state;
    kv_store *s = open_store(KV_STORE_READONLY);
    int64_t total = kv_store_count_programs(s, -1);
    kv_store_close(s);
    long long since = 0, seen = 0, last = 0;
    int pages = 0;
    for (;;) {
        char target[96];
        snprintf(target, sizeof target, "/api/programs?since=%lld&limit=7", since);
        json_t *page = get_json(target, 200);
        json_t *rows = json_object_get(page, "programs");
        size_t i;
        json_t *row;
        json_array_foreach(rows, i, row)
        {
            long long id = json_integer_value(json_array_get(row, 0));
            assert_true(id > last);
            last = id;
            seen++;
            assert_int_equal(json_array_size(row), 12);
        }
        pages++;
        since = json_integer_value(json_object_get(page, "next_since"));
        int more = json_is_true(json_object_get(page, "more"));
        json_decref(page);
        if (!more) break;
        assert_true(pages < 100);
    }
    assert_int_equal(seen, total);
    assert_int_equal(pages, (int)(total / 7) + 1);
}

static void program_page_has_source_metrics_lineage_and_parent_source(void **state)
{
    (void)state;
    kv_store *s = open_store(KV_STORE_READONLY);
    kv_program *best = kv_store_best_program(s);
    kv_program *parent = kv_store_get_program(s, best->parent_id);
    char target[64];
    snprintf(target, sizeof target, "/api/programs/%lld", (long long)best->id);
    json_t *d = get_json(target, 200);
    json_t *p = json_object_get(d, "program");
    assert_int_equal(json_integer_value(json_object_get(p, "id")), best->id);
    assert_string_equal(json_string_value(json_object_get(p, "source")), best->source);
    assert_string_equal(json_string_value(json_object_get(d, "parent_source")), parent->source);
    assert_int_equal(json_integer_value(json_object_get(p, "parent_id")), best->parent_id);
    assert_true(json_number_value(json_object_get(json_object_get(p, "metrics"),
                                                  "combined_score")) == best->fitness);
    assert_true(json_is_array(json_object_get(d, "llm_calls")));
    assert_true(json_is_object(json_object_get(p, "artifacts")));
    json_decref(d);
    snprintf(target, sizeof target, "/api/programs/%lld/llm_calls", (long long)best->id);
    d = get_json(target, 200);
    assert_true(json_is_array(d));
    json_decref(d);
    kv_program_free(parent);
    kv_program_free(best);
    kv_store_close(s);
}

static void series_best_never_falls_and_ends_at_the_island_best(void **state)
{
    (void)state;
    json_t *sum = get_json("/api/summary", 200);
    json_t *series = get_json("/api/series?buckets=10", 200);
    json_t *islands = json_object_get(series, "islands");
    assert_int_equal(json_array_size(islands), 3);
    size_t i;
    json_t *isl;
    json_array_foreach(islands, i, isl)
    {
        json_t *points = json_object_get(isl, "points");
        assert_true(json_array_size(points) >= 1 && json_array_size(points) <= 10);
        double prev = -INFINITY;
        size_t k;
        json_t *pt;
        json_array_foreach(points, k, pt)
        {
            double b = json_number_value(json_object_get(pt, "best"));
            assert_true(b >= prev);
            assert_true(json_number_value(json_object_get(pt, "median")) <= b);
            prev = b;
        }
        double island_best = json_number_value(
            json_object_get(json_array_get(json_object_get(sum, "islands"), i), "best_fitness"));
        assert_true(prev == island_best);
    }
    json_decref(series);
    json_decref(sum);
}

/* The range of the placed programs' values, per dimension (complexity, a). */
typedef struct ranges {
    double lo[2], hi[2];
} ranges;

static int widen(kv_program *p, void *ud)
{
    ranges *r = ud;
    if (!p->features) return 0;
    double v[2] = {(double)strlen(p->source), kv_program_metric(p, "a")};
    for (int k = 0; k < 2; k++) {
        if (v[k] < r->lo[k]) r->lo[k] = v[k];
        if (v[k] > r->hi[k]) r->hi[k] = v[k];
    }
    return 0;
}

/* Grid check: each cell's program is OK, on the island, in that cell, and no
 * program of the island in that cell scores higher; the axes give the range
 * of values the bins cut (every placed program's, all islands). */
static void grid_cells_hold_the_best_program_of_their_cell(void **state)
{
    (void)state;
    kv_store *s = open_store(KV_STORE_READONLY);
    ranges want = {{INFINITY, INFINITY}, {-INFINITY, -INFINITY}};
    assert_int_equal(kv_store_each_program(s, KV_STATUS_OK, 1, widen, &want), 0);
    for (int island = 0; island < 3; island++) {
        char target[64];
        snprintf(target, sizeof target, "/api/grid?island=%d", island);
        json_t *g = get_json(target, 200);
        json_t *axes = json_object_get(g, "axes");
        assert_int_equal(json_array_size(axes), 2);
        for (int k = 0; k < 2; k++) {
            json_t *ax = json_array_get(axes, (size_t)k);
            json_t *range = json_object_get(ax, "range");
            assert_string_equal(json_string_value(json_object_get(ax, "name")),
                                k ? "a" : "complexity");
            assert_int_equal(json_integer_value(json_object_get(ax, "bins")), k ? 8 : 4);
            assert_true(json_number_value(json_array_get(range, 0)) == want.lo[k]);
            assert_true(json_number_value(json_array_get(range, 1)) == want.hi[k]);
        }
        assert_string_equal(json_string_value(json_array_get(json_object_get(g, "dimensions"), 0)),
                            "complexity");
        assert_int_equal(json_integer_value(json_array_get(json_object_get(g, "bins"), 0)), 4);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(g, "bins"), 1)), 8);
        json_t *cells = json_object_get(g, "cells");
        assert_true(json_array_size(cells) > 0);
        size_t i;
        json_t *c;
        json_array_foreach(cells, i, c)
        {
            kv_program *p = kv_store_get_program(s, json_integer_value(json_object_get(c, "id")));
            assert_non_null(p);
            assert_int_equal(p->island, island);
            assert_int_equal(p->status, KV_STATUS_OK);
            assert_true(p->fitness == json_number_value(json_object_get(c, "fitness")));
            assert_int_equal(json_integer_value(json_object_get(p->features, "complexity")),
                             json_integer_value(json_object_get(c, "x")));
            assert_int_equal(json_integer_value(json_object_get(p->features, "a")),
                             json_integer_value(json_object_get(c, "y")));
            kv_program_free(p);
        }
        json_decref(g);
    }
    kv_store_close(s);
    json_t *e = get_json("/api/grid?island=3", 404);
    assert_non_null(strstr(json_string_value(json_object_get(e, "error")), "no island 3"));
    json_decref(e);
}

static void new_programs_appear_while_a_writer_adds_them(void **state)
{
    (void)state;
    json_t *sum = get_json("/api/summary", 200);
    long long max_id = json_integer_value(json_object_get(sum, "max_id"));
    json_decref(sum);
    kv_store *w = open_store(KV_STORE_READWRITE);
    kv_program *p = kv_program_new();
    kv_program_set_source(p, "print('live')\n");
    p->parent_id = 1;
    p->island = 2;
    p->generation = 1;
    p->iteration = 41;
    p->mutator = kv_strdup("llm:test-model");
    p->status = KV_STATUS_FAILED;
    p->status_reason = kv_strdup("evaluator crashed\nwith details");
    assert_int_equal(kv_store_insert_program(w, p), 0);
    char target[96];
    snprintf(target, sizeof target, "/api/programs?since=%lld", max_id);
    json_t *page = get_json(target, 200);
    json_t *rows = json_object_get(page, "programs");
    assert_int_equal(json_array_size(rows), 1);
    json_t *row = json_array_get(rows, 0);
    assert_int_equal(json_integer_value(json_array_get(row, 0)), p->id);
    assert_string_equal(json_string_value(json_array_get(row, 6)), "failed");
    assert_true(json_is_null(json_array_get(row, 7)));
    json_decref(page);
    sum = get_json("/api/summary", 200);
    json_t *reason = json_array_get(json_object_get(sum, "failure_reasons"), 0);
    assert_string_equal(json_string_value(json_object_get(reason, "reason")), "evaluator crashed");
    json_decref(sum);
    kv_program_free(p);
    kv_store_close(w);
}

static void bad_requests_get_a_4xx_with_a_message(void **state)
{
    (void)state;
    static const struct {
        const char *method, *target;
        int status;
        const char *says;
    } cases[] = {
        {"GET", "/api/programs/999999", 404, "no program 999999"},
        {"GET", "/api/programs/abc", 400, "not a positive integer"},
        {"GET", "/api/programs/-3", 400, "not a positive integer"},
        {"GET", "/api/programs/1/nope", 404, "no such route"},
        {"GET", "/api/nope", 404, "no such route"},
        {"GET", "/nope.html", 404, "not found"},
        {"GET", "/../../etc/passwd", 404, "not found"},
        {"GET", "/api/programs?since=x", 400, "not an integer"},
        {"GET", "/api/programs?limit=0", 400, "below the minimum"},
        {"GET", "/api/programs?limit=99999999", 413, "exceeds the maximum"},
        {"GET", "/api/programs?since=99999999999999999999999", 400, "not an integer"},
        {"GET", "/api/series?buckets=5000", 413, "exceeds the maximum"},
        {"GET", "/api/grid", 400, "'island' is required"},
        {"POST", "/api/summary", 405, "read-only"},
        {"DELETE", "/api/programs/1", 405, "read-only"},
        {"PUT", "/", 405, "read-only"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_answer a;
        assert_int_equal(http_request(g_port, cases[i].method, cases[i].target, &a), 0);
        if (a.status != cases[i].status)
            fail_msg("%s %s: status %d, expected %d (%s)", cases[i].method, cases[i].target,
                     a.status, cases[i].status, a.body);
        json_t *v = kv_json_loads(a.body);
        assert_non_null(v);
        const char *msg = json_string_value(json_object_get(v, "error"));
        if (!msg || !strstr(msg, cases[i].says))
            fail_msg("%s %s: message '%s' lacks '%s'", cases[i].method, cases[i].target,
                     msg ? msg : "(none)", cases[i].says);
        json_decref(v);
        http_answer_free(&a);
    }
    /* An oversized query. */
    kv_buf t = KV_BUF_INIT;
    kv_buf_puts(&t, "/api/summary?x=");
    for (int i = 0; i < 3000; i++)
        kv_buf_putc(&t, 'a');
    json_t *v = get_json(t.data, 413);
    json_decref(v);
    kv_buf_free(&t);
}

static void malformed_requests_never_bring_the_server_down(void **state)
{
    (void)state;
    static const char *const garbage[] = {
        "\r\n\r\n",
        "GARBAGE\r\n\r\n",
        "GET\r\n\r\n",
        "GET /api/summary HTTP/9.9\r\n\r\n",
        "GET /api/summary HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
        "GET /api/programs/%00%ff HTTP/1.0\r\n\r\n",
        "POST /api/summary HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\nabc",
        "GET /api/summary HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    };
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        http_answer a;
        assert_int_equal(http_raw(g_port, garbage[i], strlen(garbage[i]), &a), 0);
        assert_true(a.status == 0 || (a.status >= 200 && a.status < 600));
        http_answer_free(&a);
    }
    /* A header far beyond the connection's memory limit. */
    kv_buf big = KV_BUF_INIT;
    kv_buf_puts(&big, "GET /api/summary HTTP/1.0\r\nX-Big: ");
    for (int i = 0; i < 200000; i++)
        kv_buf_putc(&big, 'b');
    kv_buf_puts(&big, "\r\n\r\n");
    http_answer a;
    assert_int_equal(http_raw(g_port, big.data, big.len, &a), 0);
    assert_true(a.status == 0 || (a.status >= 400 && a.status < 500));
    http_answer_free(&a);
    kv_buf_free(&big);
    json_t *v = get_json("/api/summary", 200); /* still serving */
    json_decref(v);
}

/* One client thread: N summary and page requests, counting the 200s. */
static void *client(void *arg)
{
    int *ok = arg;
    for (int i = 0; i < 20; i++) {
        http_answer a;
        if (http_request(g_port, "GET", i % 2 ? "/api/summary" : "/api/programs?limit=20", &a) ==
                0 &&
            a.status == 200 && a.body[0] == '{')
            (*ok)++;
        http_answer_free(&a);
    }
    return NULL;
}

static void many_concurrent_clients_all_get_answers(void **state)
{
    (void)state;
    pthread_t t[8];
    int ok[8] = {0};
    for (int i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&t[i], NULL, client, &ok[i]), 0);
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(ok[i], 20);
    }
}

static void the_page_and_its_script_are_served_from_the_binary(void **state)
{
    (void)state;
    http_answer a;
    assert_int_equal(http_request(g_port, "GET", "/", &a), 0);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.headers, "text/html"));
    assert_non_null(strstr(a.body, "<script src=\"app.js\"></script>"));
    http_answer_free(&a);
    assert_int_equal(http_request(g_port, "GET", "/app.js", &a), 0);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.headers, "text/javascript"));
    assert_non_null(strstr(a.body, "/api/programs?since="));
    http_answer_free(&a);
    assert_int_equal(http_request(g_port, "HEAD", "/style.css", &a), 0);
    assert_int_equal(a.status, 200);
    http_answer_free(&a);
}

static void server_binds_localhost_and_refuses_a_missing_store(void **state)
{
    (void)state;
    kv_web_options opts = {"/nonexistent/run.db", NULL, 0, 2};
    kv_web_server *srv = NULL;
    char *err = NULL;
    assert_int_equal(kv_web_start(&opts, &srv, &err), -1);
    assert_null(srv);
    assert_non_null(strstr(err, "no such file"));
    free(err);
    /* The same port twice cannot be bound. */
    kv_web_options again = {g_db, "127.0.0.1", g_port, 2};
    assert_int_equal(kv_web_start(&again, &srv, &err), -1);
    assert_non_null(strstr(err, "cannot listen"));
    free(err);
}

static void report_holds_the_same_data_in_one_file(void **state)
{
    (void)state;
    char *out = kv_asprintf("%s/report.html", g_dir);
    char *err = NULL;
    if (kv_web_report(g_db, out, 5, &err) != 0) fail_msg("%s", err);
    char *html = kv_read_file(out, NULL);
    assert_non_null(html);
    /* Every script and the style are inlined: the file needs nothing beside it. */
    assert_null(strstr(html, "<script src="));
    assert_null(strstr(html, "rel=\"stylesheet\""));
    assert_non_null(strstr(html, "function renderDiff("));
    const char *start = strstr(html, "window.KV_DATA = ");
    assert_non_null(start);
    start += strlen("window.KV_DATA = ");
    const char *end = strstr(start, ";</script>");
    assert_non_null(end);
    char *text = kv_strndup(start, (size_t)(end - start));
    json_t *data = kv_json_loads(text);
    assert_non_null(data);
    json_t *sum = get_json("/api/summary", 200);
    json_t *rsum = json_object_get(data, "/api/summary");
    assert_int_equal(json_integer_value(json_object_get(rsum, "programs")),
                     json_integer_value(json_object_get(sum, "programs")));
    json_t *all = json_object_get(data, "/api/programs?since=0&limit=5000");
    assert_int_equal(json_array_size(json_object_get(all, "programs")),
                     json_integer_value(json_object_get(sum, "programs")));
    char key[64];
    snprintf(key, sizeof key, "/api/programs/%lld",
             (long long)json_integer_value(json_object_get(json_object_get(sum, "best"), "id")));
    assert_non_null(json_object_get(data, key));
    assert_non_null(json_object_get(data, "/api/grid?island=2"));
    assert_non_null(json_object_get(data, "/api/series?buckets=200"));
    json_decref(sum);
    json_decref(data);
    free(text);
    free(html);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summary_agrees_with_the_store),
        cmocka_unit_test(program_pages_cover_every_program_once_in_id_order),
        cmocka_unit_test(program_page_has_source_metrics_lineage_and_parent_source),
        cmocka_unit_test(series_best_never_falls_and_ends_at_the_island_best),
        cmocka_unit_test(grid_cells_hold_the_best_program_of_their_cell),
        cmocka_unit_test(bad_requests_get_a_4xx_with_a_message),
        cmocka_unit_test(malformed_requests_never_bring_the_server_down),
        cmocka_unit_test(many_concurrent_clients_all_get_answers),
        cmocka_unit_test(the_page_and_its_script_are_served_from_the_binary),
        cmocka_unit_test(server_binds_localhost_and_refuses_a_missing_store),
        cmocka_unit_test(report_holds_the_same_data_in_one_file),
        /* Last: it adds a program to the store. */
        cmocka_unit_test(new_programs_appear_while_a_writer_adds_them),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
