/* kevolve report: the dashboard of a run as one self-contained HTML file. */
#include "cli/cli.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"
#include "web/web.h"

#include <kevolve/kevolve.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char report_usage[] =
    "usage: kevolve report RUN_DB_OR_OUTPUT_DIR -o FILE [--top N]\n"
    "\n"
    "Writes the run's dashboard (run facts, evolution tree, scores, speedups per\n"
    "scenario, MAP-Elites grids, outcomes, summary) as one HTML file that opens\n"
    "with no server: every program in compact form, and the full page (change,\n"
    "scenarios, failure, compile log, source, prompts) of the N best programs, of\n"
    "the initial ones and of the first and last program of each failure reason.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   the HTML file to write (required)\n"
    "      --top N         programs whose full record is included (default 50)\n"
    "  -h, --help          this text\n"
    "\n"
    "exit codes: 0 written, 1 FILE cannot be written, 2 usage error or no such store,\n"
    "3 the store is damaged or not a kevolve store, 5 I/O error (see `kevolve --help`)\n";

int cmd_report(int argc, char **argv)
{
    static const struct option long_options[] = {{"output", required_argument, NULL, 'o'},
                                                 {"top", required_argument, NULL, 't'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};
    const char *output = NULL;
    long top = 50;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "o:h", long_options, NULL)) != -1) {
        if (opt == 'o') {
            output = optarg;
        } else if (opt == 't') {
            char *end = NULL;
            top = strtol(optarg, &end, 10);
            if (!*optarg || *end || top < 0 || top > 100000) {
                kv_error("--top: '%s' is not a count (0..100000)", optarg);
                return KV_EXIT_USAGE;
            }
        } else if (opt == 'h') {
            fputs(report_usage, stdout);
            return KV_EXIT_OK;
        } else {
            fputs(report_usage, stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (optind != argc - 1 || !output) {
        fputs(report_usage, stderr);
        return KV_EXIT_USAGE;
    }
    char *path = cli_store_path(argv[optind]);
    char *err = NULL;
    int rc = kv_web_report(path, output, (int)top, &err);
    int code = KV_EXIT_OK;
    if (rc != 0) {
        kv_error("%s", err ? err : "cannot write the report");
        /* A store that cannot be read gets the same message and exit code
         * as in every command. */
        code = cli_check_store(path, 1);
        if (code == KV_EXIT_OK) code = KV_EXIT_FAILURE;
    } else {
        kv_info("report of %s written to %s", path, output);
    }
    free(err);
    free(path);
    return code;
}
