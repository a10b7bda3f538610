/* The kevolve command: one file per subcommand, each with one entry
 * cmd_NAME(argc, argv) where argv[0] is the subcommand's name, dispatched from
 * the table in main.c. Each returns a KV_EXIT_* code (include/kevolve/kevolve.h). */
#ifndef KV_CLI_CLI_H
#define KV_CLI_CLI_H

#include "store/store.h"

int cmd_run(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_config_keys(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* The store a command line names: ARG itself, or ARG/run.db when ARG is an
 * output folder (malloc'd). */
char *cli_store_path(const char *arg);
/* Opens PATH read-only; NULL (the reason logged) when it cannot. */
kv_store *cli_open_store_readonly(const char *path);

/* 1 when ARG is -h or --help. */
int cli_is_help(const char *arg);

#endif
