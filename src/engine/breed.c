/* Making children (breed.h): the iteration's parent and inspirations from
 * its island, the ensemble's draw of an arm (the bandit, restored from the
 * store on resume), the arm's mutator from the registry, and what its
 * answer means: a child to offer for evaluation, a rejection to store, a
 * spent iteration, an iteration given back to be asked again after a pause,
 * or the run's stop on a fault that will not heal. Also the iterations a
 * stopped run lost, which a resume makes again. */
#include "engine/breed.h"
#include "engine/trace_store.h"
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
static int restore_stats(kv_breeder *b)
{
    json_t *rows = kv_store_mutator_stats(b->store);
    if (!rows) {
        kv_error("cannot read the mutators' statistics: %s", kv_store_errmsg(b->store));
        return -1;
    }
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        long arm = kv_ensemble_find(b->ensemble, json_string_value(json_object_get(row, "arm")));
        if (arm < 0) continue; /* an arm the config no longer has */
        kv_bandit_stats st = {
            .draws = json_integer_value(json_object_get(row, "draws")),
            .successes = json_integer_value(json_object_get(row, "successes")),
            .failures = json_integer_value(json_object_get(row, "failures")),
            .reward_sum = json_number_value(json_object_get(row, "reward_sum")),
        };
        kv_ensemble_set_stats(b->ensemble, (size_t)arm, &st);
    }
    int fresh = json_array_size(rows) == 0;
    json_decref(rows);
    if (!fresh) return 0;
    size_t n = kv_ensemble_size(b->ensemble);
    double *shares = kv_calloc(n, sizeof *shares);
    kv_ensemble_shares(b->ensemble, shares);
    int rc = kv_store_begin(b->store);
    for (size_t a = 0; a < n && rc == 0; a++) {
        kv_mutator_stat st = {kv_ensemble_arm(b->ensemble, a), 0, 0, 0, 0, shares[a]};
        rc = kv_store_put_mutator_stat(b->store, &st);
    }
    free(shares);
    if (rc == 0) rc = kv_store_commit(b->store);
    if (rc != 0) {
        kv_error("cannot write the mutators' statistics: %s", kv_store_errmsg(b->store));
        kv_store_rollback(b->store);
    }
    return rc;
}

/* Queues the iterations up to MADE that a stopped run lost. */
static int queue_lost_iterations(kv_breeder *b, int64_t made)
{
    int64_t *lost = NULL;
    int64_t n = kv_store_missing_iterations(b->store, made, &lost);
    if (n < 0) {
        kv_error("cannot read the store: %s", kv_store_errmsg(b->store));
        return -1;
    }
    if (n > 0) {
        b->retries = kv_realloc(b->retries, (size_t)n * sizeof *b->retries);
        b->cap_retries = (size_t)n;
        for (int64_t i = 0; i < n; i++)
            b->retries[i] = (kv_retry){lost[i], 0};
        b->n_retries = (size_t)n;
        kv_info("%lld iteration(s) left no trace when the run stopped; they are made again",
                (long long)n);
    }
    free(lost);
    return 0;
}

int kv_breed_init(kv_breeder *b, const kv_config *cfg, kv_store *store, kv_database *db,
                  uint64_t seed, int64_t made)
{
    memset(b, 0, sizeof *b);
    b->cfg = cfg;
    b->store = store;
    b->db = db;
    b->seed = seed;
    const kv_llm_config *l = &b->cfg->llm;
    b->models = l->models;
    b->n_models = l->n_models;
    if (b->n_models == 0) { /* no models configured: the registry's built-in mix */
        b->default_models = kv_mutator_default_arms(&b->n_models);
        b->models = b->default_models;
    }
    kv_bandit_config bandit = {l->bandit_min_share, l->bandit_prior_results, l->bandit_cost_floor};
    char *err = NULL;
    b->ensemble = kv_ensemble_new(b->models, b->n_models, l->fallback_after,
                                  l->bandit ? &bandit : NULL, &err);
    if (!b->ensemble) {
        kv_error("%s", err ? err : "llm.models: invalid"); /* err names llm.models */
        free(err);
        return -1;
    }
    b->failing_calls = kv_calloc(b->n_models, sizeof *b->failing_calls);
    int feedback = b->cfg->evaluator.use_llm_feedback;
    if (feedback && l->n_evaluator_models == 0) {
        kv_error("evaluator.use_llm_feedback needs models to grade with: list them in "
                 "llm.evaluator_models");
        return -1;
    }
    if (kv_ensemble_has_llm(b->ensemble) || feedback) {
        b->llm = kv_llm_client_new(l, b->seed, &err);
        if (!b->llm) {
            kv_error("cannot start the LLM client: %s", err ? err : "unknown error");
            free(err);
            return -1;
        }
        b->templates = kv_prompt_templates_load(b->cfg->prompt.template_dir, &err);
        if (!b->templates) {
            kv_error("prompt.template_dir: %s", err ? err : "cannot load the templates");
            free(err);
            return -1;
        }
        b->llm_concurrency = l->max_concurrency > 0 ? l->max_concurrency : 8;
    }
    kv_mutator_env env = {b->cfg, b->seed, b->store, b->llm, b->templates};
    b->mutators = kv_mutators_new(&env, b->models, b->n_models, &err);
    if (!b->mutators) {
        kv_error("%s", err ? err : "cannot start the mutators");
        free(err);
        return -1;
    }
    if (restore_stats(b) != 0) return -1;
    return queue_lost_iterations(b, made);
}

static void waiting_clear(kv_waiting *w)
{
    kv_program_free(w->child);
    free(w->parent_source);
}

void kv_breed_free(kv_breeder *b)
{
    for (size_t i = 0; i < b->n_waiting; i++)
        waiting_clear(&b->waiting[i]);
    free(b->waiting);
    b->waiting = NULL;
    b->n_waiting = 0;
    kv_mutators_free(b->mutators); /* before the client its mutator uses */
    b->mutators = NULL;
    if (b->llm) kv_llm_client_free(b->llm);
    b->llm = NULL;
    kv_prompt_templates_free(b->templates);
    b->templates = NULL;
    kv_ensemble_free(b->ensemble);
    b->ensemble = NULL;
    if (b->default_models) {
        for (size_t i = 0; i < b->n_models; i++) /* n_models counts them */
            free(b->default_models[i].name);
        free(b->default_models);
        b->default_models = NULL;
    }
    free(b->failing_calls);
    b->failing_calls = NULL;
    free(b->retries);
    b->retries = NULL;
    b->n_retries = 0;
}

/* ---- which iteration ------------------------------------------------------- */

int64_t kv_breed_due(kv_breeder *b, int *wait_ms)
{
    *wait_ms = -1;
    double now = kv_now_s();
    for (size_t i = 0; i < b->n_retries; i++) {
        if (b->retries[i].due <= now) {
            int64_t it = b->retries[i].iteration;
            memmove(&b->retries[i], &b->retries[i + 1],
                    (b->n_retries - i - 1) * sizeof *b->retries);
            b->n_retries--;
            return it;
        }
        int ms = (int)ceil((b->retries[i].due - now) * 1000.0);
        if (*wait_ms < 0 || ms < *wait_ms) *wait_ms = ms;
    }
    return -1;
}

/* Gives ITERATION back, to be made again after DELAY_S seconds. */
static void give_back(kv_breeder *b, int64_t iteration, double delay_s)
{
    if (b->n_retries == b->cap_retries) {
        b->cap_retries = b->cap_retries ? 2 * b->cap_retries : 8;
        b->retries = kv_realloc(b->retries, b->cap_retries * sizeof *b->retries);
    }
    size_t at = b->n_retries;
    while (at > 0 && b->retries[at - 1].iteration > iteration)
        at--;
    memmove(&b->retries[at + 1], &b->retries[at], (b->n_retries - at) * sizeof *b->retries);
    b->retries[at] = (kv_retry){iteration, kv_now_s() + delay_s};
    b->n_retries++;
}

/* ---- producing -------------------------------------------------------------- */

/* Per-iteration generator: the choices of iteration I depend only on the
 * run's seed, I and the population (and the mutators' statistics), so a
 * resumed run continues the same way. */
static void iteration_rng(const kv_breeder *b, int64_t iteration, kv_rng *rng)
{
    kv_rng_seed(rng, b->seed ^ ((uint64_t)iteration * 0x9e3779b97f4a7c15ULL));
}

/* Stores the model call of a mutation that made no program (OUTCOME says
 * what it came to), crediting ORIGIN's arm with a failure when SPENT.
 * Returns 0 or -1. */
static int store_call(kv_breeder *b, const kv_llm_trace *trace, const char *outcome,
                      kv_origin origin, int spent)
{
    if (!trace && !spent) return 0;
    int rc = kv_store_begin(b->store);
    if (rc == 0) rc = kv_trace_store(b->store, b->cfg->database.log_prompts, trace, 0, outcome);
    if (rc == 0 && spent) rc = kv_breed_record(b, origin, KV_BANDIT_FAILURE, 0, 0);
    if (rc == 0) rc = kv_store_commit(b->store);
    if (rc != 0) {
        kv_error("cannot store a model call: %s", kv_store_errmsg(b->store));
        kv_store_rollback(b->store);
    }
    return rc;
}

/* The pause before an iteration given back by entry ARM is asked again:
 * the entry's retry_delay, doubled with each call failed in a row. */
static double retry_delay(const kv_breeder *b, size_t arm)
{
    kv_llm_model_settings s;
    kv_llm_model_resolve(&b->cfg->llm, &b->models[arm], &s);
    int k = b->failing_calls[arm] > 0 ? b->failing_calls[arm] - 1 : 0;
    double d = s.retry_delay * pow(2.0, k > 20 ? 20 : k);
    return d < KV_RETRY_MAX_DELAY_S ? d : KV_RETRY_MAX_DELAY_S;
}

/* Stops making children: *OUT asks the controller to stop the run for
 * REASON (taken: names the model and the fault). The mutations in flight
 * are dropped (their iterations were not spent, and a resume makes them). */
static void stop_on_fault(kv_breeder *b, char *reason, kv_bred *out)
{
    *out = (kv_bred){.kind = KV_BRED_FAULT, .reason = reason};
    for (size_t i = 0; i < b->n_waiting; i++)
        waiting_clear(&b->waiting[i]);
    b->n_waiting = 0;
}

/* Acts on R, the answer of a mutation of CHILD (taken: lineage set, no
 * source) from PARENT_SOURCE: *OUT gets what is left for the controller.
 * Returns 0, or -1 when the store failed (*OUT still to act on). */
static int handle(kv_breeder *b, kv_program *child, const char *parent_source, kv_origin origin,
                  kv_mutation_result *r, kv_bred *out)
{
    *out = (kv_bred){.kind = KV_BRED_NONE};
    int is_llm = r->trace != NULL;
    size_t arm = origin.arm;
    if (is_llm && arm < b->n_models)
        kv_ensemble_report(b->ensemble, arm,
                           r->status == KV_MUTATION_CHILD || r->status == KV_MUTATION_REJECTED);
    if (r->status != KV_MUTATION_RETRY && arm < b->n_models) b->failing_calls[arm] = 0;
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
        *out = (kv_bred){.kind = KV_BRED_CHILD,
                         .child = child,
                         .parent_source = kv_strdup(parent_source),
                         .trace = trace,
                         .origin = origin};
        return 0;
    case KV_MUTATION_REJECTED:
    case KV_MUTATION_UNCHANGED:
        /* The parent's text stands in for the child that could not be made;
         * the reason reaches the next prompt on this lineage. */
        kv_program_set_source(child, parent_source);
        *out = (kv_bred){.kind = KV_BRED_REJECTED,
                         .child = child,
                         .trace = trace,
                         .origin = origin,
                         .code = r->reason_code ? r->reason_code : "no_change",
                         .reason = r->reason ? r->reason : kv_strdup("no child could be made")};
        r->reason = NULL;
        return 0;
    case KV_MUTATION_FAILED: {
        /* No child: the call is kept with its error, the iteration is spent. */
        kv_warn("iteration %lld: %s", (long long)child->iteration,
                r->reason ? r->reason : "the mutation failed");
        char *outcome = kv_asprintf("error: %s", r->reason ? r->reason : "unknown");
        int rc = store_call(b, trace, outcome, origin, 1);
        if (rc == 0) *out = (kv_bred){.kind = KV_BRED_SPENT, .iteration = child->iteration};
        free(outcome);
        kv_llm_trace_free(trace);
        kv_program_free(child);
        return rc;
    }
    case KV_MUTATION_RETRY: {
        /* The iteration is not spent: asked again after a pause, unless the
         * model keeps failing. */
        int transient = trace && trace->fault == KV_LLM_FAULT_TRANSIENT;
        if (transient && arm < b->n_models) b->failing_calls[arm]++;
        char *outcome = kv_asprintf("retry: %s", r->reason ? r->reason : "unknown");
        int rc = store_call(b, trace, outcome, origin, 0);
        free(outcome);
        kv_llm_trace_free(trace);
        if (transient && arm < b->n_models && b->failing_calls[arm] >= b->cfg->llm.give_up_after) {
            stop_on_fault(b,
                          kv_asprintf("model '%s' failed %d calls in a row, each after its "
                                      "retries; the last: %s",
                                      b->models[arm].name, b->failing_calls[arm],
                                      r->reason ? r->reason : "unknown"),
                          out);
        } else if (transient) {
            double delay = retry_delay(b, arm);
            kv_warn("iteration %lld: %s; asked again in %.1f s", (long long)child->iteration,
                    r->reason ? r->reason : "the model call failed", delay);
            give_back(b, child->iteration, delay);
        } else {
            give_back(b, child->iteration, 0);
        }
        kv_program_free(child);
        return rc;
    }
    case KV_MUTATION_FATAL: {
        char *outcome = kv_asprintf("fatal: %s", r->reason ? r->reason : "unknown");
        int rc = store_call(b, trace, outcome, origin, 0);
        free(outcome);
        kv_llm_trace_free(trace);
        stop_on_fault(b, kv_strdup(r->reason ? r->reason : "a model call failed for good"), out);
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
static size_t builtin_fallbacks(const kv_breeder *b, const int *tried, int *usable)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n_models; i++) {
        const kv_mutator_def *def = kv_mutators_def(b->mutators, i);
        usable[i] = def && !def->poll && !tried[i] && b->models[i].weight > 0;
        n += (size_t)usable[i];
    }
    return n;
}

/* The island's best programs but PARENT, for a prompt (malloc'd array). */
static const kv_program **top_programs(kv_breeder *b, const kv_selection *sel, size_t *n)
{
    size_t want = b->cfg->prompt.num_top_programs > 0 ? (size_t)b->cfg->prompt.num_top_programs : 0;
    const kv_program **top = kv_calloc(want ? want : 1, sizeof *top);
    *n = 0;
    for (size_t r = 0; *n < want; r++) {
        const kv_program *p = kv_database_island_program(b->db, sel->island, r);
        if (!p) break;
        if (p != sel->parent) top[(*n)++] = p;
    }
    return top;
}

int kv_breed_produce(kv_breeder *b, int64_t iteration, kv_bred *out)
{
    *out = (kv_bred){.kind = KV_BRED_NONE};
    int num_islands = kv_database_num_islands(b->db);
    kv_rng rng;
    iteration_rng(b, iteration, &rng);
    kv_selection sel;
    size_t max_insp =
        (size_t)(b->cfg->prompt.num_top_programs + b->cfg->prompt.num_diverse_programs);
    if (kv_database_sample(b->db, (int)(iteration % num_islands), &rng, max_insp ? max_insp : 1,
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
    kv_ensemble_choose(b->ensemble, &rng, &choice);
    int *tried = kv_calloc(b->n_models, sizeof *tried);
    int *usable = kv_calloc(b->n_models, sizeof *usable);
    kv_mutation_result r = {0};
    kv_program **attempts = NULL;
    int n_attempts = 0;
    int rc = 0;
    char *first_reason = NULL;
    const char *first_code = NULL;
    for (;;) {
        size_t arm = choice.index;
        tried[arm] = 1;
        const kv_mutator_def *def = kv_mutators_def(b->mutators, arm);
        kv_mutation_request req = {
            .ticket = iteration,
            .arm = arm,
            .model = &b->models[arm],
            .parent = parent,
            .inspirations = sel.inspirations,
            .n_inspirations = sel.n_inspirations,
            .rng = &rng,
        };
        const kv_program **top = NULL;
        if (def && (def->needs & KV_MUTATOR_NEEDS_CONTEXT)) {
            top = top_programs(b, &sel, &req.n_top);
            req.top = top;
            if (!attempts) {
                n_attempts =
                    kv_store_recent_children(b->store, parent->id, KV_ATTEMPTS_SHOWN, &attempts);
                if (n_attempts < 0) n_attempts = 0; /* the prompt goes without them */
            }
            req.attempts = (const kv_program *const *)attempts;
            req.n_attempts = (size_t)n_attempts;
        }
        char *err = NULL;
        int started = kv_mutators_start(b->mutators, &req, &r, &err);
        free(top);
        if (started < 0) {
            kv_error("iteration %lld: %s", (long long)iteration, err ? err : "mutator failed");
            free(err);
            rc = -1;
            break;
        }
        kv_origin origin = {arm, parent->fitness};
        if (started == 1) { /* the answer comes later */
            if (b->n_waiting == b->cap_waiting) {
                b->cap_waiting = b->cap_waiting ? 2 * b->cap_waiting : 8;
                b->waiting = kv_realloc(b->waiting, b->cap_waiting * sizeof *b->waiting);
            }
            b->waiting[b->n_waiting++] =
                (kv_waiting){iteration, child, kv_strdup(parent->source), origin};
            child = NULL;
            break;
        }
        /* A built-in that cannot change this parent leaves the choice to the
         * other built-ins; its reason is kept for the record. */
        if (r.status == KV_MUTATION_UNCHANGED && builtin_fallbacks(b, tried, usable) > 0) {
            kv_ensemble_note_unable(b->ensemble, arm);
            if (!first_reason) {
                first_reason = r.reason;
                first_code = r.reason_code;
                r.reason = NULL;
            }
            kv_mutation_result_clear(&r);
            kv_ensemble_choose_among(b->ensemble, &rng, usable, &choice);
            continue;
        }
        if (r.status == KV_MUTATION_UNCHANGED && first_reason) {
            /* None could: the first mutator drawn answers for the iteration. */
            free(r.reason);
            r.reason = first_reason;
            r.reason_code = first_code;
            first_reason = NULL;
        }
        rc = handle(b, child, parent->source, origin, &r, out);
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

int kv_breed_next(kv_breeder *b, int timeout_ms, kv_bred *out)
{
    *out = (kv_bred){.kind = KV_BRED_NONE};
    while (b->n_waiting || kv_mutators_pending(b->mutators)) {
        kv_mutation_result r;
        char *err = NULL;
        int got = kv_mutators_poll(b->mutators, timeout_ms, &r, &err);
        if (got < 0) {
            kv_error("%s", err ? err : "a mutator failed");
            free(err);
            return -1;
        }
        if (got == 0) return 0;
        size_t idx = b->n_waiting;
        for (size_t i = 0; i < b->n_waiting; i++)
            if (b->waiting[i].ticket == r.ticket) idx = i;
        if (idx == b->n_waiting) { /* dropped when the run stopped */
            kv_mutation_result_clear(&r);
            continue;
        }
        kv_waiting w = b->waiting[idx];
        b->waiting[idx] = b->waiting[--b->n_waiting];
        int rc = handle(b, w.child, w.parent_source, w.origin, &r, out);
        free(w.parent_source);
        kv_mutation_result_clear(&r);
        return rc != 0 ? -1 : 1;
    }
    return 0;
}

/* ---- what the children taught ------------------------------------------------ */

int kv_breed_record(kv_breeder *b, kv_origin origin, kv_bandit_outcome outcome, double gain,
                    double cost_s)
{
    if (origin.arm == KV_NO_ARM || !b->ensemble || origin.arm >= kv_ensemble_size(b->ensemble))
        return 0;
    kv_ensemble_record(b->ensemble, origin.arm, outcome, gain, cost_s);
    size_t n = kv_ensemble_size(b->ensemble);
    double *shares = kv_calloc(n, sizeof *shares);
    kv_ensemble_shares(b->ensemble, shares);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        kv_bandit_stats st;
        kv_ensemble_stats(b->ensemble, i, &st);
        kv_mutator_stat row = {kv_ensemble_arm(b->ensemble, i),
                               st.draws,
                               st.successes,
                               st.failures,
                               st.reward_sum,
                               shares[i]};
        rc = kv_store_put_mutator_stat(b->store, &row);
    }
    free(shares);
    return rc;
}
