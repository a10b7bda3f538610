/* Numeric checks of kernel outputs and small statistics: random inputs from
 * several distributions, comparison against the reference (unwritten
 * elements, NaN and Inf, max absolute, max relative and relative L2 error),
 * and median and interquartile range of timings. */
#ifndef KV_BACKENDS_CHECK_H
#define KV_BACKENDS_CHECK_H

#include <kevolve/task.h>

#include "util/rng.h"

#include <stddef.h>

typedef enum kv_dist {
    KV_DIST_NORMAL = 0, /* N(0, 1) */
    KV_DIST_OUTLIERS,   /* N(0, 1) with about one in 500 elements (at least one) of size 30..80 */
    KV_DIST_SMALL_INT,  /* integers in [-4, 4] */
    KV_DIST_COUNT,      /* the distributions trials take in turn */
    /* Index tensors' (kv_tensor_spec.index_of): integers uniform in [0, a
     * bound), whatever the trial's distribution. */
    KV_DIST_INDEX = KV_DIST_COUNT,
    /* The timed blocks' inputs drawn on a device (judge_ops.h's
     * KVJ_QUICK_*): close to N(0, 1), with outliers, small integers;
     * cheap to draw. */
    KV_DIST_QUICK_NORMAL,
    KV_DIST_QUICK_OUTLIERS,
    KV_DIST_QUICK_SMALL_INT
} kv_dist;

const char *kv_dist_name(kv_dist d);

/* Fills N elements of dtype DT at HOST (bytes) and VALS (the values the
 * image holds, as doubles; NULL: not wanted) from distribution D. RNG gives
 * a base seed and the forced outlier's index (two draws); the elements come
 * in chunks of KV_FILL_CHUNK, each from its own generator seeded from (base
 * seed, chunk index), on up to all online CPUs (at most
 * KV_FILL_MAX_THREADS; one thread for a single chunk). The result depends
 * on RNG's state only, never on the number of threads. */
void kv_fill_random(kv_dtype dt, kv_dist d, kv_rng *rng, size_t n, void *host, double *vals);

/* Fills N int32 elements at HOST (and VALS, NULL: not wanted) uniformly
 * from [0, BOUND) (BOUND >= 1) with RNG: an index tensor's draw. */
void kv_fill_index(kv_rng *rng, size_t n, int64_t bound, int32_t *host, double *vals);

#define KV_FILL_CHUNK ((size_t)1 << 20)
#define KV_FILL_MAX_THREADS 64

/* kv_fill_random on THREADS threads (<= 0: the choice above; capped at
 * KV_FILL_MAX_THREADS). Same result for every THREADS; for tests and
 * benchmarks. */
void kv_fill_random_threads(kv_dtype dt, kv_dist d, kv_rng *rng, size_t n, void *host, double *vals,
                            int threads);

typedef struct kv_check {
    size_t n;         /* elements compared */
    size_t unwritten; /* still holding the poison */
    size_t nonfinite; /* NaN or Inf (other than the poison) */
    size_t bad;       /* outside the tolerance */
    double max_abs, max_rel, rel_l2;
    double max_ratio; /* largest |out - ref| / allowance: <= 1 when every element is right */
    size_t worst;     /* index of the largest violation (or error) */
    double worst_got, worst_want;
    double worst_limit; /* the allowance at WORST: atol + rtol |want| + stol scale */
    size_t first_unwritten;
} kv_check;

/* The allowance for an element with reference WANT and error scale SCALE:
 * TOL.atol + TOL.rtol |WANT| + TOL.stol SCALE (see kv_tolerance). */
double kv_tolerance_limit(kv_tolerance tol, double want, double scale);

/* Compares N elements of OUT (dtype DT) with REF; SCALE: each element's
 * error scale for TOL.stol (NULL: all 0). POISON: the poison bits (NULL: no
 * unwritten check). max_abs, max_rel (|out - ref| / max(|ref|, atol)) and
 * rel_l2 do not depend on SCALE; bad and worst do. Big outputs are checked
 * on all online CPUs (a prefill's output is millions of elements, checked
 * several times per child). */
void kv_check_output(kv_dtype dt, const void *out, const double *ref, const double *scale, size_t n,
                     const void *poison, kv_tolerance tol, kv_check *c);
/* kv_check_output on THREADS threads (<= 0: up to all online CPUs, as the
 * fill). The elements are split in fixed chunks and merged in order: the
 * result is the same for every THREADS. For tests and benchmarks. */
void kv_check_output_threads(kv_dtype dt, const void *out, const double *ref, const double *scale,
                             size_t n, const void *poison, kv_tolerance tol, kv_check *c,
                             int threads);

/* Counts elements where A and B (dtype DT) differ by more than the
 * tolerance around REF (with SCALE as in kv_check_output; NULL: all 0);
 * *BITWISE set to 1 when they are bit-identical. */
size_t kv_compare_runs(kv_dtype dt, const void *a, const void *b, const double *ref,
                       const double *scale, size_t n, kv_tolerance tol, int *bitwise,
                       size_t *first);

struct kvj_part;
/* The check of COUNT elements from the parts (judge_ops.h) of its N chunks,
 * merged in order, into *C. */
void kv_check_from_parts(const struct kvj_part *parts, size_t n, size_t count, kv_check *c);

/* Runs FN(CTX, c) for every chunk c < CHUNKS on up to THREADS threads (<= 0:
 * all online CPUs, at most KV_FILL_MAX_THREADS), this one included; chunks
 * are taken in any order, so FN writes only chunk c's own results. */
void kv_run_chunks(void (*fn)(void *ctx, size_t c), void *ctx, size_t chunks, int threads);

/* Median and interquartile range of N samples (sorted in place). */
void kv_stats(double *samples, size_t n, double *median, double *iqr, double *min);

#endif
