/* The language-model mutator, an entry of the registry: a prompt built from
 * the parent's evidence (prompt.c) goes to the model of the drawn arm
 * through the asynchronous client; each reply becomes a child (diff.c), or
 * a rejection whose reason reaches the next prompt on the lineage. A call
 * that failed says whether the iteration is spent (the request was
 * refused), may be asked again (a fault that may heal), or whether the run
 * must stop (a fault that will not heal: authentication, permission, an
 * unknown model, a host that cannot be reached). */
#include "llm/trace.h"
#include "mutate/diff.h"
#include "mutate/prompt.h"
#include "mutate/registry.h"
#include "util/buf.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* A request in flight. */
typedef struct waiting {
    int64_t ticket;
    size_t arm;
    char *model;                       /* the entry's name */
    char *parent_source;               /* the reply is applied to this text */
    char *system_prompt, *user_prompt; /* redacted, for the store */
} waiting;

typedef struct llm_state {
    const kv_config *cfg;
    uint64_t seed;
    kv_llm_client *llm;
    const kv_prompt_templates *templates;
    waiting *w;
    size_t n, cap;
} llm_state;

static void waiting_clear(waiting *w)
{
    free(w->model);
    free(w->parent_source);
    free(w->system_prompt);
    free(w->user_prompt);
}

static int llm_init(const kv_mutator_env *env, void **state, char **err)
{
    (void)err;
    llm_state *s = kv_calloc(1, sizeof *s);
    s->cfg = env->cfg;
    s->seed = env->seed;
    s->llm = env->llm;
    s->templates = env->templates;
    *state = s;
    return 0;
}

static void llm_free(void *state)
{
    llm_state *s = state;
    if (!s) return;
    for (size_t i = 0; i < s->n; i++)
        waiting_clear(&s->w[i]);
    free(s->w);
    free(s);
}

static size_t llm_pending(const void *state)
{
    return ((const llm_state *)state)->n;
}

static int llm_start(void *state, const kv_mutation_request *req, kv_mutation_result *out,
                     char **err)
{
    llm_state *s = state;
    const kv_config *cfg = s->cfg;
    const char *name = req->model && req->model->name ? req->model->name : "?";
    if (kv_llm_budget_exhausted(s->llm)) {
        /* Nothing is asked: the iteration stays for a later run (the
         * controller stops on the spent budget). */
        out->status = KV_MUTATION_RETRY;
        out->reason = kv_strdup("the LLM budget (llm.max_budget_usd) is spent");
        out->reason_code = "budget";
        out->mutator = kv_asprintf("llm:%s", name);
        return 0;
    }
    kv_prompt_inputs in = {
        .parent = req->parent,
        .top = req->top,
        .n_top = req->n_top,
        .inspirations = req->inspirations,
        .n_inspirations = req->n_inspirations,
        .attempts = req->attempts,
        .n_attempts = req->n_attempts,
        .diff_mode = cfg->diff_based_evolution,
        .language = cfg->language,
        /* template stochasticity: the iteration's own draw of the variations */
        .variation_seed = s->seed ^ 0x9e3779b97f4a7c15ULL ^ (uint64_t)req->ticket,
    };
    kv_prompt prompt = {0};
    char *why = NULL;
    if (kv_prompt_build(s->templates, &cfg->prompt, &in, &prompt, &why) != 0) {
        *err = kv_asprintf("cannot build the prompt for iteration %lld: %s", (long long)req->ticket,
                           why ? why : "unknown error");
        free(why);
        kv_prompt_free(&prompt);
        return -1;
    }
    kv_llm_request lr = {req->model, prompt.system, prompt.user, (uint64_t)req->ticket};
    if (kv_llm_submit(s->llm, &lr, &why) != 0) {
        int spent = kv_llm_budget_exhausted(s->llm);
        kv_prompt_free(&prompt);
        if (!spent) {
            *err = kv_asprintf("cannot send a request to %s: %s", name, why ? why : "?");
            free(why);
            return -1;
        }
        free(why);
        out->status = KV_MUTATION_RETRY;
        out->reason = kv_strdup("the LLM budget (llm.max_budget_usd) is spent");
        out->reason_code = "budget";
        out->mutator = kv_asprintf("llm:%s", name);
        return 0;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->w = kv_realloc(s->w, s->cap * sizeof *s->w);
    }
    s->w[s->n++] = (waiting){
        .ticket = req->ticket,
        .arm = req->arm,
        .model = kv_strdup(name),
        .parent_source = kv_strdup(req->parent->source),
        .system_prompt = kv_prompt_redact(prompt.system),
        .user_prompt = kv_prompt_redact(prompt.user),
    };
    kv_prompt_free(&prompt);
    return 1;
}

/* What a failed call means for the iteration. */
static kv_mutation_status failed_call(kv_llm_fault fault, const char **code)
{
    switch (fault) {
    case KV_LLM_FAULT_FATAL:
        *code = "llm_fatal";
        return KV_MUTATION_FATAL;
    case KV_LLM_FAULT_REQUEST:
        *code = "llm_request_refused";
        return KV_MUTATION_FAILED;
    case KV_LLM_FAULT_BUDGET:
        *code = "budget";
        return KV_MUTATION_RETRY;
    default:
        *code = "llm_transient";
        return KV_MUTATION_RETRY;
    }
}

/* Turns the finished call RES of W into OUT. */
static void answer(llm_state *s, waiting *w, kv_llm_result *res, kv_mutation_result *out)
{
    out->ticket = w->ticket;
    out->arm = w->arm;
    out->mutator = kv_asprintf("llm:%s", w->model);
    out->trace = kv_llm_trace_new(res, w->ticket, w->system_prompt, w->user_prompt,
                                  res->content ? kv_prompt_redact(res->content) : NULL);
    w->system_prompt = w->user_prompt = NULL;
    if (!res->ok) {
        out->status = failed_call(res->fault, &out->reason_code);
        out->reason = kv_strdup(res->error ? res->error : "the model call failed");
        return;
    }
    kv_reply_options opt = {s->cfg->diff_based_evolution, s->cfg->language, s->cfg->max_code_length,
                            s->cfg->prompt.diff_summary_max_line_len,
                            s->cfg->prompt.diff_summary_max_lines};
    char *source = NULL, *summary = NULL, *reason = NULL;
    int verdict =
        kv_reply_to_child(w->parent_source, res->content, &opt, &source, &summary, &reason);
    if (verdict == 0) {
        out->status = KV_MUTATION_CHILD;
        out->source = source;
        out->summary = summary;
        free(reason);
        return;
    }
    free(source);
    free(summary);
    out->status = KV_MUTATION_REJECTED;
    out->reason_code = "unusable_reply";
    out->reason = reason ? reason : kv_strdup("the reply was unusable");
}

static int llm_poll(void *state, int timeout_ms, kv_mutation_result *out, char **err)
{
    llm_state *s = state;
    while (s->n) {
        kv_llm_result res;
        memset(&res, 0, sizeof res);
        char *why = NULL;
        /* The feedback's gradings share the client; they are not ours. */
        int got = kv_llm_poll_match(s->llm, timeout_ms, KV_LLM_TICKET_FEEDBACK, 0, &res, &why);
        if (got < 0) {
            *err = kv_asprintf("the LLM client failed: %s", why ? why : "unknown error");
            free(why);
            return -1;
        }
        if (got == 0) return 0;
        size_t i = 0;
        while (i < s->n && (uint64_t)s->w[i].ticket != res.ticket)
            i++;
        if (i == s->n) {
            kv_warn("reply for unknown request %llu ignored", (unsigned long long)res.ticket);
            kv_llm_result_free(&res);
            continue;
        }
        waiting w = s->w[i];
        s->w[i] = s->w[--s->n];
        answer(s, &w, &res, out);
        waiting_clear(&w);
        kv_llm_result_free(&res);
        return 1;
    }
    return 0;
}

const kv_mutator_def kv_mutator_llm_def = {
    .name = "llm",
    .needs = KV_MUTATOR_NEEDS_CONTEXT | KV_MUTATOR_NEEDS_LLM,
    .init = llm_init,
    .free = llm_free,
    .start = llm_start,
    .poll = llm_poll,
    .pending = llm_pending,
};
