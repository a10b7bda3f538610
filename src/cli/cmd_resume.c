/* kevolve resume: continue a stored run. */
#include "cli/cli.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char resume_usage[] =
    "usage: kevolve resume OUTPUT_DIR_OR_RUN_DB [--iterations N] [--config FILE]\n"
    "                      [--api-base URL] [--primary-model M [--secondary-model M]]\n"
    "\n"
    "Continues a run from its store: the population, lineage and islands are rebuilt\n"
    "from run.db and the evolution goes on where it stopped (children that were in\n"
    "evaluation when the run died are produced again). The run's stored config is\n"
    "read again (its ${VAR}s from this environment); --config, --api-base and the\n"
    "models replace what does not change what the run searched (models, endpoint,\n"
    "keys, prompts, timeouts, parallelism, logging, when to stop), each change\n"
    "logged and recorded in the run's manifest; a change of anything else (task,\n"
    "evaluator, seeds, islands, feature dimensions, ...) is refused, naming the key.\n"
    "\n"
    "options:\n"
    "  -n, --iterations N      run N more iterations (default: up to the run's\n"
    "                          max_iterations)\n"
    "  -c, --config FILE       a corrected config.yaml for the rest of the run\n"
    "      --api-base URL      OpenAI-compatible endpoint (overrides llm.api_base)\n"
    "      --primary-model M   use model M for the LLM mutator (replaces llm.models)\n"
    "      --secondary-model M a second model, with --primary-model\n"
    "      --log-level LEVEL   debug, info, warning or error\n"
    "  -q, --quiet             only errors on the terminal\n"
    "  -h, --help              this text\n"
    "\n"
    "exit codes: as for `kevolve run` (2 also for a config change a resume refuses)\n";

int cmd_resume(int argc, char **argv)
{
    static const struct option long_options[] = {
        {"iterations", required_argument, NULL, 'n'},
        {"config", required_argument, NULL, 'c'},
        CLI_MODEL_OPTIONS,
        {"log-level", required_argument, NULL, 'L'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    kv_run_options o = {0};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "n:c:qh", long_options, NULL)) != -1) {
        switch (opt) {
        case 'c':
            o.config_path = optarg;
            break;
        case 'n': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 1) {
                kv_error("--iterations: expected a positive integer, got '%s'", optarg);
                return KV_EXIT_USAGE;
            }
            o.iterations = v;
            break;
        }
        case 'L': {
            kv_log_level level;
            if (kv_log_parse_level(optarg, &level) != 0) {
                kv_error("--log-level: unknown level '%s'", optarg);
                return KV_EXIT_USAGE;
            }
            kv_log_set_level(level);
            break;
        }
        case 'q':
            kv_log_set_quiet(1);
            break;
        case 'h':
            fputs(resume_usage, stdout);
            return KV_EXIT_OK;
        default:
            if (cli_model_option(opt, optarg, &o)) break;
            fputs(resume_usage, stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fputs(resume_usage, stderr);
        return KV_EXIT_USAGE;
    }
    if (cli_check_models(&o) != KV_EXIT_OK) return KV_EXIT_USAGE;
    o.progress = isatty(STDERR_FILENO) && kv_log_get_level() <= KV_LOG_INFO;
    return kv_resume_evolution(argv[optind], &o);
}
