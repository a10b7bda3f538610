/* The record of one language-model call, kept from the moment its reply
 * comes until the child it made (or the failure it was) is stored: the
 * llm_calls row links the call to that child. */
#ifndef KV_LLM_TRACE_H
#define KV_LLM_TRACE_H

#include "llm/client.h"

#include <stdint.h>

/* All strings owned; prompts and reply are redacted by whoever made them. */
typedef struct kv_llm_trace {
    int64_t iteration;
    char *model, *endpoint, *system_prompt, *user_prompt, *reply, *error;
    long prompt_tokens, completion_tokens, http_status;
    double cost_usd, latency_s;
    int attempts;
    kv_llm_fault fault;
} kv_llm_trace;

/* A trace of RES for ITERATION, taking SYSTEM_PROMPT, USER_PROMPT and REPLY
 * (each may be NULL; already redacted). The error is RES's final error, else
 * the faults it survived (one per line). Never returns NULL. */
kv_llm_trace *kv_llm_trace_new(const kv_llm_result *res, int64_t iteration, char *system_prompt,
                               char *user_prompt, char *reply);
void kv_llm_trace_free(kv_llm_trace *t);

#endif
