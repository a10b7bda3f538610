/* `kevolve devices`: what each backend of the table sees on this machine
 * (the devices an evaluation can be placed on, evaluator.devices), listed
 * from worker children so that a driver that crashes takes nothing down.
 * Exit status: devices_usage's; a backend that is not built or sees no
 * device is reported, not an error. */
#include "cli/cli.h"
#include "backend/backend.h"
#include "judge/device_check.h"
#include "kernel/harness.h"
#include "util/buf.h"
#include "util/json.h"

#include <kevolve/kevolve.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void devices_usage(FILE *f)
{
    fprintf(f,
            "usage: kevolve devices [--backend NAME|auto [--for FILE]] [--json]\n"
            "       kevolve devices --check N --backend NAME [--json]\n"
            "  Lists the devices each kernel backend (%s) sees: the indices\n"
            "  evaluator.devices and `kevolve eval --device` take. --backend auto\n"
            "  with --for FILE: the backend a candidate FILE's suffix names (--for is\n"
            "  ignored with a named backend). --check N: whether device N works (it is\n"
            "  opened and a small arena goes to it and back): exit 0, or 1 with the\n"
            "  reason, as the evaluator asks before a suspect device gets more work;\n"
            "  with --json, one line {\"backend\", \"device\", \"works\", \"why\"}.\n"
            "  A backend that is not built or sees no device is listed as such.\n"
            "\n"
            "exit codes: 0 listed (or --check: the device works), 1 --check: the device\n"
            "does not work, 2 usage error (an unknown option or backend, --check without a\n"
            "device index and a named --backend)\n",
            kv_backend_names());
}

/* One backend's entry: {"backend", "devices": [...]} or {"backend", "error"}. */
static json_t *entry(const kv_backend *b)
{
    json_t *list = NULL;
    char *err = NULL;
    json_t *e = json_pack("{s:s}", "backend", b->name);
    if (kv_kernel_devices(b->name, &list, &err) == 0)
        json_object_set_new(e, "devices", list);
    else
        json_object_set_new(e, "error", json_string(err ? err : "cannot list its devices"));
    free(err);
    return e;
}

static void print_entry(const json_t *e)
{
    const char *name = json_string_value(json_object_get(e, "backend"));
    const char *err = json_string_value(json_object_get(e, "error"));
    if (err) {
        printf("%s: %s\n", name, err);
        return;
    }
    printf("%s:\n", name);
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(e, "devices"), i, d)
    {
        printf("  %lld  %s", (long long)json_integer_value(json_object_get(d, "index")),
               json_string_value(json_object_get(d, "name")));
        static const char *facts[] = {"arch",        "type", "platform",      "driver",
                                      "cuda_driver", "cpus", "compute_units", "memory_bytes"};
        for (size_t k = 0; k < sizeof facts / sizeof facts[0]; k++) {
            json_t *v = json_object_get(d, facts[k]);
            if (json_is_string(v) && *json_string_value(v))
                printf(", %s %s", facts[k], json_string_value(v));
            else if (json_is_integer(v) && strcmp(facts[k], "memory_bytes") == 0)
                printf(", %.1f GiB", (double)json_integer_value(v) / (1u << 30));
            else if (json_is_integer(v))
                printf(", %s %lld", facts[k], (long long)json_integer_value(v));
        }
        putchar('\n');
    }
}

int cmd_devices(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"backend", required_argument, NULL, 'b'}, {"for", required_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'j'},          {"check", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    const char *backend = NULL, *file = NULL, *check = NULL;
    int json = 0, c;
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "b:f:jc:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            check = optarg;
            break;
        case 'b':
            backend = optarg;
            break;
        case 'f':
            file = optarg;
            break;
        case 'j':
            json = 1;
            break;
        case 'h':
            devices_usage(stdout);
            return KV_EXIT_OK;
        default:
            devices_usage(stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (check) {
        char *end = NULL;
        long n = strtol(check, &end, 10);
        if (!backend || strcmp(backend, "auto") == 0 || !*check || *end || n < 0 || n > 4095) {
            fprintf(stderr, "kevolve devices: --check takes a device index and a named "
                            "--backend\n");
            return KV_EXIT_USAGE;
        }
        char *err = NULL;
        int works = kv_kernel_check_device(backend, (int)n, &err) == 0;
        if (json) {
            json_t *o = json_pack("{s:s,s:I,s:b}", "backend", backend, "device", (json_int_t)n,
                                  "works", works);
            if (!works) json_object_set_new(o, "why", json_string(err ? err : ""));
            char *line = json_dumps(o, JSON_COMPACT);
            printf("%s\n", line ? line : "{}");
            free(line);
            json_decref(o);
        } else if (!works) {
            printf("%s device %ld: not working: %s\n", backend, n, err ? err : "");
        } else {
            printf("%s device %ld: ok\n", backend, n);
        }
        free(err);
        return works ? KV_EXIT_OK : KV_EXIT_FAILURE;
    }
    const kv_backend *only = NULL;
    if (backend && strcmp(backend, "auto") == 0)
        only = kv_backend_for_path(file ? file : "");
    else if (backend && !(only = kv_backend_find(backend))) {
        fprintf(stderr, "kevolve devices: unknown backend '%s' (%s or auto)\n", backend,
                kv_backend_names());
        return KV_EXIT_USAGE;
    }
    if (optind != argc) {
        devices_usage(stderr);
        return KV_EXIT_USAGE;
    }
    json_t *all = json_array();
    for (size_t i = 0; kv_backend_at(i); i++)
        if (!only || only == kv_backend_at(i)) json_array_append_new(all, entry(kv_backend_at(i)));
    if (json) {
        char *text = kv_json_dumps(all);
        printf("%s\n", text);
        free(text);
    } else {
        size_t i;
        json_t *e;
        json_array_foreach(all, i, e) print_entry(e);
    }
    json_decref(all);
    return KV_EXIT_OK;
}
