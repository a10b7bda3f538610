/* Starting and resuming an evolution: configuration, output folder, store,
 * run manifest, then the controller loop. */
#include "engine/controller.h"
#include "engine/interrupt.h"
#include "engine/manifest.h"
#include "engine/resume_config.h"
#include "engine/run_lock.h"
#include "engine/startup.h"
#include "mutate/tune.h"
#include "util/buf.h"
#include "util/eval_job.h"
#include "util/fs.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
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
    if (o->initial_program) { /* replaces initial_programs as well */
        free(cfg->initial_program);
        cfg->initial_program = kv_path_absolute(o->initial_program);
        for (size_t i = 0; i < cfg->n_initial_programs; i++)
            free(cfg->initial_programs[i]);
        free(cfg->initial_programs);
        cfg->initial_programs = NULL;
        cfg->n_initial_programs = 0;
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

/* After a failure that followed a write the file system refused (a
 * program file for the evaluator, say): says so and returns KV_EXIT_IO. */
static int fs_fault_stop(const char *output_dir)
{
    const char *path = NULL;
    int e = kv_fs_write_fault(&path);
    kv_error("stopped: %s writing %s (%s); every result committed before is kept: fix it, then "
             "`kevolve resume %s`",
             e == ENOSPC || e == EDQUOT ? "disk full" : "I/O error", path, strerror(e), output_dir);
    return KV_EXIT_IO;
}

/* A run that ended (RC: done or interrupted) empties its write-ahead log,
 * so that run.db alone holds it, or says why it could not. A full disk or
 * an I/O error turns a finished run's 0 into the store's exit code (5): a
 * read-only copy of run.db without its -wal lacks results. A reader that
 * held the log only delays it: the next write, or close, empties it. */
static int checkpoint(kv_store *store, int rc)
{
    if (kv_store_checkpoint(store) == 0) return rc;
    kv_store_fault f = kv_store_last_fault(store);
    char *why = kv_store_fault_text(store);
    kv_error("%s; every result is committed, in run.db and run.db-wal together (copy both; "
             "`kevolve resume` empties the log once there is room)",
             why);
    free(why);
    int io = f == KV_STORE_FAULT_FULL || f == KV_STORE_FAULT_IO;
    return rc == KV_EXIT_OK && io ? kv_store_fault_exit(f) : rc;
}

/* Runs the loop over an initialised controller and reports how it ended:
 * a store that cannot be written stops the run with its own exit code and
 * a message that says so (every result committed before it is kept); a
 * run that ends otherwise empties its write-ahead log (checkpoint). */
static int run_loop(kv_controller *c, kv_store *store)
{
    kv_fs_clear_write_fault();
    int rc = kv_controller_loop(c);
    if (rc == KV_EXIT_FAILURE && kv_store_last_fault(store) != KV_STORE_FAULT_NONE) {
        char *why = kv_store_fault_text(store);
        kv_error("stopped: %s; every result committed before is kept: fix it, then `kevolve "
                 "resume %s`",
                 why, c->output_dir);
        free(why);
        return kv_store_fault_exit(kv_store_last_fault(store));
    }
    if (rc == KV_EXIT_FAILURE && kv_fs_write_fault(NULL)) return fs_fault_stop(c->output_dir);
    if (rc == KV_EXIT_FAILURE) {
        kv_error("stopped: %s; results so far in %s",
                 c->stop_reason ? c->stop_reason : "the run failed (the error is above)",
                 c->output_dir);
        return rc;
    }
    kv_info("stopped: %s; best fitness %.6g (program %lld); results in %s",
            c->stop_reason ? c->stop_reason : "done", c->best_fitness, (long long)c->best_id,
            c->output_dir);
    return checkpoint(store, rc);
}

/* The exit code after a store call on STORE failed while DOING (NULL: the
 * caller said what failed already): its fault's, with the message worded by
 * the store, or FALLBACK when it had no fault of its own. */
static int store_failed(kv_store *store, const char *doing, int fallback)
{
    kv_store_fault f = kv_store_last_fault(store);
    if (f == KV_STORE_FAULT_NONE) {
        if (doing) kv_error("%s", doing);
        return fallback;
    }
    char *why = kv_store_fault_text(store);
    if (doing)
        kv_error("%s: %s", doing, why);
    else
        kv_error("%s", why);
    free(why);
    return kv_store_fault_exit(f);
}

/* After the initial program's evaluation (program ID): the feature
 * dimensions against the metrics it reported. Returns 0, or -1 logged. */
static int check_features(const kv_config *cfg, kv_store *store, int64_t id)
{
    kv_program *p = kv_store_get_program(store, id);
    char *err = NULL;
    int rc = kv_startup_check_features(cfg, p ? p->metrics : NULL, &err);
    if (rc != 0) kv_error("%s", err);
    free(err);
    kv_program_free(p);
    return rc;
}

/* Removes the store DB_PATH and its WAL and shared-memory files, and the
 * verdicts the replaced run's judge kept in OUTPUT_DIR/artifacts (a new
 * run judges its programs afresh, with this build's judge). */
static void remove_replaced_run(const char *output_dir, const char *db_path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        char *p = kv_asprintf("%s%s", db_path, suffixes[i]);
        unlink(p);
        free(p);
    }
    char *verdicts = kv_path_join(output_dir, KV_RUN_VERDICTS_DIR);
    if (kv_is_dir(verdicts) && kv_remove_tree(verdicts) != 0)
        kv_warn("cannot remove the replaced run's verdicts in %s", verdicts);
    free(verdicts);
}

/* What an existing store in the way of a new run holds. */
enum existing { EXISTING_RUN, EXISTING_FAILED_START, EXISTING_UNREADABLE };

/* Looks at the store DB_PATH: a run (something evaluated OK), a start that
 * failed (empty file, or no program ever evaluated OK: nothing to resume),
 * or a file that cannot be read (*WHY, *CODE). */
static enum existing look_at_existing(const char *db_path, char **why, int *code)
{
    *why = NULL;
    struct stat st;
    if (stat(db_path, &st) == 0 && st.st_size == 0) return EXISTING_FAILED_START;
    kv_store *s = NULL;
    char *err = NULL;
    kv_store_fault fault;
    if (kv_store_open_ex(db_path, KV_STORE_READONLY, &s, &err, &fault) != 0) {
        *why = err;
        *code = kv_store_fault_exit(fault);
        return EXISTING_UNREADABLE;
    }
    int64_t ok = kv_store_count_programs(s, KV_STATUS_OK);
    enum existing e = EXISTING_RUN;
    if (ok < 0) {
        *why = kv_store_fault_text(s);
        *code = kv_store_fault_exit(kv_store_last_fault(s));
        e = EXISTING_UNREADABLE;
    } else if (ok == 0) {
        e = EXISTING_FAILED_START;
    }
    kv_store_close(s);
    return e;
}

/* Makes room for a new run's store at DB_PATH in OUTPUT_DIR (the caller
 * holds the run's lock). Returns KV_EXIT_OK, or an exit code with the
 * reason logged. */
static int clear_the_way(const char *output_dir, const char *db_path, int force)
{
    if (!kv_is_file(db_path)) return KV_EXIT_OK;
    if (force) {
        remove_replaced_run(output_dir, db_path);
        return KV_EXIT_OK;
    }
    char *why = NULL;
    int code = KV_EXIT_USAGE;
    switch (look_at_existing(db_path, &why, &code)) {
    case EXISTING_FAILED_START:
        kv_info("%s holds a run that never started (no program evaluated OK): replacing it",
                output_dir);
        remove_replaced_run(output_dir, db_path);
        return KV_EXIT_OK;
    case EXISTING_UNREADABLE:
        kv_error("%s; to start afresh in %s, add --force (the old store is removed)", why,
                 output_dir);
        free(why);
        return code;
    default:
        kv_error("%s already holds a run; continue it with `kevolve resume %s`, or start "
                 "afresh with --force or another --output",
                 output_dir, output_dir);
        return KV_EXIT_USAGE;
    }
}

size_t kv_run_initial_programs(const kv_config *cfg, const char *const **paths)
{
    if (cfg->initial_program) {
        *paths = (const char *const *)&cfg->initial_program;
        return 1;
    }
    *paths = (const char *const *)cfg->initial_programs;
    return cfg->n_initial_programs;
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
    char *output_dir = NULL, *db_path = NULL, *evaluator = NULL;
    const char *const *paths;
    size_t n_sources = kv_run_initial_programs(&cfg, &paths);
    char **sources = n_sources ? kv_calloc(n_sources, sizeof *sources) : NULL;
    kv_store *store = NULL;
    kv_run_lock *lock = NULL;
    int created = 0; /* the store is ours to remove when the start fails */
    if (!n_sources) {
        kv_error("no initial program: give it on the command line or as initial_program (or "
                 "initial_programs) in %s",
                 opts->config_path);
        goto done;
    }
    for (size_t i = 0; i < n_sources; i++) {
        char *read_err = NULL;
        sources[i] = kv_read_source(paths[i], &read_err);
        if (!sources[i]) {
            kv_error("initial program: %s", read_err);
            free(read_err);
            goto done;
        }
        char *start_err = NULL;
        if (kv_startup_check(&cfg, paths[i], sources[i], &start_err) != 0) {
            kv_error("%s", start_err);
            free(start_err);
            goto done;
        }
        char *tune_err = NULL;
        if (kv_tune_check(sources[i], &tune_err) != 0) { /* else tune would idle silently */
            kv_error("initial program %s: %s", paths[i], tune_err);
            free(tune_err);
            goto done;
        }
    }
    output_dir = opts->output_dir ? kv_path_absolute(opts->output_dir)
                                  : kv_path_join(cfg.dir ? cfg.dir : ".", "out");
    struct stat st;
    if (stat(output_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        kv_error("the output folder %s is a file, not a folder", output_dir);
        goto done;
    }
    if (kv_mkdir_p(output_dir, 0755) != 0) {
        kv_error("cannot create the output folder %s: %s", output_dir, strerror(errno));
        rc = KV_EXIT_IO;
        goto done;
    }
    /* One writer per run, from before anything in the folder is looked at
     * or removed until the end. */
    char *lock_err = NULL;
    rc = kv_run_lock_take(output_dir, "run", &lock, &lock_err);
    if (rc != KV_EXIT_OK) {
        kv_error("%s", lock_err);
        free(lock_err);
        goto done;
    }
    db_path = kv_path_join(output_dir, "run.db");
    rc = clear_the_way(output_dir, db_path, opts->force);
    if (rc != KV_EXIT_OK) goto done;
    rc = KV_EXIT_USAGE;
    evaluator = kv_manifest_evaluator_command(&cfg, output_dir, &cerr);
    if (!evaluator) {
        kv_error("%s", cerr.message);
        goto done;
    }
    open_run_log(output_dir);
    char *err = NULL;
    kv_store_fault fault = KV_STORE_FAULT_NONE;
    created = 1;
    if (kv_store_open_ex(db_path, KV_STORE_CREATE, &store, &err, &fault) != 0) {
        kv_error("%s", err ? err : "cannot open the store");
        free(err);
        rc = kv_store_fault_exit(fault);
        if (rc == KV_EXIT_OK || rc == KV_EXIT_USAGE) rc = KV_EXIT_FAILURE;
        goto done;
    }
    if (kv_manifest_write(store, &cfg, evaluator, opts) != 0) {
        rc = store_failed(store, "cannot write the run manifest", KV_EXIT_FAILURE);
        goto done;
    }
    created = 0; /* from here on a failed start is kept for its evidence, and replaceable */
    kv_interrupt_install();
    kv_controller c;
    if (kv_controller_init(&c, &cfg, store, output_dir, evaluator, run_seed(&cfg)) != 0) {
        kv_controller_free(&c);
        rc = store_failed(store, NULL, KV_EXIT_FAILURE);
        goto done;
    }
    c.progress.terminal = opts->progress;
    c.last_iteration = cfg.max_iterations;
    kv_store_add_event(store, "started", NULL);
    kv_info("run: %d iterations, %d islands, output %s", cfg.max_iterations,
            cfg.database.num_islands, output_dir);
    kv_fs_clear_write_fault();
    if (kv_controller_seed_many(&c, (const char *const *)sources, n_sources) != 0) {
        rc =
            kv_interrupt_count() ? KV_EXIT_INTERRUPTED : store_failed(store, NULL, KV_EXIT_FAILURE);
        if (rc == KV_EXIT_FAILURE && kv_fs_write_fault(NULL)) rc = fs_fault_stop(output_dir);
    } else if (check_features(&cfg, store, c.best_id) != 0) {
        rc = KV_EXIT_USAGE;
        created = 1; /* the run never really started: leave nothing in the way */
    } else {
        rc = run_loop(&c, store);
    }
    kv_controller_free(&c);
done:
    if (store) kv_store_close(store);
    if (created && rc != KV_EXIT_OK && db_path) remove_replaced_run(output_dir, db_path);
    kv_run_lock_release(lock);
    kv_log_open_file(NULL);
    for (size_t i = 0; i < n_sources; i++)
        free(sources[i]);
    free(sources);
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
    kv_run_lock *lock = NULL;
    kv_config cfg, prev; /* what the run resumes with, and what it ran with */
    kv_config_init(&cfg);
    kv_config_init(&prev);
    int rc = KV_EXIT_USAGE;
    struct stat st;
    if (stat(db_path, &st) != 0) {
        if (kv_is_dir(path))
            kv_error("%s holds no run (no run.db); start one with `kevolve run`", path);
        else if (errno == ENOENT) /* worded as by every command (kv_store_open) */
            kv_error("%s: no such file", db_path);
        else
            kv_error("%s: %s", db_path, strerror(errno));
        goto done;
    }
    if (S_ISREG(st.st_mode) && st.st_size == 0) {
        kv_error("%s holds no run: its start failed before anything was stored; start a new "
                 "run (`kevolve run` replaces it)",
                 db_path);
        goto done;
    }
    output_dir = kv_path_dirname(db_path);
    {
        char *abs = kv_path_absolute(output_dir);
        free(output_dir);
        output_dir = abs;
    }
    char *lock_err = NULL;
    rc = kv_run_lock_take(output_dir, "resume", &lock, &lock_err);
    if (rc != KV_EXIT_OK) {
        kv_error("%s", lock_err);
        free(lock_err);
        goto done;
    }
    rc = KV_EXIT_USAGE;
    kv_store_fault fault = KV_STORE_FAULT_NONE;
    if (kv_store_open_ex(db_path, KV_STORE_READWRITE, &store, &err, &fault) != 0) {
        kv_error("%s", err ? err : "cannot open the store");
        free(err);
        rc = kv_store_fault_exit(fault);
        if (rc == KV_EXIT_OK) rc = KV_EXIT_FAILURE;
        goto done;
    }
    kv_config_free(&cfg);
    kv_config_error cerr;
    if (kv_resume_load_config(store, opts, &cfg, &prev, &cerr) != 0) {
        kv_error("%s", cerr.message);
        rc = store_failed(store, NULL, KV_EXIT_USAGE);
        goto done;
    }
    apply_log_level(&cfg);
    evaluator = kv_store_get_meta(store, "evaluator_command");
    if (!evaluator) {
        kv_error("%s: the run manifest names no evaluator", db_path);
        rc = store_failed(store, NULL, KV_EXIT_STORE);
        goto done;
    }
    open_run_log(output_dir);
    kv_interrupt_install();
    kv_controller c;
    if (kv_controller_init(&c, &cfg, store, output_dir, evaluator, run_seed(&cfg)) != 0) {
        kv_controller_free(&c);
        rc = store_failed(store, NULL, KV_EXIT_FAILURE);
        goto done;
    }
    c.progress.terminal = opts ? opts->progress : 0;
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
        kv_error("%s holds no evaluated program to continue from (its start failed); start a "
                 "new run (`kevolve run` replaces it)",
                 db_path);
        kv_controller_free(&c);
        rc = KV_EXIT_USAGE;
        goto done;
    }
    cfg.max_iterations = (int)c.last_iteration; /* what the record says it runs to */
    if (kv_resume_record(store, opts, &prev, &cfg) != 0) {
        kv_controller_free(&c);
        rc = store_failed(store, "cannot record the resumed run's settings", KV_EXIT_FAILURE);
        goto done;
    }
    json_t *data = json_pack("{s:I, s:I}", "from_iteration", (json_int_t)c.next_iteration,
                             "to_iteration", (json_int_t)c.last_iteration);
    kv_store_add_event(store, "resumed", data);
    json_decref(data);
    kv_info("resuming %s at iteration %lld of %lld (%zu programs in the population)", db_path,
            (long long)c.next_iteration, (long long)c.last_iteration, kv_database_size(c.db));
    rc = run_loop(&c, store);
    kv_controller_free(&c);
done:
    if (store) kv_store_close(store);
    kv_run_lock_release(lock);
    kv_log_open_file(NULL);
    kv_config_free(&cfg);
    kv_config_free(&prev);
    free(evaluator);
    free(output_dir);
    free(db_path);
    return rc;
}
