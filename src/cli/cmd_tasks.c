/* kevolve tasks: the built-in kernel tasks (src/judge/tasks.h), each with
 * its symbols and tensors, the backends it has a baseline for, its
 * tolerances per output dtype, its scenarios (shape, weight, tags) and its
 * held-out shapes; as text for a reader or as one JSON array for a script.
 * It reads the task table only: no device is opened, nothing is compiled. */
#include "cli/cli.h"
#include "backend/backend.h"
#include "judge/tasks.h"

#include <kevolve/kevolve.h>

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char tasks_usage[] =
    "usage: kevolve tasks [NAME] [--json]\n"
    "\n"
    "Lists the built-in kernel tasks (the names evaluator.task and `kevolve eval\n"
    "--task` take): each task's symbols and tensors, the backends it has a\n"
    "baseline for, its tolerances per output dtype (an element is right when\n"
    "|out - ref| <= atol + rtol*|ref| + stol*scale), its scenarios (the shapes\n"
    "that are timed, with their weights and tags) and its held-out shapes\n"
    "(checked for correctness only). NAME lists that task alone.\n"
    "\n"
    "options:\n"
    "      --json   print the tasks as one JSON array (one object per task)\n"
    "  -h, --help   this text\n"
    "\n"
    "exit codes: 0 listed, 2 usage error or no such task (see `kevolve --help`)\n";

static const char *const dtype_names[KV_DTYPE_COUNT] = {"f32", "f16", "bf16", "i32"};
static const char *const role_names[] = {"in", "out", "inout"};

/* 1 when one of TASK's outputs (or in-out tensors) has dtype DT: the
 * dtypes whose tolerances the judge applies. */
static int output_dtype(const kv_task *task, int dt)
{
    for (int t = 0; t < task->num_tensors; t++)
        if (task->tensors[t].role != KV_IN && (int)task->tensors[t].dtype == dt) return 1;
    return 0;
}

/* {"SYM": value, ...} of SHAPE. */
static json_t *shape_json(const kv_task *task, const kv_shape *s, int scenario)
{
    json_t *syms = json_object();
    for (int i = 0; i < task->num_syms; i++)
        json_object_set_new(syms, task->syms[i], json_integer(s->syms[i]));
    json_t *o = json_pack("{s:s, s:o}", "name", s->name, "shape", syms);
    if (scenario) {
        json_t *tags = json_array();
        if (s->tags) {
            char *copy = strdup(s->tags), *save = NULL;
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
                json_array_append_new(tags, json_string(t));
            free(copy);
        }
        json_object_set_new(o, "weight", json_real(s->weight));
        json_object_set_new(o, "tags", tags);
    }
    return o;
}

/* One task as a JSON object (a new reference). */
static json_t *task_json(const kv_task *task)
{
    json_t *syms = json_array(), *tensors = json_array(), *backends = json_array();
    json_t *tol = json_object(), *scen = json_array(), *held = json_array();
    for (int i = 0; i < task->num_syms; i++)
        json_array_append_new(syms, json_string(task->syms[i]));
    for (int t = 0; t < task->num_tensors; t++) {
        const kv_tensor_spec *ts = &task->tensors[t];
        json_t *dims = json_array();
        for (int d = 0; d < ts->rank; d++)
            json_array_append_new(dims, json_string(task->syms[ts->shape[d]]));
        json_array_append_new(tensors, json_pack("{s:s, s:s, s:s, s:o}", "name", ts->name, "dtype",
                                                 dtype_names[ts->dtype], "role",
                                                 role_names[ts->role], "shape", dims));
    }
    for (size_t i = 0; kv_backend_at(i); i++) {
        const kv_backend *b = kv_backend_at(i);
        if (kv_backend_source_for(b, task->baselines))
            json_array_append_new(
                backends, json_pack("{s:s, s:b}", "name", b->name, "built", b->jdev_new != NULL));
    }
    for (int dt = 0; dt < KV_DTYPE_COUNT; dt++)
        if (output_dtype(task, dt))
            json_object_set_new(tol, dtype_names[dt],
                                json_pack("{s:f, s:f, s:f}", "atol", task->tol[dt].atol, "rtol",
                                          task->tol[dt].rtol, "stol", task->tol[dt].stol));
    for (int i = 0; i < task->num_scenarios; i++)
        json_array_append_new(scen, shape_json(task, &task->scenarios[i], 1));
    for (int i = 0; i < task->num_held_out; i++)
        json_array_append_new(held, shape_json(task, &task->held_out[i], 0));
    return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:f, s:b, s:o, s:o}", "name", task->name,
                     "description", task->description ? task->description : "", "symbols", syms,
                     "tensors", tensors, "backends", backends, "tolerances", tol, "screen_keep",
                     task->screen_keep > 0 ? task->screen_keep : 0.95, "gpu_reference",
                     task->reference_cuda != NULL, "scenarios", scen, "held_out", held);
}

/* "B=1 HQ=16 ..." of a shape object's "shape". */
static void print_shape(const json_t *shape)
{
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)shape, k, v)
    {
        printf("%s%s=%lld", first ? "" : " ", k, (long long)json_integer_value(v));
        first = 0;
    }
}

/* One task, as text, from its JSON object. */
static void print_task(const json_t *o)
{
    size_t i;
    json_t *e;
    printf("%s: %s\n", json_string_value(json_object_get(o, "name")),
           json_string_value(json_object_get(o, "description")));
    printf("  tensors:");
    json_array_foreach(json_object_get(o, "tensors"), i, e)
    {
        printf("%s %s %s %s[", i ? "," : "", json_string_value(json_object_get(e, "name")),
               json_string_value(json_object_get(e, "role")),
               json_string_value(json_object_get(e, "dtype")));
        size_t d;
        json_t *dim;
        json_array_foreach(json_object_get(e, "shape"), d, dim)
            printf("%s%s", d ? "," : "", json_string_value(dim));
        printf("]");
    }
    printf("\n  backends:");
    json_array_foreach(json_object_get(o, "backends"), i, e)
    {
        printf("%s %s%s", i ? "," : "", json_string_value(json_object_get(e, "name")),
               json_is_true(json_object_get(e, "built")) ? "" : " (not built)");
    }
    printf("\n  tolerances:");
    const char *dt;
    int n = 0;
    json_object_foreach(json_object_get(o, "tolerances"), dt, e)
    {
        printf("%s %s atol %g rtol %g", n++ ? ";" : "", dt,
               json_real_value(json_object_get(e, "atol")),
               json_real_value(json_object_get(e, "rtol")));
        double stol = json_real_value(json_object_get(e, "stol"));
        if (stol > 0) printf(" stol %g", stol);
    }
    printf("\n  screening keeps a child at %g of its parent's speed%s\n",
           json_real_value(json_object_get(o, "screen_keep")),
           json_is_true(json_object_get(o, "gpu_reference"))
               ? "; a float64 reference on the GPU for cuda"
               : "");
    json_t *scen = json_object_get(o, "scenarios");
    printf("  scenarios (%zu):\n", json_array_size(scen));
    json_array_foreach(scen, i, e)
    {
        printf("    %-30s ", json_string_value(json_object_get(e, "name")));
        print_shape(json_object_get(e, "shape"));
        printf("  weight %g", json_real_value(json_object_get(e, "weight")));
        json_t *tags = json_object_get(e, "tags");
        size_t t;
        json_t *tag;
        json_array_foreach(tags, t, tag) printf("%s%s", t ? "," : "  ", json_string_value(tag));
        printf("\n");
    }
    json_t *held = json_object_get(o, "held_out");
    printf("  held-out shapes (%zu):\n", json_array_size(held));
    json_array_foreach(held, i, e)
    {
        printf("    %-30s ", json_string_value(json_object_get(e, "name")));
        print_shape(json_object_get(e, "shape"));
        printf("\n");
    }
}

int cmd_tasks(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int json = 0, c;
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'h':
            fputs(tasks_usage, stdout);
            return KV_EXIT_OK;
        default:
            fputs(tasks_usage, stderr);
            return KV_EXIT_USAGE;
        }
    }
    if (argc - optind > 1) {
        fputs(tasks_usage, stderr);
        return KV_EXIT_USAGE;
    }
    const char *name = optind < argc ? argv[optind] : NULL;
    if (name && !kv_task_find(name)) {
        fprintf(stderr, "kevolve tasks: no task '%s' (`kevolve tasks` lists them)\n", name);
        return KV_EXIT_USAGE;
    }
    json_t *all = json_array();
    for (size_t i = 0; kv_task_at(i); i++)
        if (!name || strcmp(kv_task_at(i)->name, name) == 0)
            json_array_append_new(all, task_json(kv_task_at(i)));
    if (json) {
        char *text = json_dumps(all, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(text);
        free(text);
    } else {
        size_t i;
        json_t *o;
        json_array_foreach(all, i, o)
        {
            if (i) putchar('\n');
            print_task(o);
        }
    }
    json_decref(all);
    return KV_EXIT_OK;
}
