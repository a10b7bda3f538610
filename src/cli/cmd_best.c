/* kevolve best: write the best program of a run. */
#include "cli/cli.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char best_usage[] =
    "usage: kevolve best RUN_DB_OR_OUTPUT_DIR [-o FILE]\n"
    "\n"
    "Writes the source of the run's best program (highest fitness among the programs\n"
    "that evaluated OK) to FILE, or to standard output; its id, fitness and metrics go\n"
    "to standard error.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   where to write the program\n"
    "  -h, --help          this text\n"
    "\n"
    "exit codes: 0 written, 1 no program evaluated OK (or -o cannot be written), 2 usage\n"
    "error or no such store, 3 the store is damaged or not a kevolve store, 5 I/O error\n";

int cmd_best(int argc, char **argv)
{
    static const struct option long_options[] = {{"output", required_argument, NULL, 'o'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};
    const char *output = NULL;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "o:h", long_options, NULL)) != -1) {
        if (opt == 'o')
            output = optarg;
        else if (opt == 'h') {
            fputs(best_usage, stdout);
            return KV_EXIT_OK;
        } else {
            fputs(best_usage, stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fputs(best_usage, stderr);
        return KV_EXIT_USAGE;
    }
    char *path = cli_store_path(argv[optind]);
    int rc;
    kv_store *st = cli_open_store_readonly(path, &rc);
    if (!st) {
        free(path);
        return rc;
    }
    kv_program *best = kv_store_best_program(st);
    if (!best && *kv_store_errmsg(st)) {
        rc = cli_store_failed(st); /* not "none": the store could not say */
    } else if (!best) {
        kv_error("%s: no program has evaluated OK yet", path);
        rc = KV_EXIT_FAILURE;
    } else {
        if (output) {
            if (kv_write_file(output, best->source, strlen(best->source)) != 0) {
                kv_error("cannot write %s: %s", output, strerror(errno));
                rc = KV_EXIT_FAILURE;
            }
        } else {
            fputs(best->source, stdout);
        }
        char *metrics = best->metrics ? json_dumps(best->metrics, JSON_COMPACT) : NULL;
        fprintf(stderr, "best: program %lld, fitness %.6g, iteration %lld, island %d, %s\n",
                (long long)best->id, best->fitness, (long long)best->iteration, best->island,
                metrics ? metrics : "{}");
        free(metrics);
    }
    kv_program_free(best);
    kv_store_close(st);
    free(path);
    return rc;
}
