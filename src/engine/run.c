/* Starting and resuming an evolution: configuration, output folder, store,
 * run manifest, then the controller loop. */
#include "engine/controller.h"
#include "engine/interrupt.h"
#include "engine/manifest.h"
#include "mutate/tune.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Applies the log level of the config unless the user asked for debug. */
static void apply_log_level(const kv_config *cfg)
{
    kv_log_level level;
    if (cfg->log_level && kv_log_get_level() != KV_LOG_DEBUG &&
        kv_log_parse_level(cfg->log_level, &level) == 0)
        kv_log_set_level(level);
}

/* Opens OUTPUT_DIR/logs/kevolve.log for the run's log lines. */
static void open_run_log(const char *output_dir)
{
    char *logs = kv_path_join(output_dir, "logs");
    if (kv_mkdir_p(logs, 0755) == 0) {
        char *path = kv_path_join(logs, "kevolve.log");
        if (kv_log_open_file(path) != 0) kv_warn("cannot open %s: %s", path, strerror(errno));
        free(path);
    }
    free(logs);
}

void kv_run_options_apply(const kv_run_options *o, kv_config *cfg)
{
    if (o->initial_program) {
        free(cfg->initial_program);
        cfg->initial_program = kv_path_absolute(o->initial_program);
    }
    if (o->evaluator) {
        free(cfg->evaluator_program);
        cfg->evaluator_program = kv_path_absolute(o->evaluator);
    }
    if (o->iterations > 0) cfg->max_iterations = (int)o->iterations;
    if (o->has_seed) {
        cfg->random_seed = o->seed;
        cfg->has_random_seed = 1;
    }
    if (o->has_target_score) {
        cfg->target_score = o->target_score;
        cfg->has_target_score = 1;
    }
    if (o->api_base || o->primary_model)
        kv_config_use_models(cfg, o->primary_model, o->secondary_model, o->api_base);
}

static uint64_t run_seed(const kv_config *cfg)
{
    return (uint64_t)(cfg->has_random_seed ? cfg->random_seed : 42);
}

/* Runs the loop over an initialised controller and reports how it ended. */
static int run_loop(kv_controller *c)
{
    int rc = kv_controller_loop(c);
    kv_info("stopped: %s; best fitness %.6g (program %lld); results in %s", c->stop_reason,
            c->best_fitness, (long long)c->best_id, c->output_dir);
    return rc;
}

int kv_run_evolution(const kv_run_options *opts)
{
    kv_config cfg;
    kv_config_error cerr;
    if (kv_config_load(opts->config_path, &cfg, &cerr) != 0) {
        kv_error("%s", cerr.message);
        kv_config_free(&cfg);
        return KV_EXIT_USAGE;
    }
    apply_log_level(&cfg);
    kv_run_options_apply(opts, &cfg);
    int rc = KV_EXIT_USAGE;
    char *output_dir = NULL, *db_path = NULL, *source = NULL, *evaluator = NULL;
    kv_store *store = NULL;
    if (!cfg.initial_program) {
        kv_error("no initial program: give it on the command line or as initial_program in %s",
                 opts->config_path);
        goto done;
    }
    source = kv_read_file(cfg.initial_program, NULL);
    if (!source) {
        kv_error("cannot read the initial program %s: %s", cfg.initial_program, strerror(errno));
        goto done;
    }
    char *tune_err = NULL;
    if (kv_tune_check(source, &tune_err) != 0) { /* else tune would idle silently */
        kv_error("initial program %s: %s", cfg.initial_program, tune_err);
        free(tune_err);
        goto done;
    }
    output_dir = opts->output_dir ? kv_path_absolute(opts->output_dir)
                                  : kv_path_join(cfg.dir ? cfg.dir : ".", "out");
    if (kv_mkdir_p(output_dir, 0755) != 0) {
        kv_error("cannot create the output folder %s: %s", output_dir, strerror(errno));
        rc = KV_EXIT_FAILURE;
        goto done;
    }
    db_path = kv_path_join(output_dir, "run.db");
    if (kv_is_file(db_path)) {
        if (!opts->force) {
            kv_error("%s already holds a run; continue it with `kevolve resume %s`, or start "
                     "afresh with --force or another --output",
                     output_dir, output_dir);
            goto done;
        }
        char *wal = kv_asprintf("%s-wal", db_path), *shm = kv_asprintf("%s-shm", db_path);
        unlink(db_path);
        unlink(wal);
        unlink(shm);
        free(wal);
        free(shm);
    }
    evaluator = kv_manifest_evaluator_command(&cfg, output_dir, &cerr);
    if (!evaluator) {
        kv_error("%s", cerr.message);
        goto done;
    }
    open_run_log(output_dir);
    char *err = NULL;
    if (kv_store_open(db_path, KV_STORE_CREATE, &store, &err) != 0) {
        kv_error("%s", err ? err : "cannot open the store");
        free(err);
        rc = KV_EXIT_FAILURE;
        goto done;
    }
    if (kv_manifest_write(store, &cfg, evaluator, opts) != 0) {
        kv_error("cannot write the run manifest: %s", kv_store_errmsg(store));
        rc = KV_EXIT_FAILURE;
        goto done;
    }
    kv_interrupt_install();
    kv_controller c;
    if (kv_controller_init(&c, &cfg, store, output_dir, evaluator, run_seed(&cfg)) != 0) {
        kv_controller_free(&c);
        rc = KV_EXIT_FAILURE;
        goto done;
    }
    c.progress = opts->progress;
    c.last_iteration = cfg.max_iterations;
    kv_store_add_event(store, "started", NULL);
    kv_info("run: %d iterations, %d islands, output %s", cfg.max_iterations,
            cfg.database.num_islands, output_dir);
    if (kv_controller_seed(&c, source) != 0) {
        rc = kv_interrupt_count() ? KV_EXIT_INTERRUPTED : KV_EXIT_FAILURE;
    } else {
        rc = run_loop(&c);
    }
    kv_controller_free(&c);
done:
    if (store) kv_store_close(store);
    kv_log_open_file(NULL);
    free(source);
    free(evaluator);
    free(db_path);
    free(output_dir);
    kv_config_free(&cfg);
    return rc;
}

int kv_resume_evolution(const char *path, const kv_run_options *opts)
{
    char *db_path = kv_is_dir(path) ? kv_path_join(path, "run.db") : kv_strdup(path);
    char *output_dir = NULL, *evaluator = NULL, *err = NULL;
    kv_store *store = NULL;
    kv_config cfg;
    kv_config_init(&cfg);
    int rc = KV_EXIT_USAGE;
    if (kv_store_open(db_path, KV_STORE_READWRITE, &store, &err) != 0) {
        kv_error("%s", err ? err : "cannot open the store");
        free(err);
        goto done;
    }
    output_dir = kv_path_dirname(db_path);
    {
        char *abs = kv_path_absolute(output_dir);
        free(output_dir);
        output_dir = abs;
    }
    kv_config_free(&cfg);
    kv_config_error cerr;
    if (kv_manifest_load_config(store, &cfg, &cerr) != 0) {
        kv_error("%s", cerr.message);
        goto done;
    }
    apply_log_level(&cfg);
    evaluator = kv_store_get_meta(store, "evaluator_command");
    if (!evaluator) {
        kv_error("%s: the run manifest names no evaluator", db_path);
        goto done;
    }
    open_run_log(output_dir);
    kv_interrupt_install();
    kv_controller c;
    if (kv_controller_init(&c, &cfg, store, output_dir, evaluator, run_seed(&cfg)) != 0) {
        kv_controller_free(&c);
        rc = KV_EXIT_FAILURE;
        goto done;
    }
    c.progress = opts ? opts->progress : 0;
    int64_t done_iterations = c.next_iteration - 1;
    if (opts && opts->iterations > 0) {
        c.last_iteration = done_iterations + opts->iterations;
        char text[32];
        snprintf(text, sizeof text, "%lld", (long long)c.last_iteration);
        kv_store_set_meta(store, "max_iterations", text);
    } else {
        c.last_iteration = cfg.max_iterations;
    }
    if (c.best_id == 0) {
        kv_error("%s holds no evaluated program to continue from; start a new run", db_path);
        kv_controller_free(&c);
        rc = KV_EXIT_FAILURE;
        goto done;
    }
    json_t *data = json_pack("{s:I, s:I}", "from_iteration", (json_int_t)c.next_iteration,
                             "to_iteration", (json_int_t)c.last_iteration);
    kv_store_add_event(store, "resumed", data);
    json_decref(data);
    kv_info("resuming %s at iteration %lld of %lld (%zu programs in the population)", db_path,
            (long long)c.next_iteration, (long long)c.last_iteration, kv_database_size(c.db));
    rc = run_loop(&c);
    kv_controller_free(&c);
done:
    if (store) kv_store_close(store);
    kv_log_open_file(NULL);
    kv_config_free(&cfg);
    free(evaluator);
    free(output_dir);
    free(db_path);
    return rc;
}
