/* Internal to src/llm: the JSON body of a chat-completions request, the
 * parsing of a reply, and the redaction of keys from server messages. */
#ifndef KV_LLM_REQUEST_H
#define KV_LLM_REQUEST_H

#include "llm/client.h"

/* The request body for a model with settings S and the given messages.
 * Reasoning models get max_completion_tokens and neither temperature nor
 * top_p. Returns malloc'd JSON text. */
char *kv_llm_build_body(const kv_llm_model_settings *s, const char *system, const char *user);

/* What a reply said. Strings are malloc'd (free with kv_llm_reply_clear). */
typedef struct kv_llm_reply {
    char *content;        /* the first choice's message content, or NULL */
    char *response_model; /* "model", or NULL */
    long prompt_tokens;   /* -1 when usage is absent */
    long completion_tokens;
} kv_llm_reply;

/* Parses a 2xx body. Returns 0 with OUT filled when it holds a non-empty
 * message, else -1 with a malloc'd reason in *why ("invalid JSON reply
 * (truncated?)", "reply has no choices", ...); usage is filled whenever the
 * body is JSON. */
int kv_llm_parse_reply(const char *body, size_t len, kv_llm_reply *out, char **why);
void kv_llm_reply_clear(kv_llm_reply *r);

/* The error message of an error reply BODY ("error": {"message": ...}), else
 * the start of the body, at most MAX chars, with KEY (may be NULL) and
 * anything shaped like a key or bearer token replaced by "***". Malloc'd. */
char *kv_llm_error_excerpt(const char *body, size_t len, const char *key, size_t max);
/* Copy of TEXT with KEY (if non-empty) and key-shaped tokens (sk-..., Bearer
 * ...) replaced by "***". Malloc'd. */
char *kv_llm_redact(const char *text, const char *key);

#endif
