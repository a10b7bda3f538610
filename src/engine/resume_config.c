/* What a resumed run runs with. A run that stopped on a fault of its
 * settings (a wrong endpoint, a model that does not exist, a timeout too
 * short) must be able to take the fix: `kevolve resume DIR --config FILE`
 * takes a corrected config and --api-base/--primary-model a corrected
 * endpoint or models, and the stored config's ${VAR}s are read again from
 * the environment. What may change is what does not change what the run
 * searched (kv_config_key_resumable: models, endpoint, keys, prompts,
 * timeouts, parallelism, logging, how long); a change of anything else
 * (task, evaluator, seeds, islands, feature dimensions, ...) is refused,
 * naming the key, before anything is written. Every change is logged and
 * kept in the run's manifest (meta config_changes, with the new
 * config_effective), so the store says what each part of the run ran with. */
#include "engine/resume_config.h"
#include "engine/manifest.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loads TEXT (a stored config) into CFG without logging its warnings again:
 * they were the run's, said when it started. Returns 0 or -1. */
static int load_quietly(const char *text, const char *origin, const char *dir, kv_config *cfg,
                        kv_config_error *err)
{
    kv_log_level level = kv_log_get_level();
    kv_log_set_level(KV_LOG_ERROR);
    int rc = kv_config_load_string(text, origin, dir, cfg, err);
    kv_log_set_level(level);
    return rc;
}

/* The config the run ran with until now: the effective settings its last
 * start wrote, else the stored config with its overrides. */
static int previous_config(kv_store *s, kv_config *prev, kv_config_error *err)
{
    char *eff = kv_store_get_meta(s, "config_effective");
    char *dir = kv_store_get_meta(s, "config_dir");
    int rc;
    if (eff && *eff) {
        rc = load_quietly(eff, "run.db:config_effective", dir, prev, err);
    } else {
        kv_log_level level = kv_log_get_level();
        kv_log_set_level(KV_LOG_ERROR);
        rc = kv_manifest_load_config(s, prev, err);
        kv_log_set_level(level);
    }
    free(eff);
    free(dir);
    return rc;
}

/* The keys of CHANGES that a resumed run may not change, as "KEY (FROM ->
 * TO), ..." (malloc'd), or NULL when there are none. */
static char *fixed_changes(const json_t *changes)
{
    kv_buf b = KV_BUF_INIT;
    size_t i, n = 0;
    json_t *c;
    json_array_foreach(changes, i, c)
    {
        if (json_is_true(json_object_get(c, "resumable"))) continue;
        if (n++ == 4) {
            kv_buf_puts(&b, ", ...");
            break;
        }
        kv_buf_printf(&b, "%s%s (%.60s -> %.60s)", n > 1 ? ", " : "",
                      json_string_value(json_object_get(c, "key")),
                      json_string_value(json_object_get(c, "from")),
                      json_string_value(json_object_get(c, "to")));
    }
    if (!n) {
        kv_buf_free(&b);
        return NULL;
    }
    return kv_buf_steal(&b);
}

/* Fills ERR with the refusal of FIXED (the keys) coming from WHERE. */
static void refuse(kv_config_error *err, const char *where, const char *fixed)
{
    snprintf(err->message, sizeof err->message,
             "%s would change what the run searched: %s; a resumed run keeps these (only the "
             "models, endpoint, keys, prompts, timeouts, parallelism, logging and stopping "
             "rules may change). To change them, start a new run (`kevolve run` with another "
             "--output, or --force to replace this one)",
             where, fixed);
}

/* CFG from the new config file PATH (loaded into CFG) and the stored one:
 * refuses a key it may not change, then takes the run's manifest for what
 * the file does not say differently. Returns 0 or -1 with ERR filled. */
static int take_new_file(kv_store *s, const char *path, kv_config *cfg, kv_config_error *err)
{
    kv_config old;
    if (kv_manifest_load_file(s, &old, err) != 0) {
        kv_config_free(&old);
        return -1;
    }
    if (kv_config_load(path, cfg, err) != 0) {
        kv_config_free(&old);
        return -1;
    }
    /* Programs given on the run's command line are not in its file: a new
     * file that names none keeps the run's. */
    if (!cfg->initial_program && !cfg->n_initial_programs && old.initial_program)
        cfg->initial_program = kv_strdup(old.initial_program);
    if (!cfg->evaluator_program && old.evaluator_program)
        cfg->evaluator_program = kv_strdup(old.evaluator_program);
    json_t *changes = kv_config_diff(&old, cfg);
    char *fixed = fixed_changes(changes);
    json_decref(changes);
    unsigned keep = 0; /* the file's new limits win over the run's */
    if (cfg->max_iterations != old.max_iterations) keep |= KV_MANIFEST_KEEP_MAX_ITERATIONS;
    if (cfg->has_target_score != old.has_target_score ||
        (cfg->has_target_score && cfg->target_score != old.target_score))
        keep |= KV_MANIFEST_KEEP_TARGET_SCORE;
    kv_config_free(&old);
    if (fixed) {
        refuse(err, path, fixed);
        free(fixed);
        return -1;
    }
    kv_manifest_apply(s, cfg, keep);
    return 0;
}

int kv_resume_load_config(kv_store *s, const kv_run_options *o, kv_config *cfg, kv_config *prev,
                          kv_config_error *err)
{
    int rc = o && o->config_path ? take_new_file(s, o->config_path, cfg, err)
                                 : kv_manifest_load_config(s, cfg, err);
    if (rc != 0) return -1;
    if (o && (o->api_base || o->primary_model))
        kv_config_use_models(cfg, o->primary_model, o->secondary_model, o->api_base);
    kv_config_free(prev);
    if (previous_config(s, prev, err) != 0) return -1;
    /* Whatever made them (the new file, the environment of its ${VAR}s),
     * the keys of the search stay as the run had them. */
    json_t *changes = kv_config_diff(prev, cfg);
    char *fixed = fixed_changes(changes);
    json_decref(changes);
    if (fixed) {
        refuse(err,
               o && o->config_path ? o->config_path
                                   : "the stored config, read again in this environment,",
               fixed);
        free(fixed);
        return -1;
    }
    return 0;
}

int kv_resume_record(kv_store *s, const kv_run_options *o, const kv_config *prev,
                     const kv_config *cfg)
{
    json_t *changes = kv_config_diff(prev, cfg);
    int given = o && (o->config_path || o->api_base || o->primary_model);
    if (json_array_size(changes) == 0 && !given) {
        json_decref(changes);
        return 0;
    }
    size_t i;
    json_t *c;
    json_array_foreach(changes, i, c)
    {
        kv_info("resume: %s: %s -> %s", json_string_value(json_object_get(c, "key")),
                json_string_value(json_object_get(c, "from")),
                json_string_value(json_object_get(c, "to")));
    }
    char stamp[KV_UTC_STAMP_SIZE];
    kv_utc_stamp(stamp);
    json_t *entry =
        json_pack("{s:s, s:o, s:O}", "at", stamp, "config_path",
                  o && o->config_path ? json_string(cfg->path) : json_null(), "changes", changes);
    json_t *history = NULL;
    char *old = kv_store_get_meta(s, "config_changes");
    if (old) history = json_loads(old, 0, NULL);
    free(old);
    if (!json_is_array(history)) {
        json_decref(history);
        history = json_array();
    }
    json_array_append_new(history, entry);
    char *history_text = kv_json_dumps(history);
    char *effective = kv_config_dump(cfg);
    char iterations[32];
    snprintf(iterations, sizeof iterations, "%d", cfg->max_iterations);
    int rc = kv_store_begin(s);
    rc |= kv_store_set_meta(s, "config_changes", history_text);
    rc |= kv_store_set_meta(s, "config_effective", effective);
    rc |= kv_store_set_meta(s, "max_iterations", iterations);
    if (cfg->has_target_score) {
        char target[40];
        snprintf(target, sizeof target, "%.17g", cfg->target_score);
        rc |= kv_store_set_meta(s, "target_score", target);
    }
    if (o && o->config_path) { /* the next resume starts from this file */
        rc |= kv_store_set_meta(s, "config_text", cfg->text ? cfg->text : "");
        rc |= kv_store_set_meta(s, "config_path", cfg->path ? cfg->path : "");
        rc |= kv_store_set_meta(s, "config_dir", cfg->dir ? cfg->dir : ".");
    }
    rc |= kv_manifest_set_cli(s, o);
    if (rc == 0)
        rc = kv_store_commit(s);
    else
        kv_store_rollback(s);
    free(history_text);
    free(effective);
    json_decref(history);
    json_decref(changes);
    return rc ? -1 : 0;
}
