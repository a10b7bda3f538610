/* The gqa_attention tasks' double-precision reference and roofline model
 * (see gqa_attention.h for the layout and the causal rule).
 *
 * The reference is the trusted side of every check, so it is plain: for a
 * block of query rows of one head, every score q.k / sqrt(D) in double, the
 * row maximum subtracted, exp, the sum, then the weighted sum of v rows,
 * all in double. With scales wanted it also writes each output element's
 * error scale, sum_j p_j |v_jd| / sum_j p_j, from the same p (the tolerance
 * of a kernel that rounds p before p.v: README.md, "Tolerances"); the
 * outputs are the same bits either way. It is also on the clock of every evaluation (the harness
 * recomputes it for each correctness trial), and the big scenarios hold
 * trillions of multiply-adds, so work items (sequence, head, block of rows)
 * are spread over all online CPUs and the inner loops are written so the
 * compiler can vectorise them without reassociating anything. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include "gqa_attention.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROWS 8 /* query rows per work item: each k and v row is reused for all of them */
#define MAX_THREADS 64

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define GQA_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GQA_CLONES
#endif

typedef struct job {
    const int64_t *syms;
    double *const *t;
    double *scale; /* o's error scales, or NULL */
    int64_t items, row_blocks;
    _Atomic int64_t next;
} job;

/* Dot product with 8 independent partial sums (vectorisable in order). */
static inline double dot(const double *a, const double *b, int64_t n)
{
    double s[8] = {0};
    int64_t d = 0;
    for (; d + 8 <= n; d += 8)
        for (int u = 0; u < 8; u++)
            s[u] += a[d + u] * b[d + u];
    double r = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; d < n; d++)
        r += a[d] * b[d];
    return r;
}

/* Computes work item IT (sequence, query head, block of ROWS rows) into o,
 * and with J's scale its error scales. SC is scratch of ROWS * L doubles;
 * ACC and SACC of ROWS * D (SACC used only with J's scale). */
GQA_CLONES static void item(const job *j, int64_t it, double *sc, double *acc, double *sacc)
{
    const int64_t *s = j->syms;
    int64_t B = s[GQA_B], HQ = s[GQA_HQ], HKV = s[GQA_HKV], SQ = s[GQA_SQ], L = s[GQA_L],
            D = s[GQA_D];
    (void)B;
    int64_t rb = it % j->row_blocks, bh = it / j->row_blocks;
    int64_t h = bh % HQ, b = bh / HQ, kvh = h / (HQ / HKV);
    int64_t r0 = rb * ROWS, nr = SQ - r0 < ROWS ? SQ - r0 : ROWS;
    const double *q = j->t[0] + ((b * HQ + h) * SQ + r0) * D;
    const double *k = j->t[1] + (b * HKV + kvh) * L * D;
    const double *v = j->t[2] + (b * HKV + kvh) * L * D;
    double *o = j->t[3] + ((b * HQ + h) * SQ + r0) * D;
    double *os = j->scale ? j->scale + ((b * HQ + h) * SQ + r0) * D : NULL;
    double scale = 1.0 / sqrt((double)D);
    /* Row r attends keys lo[r] .. keys[r] - 1: all before it, or the last
     * W of them with a sliding window (GQA_W, 0: none). */
    int64_t keys[ROWS] = {0}, lo[ROWS] = {0}, maxkeys = 0, W = s[GQA_W];
    double sum[ROWS];
    for (int64_t r = 0; r < nr; r++) {
        keys[r] = L - SQ + r0 + r + 1;
        lo[r] = W > 0 && keys[r] > W ? keys[r] - W : 0;
        if (keys[r] > maxkeys) maxkeys = keys[r];
    }
    int64_t minlo = nr ? lo[0] : 0;
    for (int64_t jk = minlo; jk < maxkeys; jk++)
        for (int64_t r = 0; r < nr; r++)
            if (jk >= lo[r] && jk < keys[r]) sc[r * L + jk] = dot(q + r * D, k + jk * D, D) * scale;
    for (int64_t r = 0; r < nr; r++) {
        double m = -INFINITY, *row = sc + r * L;
        for (int64_t jk = lo[r]; jk < keys[r]; jk++)
            m = row[jk] > m ? row[jk] : m;
        double z = 0.0;
        for (int64_t jk = lo[r]; jk < keys[r]; jk++) {
            row[jk] = exp(row[jk] - m);
            z += row[jk];
        }
        sum[r] = z;
    }
    memset(acc, 0, (size_t)(ROWS * D) * sizeof *acc);
    if (os) memset(sacc, 0, (size_t)(ROWS * D) * sizeof *sacc);
    for (int64_t jk = minlo; jk < maxkeys; jk++) {
        const double *vr = v + jk * D;
        for (int64_t r = 0; r < nr; r++) {
            if (jk < lo[r] || jk >= keys[r]) continue;
            double p = sc[r * L + jk], *a = acc + r * D;
            for (int64_t d = 0; d < D; d++)
                a[d] += p * vr[d];
            if (os) {
                double *sa = sacc + r * D;
                for (int64_t d = 0; d < D; d++)
                    sa[d] += p * p * vr[d] * vr[d];
            }
        }
    }
    for (int64_t r = 0; r < nr; r++)
        for (int64_t d = 0; d < D; d++)
            o[r * D + d] = acc[r * D + d] / sum[r];
    if (os)
        for (int64_t r = 0; r < nr; r++)
            for (int64_t d = 0; d < D; d++)
                os[r * D + d] = sqrt(sacc[r * D + d]) / sum[r];
}

/* A thread: takes work items until none are left. */
static void *worker(void *arg)
{
    job *j = arg;
    int64_t L = j->syms[GQA_L], D = j->syms[GQA_D];
    double *sc = malloc((size_t)(ROWS * L) * sizeof *sc);
    double *acc = malloc((size_t)(ROWS * D) * sizeof *acc);
    double *sacc = j->scale ? malloc((size_t)(ROWS * D) * sizeof *sacc) : NULL;
    if (sc && acc && (sacc || !j->scale)) /* else the other threads take this one's share */
        for (int64_t it; (it = atomic_fetch_add(&j->next, 1)) < j->items;)
            item(j, it, sc, acc, sacc);
    free(sc);
    free(acc);
    free(sacc);
    return NULL;
}

void gqa_reference_scale(const int64_t *syms, double *const *t, double *const *scales)
{
    job j = {.syms = syms, .t = t, .scale = scales ? scales[3] : NULL};
    j.row_blocks = (syms[GQA_SQ] + ROWS - 1) / ROWS;
    j.items = syms[GQA_B] * syms[GQA_HQ] * j.row_blocks;
    atomic_init(&j.next, 0);
    kv_roofline rf = gqa_roofline(syms);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = rf.flops < 2e8 || ncpu < 2 ? 0 : ncpu > MAX_THREADS ? MAX_THREADS : (int)ncpu;
    pthread_t th[MAX_THREADS];
    int started = 0;
    for (int i = 0; i < nt; i++)
        if (pthread_create(&th[started], NULL, worker, &j) == 0) started++;
    worker(&j); /* this thread works too, and finishes alone if none started */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (atomic_load(&j.next) < j.items) abort(); /* no thread could get its scratch memory */
}

void gqa_reference(const int64_t *syms, double *const *t)
{
    gqa_reference_scale(syms, t, NULL);
}

kv_roofline gqa_roofline(const int64_t *s)
{
    double B = (double)s[GQA_B], HQ = (double)s[GQA_HQ], HKV = (double)s[GQA_HKV],
           SQ = (double)s[GQA_SQ], L = (double)s[GQA_L], D = (double)s[GQA_D];
    /* keys attended, summed over the query rows: SQ * (L - SQ) + SQ (SQ + 1) / 2,
     * or with a window of W each row's at most W; the keys read, all L, or
     * with a window the last SQ + W - 1 (the rows' windows together) */
    double pairs = SQ * (L - SQ) + SQ * (SQ + 1.0) / 2.0, W = (double)s[GQA_W], read = L;
    if (W > 0) {
        pairs = 0;
        for (double i = 0; i < SQ; i++) {
            double keys = L - SQ + i + 1;
            pairs += keys < W ? keys : W;
        }
        read = SQ + W - 1 < L ? SQ + W - 1 : L;
    }
    return (kv_roofline){.bytes = 2.0 * (2.0 * B * HQ * SQ * D + 2.0 * B * HKV * read * D),
                         .flops = 4.0 * B * HQ * pairs * D};
}
