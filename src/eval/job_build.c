/* The job of a kernel-task run (see job_build.h). */
#include "eval/job_build.h"
#include "eval/launcher.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/proc.h"

#include <stdlib.h>
#include <string.h>

void kv_eval_job_template(const kv_config *cfg, const char *cache_dir, kv_job *out)
{
    const kv_evaluator_config *e = &cfg->evaluator;
    kv_job_init(out);
    out->task = e->task;
    out->backend = e->backend && *e->backend ? e->backend : "auto";
    out->scenarios = (const char *const *)e->scenarios;
    out->n_scenarios = e->n_scenarios;
    out->quick = e->quick;
    out->energy = e->energy;
    out->screen_keep = e->screen_keep;
    out->cache_dir = cache_dir;
    out->limits.total_s = e->timeout;
    out->limits.call_s = e->kernel_timeout;
    out->limits.device_wait_s = e->device_wait;
    out->limits.baseline_max_age_s = e->baseline_max_age;
}

json_t *kv_eval_devices(const kv_evaluator_config *cfg, const char *worker, const char *backend,
                        const char *suffix, char **err)
{
    char *probe = kv_asprintf("candidate%s", suffix ? suffix : "");
    /* Where evaluations run: through the launcher (a compute node's view). */
    size_t n = 0;
    char **launch = kv_launcher_prefix(cfg, &n);
    char *own[] = {(char *)worker,  "devices", "--json", "--backend",
                   (char *)backend, "--for",   probe,    NULL};
    char **argv = kv_calloc(n + 9, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        argv[i] = launch[i];
    memcpy(argv + n, own, sizeof own);
    /* A step may wait in the scheduler's queue first. */
    kv_proc_spec spec = {.argv = argv, .timeout_s = launch ? 600 : 120, .max_output = 1 << 20};
    kv_proc *p = kv_proc_run(&spec, err);
    free(argv);
    kv_launcher_free(launch);
    free(probe);
    if (!p) return NULL;
    json_t *doc = NULL;
    if (kv_proc_how(p) == KV_PROC_EXITED && kv_proc_exit_code(p) == 0)
        doc = kv_json_loads(kv_proc_stdout(p));
    json_t *one = json_array_get(doc, 0);
    const char *why = json_string_value(json_object_get(one, "error"));
    if (!json_is_array(json_object_get(one, "devices")) || why) {
        const char *line = kv_proc_stderr(p);
        *err = why     ? kv_strdup(why)
               : *line ? kv_asprintf("kevolve devices: %.*s", (int)strcspn(line, "\n"), line)
                       : kv_asprintf("kevolve devices: %s", kv_proc_describe(p));
        one = NULL;
    }
    if (one) json_incref(one);
    json_decref(doc);
    kv_proc_free(p);
    return one;
}

int kv_eval_device_slots(const kv_config *cfg, const json_t *listed, int **devices, char **err)
{
    const kv_evaluator_config *e = &cfg->evaluator;
    const json_t *seen = json_object_get(listed, "devices");
    const char *backend = json_string_value(json_object_get(listed, "backend"));
    int automatic = e->n_devices == 0 || (e->n_devices == 1 && strcmp(e->devices[0], "auto") == 0);
    size_t n = automatic ? json_array_size(seen) : e->n_devices;
    if (n == 0) {
        *err = kv_asprintf("no %s device to evaluate on", backend ? backend : "");
        return -1;
    }
    *devices = kv_calloc(n, sizeof **devices);
    for (size_t i = 0; i < n; i++) {
        if (automatic) {
            (*devices)[i] =
                (int)json_integer_value(json_object_get(json_array_get(seen, i), "index"));
            continue;
        }
        int want = atoi(e->devices[i]), found = 0;
        size_t k;
        const json_t *d;
        json_array_foreach(seen, k, d) found |=
            json_integer_value(json_object_get(d, "index")) == want;
        if (!found) {
            *err = kv_asprintf("evaluator.devices: %s has no device %d (it sees %zu: kevolve "
                               "devices lists them)",
                               backend ? backend : "the backend", want, json_array_size(seen));
            free(*devices);
            *devices = NULL;
            return -1;
        }
        (*devices)[i] = want;
    }
    return (int)n;
}

kv_evaluator *kv_eval_task_evaluator(const kv_config *cfg, const char *worker, const char *work_dir,
                                     json_t **devices, char **err)
{
    *devices = NULL;
    char *cache = kv_cache_dir_default();
    kv_job tmpl;
    kv_eval_job_template(cfg, cache, &tmpl);
    json_t *listed = kv_eval_devices(&cfg->evaluator, worker, tmpl.backend, cfg->file_suffix, err);
    int *slots = NULL;
    int n = listed ? kv_eval_device_slots(cfg, listed, &slots, err) : -1;
    kv_evaluator *ev = n > 0 ? kv_evaluator_new_task(&cfg->evaluator, &tmpl, worker, slots,
                                                     (size_t)n, work_dir, err)
                             : NULL;
    free(slots);
    free(cache);
    if (ev) {
        kv_evaluator_set_backend(ev, json_string_value(json_object_get(listed, "backend")));
        *devices = listed;
    } else
        json_decref(listed);
    return ev;
}