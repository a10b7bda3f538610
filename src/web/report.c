/* The static report (kevolve report): the dashboard page as one HTML file,
 * with its style and script inlined and the API's answers stored in it as
 * window.KV_DATA (keyed by the request the page would make), so it opens
 * from disk with no server. */
#include "web/web.h"

#include "store/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "web/api.h"
#include "web/assets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Parameters of one request: NAMES[i] = VALUES[i], N of them. */
typedef struct params {
    const char *names[4];
    char values[4][24];
    int n;
} params;

static const char *get_param(void *ud, const char *name)
{
    params *p = ud;
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->names[i], name) == 0) return p->values[i];
    return NULL;
}

/* Answers PATH with parameters P into DATA[KEY] (SP: the store's absolute
 * path, shown in the summary). Returns 0, or -1 with *ERR. */
static int add(kv_store *s, const char *sp, json_t *data, const char *key, const char *path,
               params *p, char **err)
{
    json_t *body = NULL;
    int status = kv_web_api(s, sp, path, get_param, p, &body);
    if (status != 200) {
        *err = kv_asprintf("%s: %s", key, json_string_value(json_object_get(body, "error")));
        json_decref(body);
        return -1;
    }
    json_object_set_new(data, key, body);
    return 0;
}

/* Every program in compact form, as one page answering the page's first
 * request (so the page finds it without a server). */
static int add_programs(kv_store *s, const char *sp, json_t *data, char **err)
{
    json_t *all = NULL;
    long long since = 0;
    for (;;) {
        params p = {{"since", "limit"}, {{0}}, 2};
        snprintf(p.values[0], sizeof p.values[0], "%lld", since);
        snprintf(p.values[1], sizeof p.values[1], "%d", KV_WEB_PAGE_MAX);
        json_t *page = NULL;
        if (kv_web_api(s, sp, "/api/programs", get_param, &p, &page) != 200) {
            *err = kv_asprintf("programs: %s", json_string_value(json_object_get(page, "error")));
            json_decref(page);
            json_decref(all);
            return -1;
        }
        if (!all)
            all = json_incref(page);
        else
            json_array_extend(json_object_get(all, "programs"), json_object_get(page, "programs"));
        int more = json_is_true(json_object_get(page, "more"));
        since = json_integer_value(json_object_get(page, "next_since"));
        json_decref(page);
        if (!more) break;
    }
    json_object_set_new(all, "next_since", json_integer(since));
    json_object_set_new(all, "more", json_false());
    char key[64];
    snprintf(key, sizeof key, "/api/programs?since=0&limit=%d", KV_WEB_PAGE_DEFAULT);
    json_object_set_new(data, key, all);
    return 0;
}

/* Appends ID to IDS unless it is there. */
static void add_id(json_t *ids, json_t *id)
{
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v)
    {
        if (json_integer_value(v) == json_integer_value(id)) return;
    }
    json_array_append(ids, id);
}

/* The full records of the TOP_N best programs, of the initial ones and of
 * one program per failure reason (the earliest and the latest), so that a
 * reader of the report can open a failure's page too. */
static int add_details(kv_store *s, const char *sp, json_t *data, int top_n, char **err)
{
    json_t *scores = kv_store_web_scores(s);
    if (!scores) {
        *err = kv_strdup(kv_store_errmsg(s));
        return -1;
    }
    json_t *sum = json_object_get(data, "/api/summary");
    json_t *ids = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(sum, "initial_programs"), i, v)
    {
        add_id(ids, json_object_get(v, "id"));
    }
    /* Rows are [island, iteration, fitness, id]; pick the TOP_N by fitness. */
    size_t n = json_array_size(scores);
    for (int k = 0; k < top_n && n > 0; k++) {
        double best = 0;
        size_t at = n;
        for (i = 0; i < n; i++) {
            json_t *row = json_array_get(scores, i);
            double f = json_number_value(json_array_get(row, 2));
            if (json_array_size(row) < 5 && (at == n || f > best)) {
                best = f;
                at = i;
            }
        }
        if (at == n) break;
        json_t *row = json_array_get(scores, at);
        add_id(ids, json_array_get(row, 3));
        json_array_append_new(row, json_true()); /* marks it taken */
    }
    json_decref(scores);
    json_array_foreach(json_object_get(sum, "failure_reasons"), i, v)
    {
        add_id(ids, json_object_get(v, "example_id"));
        add_id(ids, json_object_get(v, "last_id"));
    }
    json_t *id;
    json_array_foreach(ids, i, id)
    {
        char path[64];
        snprintf(path, sizeof path, "/api/programs/%lld", (long long)json_integer_value(id));
        if (json_object_get(data, path)) continue;
        json_t *body = NULL;
        if (kv_web_api(s, sp, path, NULL, NULL, &body) == 200)
            json_object_set_new(data, path, body);
        else
            json_decref(body);
    }
    json_decref(ids);
    return 0;
}

/* Builds window.KV_DATA for the store S. Returns it, or NULL with *ERR. */
static json_t *report_data(kv_store *s, const char *sp, int top_n, char **err)
{
    json_t *data = json_object();
    params none = {{0}, {{0}}, 0};
    params series = {{"buckets"}, {"200"}, 1};
    params events = {{"since", "limit"}, {"0", "1000"}, 2};
    if (add(s, sp, data, "/api/summary", "/api/summary", &none, err) != 0 ||
        add(s, sp, data, "/api/series?buckets=200", "/api/series", &series, err) != 0 ||
        add(s, sp, data, "/api/events?since=0&limit=1000", "/api/events", &events, err) != 0 ||
        add(s, sp, data, "/api/best_history", "/api/best_history", &none, err) != 0 ||
        add(s, sp, data, "/api/objectives", "/api/objectives", &none, err) != 0 ||
        add_programs(s, sp, data, err) != 0 || add_details(s, sp, data, top_n, err) != 0) {
        json_decref(data);
        return NULL;
    }
    json_t *sum = json_object_get(data, "/api/summary");
    json_int_t islands = json_integer_value(json_object_get(sum, "num_islands"));
    if (islands < (json_int_t)json_array_size(json_object_get(sum, "islands")))
        islands = (json_int_t)json_array_size(json_object_get(sum, "islands"));
    for (json_int_t k = 0; k < islands; k++) {
        params grid = {{"island"}, {{0}}, 1};
        snprintf(grid.values[0], sizeof grid.values[0], "%lld", (long long)k);
        char key[64];
        snprintf(key, sizeof key, "/api/grid?island=%lld", (long long)k);
        if (add(s, sp, data, key, "/api/grid", &grid, err) != 0) {
            json_decref(data);
            return NULL;
        }
    }
    return data;
}

/* Appends the page TEMPLATE to OUT with every stylesheet link and script
 * of the page's own files inlined, and DATA_JS (the data script) before
 * the first script. Returns 0, or -1 with *ERR when a file it names is not
 * embedded or the page has no script. */
static int inline_page(kv_buf *out, const char *template, const char *data_js, char **err)
{
    static const struct {
        const char *open, *close, *tag_open, *tag_close;
    } kinds[] = {{"<link rel=\"stylesheet\" href=\"", "\">", "<style>\n", "</style>"},
                 {"<script src=\"", "\"></script>", "<script>\n", "</script>"}};
    const char *at = template;
    int scripts = 0;
    for (;;) {
        const char *next = NULL;
        size_t kind = 0;
        for (size_t k = 0; k < 2; k++) {
            const char *hit = strstr(at, kinds[k].open);
            if (hit && (!next || hit < next)) {
                next = hit;
                kind = k;
            }
        }
        if (!next) break;
        const char *name = next + strlen(kinds[kind].open);
        const char *end = strstr(name, kinds[kind].close);
        if (!end || end - name > 64) {
            *err = kv_strdup("index.html: an unterminated link or script tag");
            return -1;
        }
        char path[80];
        snprintf(path, sizeof path, "/%.*s", (int)(end - name), name);
        const kv_web_asset *a = kv_web_asset_find(path);
        if (!a) {
            *err = kv_asprintf("index.html names %s, which this build does not embed", path);
            return -1;
        }
        kv_buf_append(out, at, (size_t)(next - at));
        if (kind == 1 && scripts++ == 0) kv_buf_puts(out, data_js);
        kv_buf_puts(out, kinds[kind].tag_open);
        kv_buf_append(out, (const char *)a->data, a->len);
        kv_buf_puts(out, kinds[kind].tag_close);
        at = end + strlen(kinds[kind].close);
    }
    kv_buf_puts(out, at);
    if (!scripts) {
        *err = kv_strdup("index.html has no script");
        return -1;
    }
    return 0;
}

int kv_web_report(const char *store_path, const char *out_path, int top_n, char **err)
{
    *err = NULL;
    const kv_web_asset *html = kv_web_asset_find("/index.html");
    if (!html) {
        *err = kv_strdup("the dashboard's page is missing from this build");
        return -1;
    }
    kv_store *s = NULL;
    char *abs_path = kv_path_absolute(store_path);
    if (kv_store_open(abs_path, KV_STORE_READONLY, &s, err) != 0) {
        free(abs_path);
        return -1;
    }
    json_t *data = report_data(s, abs_path, top_n, err);
    free(abs_path);
    kv_store_close(s);
    if (!data) return -1;
    /* JSON_ESCAPE_SLASH writes "</script>" as "<\/script>", so the data
     * cannot end its script element. */
    char *text = json_dumps(data, JSON_COMPACT | JSON_ESCAPE_SLASH);
    json_decref(data);
    char *data_js = kv_asprintf("<script>window.KV_DATA = %s;</script>\n", text);
    free(text);
    kv_buf page = KV_BUF_INIT;
    int rc = inline_page(&page, (const char *)html->data, data_js, err);
    free(data_js);
    if (rc == 0 && kv_write_file(out_path, page.data, page.len) != 0) {
        *err = kv_asprintf("%s: cannot write: %s", out_path, strerror(errno));
        rc = -1;
    }
    kv_buf_free(&page);
    return rc;
}
