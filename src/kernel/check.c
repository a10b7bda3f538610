/* Output checks, random inputs and statistics (see check.h). */
#include "kernel/check.h"
#include "kernel/dtype.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* One chunk's seed: BASE and the chunk index C mixed (splitmix64's finaliser),
 * so neighbouring chunks get unrelated generators. */
static uint64_t chunk_seed(uint64_t base, size_t c)
{
    uint64_t z = base ^ (((uint64_t)c + 1) * 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One value of distribution D from R, before rounding to the dtype; FORCED:
 * this element must be an outlier (KV_DIST_OUTLIERS). I32: scaled and
 * rounded for the normal distributions, so integers carry their spread. */
static inline double draw(kv_rng *r, kv_dist d, int forced, int i32)
{
    if (d == KV_DIST_SMALL_INT) return (double)kv_rng_below(r, 9) - 4.0;
    double v = kv_rng_normal_ziggurat(r);
    /* one in 500 (a compare, not a division: this runs per element) */
    if (d == KV_DIST_OUTLIERS && (forced || kv_rng_next(r) < UINT64_MAX / 500))
        v = (kv_rng_below(r, 2) ? 1.0 : -1.0) * (30.0 + 50.0 * kv_rng_uniform(r));
    if (i32) v = round(v * 8.0);
    return v;
}

/* A fill shared by its threads; chunks are taken in any order. */
typedef struct fill_job {
    kv_dtype dt;
    kv_dist d;
    size_t n, forced, chunks;
    uint64_t base;
    void *host;
    double *vals;
    _Atomic size_t next;
} fill_job;

/* Fills chunk C of J from its own generator: the result depends on the
 * chunk's index only, never on the thread or the order. */
static void fill_chunk(const fill_job *j, size_t c)
{
    size_t i0 = c * KV_FILL_CHUNK, i1 = j->n - i0 < KV_FILL_CHUNK ? j->n : i0 + KV_FILL_CHUNK;
    size_t forced = j->d == KV_DIST_OUTLIERS ? j->forced : (size_t)-1;
    kv_dist d = j->d;
    double *vals = j->vals;
    kv_rng r;
    kv_rng_seed(&r, chunk_seed(j->base, c));
    switch (j->dt) { /* bf16, f16, f32: conversions inlined in one loop per type */
    case KV_BF16: {
        uint16_t *p = j->host;
        for (size_t i = i0; i < i1; i++) {
            uint16_t h = kv_f32_to_bf16((float)draw(&r, d, i == forced, 0));
            p[i] = h;
            if (vals) vals[i] = kv_bf16_to_f32(h);
        }
        break;
    }
    case KV_F16: {
        uint16_t *p = j->host;
        for (size_t i = i0; i < i1; i++) {
            uint16_t h = kv_f32_to_f16((float)draw(&r, d, i == forced, 0));
            p[i] = h;
            if (vals) vals[i] = kv_f16_to_f32(h);
        }
        break;
    }
    case KV_F32: {
        float *p = j->host;
        for (size_t i = i0; i < i1; i++) {
            float f = (float)draw(&r, d, i == forced, 0);
            p[i] = f;
            if (vals) vals[i] = f;
        }
        break;
    }
    default:
        for (size_t i = i0; i < i1; i++) {
            kv_dtype_store(j->dt, j->host, i, draw(&r, d, i == forced, j->dt == KV_I32));
            if (vals) vals[i] = kv_dtype_load(j->dt, j->host, i);
        }
        break;
    }
}

/* A thread: takes chunks until none are left. */
static void *fill_worker(void *arg)
{
    fill_job *j = arg;
    for (size_t c; (c = atomic_fetch_add(&j->next, 1)) < j->chunks;)
        fill_chunk(j, c);
    return NULL;
}

void kv_fill_random_threads(kv_dtype dt, kv_dist d, kv_rng *rng, size_t n, void *host, double *vals,
                            int threads)
{
    kv_rng_ziggurat_init();
    fill_job j = {.dt = dt, .d = d, .n = n, .host = host, .vals = vals};
    j.base = kv_rng_next(rng);
    j.forced = n ? (size_t)kv_rng_below(rng, n) : 0;
    j.chunks = (n + KV_FILL_CHUNK - 1) / KV_FILL_CHUNK;
    atomic_init(&j.next, 0);
    if (threads <= 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        threads = ncpu < 1 ? 1 : ncpu > KV_FILL_MAX_THREADS ? KV_FILL_MAX_THREADS : (int)ncpu;
        if ((size_t)threads > j.chunks) threads = (int)(j.chunks ? j.chunks : 1);
    }
    if (threads > KV_FILL_MAX_THREADS) threads = KV_FILL_MAX_THREADS;
    pthread_t th[KV_FILL_MAX_THREADS];
    int started = 0;
    for (int i = 1; i < threads; i++) /* a thread that cannot start leaves its share to the rest */
        if (pthread_create(&th[started], NULL, fill_worker, &j) == 0) started++;
    fill_worker(&j); /* this thread works too, and finishes alone if none started */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

void kv_fill_random(kv_dtype dt, kv_dist d, kv_rng *rng, size_t n, void *host, double *vals)
{
    kv_fill_random_threads(dt, d, rng, n, host, vals, 0);
}

double kv_tolerance_limit(kv_tolerance tol, double want, double scale)
{
    return tol.atol + tol.rtol * fabs(want) + tol.stol * scale;
}

void kv_check_output(kv_dtype dt, const void *out, const double *ref, const double *scale, size_t n,
                     const void *poison, kv_tolerance tol, kv_check *c)
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
        double limit = kv_tolerance_limit(tol, want, scale ? scale[i] : 0.0);
        if (!isfinite(got)) {
            if (c->nonfinite++ == 0 && worst_excess < INFINITY) {
                worst_excess = INFINITY;
                c->worst = i;
                c->worst_got = got;
                c->worst_want = want;
                c->worst_limit = limit;
            }
            continue;
        }
        double d = fabs(got - want);
        double rel = d / fmax(fabs(want), fmax(tol.atol, 1e-30));
        err2 += d * d;
        ref2 += want * want;
        if (d > c->max_abs) c->max_abs = d;
        if (rel > c->max_rel) c->max_rel = rel;
        /* The error against the tolerance (a zero allowance with an error is
         * a bad element, counted below). */
        if (limit > 0 && d / limit > c->max_ratio) c->max_ratio = d / limit;
        /* A NaN reference or scale is no allowance: the element counts as bad. */
        double excess = isnan(d - limit) ? HUGE_VAL : d - limit;
        if (!(d <= limit)) c->bad++;
        if (excess > worst_excess) {
            worst_excess = excess;
            c->worst = i;
            c->worst_got = got;
            c->worst_want = want;
            c->worst_limit = limit;
        }
    }
    c->rel_l2 = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
}

size_t kv_compare_runs(kv_dtype dt, const void *a, const void *b, const double *ref,
                       const double *scale, size_t n, kv_tolerance tol, int *bitwise, size_t *first)
{
    size_t s = kv_dtype_size(dt);
    *bitwise = memcmp(a, b, n * s) == 0;
    if (*bitwise) return 0;
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) {
        double x = kv_dtype_load(dt, a, i), y = kv_dtype_load(dt, b, i);
        int same = (isnan(x) && isnan(y)) ||
                   fabs(x - y) <= kv_tolerance_limit(tol, ref[i], scale ? scale[i] : 0.0);
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
