/* LLM feedback (see llm_feedback.h): the grades (readability,
 * maintainability, efficiency, correctness, 0 to 1) become llm_<criterion>
 * metrics, their mean llm_feedback, and blend into combined_score before
 * the child is committed. The gradings share the LLM client with the LLM
 * mutator; their tickets carry KV_LLM_TICKET_FEEDBACK. */
#include "engine/llm_feedback.h"
#include "util/rng.h"
#include "util/buf.h"
#include "util/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void grading_clear(kv_grading *g)
{
    kv_llm_trace_free(g->origin_trace);
    kv_program_free(g->child);
    free(g->system_prompt);
    free(g->user_prompt);
}

void kv_feedback_init(kv_feedback *f, const kv_config *cfg, kv_llm_client *llm,
                      const kv_prompt_templates *templates, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    f->cfg = cfg;
    f->llm = llm;
    f->templates = templates;
    f->seed = seed;
}

void kv_feedback_free(kv_feedback *f)
{
    for (size_t i = 0; i < f->n_gradings; i++)
        grading_clear(&f->gradings[i]);
    free(f->gradings);
    f->gradings = NULL;
    f->n_gradings = f->cap_gradings = 0;
}

int kv_feedback_start(kv_feedback *c, kv_program *child, kv_llm_trace *trace, kv_origin origin,
                      kv_graded *now)
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
    kv_llm_request req = {model, system, user, (uint64_t)child->iteration | KV_LLM_TICKET_FEEDBACK};
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
        *now = (kv_graded){child, trace, NULL, origin};
        return 1;
    }
    if (c->n_gradings == c->cap_gradings) {
        c->cap_gradings = c->cap_gradings ? c->cap_gradings * 2 : 8;
        c->gradings = kv_realloc(c->gradings, c->cap_gradings * sizeof *c->gradings);
    }
    c->gradings[c->n_gradings++] = (kv_grading){
        .ticket = (int64_t)((uint64_t)child->iteration | KV_LLM_TICKET_FEEDBACK),
        .child = child,
        .origin_trace = trace,
        .origin = origin,
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

/* Merges a grading reply into its child's metrics, the child into *DONE:
 * llm_<criterion> for each grade, llm_feedback their mean, and
 * combined_score blended as (1 - w) * score + w * llm_feedback with w =
 * evaluator.llm_feedback_weight (the score before is kept). */
static void finish_feedback(kv_feedback *c, kv_grading *p, kv_llm_result *res, kv_llm_trace *trace,
                            kv_graded *done)
{
    kv_program *child = p->child;
    kv_llm_trace *origin = p->origin_trace;
    kv_origin from = p->origin;
    p->child = NULL;
    p->origin_trace = NULL;
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
    grading_clear(p);
    *done = (kv_graded){child, origin, trace, from};
}

int kv_feedback_next(kv_feedback *c, int timeout_ms, kv_graded *done)
{
    for (int wait = timeout_ms; c->n_gradings; wait = 0) {
        kv_llm_result res;
        memset(&res, 0, sizeof res);
        char *err = NULL;
        int got = kv_llm_poll_match(c->llm, wait, KV_LLM_TICKET_FEEDBACK, KV_LLM_TICKET_FEEDBACK,
                                    &res, &err);
        if (got < 0) {
            kv_error("the LLM client failed: %s", err ? err : "unknown error");
            free(err);
            return -1;
        }
        if (got == 0) break;
        size_t idx = c->n_gradings;
        for (size_t i = 0; i < c->n_gradings; i++)
            if ((uint64_t)c->gradings[i].ticket == res.ticket) idx = i;
        if (idx == c->n_gradings) {
            kv_warn("grade for unknown request %llu ignored", (unsigned long long)res.ticket);
            kv_llm_result_free(&res);
            continue;
        }
        kv_grading g = c->gradings[idx];
        c->gradings[idx] = c->gradings[--c->n_gradings];
        kv_llm_trace *trace =
            kv_llm_trace_new(&res, g.child->iteration, g.system_prompt, g.user_prompt,
                             res.content ? kv_prompt_redact(res.content) : NULL);
        g.system_prompt = g.user_prompt = NULL;
        finish_feedback(c, &g, &res, trace, done);
        kv_llm_result_free(&res);
        return 1;
    }
    return 0;
}
