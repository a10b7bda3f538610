/* kevolve serve: the live dashboard of a run, over HTTP (src/web). */
#include "cli/cli.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"
#include "web/web.h"

#include <kevolve/kevolve.h>

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char serve_usage[] =
    "usage: kevolve serve RUN_DB_OR_OUTPUT_DIR [--port N] [--host ADDR]\n"
    "\n"
    "Serves the run's dashboard (evolution tree, scores, MAP-Elites grids, programs)\n"
    "and its JSON API under /api/, read-only, until interrupted (Ctrl-C). Safe while\n"
    "the run is writing: new programs appear in the page as they land; a store\n"
    "replaced by a new run (kevolve run --force) or deleted is noticed and said.\n"
    "The first line on standard output is \"serving PATH at http://HOST:PORT/\".\n"
    "\n"
    "options:\n"
    "  -p, --port N      port to listen on (default 8080; 0: any free port)\n"
    "      --host ADDR   address to bind (default 127.0.0.1: this machine only)\n"
    "  -v, --verbose     log each API request (method, path, status) on stderr\n"
    "  -h, --help        this text\n"
    "\n"
    "exit codes: 0 stopped by a signal, 1 the server cannot start (the port cannot\n"
    "be bound), 2 usage error or no such store, 3 the store is damaged or not a\n"
    "kevolve store, 5 I/O error (see `kevolve --help`)\n";

/* Parses a port number; -1 when TEXT is not one. */
static int parse_port(const char *text)
{
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < 0 || v > 65535) return -1;
    return (int)v;
}

int cmd_serve(int argc, char **argv)
{
    static const struct option long_options[] = {{"port", required_argument, NULL, 'p'},
                                                 {"host", required_argument, NULL, 'H'},
                                                 {"verbose", no_argument, NULL, 'v'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};
    kv_web_options opts = {NULL, "127.0.0.1", 8080, 4, 0};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "p:vh", long_options, NULL)) != -1) {
        if (opt == 'p') {
            opts.port = parse_port(optarg);
            if (opts.port < 0) {
                kv_error("--port: '%s' is not a port number (0..65535)", optarg);
                return KV_EXIT_USAGE;
            }
        } else if (opt == 'H') {
            opts.host = optarg;
        } else if (opt == 'v') {
            opts.log_requests = 1;
        } else if (opt == 'h') {
            fputs(serve_usage, stdout);
            return KV_EXIT_OK;
        } else {
            fputs(serve_usage, stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fputs(serve_usage, stderr);
        return KV_EXIT_USAGE;
    }
    char *path = cli_store_path(argv[optind]);
    int rc = cli_check_store(path, 0); /* the same message and exit code as every command */
    if (rc != KV_EXIT_OK) {
        free(path);
        return rc;
    }
    opts.store_path = path;
    /* Block the stop signals before the server's threads start, so they
     * inherit the mask and sigwait below receives them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    kv_web_server *srv = NULL;
    char *err = NULL;
    if (kv_web_start(&opts, &srv, &err) != 0) {
        kv_error("%s", err ? err : "cannot start the server");
        free(err);
        free(path);
        return KV_EXIT_FAILURE;
    }
    int v6 = strchr(opts.host, ':') != NULL;
    printf("serving %s at http://%s%s%s:%d/\n", path, v6 ? "[" : "", opts.host, v6 ? "]" : "",
           kv_web_port(srv));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    kv_info("serve: stopping (signal %d)", sig);
    kv_web_stop(srv);
    free(path);
    return KV_EXIT_OK;
}
