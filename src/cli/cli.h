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
int cmd_devices(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_config_keys(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_report(int argc, char **argv);

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

/* 1 when ARG is -h or --help. */
int cli_is_help(const char *arg);

#endif
