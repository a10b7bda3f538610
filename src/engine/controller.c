/* The controller loop: rule checks on children, evaluation hand-off,
 * committing each result to the store as it arrives (with what it taught
 * the mutators' bandit), migration and the stop conditions. Parent
 * selection and the mutators are the breeder's (breed.c), the grades the
 * LLM feedback's (llm_feedback.c): the loop acts on what each hands back. */
#include "engine/controller.h"
#include "engine/interrupt.h"
#include "engine/trace_store.h"
#include "eval/job_build.h"
#include "mutate/blocks.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Hash 0 is reserved by the map; fold it onto 1. */
static uint64_t code_key(uint64_t h)
{
    return h ? h : 1;
}

static int commit_child(kv_controller *c, kv_program *child, kv_llm_trace *trace,
                        kv_llm_trace *feedback, kv_origin origin);
static int offer_child_from(kv_controller *c, kv_program *child, const char *parent_source,
                            kv_llm_trace *trace, kv_origin origin);

/* Stores TRACE (not taken; nothing when NULL) linked to PROGRAM_ID (0: none)
 * with OUTCOME. Returns 0 or -1. */
static int store_trace(kv_controller *c, const kv_llm_trace *t, int64_t program_id,
                       const char *outcome)
{
    return kv_trace_store(c->store, c->cfg->database.log_prompts, t, program_id, outcome);
}

/* Counts ITERATION (a stored child or a spent call of that iteration) as
 * finished; initial programs and migrants (iteration 0) are none. */
static void iteration_done(kv_controller *c, int64_t iteration)
{
    if (iteration >= 1) c->iterations_done++;
}

/* Fitness used for early stopping: the configured metric, fitness for
 * combined_score. */
static double stopping_value(const kv_controller *c, const kv_program *p)
{
    const char *metric = c->cfg->early_stopping_metric;
    if (!metric || strcmp(metric, "combined_score") == 0) return p->fitness;
    return kv_program_metric(p, metric);
}

/* Notes a newly placed OK program: best so far and the last improvement. */
static void note_ok_program(kv_controller *c, const kv_program *p)
{
    if (isnan(c->best_fitness) || p->fitness > c->best_fitness) {
        c->best_fitness = p->fitness;
        c->best_id = p->id;
    }
    double v = stopping_value(c, p);
    if (isnan(v)) return;
    /* Equality, as OpenEvolve tests it: the threshold is the score of a solved
     * task (1.0 for ARC), and "at least" would stop at the default 0.001. */
    if (c->cfg->early_stopping_patience < 0 && v == c->cfg->convergence_threshold)
        c->metric_reached = 1;
    if (isnan(c->best_stop_value) || v - c->best_stop_value > c->cfg->convergence_threshold) {
        c->best_stop_value = v;
        c->last_improvement_iteration = p->iteration;
    } else if (v > c->best_stop_value) {
        c->best_stop_value = v; /* a gain below the threshold does not reset the patience */
    }
}

/* Counts P in the run's counters (the progress line and the summary). */
static void count_program(kv_controller *c, const kv_program *p)
{
    switch (p->status) {
    case KV_STATUS_OK:
        if (!p->is_migrant) c->n_evaluated++;
        break;
    case KV_STATUS_FAILED:
    case KV_STATUS_TIMEOUT:
        c->n_failed++;
        kv_reason_tally_add(&c->failures, p->reason_code                   ? p->reason_code
                                          : p->status == KV_STATUS_TIMEOUT ? KV_REASON_TIMEOUT
                                                                           : "unknown");
        break;
    case KV_STATUS_REJECTED:
        c->n_rejected++;
        break;
    case KV_STATUS_DUPLICATE:
        c->n_duplicates++;
        break;
    default:
        break;
    }
}

/* Rebuilds the database and the code index from the store (resume). */
static int replay_fn(kv_program *p, void *ud)
{
    kv_controller *c = ud;
    if (p->status != KV_STATUS_DUPLICATE) {
        int64_t seen;
        if (!kv_u64map_get(&c->code_ids, code_key(p->code_hash), &seen))
            kv_u64map_put(&c->code_ids, code_key(p->code_hash), p->id);
    }
    count_program(c, p);
    if (p->status != KV_STATUS_OK) return kv_database_add_failed(c->db, p) < 0 ? -1 : 0;
    if (kv_database_add(c->db, p) < 0) return -1;
    if (!isnan(p->fitness)) note_ok_program(c, p);
    return 0;
}

/* The evaluator of a kernel task: every child a job for this kevolve
 * binary's worker, on the devices it lists (recorded in the manifest). */
static kv_evaluator *task_evaluator(kv_controller *c, const char *work, char **err)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        *err = kv_asprintf("cannot find the kevolve binary: %s", strerror(errno));
        return NULL;
    }
    self[n] = '\0';
    json_t *devices = NULL;
    kv_evaluator *ev = kv_eval_task_evaluator(c->cfg, self, work, &devices, err);
    if (!ev) return NULL;
    char *text = kv_json_dumps(devices);
    if (kv_store_set_meta(c->store, "devices", text) != 0)
        kv_warn("cannot record the devices in the run manifest: %s", kv_store_errmsg(c->store));
    free(text);
    json_decref(devices);
    return ev;
}

/* Commits the children whose grades came within TIMEOUT_MS. Returns the
 * count, or -1. */
static int feedback_poll(kv_controller *c, int timeout_ms)
{
    int handled = 0;
    kv_graded g;
    for (int got; (got = kv_feedback_next(&c->feedback, handled ? 0 : timeout_ms, &g)) != 0;) {
        if (got < 0 || commit_child(c, g.child, g.trace, g.feedback, g.origin) != 0) return -1;
        handled++;
    }
    return handled;
}

/* The progress display with the run's counts as they are now. */
static void show_progress(kv_controller *c, int final)
{
    kv_progress_counts n = {.iterations_done = c->iterations_done,
                            .last_iteration = c->last_iteration,
                            .best_fitness = c->best_fitness,
                            .n_this_process = c->n_this_process,
                            .n_failed = c->n_failed,
                            .n_rejected = c->n_rejected,
                            .n_duplicates = c->n_duplicates,
                            .failures = &c->failures};
    kv_progress_update(&c->progress, &n, final);
}

int kv_controller_init(kv_controller *c, const kv_config *cfg, kv_store *store,
                       const char *output_dir, const char *evaluator, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->cfg = cfg;
    c->store = store;
    c->seed = seed;
    c->best_fitness = NAN;
    c->best_stop_value = NAN;
    c->output_dir = kv_strdup(output_dir);
    kv_progress_start(&c->progress, 0);
    c->db = kv_database_new(&cfg->database);
    if (!c->db) {
        kv_error("cannot create the program database");
        return -1;
    }
    if (kv_store_each_program(store, -1, 1, replay_fn, c) != 0) {
        kv_error("cannot rebuild the population from the store: %s", kv_store_errmsg(store));
        return -1;
    }
    c->next_iteration = kv_store_max_iteration(store) + 1;
    if (kv_breed_init(&c->breed, cfg, store, c->db, seed, c->next_iteration - 1) != 0) return -1;
    kv_feedback_init(&c->feedback, cfg, c->breed.llm, c->breed.templates, seed);
    /* Those below the next one that left no trace are made again (retries). */
    c->iterations_done = c->next_iteration - 1 - (int64_t)c->breed.n_retries;
    char *work = kv_path_join(output_dir, "work");
    char *err = NULL;
    if (cfg->evaluator.task && *cfg->evaluator.task)
        c->ev = task_evaluator(c, work, &err);
    else
        c->ev = kv_evaluator_new(&cfg->evaluator, evaluator, work, cfg->evaluator_sections, &err);
    free(work);
    if (!c->ev) {
        kv_error("cannot start the evaluation pipeline: %s", err ? err : "unknown error");
        free(err);
        return -1;
    }
    kv_evaluator_set_run_dir(c->ev, output_dir);
    return 0;
}

void kv_controller_free(kv_controller *c)
{
    kv_feedback_free(&c->feedback);
    kv_breed_free(&c->breed);
    for (size_t i = 0; i < c->n_pending; i++) {
        kv_program_free(c->pending[i].child);
        kv_llm_trace_free(c->pending[i].trace);
    }
    free(c->pending);
    if (c->ev) kv_evaluator_free(c->ev);
    if (c->db) kv_database_free(c->db);
    kv_u64map_free(&c->code_ids);
    kv_reason_tally_free(&c->failures);
    free(c->fatal);
    free(c->output_dir);
    memset(c, 0, sizeof *c);
}

/* Reason codes of the controller's own verdicts on children. */
#define KV_REASON_OUTSIDE_BLOCKS "outside_evolve_block" /* edits outside the EVOLVE-BLOCKs */
#define KV_REASON_TOO_LONG "too_long"                   /* over max_code_length */
#define KV_REASON_SAME_CODE "same_code"                 /* the code of an earlier program */
#define KV_REASON_SAME_ARTIFACT "same_artifact" /* the compiled artifact of an earlier one */

/* What a stored CHILD teaches its arm: a success when it beat its parent,
 * a failure when it failed, timed out or was rejected. */
static int record_child(kv_controller *c, const kv_program *child, kv_origin origin)
{
    kv_bandit_outcome outcome = KV_BANDIT_NEUTRAL;
    double gain = 0;
    if (child->status == KV_STATUS_OK) {
        gain = child->fitness - origin.parent_fitness;
        if (gain > 0 && isfinite(gain)) outcome = KV_BANDIT_SUCCESS;
    } else if (child->status != KV_STATUS_DUPLICATE) {
        outcome = KV_BANDIT_FAILURE;
    }
    return kv_breed_record(&c->breed, origin, outcome, gain, child->eval_seconds);
}

/* Stores a program that will not be evaluated (rejected or duplicate of
 * program DUPLICATE_OF, 0 when unknown), with reason code CODE (copied) and
 * REASON (taken), crediting ORIGIN's arm. */
static int store_unevaluated(kv_controller *c, kv_program *child, kv_status status,
                             const char *code, char *reason, int64_t duplicate_of,
                             kv_llm_trace *trace, kv_origin origin)
{
    child->status = status;
    free(child->status_reason);
    child->status_reason = reason;
    free(child->reason_code);
    child->reason_code = kv_strdup(code);
    child->duplicate_of = duplicate_of;
    count_program(c, child);
    char *outcome = kv_asprintf("%s: %s", kv_status_name(status), reason ? reason : "");
    int rc = kv_store_begin(c->store);
    if (rc == 0) rc = kv_store_insert_program(c->store, child);
    if (rc == 0) rc = store_trace(c, trace, child->id, outcome);
    if (rc == 0) rc = record_child(c, child, origin);
    if (rc == 0) rc = kv_store_commit(c->store);
    free(outcome);
    kv_llm_trace_free(trace);
    if (rc != 0) {
        kv_error("cannot store program of iteration %lld: %s", (long long)child->iteration,
                 kv_store_errmsg(c->store));
        kv_store_rollback(c->store);
        return -1;
    }
    iteration_done(c, child->iteration);
    if (status == KV_STATUS_REJECTED &&
        !kv_u64map_get(&c->code_ids, code_key(child->code_hash), NULL))
        kv_u64map_put(&c->code_ids, code_key(child->code_hash), child->id);
    kv_debug("iteration %lld: %s: %s", (long long)child->iteration, kv_status_name(status),
             child->status_reason);
    return 0;
}

/* Stores CHILD as rejected with reason code CODE (copied), REASON (taken)
 * and TRACE (taken, may be NULL), crediting ORIGIN's arm with a failure;
 * CHILD stays the caller's. Returns 0 or -1. */
static int store_rejected(kv_controller *c, kv_program *child, const char *code, char *reason,
                          kv_llm_trace *trace, kv_origin origin)
{
    return store_unevaluated(c, child, KV_STATUS_REJECTED, code, reason, 0, trace, origin);
}

/* The metrics of program ID for $KEVOLVE_PARENT_METRICS (a new
 * reference): from the population, else (evicted meanwhile) from the
 * store, else an empty object. */
static json_t *parent_metrics(kv_controller *c, int64_t id)
{
    const kv_program *p = id ? kv_database_get(c->db, id) : NULL;
    if (p && p->metrics) return json_incref(p->metrics);
    kv_program *stored = id ? kv_store_get_program(c->store, id) : NULL;
    json_t *m = stored && stored->metrics ? json_incref(stored->metrics) : json_object();
    kv_program_free(stored);
    return m;
}

int kv_controller_offer_child(kv_controller *c, kv_program *child, const char *parent_source,
                              kv_llm_trace *trace)
{
    return offer_child_from(c, child, parent_source, trace, (kv_origin){KV_NO_ARM, NAN});
}

/* As kv_controller_offer_child, crediting ORIGIN's arm with what the child
 * gives. */
static int offer_child_from(kv_controller *c, kv_program *child, const char *parent_source,
                            kv_llm_trace *trace, kv_origin origin)
{
    char *reason = NULL;
    int check = kv_blocks_check_child(parent_source, child->source, &reason);
    if (check != 0) {
        int src = store_unevaluated(c, child, KV_STATUS_REJECTED, KV_REASON_OUTSIDE_BLOCKS,
                                    reason ? reason : kv_strdup("EVOLVE-BLOCK check failed"), 0,
                                    trace, origin);
        kv_program_free(child);
        return src;
    }
    free(reason);
    if (c->cfg->max_code_length > 0 && strlen(child->source) > (size_t)c->cfg->max_code_length) {
        int src =
            store_unevaluated(c, child, KV_STATUS_REJECTED, KV_REASON_TOO_LONG,
                              kv_asprintf("program is %zu characters, over max_code_length %d",
                                          strlen(child->source), c->cfg->max_code_length),
                              0, trace, origin);
        kv_program_free(child);
        return src;
    }
    int64_t same;
    if (kv_u64map_get(&c->code_ids, code_key(child->code_hash), &same)) {
        char *why = same > 0 ? kv_asprintf("identical to program %lld", (long long)same)
                             : kv_asprintf("identical to the child of iteration %lld, still "
                                           "being evaluated",
                                           (long long)-same);
        int src = store_unevaluated(c, child, KV_STATUS_DUPLICATE, KV_REASON_SAME_CODE, why,
                                    same > 0 ? same : 0, trace, origin);
        kv_program_free(child);
        return src;
    }
    /* In flight: remember the code under the negated ticket until it is stored. */
    int64_t ticket = child->iteration;
    kv_u64map_put(&c->code_ids, code_key(child->code_hash), -ticket);
    json_t *pm = parent_metrics(c, child->parent_id);
    /* A kernel task screens against the parent's rows (screening on). */
    json_t *screen = c->cfg->evaluator.task && c->cfg->evaluator.screening && child->parent_id
                         ? kv_store_screen_parent(c->store, child->parent_id)
                         : NULL;
    int submitted =
        kv_evaluator_submit_child(c->ev, ticket, child->source, c->cfg->file_suffix, pm, screen);
    json_decref(pm);
    json_decref(screen);
    if (submitted != 0) {
        kv_error("cannot submit iteration %lld for evaluation", (long long)ticket);
        kv_program_free(child);
        kv_llm_trace_free(trace);
        return -1;
    }
    if (c->n_pending == c->cap_pending) {
        c->cap_pending = c->cap_pending ? c->cap_pending * 2 : 8;
        c->pending = kv_realloc(c->pending, c->cap_pending * sizeof *c->pending);
    }
    c->pending[c->n_pending++] = (kv_pending){ticket, child, trace, origin};
    return 0;
}

/* Stores migrants planned by the database, each in its own transaction. */
static int migrate(kv_controller *c)
{
    kv_program **migrants = NULL;
    size_t n = 0;
    if (kv_database_plan_migration(c->db, &migrants, &n) != 0) return -1;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        kv_program *m = migrants[i];
        if (rc == 0) {
            if (kv_store_begin(c->store) != 0 || kv_store_insert_program(c->store, m) != 0 ||
                kv_database_add(c->db, m) < 0 || kv_store_update_placement(c->store, m) != 0 ||
                kv_store_commit(c->store) != 0) {
                kv_error("cannot store a migrant: %s", kv_store_errmsg(c->store));
                kv_store_rollback(c->store);
                rc = -1;
            } else {
                c->n_migrants++;
            }
        }
        kv_program_free(m);
    }
    free(migrants);
    if (n) {
        json_t *data = json_pack("{s:I}", "migrants", (json_int_t)n);
        kv_store_add_event(c->store, "migration", data);
        json_decref(data);
        kv_debug("migration: %zu programs moved along the ring", n);
    }
    return rc;
}

/* Sets CHILD's status to what its evaluation means for the search. A result
 * carrying artifacts.duplicate_of_artifact (the kernel harness judged the
 * same compiled artifact earlier in this run and repeats that verdict) is a
 * DUPLICATE of the program whose artifacts.artifact_hash matches, or, with
 * no such program stored, the child's own verdict. An OK
 * result must give a finite fitness (combined_score, or the mean of the
 * numeric metrics that are not feature dimensions), else it FAILED: a
 * failure never owns a cell, counts as a best or becomes a parent. */
static void judge_result(kv_controller *c, kv_program *child)
{
    const char *hash =
        json_string_value(json_object_get(child->artifacts, "duplicate_of_artifact"));
    if (!hash || !*hash) hash = NULL;
    int64_t same = hash ? kv_store_find_by_artifact_hash(c->store, hash) : 0;
    if (hash && same <= 0) {
        /* Judged by an evaluation the store never got (a run killed between
         * the verdict and its commit, then resumed): the verdict is this
         * child's own, not a duplicate of nothing. */
        json_object_set_new(child->artifacts, "verdict_repeated", json_string(hash));
        if (!json_object_get(child->artifacts, "artifact_hash"))
            json_object_set_new(child->artifacts, "artifact_hash", json_string(hash));
        json_object_del(child->artifacts, "duplicate_of_artifact");
    } else if (hash && (child->status == KV_STATUS_OK || child->status == KV_STATUS_FAILED)) {
        child->status = KV_STATUS_DUPLICATE;
        child->duplicate_of = same;
        free(child->reason_code);
        child->reason_code = kv_strdup(KV_REASON_SAME_ARTIFACT);
        free(child->status_reason);
        child->status_reason =
            kv_asprintf("same compiled artifact as program %lld (%s)", (long long)same, hash);
        return;
    }
    if (child->status != KV_STATUS_OK) return;
    if (isfinite(kv_fitness(child->metrics, &c->cfg->database))) return;
    child->status = KV_STATUS_FAILED;
    free(child->reason_code);
    child->reason_code = kv_strdup(KV_REASON_NO_FITNESS);
    free(child->status_reason);
    child->status_reason = kv_strdup("the metrics give no finite fitness (no finite "
                                     "combined_score, and no finite numeric metric that is not a "
                                     "feature dimension)");
}

/* Stores the devices the evaluator took out of rotation; with none left the
 * run cannot go on (a fault that will not heal by itself). */
static void note_device_events(kv_controller *c)
{
    json_t *events = kv_evaluator_take_device_events(c->ev);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        kv_store_add_event(c->store, "device_out", e);
        if (json_integer_value(json_object_get(e, "left")) == 0 && !c->fatal)
            c->fatal = kv_asprintf(
                "every device of the run failed its check (the last, %s device %lld: %s): see "
                "`kevolve devices --check N --backend %s`",
                json_string_value(json_object_get(e, "backend")),
                (long long)json_integer_value(json_object_get(e, "device")),
                json_string_value(json_object_get(e, "reason")),
                json_string_value(json_object_get(e, "backend")));
    }
    json_decref(events);
}

/* Takes an evaluation result for a pending child and commits it. */
static int accept_result(kv_controller *c, kv_eval_result *r)
{
    note_device_events(c);
    size_t idx = c->n_pending;
    for (size_t i = 0; i < c->n_pending; i++)
        if (c->pending[i].ticket == r->ticket) idx = i;
    if (idx == c->n_pending) {
        kv_warn("evaluation result for unknown ticket %lld ignored", (long long)r->ticket);
        return 0;
    }
    kv_program *child = c->pending[idx].child;
    kv_llm_trace *trace = c->pending[idx].trace;
    kv_origin origin = c->pending[idx].origin;
    c->pending[idx] = c->pending[--c->n_pending];

    child->status = r->status;
    child->status_reason = r->reason;
    r->reason = NULL;
    child->reason_code = r->reason_code;
    r->reason_code = NULL;
    child->metrics = r->metrics;
    r->metrics = NULL;
    child->artifacts = r->artifacts;
    r->artifacts = NULL;
    child->stages = r->stages;
    r->stages = NULL;
    child->scenarios = r->scenarios;
    memset(&r->scenarios, 0, sizeof r->scenarios);
    child->eval_seconds = r->seconds;
    judge_result(c, child);

    if (child->status == KV_STATUS_OK && c->cfg->evaluator.use_llm_feedback && c->breed.llm) {
        kv_graded now;
        if (kv_feedback_start(&c->feedback, child, trace, origin, &now) == 0) return 0;
        return commit_child(c, now.child, now.trace, now.feedback, now.origin);
    }
    return commit_child(c, child, trace, NULL, origin);
}

/* Commits an evaluated CHILD (taken) with the call that made it and the
 * call that graded it (both taken, may be NULL): store, population, best,
 * the mutators' statistics, migration. Returns 0 or -1. */
static int commit_child(kv_controller *c, kv_program *child, kv_llm_trace *trace,
                        kv_llm_trace *feedback, kv_origin origin)
{
    int rc = 0;
    if (kv_store_begin(c->store) != 0 || kv_store_insert_program(c->store, child) != 0) rc = -1;
    if (rc == 0 && child->status == KV_STATUS_OK) {
        int added = kv_database_add(c->db, child);
        if (added < 0 || kv_store_update_placement(c->store, child) != 0) rc = -1;
    }
    if (rc == 0 && store_trace(c, trace, child->id, "child") != 0) rc = -1;
    if (rc == 0 && store_trace(c, feedback, child->id, "feedback") != 0) rc = -1;
    if (rc == 0 && record_child(c, child, origin) != 0) rc = -1;
    if (rc == 0 && kv_store_commit(c->store) != 0) rc = -1;
    kv_llm_trace_free(trace);
    kv_llm_trace_free(feedback);
    if (rc != 0) {
        kv_error("cannot store the result of iteration %lld: %s", (long long)child->iteration,
                 kv_store_errmsg(c->store));
        kv_store_rollback(c->store);
        kv_program_free(child);
        return -1;
    }
    kv_u64map_put(&c->code_ids, code_key(child->code_hash), child->id);
    count_program(c, child);
    iteration_done(c, child->iteration);
    c->n_this_process++;
    if (child->status == KV_STATUS_OK) {
        if (!isnan(child->fitness)) {
            int64_t old_best = c->best_id;
            note_ok_program(c, child);
            if (c->best_id != old_best) {
                kv_progress_new_best(&c->progress, child);
                kv_controller_write_best(c);
            }
        }
    } else {
        kv_database_add_failed(c->db, child);
        kv_debug("iteration %lld: %s (%s): %s", (long long)child->iteration,
                 kv_status_name(child->status), child->reason_code ? child->reason_code : "?",
                 child->status_reason ? child->status_reason : "");
    }
    kv_program_free(child);
    if (kv_database_migration_due(c->db) && migrate(c) != 0) return -1;
    return 0;
}

/* Why the run should stop now, or NULL to go on. */
static const char *stop_condition(const kv_controller *c)
{
    if (c->fatal) return c->fatal;
    if (c->breed.llm && kv_llm_budget_exhausted(c->breed.llm))
        return "the LLM budget (llm.max_budget_usd) is spent";
    if (c->cfg->has_target_score && !isnan(c->best_fitness) &&
        c->best_fitness >= c->cfg->target_score)
        return "target score reached";
    int patience = c->cfg->early_stopping_patience;
    if (patience < 0 && c->metric_reached)
        return "early stopping: early_stopping_metric reached convergence_threshold";
    if (patience > 0 && !isnan(c->best_fitness) &&
        c->next_iteration - 1 - c->last_improvement_iteration >= patience)
        return "early stopping: no improvement within the patience";
    return NULL;
}

int kv_controller_seed(kv_controller *c, const char *source)
{
    return kv_controller_seed_many(c, &source, 1);
}

/* Stores initial program I of N (island I mod the islands) as rejected for
 * malformed markers; 0, or -1 when the store fails. */
static int reject_seed(kv_controller *c, kv_program *p, size_t i, size_t n, char *reason)
{
    if (n == 1)
        kv_error("initial program: %s", reason ? reason : "malformed EVOLVE-BLOCK markers");
    else
        kv_error("initial program %zu of %zu: %s", i + 1, n,
                 reason ? reason : "malformed EVOLVE-BLOCK markers");
    p->status = KV_STATUS_REJECTED;
    p->status_reason = reason;
    int rc = kv_store_insert_program(c->store, p);
    kv_program_free(p);
    return rc == 0 ? 0 : -1;
}

int kv_controller_seed_many(kv_controller *c, const char *const *sources, size_t n)
{
    int islands = c->cfg->database.num_islands > 0 ? c->cfg->database.num_islands : 1;
    size_t cap = n > 8 ? n : 8;
    c->pending = kv_realloc(c->pending, cap * sizeof *c->pending);
    c->cap_pending = cap;
    size_t submitted = 0, malformed = 0;
    for (size_t i = 0; i < n; i++) {
        kv_program *p = kv_program_new();
        kv_program_set_source(p, sources[i]);
        p->mutator = kv_strdup("initial");
        p->island = (int)(i % (size_t)islands);
        p->iteration = 0;
        char *reason = NULL;
        kv_blocks b;
        if (kv_blocks_find(sources[i], &b, &reason) != 0) {
            if (reject_seed(c, p, i, n, reason) != 0) return -1;
            malformed++;
            continue;
        }
        kv_blocks_free(&b);
        /* Tickets 0, -1, -2, ...: children use their iteration (>= 1). */
        int64_t ticket = -(int64_t)i;
        if (kv_evaluator_submit(c->ev, ticket, sources[i], c->cfg->file_suffix) != 0) {
            kv_program_free(p);
            return -1;
        }
        c->pending[c->n_pending++] = (kv_pending){ticket, p, NULL, {KV_NO_ARM, NAN}};
        submitted++;
    }
    if (malformed && (n == 1 || !submitted)) return -1;
    size_t evaluated = 0;
    while (c->n_pending) {
        kv_eval_result r;
        int got;
        while ((got = kv_evaluator_poll(c->ev, 200, &r)) == 0) {
            if (kv_interrupt_count() >= 2) { /* the first waits for the results, as in the loop */
                kv_evaluator_cancel_all(c->ev);
                return -1;
            }
        }
        if (got < 0) return -1;
        size_t i = (size_t)(-r.ticket);
        kv_status status = r.status;
        char *why = kv_strdup(r.reason);
        int rc = accept_result(c, &r);
        kv_eval_result_clear(&r);
        if (rc != 0) {
            free(why);
            return -1;
        }
        if (status == KV_STATUS_OK)
            evaluated++;
        else if (n == 1)
            kv_error("the initial program did not evaluate: %s",
                     why ? why : kv_status_name(status));
        else
            kv_warn("initial program %zu of %zu did not evaluate: %s", i + 1, n,
                    why ? why : kv_status_name(status));
        free(why);
    }
    while (c->feedback.n_gradings) /* the models' grades of the initial programs */
        if (feedback_poll(c, 200) < 0) return -1;
    c->next_iteration = 1;
    if (!evaluated) return -1;
    if (isnan(c->best_fitness)) {
        kv_error("the initial program%s did not evaluate: %s", n > 1 ? "s" : "",
                 "their metrics give no fitness (no numeric metric)");
        return -1;
    }
    if (n == 1)
        kv_info("initial program: fitness %.6g", c->best_fitness);
    else
        kv_info("initial programs: %zu of %zu evaluated, best fitness %.6g (program %lld)",
                evaluated, n, c->best_fitness, (long long)c->best_id);
    return 0;
}

/* The next iteration to produce: one given back that is due, else a new
 * one (-1 when none is left or due). *WAIT_MS gets how long until one
 * given back is due (-1: none waiting). */
static int64_t next_iteration(kv_controller *c, int *wait_ms)
{
    int64_t due = kv_breed_due(&c->breed, wait_ms);
    if (due >= 0) return due;
    if (c->next_iteration <= c->last_iteration) return c->next_iteration++;
    return -1;
}

/* Stops the run on a fault that will not heal: REASON (taken) names the
 * model and the fault; the first one stops it. */
static void stop_on_fault(kv_controller *c, char *reason)
{
    if (!c->fatal) {
        c->fatal = kv_asprintf("%s; this fault will not heal by retrying: fix it, then "
                               "`kevolve resume %s` continues the run (with --config FILE, a "
                               "corrected config; with --api-base URL, another endpoint)",
                               reason, c->output_dir);
        kv_warn("stopping: %s", reason);
    }
    free(reason);
}

/* Does what the breeder's answer B (its contents taken) leaves to do: a
 * child offered for evaluation, a rejection stored, an iteration counted,
 * the run stopped. Returns 0 or -1. */
static int act_on(kv_controller *c, kv_bred *b)
{
    int rc = 0;
    switch (b->kind) {
    case KV_BRED_NONE:
        break;
    case KV_BRED_CHILD:
        rc = offer_child_from(c, b->child, b->parent_source, b->trace, b->origin);
        free(b->parent_source);
        break;
    case KV_BRED_REJECTED:
        rc = store_rejected(c, b->child, b->code, b->reason, b->trace, b->origin);
        kv_program_free(b->child);
        break;
    case KV_BRED_SPENT:
        iteration_done(c, b->iteration);
        break;
    case KV_BRED_FAULT:
        stop_on_fault(c, b->reason);
        break;
    }
    *b = (kv_bred){.kind = KV_BRED_NONE};
    return rc;
}

/* Produces iteration ITERATION's child and acts on the answer. Returns 0 or -1. */
static int produce(kv_controller *c, int64_t iteration)
{
    kv_bred b;
    int rc = kv_breed_produce(&c->breed, iteration, &b);
    if (act_on(c, &b) != 0) rc = -1;
    return rc;
}

/* Acts on the mutations that finished within TIMEOUT_MS. Returns the
 * count handled, or -1. */
static int breed_poll(kv_controller *c, int timeout_ms)
{
    int handled = 0;
    kv_bred b;
    for (int got; (got = kv_breed_next(&c->breed, handled ? 0 : timeout_ms, &b)) != 0;) {
        if (act_on(c, &b) != 0 || got < 0) return -1;
        handled++;
    }
    return handled;
}

/* Sleeps up to MS milliseconds (a signal ends it early). */
static void pause_ms(int ms)
{
    if (ms <= 0) return;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int kv_controller_loop(kv_controller *c)
{
    int interrupted = 0;
    int64_t parallel = c->cfg->evaluator.parallel_evaluations;
    if (parallel < 1) parallel = 1;
    int64_t llm_slots = c->breed.llm_concurrency;
    c->stop_reason = NULL;
    while (1) {
        int signals = kv_interrupt_count();
        if (signals >= 2) {
            kv_evaluator_cancel_all(c->ev);
            c->stop_reason = "interrupted twice: stopped at once";
            interrupted = 1;
            break;
        }
        if (signals == 1 && !interrupted) {
            interrupted = 1;
            c->stop_reason = "interrupted";
            kv_warn("interrupted: finishing the %zu evaluation(s) and %zu model call(s) in flight "
                    "(interrupt again to stop at once)",
                    c->n_pending, c->breed.n_waiting + c->feedback.n_gradings);
        }
        if (!interrupted && (!c->stop_reason || c->fatal)) c->stop_reason = stop_condition(c);
        /* Children in flight: evaluations up to parallel_evaluations, plus model
         * calls up to llm.max_concurrency, so slow models never idle the evaluators. */
        int retry_wait = -1;
        while (!interrupted && !c->stop_reason &&
               (llm_slots == 0 || (int64_t)c->breed.n_waiting < llm_slots) &&
               (int64_t)(c->n_pending + c->breed.n_waiting) < parallel + llm_slots) {
            int64_t iteration = next_iteration(c, &retry_wait);
            if (iteration < 0) break;
            if (produce(c, iteration) != 0) return KV_EXIT_FAILURE;
            c->stop_reason = stop_condition(c);
        }
        if (c->n_pending == 0 && c->breed.n_waiting == 0 && c->feedback.n_gradings == 0) {
            if (interrupted || c->stop_reason || retry_wait < 0) break;
            /* Only iterations given back are left: wait until one is due. */
            show_progress(c, 0);
            pause_ms(retry_wait < 200 ? retry_wait : 200);
            continue;
        }
        int others = c->n_pending > 0;
        if (c->breed.n_waiting) {
            int handled = breed_poll(c, others || c->feedback.n_gradings ? 0 : 100);
            if (handled < 0) return KV_EXIT_FAILURE;
            if (handled > 0) continue;
        }
        if (c->feedback.n_gradings) {
            int handled = feedback_poll(c, others || c->breed.n_waiting ? 0 : 100);
            if (handled < 0) return KV_EXIT_FAILURE;
            if (handled > 0) continue;
        }
        if (c->n_pending == 0) {
            show_progress(c, 0);
            continue;
        }
        kv_eval_result r;
        int got =
            kv_evaluator_poll(c->ev, c->breed.n_waiting || c->feedback.n_gradings ? 10 : 100, &r);
        if (got < 0) {
            kv_error("the evaluation pipeline failed");
            return KV_EXIT_FAILURE;
        }
        if (got == 0) {
            show_progress(c, 0);
            continue;
        }
        int rc = accept_result(c, &r);
        kv_eval_result_clear(&r);
        if (rc != 0) return KV_EXIT_FAILURE;
        show_progress(c, 0);
    }
    show_progress(c, 1);
    if (!c->stop_reason) c->stop_reason = "all iterations done";
    json_t *data = json_pack("{s:s, s:I, s:b}", "reason", c->stop_reason, "next_iteration",
                             (json_int_t)c->next_iteration, "fault", c->fatal != NULL);
    kv_store_add_event(c->store, interrupted ? "interrupted" : "stopped", data);
    json_decref(data);
    kv_controller_write_best(c);
    if (c->fatal) return KV_EXIT_FAILURE; /* c->stop_reason says why and what to do */
    return interrupted ? KV_EXIT_INTERRUPTED : KV_EXIT_OK;
}

int64_t kv_controller_iterations_done(const kv_controller *c)
{
    return c->iterations_done;
}

int kv_controller_write_best(kv_controller *c)
{
    kv_program *best = kv_store_best_program(c->store);
    if (!best) return 0;
    char *dir = kv_path_join(c->output_dir, "best");
    int rc = kv_mkdir_p(dir, 0755);
    char *name = kv_asprintf("best_program%s", c->cfg->file_suffix ? c->cfg->file_suffix : "");
    char *path = kv_path_join(dir, name);
    if (rc == 0) rc = kv_write_file(path, best->source, strlen(best->source));
    json_t *info =
        json_pack("{s:I, s:I, s:I, s:i, s:i, s:f, s:s}", "id", (json_int_t)best->id, "parent_id",
                  (json_int_t)best->parent_id, "iteration", (json_int_t)best->iteration,
                  "generation", best->generation, "island", best->island, "fitness", best->fitness,
                  "mutator", best->mutator ? best->mutator : "");
    if (best->metrics) json_object_set(info, "metrics", best->metrics);
    char *text = json_dumps(info, JSON_INDENT(2) | JSON_SORT_KEYS);
    char *info_path = kv_path_join(dir, "best_program_info.json");
    if (rc == 0 && text) rc = kv_write_file(info_path, text, strlen(text));
    if (rc != 0) kv_warn("cannot write the best program to %s", dir);
    free(text);
    free(info_path);
    json_decref(info);
    free(path);
    free(name);
    free(dir);
    kv_program_free(best);
    return rc;
}
