/* kevolve status: summarise a stored run (works while the run goes on). */
#include "cli/cli.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char status_usage[] =
    "usage: kevolve status RUN_DB_OR_OUTPUT_DIR [--json]\n"
    "\n"
    "Summarises a run: its manifest, programs by status, the best program, each\n"
    "island, failures counted by reason code (compile_error, wrong_result,\n"
    "evaluator_crash, non_finite_fitness, ...), and each mutator's statistics\n"
    "(draws, children that beat their parent, failures, reward, share of the next\n"
    "draws). Safe while the run is writing.\n"
    "\n"
    "options:\n"
    "      --json   print the summary as one JSON object\n"
    "  -h, --help   this text\n"
    "\n"
    "exit codes: 0 printed, 2 usage error or no such store, 3 the store is damaged or\n"
    "not a kevolve store, 5 I/O error (see `kevolve --help`)\n";

#define MAX_ISLANDS 256

typedef struct summary {
    int64_t max_iteration;
    int64_t island_programs[MAX_ISLANDS];
    double island_best[MAX_ISLANDS];
    int n_islands;
    int64_t migrants;
} summary;

static int collect(kv_program *p, void *ud)
{
    summary *s = ud;
    if (p->iteration > s->max_iteration) s->max_iteration = p->iteration;
    if (p->status == KV_STATUS_OK && p->island >= 0 && p->island < MAX_ISLANDS) {
        if (p->island >= s->n_islands) {
            for (int i = s->n_islands; i <= p->island; i++)
                s->island_best[i] = NAN;
            s->n_islands = p->island + 1;
        }
        s->island_programs[p->island]++;
        if (!isnan(p->fitness) &&
            (isnan(s->island_best[p->island]) || p->fitness > s->island_best[p->island]))
            s->island_best[p->island] = p->fitness;
        if (p->is_migrant) s->migrants++;
    }
    return 0;
}

/* The mutators' table for people: one line per arm. */
static void print_mutators(const json_t *mutators)
{
    if (json_array_size(mutators) == 0) return;
    printf("mutators   %-24s %6s %9s %8s %12s %6s\n", "arm", "draws", "successes", "failures",
           "reward/draw", "share");
    size_t i;
    json_t *m;
    json_array_foreach(mutators, i, m)
    {
        json_int_t draws = json_integer_value(json_object_get(m, "draws"));
        double reward = json_number_value(json_object_get(m, "reward_sum"));
        json_t *w = json_object_get(m, "weight");
        char share[16] = "-";
        if (json_is_number(w)) snprintf(share, sizeof share, "%.0f%%", 100 * json_number_value(w));
        printf("           %-24s %6lld %9lld %8lld %12.4g %6s\n",
               json_string_value(json_object_get(m, "arm")), (long long)draws,
               (long long)json_integer_value(json_object_get(m, "successes")),
               (long long)json_integer_value(json_object_get(m, "failures")),
               draws > 0 ? reward / (double)draws : 0.0, share);
    }
}

/* A kernel task's best program per scenario (the store's rows). */
static void print_scenarios(const json_t *rows)
{
    if (!json_array_size(rows)) return;
    printf("scenarios  %-28s %12s %9s %8s  %s\n", "best per scenario", "median", "speedup",
           "roofline", "program");
    size_t i;
    const json_t *r;
    json_array_foreach(rows, i, r)
    {
        double roof = json_number_value(json_object_get(r, "roofline_fraction"));
        printf("           %-28s %9.2f us %8.3fx %7.1f%%  %lld (of %lld)\n",
               json_string_value(json_object_get(r, "name")),
               json_number_value(json_object_get(r, "median_us")),
               json_number_value(json_object_get(r, "speedup")), 100.0 * roof,
               (long long)json_integer_value(json_object_get(r, "program_id")),
               (long long)json_integer_value(json_object_get(r, "programs")));
    }
}

/* Meta value KEY as JSON: an integer when it is one (the seed, the
 * iterations), else a string; null when absent. */
static json_t *meta_json(kv_store *st, const char *key)
{
    char *v = kv_store_get_meta(st, key);
    json_t *j = json_null();
    if (v) {
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        j = *v && !*end && !errno ? json_integer((json_int_t)n) : json_string(v);
    }
    free(v);
    return j;
}

/* The run's Pareto front over its objectives, {"objectives": "a,b", "front":
 * [ids]}, or NULL when it named fewer than two (or the store failed). */
static json_t *pareto_json(kv_store *st)
{
    char *list = kv_store_get_meta(st, "objectives");
    json_t *out = NULL;
    cli_front f;
    if (list && strchr(list, ',') && cli_front_load(st, list, 0, &f) == KV_EXIT_OK) {
        json_t *ids = json_array();
        for (size_t k = 0; k < f.m; k++)
            json_array_append_new(ids, json_integer((json_int_t)f.p[f.idx[k]]->id));
        out = json_pack("{s:s,s:o}", "objectives", list, "front", ids);
    }
    if (list && strchr(list, ',')) cli_front_free(&f);
    free(list);
    return out;
}

/* JSON value V as text for people ("?" when absent). */
static void print_value(const json_t *v)
{
    if (json_is_integer(v))
        printf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        printf("%s", json_is_string(v) ? json_string_value(v) : "?");
}

int cmd_status(int argc, char **argv)
{
    static const struct option long_options[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int as_json = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
        if (opt == 'j')
            as_json = 1;
        else if (opt == 'h') {
            fputs(status_usage, stdout);
            return KV_EXIT_OK;
        } else {
            fputs(status_usage, stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fputs(status_usage, stderr);
        return KV_EXIT_USAGE;
    }
    char *path = cli_store_path(argv[optind]);
    int rc;
    kv_store *st = cli_open_store_readonly(path, &rc);
    if (!st) {
        free(path);
        return rc;
    }
    summary s = {0};
    int64_t counts[KV_STATUS_COUNT] = {0};
    json_t *reasons = NULL, *mutators = NULL, *scenarios = NULL, *devices = NULL;
    if (kv_store_status_counts(st, counts) != 0 || kv_store_each_program(st, -1, 0, collect, &s) ||
        !(reasons = kv_store_failure_counts(st, 50)) || !(mutators = kv_store_mutator_stats(st)) ||
        !(scenarios = kv_store_best_per_scenario(st)) || !(devices = kv_store_devices(st)))
        rc = cli_store_failed(st);
    if (!devices) devices = json_array();
    if (!reasons) reasons = json_array();
    if (!mutators) mutators = json_array();
    if (!scenarios) scenarios = json_array();
    kv_program *best = rc == KV_EXIT_OK ? kv_store_best_program(st) : NULL;
    if (rc == KV_EXIT_OK && !best && *kv_store_errmsg(st)) rc = cli_store_failed(st);

    json_t *out = json_object();
    json_object_set_new(out, "store", json_string(path));
    static const char *const meta_keys[] = {"created_at",  "kevolve_version", "host",
                                            "config_path", "random_seed",     "max_iterations"};
    for (size_t i = 0; i < sizeof meta_keys / sizeof meta_keys[0]; i++)
        json_object_set_new(out, meta_keys[i], meta_json(st, meta_keys[i]));
    json_object_set_new(out, "iterations_done", json_integer(s.max_iteration));
    json_t *by_status = json_object();
    int64_t total = 0;
    for (int i = 0; i < KV_STATUS_COUNT; i++) {
        json_object_set_new(by_status, kv_status_name((kv_status)i), json_integer(counts[i]));
        total += counts[i];
    }
    json_object_set_new(out, "programs", json_integer(total));
    json_object_set_new(out, "by_status", by_status);
    json_object_set_new(out, "migrants", json_integer(s.migrants));
    if (best) {
        json_t *b = json_pack("{s:I, s:f, s:I, s:i, s:i, s:s}", "id", (json_int_t)best->id,
                              "fitness", best->fitness, "iteration", (json_int_t)best->iteration,
                              "generation", best->generation, "island", best->island, "mutator",
                              best->mutator ? best->mutator : "");
        if (best->metrics) json_object_set(b, "metrics", best->metrics);
        json_object_set_new(out, "best", b);
    } else {
        json_object_set_new(out, "best", json_null());
    }
    json_t *islands = json_array();
    for (int i = 0; i < s.n_islands; i++)
        json_array_append_new(
            islands,
            json_pack("{s:i, s:I, s:o}", "island", i, "programs", (json_int_t)s.island_programs[i],
                      "best_fitness",
                      isnan(s.island_best[i]) ? json_null() : json_real(s.island_best[i])));
    json_object_set_new(out, "islands", islands);
    json_object_set(out, "failure_reasons", reasons);
    json_object_set(out, "mutators", mutators);
    json_object_set(out, "best_per_scenario", scenarios);
    json_object_set(out, "devices", devices);
    json_t *pareto = rc == KV_EXIT_OK ? pareto_json(st) : NULL;
    json_object_set_new(out, "pareto", pareto ? pareto : json_null());

    if (as_json) {
        char *text = json_dumps(out, JSON_INDENT(2));
        puts(text);
        free(text);
    } else if (rc == KV_EXIT_OK) {
        printf("run        %s\n", path);
        printf("created    %s (kevolve %s)\n",
               json_string_value(json_object_get(out, "created_at")),
               json_string_value(json_object_get(out, "kevolve_version")));
        printf("config     %s (seed ", json_string_value(json_object_get(out, "config_path")));
        print_value(json_object_get(out, "random_seed"));
        printf(")\niterations %lld of ", (long long)s.max_iteration);
        print_value(json_object_get(out, "max_iterations"));
        printf("\n");
        printf("programs   %lld:", (long long)total);
        for (int i = 0; i < KV_STATUS_COUNT; i++)
            printf(" %s %lld", kv_status_name((kv_status)i), (long long)counts[i]);
        printf(" (migrants %lld)\n", (long long)s.migrants);
        if (best)
            printf("best       program %lld, fitness %.6g (iteration %lld, island %d, %s)\n",
                   (long long)best->id, best->fitness, (long long)best->iteration, best->island,
                   best->mutator ? best->mutator : "?");
        if (pareto)
            printf("pareto     %zu programs on the front of %s (kevolve best --pareto)\n",
                   json_array_size(json_object_get(pareto, "front")),
                   json_string_value(json_object_get(pareto, "objectives")));
        for (int i = 0; i < s.n_islands; i++)
            printf("island %-3d %lld programs, best %.6g\n", i, (long long)s.island_programs[i],
                   s.island_best[i]);
        size_t i;
        json_t *r;
        if (json_array_size(reasons)) printf("failures by reason:\n");
        json_array_foreach(reasons, i, r)
        {
            printf("  %5lld  %s: %s\n", (long long)json_integer_value(json_object_get(r, "count")),
                   json_string_value(json_object_get(r, "status")),
                   json_string_value(json_object_get(r, "reason")));
        }
        json_array_foreach(devices, i, r)
        {
            const char *why = json_string_value(json_object_get(r, "reason"));
            printf("device     %s %lld (%s): %lld evaluations, %s%s%s\n",
                   json_string_value(json_object_get(r, "backend")),
                   (long long)json_integer_value(json_object_get(r, "device")),
                   json_is_string(json_object_get(r, "name"))
                       ? json_string_value(json_object_get(r, "name"))
                       : "?",
                   (long long)json_integer_value(json_object_get(r, "evaluations")),
                   json_string_value(json_object_get(r, "state")), why ? ": " : "", why ? why : "");
        }
        print_mutators(mutators);
        print_scenarios(scenarios);
    }
    json_decref(out);
    json_decref(reasons);
    json_decref(mutators);
    json_decref(scenarios);
    json_decref(devices);
    kv_program_free(best);
    kv_store_close(st);
    free(path);
    return rc;
}
