/* The dashboard: a read-only HTTP server over a run's store (kevolve serve)
 * and the same page as one self-contained HTML file (kevolve report).
 *
 * The server serves the static page (src/web/static/, embedded at build
 * time) at / and a JSON API under /api/ (documented in docs/dashboard.md;
 * the handlers are in api.c). It opens the store read-only, one SQLite
 * connection per worker thread, so it keeps answering while a run writes
 * the same file. */
#ifndef KV_WEB_WEB_H
#define KV_WEB_WEB_H

typedef struct kv_web_server kv_web_server;

typedef struct kv_web_options {
    const char *store_path; /* a run's run.db (required) */
    const char *host;       /* address to bind; NULL: "127.0.0.1" */
    int port;               /* 0: any free port (kv_web_port says which) */
    int threads;            /* worker threads; <= 0: 4 */
    int log_requests;       /* 1: log each request (method, path, status) at info level */
} kv_web_options;

/* Checks the store can be read and starts serving in background threads.
 * Returns 0 with *OUT set, or -1 with a malloc'd message in *ERR ("run.db:
 * no such file", "cannot listen on 127.0.0.1:80: ..."). */
int kv_web_start(const kv_web_options *opts, kv_web_server **out, char **err);
/* The port the server listens on. */
int kv_web_port(const kv_web_server *srv);
/* Stops serving (waits for requests in flight) and frees SRV; NULL is fine. */
void kv_web_stop(kv_web_server *srv);

/* Writes the dashboard for the store at STORE_PATH to OUT_PATH as one HTML
 * file with the data inlined (every program in compact form, the full
 * record of the TOP_N best programs and of the initial one). Returns 0, or
 * -1 with a malloc'd message in *ERR. */
int kv_web_report(const char *store_path, const char *out_path, int top_n, char **err);

#endif
