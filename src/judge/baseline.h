/* The task baseline's timings, kept between evaluations: the baseline is
 * timed in a runner of its own, never beside a candidate, once per run and
 * device, and again when it has grown old or the device has moved (another
 * device, its SM clock or temperature changed), so that a child pays for
 * its own calls only. The file is written by the judge's side alone (a
 * sandboxed candidate cannot write it); without the sandbox (no Landlock)
 * nothing is kept and every evaluation times the baseline afresh. */
#ifndef KV_JUDGE_BASELINE_H
#define KV_JUDGE_BASELINE_H

#include <jansson.h>

/* The file that keeps the baseline of KEY ("task-backend-device-mode-set-
 * hash") in the run's folder RUN_DIR when there is one, else under
 * CACHE_DIR (malloc'd). */
char *kv_baseline_path(const char *run_dir, const char *cache_dir, const char *key);

/* The kept entry at PATH when it is younger than MAX_AGE_S seconds, else
 * NULL. An entry: {"saved_at": unix seconds, "device": {...}, "telemetry":
 * {...}, "scenarios": {"NAME": {"median_us":..,"iqr_us":..,"reps":..}}}. */
json_t *kv_baseline_load(const char *path, double max_age_s);

/* Writes ENTRY to PATH (atomically: a temporary file renamed); 0 or -1. */
int kv_baseline_save(const char *path, const json_t *entry);

/* Whether ENTRY (kept) still describes the device now: the same device
 * (name, bus) and, where the device reports them, an SM clock within 10%
 * and a temperature within 15 C of then. *WHY (static) says what moved. */
int kv_baseline_still_valid(const json_t *entry, const json_t *device, const json_t *telemetry,
                            const char **why);

#endif
