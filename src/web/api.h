/* The dashboard's JSON API, independent of the HTTP library: the server
 * (server.c) and the static report (report.c) both call kv_web_api. Every
 * route, its parameters and its answer are documented in docs/dashboard.md. */
#ifndef KV_WEB_API_H
#define KV_WEB_API_H

#include "store/store.h"

#include <jansson.h>

/* Query parameters: returns the value of NAME, or NULL when absent. */
typedef const char *(*kv_web_param_fn)(void *ud, const char *name);

/* Default and largest page of /api/programs and /api/events. */
#define KV_WEB_PAGE_DEFAULT 5000
#define KV_WEB_PAGE_MAX KV_STORE_WEB_PAGE_MAX

/* Answers GET PATH (the URL path, "/api/...") from store S, with query
 * parameters read through PARAM(UD); STORE_PATH (the store's absolute path,
 * may be NULL) is shown in the summary. Returns the HTTP status and sets
 * *BODY to the answer (a new reference): the JSON document on 200, else
 * {"error": message, "status": code} (400 bad parameter, 404 unknown route
 * or program, 500 store error). Never crashes on any PATH or parameter. */
int kv_web_api(kv_store *s, const char *store_path, const char *path, kv_web_param_fn param,
               void *ud, json_t **body);

/* {"error": MSG, "status": STATUS} (new reference). */
json_t *kv_web_error(int status, const char *msg);

/* Program P as the API's JSON object (every field, source included; NaN
 * fitness as null). New reference. */
json_t *kv_web_program_json(const kv_program *p);
/* /api/series from the score rows of kv_store_web_scores over iterations
 * 0..MAX_ITERATION (the run's last iteration, failed children included):
 * per island (NUM_ISLANDS at least, even those with no score yet) the best
 * so far, its rises, and the rolling median of the island's last WINDOW
 * scores (<= 0: chosen from the number of scores) per iteration bucket (at
 * most BUCKETS buckets). New reference. */
json_t *kv_web_series(const json_t *scores, int buckets, json_int_t max_iteration, int num_islands,
                      int window);
/* /api/grid for one island from kv_store_web_placed's rows, with the
 * feature dimensions and bin counts of the run's config (DIMS: array of
 * names, BINS: array of counts; either may be empty). New reference. */
json_t *kv_web_grid(int island, const json_t *placed, const json_t *dims, const json_t *bins);

#endif
