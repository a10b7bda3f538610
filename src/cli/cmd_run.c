/* kevolve run: start an evolution. */
#include "cli/cli.h"
#include "config/config.h"
#include "engine/manifest.h"
#include "engine/startup.h"
#include "judge/tasks.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char run_usage[] =
    "usage: kevolve run [INITIAL_PROGRAM [EVALUATOR]] --config FILE [options]\n"
    "\n"
    "Starts an evolution. The config may name initial_program (or several\n"
    "initial_programs) and evaluator (paths relative to the config file); the\n"
    "positional arguments override them.\n"
    "\n"
    "options:\n"
    "  -c, --config FILE       the run's config.yaml (required)\n"
    "  -n, --iterations N      iterations to run (overrides max_iterations)\n"
    "  -o, --output DIR        output folder: run.db, best/, logs/ (default: out/ beside\n"
    "                          the config)\n"
    "  -s, --seed N            random seed (overrides random_seed)\n"
    "  -t, --target-score X    stop once the best fitness reaches X\n"
    "      --dry-run           validate the config, print the effective settings, run nothing\n"
    "      --force             replace a run already stored in the output folder\n"
    "      --api-base URL      OpenAI-compatible endpoint (overrides llm.api_base)\n"
    "      --primary-model M   use model M for the LLM mutator (replaces llm.models)\n"
    "      --secondary-model M a second model, with --primary-model\n"
    "      --log-level LEVEL   debug, info, warning or error\n"
    "  -q, --quiet             only errors on the terminal (the log file keeps everything)\n"
    "  -h, --help              this text\n"
    "\n"
    "exit codes: 0 done (iterations, target or early stop), 1 the run failed, 2 usage\n"
    "or config error, 3 the store is damaged, 4 another kevolve is writing this run,\n"
    "5 disk full or I/O error (stopped cleanly), 130 interrupted (the store keeps every\n"
    "finished evaluation; continue with `kevolve resume DIR`)\n";

/* Parses a whole-string integer. Returns 0 or -1. */
static int parse_long(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

/* 0 when CFG names no built-in task or one that exists; else the error
 * said, listing the tasks (a typo caught before any seed is judged). */
static int check_task(const kv_config *cfg)
{
    if (!cfg->evaluator.task || kv_task_find(cfg->evaluator.task)) return 0;
    kv_buf known = KV_BUF_INIT;
    for (size_t i = 0; kv_task_at(i); i++)
        kv_buf_printf(&known, "%s%s", i ? ", " : "", kv_task_at(i)->name);
    kv_error("evaluator.task: no built-in task '%s' (known: %s; `kevolve tasks` describes them)",
             cfg->evaluator.task, known.data);
    kv_buf_free(&known);
    return -1;
}

/* A real run's config checked as --dry-run checks it, for what the engine
 * cannot see (the task registry is the judge's): a usage error before
 * the run's folder is touched. */
static int check_run_config(const kv_run_options *o)
{
    kv_config cfg;
    kv_config_error err;
    if (kv_config_load_ex(o->config_path, &cfg, &err, KV_CONFIG_SECRETS_OPTIONAL) != 0) {
        kv_config_free(&cfg);
        return 0; /* the run reports it as it always has */
    }
    kv_run_options_apply(o, &cfg);
    int rc = check_task(&cfg);
    kv_config_free(&cfg);
    return rc;
}

/* --dry-run: load, apply overrides, print the effective settings. */
static int dry_run(const kv_run_options *o)
{
    kv_config cfg;
    kv_config_error err;
    /* A config is checked without its secrets (API keys from variables
     * set only where it runs): each one missing is warned about. */
    if (kv_config_load_ex(o->config_path, &cfg, &err, KV_CONFIG_SECRETS_OPTIONAL) != 0) {
        kv_error("%s", err.message);
        kv_config_free(&cfg);
        return KV_EXIT_USAGE;
    }
    kv_run_options_apply(o, &cfg);
    char *text = kv_config_dump(&cfg);
    fputs(text, stdout);
    free(text);
    int rc = KV_EXIT_OK;
    const char *const *paths;
    size_t n = kv_run_initial_programs(&cfg, &paths);
    if (!n) {
        kv_error("no initial program configured");
        rc = KV_EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++) {
        if (!kv_is_file(paths[i])) {
            kv_error("initial program %s %s", paths[i],
                     kv_is_dir(paths[i]) ? "is a folder, not a program" : "does not exist");
            rc = KV_EXIT_USAGE;
            continue;
        }
        char *why = NULL, *source = kv_read_source(paths[i], &why);
        if (!source) {
            kv_error("initial program: %s", why);
            free(why);
            rc = KV_EXIT_USAGE;
        } else if (kv_startup_check(&cfg, paths[i], source, &why) != 0) {
            kv_error("%s", why);
            free(why);
            rc = KV_EXIT_USAGE;
        }
        free(source);
    }
    if (!cfg.evaluator_program && !cfg.evaluator.task) {
        kv_error("no evaluator configured");
        rc = KV_EXIT_USAGE;
    } else if (check_task(&cfg) != 0) {
        rc = KV_EXIT_USAGE;
    } else if (cfg.evaluator_program && !kv_is_file(cfg.evaluator_program)) {
        kv_error("evaluator %s %s", cfg.evaluator_program,
                 kv_is_dir(cfg.evaluator_program) ? "is a folder, not a program"
                                                  : "does not exist");
        rc = KV_EXIT_USAGE;
    }
    kv_config_free(&cfg);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    static const struct option long_options[] = {
        {"config", required_argument, NULL, 'c'},
        {"iterations", required_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"seed", required_argument, NULL, 's'},
        {"target-score", required_argument, NULL, 't'},
        {"dry-run", no_argument, NULL, 'D'},
        {"force", no_argument, NULL, 'F'},
        {"log-level", required_argument, NULL, 'L'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        CLI_MODEL_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    kv_run_options o = {0};
    int dry = 0;
    long long v;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:n:o:s:t:qh", long_options, NULL)) != -1) {
        switch (opt) {
        case 'c':
            o.config_path = optarg;
            break;
        case 'n':
            if (parse_long(optarg, &v) != 0 || v < 1) {
                kv_error("--iterations: expected a positive integer, got '%s'", optarg);
                return KV_EXIT_USAGE;
            }
            o.iterations = (long)v;
            break;
        case 'o':
            o.output_dir = optarg;
            break;
        case 's':
            if (parse_long(optarg, &v) != 0) {
                kv_error("--seed: expected an integer, got '%s'", optarg);
                return KV_EXIT_USAGE;
            }
            o.seed = v;
            o.has_seed = 1;
            break;
        case 't': {
            char *end;
            o.target_score = strtod(optarg, &end);
            if (end == optarg || *end || !isfinite(o.target_score)) {
                kv_error("--target-score: expected a number, got '%s'", optarg);
                return KV_EXIT_USAGE;
            }
            o.has_target_score = 1;
            break;
        }
        case 'D':
            dry = 1;
            break;
        case 'F':
            o.force = 1;
            break;
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
            fputs(run_usage, stdout);
            return KV_EXIT_OK;
        default:
            if (cli_model_option(opt, optarg, &o)) break;
            fputs(run_usage, stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (optind < argc) o.initial_program = argv[optind++];
    if (optind < argc) o.evaluator = argv[optind++];
    if (optind < argc) {
        kv_error("unexpected argument '%s'", argv[optind]);
        fputs(run_usage, stderr);
        return KV_EXIT_USAGE;
    }
    if (cli_check_models(&o) != KV_EXIT_OK) return KV_EXIT_USAGE;
    if (!o.config_path) {
        kv_error("--config FILE is required");
        fputs(run_usage, stderr);
        return KV_EXIT_USAGE;
    }
    if (dry) return dry_run(&o);
    if (check_run_config(&o) != 0) return KV_EXIT_USAGE;
    o.progress = isatty(STDERR_FILENO) && kv_log_get_level() <= KV_LOG_INFO;
    return kv_run_evolution(&o);
}
