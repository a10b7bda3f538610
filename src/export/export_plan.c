/* What an export takes from a run (see export_internal.h): its task and
 * backend from its rows per scenario, the fastest correct program of each
 * scenario, and the sources of those programs. */
#include "export/export_internal.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void kvx_plan_free(kvx_plan *p)
{
    for (size_t i = 0; i < p->n_variants; i++)
        free(p->variants[i].source);
    free(p->variants);
    free(p->choices);
    free(p->device);
    json_decref(p->best);
    memset(p, 0, sizeof *p);
}

const char *kvx_entry(const kvx_plan *p)
{
    static char name[128];
    snprintf(name, sizeof name, "kevolve_%s", p->task->name);
    return name;
}

/* Why STORE has no row to export: an empty run, not a kernel task's run,
 * or no correct program judged on every scenario. Malloc'd. */
static char *why_nothing(kv_store *store, const char *run)
{
    int64_t all = kv_store_count_programs(store, -1),
            ok = kv_store_count_programs(store, KV_STATUS_OK);
    char *task = kv_store_get_meta(store, "evaluator_command");
    char *why;
    if (all <= 0)
        why = kv_asprintf("%s is an empty run: no program is stored", run);
    else if (!task || strncmp(task, "kernel task ", 12) != 0)
        why = kv_asprintf("%s is not a run of a kernel task (its evaluator: %s): only a built-in "
                          "task's programs can be exported",
                          run, task && *task ? task : "unknown");
    else if (ok <= 0)
        why = kv_asprintf("%s has no correct program (%lld stored, none evaluated OK)", run,
                          (long long)all);
    else
        why = kv_asprintf("%s has no correct program judged on every scenario (the %lld OK ones "
                          "were stopped by the screen or kept no times)",
                          run, (long long)ok);
    free(task);
    return why;
}

/* 1 when a kernel of task A is one of task B: the same symbols and
 * tensors (a task of the same family with other scenarios, such as
 * gqa_attention_search and gqa_attention). */
static int same_kernels(const kv_task *a, const kv_task *b)
{
    if (a->num_syms != b->num_syms || a->num_tensors != b->num_tensors) return 0;
    for (int i = 0; i < a->num_syms; i++)
        if (strcmp(a->syms[i], b->syms[i]) != 0) return 0;
    for (int i = 0; i < a->num_tensors; i++) {
        const kv_tensor_spec *x = &a->tensors[i], *y = &b->tensors[i];
        if (strcmp(x->name, y->name) || x->dtype != y->dtype || x->role != y->role ||
            x->rank != y->rank || memcmp(x->shape, y->shape, sizeof x->shape))
            return 0;
    }
    return 1;
}

/* The log2 distance of shapes A and B over N symbols (the rule of
 * kvx_rule: each symbol's log2, 0 and 1 alike). */
static double distance(const int64_t *a, const int64_t *b, int n)
{
    double d = 0;
    for (int k = 0; k < n; k++)
        d += fabs(log2((double)(a[k] > 1 ? a[k] : 1)) - log2((double)(b[k] > 1 ? b[k] : 1)));
    return d;
}

/* The first tag of SH (its kind), into BUF. */
static const char *kind_of(const kv_shape *sh, char *buf, size_t cap)
{
    const char *t = sh->tags ? sh->tags : "";
    snprintf(buf, cap, "%.*s", (int)strcspn(t, ","), t);
    return buf;
}

/* Gives each untimed scenario the timed one the dispatcher sends it to: the
 * nearest of its kind, else the nearest of all. */
static void serve_untimed(kvx_plan *p)
{
    for (size_t i = 0; i < p->n_choices; i++) {
        kvx_choice *c = &p->choices[i];
        if (c->variant >= 0) continue;
        double best = 0;
        for (int pass = 0; pass < 2 && c->served < 0; pass++)
            for (size_t j = 0; j < p->n_choices; j++) {
                char a[64], b[64];
                if (p->choices[j].variant < 0) continue;
                if (pass == 0 && strcmp(kind_of(c->shape, a, sizeof a),
                                        kind_of(p->choices[j].shape, b, sizeof b)) != 0)
                    continue;
                double d = distance(c->shape->syms, p->choices[j].shape->syms, p->task->num_syms);
                if (c->served < 0 || d < best) {
                    c->served = (int)j;
                    best = d;
                }
            }
    }
}

int kvx_plan_read(kv_store *store, const kv_export_opts *o, kvx_plan *p, char **err)
{
    memset(p, 0, sizeof *p);
    const char *run = o->run ? o->run : "the run";
    p->best = kv_store_best_per_scenario(store);
    if (!p->best) {
        *err = kv_asprintf("cannot read %s: %s", run, kv_store_errmsg(store));
        return -1;
    }
    if (json_array_size(p->best) == 0) {
        *err = why_nothing(store, run);
        return -1;
    }
    const json_t *first = json_array_get(p->best, 0);
    const char *task = json_string_value(json_object_get(first, "task"));
    const char *backend = json_string_value(json_object_get(first, "backend"));
    size_t i;
    const json_t *row;
    json_array_foreach(p->best, i, row)
    {
        const char *t = json_string_value(json_object_get(row, "task"));
        const char *b = json_string_value(json_object_get(row, "backend"));
        if (!t || !b || !task || !backend || strcmp(t, task) || strcmp(b, backend)) {
            *err = kv_asprintf(
                "%s holds results of several tasks or backends (%s on %s, %s on %s): "
                "export one run of one task",
                run, task ? task : "?", backend ? backend : "?", t ? t : "?", b ? b : "?");
            return -1;
        }
    }
    const kv_task *ran = kv_task_find(task);
    if (!ran) {
        *err = kv_asprintf("%s is a run of task %s, which this kevolve does not have", run, task);
        return -1;
    }
    p->task = o->task ? kv_task_find(o->task) : ran;
    if (!p->task) {
        *err = kv_asprintf("--task %s: no such task", o->task);
        return KV_EXPORT_USAGE;
    }
    if (!same_kernels(ran, p->task)) {
        *err = kv_asprintf("%s is a run of task %s, whose kernels do not fit task %s (other "
                           "tensors or symbols): export it as %s",
                           run, task, p->task->name, task);
        return KV_EXPORT_USAGE;
    }
    if (!(p->backend = kv_backend_find(backend))) {
        *err = kv_asprintf("%s ran on backend %s, which this kevolve does not have", run, backend);
        return -1;
    }
    p->device = kv_strdup(json_string_value(json_object_get(first, "device")));
    p->n_choices = (size_t)p->task->num_scenarios;
    p->choices = kv_calloc(p->n_choices, sizeof *p->choices);
    p->variants = kv_calloc(p->n_choices, sizeof *p->variants);
    for (size_t s = 0; s < p->n_choices; s++) {
        kvx_choice *c = &p->choices[s];
        c->shape = &p->task->scenarios[s];
        c->variant = c->served = -1;
        json_array_foreach(p->best, i, row)
        {
            /* A row of another task of the family counts where the shape is the same. */
            if (strcmp(json_string_value(json_object_get(row, "name")), c->shape->name)) continue;
            c->row = row;
            int64_t id = json_integer_value(json_object_get(row, "program_id"));
            for (size_t v = 0; v < p->n_variants && c->variant < 0; v++)
                if (p->variants[v].program_id == id) c->variant = (int)v;
            if (c->variant < 0) {
                kv_program *prog = kv_store_get_program(store, id);
                if (!prog || !prog->source) {
                    kv_program_free(prog);
                    *err = kv_asprintf("cannot read program %lld of %s: %s", (long long)id, run,
                                       kv_store_errmsg(store));
                    return -1;
                }
                kvx_variant *var = &p->variants[p->n_variants];
                var->program_id = id;
                var->source = kv_strdup(prog->source);
                var->code_hash = prog->code_hash;
                c->variant = (int)p->n_variants++;
                kv_program_free(prog);
            }
            c->served = (int)s;
        }
    }
    serve_untimed(p);
    return 0;
}
