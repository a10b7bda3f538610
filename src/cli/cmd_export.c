/* `kevolve export`: a run's fastest correct program per scenario as one
 * library (src/export/export.h), judged as a candidate of the task before
 * it is written. Exit status: export_usage's. */
#include "cli/cli.h"
#include "export/export.h"
#include "util/buf.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void export_usage(FILE *f)
{
    fprintf(f,
            "usage: kevolve export RUN -o DIR [--task NAME] [--torch] [--against-standard]\n"
            "                      [--python PYTHON] [--quick] [--compile-only] [--force]\n"
            "                      [--cache-dir DIR] [--arch sm_XX]\n"
            "  Gathers the fastest correct program of RUN (an output folder or its run.db) for\n"
            "  each scenario of its task into one library in DIR: one source in the backend's\n"
            "  language with a dispatcher by shape, its header, the compiled library and\n"
            "  manifest.json. The library is judged as a candidate of the task (every scenario\n"
            "  and the held-out shapes) before DIR is written; --compile-only only compiles it\n"
            "  (a machine without the device; with --arch on cuda). --task: export for NAME, a "
            "task of the same\n"
            "  kernels as the run's (gqa_attention for a gqa_attention_search run: scenarios\n"
            "  the run did not time go to the nearest it did). --torch adds DIR/torch, a PyTorch\n"
            "  operator and a transformers attention function (gqa_attention tasks);\n"
            "  --against-standard (a cuda run, a GPU and PyTorch) times the library against\n"
            "  SDPA's cuDNN and flash on every scenario and records which to call per shape.\n"
            "  DIR must be new or empty; --force replaces an earlier export there, and only\n"
            "  when every file in DIR is one its manifest.json lists (a file of yours in DIR\n"
            "  makes export refuse, naming it). The folder, the options, PyTorch and the GPU\n"
            "  are checked before the library is compiled.\n"
            "\n"
            "exit codes: 0 written; 1 refused, nothing written (an empty run, a run of no\n"
            "kernel task, no correct program, a library that fails its check, no PyTorch or\n"
            "no GPU for --against-standard, a file that cannot be written); 2 usage error,\n"
            "nothing written (an unknown option or --task, no such RUN, a --task whose kernels do "
            "not fit\n"
            "the run's, an option the run's task or backend cannot serve, DIR not empty or\n"
            "holding files no export wrote); 3 the store is damaged or not a kevolve store;\n"
            "5 the store cannot be read (I/O error)\n");
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"task", required_argument, NULL, 't'},
                                             {"torch", no_argument, NULL, 'T'},
                                             {"against-standard", no_argument, NULL, 'S'},
                                             {"python", required_argument, NULL, 'p'},
                                             {"quick", no_argument, NULL, 'q'},
                                             {"compile-only", no_argument, NULL, 'C'},
                                             {"force", no_argument, NULL, 'f'},
                                             {"cache-dir", required_argument, NULL, 'c'},
                                             {"arch", required_argument, NULL, 'a'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    kv_export_opts o = {0};
    optind = 1;
    opterr = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:t:TSp:qCfc:a:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            o.out_dir = optarg;
            break;
        case 't':
            o.task = optarg;
            break;
        case 'T':
            o.torch = 1;
            break;
        case 'S':
            o.against_standard = o.torch = 1;
            break;
        case 'p':
            o.python = optarg;
            break;
        case 'q':
            o.quick = 1;
            break;
        case 'C':
            o.compile_only = 1;
            break;
        case 'f':
            o.force = 1;
            break;
        case 'c':
            o.cache_dir = optarg;
            break;
        case 'a':
            o.arch = optarg;
            break;
        case 'h':
            export_usage(stdout);
            return KV_EXIT_OK;
        default:
            export_usage(stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (optind != argc - 1 || !o.out_dir || (o.compile_only && o.against_standard)) {
        kv_error("export: %s", optind != argc - 1 ? "name one RUN"
                               : !o.out_dir       ? "-o DIR is required"
                                                  : "--against-standard runs the library: not "
                                                    "with --compile-only");
        export_usage(stderr);
        return KV_EXIT_USAGE;
    }
    o.run = argv[optind];
    char *path = cli_store_path(o.run);
    int rc;
    kv_store *st = cli_open_store_readonly(path, &rc);
    free(path);
    if (!st) return rc;
    char *err = NULL;
    int erc = kv_export(st, &o, &err);
    if (erc != 0) {
        kv_error("export: %s; nothing written to %s", err ? err : "failed", o.out_dir);
        free(err);
        kv_store_close(st);
        return erc == KV_EXPORT_USAGE ? KV_EXIT_USAGE : KV_EXIT_FAILURE;
    }
    kv_store_close(st);
    kv_info("exported %s to %s (manifest.json says what serves each scenario)", o.run, o.out_dir);
    return KV_EXIT_OK;
}
