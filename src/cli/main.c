/* kevolve: entry point and subcommand table. */
#include "cli/cli.h"
#include "eval/pyeval.h"
#include "backend/backend.h"
#include "judge/judge_server.h"
#include "runner/runner.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <stdio.h>
#include <string.h>

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"run", cmd_run, "start an evolution from a config"},
    {"resume", cmd_resume, "continue a stored run"},
    {"status", cmd_status, "summarise a stored run"},
    {"best", cmd_best, "write the best program of a run"},
    {"eval", cmd_eval, "evaluate one kernel candidate against a built-in task"},
    {"devices", cmd_devices, "list the devices each kernel backend sees"},
    {"tasks", cmd_tasks, "list the built-in kernel tasks: scenarios, tolerances, backends"},
    {"export", cmd_export, "export a run's best kernel per shape as a library"},
    {"serve", cmd_serve, "serve a run's live dashboard over HTTP"},
    {"report", cmd_report, "write a run's dashboard as one HTML file"},
    {"config-keys", cmd_config_keys, "print the reference of every config key (Markdown)"},
};

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: kevolve [--version] [--help] COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n`kevolve COMMAND --help` describes a command.\n"
            "\nexit codes, the same from every command:\n"
            "  0    done\n"
            "  1    the run failed (initial program did not evaluate, evaluator cannot run, ...)\n"
            "  2    usage or configuration error, or no run where one was named\n"
            "  3    the store is damaged, not a kevolve store, or from a newer kevolve\n"
            "  4    busy: another kevolve process is writing this run\n"
            "  5    the store or output folder cannot be written (disk full, I/O error)\n"
            "  130  interrupted (every finished evaluation is stored: kevolve resume)\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return KV_EXIT_USAGE;
    }
    if (cli_is_help(argv[1])) {
        usage(stdout);
        return KV_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("kevolve %s\n", KV_VERSION);
        return KV_EXIT_OK;
    }
    /* Internal: the warm Python pool's client, run by kevolve for each pooled
     * evaluation of an OpenEvolve evaluator (src/eval/pyeval_client.c). */
    if (strcmp(argv[1], "pyeval-client") == 0) return kv_pyeval_client_main(argc - 1, argv + 1);
    kv_pyeval_enable_native_client();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    /* The judge's runner (kernel/runner.h): not a user's command, so not listed. */
    if (strcmp(argv[1], "__runner") == 0)
        return kv_runner_main(argc - 1, argv + 1, kv_backend_rdev);
    /* A device's long-lived judge, started by the evaluator with its control
     * channel as descriptor 3 (kernel/judge_server.h): not listed either. */
    if (strcmp(argv[1], "__judge_server") == 0) return kv_judge_server_main(3);
    kv_error("unknown command '%s'", argv[1]);
    usage(stderr);
    return KV_EXIT_USAGE;
}
