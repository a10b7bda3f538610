/* Helpers the subcommands share: naming a run's store and opening it. */
#include "cli/cli.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <stdlib.h>

char *cli_store_path(const char *arg)
{
    return kv_is_dir(arg) ? kv_path_join(arg, "run.db") : kv_strdup(arg);
}

kv_store *cli_open_store_readonly(const char *path, int *rc)
{
    kv_store *st = NULL;
    char *err = NULL;
    kv_store_fault fault = KV_STORE_FAULT_NONE;
    if (kv_store_open_ex(path, KV_STORE_READONLY, &st, &err, &fault) != 0) {
        kv_error("%s", err ? err : "cannot open the store");
        free(err);
        *rc = kv_store_fault_exit(fault);
        if (*rc == KV_EXIT_OK) *rc = KV_EXIT_FAILURE;
        return NULL;
    }
    *rc = KV_EXIT_OK;
    return st;
}

int cli_store_failed(kv_store *st)
{
    char *why = kv_store_fault_text(st);
    kv_error("%s", why);
    free(why);
    int rc = kv_store_fault_exit(kv_store_last_fault(st));
    return rc == KV_EXIT_OK ? KV_EXIT_FAILURE : rc;
}

int cli_check_store(const char *path, int full)
{
    int rc;
    kv_store *st = cli_open_store_readonly(path, &rc);
    if (!st) return rc;
    rc = KV_EXIT_OK;
    if (full && kv_store_check(st) != 0) rc = cli_store_failed(st);
    kv_store_close(st);
    return rc;
}
