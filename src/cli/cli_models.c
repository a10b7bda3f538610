/* The options `run` and `resume` share: the endpoint and the models that
 * replace the config's (OpenEvolve's --api-base, --primary-model,
 * --secondary-model). */
#include "cli/cli.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

int cli_model_option(int opt, const char *arg, kv_run_options *o)
{
    switch (opt) {
    case CLI_OPT_API_BASE:
        o->api_base = arg;
        return 1;
    case CLI_OPT_PRIMARY_MODEL:
        o->primary_model = arg;
        return 1;
    case CLI_OPT_SECONDARY_MODEL:
        o->secondary_model = arg;
        return 1;
    default:
        return 0;
    }
}

int cli_check_models(const kv_run_options *o)
{
    if (o->secondary_model && !o->primary_model) {
        kv_error("--secondary-model needs --primary-model");
        return KV_EXIT_USAGE;
    }
    return KV_EXIT_OK;
}
