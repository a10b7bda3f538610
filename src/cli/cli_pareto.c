/* A run's Pareto front, from its store (see cli.h): kevolve best --pareto
 * and --objective, kevolve status. */
#include "cli/cli.h"
#include "util/buf.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int keep(kv_program *p, void *ud)
{
    cli_front *f = ud;
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 64;
        f->p = kv_realloc(f->p, f->cap * sizeof *f->p);
    }
    f->p[f->n++] = kv_program_clone(p);
    return 0;
}

int cli_front_load(kv_store *st, const char *list, int with_source, cli_front *f)
{
    memset(f, 0, sizeof *f);
    char *copy = kv_strdup(list ? list : ""), *save = NULL, *specs[64];
    for (char *t = strtok_r(copy, ",", &save); t && f->no < 64; t = strtok_r(NULL, ",", &save))
        specs[f->no++] = t;
    char *err = NULL;
    int rc = kv_objectives_parse(specs, f->no, &f->o, &err);
    free(copy);
    if (rc != 0 || f->no == 0) {
        kv_error("%s", err ? err : "no objective named");
        free(err);
        f->no = rc != 0 ? 0 : f->no;
        return KV_EXIT_USAGE;
    }
    if (kv_store_each_program(st, KV_STATUS_OK, with_source, keep, f) != 0)
        return cli_store_failed(st);
    f->vals = kv_malloc((f->n ? f->n : 1) * f->no * sizeof *f->vals);
    for (size_t i = 0; i < f->n; i++) {
        int whole = kv_objectives_whole(f->p[i]->metrics);
        f->screened += !whole;
        for (size_t j = 0; j < f->no; j++)
            if (!whole ||
                kv_objective_value(&f->o[j], f->p[i]->metrics, &f->vals[i * f->no + j]) != 0)
                f->vals[i * f->no + j] = NAN; /* a screened child's values are partial */
    }
    f->idx = kv_malloc((f->n ? f->n : 1) * sizeof *f->idx);
    f->m = kv_pareto_front(f->o, f->no, f->vals, f->n, f->idx);
    return KV_EXIT_OK;
}

void cli_front_free(cli_front *f)
{
    for (size_t i = 0; i < f->n; i++)
        kv_program_free(f->p[i]);
    free(f->p);
    kv_objectives_free(f->o, f->no);
    free(f->vals);
    free(f->idx);
    memset(f, 0, sizeof *f);
}
