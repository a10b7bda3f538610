/* What the judge's in-place checks share between the device kernels
 * (cuda/judge_kernels.cu, compiled by nvcc at run time with this file put
 * in place of its "#include <kevolve/judge_ops.h>" line) and their host
 * twins (host_judge_ops.c): how an input element is drawn from
 * (distribution, seed, index), and how a chunk of an output is compared
 * with its reference and chunks merged, so that a check on the device
 * means what a check on the host means.
 *
 * Inputs are a pure function of (seed, index): a counter-based hash
 * (splitmix64's finaliser) gives the uniforms, Box-Muller a normal. So the
 * judge can tell later, by drawing again, whether an input changed, and no
 * input ever needs to exist on the host. */
#ifndef KV_BACKENDS_JUDGE_OPS_H
#define KV_BACKENDS_JUDGE_OPS_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define KVJ_FN static __host__ __device__ __forceinline__
#else
#define KVJ_FN static inline
#endif

/* The distributions, numbered as kv_dist (check.h). KVJ_INDEX draws an
 * index tensor's int32 elements uniformly from [0, bound), the bound
 * passed where the others take FORCED (kvj_index_at). KVJ_QUICK_NORMAL is
 * the timed blocks': mean 0, variance 1, in (-3.5, 3.5) (kvj_quick_at). */
enum {
    KVJ_NORMAL = 0,
    KVJ_OUTLIERS = 1,
    KVJ_SMALL_INT = 2,
    KVJ_INDEX = 3,
    KVJ_QUICK_NORMAL = 4,
    KVJ_QUICK_OUTLIERS = 5,
    KVJ_QUICK_SMALL_INT = 6
};

KVJ_FN uint64_t kvj_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Element I of an index tensor: uniform in [0, BOUND) (BOUND >= 1). */
KVJ_FN uint32_t kvj_index_at(uint64_t seed, uint64_t bound, uint64_t i)
{
    return (uint32_t)(kvj_mix64(seed ^ ((i + 1) * 0x9e3779b97f4a7c15ull)) % bound);
}

/* A 32-bit integer hash (Wellons' lowbias32): cheap on a GPU, where
 * kvj_mix64's 64-bit products are not. */
KVJ_FN uint32_t kvj_mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

/* Element I of KVJ_QUICK_NORMAL from SEED: the sum of four uniform bytes of
 * a 32-bit hash, centred and scaled to variance 1 (Irwin-Hall), steps of
 * 0.0068. A timed block's inputs are drawn anew for every block and drawn
 * again to check them; Box-Muller's logarithm and cosine made that cost
 * the GPU more than the timed calls (bench/NOTES.md, issue 21). One hash
 * per element (the seed and the index's high half folded into a key
 * first) and the bytes summed in one instruction on the GPU: the draw was
 * compute-bound at about 1 TB/s, so a long decode's window was mostly the
 * judge's writes. */
KVJ_FN uint32_t kvj_quick_hash(uint64_t seed, uint64_t i)
{
    uint32_t key = (uint32_t)seed ^ ((uint32_t)(seed >> 32) * 0x85ebca6bu) ^
                   ((uint32_t)(i >> 32) * 0xc2b2ae35u);
    return kvj_mix32((uint32_t)i * 0x9e3779b9u + key);
}

/* The quick draws of element I from its hash H: KVJ_QUICK_NORMAL's
 * Irwin-Hall value; KVJ_QUICK_OUTLIERS the same but about one element in
 * 500, and always element FORCED, +-(30..80); KVJ_QUICK_SMALL_INT an
 * integer in [-4, 4]. A timed block's inputs on every distribution of the
 * correctness trials, at the quick draw's cost (judge_time.c). */
KVJ_FN float kvj_quick_of(int dist, uint32_t h, uint64_t i, uint64_t forced)
{
    if (dist == KVJ_QUICK_SMALL_INT) return (float)((int)(((uint64_t)h * 9u) >> 32) - 4);
#ifdef __CUDA_ARCH__
    int sum = (int)__dp4a(h, 0x01010101u, 0u);
#else
    int sum = (int)(h & 255u) + (int)((h >> 8) & 255u) + (int)((h >> 16) & 255u) + (int)(h >> 24);
#endif
    float v = ((float)sum - 510.0f) * (1.7320508f / 256.0f);
    if (dist == KVJ_QUICK_OUTLIERS) {
        uint32_t o = kvj_mix32(h ^ 0x5bd1e995u);
        if (i == forced || o < 0xffffffffu / 500u) {
            uint32_t m = kvj_mix32(o + 0x9e3779b9u);
            /* 30 + 50 u as one integer, scaled by a power of two: no
             * multiply-add a compiler could fuse on one side only. */
            v = ((m & 1u) ? 1.0f : -1.0f) * (float)(503316480u + 50u * (m >> 8)) *
                (1.0f / 16777216.0f);
        }
    }
    return v;
}

KVJ_FN float kvj_quick_at(uint64_t seed, uint64_t i)
{
    return kvj_quick_of(KVJ_QUICK_NORMAL, kvj_quick_hash(seed, i), i, ~0ull);
}

/* Element I's value from DIST and SEED, before rounding to a dtype. With
 * outliers, about one element in 500, and always element FORCED, is
 * +-(30..80); small integers are in [-4, 4]. */
KVJ_FN float kvj_value_at(int dist, uint64_t seed, uint64_t forced, uint64_t i)
{
    if (dist >= KVJ_QUICK_NORMAL) return kvj_quick_of(dist, kvj_quick_hash(seed, i), i, forced);
    uint64_t h = kvj_mix64(seed ^ ((i + 1) * 0x9e3779b97f4a7c15ull));
    if (dist == KVJ_SMALL_INT) return (float)((int)((h >> 32) % 9u) - 4);
    float u1 = ((uint32_t)(h >> 40) + 1u) * (1.0f / 16777217.0f); /* (0, 1] */
    float u2 = (uint32_t)(h & 0xffffffu) * (1.0f / 16777216.0f);  /* [0, 1) */
    float v = sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
    if (dist == KVJ_OUTLIERS) {
        uint64_t o = kvj_mix64(h ^ 0xd1b54a32d192ed03ull);
        if (i == forced || o < 0xffffffffffffffffull / 500) {
            uint64_t m = kvj_mix64(o + 0x9e3779b97f4a7c15ull);
            float u = (uint32_t)(m >> 40) * (1.0f / 16777216.0f);
            v = ((m & 1) ? 1.0f : -1.0f) * (30.0f + 50.0f * u);
        }
    }
    return v;
}

/* One chunk's comparison of an output with its reference; merged in any
 * grouping, the result is the same (sums aside, which are merged in a fixed
 * order by each side). The worst element is the non-finite one with the
 * smallest index if any, else the one with the largest excess over its
 * allowance, the smallest index among equals. */
typedef struct kvj_part {
    unsigned long long unwritten, first_unwritten, nonfinite, bad, worst;
    double max_abs, max_rel, max_ratio, err2, ref2;
    double worst_excess, worst_got, worst_want, worst_limit;
} kvj_part;

KVJ_FN void kvj_part_init(kvj_part *p)
{
    p->unwritten = p->nonfinite = p->bad = 0;
    p->first_unwritten = p->worst = ~0ull;
    p->max_abs = p->max_rel = p->max_ratio = p->err2 = p->ref2 = 0.0;
    p->worst_excess = -1.0;
    p->worst_got = p->worst_want = p->worst_limit = 0.0;
}

/* 1 when a worst candidate (EXCESS, I) outranks P's. */
KVJ_FN int kvj_outranks(const kvj_part *p, double excess, unsigned long long i)
{
    return excess > p->worst_excess || (excess == p->worst_excess && i < p->worst);
}

/* Element I: POISONED (still unwritten), else GOT against WANT with the
 * allowance LIMIT (atol + rtol |want| + stol scale); ATOL for the relative
 * error's floor. */
KVJ_FN void kvj_part_add(kvj_part *p, unsigned long long i, int poisoned, double got, double want,
                         double limit, double atol)
{
    if (poisoned) {
        if (p->unwritten++ == 0 || i < p->first_unwritten) p->first_unwritten = i;
        return;
    }
    double excess;
    if (!isfinite(got)) {
        p->nonfinite++;
        excess = INFINITY;
    } else {
        double d = fabs(got - want);
        double rel = d / fmax(fabs(want), fmax(atol, 1e-30));
        p->err2 += d * d;
        p->ref2 += want * want;
        if (d > p->max_abs) p->max_abs = d;
        if (rel > p->max_rel) p->max_rel = rel;
        if (limit > 0 && d / limit > p->max_ratio) p->max_ratio = d / limit;
        /* A NaN reference or scale is no allowance: a bad element, ranked
         * below any non-finite output. */
        excess = isnan(d - limit) ? 1.7976931348623157e308 : d - limit;
        if (!(d <= limit)) p->bad++;
    }
    if (kvj_outranks(p, excess, i)) {
        p->worst_excess = excess;
        p->worst = i;
        p->worst_got = got;
        p->worst_want = want;
        p->worst_limit = limit;
    }
}

/* Merges B into A. */
KVJ_FN void kvj_part_merge(kvj_part *a, const kvj_part *b)
{
    if (b->unwritten && (a->unwritten == 0 || b->first_unwritten < a->first_unwritten))
        a->first_unwritten = b->first_unwritten;
    a->unwritten += b->unwritten;
    a->nonfinite += b->nonfinite;
    a->bad += b->bad;
    a->err2 += b->err2;
    a->ref2 += b->ref2;
    if (b->max_abs > a->max_abs) a->max_abs = b->max_abs;
    if (b->max_rel > a->max_rel) a->max_rel = b->max_rel;
    if (b->max_ratio > a->max_ratio) a->max_ratio = b->max_ratio;
    if (b->worst != ~0ull && kvj_outranks(a, b->worst_excess, b->worst)) {
        a->worst_excess = b->worst_excess;
        a->worst = b->worst;
        a->worst_got = b->worst_got;
        a->worst_want = b->worst_want;
        a->worst_limit = b->worst_limit;
    }
}

/* The device check's parts, at most (one per block). */
#define KVJ_MAX_PARTS 1024

/* The canary spans of one arena checked in one launch (two per tensor). */
#define KVJ_MAX_SPANS 32

#endif
