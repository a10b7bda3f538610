/* kevolve config-keys: the reference of every config key, from the key table. */
#include "cli/cli.h"
#include "config/config.h"

#include <kevolve/kevolve.h>

#include <stdio.h>
#include <stdlib.h>

int cmd_config_keys(int argc, char **argv)
{
    if (argc > 1 && cli_is_help(argv[1])) {
        puts("usage: kevolve config-keys\n\nPrints every config key kevolve reads, with its "
             "type, default and meaning, as Markdown.\n\nexit codes: 0 printed, 2 usage error (an "
             "argument)");
        return KV_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: kevolve config-keys\n");
        return KV_EXIT_USAGE;
    }
    char *text = kv_config_reference_markdown();
    fputs(text, stdout);
    free(text);
    return KV_EXIT_OK;
}
