/* Output checks, random inputs and statistics (see check.h). */
#include "backend/check.h"
#include "backend/dtype.h"
#include "backend/judge_ops.h"
#include "util/buf.h"

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
    case KV_DIST_INDEX:
        return "indices";
    case KV_DIST_QUICK_NORMAL:
        return "quick_normal";
    case KV_DIST_QUICK_OUTLIERS:
        return "quick_normal_with_outliers";
    case KV_DIST_QUICK_SMALL_INT:
        return "quick_small_integers";
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

/* Elements per chunk of a check: small enough that a prefill's output
 * (millions of elements) spreads over every core, large enough that a
 * thread's start is paid back. */
#define CHECK_CHUNK ((size_t)1 << 18)

/* Runs FN(CTX, c) for every chunk c < CHUNKS on up to all online CPUs
 * (KV_FILL_MAX_THREADS at most), this thread included; the chunks are
 * taken in any order, so FN writes only chunk c's own results. */
typedef struct chunk_run {
    void (*fn)(void *ctx, size_t c);
    void *ctx;
    size_t chunks;
    _Atomic size_t next;
} chunk_run;

static void *chunk_worker(void *arg)
{
    chunk_run *r = arg;
    for (size_t c; (c = atomic_fetch_add(&r->next, 1)) < r->chunks;)
        r->fn(r->ctx, c);
    return NULL;
}

void kv_run_chunks(void (*fn)(void *, size_t), void *ctx, size_t chunks, int threads)
{
    chunk_run r = {.fn = fn, .ctx = ctx, .chunks = chunks};
    atomic_init(&r.next, 0);
    if (threads <= 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        threads = ncpu < 1 ? 1 : ncpu > KV_FILL_MAX_THREADS ? KV_FILL_MAX_THREADS : (int)ncpu;
    }
    if (threads > KV_FILL_MAX_THREADS) threads = KV_FILL_MAX_THREADS;
    if ((size_t)threads > chunks) threads = (int)(chunks ? chunks : 1);
    pthread_t th[KV_FILL_MAX_THREADS];
    int started = 0;
    for (int i = 1; i < threads; i++) /* a thread that cannot start leaves its share to the rest */
        if (pthread_create(&th[started], NULL, chunk_worker, &r) == 0) started++;
    chunk_worker(&r); /* this thread works too, and finishes alone if none started */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* A fill shared by its threads; chunks are taken in any order. */
typedef struct fill_job {
    kv_dtype dt;
    kv_dist d;
    size_t n, forced;
    uint64_t base;
    void *host;
    double *vals;
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

static void fill_chunk_run(void *arg, size_t c)
{
    fill_chunk(arg, c);
}

void kv_fill_random_threads(kv_dtype dt, kv_dist d, kv_rng *rng, size_t n, void *host, double *vals,
                            int threads)
{
    kv_rng_ziggurat_init();
    fill_job j = {.dt = dt, .d = d, .n = n, .host = host, .vals = vals};
    j.base = kv_rng_next(rng);
    j.forced = n ? (size_t)kv_rng_below(rng, n) : 0;
    kv_run_chunks(fill_chunk_run, &j, (n + KV_FILL_CHUNK - 1) / KV_FILL_CHUNK, threads);
}

void kv_fill_random(kv_dtype dt, kv_dist d, kv_rng *rng, size_t n, void *host, double *vals)
{
    kv_fill_random_threads(dt, d, rng, n, host, vals, 0);
}

void kv_fill_index(kv_rng *rng, size_t n, int64_t bound, int32_t *host, double *vals)
{
    for (size_t i = 0; i < n; i++) {
        host[i] = (int32_t)kv_rng_below(rng, (uint64_t)bound);
        if (vals) vals[i] = host[i];
    }
}

double kv_tolerance_limit(kv_tolerance tol, double want, double scale)
{
    return tol.atol + tol.rtol * fabs(want) + tol.stol * scale;
}

/* One chunk's share of kv_check_output: the same fields over its elements,
 * plus what merging needs (the worst's excess, the sums). */
typedef struct check_part {
    kv_check c;
    double err2, ref2, worst_excess;
} check_part;

typedef struct check_job {
    kv_dtype dt;
    const void *out, *poison;
    const double *ref, *scale;
    size_t n;
    kv_tolerance tol;
    check_part *parts;
} check_job;

static void check_chunk(void *arg, size_t chunk)
{
    const check_job *j = arg;
    check_part *p = &j->parts[chunk];
    kv_check *c = &p->c;
    memset(p, 0, sizeof *p);
    c->first_unwritten = (size_t)-1;
    p->worst_excess = -1.0;
    size_t i0 = chunk * CHECK_CHUNK, i1 = j->n - i0 < CHECK_CHUNK ? j->n : i0 + CHECK_CHUNK;
    kv_tolerance tol = j->tol;
    for (size_t i = i0; i < i1; i++) {
        if (j->poison && kv_dtype_is_poison(j->dt, j->out, i, j->poison)) {
            if (c->unwritten++ == 0) c->first_unwritten = i;
            continue;
        }
        double got = kv_dtype_load(j->dt, j->out, i), want = j->ref[i];
        double limit = kv_tolerance_limit(tol, want, j->scale ? j->scale[i] : 0.0);
        if (!isfinite(got)) {
            if (c->nonfinite++ == 0 && p->worst_excess < INFINITY) {
                p->worst_excess = INFINITY;
                c->worst = i;
                c->worst_got = got;
                c->worst_want = want;
                c->worst_limit = limit;
            }
            continue;
        }
        double d = fabs(got - want);
        double rel = d / fmax(fabs(want), fmax(tol.atol, 1e-30));
        p->err2 += d * d;
        p->ref2 += want * want;
        if (d > c->max_abs) c->max_abs = d;
        if (rel > c->max_rel) c->max_rel = rel;
        /* The error against the tolerance (a zero allowance with an error is
         * a bad element, counted below). */
        if (limit > 0 && d / limit > c->max_ratio) c->max_ratio = d / limit;
        /* A NaN reference or scale is no allowance: the element counts as bad. */
        double excess = isnan(d - limit) ? HUGE_VAL : d - limit;
        if (!(d <= limit)) c->bad++;
        if (excess > p->worst_excess) {
            p->worst_excess = excess;
            c->worst = i;
            c->worst_got = got;
            c->worst_want = want;
            c->worst_limit = limit;
        }
    }
}

void kv_check_output_threads(kv_dtype dt, const void *out, const double *ref, const double *scale,
                             size_t n, const void *poison, kv_tolerance tol, kv_check *c,
                             int threads)
{
    size_t chunks = n ? (n + CHECK_CHUNK - 1) / CHECK_CHUNK : 1;
    check_job j = {.dt = dt,
                   .out = out,
                   .poison = poison,
                   .ref = ref,
                   .scale = scale,
                   .n = n,
                   .tol = tol,
                   .parts = kv_malloc(chunks * sizeof(check_part))};
    kv_run_chunks(check_chunk, &j, chunks, threads);
    /* Merged in chunk order, so the result is the serial one whatever the
     * threads (the sums' order too): the worst is the first element with
     * the largest excess, a non-finite output outranking any finite one. */
    memset(c, 0, sizeof *c);
    c->n = n;
    c->first_unwritten = (size_t)-1;
    double err2 = 0.0, ref2 = 0.0, worst_excess = -1.0;
    for (size_t k = 0; k < chunks; k++) {
        const check_part *p = &j.parts[k];
        if (p->c.unwritten && c->unwritten == 0) c->first_unwritten = p->c.first_unwritten;
        c->unwritten += p->c.unwritten;
        c->bad += p->c.bad;
        err2 += p->err2;
        ref2 += p->ref2;
        if (p->c.max_abs > c->max_abs) c->max_abs = p->c.max_abs;
        if (p->c.max_rel > c->max_rel) c->max_rel = p->c.max_rel;
        if (p->c.max_ratio > c->max_ratio) c->max_ratio = p->c.max_ratio;
        /* The first non-finite element anywhere is the worst, as serially. */
        int take = p->c.nonfinite ? c->nonfinite == 0 && worst_excess < INFINITY
                                  : p->worst_excess > worst_excess;
        if (take) {
            worst_excess = p->worst_excess;
            c->worst = p->c.worst;
            c->worst_got = p->c.worst_got;
            c->worst_want = p->c.worst_want;
            c->worst_limit = p->c.worst_limit;
        }
        c->nonfinite += p->c.nonfinite;
    }
    c->rel_l2 = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
    free(j.parts);
}

void kv_check_output(kv_dtype dt, const void *out, const double *ref, const double *scale, size_t n,
                     const void *poison, kv_tolerance tol, kv_check *c)
{
    kv_check_output_threads(dt, out, ref, scale, n, poison, tol, c, 0);
}

void kv_check_from_parts(const kvj_part *parts, size_t n, size_t count, kv_check *c)
{
    kvj_part all;
    kvj_part_init(&all);
    for (size_t k = 0; k < n; k++)
        kvj_part_merge(&all, &parts[k]);
    memset(c, 0, sizeof *c);
    c->n = count;
    c->unwritten = all.unwritten;
    c->first_unwritten = all.unwritten ? all.first_unwritten : (size_t)-1;
    c->nonfinite = all.nonfinite;
    c->bad = all.bad;
    c->max_abs = all.max_abs;
    c->max_rel = all.max_rel;
    c->max_ratio = all.max_ratio;
    c->rel_l2 = all.ref2 > 0 ? sqrt(all.err2 / all.ref2) : sqrt(all.err2);
    if (all.worst != ~0ull) {
        c->worst = all.worst;
        c->worst_got = all.worst_got;
        c->worst_want = all.worst_want;
        c->worst_limit = all.worst_limit;
    }
}

typedef struct compare_job {
    kv_dtype dt;
    const void *a, *b;
    const double *ref, *scale;
    size_t n;
    kv_tolerance tol;
    size_t *differ, *first; /* per chunk */
} compare_job;

static void compare_chunk(void *arg, size_t chunk)
{
    const compare_job *j = arg;
    size_t i0 = chunk * CHECK_CHUNK, i1 = j->n - i0 < CHECK_CHUNK ? j->n : i0 + CHECK_CHUNK;
    size_t differ = 0, first = 0;
    for (size_t i = i0; i < i1; i++) {
        double x = kv_dtype_load(j->dt, j->a, i), y = kv_dtype_load(j->dt, j->b, i);
        int same =
            x == y || (isnan(x) && isnan(y)) || /* the same Inf is no difference */
            fabs(x - y) <= kv_tolerance_limit(j->tol, j->ref[i], j->scale ? j->scale[i] : 0.0);
        if (!same && differ++ == 0) first = i;
    }
    j->differ[chunk] = differ;
    j->first[chunk] = first;
}

size_t kv_compare_runs(kv_dtype dt, const void *a, const void *b, const double *ref,
                       const double *scale, size_t n, kv_tolerance tol, int *bitwise, size_t *first)
{
    size_t s = kv_dtype_size(dt);
    *bitwise = memcmp(a, b, n * s) == 0;
    if (*bitwise) return 0;
    size_t chunks = (n + CHECK_CHUNK - 1) / CHECK_CHUNK;
    compare_job j = {.dt = dt,
                     .a = a,
                     .b = b,
                     .ref = ref,
                     .scale = scale,
                     .n = n,
                     .tol = tol,
                     .differ = kv_malloc(2 * chunks * sizeof(size_t))};
    j.first = j.differ + chunks;
    kv_run_chunks(compare_chunk, &j, chunks, 0);
    size_t differ = 0;
    for (size_t k = 0; k < chunks; k++) {
        if (j.differ[k] && differ == 0) *first = j.first[k];
        differ += j.differ[k];
    }
    free(j.differ);
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
