/* The record of a language-model call (see trace.h). */
#include "llm/trace.h"
#include "util/buf.h"

#include <stdlib.h>

kv_llm_trace *kv_llm_trace_new(const kv_llm_result *res, int64_t iteration, char *system_prompt,
                               char *user_prompt, char *reply)
{
    kv_llm_trace *t = kv_calloc(1, sizeof *t);
    t->iteration = iteration;
    t->model = kv_strdup(res->model);
    t->endpoint = kv_strdup(res->endpoint);
    t->system_prompt = system_prompt;
    t->user_prompt = user_prompt;
    t->reply = reply;
    t->error = kv_strdup(res->error ? res->error : res->errors);
    t->prompt_tokens = res->prompt_tokens;
    t->completion_tokens = res->completion_tokens;
    t->http_status = res->http_status;
    t->cost_usd = res->cost_usd;
    t->latency_s = res->latency_s;
    t->attempts = res->attempts;
    t->fault = res->fault;
    return t;
}

void kv_llm_trace_free(kv_llm_trace *t)
{
    if (!t) return;
    free(t->model);
    free(t->endpoint);
    free(t->system_prompt);
    free(t->user_prompt);
    free(t->reply);
    free(t->error);
    free(t);
}
