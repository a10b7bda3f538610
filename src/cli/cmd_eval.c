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
#include "backend/backend.h"
#include "judge/tasks.h"
#include "util/buf.h"
#include "util/eval_job.h"
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
            "usage: kevolve eval --task NAME [--backend cpu|opencl|cuda|auto] [--device N]\n"
            "                    [--scenarios A,B,...] [--stage N] [--quick] [--json] [--seed N]\n"
            "                    [--timeout S] [--kernel-timeout S] [--device-wait S]\n"
            "                    [--cache-dir DIR] [--run-dir DIR] [--arch sm_XX]\n"
            "                    [--cpu-reference] [--baseline-max-age S] [--fresh-baseline]\n"
            "                    [--parent FILE] [--screen-keep F] [--energy] [--compile-only]\n"
            "                    [--print-job] CANDIDATE [CANDIDATE...]\n"
            "       kevolve eval --job FILE\n"
            "  The options write one evaluation job (docs/evaluation.md), which --print-job\n"
            "  prints instead of running; --job runs one from a file (what kevolve run hands\n"
            "  its workers). --stage 1: correctness only; 2: correctness and timing (default:\n"
            "  both); 3: compute-sanitizer memcheck (cuda). --backend auto picks by extension\n"
            "  (.cu cuda, .cl opencl, else cpu). --scenarios: names or tags (decode,\n"
            "  prefill) of the task's scenarios to time; default all. --timeout: the whole\n"
            "  evaluation's budget (900 s; waiting for the device is not counted);\n"
            "  --kernel-timeout: one call of the candidate (10 s, quick 5 s); --device-wait:\n"
            "  the longest wait for a device another process holds (600 s, then \"device\n"
            "  busy\"). --cpu-reference: the task's CPU reference even where it has a GPU\n"
            "  one (slow on big shapes). The baseline's timings are kept (in --run-dir, else\n"
            "  the cache) and timed again after --baseline-max-age seconds (900) or when the\n"
            "  device moved. --parent FILE: the parent's result (what kevolve eval printed for\n"
            "  it): time one scenario of each class first and stop when slower than\n"
            "  --screen-keep (the task's, 0.95 on the GPU's) times the parent there.\n"
            "  --energy: after timing each scenario, run its calls about a second more and\n"
            "  report the energy per call and the mean power (cuda: NVML's counter).\n"
            "  --compile-only: compile and print the artifact's hash, judge nothing (cuda\n"
            "  with --arch: no GPU needed). Prints {\"metrics\":...,\"artifacts\":...} on\n"
            "  stdout and nothing else. Several CANDIDATEs are judged in turn as a run's\n"
            "  children are (the device's long-lived judge serves them all; set\n"
            "  KEVOLVE_JUDGE_SERVER=0 for a judge each), one JSON line each:\n"
            "  {\"candidate\",\"status\",\"reason_code\",\"metrics\",\"artifacts\"}.\n"
            "\n"
            "exit codes: 0 judged (correct or not: the verdict is in the metrics), 1 the\n"
            "harness failed (no compiler, no device), 2 usage error (an unknown task or\n"
            "backend, no such CANDIDATE file, a CANDIDATE holding a NUL byte)\n");
}

/* The parent JOB screens against, from the file PATH: a parent document
 * ({"combined_score", "speedup": {...}}) or what `kevolve eval` printed for
 * the parent ({"metrics", "artifacts": {"scenarios": [...]}}). New
 * reference, or NULL with *ERR. */
static json_t *read_parent(const char *path, char **err)
{
    char *text = kv_read_file(path, NULL);
    json_t *doc = text ? kv_json_loads(text) : NULL;
    free(text);
    if (!json_is_object(doc)) {
        *err = kv_asprintf("--parent %s: not a JSON object", path);
        json_decref(doc);
        return NULL;
    }
    if (json_is_object(json_object_get(doc, "speedup"))) return doc;
    json_t *speedup = json_object();
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(json_object_get(doc, "artifacts"), "scenarios"), i, s)
    {
        json_t *x = json_object_get(s, "speedup");
        const char *name = json_string_value(json_object_get(s, "name"));
        if (name && json_is_number(x)) json_object_set(speedup, name, x);
    }
    json_t *score = json_object_get(json_object_get(doc, "metrics"), "combined_score");
    json_t *parent = json_pack("{s:o}", "speedup", speedup);
    if (json_is_number(score)) json_object_set(parent, "combined_score", score);
    json_decref(doc);
    return parent;
}

/* Splits "A,B,C" into J's scenario set (the strings and array into
 * *OWNED, to free). */
static void split_scenarios(const char *list, kv_job *j, char ***owned)
{
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    char **names = kv_calloc(n + 1, sizeof *names);
    size_t k = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len) names[k++] = kv_strndup(p, len);
        p += len + (p[len] == ',');
    }
    *owned = names;
    j->scenarios = (const char *const *)names;
    j->n_scenarios = k;
}

/* Checks what a user names before anything is compiled: the task, the
 * backend and the candidate file. Returns KV_EXIT_OK or KV_EXIT_USAGE
 * (said on stderr). */
static int check_names(const char *task, const char *backend, const char *candidate)
{
    if (backend && strcmp(backend, "auto") != 0 && !kv_backend_find(backend)) {
        fprintf(stderr, "kevolve eval: unknown backend '%s' (%s or auto)\n", backend,
                kv_backend_names());
        return KV_EXIT_USAGE;
    }
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
    char *why = NULL, *text = kv_read_source(candidate, &why);
    free(text);
    if (!text) {
        fprintf(stderr, "kevolve eval: %s\n", why);
        free(why);
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
            fprintf(stderr, "  %-12s %10.2f us (IQR %.2f)  speedup %.3fx  roofline %.1f%%",
                    json_string_value(json_object_get(s, "name")),
                    json_number_value(json_object_get(s, "median_us")),
                    json_number_value(json_object_get(s, "iqr_us")),
                    json_number_value(json_object_get(s, "speedup")),
                    100.0 * json_number_value(json_object_get(s, "roofline_fraction")));
            const json_t *en = json_object_get(s, "energy");
            if (json_object_get(s, "energy_uj"))
                fprintf(stderr, "  energy %.4g uJ (+-%.1f%%) at %.0f W",
                        json_number_value(json_object_get(s, "energy_uj")),
                        100.0 * json_number_value(json_object_get(en, "rel_err")),
                        json_number_value(json_object_get(s, "power_w")));
            else if (en)
                fprintf(stderr, "  energy: %s", json_string_value(json_object_get(en, "absent")));
            fputc('\n', stderr);
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
            /* The device's share: what the next evaluation waits for. */
            double held = json_number_value(json_object_get(a, "device_held_seconds"));
            double timed = json_number_value(json_object_get(prof, "timed"));
            /* On cuda the timed windows hold the judge's input writes too. */
            double writes = json_number_value(
                json_object_get(json_object_get(a, "profile_check_seconds"), "block_write"));
            if (held > 0)
                fprintf(stderr,
                        "  device held %.2f s (waited %.2f s), timed windows %.0f%% of it (the "
                        "calls alone, the judge's input writes aside: %.0f%%)\n",
                        held, json_number_value(json_object_get(a, "device_wait_seconds")),
                        100.0 * timed / held, 100.0 * (timed - writes) / held);
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
                                             {"device", required_argument, NULL, 'D'},
                                             {"scenarios", required_argument, NULL, 'N'},
                                             {"stage", required_argument, NULL, 's'},
                                             {"quick", no_argument, NULL, 'q'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"seed", required_argument, NULL, 'S'},
                                             {"timeout", required_argument, NULL, 'T'},
                                             {"kernel-timeout", required_argument, NULL, 'K'},
                                             {"device-wait", required_argument, NULL, 'L'},
                                             {"lock-wait", required_argument, NULL, 'L'},
                                             {"cache-dir", required_argument, NULL, 'c'},
                                             {"run-dir", required_argument, NULL, 'r'},
                                             {"arch", required_argument, NULL, 'a'},
                                             {"cpu-reference", no_argument, NULL, 'R'},
                                             {"baseline-max-age", required_argument, NULL, 'A'},
                                             {"fresh-baseline", no_argument, NULL, 'F'},
                                             {"parent", required_argument, NULL, 'P'},
                                             {"screen-keep", required_argument, NULL, 'k'},
                                             {"compile-only", no_argument, NULL, 'C'},
                                             {"energy", no_argument, NULL, 'E'},
                                             {"job", required_argument, NULL, 'J'},
                                             {"print-job", no_argument, NULL, 'W'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    kv_job o;
    kv_job_init(&o);
    const char *job_file = NULL, *parent_file = NULL, *scenarios = NULL;
    int json_only = 0, print_job = 0, options = 0;
    char *bad = NULL;
    optind = 1;
    opterr = 1;
    int c;
    while ((c = getopt_long(argc, argv, "t:b:D:N:s:qjS:T:K:L:c:r:a:RA:FP:k:CEJ:Wh", longopts,
                            NULL)) != -1) {
        options += c != 'J' && c != 'j' && c != 'h';
        switch (c) {
        case 't':
            o.task = optarg;
            break;
        case 'b':
            o.backend = optarg;
            break;
        case 'D':
            o.device = atoi(optarg);
            if (o.device < 0) bad = "--device must be 0 or more";
            break;
        case 'N':
            scenarios = optarg;
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
            o.limits.total_s = atof(optarg);
            break;
        case 'K':
            o.limits.call_s = atof(optarg);
            break;
        case 'L':
            o.limits.device_wait_s = atof(optarg);
            break;
        case 'c':
            o.cache_dir = optarg;
            break;
        case 'r':
            o.run_dir = optarg;
            break;
        case 'a':
            o.arch = optarg;
            break;
        case 'A':
            o.limits.baseline_max_age_s = atof(optarg);
            break;
        case 'F':
            o.fresh_baseline = 1;
            break;
        case 'E':
            o.energy = 1;
            break;
        case 'P':
            parent_file = optarg;
            break;
        case 'k':
            o.screen_keep = atof(optarg);
            if (!(o.screen_keep >= 0 && o.screen_keep <= 1))
                bad = "--screen-keep must be between 0 and 1";
            break;
        case 'C':
            o.compile_only = 1;
            break;
        case 'R':
            o.cpu_reference = 1;
            break;
        case 'J':
            job_file = optarg;
            break;
        case 'W':
            print_job = 1;
            break;
        case 'h':
            eval_usage(stdout);
            return KV_EXIT_OK;
        default:
            eval_usage(stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (job_file && (options || optind != argc)) {
        bad = "--job takes the whole evaluation from its file: give no other option or CANDIDATE";
    } else if (!job_file) {
        if (!bad && (optind >= argc || !o.task || o.stage < 0 || o.stage > 3))
            bad = !o.task          ? "--task is required"
                  : optind >= argc ? "no CANDIDATE file given"
                                   : "--stage must be 1, 2 or 3";
        if (!bad && optind < argc - 1 && (print_job || parent_file || o.compile_only))
            bad = "--print-job, --parent and --compile-only take one CANDIDATE";
        if (!bad) o.candidate = argv[optind];
    }
    if (bad) {
        fprintf(stderr, "kevolve eval: %s\n", bad);
        eval_usage(stderr);
        return KV_EXIT_USAGE;
    }
    char *err = NULL;
    char **names = NULL;
    json_t *parent = NULL;
    if (job_file) {
        if (kv_job_read(job_file, &o, &err) != 0) {
            fprintf(stderr, "kevolve eval: %s\n", err);
            free(err);
            return KV_EXIT_USAGE;
        }
    } else {
        if (scenarios) split_scenarios(scenarios, &o, &names);
        if (parent_file && !(parent = read_parent(parent_file, &err))) {
            fprintf(stderr, "kevolve eval: %s\n", err);
            free(err);
            return KV_EXIT_USAGE;
        }
        o.parent = parent;
    }
    int named = check_names(o.task, o.backend, o.candidate);
    if (named != KV_EXIT_OK) {
        json_decref(parent);
        for (char **n = names; n && *n; n++)
            free(*n);
        free(names);
        kv_job_clear(&o);
        return named;
    }
    int rc = KV_EXIT_OK;
    json_t *result = NULL;
    if (print_job) {
        json_t *doc = kv_job_to_json(&o);
        char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        printf("%s\n", text);
        free(text);
        json_decref(doc);
    } else if (!job_file && optind < argc - 1) {
        for (int i = optind + 1; i < argc && rc == KV_EXIT_OK; i++)
            rc = check_names(o.task, o.backend, argv[i]);
        if (rc == KV_EXIT_OK) rc = kv_cli_eval_many(&o, argv + optind, argc - optind);
    } else if (kv_kernel_eval(&o, &result, &err) != 0) {
        fprintf(stderr, "kevolve eval: %s\n", err ? err : "evaluation failed");
        rc = KV_EXIT_FAILURE;
    } else {
        char *text = kv_json_dumps(result);
        printf("%s\n", text);
        fflush(stdout);
        free(text);
        if (!json_only && !o.compile_only) print_verdict(result);
    }
    free(err);
    json_decref(result);
    json_decref(parent);
    for (char **n = names; n && *n; n++)
        free(*n);
    free(names);
    kv_job_clear(&o);
    return rc;
}
