/* Scale test of the dashboard's API (src/web/): a store of 10,000 programs
 * (written through the store API) is served in pages that cover every
 * program, the score series stays within its bucket count, the grid and
 * the summary answer, and the static report holds every program. */
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_PROGRAMS 10000
#define N_ISLANDS 4

static char g_dir[64];
static char *g_db;
static kv_web_server *g_srv;
static int g_port;

/* Writes N_PROGRAMS programs in one transaction: a random tree over
 * N_ISLANDS islands, some failures, features on a 10x10 grid. */
static int make_store(void)
{
    kv_store *s = NULL;
    char *err = NULL;
    if (kv_store_open(g_db, KV_STORE_CREATE, &s, &err) != 0) {
        fprintf(stderr, "%s\n", err);
        free(err);
        return -1;
    }
    int rc = kv_store_set_meta(s, "random_seed", "7") || kv_store_begin(s);
    uint64_t x = 88172645463325252ull;
    for (int i = 1; i <= N_PROGRAMS && rc == 0; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        kv_program *p = kv_program_new();
        char src[64];
        snprintf(src, sizeof src, "x = %d\n", i);
        kv_program_set_source(p, src);
        p->parent_id = i > 1 ? 1 + (int64_t)(x % (uint64_t)(i - 1)) : 0;
        p->island = i > 1 ? (int)(x % N_ISLANDS) : 0;
        p->iteration = i - 1;
        p->generation = i > 1 ? 1 + (int)(x % 30) : 0;
        p->mutator = kv_strdup(i > 1 ? "gi" : "initial");
        if (i > 1 && x % 10 == 0) {
            p->status = KV_STATUS_FAILED;
            p->status_reason = kv_strdup("compile error");
        } else {
            p->fitness = (double)(x % 1000) / 10.0;
            p->metrics = json_pack("{s:f}", "combined_score", p->fitness);
            p->features = json_pack("{s:i, s:i}", "complexity", (int)((x >> 16) % 10), "diversity",
                                    (int)((x >> 24) % 10));
        }
        rc = kv_store_insert_program(s, p);
        kv_program_free(p);
    }
    if (rc == 0) rc = kv_store_commit(s);
    if (rc != 0) fprintf(stderr, "%s\n", kv_store_errmsg(s));
    kv_store_close(s);
    return rc;
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/kv_test_web_scale.XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    g_db = kv_asprintf("%s/run.db", g_dir);
    if (make_store() != 0) return -1;
    kv_web_options opts = {g_db, NULL, 0, 4};
    char *err = NULL;
    if (kv_web_start(&opts, &g_srv, &err) != 0) {
        fprintf(stderr, "%s\n", err);
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

static json_t *get_json(const char *target)
{
    http_answer a;
    assert_int_equal(http_request(g_port, "GET", target, &a), 0);
    if (a.status != 200) fail_msg("GET %s: %d %s", target, a.status, a.body);
    json_t *v = kv_json_loads(a.body);
    assert_non_null(v);
    http_answer_free(&a);
    return v;
}

static void default_pages_cover_ten_thousand_programs(void **state)
{
    (void)state;
    long long since = 0, seen = 0;
    int requests = 0, more = 1;
    while (more) {
        char target[64];
        snprintf(target, sizeof target, "/api/programs?since=%lld", since);
        json_t *page = get_json(target);
        size_t n = json_array_size(json_object_get(page, "programs"));
        assert_true(n <= 5000);
        seen += (long long)n;
        since = json_integer_value(json_object_get(page, "next_since"));
        more = json_is_true(json_object_get(page, "more"));
        json_decref(page);
        requests++;
        assert_true(requests <= 4);
    }
    assert_int_equal(seen, N_PROGRAMS);
    assert_int_equal(since, N_PROGRAMS);
}

static void series_and_grids_stay_small_at_scale(void **state)
{
    (void)state;
    json_t *series = get_json("/api/series");
    json_t *islands = json_object_get(series, "islands");
    assert_int_equal(json_array_size(islands), N_ISLANDS);
    for (size_t i = 0; i < N_ISLANDS; i++)
        assert_true(json_array_size(json_object_get(json_array_get(islands, i), "points")) <= 200);
    json_decref(series);
    for (int k = 0; k < N_ISLANDS; k++) {
        char target[48];
        snprintf(target, sizeof target, "/api/grid?island=%d", k);
        json_t *g = get_json(target);
        /* No config in this store: the grid sizes itself from the bins seen. */
        assert_int_equal(json_integer_value(json_array_get(json_object_get(g, "bins"), 0)), 10);
        assert_true(json_array_size(json_object_get(g, "cells")) <= 100);
        json_decref(g);
    }
    json_t *sum = get_json("/api/summary");
    assert_int_equal(json_integer_value(json_object_get(sum, "programs")), N_PROGRAMS);
    json_decref(sum);
}

static void report_holds_all_ten_thousand_programs(void **state)
{
    (void)state;
    char *out = kv_asprintf("%s/report.html", g_dir);
    char *err = NULL;
    if (kv_web_report(g_db, out, 20, &err) != 0) fail_msg("%s", err);
    char *html = kv_read_file(out, NULL);
    assert_non_null(html);
    /* The last program's compact row is in the page. */
    char row[32];
    snprintf(row, sizeof row, "[%d,", N_PROGRAMS);
    assert_non_null(strstr(html, row));
    free(html);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_pages_cover_ten_thousand_programs),
        cmocka_unit_test(series_and_grids_stay_small_at_scale),
        cmocka_unit_test(report_holds_all_ten_thousand_programs),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
