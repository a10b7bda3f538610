/* OpenAI-compatible chat-completions client, asynchronous, on libcurl multi.
 *
 * The controller submits requests (a model entry, a system and a user
 * message, and a ticket of its own) and polls for finished results from its
 * own loop; up to llm.max_concurrency requests are in flight at once, the
 * rest wait in a queue. Each request is retried with exponential backoff and
 * seeded jitter after transport errors, timeouts, HTTP 408/429/5xx, and
 * replies that are not usable (invalid or truncated JSON, no choices, no
 * content); Retry-After (seconds) is honoured on 429 and 503, capped. HTTP
 * 400/401/403/404 (and other 4xx) are final at once. A failed result says
 * what kind of fault ended it (kv_llm_fault): a run stops on a fault that
 * will not heal, and asks again after one that may.
 *
 * API keys go only into the Authorization header: they are never logged and
 * never appear in an error message (a server echoing the key back is
 * redacted). Usage and cost are accounted per call against llm.max_budget_usd.
 *
 * Not thread-safe: one thread drives a client (kv_llm_wakeup excepted). */
#ifndef KV_LLM_CLIENT_H
#define KV_LLM_CLIENT_H

#include "config/config.h"

#include <stdint.h>

typedef struct kv_llm_client kv_llm_client;

/* Tickets with this bit set are the LLM feedback's gradings, the others the
 * LLM mutator's requests (their iteration): each polls for its own. */
#define KV_LLM_TICKET_FEEDBACK (1ULL << 62)

/* One request. The client copies everything it needs at submit time: MODEL,
 * SYSTEM and USER need not outlive kv_llm_submit. */
typedef struct kv_llm_request {
    const kv_model_config *model; /* unset fields inherit from the client's kv_llm_config */
    const char *system;           /* may be NULL or "": then no system message */
    const char *user;
    uint64_t ticket; /* the caller's id, handed back in the result */
} kv_llm_request;

/* What kind of fault ended a request that failed: whether asking again can
 * help. */
typedef enum kv_llm_fault {
    KV_LLM_FAULT_NONE = 0,  /* no fault (ok) */
    KV_LLM_FAULT_TRANSIENT, /* timeouts, dropped connections, 408, 429, 5xx, unusable replies:
                               still failing after the request's own retries, but may heal */
    KV_LLM_FAULT_REQUEST,   /* this request was refused (400, 413, 422, ...): another
                               prompt may pass */
    KV_LLM_FAULT_FATAL,     /* will not heal by retrying: 401, 402, 403, 404 (unknown
                               model), 405, a host that cannot be reached after the
                               retries, a malformed URL, a refused certificate */
    KV_LLM_FAULT_BUDGET,    /* llm.max_budget_usd is spent: never sent */
} kv_llm_fault;

/* "none", "transient", "request", "fatal", "budget". */
const char *kv_llm_fault_name(kv_llm_fault f);

/* A finished request, successful or not. Free its members with
 * kv_llm_result_free. */
typedef struct kv_llm_result {
    uint64_t ticket;
    int ok;               /* 1: content holds the reply; 0: error says why */
    kv_llm_fault fault;   /* KV_LLM_FAULT_NONE when ok */
    char *content;        /* the assistant message (NULL unless ok) */
    char *model;          /* the model entry's name */
    char *response_model; /* "model" as the server reported it (may be NULL) */
    char *endpoint;       /* the URL called */
    long prompt_tokens;   /* summed over attempts that reported usage */
    long completion_tokens;
    double latency_s; /* from submit to completion, waits between retries included */
    double cost_usd;  /* from usage and the model's prices; 0 when prices are unknown */
    long http_status; /* of the last attempt; 0 when no HTTP reply came */
    char *error;      /* final error (NULL when ok): names the model and the endpoint */
    int attempts;     /* HTTP attempts made (0 when the budget ran out before the first) */
    int n_errors;     /* attempts that failed (faults seen), retried or final */
    char *errors;     /* one line per failed attempt ("attempt 1: HTTP 429 ..."), or NULL */
} kv_llm_result;

/* Effective settings of a model entry after inheritance from the llm section. */
typedef struct kv_llm_model_settings {
    const char *name;
    const char *api_base; /* never NULL */
    const char *api_key;  /* entry's, else section's, else NULL (then $OPENAI_API_KEY) */
    double temperature;
    double top_p;
    int max_tokens;
    double timeout;
    int retries;
    double retry_delay;
    int reasoning;                /* 1: send max_completion_tokens and no temperature or top_p */
    const char *reasoning_effort; /* entry's, else section's; NULL: not sent */
    int has_seed;                 /* 1: send "seed" */
    int64_t seed;
} kv_llm_model_settings;

/* Creates a client for the llm section LLM (copied: LLM need not outlive the
 * client). SEED seeds the retry jitter. Returns NULL with a malloc'd message
 * in *err when libcurl cannot be set up. */
kv_llm_client *kv_llm_client_new(const kv_llm_config *llm, uint64_t seed, char **err);
/* Aborts every transfer still in flight (their results are dropped). */
void kv_llm_client_free(kv_llm_client *c);

/* Caps a server's Retry-After (seconds; default 60) and the backoff delay
 * (default 120 s). */
void kv_llm_client_set_retry_caps(kv_llm_client *c, double max_retry_after_s, double max_backoff_s);

/* Queues REQ. Returns 0, or -1 with a malloc'd message in *err (budget
 * exhausted, no user message, no model). */
int kv_llm_submit(kv_llm_client *c, const kv_llm_request *req, char **err);

/* Drives transfers for at most TIMEOUT_MS (0: do what is ready and return).
 * Returns 1 with *out filled when a request finished (the caller owns *out's
 * members), 0 when none finished in time or nothing is pending (it returns
 * at once then), -1 on an internal libcurl error (message in *err). */
int kv_llm_poll(kv_llm_client *c, int timeout_ms, kv_llm_result *out, char **err);
/* kv_llm_poll for the requests whose ticket & MASK equals WANT only (the
 * others stay for another caller): two users of one client (the LLM
 * mutator, the LLM feedback) each take their own results. Returns at once
 * with 0 when no such request is pending. */
int kv_llm_poll_match(kv_llm_client *c, int timeout_ms, uint64_t mask, uint64_t want,
                      kv_llm_result *out, char **err);

/* Requests submitted and not yet handed back by kv_llm_poll. */
int kv_llm_pending(const kv_llm_client *c);
/* Milliseconds until the client needs kv_llm_poll again (-1: nothing pending). */
long kv_llm_next_timeout_ms(kv_llm_client *c);
/* Makes a blocking kv_llm_poll return early; safe from another thread. */
void kv_llm_wakeup(kv_llm_client *c);

/* Total cost so far (USD), and 1 when llm.max_budget_usd > 0 and it is spent. */
double kv_llm_spent_usd(const kv_llm_client *c);
int kv_llm_budget_exhausted(const kv_llm_client *c);

void kv_llm_result_free(kv_llm_result *r);

/* Settings of entry M after inheritance from LLM. Strings point into M/LLM. */
void kv_llm_model_resolve(const kv_llm_config *llm, const kv_model_config *m,
                          kv_llm_model_settings *out);
/* 1 when NAME looks like a reasoning model (o1, o3, o4-, gpt-5, gpt-oss,
 * after an optional "provider/" prefix). */
int kv_llm_is_reasoning_name(const char *name);

#endif
