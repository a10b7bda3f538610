/* A kernel program's results per scenario (table scenario_results): written
 * with the program, in its transaction; read back for the program, for its
 * children's screening, and across the run (the best program per scenario,
 * which status, the dashboard and the export show). */
#include "store/store_internal.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void bind_num(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static double col_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static char *col_text(sqlite3_stmt *st, int i)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? kv_strdup(t) : NULL;
}

int kv_store_write_scenarios(kv_store *s, int64_t id, const kv_scenario_results *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const kv_scenario_result *x = &r->rows[i];
        sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_INSERT_SCENARIO);
        if (!st) return -1;
        sqlite3_bind_int64(st, 1, id);
        bind_text(st, 2, x->scenario);
        bind_text(st, 3, r->task);
        bind_text(st, 4, r->backend);
        bind_text(st, 5, r->device);
        sqlite3_bind_int(st, 6, r->device_index);
        bind_text(st, 7, x->kind);
        bind_num(st, 8, x->weight);
        bind_num(st, 9, x->median_us);
        bind_num(st, 10, x->iqr_us);
        bind_num(st, 11, x->baseline_us);
        bind_num(st, 12, x->speedup);
        bind_num(st, 13, x->roofline_fraction);
        bind_num(st, 14, x->max_abs_err);
        bind_num(st, 15, x->tol_ratio);
        sqlite3_bind_int(st, 16, x->screened ? 1 : 0);
        bind_num(st, 17, x->energy_j);
        if (kv_store_step_done(s, st, "insert scenario result") != 0) return -1;
    }
    return 0;
}

/* Reads the current row (KV_SCENARIO_COLUMNS) into X and, when FIRST, R's
 * task, backend and device (any of which may be NULL). */
static void read_row(sqlite3_stmt *st, kv_scenario_results *r, kv_scenario_result *x, int first)
{
    x->scenario = col_text(st, 0);
    x->kind = col_text(st, 1);
    x->weight = col_num(st, 2);
    x->median_us = col_num(st, 3);
    x->iqr_us = col_num(st, 4);
    x->baseline_us = col_num(st, 5);
    x->speedup = col_num(st, 6);
    x->roofline_fraction = col_num(st, 7);
    x->max_abs_err = col_num(st, 8);
    x->tol_ratio = col_num(st, 9);
    x->energy_j = col_num(st, 10);
    x->screened = sqlite3_column_int(st, 11);
    if (first) {
        r->task = col_text(st, 12);
        r->backend = col_text(st, 13);
        r->device = col_text(st, 14);
        r->device_index = sqlite3_column_int(st, 15);
    }
}

int kv_store_load_scenarios(kv_store *s, kv_program *p)
{
    kv_scenario_results_clear(&p->scenarios);
    sqlite3_stmt *st = kv_store_stmt(s, KV_STMT_GET_SCENARIOS);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, p->id);
    int rc;
    size_t cap = 0;
    kv_scenario_results *r = &p->scenarios;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (r->n == cap) {
            cap = cap ? 2 * cap : 8;
            r->rows = kv_realloc(r->rows, cap * sizeof *r->rows);
        }
        memset(&r->rows[r->n], 0, sizeof r->rows[r->n]);
        read_row(st, r, &r->rows[r->n], r->n == 0);
        r->n++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return kv_store_db_fail(s, "load scenario results");
    return 0;
}

/* A row as JSON: what the dashboard, status --json and the export read. */
static json_t *row_json(const kv_scenario_results *r, const kv_scenario_result *x)
{
    json_t *o =
        json_pack("{s:s,s:s?,s:i}", "name", x->scenario, "kind", x->kind, "screened", x->screened);
    static const char *const keys[] = {"weight",      "median_us", "iqr_us",
                                       "baseline_us", "speedup",   "roofline_fraction",
                                       "max_abs_err", "tol_ratio", "energy_j"};
    const double vals[] = {x->weight,      x->median_us, x->iqr_us,
                           x->baseline_us, x->speedup,   x->roofline_fraction,
                           x->max_abs_err, x->tol_ratio, x->energy_j};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!isnan(vals[i])) json_object_set_new(o, keys[i], json_real(vals[i]));
    if (r->device) json_object_set_new(o, "device", json_string(r->device));
    return o;
}

json_t *kv_store_scenarios_json(const kv_program *p)
{
    json_t *a = json_array();
    for (size_t i = 0; i < p->scenarios.n; i++)
        json_array_append_new(a, row_json(&p->scenarios, &p->scenarios.rows[i]));
    return a;
}

json_t *kv_store_screen_parent(kv_store *s, int64_t id)
{
    kv_program *p = kv_store_get_program(s, id);
    if (!p || p->scenarios.n == 0 || p->status != KV_STATUS_OK) {
        kv_program_free(p);
        return NULL;
    }
    json_t *speedup = json_object();
    for (size_t i = 0; i < p->scenarios.n; i++)
        if (!isnan(p->scenarios.rows[i].speedup))
            json_object_set_new(speedup, p->scenarios.rows[i].scenario,
                                json_real(p->scenarios.rows[i].speedup));
    json_t *out = json_pack("{s:o}", "speedup", speedup);
    if (!isnan(p->fitness)) json_object_set_new(out, "combined_score", json_real(p->fitness));
    kv_program_free(p);
    return out;
}

json_t *kv_store_best_per_scenario(kv_store *s)
{
    /* The fastest against the baseline, of the programs judged on every
     * scenario (not stopped by the screen), that evaluated OK. */
    static const char *sql =
        "SELECT " KV_SCENARIO_COLUMNS ", total FROM ("
        " SELECT r.*, COUNT(*) OVER (PARTITION BY r.scenario) AS total,"
        " MIN(r.rowid) OVER (PARTITION BY r.scenario) AS first_row,"
        " ROW_NUMBER() OVER (PARTITION BY r.scenario ORDER BY r.speedup DESC, r.program_id)"
        " AS rank FROM scenario_results r JOIN programs p ON p.id = r.program_id"
        " WHERE p.status = 'ok' AND r.screened = 0 AND r.speedup IS NOT NULL)"
        " WHERE rank = 1 ORDER BY first_row";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        kv_store_db_fail(s, "best per scenario");
        return NULL;
    }
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        kv_scenario_results r = {0};
        kv_scenario_result x = {0};
        read_row(st, &r, &x, 1);
        json_t *o = row_json(&r, &x);
        json_object_set_new(o, "program_id", json_integer(sqlite3_column_int64(st, 16)));
        json_object_set_new(o, "programs", json_integer(sqlite3_column_int64(st, 17)));
        if (r.task) json_object_set_new(o, "task", json_string(r.task));
        if (r.backend) json_object_set_new(o, "backend", json_string(r.backend));
        json_array_append_new(out, o);
        free(x.scenario);
        free(x.kind);
        kv_scenario_results_clear(&r);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(out);
        kv_store_db_fail(s, "best per scenario");
        return NULL;
    }
    return out;
}
