/* Output checks, random inputs and statistics (see check.h). */
#include "kernel/check.h"
#include "kernel/dtype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *kv_dist_name(kv_dist d)
{
    switch (d) {
    case KV_DIST_NORMAL:
        return "normal";
    case KV_DIST_OUTLIERS:
        return "normal_with_outliers";
    case KV_DIST_SMALL_INT:
        return "small_integers";
    default:
        return "?";
    }
}

void kv_fill_random(kv_dtype dt, kv_dist d, kv_rng *rng, size_t n, void *host, double *vals)
{
    size_t forced = n ? (size_t)kv_rng_below(rng, n) : 0;
    for (size_t i = 0; i < n; i++) {
        double v;
        if (d == KV_DIST_SMALL_INT) {
            v = (double)kv_rng_below(rng, 9) - 4.0;
        } else {
            v = kv_rng_normal(rng);
            if (d == KV_DIST_OUTLIERS && (i == forced || kv_rng_below(rng, 500) == 0))
                v = (kv_rng_below(rng, 2) ? 1.0 : -1.0) * (30.0 + 50.0 * kv_rng_uniform(rng));
            if (dt == KV_I32) v = round(v * 8.0);
        }
        kv_dtype_store(dt, host, i, v);
        vals[i] = kv_dtype_load(dt, host, i);
    }
}

void kv_check_output(kv_dtype dt, const void *out, const double *ref, size_t n, const void *poison,
                     kv_tolerance tol, kv_check *c)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    c->first_unwritten = (size_t)-1;
    double err2 = 0.0, ref2 = 0.0, worst_excess = -1.0;
    for (size_t i = 0; i < n; i++) {
        if (poison && kv_dtype_is_poison(dt, out, i, poison)) {
            if (c->unwritten++ == 0) c->first_unwritten = i;
            continue;
        }
        double got = kv_dtype_load(dt, out, i), want = ref[i];
        if (!isfinite(got)) {
            if (c->nonfinite++ == 0 && worst_excess < INFINITY) {
                worst_excess = INFINITY;
                c->worst = i;
                c->worst_got = got;
                c->worst_want = want;
            }
            continue;
        }
        double d = fabs(got - want);
        double rel = d / fmax(fabs(want), fmax(tol.atol, 1e-30));
        err2 += d * d;
        ref2 += want * want;
        if (d > c->max_abs) c->max_abs = d;
        if (rel > c->max_rel) c->max_rel = rel;
        double limit = tol.atol + tol.rtol * fabs(want);
        if (d > limit) c->bad++;
        if (d - limit > worst_excess) {
            worst_excess = d - limit;
            c->worst = i;
            c->worst_got = got;
            c->worst_want = want;
        }
    }
    c->rel_l2 = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
}

size_t kv_compare_runs(kv_dtype dt, const void *a, const void *b, const double *ref, size_t n,
                       kv_tolerance tol, int *bitwise, size_t *first)
{
    size_t s = kv_dtype_size(dt);
    *bitwise = memcmp(a, b, n * s) == 0;
    if (*bitwise) return 0;
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) {
        double x = kv_dtype_load(dt, a, i), y = kv_dtype_load(dt, b, i);
        int same = (isnan(x) && isnan(y)) || fabs(x - y) <= tol.atol + tol.rtol * fabs(ref[i]);
        if (!same && differ++ == 0) *first = i;
    }
    return differ;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *s, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    return i + 1 < n ? s[i] * (1 - f) + s[i + 1] * f : s[n - 1];
}

void kv_stats(double *samples, size_t n, double *median, double *iqr, double *min)
{
    if (n == 0) {
        *median = *iqr = *min = NAN;
        return;
    }
    qsort(samples, n, sizeof *samples, cmp_double);
    *median = quantile(samples, n, 0.5);
    *iqr = quantile(samples, n, 0.75) - quantile(samples, n, 0.25);
    *min = samples[0];
}
