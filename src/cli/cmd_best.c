/* kevolve best: write the best program of a run. */
#include "cli/cli.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char best_usage[] =
    "usage: kevolve best RUN_DB_OR_OUTPUT_DIR [-o FILE] [--json] [--objective NAME]\n"
    "       kevolve best RUN_DB_OR_OUTPUT_DIR --pareto [--objectives A,B,...] [--json]\n"
    "\n"
    "Writes the source of the run's best program (highest fitness among the programs\n"
    "that evaluated OK) to FILE, or to standard output; its id, fitness and metrics go\n"
    "to standard error on one short line (a kernel task's headline figures: score,\n"
    "speedup, correctness, the largest share of a tolerance used; --json prints\n"
    "every metric).\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   where to write the program\n"
    "      --objective NAME  the best on one objective instead of fitness: speedup,\n"
    "                      energy, error, score, max:METRIC or min:METRIC\n"
    "      --pareto        list the run's Pareto front over its objectives (the\n"
    "                      config's `objectives`, or --objectives): the programs no\n"
    "                      other beats on every one, a line each (id, values, fitness)\n"
    "                      --pareto and --objective consider only programs measured on\n"
    "                      every scenario: a child the screen stopped early (metrics\n"
    "                      screened_out) stays in the store, counted apart\n"
    "      --objectives A,B  the objectives of --pareto, whatever the run had\n"
    "      --json          print the program as one JSON object on standard output:\n"
    "                      id, fitness, iteration, generation, island, parent_id,\n"
    "                      mutator, metrics and source (with -o, the source goes to FILE\n"
    "                      and \"output\" names it)\n"
    "  -h, --help          this text\n"
    "\n"
    "exit codes: 0 written, 1 no program evaluated OK (or -o cannot be written), 2 usage\n"
    "error or no such store, 3 the store is damaged or not a kevolve store, 5 I/O error\n";

/* METRICS as one short line (malloc'd): all of them when they fit in a
 * line, else the headline ones (score, speedup, correctness, the largest
 * share of a tolerance used, screening) and how many more --json prints.
 * A kernel task's metrics hold a dozen figures per scenario: kilobytes. */
static char *metrics_line(const json_t *metrics)
{
    char *all = metrics ? json_dumps(metrics, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    if (!all || strlen(all) <= 160) return all ? all : kv_strdup("{}");
    free(all);
    static const char *const keys[] = {"combined_score", "speedup", "correct", "screened_out"};
    kv_buf b = KV_BUF_INIT;
    size_t shown = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const json_t *v = json_object_get(metrics, keys[k]);
        if (!json_is_number(v)) continue;
        kv_buf_printf(&b, "%s%s %.6g", shown ? ", " : "", keys[k], json_number_value(v));
        shown++;
    }
    double worst = -1;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)metrics, key, v)
    {
        if (kv_ends_with(key, "_tol_ratio") && json_number_value(v) > worst)
            worst = json_number_value(v);
    }
    if (worst >= 0) {
        kv_buf_printf(&b, "%serror %.3g of the tolerance", shown ? ", " : "", worst);
        shown++;
    }
    kv_buf_printf(&b, "%s%zu metrics in all: --json prints them", shown ? "; " : "",
                  json_object_size(metrics));
    return kv_buf_steal(&b);
}

/* --pareto: F's front, a line each on stdout (or one JSON array). Returns
 * the exit code. */
static int print_front(const cli_front *f, int as_json)
{
    json_t *arr = json_array();
    if (!as_json) {
        printf("%-8s", "program");
        for (size_t j = 0; j < f->no; j++)
            printf(" %14s", f->o[j].name);
        printf(" %12s %9s\n", "fitness", "iteration");
    }
    for (size_t k = 0; k < f->m; k++) {
        const kv_program *p = f->p[f->idx[k]];
        const double *v = f->vals + f->idx[k] * f->no;
        json_t *values = json_object();
        if (!as_json) printf("%-8lld", (long long)p->id);
        for (size_t j = 0; j < f->no; j++) {
            json_object_set_new(values, f->o[j].name, json_real(v[j]));
            if (!as_json) printf(" %14.6g", v[j]);
        }
        if (!as_json) printf(" %12.6g %9lld\n", p->fitness, (long long)p->iteration);
        json_array_append_new(arr, json_pack("{s:I,s:f,s:I,s:o}", "id", (json_int_t)p->id,
                                             "fitness", p->fitness, "iteration",
                                             (json_int_t)p->iteration, "objectives", values));
    }
    if (as_json) {
        char *text = json_dumps(arr, JSON_INDENT(2));
        puts(text ? text : "[]");
        free(text);
    }
    json_decref(arr);
    fprintf(stderr, "pareto: %zu of %zu programs on the front", f->m, f->n);
    if (f->screened)
        fprintf(stderr, " (%zu screened out after a few scenarios: not measured whole, not on it)",
                f->screened);
    fputc('\n', stderr);
    return f->m ? KV_EXIT_OK : KV_EXIT_FAILURE;
}

/* Prints program P as one JSON object on stdout; its source is in FILE
 * when FILE is not NULL, else in the object. */
static void print_json(const kv_program *p, const char *file)
{
    json_t *o =
        json_pack("{s:I, s:f, s:I, s:i, s:i, s:s}", "id", (json_int_t)p->id, "fitness", p->fitness,
                  "iteration", (json_int_t)p->iteration, "generation", p->generation, "island",
                  p->island, "mutator", p->mutator ? p->mutator : "");
    json_object_set_new(o, "parent_id",
                        p->parent_id ? json_integer((json_int_t)p->parent_id) : json_null());
    json_object_set_new(o, "metrics", p->metrics ? json_incref(p->metrics) : json_object());
    if (file)
        json_object_set_new(o, "output", json_string(file));
    else
        json_object_set_new(o, "source", json_string(p->source ? p->source : ""));
    char *text = json_dumps(o, JSON_INDENT(2));
    puts(text ? text : "null");
    free(text);
    json_decref(o);
}

/* --pareto or --objective on the store ST (at PATH). */
static int by_objectives(kv_store *st, const char *path, int pareto, const char *objective,
                         const char *list, const char *output, int as_json)
{
    char *from_run = NULL;
    if (pareto && !list) list = from_run = kv_store_get_meta(st, "objectives");
    if (pareto && (!list || !*list)) {
        kv_error("%s: the run named no objectives: give --objectives A,B,...", path);
        free(from_run);
        return KV_EXIT_USAGE;
    }
    cli_front f;
    int rc = cli_front_load(st, pareto ? list : objective, !pareto, &f);
    free(from_run);
    if (rc == KV_EXIT_OK && pareto && f.no < 2) {
        kv_error("--pareto needs two objectives or more");
        rc = KV_EXIT_USAGE;
    } else if (rc == KV_EXIT_OK && pareto) {
        rc = print_front(&f, as_json);
    } else if (rc == KV_EXIT_OK && f.no != 1) {
        kv_error("--objective takes one objective");
        rc = KV_EXIT_USAGE;
    } else if (rc == KV_EXIT_OK && f.m == 0) {
        kv_error("%s: no program has a value of %s", path, f.o[0].name);
        rc = KV_EXIT_FAILURE;
    } else if (rc == KV_EXIT_OK) {
        /* One objective: its front is the best value (the earliest of ties). */
        const kv_program *best = f.p[f.idx[0]];
        if (output && kv_write_file(output, best->source, strlen(best->source)) != 0) {
            kv_error("cannot write %s: %s", output, strerror(errno));
            rc = KV_EXIT_FAILURE;
        } else {
            if (as_json)
                print_json(best, output);
            else if (!output)
                fputs(best->source, stdout);
            fprintf(stderr, "best on %s: program %lld, %s %.6g, fitness %.6g\n", f.o[0].name,
                    (long long)best->id, f.o[0].name, f.vals[f.idx[0]], best->fitness);
        }
    }
    cli_front_free(&f);
    return rc;
}

int cmd_best(int argc, char **argv)
{
    static const struct option long_options[] = {{"output", required_argument, NULL, 'o'},
                                                 {"json", no_argument, NULL, 'j'},
                                                 {"pareto", no_argument, NULL, 'p'},
                                                 {"objective", required_argument, NULL, 'O'},
                                                 {"objectives", required_argument, NULL, 'L'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};
    const char *output = NULL, *objective = NULL, *objectives = NULL;
    int as_json = 0, pareto = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "o:h", long_options, NULL)) != -1) {
        if (opt == 'o')
            output = optarg;
        else if (opt == 'j')
            as_json = 1;
        else if (opt == 'p')
            pareto = 1;
        else if (opt == 'O')
            objective = optarg;
        else if (opt == 'L')
            objectives = optarg;
        else if (opt == 'h') {
            fputs(best_usage, stdout);
            return KV_EXIT_OK;
        } else {
            fputs(best_usage, stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fputs(best_usage, stderr);
        return KV_EXIT_USAGE;
    }
    char *path = cli_store_path(argv[optind]);
    int rc;
    kv_store *st = cli_open_store_readonly(path, &rc);
    if (!st) {
        free(path);
        return rc;
    }
    if (pareto || objective) {
        rc = by_objectives(st, path, pareto, objective, objectives, output, as_json);
        kv_store_close(st);
        free(path);
        return rc;
    }
    kv_program *best = kv_store_best_program(st);
    if (!best && *kv_store_errmsg(st)) {
        rc = cli_store_failed(st); /* not "none": the store could not say */
    } else if (!best) {
        kv_error("%s: no program has evaluated OK yet", path);
        rc = KV_EXIT_FAILURE;
    } else {
        if (output) {
            if (kv_write_file(output, best->source, strlen(best->source)) != 0) {
                kv_error("cannot write %s: %s", output, strerror(errno));
                rc = KV_EXIT_FAILURE;
            }
        } else if (!as_json) {
            fputs(best->source, stdout);
        }
        if (as_json && rc == KV_EXIT_OK) print_json(best, output);
        char *metrics = metrics_line(best->metrics);
        fprintf(stderr, "best: program %lld, fitness %.6g, iteration %lld, island %d; %s\n",
                (long long)best->id, best->fitness, (long long)best->iteration, best->island,
                metrics);
        free(metrics);
    }
    kv_program_free(best);
    kv_store_close(st);
    free(path);
    return rc;
}
