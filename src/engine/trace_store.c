/* A model call into the store (trace_store.h). */
#include "engine/trace_store.h"

int kv_trace_store(kv_store *store, int keep_prompts, const kv_llm_trace *t, int64_t program_id,
                   const char *outcome)
{
    if (!t) return 0;
    kv_llm_call_record r = {
        .iteration = t->iteration,
        .model = t->model,
        .endpoint = t->endpoint,
        .system_prompt = keep_prompts ? t->system_prompt : NULL,
        .user_prompt = keep_prompts ? t->user_prompt : NULL,
        .reply = keep_prompts ? t->reply : NULL,
        .prompt_tokens = t->prompt_tokens,
        .completion_tokens = t->completion_tokens,
        .cost_usd = t->cost_usd,
        .latency_s = t->latency_s,
        .attempts = t->attempts,
        .http_status = t->http_status,
        .outcome = outcome,
        .error = t->error,
    };
    return kv_store_insert_llm_call(store, &r, program_id);
}
