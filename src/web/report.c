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

/* Answers PATH with parameters P into DATA[KEY]. Returns 0, or -1 with *ERR. */
static int add(kv_store *s, json_t *data, const char *key, const char *path, params *p, char **err)
{
    json_t *body = NULL;
    int status = kv_web_api(s, path, get_param, p, &body);
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
static int add_programs(kv_store *s, json_t *data, char **err)
{
    json_t *all = NULL;
    long long since = 0;
    for (;;) {
        params p = {{"since", "limit"}, {{0}}, 2};
        snprintf(p.values[0], sizeof p.values[0], "%lld", since);
        snprintf(p.values[1], sizeof p.values[1], "%d", KV_WEB_PAGE_MAX);
        json_t *page = NULL;
        if (kv_web_api(s, "/api/programs", get_param, &p, &page) != 200) {
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

/* The full records of the TOP_N best programs and of the initial one. */
static int add_details(kv_store *s, json_t *data, int top_n, char **err)
{
    json_t *scores = kv_store_web_scores(s);
    if (!scores) {
        *err = kv_strdup(kv_store_errmsg(s));
        return -1;
    }
    /* Rows are [island, iteration, fitness, id]; pick the TOP_N by fitness. */
    size_t n = json_array_size(scores);
    json_t *ids = json_array();
    json_array_append_new(ids, json_integer(1));
    for (int k = 0; k < top_n && n > 0; k++) {
        double best = 0;
        size_t at = n;
        for (size_t i = 0; i < n; i++) {
            json_t *row = json_array_get(scores, i);
            double f = json_number_value(json_array_get(row, 2));
            if (json_array_size(row) < 5 && (at == n || f > best)) {
                best = f;
                at = i;
            }
        }
        if (at == n) break;
        json_t *row = json_array_get(scores, at);
        json_array_append(ids, json_array_get(row, 3));
        json_array_append_new(row, json_true()); /* marks it taken */
    }
    json_decref(scores);
    int rc = 0;
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id)
    {
        char path[64];
        snprintf(path, sizeof path, "/api/programs/%lld", (long long)json_integer_value(id));
        if (json_object_get(data, path)) continue;
        json_t *body = NULL;
        if (kv_web_api(s, path, NULL, NULL, &body) == 200)
            json_object_set_new(data, path, body);
        else
            json_decref(body); /* an empty run has no program 1 */
    }
    json_decref(ids);
    return rc;
}

/* Builds window.KV_DATA for the store S. Returns it, or NULL with *ERR. */
static json_t *report_data(kv_store *s, int top_n, char **err)
{
    json_t *data = json_object();
    params none = {{0}, {{0}}, 0};
    params series = {{"buckets"}, {"200"}, 1};
    params events = {{"since", "limit"}, {"0", "1000"}, 2};
    if (add(s, data, "/api/summary", "/api/summary", &none, err) != 0 ||
        add(s, data, "/api/series?buckets=200", "/api/series", &series, err) != 0 ||
        add(s, data, "/api/events?since=0&limit=1000", "/api/events", &events, err) != 0 ||
        add_programs(s, data, err) != 0 || add_details(s, data, top_n, err) != 0) {
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
        if (add(s, data, key, "/api/grid", &grid, err) != 0) {
            json_decref(data);
            return NULL;
        }
    }
    return data;
}

/* Appends TEMPLATE to OUT with the first occurrence of NEEDLE replaced by
 * the concatenation of PARTS (NULL-terminated). -1 when NEEDLE is absent. */
static int replace_once(kv_buf *out, const char *template, const char *needle,
                        const char *const *parts)
{
    const char *at = strstr(template, needle);
    if (!at) return -1;
    kv_buf_append(out, template, (size_t)(at - template));
    for (const char *const *p = parts; *p; p++)
        kv_buf_puts(out, *p);
    kv_buf_puts(out, at + strlen(needle));
    return 0;
}

int kv_web_report(const char *store_path, const char *out_path, int top_n, char **err)
{
    *err = NULL;
    const kv_web_asset *html = kv_web_asset_find("/index.html");
    const kv_web_asset *css = kv_web_asset_find("/style.css");
    const kv_web_asset *js = kv_web_asset_find("/app.js");
    if (!html || !css || !js) {
        *err = kv_strdup("the dashboard's page is missing from this build");
        return -1;
    }
    kv_store *s = NULL;
    if (kv_store_open(store_path, KV_STORE_READONLY, &s, err) != 0) return -1;
    json_t *data = report_data(s, top_n, err);
    kv_store_close(s);
    if (!data) return -1;
    /* JSON_ESCAPE_SLASH writes "</script>" as "<\/script>", so the data
     * cannot end its script element. */
    char *text = json_dumps(data, JSON_COMPACT | JSON_ESCAPE_SLASH);
    json_decref(data);
    const char *style[] = {"<style>\n", (const char *)css->data, "</style>", NULL};
    const char *script[] = {"<script>window.KV_DATA = ", text,        ";</script>\n<script>\n",
                            (const char *)js->data,      "</script>", NULL};
    kv_buf a = KV_BUF_INIT, b = KV_BUF_INIT;
    int rc = replace_once(&a, (const char *)html->data,
                          "<link rel=\"stylesheet\" href=\"style.css\">", style);
    if (rc == 0) rc = replace_once(&b, a.data, "<script src=\"app.js\"></script>", script);
    free(text);
    if (rc != 0)
        *err = kv_strdup("index.html lacks the style.css link or the app.js script tag");
    else if (kv_write_file(out_path, b.data, b.len) != 0) {
        *err = kv_asprintf("%s: cannot write: %s", out_path, strerror(errno));
        rc = -1;
    }
    kv_buf_free(&a);
    kv_buf_free(&b);
    return rc;
}
