/* The run's devices as the store saw them (see store.h, kv_store_devices):
 * the manifest's listing, the evaluations stored per device, and the
 * devices the evaluator took out of rotation (events "device_out"). */
#include "store/store_internal.h"
#include "util/buf.h"
#include "util/json.h"

#include <stdlib.h>
#include <string.h>

/* The entry of DEVICE in OUT, made when missing. */
static json_t *entry(json_t *out, const char *backend, long long device)
{
    size_t i;
    json_t *e;
    json_array_foreach(out, i,
                       e) if (json_integer_value(json_object_get(e, "device")) == device) return e;
    e = json_pack("{s:s,s:I,s:I,s:s}", "backend", backend ? backend : "", "device",
                  (json_int_t)device, "evaluations", (json_int_t)0, "state", "in rotation");
    json_array_append_new(out, e);
    return e;
}

json_t *kv_store_devices(kv_store *s)
{
    kv_store_clear_err(s);
    json_t *out = json_array();
    char *meta = kv_store_get_meta(s, "devices");
    json_t *listed = meta ? kv_json_loads(meta) : NULL;
    free(meta);
    const char *backend = json_string_value(json_object_get(listed, "backend"));
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(listed, "devices"), i, d)
    {
        json_t *e = entry(out, backend, json_integer_value(json_object_get(d, "index")));
        json_object_set(e, "name", json_object_get(d, "name"));
    }
    static const char *const sql[] = {
        "SELECT CAST(value AS INTEGER), count(*) FROM artifacts WHERE name = 'device_index'"
        " GROUP BY 1 ORDER BY 1",
        "SELECT data FROM events WHERE kind = 'device_out' ORDER BY id"};
    for (int q = 0; q < 2; q++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db, sql[q], -1, &st, NULL) != SQLITE_OK) {
            kv_store_db_fail(s, "device states");
            sqlite3_finalize(st);
            json_decref(listed);
            json_decref(out);
            return NULL;
        }
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (q == 0) {
                json_t *e = entry(out, backend, sqlite3_column_int64(st, 0));
                json_object_set_new(e, "evaluations", json_integer(sqlite3_column_int64(st, 1)));
                continue;
            }
            json_t *ev = kv_json_loads((const char *)sqlite3_column_text(st, 0));
            if (json_is_object(ev)) {
                json_t *e = entry(out, json_string_value(json_object_get(ev, "backend")),
                                  json_integer_value(json_object_get(ev, "device")));
                json_object_set_new(e, "state", json_string("out of rotation"));
                json_object_set(e, "reason", json_object_get(ev, "reason"));
            }
            json_decref(ev);
        }
        sqlite3_finalize(st);
    }
    json_decref(listed);
    return out;
}
