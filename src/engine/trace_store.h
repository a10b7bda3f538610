/* A model call into the store: one llm_calls row from an LLM trace, with
 * its prompts and reply when database.log_prompts keeps them (else usage
 * and outcome only). The controller stores the calls behind its children
 * and their grades, the breeder the calls that made no child. */
#ifndef KV_ENGINE_TRACE_STORE_H
#define KV_ENGINE_TRACE_STORE_H

#include "llm/trace.h"
#include "store/store.h"

#include <stdint.h>

/* Stores T (not taken; nothing when NULL) linked to PROGRAM_ID (0: none)
 * with OUTCOME; KEEP_PROMPTS: with its prompts and reply. Returns 0 or -1
 * (the store's error). */
int kv_trace_store(kv_store *store, int keep_prompts, const kv_llm_trace *t, int64_t program_id,
                   const char *outcome);

#endif
