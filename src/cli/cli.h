/* The kevolve command: one file per subcommand, each with one entry
 * cmd_NAME(argc, argv) where argv[0] is the subcommand's name, dispatched from
 * the table in main.c. Each returns a KV_EXIT_* code (include/kevolve/kevolve.h). */
#ifndef KV_CLI_CLI_H
#define KV_CLI_CLI_H

#include "config/objectives.h"
#include "store/store.h"
#include "util/eval_job.h"

#include <kevolve/kevolve.h>

int cmd_run(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_config_keys(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* `kevolve eval` with several candidates (cmd_eval_many.c): TMPL's job for
 * each of CANDS[0..N), in turn, through the evaluator and the device's
 * long-lived judge; one JSON line each. */
int kv_cli_eval_many(const kv_job *tmpl, char *const *cands, int n);

/* The store a command line names: ARG itself, or ARG/run.db when ARG is an
 * output folder (malloc'd). */
char *cli_store_path(const char *arg);
/* Opens PATH read-only; NULL (the reason logged) when it cannot, with the
 * exit code for that reason in *RC (kv_store_fault_exit: the same in every
 * subcommand). */
kv_store *cli_open_store_readonly(const char *path, int *rc);
/* After a failed read of ST: logs the store's reason, worded the same in
 * every subcommand, and returns its exit code (KV_EXIT_FAILURE when the
 * store names no kind of failure). */
int cli_store_failed(kv_store *st);
/* For commands that hand PATH to code that cannot say why it failed (serve,
 * report): when PATH cannot be opened, or its integrity check fails, logs
 * why and returns the exit code; KV_EXIT_OK when it looks sound. */
int cli_check_store(const char *path, int full);

/* getopt values of the options run and resume share (cli_models.c), and
 * their entries of a struct option array. */
enum { CLI_OPT_API_BASE = 'A', CLI_OPT_PRIMARY_MODEL = 'P', CLI_OPT_SECONDARY_MODEL = 'S' };
#define CLI_MODEL_OPTIONS                                                                          \
    {"api-base", required_argument, NULL, CLI_OPT_API_BASE},                                       \
        {"primary-model", required_argument, NULL, CLI_OPT_PRIMARY_MODEL},                         \
    {                                                                                              \
        "secondary-model", required_argument, NULL, CLI_OPT_SECONDARY_MODEL                        \
    }
/* Stores ARG of option OPT in O when OPT is one of those: returns 1, else 0. */
int cli_model_option(int opt, const char *arg, kv_run_options *o);
/* KV_EXIT_USAGE (said) for --secondary-model without --primary-model, else
 * KV_EXIT_OK. */
int cli_check_models(const kv_run_options *o);

/* 1 when ARG is -h or --help. */
int cli_is_help(const char *arg);

/* A run's programs that evaluated OK and their Pareto front over some
 * objectives (config/objectives.h; cli_pareto.c). */
typedef struct cli_front {
    kv_program **p; /* the programs, in id order */
    size_t n, cap;
    kv_objective *o; /* the objectives */
    size_t no;
    double *vals; /* n x no values; NAN where a program has none or was screened out */
    size_t *idx;  /* the front: indices into p, ascending */
    size_t m;
    size_t screened; /* programs the screen stopped: in p, never on the front */
} cli_front;
/* Loads ST's programs that evaluated OK (their sources when WITH_SOURCE)
 * and their front over the comma-separated objectives LIST into F (free
 * with cli_front_free). KV_EXIT_OK, or an exit code with the reason said. */
int cli_front_load(kv_store *st, const char *list, int with_source, cli_front *f);
void cli_front_free(cli_front *f);

#endif
