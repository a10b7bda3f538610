/* Helpers the subcommands share: naming a run's store and opening it. */
#include "cli/cli.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"

#include <stdlib.h>

char *cli_store_path(const char *arg)
{
    return kv_is_dir(arg) ? kv_path_join(arg, "run.db") : kv_strdup(arg);
}

kv_store *cli_open_store_readonly(const char *path)
{
    kv_store *st = NULL;
    char *err = NULL;
    if (kv_store_open(path, KV_STORE_READONLY, &st, &err) != 0) {
        kv_error("%s", err ? err : "cannot open the store");
        free(err);
        return NULL;
    }
    return st;
}
