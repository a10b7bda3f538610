/* Objectives and Pareto fronts (see objectives.h). */
#include "config/objectives.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    kv_objective_kind kind;
    int maximise;
} builtin[] = {{"speedup", KV_OBJ_SPEEDUP, 1},
               {"energy", KV_OBJ_ENERGY, 0},
               {"error", KV_OBJ_ERROR, 0},
               {"score", KV_OBJ_METRIC, 1}};

int kv_objectives_parse(char *const *specs, size_t n, kv_objective **out, char **err)
{
    kv_objective *o = kv_calloc(n ? n : 1, sizeof *o);
    for (size_t i = 0; i < n; i++) {
        const char *s = specs[i] ? specs[i] : "";
        o[i].name = kv_strdup(s);
        int dir = strncmp(s, "max:", 4) == 0 ? 1 : strncmp(s, "min:", 4) == 0 ? 0 : -1;
        if (dir >= 0 && s[4]) {
            o[i].kind = KV_OBJ_METRIC;
            o[i].metric = kv_strdup(s + 4);
            o[i].maximise = dir;
        } else {
            size_t k = 0;
            while (k < sizeof builtin / sizeof builtin[0] && strcmp(s, builtin[k].name) != 0)
                k++;
            if (k == sizeof builtin / sizeof builtin[0]) {
                *err = kv_asprintf("objective '%s': not speedup, energy, error, score, "
                                   "max:METRIC or min:METRIC",
                                   s);
                kv_objectives_free(o, i + 1);
                return -1;
            }
            o[i].kind = builtin[k].kind;
            o[i].maximise = builtin[k].maximise;
            o[i].metric = kv_strdup(o[i].kind == KV_OBJ_METRIC ? "combined_score" : s);
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(o[k].name, o[i].name) == 0) {
                *err = kv_asprintf("objective '%s' is named twice", s);
                kv_objectives_free(o, i + 1);
                return -1;
            }
    }
    *out = o;
    return 0;
}

void kv_objectives_free(kv_objective *o, size_t n)
{
    for (size_t i = 0; o && i < n; i++) {
        free(o[i].name);
        free(o[i].metric);
    }
    free(o);
}

static int number(const json_t *metrics, const char *key, double *v)
{
    const json_t *x = json_object_get(metrics, key);
    if (!json_is_number(x) || !isfinite(json_number_value(x))) return -1;
    *v = json_number_value(x);
    return 0;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n > t && strcmp(s + n - t, tail) == 0;
}

int kv_objectives_whole(const json_t *metrics)
{
    const json_t *s = json_object_get(metrics, "screened_out");
    return !(json_is_true(s) || (json_is_number(s) && json_number_value(s) != 0));
}

int kv_objective_value(const kv_objective *o, const json_t *metrics, double *v)
{
    switch (o->kind) {
    case KV_OBJ_METRIC:
        return number(metrics, o->metric, v);
    case KV_OBJ_SPEEDUP:
        return number(metrics, "speedup", v) == 0 ? 0 : number(metrics, "combined_score", v);
    default:
        break;
    }
    /* energy: a geometric mean over the scenarios; error: the largest. */
    const char *tail = o->kind == KV_OBJ_ENERGY ? "_energy_uj" : "_tol_ratio";
    double acc = o->kind == KV_OBJ_ENERGY ? 0.0 : -1.0;
    size_t n = 0;
    const char *key;
    const json_t *x;
    json_object_foreach((json_t *)metrics, key, x)
    {
        double d;
        if (!ends_with(key, tail) || number(metrics, key, &d) != 0) continue;
        if (o->kind == KV_OBJ_ENERGY) {
            if (!(d > 0)) continue;
            acc += log(d);
        } else if (d > acc) {
            acc = d;
        }
        n++;
    }
    if (n == 0) return -1;
    *v = o->kind == KV_OBJ_ENERGY ? exp(acc / (double)n) : acc;
    return 0;
}

int kv_objectives_dominate(const kv_objective *o, size_t n, const double *a, const double *b)
{
    int better = 0;
    for (size_t k = 0; k < n; k++) {
        double x = o[k].maximise ? a[k] : -a[k], y = o[k].maximise ? b[k] : -b[k];
        if (x < y) return 0;
        better |= x > y;
    }
    return better;
}

size_t kv_pareto_front(const kv_objective *o, size_t n, const double *vals, size_t count,
                       size_t *front)
{
    size_t m = 0;
    for (size_t i = 0; i < count; i++) {
        const double *a = vals + i * n;
        int ok = 1;
        for (size_t k = 0; k < n && ok; k++)
            ok = !isnan(a[k]);
        for (size_t j = 0; j < count && ok; j++) {
            const double *b = vals + j * n;
            int complete = 1;
            for (size_t k = 0; k < n && complete; k++)
                complete = !isnan(b[k]);
            ok = !(complete && j != i && kv_objectives_dominate(o, n, b, a));
        }
        if (ok) front[m++] = i;
    }
    return m;
}
