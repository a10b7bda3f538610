/* The evaluation job document (see eval_job.h). */
#include "util/eval_job.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void kv_job_init(kv_job *j)
{
    memset(j, 0, sizeof *j);
    j->limits.total_s = 900;
    j->limits.device_wait_s = 600;
    j->limits.baseline_max_age_s = 900;
    j->slot_fd = -1;
    j->judge_fd = -1;
}

void kv_job_clear(kv_job *j)
{
    if (j->owned) {
        for (char **o = j->owned; *o; o++)
            free(*o);
        free(j->owned);
    }
    if (j->doc) json_decref(j->doc);
    kv_job_init(j);
}

/* Sets KEY of O to string V when V is not NULL. */
static void put_string(json_t *o, const char *key, const char *v)
{
    if (v) json_object_set_new(o, key, json_string(v));
}

json_t *kv_job_to_json(const kv_job *j)
{
    json_t *o = json_pack("{s:i}", "version", KV_JOB_VERSION);
    put_string(o, "task", j->task);
    put_string(o, "backend", j->backend);
    json_object_set_new(o, "device", json_integer(j->device));
    put_string(o, "candidate", j->candidate);
    if (j->n_scenarios) {
        json_t *a = json_array();
        for (size_t i = 0; i < j->n_scenarios; i++)
            json_array_append_new(a, json_string(j->scenarios[i]));
        json_object_set_new(o, "scenarios", a);
    }
    json_object_set_new(o, "stage", json_integer(j->stage));
    json_object_set_new(o, "quick", json_boolean(j->quick));
    json_object_set_new(o, "compile_only", json_boolean(j->compile_only));
    json_object_set_new(o, "cpu_reference", json_boolean(j->cpu_reference));
    json_object_set_new(o, "fresh_baseline", json_boolean(j->fresh_baseline));
    json_object_set_new(o, "energy", json_boolean(j->energy));
    put_string(o, "arch", j->arch);
    put_string(o, "cache_dir", j->cache_dir);
    put_string(o, "run_dir", j->run_dir);
    json_object_set_new(o, "seed", json_integer((json_int_t)j->seed));
    if (j->ceiling_gbps > 0) json_object_set_new(o, "ceiling_gbps", json_real(j->ceiling_gbps));
    json_object_set_new(o, "limits",
                        json_pack("{s:f,s:f,s:f,s:f}", "total_s", j->limits.total_s, "call_s",
                                  j->limits.call_s, "device_wait_s", j->limits.device_wait_s,
                                  "baseline_max_age_s", j->limits.baseline_max_age_s));
    if (j->slot_fd >= 0) json_object_set_new(o, "slot_fd", json_integer(j->slot_fd));
    if (j->judge_fd >= 0) json_object_set_new(o, "judge_fd", json_integer(j->judge_fd));
    json_t *screen = json_pack("{s:f}", "keep", j->screen_keep);
    if (j->parent) json_object_set(screen, "parent", (json_t *)j->parent);
    json_object_set_new(o, "screen", screen);
    return o;
}

/* ---- reading ---- */

typedef struct reader {
    const char *where; /* "job" or "job: limits" */
    char **err;
} reader;

static int bad(reader *r, const char *key, const char *what)
{
    *r->err = kv_asprintf("%s.%s: %s", r->where, key, what);
    return -1;
}

static int get_string(reader *r, json_t *v, const char *key, const char **out)
{
    if (!json_is_string(v)) return bad(r, key, "not a string");
    *out = json_string_value(v);
    return 0;
}

static int get_bool(reader *r, json_t *v, const char *key, int *out)
{
    if (!json_is_boolean(v)) return bad(r, key, "not true or false");
    *out = json_is_true(v);
    return 0;
}

static int get_int(reader *r, json_t *v, const char *key, int *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
        json_integer_value(v) > INT32_MAX)
        return bad(r, key, "not an integer");
    *out = (int)json_integer_value(v);
    return 0;
}

static int get_seconds(reader *r, json_t *v, const char *key, double *out)
{
    if (!json_is_number(v) || json_number_value(v) < 0) return bad(r, key, "not a number >= 0");
    *out = json_number_value(v);
    return 0;
}

static int read_limits(json_t *o, kv_job_limits *l, char **err)
{
    reader r = {"job.limits", err};
    if (!json_is_object(o)) {
        *err = kv_strdup("job.limits: not an object");
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        int rc = strcmp(key, "total_s") == 0         ? get_seconds(&r, v, key, &l->total_s)
                 : strcmp(key, "call_s") == 0        ? get_seconds(&r, v, key, &l->call_s)
                 : strcmp(key, "device_wait_s") == 0 ? get_seconds(&r, v, key, &l->device_wait_s)
                 : strcmp(key, "baseline_max_age_s") == 0
                     ? get_seconds(&r, v, key, &l->baseline_max_age_s)
                     : bad(&r, key, "unknown key");
        if (rc != 0) return -1;
    }
    return 0;
}

static int read_screen(json_t *o, kv_job *j, char **err)
{
    reader r = {"job.screen", err};
    if (!json_is_object(o)) {
        *err = kv_strdup("job.screen: not an object");
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (strcmp(key, "keep") == 0) {
            if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
                return bad(&r, key, "not a fraction between 0 and 1");
            j->screen_keep = json_number_value(v);
        } else if (strcmp(key, "parent") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_object(v) || !json_is_object(json_object_get(v, "speedup")))
                return bad(&r, key, "not an object with a \"speedup\" object");
            j->parent = v;
        } else {
            return bad(&r, key, "unknown key");
        }
    }
    return 0;
}

static int read_scenarios(json_t *a, kv_job *j, char **err)
{
    if (!json_is_array(a)) {
        *err = kv_strdup("job.scenarios: not a list of names");
        return -1;
    }
    size_t n = json_array_size(a);
    const char **names = kv_calloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        names[i] = json_string_value(json_array_get(a, i));
        if (!names[i]) {
            free(names);
            *err = kv_asprintf("job.scenarios[%zu]: not a string", i);
            return -1;
        }
    }
    j->owned = kv_calloc(2, sizeof *j->owned);
    j->owned[0] = (char *)names;
    j->scenarios = names;
    j->n_scenarios = n;
    return 0;
}

int kv_job_from_json(json_t *doc, kv_job *j, char **err)
{
    kv_job_init(j);
    *err = NULL;
    if (!json_is_object(doc)) {
        *err = kv_strdup("job: not a JSON object");
        return -1;
    }
    j->doc = json_incref(doc);
    reader r = {"job", err};
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach(doc, key, v)
    {
        if (strcmp(key, "version") == 0) {
            int version = 0;
            rc = get_int(&r, v, key, &version);
            if (rc == 0 && version != KV_JOB_VERSION)
                rc = bad(&r, key, "written by another kevolve (version differs)");
        } else if (strcmp(key, "task") == 0) {
            rc = get_string(&r, v, key, &j->task);
        } else if (strcmp(key, "backend") == 0) {
            rc = get_string(&r, v, key, &j->backend);
        } else if (strcmp(key, "device") == 0) {
            rc = get_int(&r, v, key, &j->device);
            if (rc == 0 && j->device < 0) rc = bad(&r, key, "negative");
        } else if (strcmp(key, "candidate") == 0) {
            rc = get_string(&r, v, key, &j->candidate);
        } else if (strcmp(key, "scenarios") == 0) {
            rc = read_scenarios(v, j, err);
        } else if (strcmp(key, "stage") == 0) {
            rc = get_int(&r, v, key, &j->stage);
            if (rc == 0 && (j->stage < 0 || j->stage > 3)) rc = bad(&r, key, "not 0, 1, 2 or 3");
        } else if (strcmp(key, "quick") == 0) {
            rc = get_bool(&r, v, key, &j->quick);
        } else if (strcmp(key, "compile_only") == 0) {
            rc = get_bool(&r, v, key, &j->compile_only);
        } else if (strcmp(key, "cpu_reference") == 0) {
            rc = get_bool(&r, v, key, &j->cpu_reference);
        } else if (strcmp(key, "fresh_baseline") == 0) {
            rc = get_bool(&r, v, key, &j->fresh_baseline);
        } else if (strcmp(key, "energy") == 0) {
            rc = get_bool(&r, v, key, &j->energy);
        } else if (strcmp(key, "arch") == 0) {
            rc = get_string(&r, v, key, &j->arch);
        } else if (strcmp(key, "cache_dir") == 0) {
            rc = get_string(&r, v, key, &j->cache_dir);
        } else if (strcmp(key, "run_dir") == 0) {
            rc = get_string(&r, v, key, &j->run_dir);
        } else if (strcmp(key, "seed") == 0) {
            if (!json_is_integer(v)) rc = bad(&r, key, "not an integer");
            j->seed = (uint64_t)json_integer_value(v);
        } else if (strcmp(key, "ceiling_gbps") == 0) {
            rc = get_seconds(&r, v, key, &j->ceiling_gbps);
        } else if (strcmp(key, "limits") == 0) {
            rc = read_limits(v, &j->limits, err);
        } else if (strcmp(key, "slot_fd") == 0) {
            rc = get_int(&r, v, key, &j->slot_fd);
            if (rc == 0 && j->slot_fd < 3) rc = bad(&r, key, "not a descriptor above 2");
        } else if (strcmp(key, "judge_fd") == 0) {
            rc = get_int(&r, v, key, &j->judge_fd);
            if (rc == 0 && j->judge_fd < 3) rc = bad(&r, key, "not a descriptor above 2");
        } else if (strcmp(key, "screen") == 0) {
            rc = read_screen(v, j, err);
        } else {
            rc = bad(&r, key, "unknown key");
        }
        if (rc != 0) break;
    }
    if (rc == 0 && (!j->task || !j->candidate))
        rc = bad(&r, j->task ? "candidate" : "task", "missing");
    if (rc != 0) {
        char *e = *err;
        *err = NULL;
        kv_job_clear(j);
        *err = e;
        return -1;
    }
    return 0;
}

int kv_job_read(const char *path, kv_job *j, char **err)
{
    char *text = kv_read_file(path, NULL);
    if (!text) {
        kv_job_init(j);
        *err = kv_asprintf("cannot read the job %s: %s", path, strerror(errno));
        return -1;
    }
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    free(text);
    if (!doc) {
        kv_job_init(j);
        *err = kv_asprintf("the job %s is not JSON: line %d: %s", path, je.line, je.text);
        return -1;
    }
    int rc = kv_job_from_json(doc, j, err);
    json_decref(doc);
    if (rc != 0) {
        char *e = *err;
        *err = kv_asprintf("%s: %s", path, e);
        free(e);
    }
    return rc;
}

int kv_job_write(const kv_job *j, const char *path, char **err)
{
    json_t *doc = kv_job_to_json(j);
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(doc);
    int rc = text ? kv_write_file(path, text, strlen(text)) : -1;
    int e = errno;
    free(text);
    if (rc != 0) *err = kv_asprintf("cannot write the job %s: %s", path, strerror(e));
    return rc;
}
