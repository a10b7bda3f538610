/* The computed parts of the dashboard's API: a program as JSON, the score
 * series per island (best so far and median per iteration bucket) and an
 * island's MAP-Elites grid (the best program of each cell). */
#include "web/api.h"

#include "util/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A real, or null for NaN/infinity (JSON has neither). */
static json_t *real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* A lineage id, or null for 0. */
static json_t *id_or_null(int64_t v)
{
    return v ? json_integer((json_int_t)v) : json_null();
}

/* A string, or null (also for text that is not UTF-8). */
static json_t *str_or_null(const char *s)
{
    json_t *v = s ? json_string(s) : NULL;
    return v ? v : json_null();
}

/* A JSON value (a new reference), or null. */
static json_t *copy_or_null(json_t *v)
{
    return v ? json_incref(v) : json_null();
}

json_t *kv_web_program_json(const kv_program *p)
{
    char hex[17];
    kv_hash_hex(p->code_hash, hex);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer((json_int_t)p->id));
    json_object_set_new(o, "parent_id", id_or_null(p->parent_id));
    json_object_set_new(o, "other_parent_id", id_or_null(p->other_parent_id));
    json_object_set_new(o, "island", json_integer(p->island));
    json_object_set_new(o, "generation", json_integer(p->generation));
    json_object_set_new(o, "iteration", json_integer((json_int_t)p->iteration));
    json_object_set_new(o, "status", json_string(kv_status_name(p->status)));
    json_object_set_new(o, "status_reason", str_or_null(p->status_reason));
    json_object_set_new(o, "reason_code", str_or_null(p->reason_code));
    json_object_set_new(o, "duplicate_of", id_or_null(p->duplicate_of));
    json_object_set_new(o, "fitness", real_or_null(p->fitness));
    json_object_set_new(o, "mutator", str_or_null(p->mutator));
    json_object_set_new(o, "change_summary", str_or_null(p->change_summary));
    json_object_set_new(o, "is_migrant", json_boolean(p->is_migrant));
    json_object_set_new(o, "migrated_from", id_or_null(p->migrated_from));
    json_object_set_new(o, "code_hash", json_string(hex));
    json_object_set_new(o, "created_at", real_or_null(p->created_at));
    json_object_set_new(o, "eval_seconds", real_or_null(p->eval_seconds));
    json_object_set_new(o, "metrics", copy_or_null(p->metrics));
    /* A kernel task's rows per scenario (the store's scenario_results). */
    if (p->scenarios.n) json_object_set_new(o, "scenarios", kv_store_scenarios_json(p));
    json_object_set_new(o, "features", copy_or_null(p->features));
    json_object_set_new(o, "stages", copy_or_null(p->stages));
    json_object_set_new(o, "artifacts", copy_or_null(p->artifacts));
    json_object_set_new(o, "source", str_or_null(p->source));
    return o;
}

/* qsort order of doubles. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of the N values in V (sorted in place); N > 0. */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The series of one island from SCORES rows [island, iteration, fitness,
 * id] (iteration order): one point per non-empty bucket of WIDTH
 * iterations (its end, the best so far, the rolling median of the last
 * WINDOW scores up to it, the scores in the bucket), and each rise of the
 * best so far at its exact iteration. SCRATCH has room for 2 * WINDOW
 * values. */
static json_t *island_series(const json_t *scores, json_int_t island, json_int_t width,
                             json_int_t max_iter, int window, double *scratch)
{
    json_t *points = json_array(), *rises = json_array();
    double *ring = scratch, *sorted = scratch + window;
    double best = -INFINITY;
    json_int_t best_id = 0, bucket = -1, seen = 0, in_bucket = 0;
    size_t i, total = json_array_size(scores);
    for (i = 0; i <= total; i++) {
        json_t *row = json_array_get(scores, i); /* NULL past the end: flush */
        if (row && json_integer_value(json_array_get(row, 0)) != island) continue;
        json_int_t it = row ? json_integer_value(json_array_get(row, 1)) : 0;
        json_int_t b = row ? it / width : -2;
        if (b != bucket && in_bucket > 0) {
            json_int_t end = (bucket + 1) * width - 1;
            if (end > max_iter) end = max_iter;
            size_t n = (size_t)(seen < window ? seen : window);
            memcpy(sorted, ring, n * sizeof *sorted);
            json_array_append_new(points, json_pack("{s:I, s:f, s:I, s:f, s:I, s:I}", "iteration",
                                                    end, "best", best, "best_id", best_id, "median",
                                                    median(sorted, n), "n", in_bucket, "window_n",
                                                    (json_int_t)n));
            in_bucket = 0;
        }
        if (!row) break;
        bucket = b;
        double f = json_number_value(json_array_get(row, 2));
        ring[seen % window] = f;
        seen++;
        in_bucket++;
        if (f > best) {
            best = f;
            best_id = json_integer_value(json_array_get(row, 3));
            json_array_append_new(rises, json_pack("[I, f, I]", it, f, best_id));
        }
    }
    return json_pack("{s:I, s:o, s:o, s:I}", "island", island, "points", points, "rises", rises,
                     "scored", seen);
}

json_t *kv_web_series(const json_t *scores, int buckets, json_int_t max_iteration, int num_islands,
                      int window)
{
    size_t total = json_array_size(scores);
    json_int_t max_island = num_islands - 1, max_iter = max_iteration;
    json_int_t counts[1024] = {0}; /* scores per island, for the median's window */
    for (size_t i = 0; i < total; i++) {
        json_t *row = json_array_get(scores, i);
        json_int_t island = json_integer_value(json_array_get(row, 0));
        json_int_t it = json_integer_value(json_array_get(row, 1));
        if (island > max_island) max_island = island;
        if (it > max_iter) max_iter = it;
        if (island >= 0 && island < 1024) counts[island]++;
    }
    if (max_island > 1023) max_island = 1023; /* more islands than a chart can show */
    if (buckets < 1) buckets = 1;
    json_int_t width = (max_iter + 1 + buckets - 1) / buckets;
    if (width < 1) width = 1;
    /* The median's window: a twentieth of the busiest island's scores,
     * between 5 and 100, unless the caller chose one. */
    if (window <= 0) {
        json_int_t most = 0;
        for (json_int_t k = 0; k <= max_island; k++)
            if (counts[k] > most) most = counts[k];
        window = (int)((most + 19) / 20);
        if (window < 5) window = 5;
        if (window > 100) window = 100;
    }
    double *scratch = malloc(2 * (size_t)window * sizeof *scratch);
    json_t *islands = json_array();
    for (json_int_t isl = 0; isl <= max_island && scratch; isl++)
        json_array_append_new(islands,
                              island_series(scores, isl, width, max_iter, window, scratch));
    free(scratch);
    return json_pack("{s:I, s:I, s:i, s:o}", "bucket_width", width, "max_iteration", max_iter,
                     "median_window", window, "islands", islands);
}

/* Bin of dimension NAME in FEATURES, or -1 when absent. */
static json_int_t bin_of(const json_t *features, const char *name)
{
    json_t *v = json_object_get(features, name);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

json_t *kv_web_grid(int island, const json_t *placed, const json_t *dims, const json_t *bins)
{
    /* The dimensions: the config's, else the keys of the first placed program. */
    json_t *names = json_array();
    if (json_array_size(dims) > 0) {
        json_array_extend(names, (json_t *)dims);
    } else if (json_array_size(placed) > 0) {
        const char *key;
        json_t *v;
        json_object_foreach(json_array_get(json_array_get(placed, 0), 2), key, v)
        {
            json_array_append_new(names, json_string(key));
        }
    }
    const char *xname = json_string_value(json_array_get(names, 0));
    const char *yname = json_string_value(json_array_get(names, 1));
    json_int_t nx = json_integer_value(json_array_get(bins, 0));
    json_int_t ny = yname ? json_integer_value(json_array_get(bins, 1)) : 1;
    /* Bins seen beyond the config's (or without one) widen the grid. */
    size_t n = json_array_size(placed);
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(json_array_get(placed, i), 2);
        json_int_t x = xname ? bin_of(f, xname) : 0, y = yname ? bin_of(f, yname) : 0;
        if (x >= nx) nx = x + 1;
        if (y >= ny) ny = y + 1;
    }
    if (nx > 256) nx = 256; /* a grid the page can draw */
    if (ny > 256) ny = 256;
    /* The elite of each cell: the best program placed there (ties: earliest). */
    json_t *cells = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(placed, i);
        json_t *f = json_array_get(row, 2);
        json_int_t x = xname ? bin_of(f, xname) : 0, y = yname ? bin_of(f, yname) : 0;
        if (x < 0 || y < 0 || x >= nx || y >= ny) continue;
        char key[48];
        snprintf(key, sizeof key, "%lld,%lld", (long long)x, (long long)y);
        double fit = json_number_value(json_array_get(row, 1));
        json_t *cell = json_object_get(cells, key);
        if (!cell) {
            json_object_set_new(cells, key,
                                json_pack("{s:I, s:I, s:O, s:f, s:i}", "x", x, "y", y, "id",
                                          json_array_get(row, 0), "fitness", fit, "count", 1));
            continue;
        }
        json_object_set_new(cell, "count",
                            json_integer(json_integer_value(json_object_get(cell, "count")) + 1));
        if (fit > json_number_value(json_object_get(cell, "fitness"))) {
            json_object_set(cell, "id", json_array_get(row, 0));
            json_object_set_new(cell, "fitness", json_real(fit));
        }
    }
    json_t *list = json_array();
    const char *key;
    json_t *cell;
    json_object_foreach(cells, key, cell)
    {
        json_array_append(list, cell);
    }
    json_decref(cells);
    return json_pack("{s:i, s:o, s:[I,I], s:o}", "island", island, "dimensions", names, "bins", nx,
                     ny, "cells", list);
}
