/* gqa_attention for the cpu backend, the starting point of an evolution:
 * cpu/naive.c (the task's baseline) with its design axes declared for the
 * tune mutator. Layout and causal rule: tasks/gqa_attention/gqa_attention.h.
 *
 * At the values below it is the naive kernel's design: one query head and
 * one query row at a time, three passes over the keys (maximum, sum,
 * weighted sum: each score computed three times), one key at a time, scalar
 * fp32, one thread. It differs only in converting q to fp32 once per row.
 * Every value of every axis is a correct kernel:
 *   ONLINE    single-pass online softmax (running maximum and sum, the
 *             accumulator rescaled per tile) instead of three passes
 *   TILE_K    keys converted from bf16 and scored per step; their scores
 *             are kept for the step (with ONLINE, one rescale per step)
 *   SHARE_KV  one pass over a KV head's keys and values serves all its
 *             query heads (up to 8): each k and v row converted once
 *   ROWS      query rows per pass (prefill and chunked calls), each tile of
 *             k and v used by all of them (causal: later rows see more keys)
 *   SPLIT     chunks of the keys per query row, scored on their own and
 *             merged at the end (their maximum, sum and weighted sum
 *             rescaled): more work units for the threads on few rows
 *   VEC       floats per vector operation in the dot products and the
 *             weighted sum (GCC vector extensions; 1 is scalar code, which
 *             the compiler does not vectorize: float sums are not
 *             reassociated at -O2)
 *   UNROLL    keys scored together against one query, sharing its loads
 *   THREADS   POSIX threads the work units are spread over (joined before
 *             kv_launch returns) */
#include <kevolve/task.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Threads of this process, as /proc/self/task lists them; -1 when unknown. */
static int task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Waits (a few milliseconds at most) until this process has no more than
 * BEFORE threads. The harness rejects a call that returns with a thread
 * still listed, and a thread that pthread_join has already returned for
 * can stay listed a moment while the kernel finishes its exit (long enough
 * to be seen on a loaded machine). */
static void wait_threads_gone(int before)
{
    for (int i = 0; i < 500 && before >= 0 && task_count() > before; i++)
        sched_yield();
}

/* EVOLVE-BLOCK-START */
#define ONLINE 0   // kevolve: tune 0 1
#define TILE_K 1   // kevolve: tune 1 4 16 64 256
#define SHARE_KV 0 // kevolve: tune 0 1
#define ROWS 1     // kevolve: tune 1 2 4 8 16
#define SPLIT 1    // kevolve: tune 1 2 4 8 when THREADS > 1
#define VEC 1      // kevolve: tune 1 4 8 16
#define UNROLL 1   // kevolve: tune 1 2 4 when !KEYS_T
#define KEYS_T 0   // kevolve: tune 0 1
#define FAST_EXP 0 // kevolve: tune 0 1
#define THREADS 1  // kevolve: tune 1 2 4

#define HEAD_DIM 128
#define LOG2E 1.4426950408889634f
#define MAXH (SHARE_KV ? 8 : 1) /* query heads per work unit */
#define MAXQ (MAXH * ROWS)      /* query rows (head, row) per work unit */

#define TILE_P ((TILE_K + VEC - 1) / VEC * VEC) /* TILE_K padded to whole vectors */

#if VEC > 1
typedef float vf __attribute__((vector_size(VEC * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(VEC * sizeof(int32_t))));
#else
typedef float vf;
typedef int32_t vi;
#endif

static inline vf ldv(const float *p)
{
    vf x;
    memcpy(&x, p, sizeof x);
    return x;
}

static inline void stv(float *p, vf x)
{
    memcpy(p, &x, sizeof x);
}

static inline float hsum(vf x)
{
#if VEC > 1
    float r = 0.0f;
    for (int e = 0; e < VEC; e++)
        r += x[e];
    return r;
#else
    return x;
#endif
}

/* 2^X for X <= 0, to about 2e-7 relative (Cephes's exp2f polynomial on
 * [-0.5, 0.5]; X below -126 gives 2^-126): VEC lanes at once, where libm's
 * exp2f is a call per element. */
static inline vf exp2_poly(vf x)
{
#if VEC > 1
    const vf lo = (vf){0} - 126.0f;
    vi below = x < lo;
    x = (vf)(((vi)x & ~below) | ((vi)lo & below));
    vf xr = x + 0.5f;
    vi k = __builtin_convertvector(xr, vi);         /* truncates: floor for xr >= 0 */
    k += (vi)(__builtin_convertvector(k, vf) > xr); /* -1 where xr < 0 was not whole */
    vf f = x - __builtin_convertvector(k, vf);
#else
    if (x < -126.0f) x = -126.0f;
    vi k = (vi)floorf(x + 0.5f);
    vf f = x - (vf)k;
#endif
    vf p = 1.535336188319500e-4f * f + 1.339887440266574e-3f;
    p = p * f + 9.618437357674640e-3f;
    p = p * f + 5.550332471162809e-2f;
    p = p * f + 2.402264791363012e-1f;
    p = p * f + 6.931472028550421e-1f;
    p = p * f + 1.0f;
    vi bits;
    memcpy(&bits, &p, sizeof bits);
    bits += k << 23; /* times 2^k: k >= -127 keeps it normal */
    memcpy(&p, &bits, sizeof p);
    return p;
}

/* P[jj] = 2^(S[jj] - M) for jj < LIM, 0 up to TILE_P; returns their sum. */
static float exp_row(const float *s, int lim, float m, float *p)
{
    float sum = 0.0f;
#if FAST_EXP
    vf acc = (vf){0};
    for (int c = 0; c < TILE_P; c += VEC) {
        if (c >= lim) {
            stv(p + c, (vf){0});
            continue;
        }
        vf e = exp2_poly(ldv(s + c) - m);
        if (c + VEC > lim) /* the tile's last valid keys: zero the rest */
            for (int jj = lim - c; jj < VEC; jj++)
                ((float *)&e)[jj] = 0.0f;
        stv(p + c, e);
        acc += e;
    }
    sum = hsum(acc);
#else
    for (int jj = 0; jj < TILE_P; jj++) {
        p[jj] = jj < lim ? exp2f(s[jj] - m) : 0.0f;
        sum += p[jj];
    }
#endif
    return sum;
}

static uint16_t f32_to_bf16(float f) /* round to nearest even */
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* N rows of bf16 at SRC into fp32 rows at DST. */
static void load_rows(float *dst, const uint16_t *src, int n)
{
    for (int r = 0; r < n; r++) /* a fixed inner count: -O2 vectorizes it */
        for (int d = 0; d < HEAD_DIM; d++)
            dst[r * HEAD_DIM + d] = bf16(src[r * HEAD_DIM + d]);
}

/* The key tile's scores S[qi * TILE_P + jj] (log2 units: q is pre-scaled)
 * of the NQ query rows QF against its N keys (KT: rows, or with KEYS_T the
 * transpose, KT[d * TILE_P + jj]). Entries from N to TILE_P are left
 * undefined. */
static void scores(const float *qf, int nq, const float *kt, int n, float *s)
{
#if KEYS_T
    for (int qi = 0; qi < nq; qi++) {
        const float *qr = qf + qi * HEAD_DIM;
        for (int c = 0; c < n; c += VEC) {
            vf acc = (vf){0};
            for (int d = 0; d < HEAD_DIM; d++)
                acc += qr[d] * ldv(kt + d * TILE_P + c);
            stv(s + qi * TILE_P + c, acc);
        }
    }
#else
    for (int qi = 0; qi < nq; qi++) {
        const float *qr = qf + qi * HEAD_DIM;
        float *sr = s + qi * TILE_P;
        int jj = 0;
        for (; jj + UNROLL <= n; jj += UNROLL) { /* UNROLL keys share the loads of q */
            vf acc[UNROLL];
            for (int u = 0; u < UNROLL; u++)
                acc[u] = (vf){0};
            for (int d = 0; d < HEAD_DIM; d += VEC) {
                vf x = ldv(qr + d);
#pragma GCC unroll 4
                for (int u = 0; u < UNROLL; u++)
                    acc[u] += x * ldv(kt + (jj + u) * HEAD_DIM + d);
            }
            for (int u = 0; u < UNROLL; u++)
                sr[jj + u] = hsum(acc[u]);
        }
        for (; jj < n; jj++) {
            vf acc = (vf){0};
            for (int d = 0; d < HEAD_DIM; d += VEC)
                acc += ldv(qr + d) * ldv(kt + jj * HEAD_DIM + d);
            sr[jj] = hsum(acc);
        }
    }
#endif
}

/* Converts the N key rows at SRC into the layout scores() reads. */
static void load_keys(float *kt, const uint16_t *src, int n)
{
#if KEYS_T
    for (int jj = 0; jj < n; jj++)
        for (int d = 0; d < HEAD_DIM; d++)
            kt[d * TILE_P + jj] = bf16(src[jj * HEAD_DIM + d]);
    for (int d = 0; d < HEAD_DIM; d++) /* whole vectors past the last key */
        for (int jj = n; jj < (n + VEC - 1) / VEC * VEC; jj++)
            kt[d * TILE_P + jj] = 0.0f;
#else
    load_rows(kt, src, n);
#endif
}

/* ACC (a query row's HEAD_DIM sums) = ACC * ALPHA + sum over jj < N of
 * P[jj] * VT[jj], the row kept in registers over the keys when VEC > 1. */
static void weighted_sum(float *acc, float alpha, const float *p, const float *vt, int n)
{
#if VEC > 1
    for (int d0 = 0; d0 < HEAD_DIM; d0 += 4 * VEC) { /* 4 vectors at a time in registers */
        vf a[4];
        for (int e = 0; e < 4; e++)
            a[e] = ldv(acc + d0 + e * VEC) * alpha;
        for (int jj = 0; jj < n; jj++) {
            float pj = p[jj];
            for (int e = 0; e < 4; e++)
                a[e] += pj * ldv(vt + jj * HEAD_DIM + d0 + e * VEC);
        }
        for (int e = 0; e < 4; e++)
            stv(acc + d0 + e * VEC, a[e]);
    }
#else
    for (int d = 0; d < HEAD_DIM; d++)
        acc[d] *= alpha;
    for (int jj = 0; jj < n; jj++)
        for (int d = 0; d < HEAD_DIM; d++)
            acc[d] += p[jj] * vt[jj * HEAD_DIM + d];
#endif
}

typedef struct gqa_job {
    const uint16_t *q, *k, *v;
    uint16_t *o;
    float *part; /* SPLIT > 1: per (b, h, row, chunk) HEAD_DIM sums, max, sum */
    int64_t B, HQ, HKV, SQ, L;
    int64_t nh, ngroups, nblocks, split, units;
    int nthreads;
} gqa_job;

typedef struct gqa_work { /* one thread's scratch */
    float qf[MAXQ * HEAD_DIM], acc[MAXQ * HEAD_DIM];
    float kt[TILE_P * HEAD_DIM], vt[TILE_K * HEAD_DIM];
    float s[MAXQ * TILE_P], p[TILE_P], m[MAXQ], l[MAXQ];
    int64_t keys[MAXQ]; /* keys query row qi attends */
} gqa_work;

/* Work unit U of J: heads hg*nh .. of one KV head, rows of one block, keys
 * of one chunk. */
static void run_unit(const gqa_job *j, int64_t u, gqa_work *w)
{
    int64_t sp = u % j->split;
    u /= j->split;
    int64_t rb = u % j->nblocks;
    u /= j->nblocks;
    int64_t hg = u % j->ngroups;
    u /= j->ngroups;
    int64_t kvh = u % j->HKV, b = u / j->HKV;
    int64_t G = j->HQ / j->HKV, h0 = kvh * G + hg * j->nh;
    int64_t r0 = rb * ROWS, r1 = r0 + ROWS < j->SQ ? r0 + ROWS : j->SQ;
    int nr = (int)(r1 - r0), nq = (int)j->nh * nr;
    const float qscale = 1.0f / sqrtf((float)HEAD_DIM) * LOG2E; /* exp2 below */
    for (int qi = 0; qi < nq; qi++) {
        int64_t h = h0 + qi / nr, i = r0 + qi % nr;
        load_rows(w->qf + qi * HEAD_DIM, j->q + ((b * j->HQ + h) * j->SQ + i) * HEAD_DIM, 1);
        for (int d = 0; d < HEAD_DIM; d++)
            w->qf[qi * HEAD_DIM + d] *= qscale;
        w->keys[qi] = j->L - j->SQ + i + 1;
        w->m[qi] = -INFINITY;
        w->l[qi] = 0.0f;
        memset(w->acc + qi * HEAD_DIM, 0, HEAD_DIM * sizeof(float));
    }
    int64_t most = j->L - j->SQ + r1; /* keys of the last row */
    int64_t chunk = (most + j->split - 1) / j->split;
    int64_t j0 = sp * chunk, j1 = j0 + chunk < most ? j0 + chunk : most;
    const uint16_t *kb = j->k + (b * j->HKV + kvh) * j->L * HEAD_DIM;
    const uint16_t *vb = j->v + (b * j->HKV + kvh) * j->L * HEAD_DIM;
#if ONLINE
    for (int64_t jt = j0; jt < j1; jt += TILE_K) {
        int n = (int)(j1 - jt < TILE_K ? j1 - jt : TILE_K);
        load_keys(w->kt, kb + jt * HEAD_DIM, n);
        scores(w->qf, nq, w->kt, n, w->s);
        load_rows(w->vt, vb + jt * HEAD_DIM, n);
        for (int qi = 0; qi < nq; qi++) {
            int lim = w->keys[qi] - jt < n ? (int)(w->keys[qi] - jt) : n;
            if (lim <= 0) continue; /* a later row of the block sees these keys, not this one */
            const float *sr = w->s + qi * TILE_P;
            float mt = -INFINITY;
            for (int jj = 0; jj < lim; jj++)
                mt = fmaxf(mt, sr[jj]);
            float mn = fmaxf(w->m[qi], mt), alpha = exp2f(w->m[qi] - mn);
            w->m[qi] = mn;
            w->l[qi] = w->l[qi] * alpha + exp_row(sr, lim, mn, w->p);
            weighted_sum(w->acc + qi * HEAD_DIM, alpha, w->p, w->vt, lim);
        }
    }
#else
    for (int pass = 0; pass < 3; pass++) /* the maximum, the sum, the weighted sum */
        for (int64_t jt = j0; jt < j1; jt += TILE_K) {
            int n = (int)(j1 - jt < TILE_K ? j1 - jt : TILE_K);
            load_keys(w->kt, kb + jt * HEAD_DIM, n);
            scores(w->qf, nq, w->kt, n, w->s);
            if (pass == 2) load_rows(w->vt, vb + jt * HEAD_DIM, n);
            for (int qi = 0; qi < nq; qi++) {
                int lim = w->keys[qi] - jt < n ? (int)(w->keys[qi] - jt) : n;
                if (lim <= 0) continue;
                const float *sr = w->s + qi * TILE_P;
                if (pass == 0) {
                    for (int jj = 0; jj < lim; jj++)
                        w->m[qi] = fmaxf(w->m[qi], sr[jj]);
                } else if (pass == 1) {
                    w->l[qi] += exp_row(sr, lim, w->m[qi], w->p);
                } else {
                    exp_row(sr, lim, w->m[qi], w->p);
                    weighted_sum(w->acc + qi * HEAD_DIM, 1.0f, w->p, w->vt, lim);
                }
            }
        }
#endif
    for (int qi = 0; qi < nq; qi++) {
        int64_t h = h0 + qi / nr, i = r0 + qi % nr, row = (b * j->HQ + h) * j->SQ + i;
        const float *acc = w->acc + qi * HEAD_DIM;
        if (j->split == 1) {
            for (int d = 0; d < HEAD_DIM; d++)
                j->o[row * HEAD_DIM + d] = f32_to_bf16(acc[d] / w->l[qi]);
        } else {
            float *pp = j->part + (row * j->split + sp) * (HEAD_DIM + 2);
            memcpy(pp, acc, HEAD_DIM * sizeof(float));
            pp[HEAD_DIM] = w->m[qi];
            pp[HEAD_DIM + 1] = w->l[qi];
        }
    }
}

/* Merges the SPLIT partial results of rows [R0, R1). */
static void merge_rows(const gqa_job *j, int64_t r0, int64_t r1)
{
    for (int64_t row = r0; row < r1; row++) {
        const float *p = j->part + row * j->split * (HEAD_DIM + 2);
        float mx = -INFINITY, sum = 0.0f, acc[HEAD_DIM] = {0};
        for (int64_t s = 0; s < j->split; s++)
            mx = fmaxf(mx, p[s * (HEAD_DIM + 2) + HEAD_DIM]);
        for (int64_t s = 0; s < j->split; s++) {
            const float *ps = p + s * (HEAD_DIM + 2);
            if (ps[HEAD_DIM + 1] == 0.0f) continue; /* a chunk past this row's keys */
            float wgt = exp2f(ps[HEAD_DIM] - mx);
            sum += ps[HEAD_DIM + 1] * wgt;
            for (int d = 0; d < HEAD_DIM; d++)
                acc[d] += ps[d] * wgt;
        }
        for (int d = 0; d < HEAD_DIM; d++)
            j->o[row * HEAD_DIM + d] = f32_to_bf16(acc[d] / sum);
    }
}

typedef struct gqa_thread {
    const gqa_job *job;
    int tid;
    int started;
    pthread_t th;
} gqa_thread;

/* Thread T's share of the work units: T, T + nthreads, ... */
static void *run_share(void *arg)
{
    gqa_thread *t = arg;
    const gqa_job *j = t->job;
    /* On the stack (at most about 0.5 MB): its pages stay mapped from call
     * to call (glibc reuses thread stacks), where a malloc this large would
     * map fresh pages and fault on each of them every call. */
    gqa_work w;
    for (int64_t u = t->tid; u < j->units; u += j->nthreads)
        run_unit(j, u, &w);
    return NULL;
}

int kv_launch(const kv_launch_args *a)
{
    gqa_job j = {.q = a->tensors[0], .k = a->tensors[1], .v = a->tensors[2], .o = a->tensors[3]};
    j.B = a->syms[0];
    j.HQ = a->syms[1];
    j.HKV = a->syms[2];
    j.SQ = a->syms[3];
    j.L = a->syms[4];
    if (a->syms[5] != HEAD_DIM || j.HKV <= 0 || j.HQ % j.HKV != 0 || j.SQ > j.L) return 1;
    int64_t G = j.HQ / j.HKV;
    for (j.nh = G < MAXH ? G : MAXH; G % j.nh != 0; j.nh--) {
    }
    j.ngroups = G / j.nh;
    j.nblocks = (j.SQ + ROWS - 1) / ROWS;
    j.split = SPLIT;
    j.units = j.B * j.HKV * j.ngroups * j.nblocks * j.split;
    j.nthreads = THREADS < j.units ? THREADS : (int)j.units;
    if (j.split > 1) {
        j.part = malloc((size_t)(j.B * j.HQ * j.SQ * j.split) * (HEAD_DIM + 2) * sizeof(float));
        if (!j.part) return 2;
    }
    gqa_thread t[THREADS];
    int before = THREADS > 1 && j.nthreads > 1 ? task_count() : -1;
    for (int i = 0; i < THREADS; i++)
        t[i] = (gqa_thread){.job = &j, .tid = i};
    for (int i = 1; i < THREADS && i < j.nthreads; i++)
        t[i].started = pthread_create(&t[i].th, NULL, run_share, &t[i]) == 0;
    run_share(&t[0]);
    for (int i = 1; i < THREADS && i < j.nthreads; i++) {
        if (t[i].started)
            pthread_join(t[i].th, NULL);
        else
            run_share(&t[i]); /* a thread that could not start: its share here */
    }
    wait_threads_gone(before);
    if (j.split > 1) merge_rows(&j, 0, j.B * j.HQ * j.SQ);
    free(j.part);
    return 0;
}
/* EVOLVE-BLOCK-END */
