/* Feature values, fitness, and running min-max binning (see features.h). */
#include "search/features.h"
#include "search/database.h"

#include <math.h>
#include <string.h>

/* 1 when NAME is one of the N dimension names. */
static int is_dimension(const char *name, char *const *dims, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (dims[i] && strcmp(dims[i], name) == 0) return 1;
    return 0;
}

double kv_fitness_from(const json_t *metrics, char *const *dims, size_t n_dims)
{
    if (!json_is_object(metrics)) return NAN;
    json_t *cs = json_object_get(metrics, "combined_score");
    if (json_is_number(cs) && isfinite(json_number_value(cs))) return json_number_value(cs);
    double sum = 0;
    size_t n = 0;
    const char *key;
    json_t *val;
    /* jansson keeps insertion order, so the sum is the same on every replay. */
    json_object_foreach((json_t *)metrics, key, val)
    {
        if (!json_is_number(val) || is_dimension(key, dims, n_dims)) continue;
        double v = json_number_value(val);
        if (!isfinite(v)) continue;
        sum += v;
        n++;
    }
    if (n == 0) return NAN;
    double mean = sum / (double)n;
    return isfinite(mean) ? mean : NAN;
}

double kv_fitness(const json_t *metrics, const kv_database_config *cfg)
{
    if (!cfg) return kv_fitness_from(metrics, NULL, 0);
    return kv_fitness_from(metrics, cfg->feature_dimensions, cfg->n_feature_dimensions);
}

double kv_feature_value(const char *dim, const kv_program *p, double fitness, double diversity)
{
    if (strcmp(dim, "complexity") == 0) return p->source ? (double)strlen(p->source) : 0.0;
    if (strcmp(dim, "score") == 0) return fitness;
    if (strcmp(dim, "diversity") == 0) return diversity;
    return kv_program_metric(p, dim);
}

int kv_feature_bin(kv_feature_scale *s, double v, int bins)
{
    if (!isfinite(v)) return 0;
    if (!s->seen) {
        s->min = s->max = v;
        s->seen = 1;
    } else {
        if (v < s->min) s->min = v;
        if (v > s->max) s->max = v;
    }
    if (bins <= 1 || !(s->max > s->min)) return 0;
    /* Halves keep max - min finite even for values near DBL_MAX. */
    double t = (v / 2 - s->min / 2) / (s->max / 2 - s->min / 2);
    double b = floor(t * bins);
    if (!(b >= 0)) return 0;
    if (b > bins - 1) return bins - 1;
    return (int)b;
}
