/* The asynchronous chat-completions client: a queue of requests, a libcurl
 * multi handle with at most max_concurrency transfers, a list of requests
 * waiting out a retry delay, and a list of finished results that kv_llm_poll
 * hands back one at a time. See client.h for the contract. */
#include "llm/client.h"
#include "util/clock.h"
#include "llm/request.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/rng.h"

#include <curl/curl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define KV_LLM_MAX_REPLY (32u << 20) /* bytes kept of a reply before the transfer is failed */

typedef struct kv_llm_req {
    struct kv_llm_req *next;
    uint64_t ticket;
    char *model;
    char *url;
    char *key; /* for redaction only; NULL when no key is sent */
    char *auth_header;
    char *body;
    double timeout, retry_delay, price_in, price_out;
    int retries;
    double submitted_at, due;
    CURL *easy;
    struct curl_slist *headers;
    kv_buf reply;
    double retry_after; /* seconds from the last reply's Retry-After; -1: none */
    int attempts, n_errors;
    kv_buf errors;
    long prompt_tokens, completion_tokens, http_status;
    double cost;
    char *response_model;
    char *content;
    char *error;
    kv_llm_fault fault; /* of the final error */
} kv_llm_req;

typedef struct req_list {
    kv_llm_req *head, *tail;
} req_list;

struct kv_llm_client {
    CURLM *multi;
    kv_rng rng;
    char *api_base, *api_key, *reasoning_effort;
    kv_llm_config defaults; /* scalars of the llm section; strings point to the two above */
    int max_concurrency;
    double max_budget_usd, spent_usd;
    double max_retry_after_s, max_backoff_s;
    req_list queue, delayed, done;
    req_list running; /* transfers in flight (unordered) */
    int active, pending;
};

static void list_push(req_list *l, kv_llm_req *r)
{
    r->next = NULL;
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
}

static kv_llm_req *list_pop(req_list *l)
{
    kv_llm_req *r = l->head;
    if (r) {
        l->head = r->next;
        if (!l->head) l->tail = NULL;
        r->next = NULL;
    }
    return r;
}

/* Frees R, wiping the copies of the key first. */
static void req_free(kv_llm_req *r)
{
    if (!r) return;
    if (r->easy) curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->headers);
    if (r->key) memset(r->key, 0, strlen(r->key));
    if (r->auth_header) memset(r->auth_header, 0, strlen(r->auth_header));
    free(r->key);
    free(r->auth_header);
    free(r->model);
    free(r->url);
    free(r->body);
    kv_buf_free(&r->reply);
    kv_buf_free(&r->errors);
    free(r->response_model);
    free(r->content);
    free(r->error);
    free(r);
}

/* Unlinks R from L (it must be there). */
static void list_remove(req_list *l, kv_llm_req *r)
{
    kv_llm_req *prev = NULL;
    for (kv_llm_req *p = l->head; p; prev = p, p = p->next) {
        if (p != r) continue;
        if (prev)
            prev->next = p->next;
        else
            l->head = p->next;
        if (l->tail == p) l->tail = prev;
        p->next = NULL;
        return;
    }
}

static void list_free(req_list *l)
{
    kv_llm_req *r;
    while ((r = list_pop(l)))
        req_free(r);
}

kv_llm_client *kv_llm_client_new(const kv_llm_config *llm, uint64_t seed, char **err)
{
    static int curl_ready;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            *err = kv_strdup("libcurl: global initialisation failed");
            return NULL;
        }
        curl_ready = 1;
    }
    kv_llm_client *c = kv_calloc(1, sizeof *c);
    c->multi = curl_multi_init();
    if (!c->multi) {
        free(c);
        *err = kv_strdup("libcurl: cannot create a multi handle");
        return NULL;
    }
    kv_rng_seed(&c->rng, seed);
    c->api_base = kv_strdup(llm->api_base);
    c->api_key = kv_strdup(llm->api_key);
    c->defaults.api_base = c->api_base;
    c->defaults.api_key = c->api_key;
    c->defaults.temperature = llm->temperature;
    c->defaults.top_p = llm->top_p;
    c->defaults.max_tokens = llm->max_tokens;
    c->defaults.timeout = llm->timeout;
    c->defaults.retries = llm->retries;
    c->defaults.retry_delay = llm->retry_delay;
    c->reasoning_effort = kv_strdup(llm->reasoning_effort);
    c->defaults.reasoning_effort = c->reasoning_effort;
    c->defaults.random_seed = llm->random_seed;
    c->defaults.has_random_seed = llm->has_random_seed;
    c->max_concurrency = llm->max_concurrency > 0 ? llm->max_concurrency : 8;
    c->max_budget_usd = llm->max_budget_usd;
    c->max_retry_after_s = 60;
    c->max_backoff_s = 120;
    curl_multi_setopt(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)c->max_concurrency);
    return c;
}

void kv_llm_client_free(kv_llm_client *c)
{
    if (!c) return;
    for (kv_llm_req *r = c->running.head; r; r = r->next)
        curl_multi_remove_handle(c->multi, r->easy);
    list_free(&c->running);
    list_free(&c->queue);
    list_free(&c->delayed);
    list_free(&c->done);
    curl_multi_cleanup(c->multi);
    if (c->api_key) memset(c->api_key, 0, strlen(c->api_key));
    free(c->api_key);
    free(c->api_base);
    free(c->reasoning_effort);
    free(c);
}

void kv_llm_client_set_retry_caps(kv_llm_client *c, double max_retry_after_s, double max_backoff_s)
{
    c->max_retry_after_s = max_retry_after_s;
    c->max_backoff_s = max_backoff_s;
}

double kv_llm_spent_usd(const kv_llm_client *c)
{
    return c->spent_usd;
}

int kv_llm_budget_exhausted(const kv_llm_client *c)
{
    return c->max_budget_usd > 0 && c->spent_usd >= c->max_budget_usd;
}

int kv_llm_pending(const kv_llm_client *c)
{
    return c->pending;
}

void kv_llm_wakeup(kv_llm_client *c)
{
    curl_multi_wakeup(c->multi);
}

int kv_llm_submit(kv_llm_client *c, const kv_llm_request *req, char **err)
{
    if (!req->model || !req->model->name || !*req->model->name) {
        *err = kv_strdup("LLM request without a model name");
        return -1;
    }
    if (!req->user) {
        *err = kv_asprintf("LLM request for model '%s' without a user message", req->model->name);
        return -1;
    }
    if (kv_llm_budget_exhausted(c)) {
        *err = kv_asprintf("LLM budget exhausted: spent $%.4f of llm.max_budget_usd $%.4f",
                           c->spent_usd, c->max_budget_usd);
        return -1;
    }
    kv_llm_model_settings s;
    kv_llm_model_resolve(&c->defaults, req->model, &s);
    kv_llm_req *r = kv_calloc(1, sizeof *r);
    r->ticket = req->ticket;
    r->model = kv_strdup(s.name);
    size_t blen = strlen(s.api_base);
    while (blen > 0 && s.api_base[blen - 1] == '/')
        blen--;
    r->url = kv_asprintf("%.*s/chat/completions", (int)blen, s.api_base);
    const char *key = s.api_key ? s.api_key : getenv("OPENAI_API_KEY");
    if (key && *key) {
        r->key = kv_strdup(key);
        r->auth_header = kv_asprintf("Authorization: Bearer %s", key);
    }
    r->body = kv_llm_build_body(&s, req->system, req->user);
    r->timeout = s.timeout;
    r->retries = s.retries;
    r->retry_delay = s.retry_delay;
    r->price_in = req->model->price_input_per_mtok;
    r->price_out = req->model->price_output_per_mtok;
    r->submitted_at = kv_now_s();
    r->retry_after = -1;
    list_push(&c->queue, r);
    c->pending++;
    return 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    kv_llm_req *r = arg;
    size_t len = size * n;
    if (r->reply.len + len > KV_LLM_MAX_REPLY) return 0; /* fails the transfer */
    if (kv_buf_append(&r->reply, data, len) != 0) return 0;
    return len;
}

/* Reads Retry-After (the seconds form; an HTTP date is ignored). */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    kv_llm_req *r = arg;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > 5 && strncmp(data, "HTTP/", 5) == 0) r->retry_after = -1; /* a new response */
    if (len > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        char tmp[64];
        size_t m = len - (sizeof name - 1);
        if (m >= sizeof tmp) m = sizeof tmp - 1;
        memcpy(tmp, data + sizeof name - 1, m);
        tmp[m] = '\0';
        char *end;
        double v = strtod(tmp, &end);
        while (*end == ' ' || *end == '\r' || *end == '\n' || *end == '\t')
            end++;
        if (end != tmp && *end == '\0' && v >= 0 && isfinite(v)) r->retry_after = v;
    }
    return len;
}

/* Starts one attempt of R. Returns 0, or -1 with R->error set. */
static int start_attempt(kv_llm_client *c, kv_llm_req *r)
{
    kv_buf_clear(&r->reply);
    r->retry_after = -1;
    r->easy = curl_easy_init();
    if (!r->easy) {
        r->error =
            kv_asprintf("model '%s' at %s: libcurl: cannot create a handle", r->model, r->url);
        return -1;
    }
    curl_slist_free_all(r->headers);
    r->headers = curl_slist_append(NULL, "Content-Type: application/json");
    r->headers = curl_slist_append(r->headers, "Expect:");
    if (r->auth_header) r->headers = curl_slist_append(r->headers, r->auth_header);
    CURL *e = r->easy;
    long timeout_ms = (long)ceil(r->timeout * 1000.0);
    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_USERAGENT, "kevolve/" KV_VERSION);
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        r->easy = NULL;
        r->error =
            kv_asprintf("model '%s' at %s: libcurl: cannot add a transfer", r->model, r->url);
        return -1;
    }
    c->active++;
    list_push(&c->running, r);
    return 0;
}

/* Moves R to the done list; ERROR (taken) is its final error or NULL, of
 * kind FAULT. */
static void finish(kv_llm_client *c, kv_llm_req *r, char *error, kv_llm_fault fault)
{
    free(r->error);
    r->error = error;
    r->fault = error ? fault : KV_LLM_FAULT_NONE;
    list_push(&c->done, r);
}

/* 1 when curl error CODE is worth another attempt. */
static int curl_retriable(CURLcode code)
{
    switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
        return 0;
    default:
        return 1;
    }
}

/* What a final transport error CODE means for the run: a host that cannot
 * be reached (after the retries), a URL that cannot work or a certificate
 * that is refused will not heal by asking again; anything else (a timeout, a
 * dropped connection) may. */
static kv_llm_fault curl_fault(CURLcode code)
{
    switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
        return KV_LLM_FAULT_FATAL;
    default:
        return curl_retriable(code) ? KV_LLM_FAULT_TRANSIENT : KV_LLM_FAULT_FATAL;
    }
}

/* What a final HTTP STATUS means: 401 (authentication), 402 (payment), 403
 * (permission), 404 (unknown model or endpoint) and 405 (not an API) will
 * not heal; 408, 429 and 5xx are transient; any other 4xx refuses this
 * request (a prompt too long, say), not the model. */
static kv_llm_fault http_fault(long status)
{
    if (status == 408 || status == 429 || status >= 500) return KV_LLM_FAULT_TRANSIENT;
    if (status >= 401 && status <= 405) return KV_LLM_FAULT_FATAL;
    return KV_LLM_FAULT_REQUEST;
}

const char *kv_llm_fault_name(kv_llm_fault f)
{
    switch (f) {
    case KV_LLM_FAULT_NONE:
        return "none";
    case KV_LLM_FAULT_TRANSIENT:
        return "transient";
    case KV_LLM_FAULT_REQUEST:
        return "request";
    case KV_LLM_FAULT_FATAL:
        return "fatal";
    case KV_LLM_FAULT_BUDGET:
        return "budget";
    }
    return "unknown";
}

/* Handles the end of one attempt of R (its easy handle already removed). */
static void attempt_done(kv_llm_client *c, kv_llm_req *r, CURLcode code)
{
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(r->easy);
    r->easy = NULL;
    c->active--;
    r->attempts++;
    r->http_status = status;

    char *why = NULL;
    int retriable = 1;
    kv_llm_fault fault = KV_LLM_FAULT_TRANSIENT;
    if (code != CURLE_OK) {
        if (code == CURLE_OPERATION_TIMEDOUT)
            why = kv_asprintf("timed out after %.1f s", r->timeout);
        else
            why = kv_asprintf("connection error: %s", curl_easy_strerror(code));
        retriable = curl_retriable(code);
        fault = curl_fault(code);
    } else if (status >= 200 && status < 300) {
        kv_llm_reply rep;
        int rc = kv_llm_parse_reply(r->reply.data, r->reply.len, &rep, &why);
        if (rep.prompt_tokens > 0 || rep.completion_tokens > 0) {
            long pt = rep.prompt_tokens > 0 ? rep.prompt_tokens : 0;
            long ct = rep.completion_tokens > 0 ? rep.completion_tokens : 0;
            double cost = ((double)pt * r->price_in + (double)ct * r->price_out) / 1e6;
            r->prompt_tokens += pt;
            r->completion_tokens += ct;
            r->cost += cost;
            c->spent_usd += cost;
        }
        if (rep.response_model) {
            free(r->response_model);
            r->response_model = rep.response_model;
            rep.response_model = NULL;
        }
        if (rc == 0) {
            r->content = rep.content;
            rep.content = NULL;
        }
        kv_llm_reply_clear(&rep);
        if (rc == 0) {
            finish(c, r, NULL, KV_LLM_FAULT_NONE);
            return;
        }
    } else {
        char *msg = kv_llm_error_excerpt(r->reply.data, r->reply.len, r->key, 300);
        why = kv_asprintf("HTTP %ld: %s", status, msg);
        free(msg);
        retriable = status == 408 || status == 429 || status >= 500;
        fault = http_fault(status);
    }

    r->n_errors++;
    kv_buf_printf(&r->errors, "%sattempt %d: %s", r->errors.len ? "\n" : "", r->attempts, why);
    kv_debug("llm: model '%s' attempt %d: %s", r->model, r->attempts, why);
    if (!retriable) {
        finish(c, r, kv_asprintf("model '%s' at %s: %s (not retried)", r->model, r->url, why),
               fault);
        free(why);
        return;
    }
    if (r->attempts > r->retries) {
        finish(c, r,
               kv_asprintf("model '%s' at %s: %s (gave up after %d attempts)", r->model, r->url,
                           why, r->attempts),
               fault);
        free(why);
        return;
    }
    free(why);
    /* Exponential backoff with jitter in [0.5, 1.5); a server's Retry-After
     * on 429/503 sets the floor. */
    double delay = r->retry_delay * pow(2.0, r->attempts - 1) * (0.5 + kv_rng_uniform(&c->rng));
    if (delay > c->max_backoff_s) delay = c->max_backoff_s;
    if ((status == 429 || status == 503) && r->retry_after >= 0) {
        double ra = r->retry_after < c->max_retry_after_s ? r->retry_after : c->max_retry_after_s;
        if (delay < ra) delay = ra;
    }
    r->due = kv_now_s() + delay;
    list_push(&c->delayed, r);
}

static char *budget_error(const kv_llm_client *c, const kv_llm_req *r)
{
    return kv_asprintf("model '%s' at %s: LLM budget exhausted (spent $%.4f of $%.4f)", r->model,
                       r->url, c->spent_usd, c->max_budget_usd);
}

/* Moves due retries to the queue's front (budget permitting), then starts
 * queued requests while there is room. */
static void start_ready(kv_llm_client *c)
{
    double t = kv_now_s();
    req_list still = {NULL, NULL};
    req_list due = {NULL, NULL};
    kv_llm_req *r;
    while ((r = list_pop(&c->delayed)))
        list_push(r->due <= t ? &due : &still, r);
    c->delayed = still;
    /* Due retries go first, keeping their order. */
    if (due.head) {
        due.tail->next = c->queue.head;
        if (!c->queue.tail) c->queue.tail = due.tail;
        c->queue.head = due.head;
    }
    while (c->active < c->max_concurrency && (r = list_pop(&c->queue))) {
        if (kv_llm_budget_exhausted(c)) {
            finish(c, r, budget_error(c, r), KV_LLM_FAULT_BUDGET);
            continue;
        }
        if (start_attempt(c, r) != 0) {
            r->fault = KV_LLM_FAULT_TRANSIENT; /* libcurl could not start it: try again later */
            list_push(&c->done, r);
        }
    }
}

/* Collects finished transfers. */
static void collect(kv_llm_client *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        CURL *e = m->easy_handle;
        CURLcode code = m->data.result;
        kv_llm_req *r = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
        curl_multi_remove_handle(c->multi, e);
        list_remove(&c->running, r);
        attempt_done(c, r, code);
    }
}

/* 1 when TICKET is one the caller asked for (ticket & MASK == WANT). */
static int wanted(uint64_t ticket, uint64_t mask, uint64_t want)
{
    return (ticket & mask) == want;
}

/* 1 when a request in L is wanted. */
static int list_wants(const req_list *l, uint64_t mask, uint64_t want)
{
    for (const kv_llm_req *r = l->head; r; r = r->next)
        if (wanted(r->ticket, mask, want)) return 1;
    return 0;
}

/* 1 when a wanted request is still to be handed back. */
static int pending_wanted(const kv_llm_client *c, uint64_t mask, uint64_t want)
{
    return list_wants(&c->queue, mask, want) || list_wants(&c->delayed, mask, want) ||
           list_wants(&c->running, mask, want) || list_wants(&c->done, mask, want);
}

/* Hands the first finished wanted request to OUT. Returns 1, or 0 when none. */
static int pop_done(kv_llm_client *c, uint64_t mask, uint64_t want, kv_llm_result *out)
{
    kv_llm_req *r = c->done.head;
    while (r && !wanted(r->ticket, mask, want))
        r = r->next;
    if (!r) return 0;
    list_remove(&c->done, r);
    memset(out, 0, sizeof *out);
    out->ticket = r->ticket;
    out->ok = r->error == NULL && r->content != NULL;
    out->content = r->content;
    r->content = NULL;
    out->model = r->model;
    r->model = NULL;
    out->response_model = r->response_model;
    r->response_model = NULL;
    out->endpoint = r->url;
    r->url = NULL;
    out->prompt_tokens = r->prompt_tokens;
    out->completion_tokens = r->completion_tokens;
    out->latency_s = kv_now_s() - r->submitted_at;
    out->cost_usd = r->cost;
    out->http_status = r->http_status;
    out->error = r->error;
    r->error = NULL;
    out->fault = out->ok ? KV_LLM_FAULT_NONE : r->fault;
    out->attempts = r->attempts;
    out->n_errors = r->n_errors;
    out->errors = r->errors.len ? kv_buf_steal(&r->errors) : NULL;
    req_free(r);
    c->pending--;
    return 1;
}

/* Seconds until the earliest delayed retry (HUGE_VAL when none). */
static double next_due_in(const kv_llm_client *c)
{
    double t = kv_now_s(), best = HUGE_VAL;
    for (const kv_llm_req *r = c->delayed.head; r; r = r->next)
        if (r->due - t < best) best = r->due - t;
    return best < 0 ? 0 : best;
}

long kv_llm_next_timeout_ms(kv_llm_client *c)
{
    if (c->pending == 0) return -1;
    if (c->done.head || (c->queue.head && c->active < c->max_concurrency)) return 0;
    long curl_ms = -1;
    curl_multi_timeout(c->multi, &curl_ms);
    double due = next_due_in(c);
    long due_ms = isinf(due) ? -1 : (long)ceil(due * 1000.0);
    if (curl_ms < 0) return due_ms;
    if (due_ms < 0) return curl_ms;
    return curl_ms < due_ms ? curl_ms : due_ms;
}

int kv_llm_poll(kv_llm_client *c, int timeout_ms, kv_llm_result *out, char **err)
{
    return kv_llm_poll_match(c, timeout_ms, 0, 0, out, err);
}

int kv_llm_poll_match(kv_llm_client *c, int timeout_ms, uint64_t mask, uint64_t want,
                      kv_llm_result *out, char **err)
{
    double deadline = kv_now_s() + (timeout_ms > 0 ? timeout_ms : 0) / 1000.0;
    for (;;) {
        if (pop_done(c, mask, want, out)) return 1;
        if (!pending_wanted(c, mask, want)) return 0;
        start_ready(c);
        int running = 0;
        CURLMcode mc = curl_multi_perform(c->multi, &running);
        if (mc != CURLM_OK) {
            *err = kv_asprintf("libcurl: %s", curl_multi_strerror(mc));
            return -1;
        }
        collect(c);
        if (list_wants(&c->done, mask, want)) continue;
        /* A retry that became due while we were busy: start it at once. */
        if (c->delayed.head && next_due_in(c) <= 0) continue;
        double left = deadline - kv_now_s();
        if (left <= 0) return 0;
        double wait = left < next_due_in(c) ? left : next_due_in(c);
        int wait_ms = (int)ceil(wait * 1000.0);
        mc = curl_multi_poll(c->multi, NULL, 0, wait_ms > 0 ? wait_ms : 0, NULL);
        if (mc != CURLM_OK) {
            *err = kv_asprintf("libcurl: %s", curl_multi_strerror(mc));
            return -1;
        }
    }
}

void kv_llm_result_free(kv_llm_result *r)
{
    if (!r) return;
    free(r->content);
    free(r->model);
    free(r->response_model);
    free(r->endpoint);
    free(r->error);
    free(r->errors);
    memset(r, 0, sizeof *r);
}
