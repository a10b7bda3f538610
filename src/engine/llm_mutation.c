/* The LLM mutator inside the controller: the ensemble that picks each
 * child's mutator, prompts built from the parent's evidence, requests sent
 * through the asynchronous client, and replies turned into children (or into
 * stored rejections that the next prompt on the lineage shows). */
#include "engine/controller.h"
#include "mutate/diff.h"
#include "util/buf.h"
#include "util/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Previous attempts on a lineage shown in a prompt. */
#define KV_LLM_ATTEMPTS_SHOWN 5

int kv_llm_mutation_init(kv_controller *c)
{
    const kv_llm_config *l = &c->cfg->llm;
    const kv_model_config *models = l->models;
    size_t n = l->n_models;
    if (n == 0) {
        /* No models configured: the built-in mutators alone. */
        static const struct {
            const char *name;
            double weight;
        } mix[] = {{"builtin:tune", 0.4}, {"builtin:gi", 0.4}, {"builtin:crossover", 0.2}};
        c->default_models = kv_calloc(3, sizeof *c->default_models);
        for (size_t i = 0; i < 3; i++) {
            kv_config_model_init(&c->default_models[i]);
            c->default_models[i].name = kv_strdup(mix[i].name);
            c->default_models[i].weight = mix[i].weight;
        }
        models = c->default_models;
        n = 3;
    }
    char *err = NULL;
    c->ensemble = kv_ensemble_new(models, n, l->fallback_after, &err);
    if (!c->ensemble) {
        kv_error("llm.models: %s", err ? err : "invalid");
        free(err);
        return -1;
    }
    int feedback = c->cfg->evaluator.use_llm_feedback;
    if (feedback && l->n_evaluator_models == 0) {
        kv_error("evaluator.use_llm_feedback needs models to grade with: list them in "
                 "llm.evaluator_models");
        return -1;
    }
    if (!kv_ensemble_has_llm(c->ensemble) && !feedback) return 0;
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
    return 0;
}

static void pending_clear(kv_llm_waiting *p)
{
    kv_llm_trace_free(p->origin);
    kv_program_free(p->child);
    free(p->parent_source);
    free(p->system_prompt);
    free(p->user_prompt);
}

void kv_llm_mutation_free(kv_controller *c)
{
    for (size_t i = 0; i < c->n_llm_pending; i++)
        pending_clear(&c->llm_pending[i]);
    free(c->llm_pending);
    c->llm_pending = NULL;
    c->n_llm_pending = 0;
    if (c->llm) kv_llm_client_free(c->llm);
    c->llm = NULL;
    kv_prompt_templates_free(c->templates);
    c->templates = NULL;
    kv_ensemble_free(c->ensemble);
    c->ensemble = NULL;
    if (c->default_models) {
        for (size_t i = 0; i < 3; i++)
            free(c->default_models[i].name);
        free(c->default_models);
        c->default_models = NULL;
    }
}

/* The ensemble's list (llm.models, or the built-in default mix). */
static const kv_model_config *model_at(const kv_controller *c, size_t index)
{
    return c->default_models ? &c->default_models[index] : &c->cfg->llm.models[index];
}

int kv_llm_mutation_start(kv_controller *c, const kv_selection *sel, kv_program *child,
                          size_t index)
{
    if (kv_llm_budget_exhausted(c->llm)) {
        kv_program_free(child);
        return 1;
    }
    const kv_model_config *model = model_at(c, index);
    const kv_config *cfg = c->cfg;
    size_t n_top = cfg->prompt.num_top_programs > 0 ? (size_t)cfg->prompt.num_top_programs : 0;
    const kv_program **top = kv_calloc(n_top ? n_top : 1, sizeof *top);
    size_t got_top = 0;
    for (size_t r = 0; got_top < n_top; r++) {
        const kv_program *p = kv_database_island_program(c->db, sel->island, r);
        if (!p) break;
        if (p != sel->parent) top[got_top++] = p;
    }
    kv_program **attempts = NULL;
    int n_attempts =
        kv_store_recent_children(c->store, sel->parent->id, KV_LLM_ATTEMPTS_SHOWN, &attempts);
    if (n_attempts < 0) n_attempts = 0; /* the prompt goes without them */
    kv_prompt_inputs in = {
        .parent = sel->parent,
        .top = top,
        .n_top = got_top,
        .inspirations = sel->inspirations,
        .n_inspirations = sel->n_inspirations,
        .attempts = (const kv_program *const *)attempts,
        .n_attempts = (size_t)n_attempts,
        .diff_mode = cfg->diff_based_evolution,
        .language = cfg->language,
        .variation_seed = c->seed ^ 0x9e3779b97f4a7c15ULL ^ (uint64_t)child->iteration,
    };
    kv_prompt prompt = {0};
    char *err = NULL;
    int rc = kv_prompt_build(c->templates, &cfg->prompt, &in, &prompt, &err);
    free(top);
    for (int i = 0; i < n_attempts; i++)
        kv_program_free(attempts[i]);
    free(attempts);
    if (rc != 0) {
        kv_error("cannot build the prompt for iteration %lld: %s", (long long)child->iteration,
                 err ? err : "unknown error");
        free(err);
        kv_prompt_free(&prompt);
        kv_program_free(child);
        return -1;
    }
    kv_llm_request req = {model, prompt.system, prompt.user, (uint64_t)child->iteration};
    if (kv_llm_submit(c->llm, &req, &err) != 0) {
        int spent = kv_llm_budget_exhausted(c->llm);
        if (!spent) kv_error("cannot send a request to %s: %s", model->name, err ? err : "?");
        free(err);
        kv_prompt_free(&prompt);
        kv_program_free(child);
        return spent ? 1 : -1;
    }
    child->mutator = kv_asprintf("llm:%s", model->name);
    if (c->n_llm_pending == c->cap_llm_pending) {
        c->cap_llm_pending = c->cap_llm_pending ? c->cap_llm_pending * 2 : 8;
        c->llm_pending = kv_realloc(c->llm_pending, c->cap_llm_pending * sizeof *c->llm_pending);
    }
    c->llm_pending[c->n_llm_pending++] = (kv_llm_waiting){
        .ticket = child->iteration,
        .child = child,
        .parent_source = kv_strdup(sel->parent->source),
        .model_index = index,
        .system_prompt = kv_prompt_redact(prompt.system),
        .user_prompt = kv_prompt_redact(prompt.user),
    };
    kv_prompt_free(&prompt);
    return 0;
}

/* A trace of RES for the store; takes the pending call's prompts. */
static kv_llm_trace *trace_of(kv_llm_waiting *p, kv_llm_result *res)
{
    kv_llm_trace *t = kv_calloc(1, sizeof *t);
    t->iteration = p->ticket;
    t->model = kv_strdup(res->model);
    t->endpoint = kv_strdup(res->endpoint);
    t->system_prompt = p->system_prompt;
    t->user_prompt = p->user_prompt;
    p->system_prompt = p->user_prompt = NULL;
    t->reply = res->content ? kv_prompt_redact(res->content) : NULL;
    /* The final error, else the faults survived on the way (one per line). */
    t->error = kv_strdup(res->error ? res->error : res->errors);
    t->prompt_tokens = res->prompt_tokens;
    t->completion_tokens = res->completion_tokens;
    t->http_status = res->http_status;
    t->cost_usd = res->cost_usd;
    t->latency_s = res->latency_s;
    t->attempts = res->attempts;
    return t;
}

/* Bit set in the tickets of grading calls (mutation calls use the iteration). */
#define KV_FEEDBACK_TICKET (1ULL << 62)

int kv_llm_feedback_start(kv_controller *c, kv_program *child, kv_llm_trace *trace)
{
    const kv_llm_config *l = &c->cfg->llm;
    kv_rng rng;
    kv_rng_seed(&rng, c->seed ^ 0x5bd1e995ULL ^ (uint64_t)child->iteration);
    double *w = kv_calloc(l->n_evaluator_models, sizeof *w);
    for (size_t i = 0; i < l->n_evaluator_models; i++)
        w[i] = l->evaluator_models[i].weight;
    const kv_model_config *model =
        &l->evaluator_models[kv_rng_weighted(&rng, w, l->n_evaluator_models)];
    free(w);
    const char *system = c->cfg->prompt.evaluator_system_message;
    if (!system || !*system)
        system = kv_prompt_template_get(c->templates, "evaluator_system_message");
    const char *tmpl = kv_prompt_template_get(c->templates, "evaluation");
    const char *keys[] = {"language", "current_program"};
    const char *vals[] = {c->cfg->language ? c->cfg->language : "text", child->source};
    char *user = kv_prompt_render(tmpl ? tmpl : "{current_program}", keys, vals, 2);
    kv_llm_request req = {model, system, user, (uint64_t)child->iteration | KV_FEEDBACK_TICKET};
    char *err = NULL;
    if (kv_llm_submit(c->llm, &req, &err) != 0) {
        /* No grade to be had (the budget is spent): the child goes in as evaluated. */
        kv_warn("iteration %lld: no LLM feedback: %s", (long long)child->iteration,
                err ? err : "submit failed");
        json_object_set_new(child->artifacts ? child->artifacts
                                             : (child->artifacts = json_object()),
                            "llm_feedback_error", json_string(err ? err : "submit failed"));
        free(err);
        free(user);
        return kv_controller_commit_child(c, child, trace, NULL);
    }
    if (c->n_llm_pending == c->cap_llm_pending) {
        c->cap_llm_pending = c->cap_llm_pending ? c->cap_llm_pending * 2 : 8;
        c->llm_pending = kv_realloc(c->llm_pending, c->cap_llm_pending * sizeof *c->llm_pending);
    }
    c->llm_pending[c->n_llm_pending++] = (kv_llm_waiting){
        .ticket = (int64_t)((uint64_t)child->iteration | KV_FEEDBACK_TICKET),
        .child = child,
        .feedback = 1,
        .origin = trace,
        .system_prompt = kv_prompt_redact(system ? system : ""),
        .user_prompt = kv_prompt_redact(user),
    };
    free(user);
    return 0;
}

/* The grades in REPLY: the numbers of its first JSON object, each clamped
 * to [0, 1]. Returns a new object (empty when none). */
static json_t *parse_grades(const char *reply)
{
    json_t *grades = json_object();
    const char *open = reply ? strchr(reply, '{') : NULL;
    const char *close = reply ? strrchr(reply, '}') : NULL;
    if (!open || !close || close < open) return grades;
    json_error_t e;
    json_t *obj = json_loadb(open, (size_t)(close - open + 1), 0, &e);
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        if (!json_is_number(v)) continue;
        double x = json_number_value(v);
        if (!isfinite(x)) continue;
        json_object_set_new(grades, key, json_real(x < 0 ? 0 : x > 1 ? 1 : x));
    }
    json_decref(obj);
    return grades;
}

/* Merges a grading reply into its child's metrics and commits the child:
 * llm_<criterion> for each grade, llm_feedback their mean, and
 * combined_score blended as (1 - w) * score + w * llm_feedback with w =
 * evaluator.llm_feedback_weight (the score before is kept). */
static int finish_feedback(kv_controller *c, kv_llm_waiting *p, kv_llm_result *res,
                           kv_llm_trace *trace)
{
    kv_program *child = p->child;
    kv_llm_trace *origin = p->origin;
    p->child = NULL;
    p->origin = NULL;
    json_t *grades = res->ok ? parse_grades(res->content) : json_object();
    if (!child->metrics) child->metrics = json_object();
    if (json_object_size(grades) == 0) {
        if (!child->artifacts) child->artifacts = json_object();
        json_object_set_new(child->artifacts, "llm_feedback_error",
                            json_string(res->ok ? "the grading reply held no numeric grades"
                                                : (res->error ? res->error : "call failed")));
    } else {
        double sum = 0;
        const char *key;
        json_t *v;
        json_object_foreach(grades, key, v)
        {
            char *name = kv_asprintf("llm_%s", key);
            json_object_set(child->metrics, name, v);
            free(name);
            sum += json_number_value(v);
        }
        double mean = sum / (double)json_object_size(grades);
        json_object_set_new(child->metrics, "llm_feedback", json_real(mean));
        json_t *score = json_object_get(child->metrics, "combined_score");
        if (json_is_number(score)) {
            double w = c->cfg->evaluator.llm_feedback_weight;
            double before = json_number_value(score);
            json_object_set_new(child->metrics, "combined_score_before_feedback",
                                json_real(before));
            json_object_set_new(child->metrics, "combined_score",
                                json_real((1 - w) * before + w * mean));
        }
    }
    json_decref(grades);
    pending_clear(p);
    return kv_controller_commit_child(c, child, origin, trace);
}

/* Turns one finished call into a child, a stored rejection, or a stored
 * failed call. Returns 0 or -1. */
static int handle_result(kv_controller *c, kv_llm_result *res)
{
    size_t idx = c->n_llm_pending;
    for (size_t i = 0; i < c->n_llm_pending; i++)
        if ((uint64_t)c->llm_pending[i].ticket == res->ticket) idx = i;
    if (idx == c->n_llm_pending) {
        kv_warn("reply for unknown request %llu ignored", (unsigned long long)res->ticket);
        return 0;
    }
    kv_llm_waiting p = c->llm_pending[idx];
    c->llm_pending[idx] = c->llm_pending[--c->n_llm_pending];
    kv_llm_trace *trace = trace_of(&p, res);
    if (p.feedback) return finish_feedback(c, &p, res, trace);
    kv_ensemble_report(c->ensemble, p.model_index, res->ok);
    int rc = 0;
    if (!res->ok) {
        /* No child: the call is kept with its error, the iteration yields nothing. */
        kv_warn("iteration %lld: %s", (long long)p.ticket, res->error ? res->error : "LLM failed");
        char *outcome = kv_asprintf("error: %s", res->error ? res->error : "unknown");
        rc = kv_controller_store_trace(c, trace, 0, outcome);
        free(outcome);
        kv_llm_trace_free(trace);
        pending_clear(&p);
        return rc;
    }
    kv_reply_options opt = {c->cfg->diff_based_evolution, c->cfg->language, c->cfg->max_code_length,
                            c->cfg->prompt.diff_summary_max_line_len,
                            c->cfg->prompt.diff_summary_max_lines};
    char *source = NULL, *summary = NULL, *reason = NULL;
    int verdict =
        kv_reply_to_child(p.parent_source, res->content, &opt, &source, &summary, &reason);
    kv_program *child = p.child;
    p.child = NULL;
    if (verdict == 0) {
        kv_program_set_source(child, source);
        child->change_summary = summary;
        summary = NULL;
        rc = kv_controller_offer_child(c, child, p.parent_source, trace);
    } else {
        /* The parent's text stands in for the child that could not be made;
         * the reason reaches the next prompt on this lineage. */
        kv_program_set_source(child, p.parent_source);
        rc = kv_controller_store_rejected(c, child, "unusable_reply",
                                          reason ? reason : kv_strdup("the reply was unusable"),
                                          trace);
        reason = NULL;
        kv_program_free(child);
    }
    free(source);
    free(summary);
    free(reason);
    pending_clear(&p);
    return rc;
}

int kv_llm_mutation_poll(kv_controller *c, int timeout_ms)
{
    int handled = 0;
    while (c->n_llm_pending) {
        kv_llm_result res;
        memset(&res, 0, sizeof res);
        char *err = NULL;
        int got = kv_llm_poll(c->llm, handled ? 0 : timeout_ms, &res, &err);
        if (got < 0) {
            kv_error("the LLM client failed: %s", err ? err : "unknown error");
            free(err);
            return -1;
        }
        if (got == 0) break;
        int rc = handle_result(c, &res);
        kv_llm_result_free(&res);
        if (rc != 0) return -1;
        handled++;
    }
    return handled;
}
