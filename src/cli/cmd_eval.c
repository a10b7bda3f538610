/* `kevolve eval`: evaluates one kernel candidate with the built-in harness,
 * outside any evolution. It is also the worker command the evaluation
 * pipeline runs for kernel tasks (a re-exec of the kevolve binary), so its
 * stdout is exactly the external-evaluator protocol: one JSON object,
 * {"metrics": {...}, "artifacts": {...}}. A short verdict for people goes
 * to stderr. Exit status: 0 when the candidate was judged (even when it is
 * wrong: the verdict is in the metrics), 2 for usage errors (an unknown
 * task or backend, no such candidate file), 1 when the harness itself
 * failed (no compiler, no device). */
#include "cli/cli.h"
#include "kernel/harness.h"
#include "kernel/tasks.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

#include <kevolve/kevolve.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void eval_usage(FILE *f)
{
    fprintf(f,
            "usage: kevolve eval --task NAME [--backend cpu|opencl|cuda|auto] [--stage N]\n"
            "                    [--quick] [--json] [--seed N] [--timeout S] [--kernel-timeout S]\n"
            "                    [--cache-dir DIR] [--arch sm_XX] [--cpu-reference]\n"
            "                    [--baseline-max-age S] [--fresh-baseline] [--lock-wait S]\n"
            "                    [--screen] [--screen-keep F] [--compile-only]\n"
            "                    CANDIDATE\n"
            "  --stage 1: correctness only; 2: correctness and timing (default: both);\n"
            "  3: compute-sanitizer memcheck (cuda). --backend auto picks by extension\n"
            "  (.cu cuda, .cl opencl, else cpu). --cpu-reference: the task's CPU reference\n"
            "  even where it has a GPU one (slow on big shapes). The baseline's timings\n"
            "  are kept (in $KEVOLVE_RUN_DIR, else the cache) and timed again after\n"
            "  --baseline-max-age seconds (900) or when the device moved. --screen: with\n"
            "  $KEVOLVE_PARENT_METRICS (the parent's metrics, as kevolve run sets it),\n"
            "  time one scenario of each class first and stop when slower than\n"
            "  --screen-keep (0.95) times the parent there. --compile-only: compile and\n"
            "  print the artifact's hash, judge nothing (cuda with --arch: no GPU needed).\n"
            "  Prints\n"
            "  {\"metrics\":...,\"artifacts\":...} on stdout and nothing else.\n"
            "\n"
            "exit codes: 0 judged (correct or not: the verdict is in the metrics), 1 the\n"
            "harness failed (no compiler, no device), 2 usage error (an unknown task or\n"
            "backend, no such CANDIDATE file)\n");
}

/* Checks what a user names before anything is compiled: the task and the
 * candidate file. Returns KV_EXIT_OK or KV_EXIT_USAGE (said on stderr). */
static int check_names(const char *task, const char *candidate)
{
    if (!kv_task_find(task)) {
        kv_buf known = KV_BUF_INIT;
        kv_buf_puts(&known, "");
        for (size_t i = 0; kv_task_at(i); i++)
            kv_buf_printf(&known, "%s%s", i ? ", " : "", kv_task_at(i)->name);
        fprintf(stderr, "kevolve eval: unknown task '%s' (known: %s)\n", task, known.data);
        kv_buf_free(&known);
        return KV_EXIT_USAGE;
    }
    if (!kv_is_file(candidate)) {
        fprintf(stderr, "kevolve eval: %s: %s\n", candidate,
                kv_is_dir(candidate) ? "is a folder, not a candidate file" : "no such file");
        return KV_EXIT_USAGE;
    }
    return KV_EXIT_OK;
}

/* Prints the one-line verdict of RESULT on stderr. */
static void print_verdict(const json_t *result)
{
    const json_t *m = json_object_get(result, "metrics");
    const json_t *a = json_object_get(result, "artifacts");
    double score = json_number_value(json_object_get(m, "combined_score"));
    if (json_integer_value(json_object_get(m, "correct")) == 1) {
        fprintf(stderr, "verdict: correct, combined_score %.4g\n", score);
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(a, "scenarios"), i, s)
        {
            if (!json_object_get(s, "median_us")) continue;
            fprintf(stderr, "  %-12s %10.2f us (IQR %.2f)  speedup %.3fx  roofline %.1f%%\n",
                    json_string_value(json_object_get(s, "name")),
                    json_number_value(json_object_get(s, "median_us")),
                    json_number_value(json_object_get(s, "iqr_us")),
                    json_number_value(json_object_get(s, "speedup")),
                    100.0 * json_number_value(json_object_get(s, "roofline_fraction")));
        }
        /* Where the evaluation's time went, to see what to make cheaper. */
        const json_t *prof = json_object_get(a, "profile_seconds");
        if (prof) {
            fprintf(stderr,
                    "  worker %.1f s:", json_number_value(json_object_get(a, "worker_seconds")));
            const char *k;
            const json_t *v;
            json_object_foreach((json_t *)prof, k, v)
                fprintf(stderr, " %s %.2f", k, json_number_value(v));
            fputc('\n', stderr);
        }
    } else {
        fprintf(stderr, "verdict: rejected (%s): %s\n",
                json_string_value(json_object_get(a, "reason")),
                json_string_value(json_object_get(a, "reason_detail")));
    }
}

int cmd_eval(int argc, char **argv)
{
    static const struct option longopts[] = {{"task", required_argument, NULL, 't'},
                                             {"backend", required_argument, NULL, 'b'},
                                             {"stage", required_argument, NULL, 's'},
                                             {"quick", no_argument, NULL, 'q'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"seed", required_argument, NULL, 'S'},
                                             {"timeout", required_argument, NULL, 'T'},
                                             {"kernel-timeout", required_argument, NULL, 'K'},
                                             {"cache-dir", required_argument, NULL, 'c'},
                                             {"arch", required_argument, NULL, 'a'},
                                             {"cpu-reference", no_argument, NULL, 'R'},
                                             {"baseline-max-age", required_argument, NULL, 'A'},
                                             {"fresh-baseline", no_argument, NULL, 'F'},
                                             {"lock-wait", required_argument, NULL, 'L'},
                                             {"screen", no_argument, NULL, 'P'},
                                             {"screen-keep", required_argument, NULL, 'k'},
                                             {"compile-only", no_argument, NULL, 'C'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    kv_kernel_opts o;
    kv_kernel_opts_init(&o);
    const char *backend = "auto";
    int json_only = 0;
    optind = 1;
    opterr = 1;
    int c;
    while ((c = getopt_long(argc, argv, "t:b:s:qjS:T:K:c:a:RA:FL:Pk:Ch", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            o.task = optarg;
            break;
        case 'b':
            backend = optarg;
            break;
        case 's': {
            char *end;
            long v = strtol(optarg, &end, 10);
            o.stage = *optarg && !*end && v >= 0 && v <= 3 ? (int)v : -1;
            break;
        }
        case 'q':
            o.quick = 1;
            break;
        case 'j':
            json_only = 1;
            break;
        case 'S':
            o.seed = strtoull(optarg, NULL, 0);
            break;
        case 'T':
            o.total_timeout_s = atof(optarg);
            break;
        case 'K':
            o.kernel_timeout_s = atof(optarg);
            break;
        case 'c':
            o.cache_dir = optarg;
            break;
        case 'a':
            o.arch = optarg;
            break;
        case 'A':
            o.baseline_max_age_s = atof(optarg);
            break;
        case 'F':
            o.fresh_baseline = 1;
            break;
        case 'L':
            o.lock_wait_s = atof(optarg);
            break;
        case 'P':
            o.parent_metrics = getenv("KEVOLVE_PARENT_METRICS");
            break;
        case 'k':
            o.screen_keep = atof(optarg);
            break;
        case 'C':
            o.compile_only = 1;
            break;
        case 'R':
            o.cpu_reference = 1;
            break;
        case 'h':
            eval_usage(stdout);
            return KV_EXIT_OK;
        default:
            eval_usage(stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (optind != argc - 1 || !o.task || o.stage < 0 || o.stage > 3) {
        fprintf(stderr, "kevolve eval: %s\n",
                !o.task                      ? "--task is required"
                : optind >= argc             ? "no CANDIDATE file given"
                : o.stage < 0 || o.stage > 3 ? "--stage must be 1, 2 or 3"
                                             : "exactly one CANDIDATE file expected");
        eval_usage(stderr);
        return KV_EXIT_USAGE;
    }
    o.candidate = argv[optind];
    int named = check_names(o.task, o.candidate);
    if (named != KV_EXIT_OK) return named;
    if (strcmp(backend, "auto") == 0) {
        o.backend = kv_backend_kind_for_path(o.candidate);
    } else if (kv_backend_kind_parse(backend, &o.backend) != 0) {
        fprintf(stderr, "kevolve eval: unknown backend '%s' (cpu, opencl, cuda or auto)\n",
                backend);
        return KV_EXIT_USAGE;
    }
    json_t *result = NULL;
    char *err = NULL;
    if (kv_kernel_eval(&o, &result, &err) != 0) {
        fprintf(stderr, "kevolve eval: %s\n", err ? err : "evaluation failed");
        free(err);
        return KV_EXIT_FAILURE;
    }
    char *text = kv_json_dumps(result);
    printf("%s\n", text);
    fflush(stdout);
    free(text);
    if (!json_only && !o.compile_only) print_verdict(result);
    json_decref(result);
    return KV_EXIT_OK;
}
