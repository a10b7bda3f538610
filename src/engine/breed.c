/* Making children: the iteration's parent and inspirations from its island,
 * the ensemble's draw of an arm (the bandit, restored from the store on
 * resume), the arm's mutator from the registry, and what its answer means:
 * a child offered for evaluation, a stored rejection, a spent iteration, an
 * iteration given back to be asked again after a pause, or the run's stop
 * on a fault that will not heal. Also the iterations a stopped run lost,
 * which a resume makes again. */
#include "engine/controller.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Previous attempts on a lineage shown in a prompt. */
#define KV_ATTEMPTS_SHOWN 5
/* Longest pause before an iteration given back is asked again. */
#define KV_RETRY_MAX_DELAY_S 60.0

/* ---- set-up ---------------------------------------------------------------- */

/* Restores each arm's statistics from mutator_stats; writes the rows of a
 * new run so that every arm shows from the start. Returns 0 or -1. */
static int restore_stats(kv_controller *c)
{
    json_t *rows = kv_store_mutator_stats(c->store);
    if (!rows) {
        kv_error("cannot read the mutators' statistics: %s", kv_store_errmsg(c->store));
        return -1;
    }
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        long arm = kv_ensemble_find(c->ensemble, json_string_value(json_object_get(row, "arm")));
        if (arm < 0) continue; /* an arm the config no longer has */
        kv_bandit_stats st = {
            .draws = json_integer_value(json_object_get(row, "draws")),
            .successes = json_integer_value(json_object_get(row, "successes")),
            .failures = json_integer_value(json_object_get(row, "failures")),
            .reward_sum = json_number_value(json_object_get(row, "reward_sum")),
        };
        kv_ensemble_set_stats(c->ensemble, (size_t)arm, &st);
    }
    int fresh = json_array_size(rows) == 0;
    json_decref(rows);
    if (!fresh) return 0;
    size_t n = kv_ensemble_size(c->ensemble);
    double *shares = kv_calloc(n, sizeof *shares);
    kv_ensemble_shares(c->ensemble, shares);
    int rc = kv_store_begin(c->store);
    for (size_t a = 0; a < n && rc == 0; a++) {
        kv_mutator_stat st = {kv_ensemble_arm(c->ensemble, a), 0, 0, 0, 0, shares[a]};
        rc = kv_store_put_mutator_stat(c->store, &st);
    }
    free(shares);
    if (rc == 0) rc = kv_store_commit(c->store);
    if (rc != 0) {
        kv_error("cannot write the mutators' statistics: %s", kv_store_errmsg(c->store));
        kv_store_rollback(c->store);
    }
    return rc;
}

/* Queues the iterations a stopped run lost (below the next new one). */
static int queue_lost_iterations(kv_controller *c)
{
    int64_t *lost = NULL;
    int64_t n = kv_store_missing_iterations(c->store, c->next_iteration - 1, &lost);
    if (n < 0) {
        kv_error("cannot read the store: %s", kv_store_errmsg(c->store));
        return -1;
    }
    if (n > 0) {
        c->retries = kv_realloc(c->retries, (size_t)n * sizeof *c->retries);
        c->cap_retries = (size_t)n;
        for (int64_t i = 0; i < n; i++)
            c->retries[i] = (kv_retry){lost[i], 0};
        c->n_retries = (size_t)n;
        kv_info("%lld iteration(s) left no trace when the run stopped; they are made again",
                (long long)n);
    }
    free(lost);
    return 0;
}

int kv_breed_init(kv_controller *c)
{
    const kv_llm_config *l = &c->cfg->llm;
    c->models = l->models;
    c->n_models = l->n_models;
    if (c->n_models == 0) { /* no models configured: the registry's built-in mix */
        c->default_models = kv_mutator_default_arms(&c->n_models);
        c->models = c->default_models;
    }
    kv_bandit_config bandit = {l->bandit_min_share, l->bandit_prior_results, l->bandit_cost_floor};
    char *err = NULL;
    c->ensemble = kv_ensemble_new(c->models, c->n_models, l->fallback_after,
                                  l->bandit ? &bandit : NULL, &err);
    if (!c->ensemble) {
        kv_error("%s", err ? err : "llm.models: invalid"); /* err names llm.models */
        free(err);
        return -1;
    }
    c->failing_calls = kv_calloc(c->n_models, sizeof *c->failing_calls);
    int feedback = c->cfg->evaluator.use_llm_feedback;
    if (feedback && l->n_evaluator_models == 0) {
        kv_error("evaluator.use_llm_feedback needs models to grade with: list them in "
                 "llm.evaluator_models");
        return -1;
    }
    if (kv_ensemble_has_llm(c->ensemble) || feedback) {
        c->llm = kv_llm_client_new(l, c->seed, &err);
        if (!c->llm) {
            kv_error("cannot start the LLM client: %s", err ? err : "unknown error");
            free(err);
            return -1;
        }
        c->templates = kv_prompt_templates_load(c->cfg->prompt.template_dir, &err);
        if (!c->templates) {
            kv_error("prompt.template_dir: %s", err ? err : "cannot load the templates");
            free(err);
            return -1;
        }
        c->llm_concurrency = l->max_concurrency > 0 ? l->max_concurrency : 8;
    }
    kv_mutator_env env = {c->cfg, c->seed, c->store, c->llm, c->templates};
    c->mutators = kv_mutators_new(&env, c->models, c->n_models, &err);
    if (!c->mutators) {
        kv_error("%s", err ? err : "cannot start the mutators");
        free(err);
        return -1;
    }
    if (restore_stats(c) != 0) return -1;
    return queue_lost_iterations(c);
}

static void waiting_clear(kv_waiting *w)
{
    kv_program_free(w->child);
    free(w->parent_source);
}

void kv_breed_free(kv_controller *c)
{
    for (size_t i = 0; i < c->n_waiting; i++)
        waiting_clear(&c->waiting[i]);
    free(c->waiting);
    c->waiting = NULL;
    c->n_waiting = 0;
    kv_mutators_free(c->mutators); /* before the client its mutator uses */
    c->mutators = NULL;
    if (c->llm) kv_llm_client_free(c->llm);
    c->llm = NULL;
    kv_prompt_templates_free(c->templates);
    c->templates = NULL;
    kv_ensemble_free(c->ensemble);
    c->ensemble = NULL;
    if (c->default_models) {
        for (size_t i = 0; i < c->n_models; i++) /* n_models counts them */
            free(c->default_models[i].name);
        free(c->default_models);
        c->default_models = NULL;
    }
    free(c->failing_calls);
    c->failing_calls = NULL;
    free(c->retries);
    c->retries = NULL;
    c->n_retries = 0;
    free(c->fatal);
    c->fatal = NULL;
}

/* ---- which iteration ------------------------------------------------------- */

int64_t kv_breed_next(kv_controller *c, int *wait_ms)
{
    *wait_ms = -1;
    double now = kv_now_s();
    for (size_t i = 0; i < c->n_retries; i++) {
        if (c->retries[i].due <= now) {
            int64_t it = c->retries[i].iteration;
            memmove(&c->retries[i], &c->retries[i + 1],
                    (c->n_retries - i - 1) * sizeof *c->retries);
            c->n_retries--;
            return it;
        }
        int ms = (int)ceil((c->retries[i].due - now) * 1000.0);
        if (*wait_ms < 0 || ms < *wait_ms) *wait_ms = ms;
    }
    if (c->next_iteration <= c->last_iteration) return c->next_iteration++;
    return -1;
}

/* Gives ITERATION back, to be made again after DELAY_S seconds. */
static void give_back(kv_controller *c, int64_t iteration, double delay_s)
{
    if (c->n_retries == c->cap_retries) {
        c->cap_retries = c->cap_retries ? 2 * c->cap_retries : 8;
        c->retries = kv_realloc(c->retries, c->cap_retries * sizeof *c->retries);
    }
    size_t at = c->n_retries;
    while (at > 0 && c->retries[at - 1].iteration > iteration)
        at--;
    memmove(&c->retries[at + 1], &c->retries[at], (c->n_retries - at) * sizeof *c->retries);
    c->retries[at] = (kv_retry){iteration, kv_now_s() + delay_s};
    c->n_retries++;
}

/* ---- producing -------------------------------------------------------------- */

/* Per-iteration generator: the choices of iteration I depend only on the
 * run's seed, I and the population (and the mutators' statistics), so a
 * resumed run continues the same way. */
static void iteration_rng(const kv_controller *c, int64_t iteration, kv_rng *rng)
{
    kv_rng_seed(rng, c->seed ^ ((uint64_t)iteration * 0x9e3779b97f4a7c15ULL));
}

/* Stores the model call of a mutation that made no program (OUTCOME says
 * what it came to), crediting ORIGIN's arm with a failure when SPENT.
 * Returns 0 or -1. */
static int store_call(kv_controller *c, const kv_llm_trace *trace, const char *outcome,
                      kv_origin origin, int spent)
{
    if (!trace && !spent) return 0;
    int rc = kv_store_begin(c->store);
    if (rc == 0) rc = kv_controller_store_trace(c, trace, 0, outcome);
    if (rc == 0 && spent) rc = kv_controller_record(c, origin, KV_BANDIT_FAILURE, 0, 0);
    if (rc == 0) rc = kv_store_commit(c->store);
    if (rc != 0) {
        kv_error("cannot store a model call: %s", kv_store_errmsg(c->store));
        kv_store_rollback(c->store);
    }
    return rc;
}

/* The pause before an iteration given back by entry ARM is asked again:
 * the entry's retry_delay, doubled with each call failed in a row. */
static double retry_delay(const kv_controller *c, size_t arm)
{
    kv_llm_model_settings s;
    kv_llm_model_resolve(&c->cfg->llm, &c->models[arm], &s);
    int k = c->failing_calls[arm] > 0 ? c->failing_calls[arm] - 1 : 0;
    double d = s.retry_delay * pow(2.0, k > 20 ? 20 : k);
    return d < KV_RETRY_MAX_DELAY_S ? d : KV_RETRY_MAX_DELAY_S;
}

/* Stops the run: REASON (taken) names the model and the fault. The
 * mutations in flight are dropped (their iterations were not spent, and a
 * resume makes them). */
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
    for (size_t i = 0; i < c->n_waiting; i++)
        waiting_clear(&c->waiting[i]);
    c->n_waiting = 0;
}

/* Acts on R, the answer of a mutation of CHILD (taken: lineage set, no
 * source) from PARENT_SOURCE. Returns 0 or -1. */
static int handle(kv_controller *c, kv_program *child, const char *parent_source, kv_origin origin,
                  kv_mutation_result *r)
{
    int is_llm = r->trace != NULL;
    size_t arm = origin.arm;
    if (is_llm && arm < c->n_models)
        kv_ensemble_report(c->ensemble, arm,
                           r->status == KV_MUTATION_CHILD || r->status == KV_MUTATION_REJECTED);
    if (r->status != KV_MUTATION_RETRY && arm < c->n_models) c->failing_calls[arm] = 0;
    kv_llm_trace *trace = r->trace;
    r->trace = NULL;
    free(child->mutator);
    child->mutator = r->mutator;
    r->mutator = NULL;
    switch (r->status) {
    case KV_MUTATION_CHILD:
        kv_program_set_source(child, r->source);
        child->change_summary = r->summary;
        r->summary = NULL;
        child->other_parent_id = r->other_parent_id;
        return kv_controller_offer_child_from(c, child, parent_source, trace, origin);
    case KV_MUTATION_REJECTED:
    case KV_MUTATION_UNCHANGED: {
        /* The parent's text stands in for the child that could not be made;
         * the reason reaches the next prompt on this lineage. */
        kv_program_set_source(child, parent_source);
        char *reason = r->reason ? r->reason : kv_strdup("no child could be made");
        r->reason = NULL;
        int rc = kv_controller_store_rejected(
            c, child, r->reason_code ? r->reason_code : "no_change", reason, trace, origin);
        kv_program_free(child);
        return rc;
    }
    case KV_MUTATION_FAILED: {
        /* No child: the call is kept with its error, the iteration is spent. */
        kv_warn("iteration %lld: %s", (long long)child->iteration,
                r->reason ? r->reason : "the mutation failed");
        char *outcome = kv_asprintf("error: %s", r->reason ? r->reason : "unknown");
        int rc = store_call(c, trace, outcome, origin, 1);
        if (rc == 0) kv_controller_iteration_done(c, child->iteration);
        free(outcome);
        kv_llm_trace_free(trace);
        kv_program_free(child);
        return rc;
    }
    case KV_MUTATION_RETRY: {
        /* The iteration is not spent: asked again after a pause, unless the
         * model keeps failing. */
        int transient = trace && trace->fault == KV_LLM_FAULT_TRANSIENT;
        if (transient && arm < c->n_models) c->failing_calls[arm]++;
        char *outcome = kv_asprintf("retry: %s", r->reason ? r->reason : "unknown");
        int rc = store_call(c, trace, outcome, origin, 0);
        free(outcome);
        kv_llm_trace_free(trace);
        if (transient && arm < c->n_models && c->failing_calls[arm] >= c->cfg->llm.give_up_after) {
            stop_on_fault(c, kv_asprintf("model '%s' failed %d calls in a row, each after its "
                                         "retries; the last: %s",
                                         c->models[arm].name, c->failing_calls[arm],
                                         r->reason ? r->reason : "unknown"));
        } else if (transient) {
            double delay = retry_delay(c, arm);
            kv_warn("iteration %lld: %s; asked again in %.1f s", (long long)child->iteration,
                    r->reason ? r->reason : "the model call failed", delay);
            give_back(c, child->iteration, delay);
        } else {
            give_back(c, child->iteration, 0);
        }
        kv_program_free(child);
        return rc;
    }
    case KV_MUTATION_FATAL: {
        char *outcome = kv_asprintf("fatal: %s", r->reason ? r->reason : "unknown");
        int rc = store_call(c, trace, outcome, origin, 0);
        free(outcome);
        kv_llm_trace_free(trace);
        stop_on_fault(c, kv_strdup(r->reason ? r->reason : "a model call failed for good"));
        kv_program_free(child);
        return rc;
    }
    }
    kv_program_free(child);
    kv_llm_trace_free(trace);
    return 0;
}

/* Marks the built-in entries of weight > 0 other than TRIED[...] usable, in
 * USABLE. Returns how many. */
static size_t builtin_fallbacks(const kv_controller *c, const int *tried, int *usable)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_models; i++) {
        const kv_mutator_def *def = kv_mutators_def(c->mutators, i);
        usable[i] = def && !def->poll && !tried[i] && c->models[i].weight > 0;
        n += (size_t)usable[i];
    }
    return n;
}

/* The island's best programs but PARENT, for a prompt (malloc'd array). */
static const kv_program **top_programs(kv_controller *c, const kv_selection *sel, size_t *n)
{
    size_t want = c->cfg->prompt.num_top_programs > 0 ? (size_t)c->cfg->prompt.num_top_programs : 0;
    const kv_program **top = kv_calloc(want ? want : 1, sizeof *top);
    *n = 0;
    for (size_t r = 0; *n < want; r++) {
        const kv_program *p = kv_database_island_program(c->db, sel->island, r);
        if (!p) break;
        if (p != sel->parent) top[(*n)++] = p;
    }
    return top;
}

int kv_breed_produce(kv_controller *c, int64_t iteration)
{
    int num_islands = kv_database_num_islands(c->db);
    kv_rng rng;
    iteration_rng(c, iteration, &rng);
    kv_selection sel;
    size_t max_insp =
        (size_t)(c->cfg->prompt.num_top_programs + c->cfg->prompt.num_diverse_programs);
    if (kv_database_sample(c->db, (int)(iteration % num_islands), &rng, max_insp ? max_insp : 1,
                           &sel) != 0) {
        kv_error("the population is empty: nothing to evolve");
        return -1;
    }
    const kv_program *parent = sel.parent;
    kv_program *child = kv_program_new();
    child->parent_id = parent->id;
    child->island = sel.island;
    child->generation = parent->generation + 1;
    child->iteration = iteration;

    kv_ensemble_choice choice;
    kv_ensemble_choose(c->ensemble, &rng, &choice);
    int *tried = kv_calloc(c->n_models, sizeof *tried);
    int *usable = kv_calloc(c->n_models, sizeof *usable);
    kv_mutation_result r = {0};
    kv_program **attempts = NULL;
    int n_attempts = 0;
    int rc = 0;
    char *first_reason = NULL;
    const char *first_code = NULL;
    for (;;) {
        size_t arm = choice.index;
        tried[arm] = 1;
        const kv_mutator_def *def = kv_mutators_def(c->mutators, arm);
        kv_mutation_request req = {
            .ticket = iteration,
            .arm = arm,
            .model = &c->models[arm],
            .parent = parent,
            .inspirations = sel.inspirations,
            .n_inspirations = sel.n_inspirations,
            .rng = &rng,
        };
        const kv_program **top = NULL;
        if (def && (def->needs & KV_MUTATOR_NEEDS_CONTEXT)) {
            top = top_programs(c, &sel, &req.n_top);
            req.top = top;
            if (!attempts) {
                n_attempts =
                    kv_store_recent_children(c->store, parent->id, KV_ATTEMPTS_SHOWN, &attempts);
                if (n_attempts < 0) n_attempts = 0; /* the prompt goes without them */
            }
            req.attempts = (const kv_program *const *)attempts;
            req.n_attempts = (size_t)n_attempts;
        }
        char *err = NULL;
        int started = kv_mutators_start(c->mutators, &req, &r, &err);
        free(top);
        if (started < 0) {
            kv_error("iteration %lld: %s", (long long)iteration, err ? err : "mutator failed");
            free(err);
            rc = -1;
            break;
        }
        kv_origin origin = {arm, parent->fitness};
        if (started == 1) { /* the answer comes later */
            if (c->n_waiting == c->cap_waiting) {
                c->cap_waiting = c->cap_waiting ? 2 * c->cap_waiting : 8;
                c->waiting = kv_realloc(c->waiting, c->cap_waiting * sizeof *c->waiting);
            }
            c->waiting[c->n_waiting++] =
                (kv_waiting){iteration, child, kv_strdup(parent->source), origin};
            child = NULL;
            break;
        }
        /* A built-in that cannot change this parent leaves the choice to the
         * other built-ins; its reason is kept for the record. */
        if (r.status == KV_MUTATION_UNCHANGED && builtin_fallbacks(c, tried, usable) > 0) {
            kv_ensemble_note_unable(c->ensemble, arm);
            if (!first_reason) {
                first_reason = r.reason;
                first_code = r.reason_code;
                r.reason = NULL;
            }
            kv_mutation_result_clear(&r);
            kv_ensemble_choose_among(c->ensemble, &rng, usable, &choice);
            continue;
        }
        if (r.status == KV_MUTATION_UNCHANGED && first_reason) {
            /* None could: the first mutator drawn answers for the iteration. */
            free(r.reason);
            r.reason = first_reason;
            r.reason_code = first_code;
            first_reason = NULL;
        }
        rc = handle(c, child, parent->source, origin, &r);
        child = NULL;
        break;
    }
    free(first_reason);
    kv_mutation_result_clear(&r);
    kv_program_free(child);
    for (int i = 0; i < n_attempts; i++)
        kv_program_free(attempts[i]);
    free(attempts);
    free(tried);
    free(usable);
    kv_selection_free(&sel);
    return rc;
}

int kv_breed_poll(kv_controller *c, int timeout_ms)
{
    int handled = 0;
    while (c->n_waiting || kv_mutators_pending(c->mutators)) {
        kv_mutation_result r;
        char *err = NULL;
        int got = kv_mutators_poll(c->mutators, handled ? 0 : timeout_ms, &r, &err);
        if (got < 0) {
            kv_error("%s", err ? err : "a mutator failed");
            free(err);
            return -1;
        }
        if (got == 0) break;
        size_t idx = c->n_waiting;
        for (size_t i = 0; i < c->n_waiting; i++)
            if (c->waiting[i].ticket == r.ticket) idx = i;
        if (idx == c->n_waiting) { /* dropped when the run stopped */
            kv_mutation_result_clear(&r);
            continue;
        }
        kv_waiting w = c->waiting[idx];
        c->waiting[idx] = c->waiting[--c->n_waiting];
        int rc = handle(c, w.child, w.parent_source, w.origin, &r);
        free(w.parent_source);
        kv_mutation_result_clear(&r);
        if (rc != 0) return -1;
        handled++;
    }
    return handled;
}
