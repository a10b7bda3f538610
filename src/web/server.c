/* The dashboard's HTTP server (kevolve serve): libmicrohttpd with a pool of
 * worker threads, each request answered from a read-only store connection
 * taken from a small pool (a kv_store is one SQLite connection and not for
 * two threads at once). Serves the embedded page at / and the JSON API
 * (api.c) under /api/. Only GET and HEAD; anything else, an unknown path, a
 * bad or oversized query gets a 4xx with a JSON message. */
#include "web/web.h"

#include "store/store.h"
#include "util/buf.h"
#include "util/json.h"
#include "web/api.h"
#include "web/assets.h"

#include <microhttpd.h>

#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Limits on what a request may ask (longer is answered 413). */
#define MAX_PATH_BYTES 512
#define MAX_QUERY_BYTES 1024
#define MAX_QUERY_PARAMS 16

struct kv_web_server {
    struct MHD_Daemon *daemon;
    char *store_path;
    int port;
    /* The connection pool: N slots, opened on first use. */
    pthread_mutex_t lock;
    pthread_cond_t freed;
    kv_store **stores;
    int *busy;
    int n_stores;
};

/* Takes a free store connection, opening one when a slot has none; waits
 * when all are busy. Returns the slot index, or -1 with *ERR set. */
static int pool_take(kv_web_server *srv, char **err)
{
    pthread_mutex_lock(&srv->lock);
    int slot = -1;
    while (slot < 0) {
        for (int i = 0; i < srv->n_stores && slot < 0; i++)
            if (!srv->busy[i]) slot = i;
        if (slot < 0) pthread_cond_wait(&srv->freed, &srv->lock);
    }
    srv->busy[slot] = 1;
    pthread_mutex_unlock(&srv->lock);
    if (!srv->stores[slot] &&
        kv_store_open(srv->store_path, KV_STORE_READONLY, &srv->stores[slot], err) != 0) {
        pthread_mutex_lock(&srv->lock);
        srv->busy[slot] = 0;
        pthread_cond_signal(&srv->freed);
        pthread_mutex_unlock(&srv->lock);
        return -1;
    }
    return slot;
}

/* Gives back slot SLOT. */
static void pool_give(kv_web_server *srv, int slot)
{
    pthread_mutex_lock(&srv->lock);
    srv->busy[slot] = 0;
    pthread_cond_signal(&srv->freed);
    pthread_mutex_unlock(&srv->lock);
}

/* Queues BODY (taken) as a JSON answer with STATUS. */
static enum MHD_Result send_json(struct MHD_Connection *conn, int status, json_t *body)
{
    char *text = kv_json_dumps(body);
    json_decref(body);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json; charset=utf-8");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

/* Queues an error answer. */
static enum MHD_Result send_error(struct MHD_Connection *conn, int status, const char *msg)
{
    return send_json(conn, status, kv_web_error(status, msg));
}

/* Sizes of the query, summed by count_query. */
typedef struct query_size {
    size_t bytes;
    unsigned n;
} query_size;

static enum MHD_Result count_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    query_size *q = cls;
    q->bytes += strlen(key) + (value ? strlen(value) : 0) + 2;
    q->n++;
    return MHD_YES;
}

/* The API's view of the query parameters. */
static const char *get_param(void *ud, const char *name)
{
    return MHD_lookup_connection_value(ud, MHD_GET_ARGUMENT_KIND, name);
}

/* Answers /api/ requests from a pooled store connection. */
static enum MHD_Result serve_api(kv_web_server *srv, struct MHD_Connection *conn, const char *url)
{
    char *err = NULL;
    int slot = pool_take(srv, &err);
    if (slot < 0) {
        enum MHD_Result rc = send_error(conn, 503, err ? err : "cannot open the store");
        free(err);
        return rc;
    }
    json_t *body = NULL;
    int status = kv_web_api(srv->stores[slot], url, get_param, conn, &body);
    pool_give(srv, slot);
    return send_json(conn, status, body);
}

/* Answers an embedded static file. */
static enum MHD_Result serve_asset(struct MHD_Connection *conn, const kv_web_asset *a)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", a->mime);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/* libmicrohttpd's request handler: answers at the first call (a body, if
 * any, is never read: no route takes one). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    kv_web_server *srv = cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return send_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                          "method not allowed: the dashboard is read-only (GET, HEAD)");
    query_size q = {0, 0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, count_query, &q);
    if (strlen(url) > MAX_PATH_BYTES || q.bytes > MAX_QUERY_BYTES || q.n > MAX_QUERY_PARAMS)
        return send_error(conn, 413,
                          "request too large: at most 512 bytes of path, 1024 of query"
                          " and 16 parameters");
    if (kv_starts_with(url, "/api/")) return serve_api(srv, conn, url);
    const kv_web_asset *a = kv_web_asset_find(url);
    if (a) return serve_asset(conn, a);
    return send_error(conn, MHD_HTTP_NOT_FOUND, "not found");
}

/* Resolves HOST:PORT to a socket address in *ADDR. Returns 0, or -1 with *ERR. */
static int resolve(const char *host, int port, struct sockaddr_storage *addr, socklen_t *len,
                   char **err)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_flags = AI_NUMERICSERV;
    hints.ai_socktype = SOCK_STREAM;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || !res) {
        *err = kv_asprintf("cannot resolve host '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int kv_web_start(const kv_web_options *opts, kv_web_server **out, char **err)
{
    *out = NULL;
    *err = NULL;
    const char *host = opts->host ? opts->host : "127.0.0.1";
    if (opts->port < 0 || opts->port > 65535) {
        *err = kv_asprintf("port %d is outside 0..65535", opts->port);
        return -1;
    }
    struct sockaddr_storage addr;
    socklen_t addr_len;
    if (resolve(host, opts->port, &addr, &addr_len, err) != 0) return -1;
    kv_web_server *srv = kv_calloc(1, sizeof *srv);
    srv->store_path = kv_strdup(opts->store_path);
    srv->n_stores = opts->threads > 0 ? opts->threads : 4;
    srv->stores = kv_calloc((size_t)srv->n_stores, sizeof *srv->stores);
    srv->busy = kv_calloc((size_t)srv->n_stores, sizeof *srv->busy);
    pthread_mutex_init(&srv->lock, NULL);
    pthread_cond_init(&srv->freed, NULL);
    /* Fail now, with the store's own message, when it cannot be read. */
    if (kv_store_open(srv->store_path, KV_STORE_READONLY, &srv->stores[0], err) != 0) {
        kv_web_stop(srv);
        return -1;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)opts->port, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)srv->n_stores,
        MHD_OPTION_CONNECTION_LIMIT, 256u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536, MHD_OPTION_END);
    if (!srv->daemon) {
        *err = kv_asprintf("cannot listen on %s:%d (in use, or not an address of this host)", host,
                           opts->port);
        kv_web_stop(srv);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : opts->port;
    (void)addr_len;
    *out = srv;
    return 0;
}

int kv_web_port(const kv_web_server *srv)
{
    return srv->port;
}

void kv_web_stop(kv_web_server *srv)
{
    if (!srv) return;
    if (srv->daemon) MHD_stop_daemon(srv->daemon);
    for (int i = 0; i < srv->n_stores; i++)
        kv_store_close(srv->stores[i]);
    pthread_mutex_destroy(&srv->lock);
    pthread_cond_destroy(&srv->freed);
    free(srv->stores);
    free(srv->busy);
    free(srv->store_path);
    free(srv);
}
