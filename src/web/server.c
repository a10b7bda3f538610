/* The dashboard's HTTP server (kevolve serve): libmicrohttpd with a pool of
 * worker threads over epoll, each request answered from a read-only store
 * connection taken from a small pool (a kv_store is one SQLite connection
 * and not for two threads at once). Serves the embedded page at / and the
 * JSON API (api.c) under /api/. Only GET and HEAD; anything else, an
 * unknown path, a bad or oversized query gets a 4xx with a JSON message.
 *
 * The store it serves is a file another process may replace (kevolve run
 * --force deletes run.db and makes a new one) or delete. Each API request
 * compares the file at the path with the one being served (device and
 * inode; an open descriptor on the served file pins its inode so a new
 * file cannot reuse the number): a new file is served from then on, under
 * a new store identity (the X-Kevolve-Store header, which the page
 * compares across its requests), and a missing one is answered 410.
 *
 * Slow or idle clients cannot starve others: connections are cheap under
 * epoll, their number is bounded by the descriptors the process may open
 * (raised to the hard limit), one address may hold at most 7/8 of them,
 * and an idle connection is closed after 20 s. libmicrohttpd's messages go
 * to kevolve's log, at most a few per ten seconds. */
#include "web/web.h"

#include "store/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "web/api.h"
#include "web/assets.h"

#include <microhttpd.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Limits on what a request may ask (longer is answered 413). */
#define MAX_PATH_BYTES 512
#define MAX_QUERY_BYTES 1024
#define MAX_QUERY_PARAMS 16
/* Connections: at most this many, and never more than the descriptors
 * left after RESERVED_FDS (the store's files, the log, the listener). */
#define MAX_CONNECTIONS 4096u
#define RESERVED_FDS 64u
/* Seconds an idle connection is kept. */
#define IDLE_TIMEOUT_S 20u
/* libmicrohttpd's messages: at most LOG_BURST per LOG_WINDOW_S seconds. */
#define LOG_BURST 5
#define LOG_WINDOW_S 10

struct kv_web_server {
    struct MHD_Daemon *daemon;
    char *store_path; /* absolute */
    int port;
    int log_requests;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t freed;
    /* The connection pool: N slots, opened on first use; GEN_OF[i] is the
     * store generation slot i was opened on. */
    kv_store **stores;
    int *busy;
    unsigned *gen_of;
    int n_stores;
    /* The file being served: PIN_FD holds it open, DEV and INO name it,
     * GEN counts replacements. */
    int pin_fd;
    dev_t dev;
    ino_t ino;
    unsigned gen;
    /* Rate limit of libmicrohttpd's messages. */
    pthread_mutex_t log_lock;
    time_t log_window;
    int log_count;
    int log_suppressed;
};

/* libmicrohttpd's messages, routed to kevolve's log with a rate limit (a
 * flood of clients must not flood the terminal). */
static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    kv_web_server *srv = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\r\n")] = '\0';
    pthread_mutex_lock(&srv->log_lock);
    time_t now = time(NULL);
    int suppressed = 0, show = 0;
    if (now - srv->log_window >= LOG_WINDOW_S) {
        suppressed = srv->log_suppressed;
        srv->log_window = now;
        srv->log_count = 0;
        srv->log_suppressed = 0;
    }
    if (srv->log_count < LOG_BURST) {
        srv->log_count++;
        show = 1;
    } else {
        srv->log_suppressed++;
    }
    if (suppressed)
        kv_warn("serve: %d more messages from libmicrohttpd in the last %d s not shown", suppressed,
                LOG_WINDOW_S);
    if (show) kv_warn("serve: libmicrohttpd: %s", msg);
    pthread_mutex_unlock(&srv->log_lock);
}

/* Opens PATH as the pinned file of SRV (closing the previous pin). Returns
 * 0, or -1 with errno set. Called with the lock held, or before threads. */
static int pin_store(kv_web_server *srv)
{
    int fd = open(srv->store_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (srv->pin_fd >= 0) close(srv->pin_fd);
    srv->pin_fd = fd;
    srv->dev = st.st_dev;
    srv->ino = st.st_ino;
    return 0;
}

/* Checks the file at the store's path is the one served, switching to a
 * new one when it was replaced. Returns 0 with *GEN set and TOKEN (the
 * store identity, TOKEN_LEN bytes) filled, or -1 with *ERR (malloc'd)
 * when there is no store at the path. */
static int check_store(kv_web_server *srv, unsigned *gen, char *token, size_t token_len, char **err)
{
    struct stat st;
    int rc = 0;
    pthread_mutex_lock(&srv->lock);
    if (stat(srv->store_path, &st) != 0) {
        *err = kv_asprintf("the store %s is gone (%s): its run was deleted or is being replaced",
                           srv->store_path, strerror(errno));
        rc = -1;
    } else if (st.st_dev != srv->dev || st.st_ino != srv->ino) {
        if (pin_store(srv) != 0) {
            *err = kv_asprintf("the store %s was replaced and cannot be opened: %s",
                               srv->store_path, strerror(errno));
            rc = -1;
        } else {
            srv->gen++;
            kv_info("serve: %s was replaced (a new run?); serving the new file", srv->store_path);
        }
    }
    *gen = srv->gen;
    snprintf(token, token_len, "%llx-%llx-%u", (unsigned long long)srv->dev,
             (unsigned long long)srv->ino, srv->gen);
    pthread_mutex_unlock(&srv->lock);
    return rc;
}

/* Takes a free store connection of generation GEN, opening one when a slot
 * has none or one of an older generation; waits when all are busy.
 * Returns the slot index, or -1 with *ERR set. */
static int pool_take(kv_web_server *srv, unsigned gen, char **err)
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
    if (srv->stores[slot] && srv->gen_of[slot] != gen) {
        kv_store_close(srv->stores[slot]);
        srv->stores[slot] = NULL;
    }
    if (!srv->stores[slot]) {
        if (kv_store_open(srv->store_path, KV_STORE_READONLY, &srv->stores[slot], err) != 0) {
            srv->stores[slot] = NULL;
            pthread_mutex_lock(&srv->lock);
            srv->busy[slot] = 0;
            pthread_cond_signal(&srv->freed);
            pthread_mutex_unlock(&srv->lock);
            return -1;
        }
        srv->gen_of[slot] = gen;
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

/* Queues BODY (taken) as a JSON answer with STATUS; TOKEN (may be NULL) is
 * the store identity. */
static enum MHD_Result send_json(struct MHD_Connection *conn, int status, json_t *body,
                                 const char *token)
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
    if (token) MHD_add_response_header(r, "X-Kevolve-Store", token);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

/* Queues an error answer. */
static enum MHD_Result send_error(struct MHD_Connection *conn, int status, const char *msg)
{
    return send_json(conn, status, kv_web_error(status, msg), NULL);
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

/* Logs a request when asked to (kevolve serve --verbose). */
static void log_request(kv_web_server *srv, const char *method, const char *url, int status)
{
    if (srv->log_requests) kv_info("serve: %s %.200s %d", method, url, status);
}

/* Answers /api/ requests from a pooled store connection. */
static enum MHD_Result serve_api(kv_web_server *srv, struct MHD_Connection *conn,
                                 const char *method, const char *url)
{
    char *err = NULL, token[80];
    unsigned gen;
    if (check_store(srv, &gen, token, sizeof token, &err) != 0) {
        json_t *body = kv_web_error(MHD_HTTP_GONE, err);
        json_object_set_new(body, "store", json_string("gone"));
        free(err);
        log_request(srv, method, url, MHD_HTTP_GONE);
        return send_json(conn, MHD_HTTP_GONE, body, NULL);
    }
    int slot = pool_take(srv, gen, &err);
    if (slot < 0) {
        enum MHD_Result rc =
            send_json(conn, 503, kv_web_error(503, err ? err : "cannot open the store"), token);
        free(err);
        log_request(srv, method, url, 503);
        return rc;
    }
    json_t *body = NULL;
    int status = kv_web_api(srv->stores[slot], srv->store_path, url, get_param, conn, &body);
    pool_give(srv, slot);
    log_request(srv, method, url, status);
    return send_json(conn, status, body, token);
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
    if (kv_starts_with(url, "/api/")) return serve_api(srv, conn, method, url);
    const kv_web_asset *a = kv_web_asset_find(url);
    if (a) return serve_asset(conn, a);
    return send_error(conn, MHD_HTTP_NOT_FOUND, "not found");
}

/* Resolves HOST:PORT to a socket address in *ADDR. Returns 0, or -1 with *ERR. */
static int resolve(const char *host, int port, struct sockaddr_storage *addr, char **err)
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
    freeaddrinfo(res);
    return 0;
}

/* The most connections to accept: raises the soft limit on descriptors
 * to the hard one (a Debian shell starts at 1024) and keeps RESERVED_FDS
 * plus the store pool's files free. */
static unsigned connection_limit(int n_stores)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 256u;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit want = rl;
        want.rlim_cur = rl.rlim_max;
        if (want.rlim_cur == RLIM_INFINITY || want.rlim_cur > 65536) want.rlim_cur = 65536;
        if (want.rlim_cur > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
    }
    rlim_t reserve = RESERVED_FDS + 4u * (rlim_t)n_stores;
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > MAX_CONNECTIONS + reserve)
        return MAX_CONNECTIONS;
    return rl.rlim_cur > reserve + 16 ? (unsigned)(rl.rlim_cur - reserve) : 16u;
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
    if (resolve(host, opts->port, &addr, err) != 0) return -1;
    kv_web_server *srv = kv_calloc(1, sizeof *srv);
    srv->store_path = kv_path_absolute(opts->store_path);
    srv->n_stores = opts->threads > 0 ? opts->threads : 4;
    srv->log_requests = opts->log_requests;
    srv->stores = kv_calloc((size_t)srv->n_stores, sizeof *srv->stores);
    srv->busy = kv_calloc((size_t)srv->n_stores, sizeof *srv->busy);
    srv->gen_of = kv_calloc((size_t)srv->n_stores, sizeof *srv->gen_of);
    srv->pin_fd = -1;
    pthread_mutex_init(&srv->lock, NULL);
    pthread_cond_init(&srv->freed, NULL);
    pthread_mutex_init(&srv->log_lock, NULL);
    /* Fail now, with the store's own message, when it cannot be read. */
    if (kv_store_open(srv->store_path, KV_STORE_READONLY, &srv->stores[0], err) != 0) {
        kv_web_stop(srv);
        return -1;
    }
    if (pin_store(srv) != 0) {
        *err = kv_asprintf("%s: %s", srv->store_path, strerror(errno));
        kv_web_stop(srv);
        return -1;
    }
    unsigned limit = connection_limit(srv->n_stores);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
    if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)opts->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_logger, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)srv->n_stores, MHD_OPTION_CONNECTION_LIMIT, limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, limit - limit / 8, MHD_OPTION_CONNECTION_TIMEOUT,
        IDLE_TIMEOUT_S, MHD_OPTION_LISTEN_BACKLOG_SIZE, 512u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)32768, MHD_OPTION_END);
    if (!srv->daemon) {
        *err = kv_asprintf("cannot listen on %s:%d (in use, or not an address of this host)", host,
                           opts->port);
        kv_web_stop(srv);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : opts->port;
    kv_info("serve: up to %u connections (%u from one address), idle ones closed after %u s", limit,
            limit - limit / 8, IDLE_TIMEOUT_S);
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
    if (srv->pin_fd >= 0) close(srv->pin_fd);
    pthread_mutex_destroy(&srv->lock);
    pthread_cond_destroy(&srv->freed);
    pthread_mutex_destroy(&srv->log_lock);
    free(srv->stores);
    free(srv->busy);
    free(srv->gen_of);
    free(srv->store_path);
    free(srv);
}
