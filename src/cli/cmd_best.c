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
    "usage: kevolve best RUN_DB_OR_OUTPUT_DIR [-o FILE] [--json]\n"
    "\n"
    "Writes the source of the run's best program (highest fitness among the programs\n"
    "that evaluated OK) to FILE, or to standard output; its id, fitness and metrics go\n"
    "to standard error.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   where to write the program\n"
    "      --json          print the program as one JSON object on standard output:\n"
    "                      id, fitness, iteration, generation, island, parent_id,\n"
    "                      mutator, metrics and source (with -o, the source goes to FILE\n"
    "                      and \"output\" names it)\n"
    "  -h, --help          this text\n"
    "\n"
    "exit codes: 0 written, 1 no program evaluated OK (or -o cannot be written), 2 usage\n"
    "error or no such store, 3 the store is damaged or not a kevolve store, 5 I/O error\n";

/* Prints program P as one JSON object on stdout; its source is in FILE
 * when FILE is not NULL, else in the object. */
static void print_json(const kv_program *p, const char *file)
{
    json_t *o =
        json_pack("{s:I, s:f, s:I, s:i, s:i, s:s}", "id", (json_int_t)p->id, "fitness", p->fitness,
                  "iteration", (json_int_t)p->iteration, "generation", p->generation, "island",
                  p->island, "mutator", p->mutator ? p->mutator : "");
    json_object_set_new(o, "parent_id",
                        p->parent_id ? json_integer((json_int_t)p->parent_id) : json_null());
    json_object_set_new(o, "metrics", p->metrics ? json_incref(p->metrics) : json_object());
    if (file)
        json_object_set_new(o, "output", json_string(file));
    else
        json_object_set_new(o, "source", json_string(p->source ? p->source : ""));
    char *text = json_dumps(o, JSON_INDENT(2));
    puts(text ? text : "null");
    free(text);
    json_decref(o);
}

int cmd_best(int argc, char **argv)
{
    static const struct option long_options[] = {{"output", required_argument, NULL, 'o'},
                                                 {"json", no_argument, NULL, 'j'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};
    const char *output = NULL;
    int as_json = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "o:h", long_options, NULL)) != -1) {
        if (opt == 'o')
            output = optarg;
        else if (opt == 'j')
            as_json = 1;
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
        } else if (!as_json) {
            fputs(best->source, stdout);
        }
        if (as_json && rc == KV_EXIT_OK) print_json(best, output);
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
