/* The program record: allocation, copying and small accessors. */
#include "store/program.h"
#include "util/buf.h"
#include "util/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const status_names[KV_STATUS_COUNT] = {"ok", "failed", "timeout", "rejected",
                                                          "duplicate"};

const char *kv_status_name(kv_status s)
{
    return (unsigned)s < KV_STATUS_COUNT ? status_names[s] : "unknown";
}

int kv_status_parse(const char *name, kv_status *out)
{
    for (int i = 0; i < KV_STATUS_COUNT; i++) {
        if (strcmp(name, status_names[i]) == 0) {
            *out = (kv_status)i;
            return 0;
        }
    }
    return -1;
}

kv_program *kv_program_new(void)
{
    kv_program *p = kv_calloc(1, sizeof *p);
    p->fitness = NAN;
    p->status = KV_STATUS_OK;
    p->created_at = (double)time(NULL);
    return p;
}

static json_t *copy_json(const json_t *v)
{
    return v ? json_deep_copy(v) : NULL;
}

void kv_scenario_results_clear(kv_scenario_results *r)
{
    free(r->task);
    free(r->backend);
    free(r->device);
    for (size_t i = 0; i < r->n; i++) {
        free(r->rows[i].scenario);
        free(r->rows[i].kind);
    }
    free(r->rows);
    memset(r, 0, sizeof *r);
}

/* A deep copy of R. */
static kv_scenario_results copy_scenarios(const kv_scenario_results *r)
{
    kv_scenario_results c = *r;
    c.task = kv_strdup(r->task);
    c.backend = kv_strdup(r->backend);
    c.device = kv_strdup(r->device);
    c.rows = r->n ? kv_calloc(r->n, sizeof *c.rows) : NULL;
    for (size_t i = 0; i < r->n; i++) {
        c.rows[i] = r->rows[i];
        c.rows[i].scenario = kv_strdup(r->rows[i].scenario);
        c.rows[i].kind = kv_strdup(r->rows[i].kind);
    }
    return c;
}

kv_program *kv_program_clone(const kv_program *p)
{
    kv_program *c = kv_malloc(sizeof *c);
    *c = *p;
    c->source = kv_strdup(p->source);
    c->mutator = kv_strdup(p->mutator);
    c->change_summary = kv_strdup(p->change_summary);
    c->status_reason = kv_strdup(p->status_reason);
    c->reason_code = kv_strdup(p->reason_code);
    c->metrics = copy_json(p->metrics);
    c->artifacts = copy_json(p->artifacts);
    c->stages = copy_json(p->stages);
    c->features = copy_json(p->features);
    c->scenarios = copy_scenarios(&p->scenarios);
    return c;
}

void kv_program_free(kv_program *p)
{
    if (!p) return;
    free(p->source);
    free(p->mutator);
    free(p->change_summary);
    free(p->status_reason);
    free(p->reason_code);
    json_decref(p->metrics);
    json_decref(p->artifacts);
    json_decref(p->stages);
    json_decref(p->features);
    kv_scenario_results_clear(&p->scenarios);
    free(p);
}

void kv_program_set_source(kv_program *p, const char *source)
{
    free(p->source);
    p->source = kv_strdup(source);
    p->code_hash = kv_hash_code(source);
}

double kv_program_metric(const kv_program *p, const char *name)
{
    if (!p->metrics) return NAN;
    json_t *v = json_object_get(p->metrics, name);
    return json_is_number(v) ? json_number_value(v) : NAN;
}
