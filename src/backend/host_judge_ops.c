/* The judge's in-place helpers on arenas in the judge's own memory (see
 * host_judge_ops.h): the host twins of cuda/judge_kernels.cu, on the same
 * definitions (judge_ops.h), over chunks on every core. */
#include "backend/host_judge_ops.h"
#include "backend/check.h"
#include "backend/dtype.h"
#include "backend/judge_ops.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Elements per chunk: as the host's own checks. */
#define CHUNK ((size_t)1 << 18)

/* The bits element I of DT holds, drawn as judge_ops.h says. */
static uint32_t bits_at(kv_dtype dt, int dist, uint64_t seed, uint64_t forced, uint64_t i)
{
    if (dist == KVJ_INDEX) return kvj_index_at(seed, forced, i); /* FORCED: the bound */
    float v = kvj_value_at(dist, seed, forced, i);
    switch (dt) {
    case KV_F32: {
        uint32_t u;
        memcpy(&u, &v, 4);
        return u;
    }
    case KV_F16:
        return kv_f32_to_f16(v);
    case KV_BF16:
        return kv_f32_to_bf16(v);
    default:
        return (uint32_t)(int32_t)(dist == KVJ_SMALL_INT || dist == KVJ_QUICK_SMALL_INT
                                       ? v
                                       : rintf(v * 8.0f));
    }
}

static uint32_t raw_at(const unsigned char *p, size_t es, size_t i)
{
    if (es == 2) {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        return h;
    }
    uint32_t u;
    memcpy(&u, p + i * 4, 4);
    return u;
}

/* One pass of a chunked job: which elements, and what each chunk found. */
typedef struct pass {
    unsigned char *p;
    const unsigned char *q;
    kv_dtype dt;
    int dist, write;
    uint64_t seed, forced;
    size_t n, es;
    size_t per_set, stride; /* equal_chunk over sets: PER_SET elements STRIDE bytes apart */
    const double *ref, *scale;
    const void *poison;
    kv_tolerance tol;
    size_t *count, *first; /* per chunk */
    kvj_part *parts;       /* per chunk (check) */
} pass;

static void chunk_range(const pass *ps, size_t c, size_t *i0, size_t *i1)
{
    *i0 = c * CHUNK;
    *i1 = ps->n - *i0 < CHUNK ? ps->n : *i0 + CHUNK;
}

/* gen (WRITE) or count_changed. */
static void gen_chunk(void *arg, size_t c)
{
    pass *ps = arg;
    size_t i0, i1, n = 0, first = 0;
    chunk_range(ps, c, &i0, &i1);
    for (size_t i = i0; i < i1; i++) {
        uint32_t want = bits_at(ps->dt, ps->dist, ps->seed, ps->forced, i);
        if (ps->write) {
            if (ps->es == 2) {
                uint16_t h = (uint16_t)want;
                memcpy(ps->p + i * 2, &h, 2);
            } else {
                memcpy(ps->p + i * 4, &want, 4);
            }
        } else if (raw_at(ps->p, ps->es, i) != want && n++ == 0) {
            first = i;
        }
    }
    ps->count[c] = n;
    ps->first[c] = first;
}

/* count_poison (Q NULL: against the pattern) or count_diff (against Q). */
static void equal_chunk(void *arg, size_t c)
{
    pass *ps = arg;
    size_t i0, i1, n = 0, first = 0;
    chunk_range(ps, c, &i0, &i1);
    for (size_t i = i0; i < i1; i++) {
        const unsigned char *at =
            ps->per_set ? ps->p + i / ps->per_set * ps->stride + i % ps->per_set * ps->es
                        : ps->p + i * ps->es;
        int hit = ps->q ? memcmp(at, ps->q + i * ps->es, ps->es) != 0
                        : memcmp(at, ps->poison, ps->es) == 0;
        if (hit && n++ == 0) first = i;
    }
    ps->count[c] = n;
    ps->first[c] = first;
}

static void check_chunk(void *arg, size_t c)
{
    pass *ps = arg;
    size_t i0, i1;
    chunk_range(ps, c, &i0, &i1);
    kvj_part *part = &ps->parts[c];
    kvj_part_init(part);
    for (size_t i = i0; i < i1; i++) {
        int poisoned = ps->poison && memcmp(ps->p + i * ps->es, ps->poison, ps->es) == 0;
        double want = ps->ref[i];
        double limit = kv_tolerance_limit(ps->tol, want, ps->scale ? ps->scale[i] : 0.0);
        kvj_part_add(part, i, poisoned, poisoned ? 0.0 : kv_dtype_load(ps->dt, ps->p, i), want,
                     limit, ps->tol.atol);
    }
}

/* Runs FN over PS's chunks; the total count and the first index found. */
static size_t run_pass(void (*fn)(void *, size_t), pass *ps, size_t *first)
{
    size_t chunks = ps->n ? (ps->n + CHUNK - 1) / CHUNK : 1;
    ps->count = kv_calloc(2 * chunks, sizeof(size_t));
    ps->first = ps->count + chunks;
    kv_run_chunks(fn, ps, chunks, 0);
    size_t total = 0;
    for (size_t k = 0; k < chunks; k++) {
        if (ps->count[k] && total == 0 && first) *first = ps->first[k];
        total += ps->count[k];
    }
    free(ps->count);
    return total;
}

static int host_gen(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, int dist, size_t count,
                    uint64_t seed, uint64_t forced, kv_fail *err)
{
    (void)b;
    pass ps = {.p = a->host + off,
               .dt = dt,
               .dist = dist,
               .write = 1,
               .seed = seed,
               .forced = forced,
               .n = count,
               .es = kv_dtype_size(dt)};
    if (kv_arena_check(a, off, count * ps.es, err) != 0) return -1;
    run_pass(gen_chunk, &ps, NULL);
    return 0;
}

static int host_count_changed(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, int dist,
                              size_t count, uint64_t seed, uint64_t forced, size_t *n, kv_fail *err)
{
    (void)b;
    pass ps = {.p = a->host + off,
               .dt = dt,
               .dist = dist,
               .seed = seed,
               .forced = forced,
               .n = count,
               .es = kv_dtype_size(dt)};
    if (kv_arena_check(a, off, count * ps.es, err) != 0) return -1;
    *n = run_pass(gen_chunk, &ps, NULL);
    return 0;
}

static int host_count_poison(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, size_t count,
                             size_t sets, size_t stride, const void *pattern, size_t *n,
                             size_t *first, kv_fail *err)
{
    (void)b;
    size_t es = kv_dtype_size(dt);
    if (sets > 1 && stride < count * es) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "sets %zu bytes apart overlap (%zu elements each)",
                    stride, count);
        return -1;
    }
    pass ps = {.p = a->host + off,
               .dt = dt,
               .n = count * sets,
               .es = es,
               .per_set = sets > 1 ? count : 0,
               .stride = stride,
               .poison = pattern};
    if (kv_arena_check(a, off, sets > 1 ? (sets - 1) * stride + count * es : count * es, err) != 0)
        return -1;
    *n = run_pass(equal_chunk, &ps, first);
    return 0;
}

static int host_count_diff(kv_jdev *b, kv_arena *a, size_t off, kv_arena *c, size_t coff,
                           size_t esize, size_t count, size_t *n, size_t *first, kv_fail *err)
{
    (void)b;
    if (kv_arena_check(a, off, count * esize, err) != 0 ||
        kv_arena_check(c, coff, count * esize, err) != 0)
        return -1;
    pass ps = {.p = a->host + off, .q = c->host + coff, .n = count, .es = esize};
    *n = run_pass(equal_chunk, &ps, first);
    return 0;
}

static int host_copy(kv_jdev *b, kv_arena *a, size_t off, kv_arena *c, size_t coff, size_t bytes,
                     kv_fail *err)
{
    (void)b;
    if (kv_arena_check(a, off, bytes, err) != 0 || kv_arena_check(c, coff, bytes, err) != 0)
        return -1;
    memmove(c->host + coff, a->host + off, bytes);
    return 0;
}

static int host_check(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, size_t count,
                      const double *ref, const double *scale, const void *poison, kv_tolerance tol,
                      kv_check *out, kv_fail *err)
{
    (void)b;
    pass ps = {.p = a->host + off,
               .dt = dt,
               .n = count,
               .es = kv_dtype_size(dt),
               .ref = ref,
               .scale = scale,
               .poison = poison,
               .tol = tol};
    if (kv_arena_check(a, off, count * ps.es, err) != 0) return -1;
    size_t chunks = count ? (count + CHUNK - 1) / CHUNK : 1;
    ps.parts = kv_malloc(chunks * sizeof(kvj_part));
    for (size_t k = 0; k < chunks; k++)
        kvj_part_init(&ps.parts[k]);
    if (count) kv_run_chunks(check_chunk, &ps, chunks, 0);
    kv_check_from_parts(ps.parts, chunks, count, out);
    free(ps.parts);
    return 0;
}

static int host_compare(kv_jdev *b, kv_arena *a, size_t off, kv_arena *c, size_t coff, kv_dtype dt,
                        size_t count, const double *ref, const double *scale, kv_tolerance tol,
                        size_t *differ, size_t *first, kv_fail *err)
{
    (void)b;
    size_t bytes = count * kv_dtype_size(dt);
    if (kv_arena_check(a, off, bytes, err) != 0 || kv_arena_check(c, coff, bytes, err) != 0)
        return -1;
    int bitwise = 0;
    *first = 0;
    *differ =
        kv_compare_runs(dt, a->host + off, c->host + coff, ref, scale, count, tol, &bitwise, first);
    return 0;
}

static int host_count_spans(kv_jdev *b, kv_arena *a, const size_t *off, const size_t *len, int n,
                            unsigned char byte, size_t *bad, size_t *first, kv_fail *err)
{
    (void)b;
    *bad = *first = 0;
    for (int i = 0; i < n; i++) {
        if (kv_arena_check(a, off[i], len[i], err) != 0) return -1;
        size_t k = 0;
        for (size_t e = 0; e < len[i]; e++)
            k += a->host[off[i] + e] != byte;
        if (k && !*bad) *first = (size_t)i;
        *bad += k;
    }
    return 0;
}

void kv_host_judge_ops(kv_jdev *b)
{
    b->gen = host_gen;
    b->count_poison = host_count_poison;
    b->count_changed = host_count_changed;
    b->count_diff = host_count_diff;
    b->copy = host_copy;
    b->check = host_check;
    b->compare = host_compare;
    b->count_spans = host_count_spans;
}
