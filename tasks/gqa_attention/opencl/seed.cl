/* gqa_attention for the opencl backend, the starting point of an evolution:
 * opencl/naive.cl (the task's baseline) with its design axes declared for
 * the tune mutator. Layout and causal rule: tasks/gqa_attention/gqa_attention.h.
 *
 * At the values below it is the naive kernel (the one of the published
 * Metal experiment): one work-group per (sequence, query head, query row),
 * a three-pass softmax (maximum, sum, weighted sum: k read three times),
 * every query head re-reading its KV head, one bf16 per load. Every value of
 * every axis is a correct kernel:
 *   SERIAL    the design: 0, a work-group of THREADS work-items per query
 *             row (reductions through local memory), the GPU's way; 1, one
 *             work-item per block of ROWS query rows doing all of their work
 *             (no barriers), the way of a CPU device such as PoCL, whose
 *             work-items of a group run as a loop on one core
 *   VEC       elements per load of k and v, and per vector operation
 *   THREADS   work-items per work-group (SERIAL 0)
 *   TILE_K    keys staged at a time: their probabilities in local memory
 *             (SERIAL 0), their rows converted to fp32 and scored (SERIAL 1)
 *   SPLIT     chunks of each query row's keys, each by its own work-group,
 *             the partial results merged by a second kernel (flash-decoding)
 *   SHARE_KV  one pass serves all query heads of a KV head (up to 8), so
 *             each k and v row is read once for all of them
 *   ONLINE    single-pass online softmax (running maximum and sum) instead
 *             of three passes (SERIAL 0; SERIAL 1 is always online)
 *   ROWS      query rows of a work-item (SERIAL 1): each key tile serves
 *             all of them (prefill and chunked calls)
 *   UNROLL    keys scored together against one query row, sharing its
 *             loads (SERIAL 1)
 *   NATIVE_EXP  native_exp2 (the device's fast exponential) for the softmax
 * OpenCL has no bf16 type: bf16 is loaded as ushort and shifted into a float. */

/* EVOLVE-BLOCK-START */
#define SERIAL 0     /* kevolve: tune 0 1 */
#define VEC 1        /* kevolve: tune 1 2 4 8 */
#define THREADS 128  /* kevolve: tune 128 256 512 when !SERIAL */
#define TILE_K 32    /* kevolve: tune 16 32 64 128 256 */
#define SPLIT 1      /* kevolve: tune 1 2 4 8 16 32 64 */
#define SHARE_KV 0   /* kevolve: tune 0 1 */
#define ONLINE 0     /* kevolve: tune 0 1 when !SERIAL */
#define ROWS 1       /* kevolve: tune 1 2 4 8 16 when SERIAL */
#define UNROLL 1     /* kevolve: tune 1 2 4 when SERIAL */
#define NATIVE_EXP 0 /* kevolve: tune 0 1 */
/* EVOLVE-BLOCK-END */

#define HEAD_DIM 128
#define PART_STRIDE (HEAD_DIM + 2) /* a partial result: HEAD_DIM sums, max, sum of exp */
#define SCRATCH_FLOATS (16 << 20)

#ifdef __OPENCL_VERSION__

/* EVOLVE-BLOCK-START */
#define MAXH (SHARE_KV ? 8 : 1)
#define KG (THREADS * VEC / HEAD_DIM) /* key groups in the weighted sum */
#define NC (HEAD_DIM / VEC)           /* VEC-wide columns of a row */
#define LOG2E 1.4426950408889634f
#if NATIVE_EXP
#define EXP2(x) native_exp2(x)
#else
#define EXP2(x) exp2(x)
#endif

inline float bf(ushort h) { return as_float((uint)h << 16); }

inline ushort to_bf(float f)
{
    uint u = as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

inline void loadv(__global const ushort *p, float *x)
{
#if VEC == 1
    x[0] = bf(p[0]);
#elif VEC == 2
    ushort2 u = vload2(0, p);
    x[0] = bf(u.s0); x[1] = bf(u.s1);
#elif VEC == 4
    ushort4 u = vload4(0, p);
    x[0] = bf(u.s0); x[1] = bf(u.s1); x[2] = bf(u.s2); x[3] = bf(u.s3);
#else
    ushort8 u = vload8(0, p);
    x[0] = bf(u.s0); x[1] = bf(u.s1); x[2] = bf(u.s2); x[3] = bf(u.s3);
    x[4] = bf(u.s4); x[5] = bf(u.s5); x[6] = bf(u.s6); x[7] = bf(u.s7);
#endif
}

/* s[h] = (scaled q of head h) . krow, for the NH heads of the group. */
inline void dots(__local const float *qs, int nh, __global const ushort *krow, float *s)
{
    for (int h = 0; h < MAXH; h++) s[h] = 0.0f;
    for (int d = 0; d < HEAD_DIM; d += VEC) {
        float x[VEC];
        loadv(krow + d, x);
        for (int h = 0; h < MAXH; h++)
            if (h < nh)
                for (int e = 0; e < VEC; e++) s[h] += qs[h * HEAD_DIM + d + e] * x[e];
    }
}

inline float reduce_max(float v, __local float *red)
{
    int t = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    red[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = fmax(red[t], red[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return red[0];
}

inline float reduce_sum(float v, __local float *red)
{
    int t = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    red[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return red[0];
}

/* One work-group: query row `row` of heads h0 .. h0+nh-1 of sequence b, over
 * chunk `sp` of its keys. Writes o (split == 1) or a partial result. */
#if !SERIAL
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void
gqa_attn(__global const ushort *q, __global const ushort *k, __global const ushort *v,
         __global ushort *o, __global float *part, int HQ, int HKV, int SQ, int L, int nh,
         int split)
{
    __local float qs[MAXH * HEAD_DIM];
    __local float ps[MAXH * TILE_K];
    __local float red[THREADS];
    __local float comb[KG * HEAD_DIM];
    int t = get_local_id(0);
    int row = get_group_id(0) / split, sp = get_group_id(0) % split;
    int h0 = get_group_id(1) * nh, b = get_group_id(2);
    int kvh = h0 / (HQ / HKV);
    int nkeys = L - SQ + row + 1;
    int chunk = (nkeys + split - 1) / split;
    int j0 = sp * chunk, j1 = min(nkeys, j0 + chunk);
    float qscale = rsqrt((float)HEAD_DIM) * LOG2E; /* scores in log2 units: exp2 below */
    for (int i = t; i < nh * HEAD_DIM; i += THREADS)
        qs[i] = bf(q[(((long)b * HQ + h0 + i / HEAD_DIM) * SQ + row) * HEAD_DIM + i % HEAD_DIM]) *
                qscale;
    barrier(CLK_LOCAL_MEM_FENCE);
    __global const ushort *kb = k + ((long)b * HKV + kvh) * L * HEAD_DIM;
    __global const ushort *vb = v + ((long)b * HKV + kvh) * L * HEAD_DIM;
    int c = t % NC, kg = t / NC;
    float acc[MAXH][VEC], m[MAXH], l[MAXH], s[MAXH];
    for (int h = 0; h < MAXH; h++) {
        m[h] = -INFINITY;
        l[h] = 0.0f;
        for (int e = 0; e < VEC; e++) acc[h][e] = 0.0f;
    }
#if !ONLINE
    float part_m[MAXH], part_l[MAXH];
    for (int h = 0; h < MAXH; h++) { part_m[h] = -INFINITY; part_l[h] = 0.0f; }
    for (int j = j0 + t; j < j1; j += THREADS) { /* pass 1: the maximum */
        dots(qs, nh, kb + (long)j * HEAD_DIM, s);
        for (int h = 0; h < MAXH; h++) part_m[h] = fmax(part_m[h], s[h]);
    }
    for (int h = 0; h < nh; h++) m[h] = reduce_max(part_m[h], red);
    for (int j = j0 + t; j < j1; j += THREADS) { /* pass 2: the sum */
        dots(qs, nh, kb + (long)j * HEAD_DIM, s);
        for (int h = 0; h < MAXH; h++) part_l[h] += h < nh ? EXP2(s[h] - m[h]) : 0.0f;
    }
    for (int h = 0; h < nh; h++) l[h] = reduce_sum(part_l[h], red);
    for (int jt = j0; jt < j1; jt += TILE_K) { /* pass 3: the weighted sum of v */
        for (int jj = t; jj < TILE_K; jj += THREADS) {
            int j = jt + jj;
            if (j < j1) dots(qs, nh, kb + (long)j * HEAD_DIM, s);
            for (int h = 0; h < nh; h++) ps[h * TILE_K + jj] = j < j1 ? EXP2(s[h] - m[h]) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        int n = min(TILE_K, j1 - jt);
        for (int jj = kg; jj < n; jj += KG) {
            float x[VEC];
            loadv(vb + (long)(jt + jj) * HEAD_DIM + c * VEC, x);
            for (int h = 0; h < MAXH; h++)
                if (h < nh)
                    for (int e = 0; e < VEC; e++) acc[h][e] += ps[h * TILE_K + jj] * x[e];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    for (int jt = j0; jt < j1; jt += TILE_K) { /* one pass: running maximum and sum */
        float tm[MAXH], ts[MAXH], alpha[MAXH];
        for (int h = 0; h < MAXH; h++) { tm[h] = -INFINITY; ts[h] = 0.0f; }
        for (int jj = t; jj < TILE_K; jj += THREADS) {
            int j = jt + jj;
            if (j < j1) {
                dots(qs, nh, kb + (long)j * HEAD_DIM, s);
                for (int h = 0; h < nh; h++) {
                    ps[h * TILE_K + jj] = s[h];
                    tm[h] = fmax(tm[h], s[h]);
                }
            }
        }
        for (int h = 0; h < nh; h++) {
            float mn = fmax(m[h], reduce_max(tm[h], red));
            alpha[h] = EXP2(m[h] - mn);
            m[h] = mn;
        }
        for (int jj = t; jj < TILE_K; jj += THREADS) {
            int j = jt + jj;
            for (int h = 0; h < nh; h++) {
                float p = j < j1 ? EXP2(ps[h * TILE_K + jj] - m[h]) : 0.0f;
                ps[h * TILE_K + jj] = p;
                ts[h] += p;
            }
        }
        for (int h = 0; h < nh; h++) {
            l[h] = l[h] * alpha[h] + reduce_sum(ts[h], red);
            for (int e = 0; e < VEC; e++) acc[h][e] *= alpha[h];
        }
        int n = min(TILE_K, j1 - jt);
        for (int jj = kg; jj < n; jj += KG) {
            float x[VEC];
            loadv(vb + (long)(jt + jj) * HEAD_DIM + c * VEC, x);
            for (int h = 0; h < MAXH; h++)
                if (h < nh)
                    for (int e = 0; e < VEC; e++) acc[h][e] += ps[h * TILE_K + jj] * x[e];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
    for (int h = 0; h < nh; h++) { /* sum the key groups; work-item t < 128 owns dimension t */
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = 0; e < VEC; e++) comb[kg * HEAD_DIM + c * VEC + e] = acc[h][e];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < HEAD_DIM) {
            float r = 0.0f;
            for (int g = 0; g < KG; g++) r += comb[g * HEAD_DIM + t];
            long orow = ((long)b * HQ + h0 + h) * SQ + row;
            if (split == 1) {
                o[orow * HEAD_DIM + t] = to_bf(r / l[h]);
            } else {
                __global float *pp = part + (orow * split + sp) * PART_STRIDE;
                pp[t] = r;
                if (t == 0) { pp[HEAD_DIM] = m[h]; pp[HEAD_DIM + 1] = l[h]; }
            }
        }
    }
}
#endif

#if SERIAL
#define MAXQ (MAXH * ROWS) /* query rows (head, row) of a work-item */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VEC == 1
typedef float vf;
#define LDV(p) (*(p))
#define STV(x, p) (*(p) = (x))
#define LDBF(p) bf(*(p))
#else
typedef CAT(float, VEC) vf;
#define LDV(p) CAT(vload, VEC)(0, p)
#define STV(x, p) CAT(vstore, VEC)(x, 0, p)
#define LDBF(p) CAT(as_float, VEC)(CAT(convert_uint, VEC)(CAT(vload, VEC)(0, p)) << 16)
#endif

inline float hsum(vf x)
{
#if VEC == 8
    float4 y = x.lo + x.hi;
    return y.x + y.y + y.z + y.w;
#elif VEC == 4
    return x.x + x.y + x.z + x.w;
#elif VEC == 2
    return x.x + x.y;
#else
    return x;
#endif
}

/* N rows of bf16 at SRC into fp32 rows at DST. */
inline void load_rows(__local float *dst, __global const ushort *src, int n)
{
    for (int i = 0; i < n * HEAD_DIM; i += VEC)
        STV(LDBF(src + i), dst + i);
}

/* One work-item: query rows r0 .. r0+ROWS-1 of heads h0 .. h0+nh-1 of
 * sequence b, over chunk `sp` of their keys, with an online softmax per key
 * tile. Writes o (split == 1) or partial results for gqa_combine. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
gqa_rows(__global const ushort *q, __global const ushort *k, __global const ushort *v,
         __global ushort *o, __global float *part, int HQ, int HKV, int SQ, int L, int nh,
         int split)
{
    __local float qs[MAXQ * HEAD_DIM], acc[MAXQ * HEAD_DIM], s[MAXQ * TILE_K];
    __local float kt[TILE_K * HEAD_DIM], vt[TILE_K * HEAD_DIM];
    float m[MAXQ], l[MAXQ];
    int sp = get_group_id(0) % split, r0 = get_group_id(0) / split * ROWS;
    int h0 = get_group_id(1) * nh, b = get_group_id(2);
    int kvh = h0 / (HQ / HKV);
    int nr = min(SQ - r0, ROWS), nq = nh * nr;
    float qscale = rsqrt((float)HEAD_DIM) * LOG2E; /* scores in log2 units: exp2 below */
    for (int qi = 0; qi < nq; qi++) {
        long row = ((long)b * HQ + h0 + qi / nr) * SQ + r0 + qi % nr;
        for (int d = 0; d < HEAD_DIM; d++) {
            qs[qi * HEAD_DIM + d] = bf(q[row * HEAD_DIM + d]) * qscale;
            acc[qi * HEAD_DIM + d] = 0.0f;
        }
        m[qi] = -INFINITY;
        l[qi] = 0.0f;
    }
    int most = L - SQ + r0 + nr; /* keys of the last row */
    int chunk = (most + split - 1) / split;
    int j0 = sp * chunk, j1 = min(most, j0 + chunk);
    __global const ushort *kb = k + ((long)b * HKV + kvh) * L * HEAD_DIM;
    __global const ushort *vb = v + ((long)b * HKV + kvh) * L * HEAD_DIM;
    for (int jt = j0; jt < j1; jt += TILE_K) {
        int n = min(TILE_K, j1 - jt);
        load_rows(kt, kb + (long)jt * HEAD_DIM, n);
        load_rows(vt, vb + (long)jt * HEAD_DIM, n);
        for (int qi = 0; qi < nq; qi++) {
            int lim = min(n, L - SQ + r0 + qi % nr + 1 - jt); /* this row's keys in the tile */
            if (lim <= 0) continue;
            __local const float *qr = qs + qi * HEAD_DIM;
            __local float *sr = s + qi * TILE_K;
            int jj = 0;
            for (; jj + UNROLL <= lim; jj += UNROLL) { /* UNROLL keys share the loads of q */
                vf a[UNROLL];
                for (int u = 0; u < UNROLL; u++) a[u] = 0.0f;
                for (int d = 0; d < HEAD_DIM; d += VEC) {
                    vf x = LDV(qr + d);
                    for (int u = 0; u < UNROLL; u++) a[u] += x * LDV(kt + (jj + u) * HEAD_DIM + d);
                }
                for (int u = 0; u < UNROLL; u++) sr[jj + u] = hsum(a[u]);
            }
            for (; jj < lim; jj++) {
                vf a = 0.0f;
                for (int d = 0; d < HEAD_DIM; d += VEC) a += LDV(qr + d) * LDV(kt + jj * HEAD_DIM + d);
                sr[jj] = hsum(a);
            }
            float mt = -INFINITY;
            for (jj = 0; jj < lim; jj++) mt = fmax(mt, sr[jj]);
            float mn = fmax(m[qi], mt), alpha = EXP2(m[qi] - mn), sum = 0.0f;
            m[qi] = mn;
            __local float *ar = acc + qi * HEAD_DIM;
            for (int d = 0; d < HEAD_DIM; d += VEC) STV(LDV(ar + d) * alpha, ar + d);
            for (jj = 0; jj < lim; jj++) {
                float p = EXP2(sr[jj] - mn);
                sum += p;
                for (int d = 0; d < HEAD_DIM; d += VEC)
                    STV(LDV(ar + d) + p * LDV(vt + jj * HEAD_DIM + d), ar + d);
            }
            l[qi] = l[qi] * alpha + sum;
        }
    }
    for (int qi = 0; qi < nq; qi++) {
        long row = ((long)b * HQ + h0 + qi / nr) * SQ + r0 + qi % nr;
        if (split == 1) {
            for (int d = 0; d < HEAD_DIM; d++) o[row * HEAD_DIM + d] = to_bf(acc[qi * HEAD_DIM + d] / l[qi]);
        } else {
            __global float *pp = part + (row * split + sp) * PART_STRIDE;
            for (int d = 0; d < HEAD_DIM; d++) pp[d] = acc[qi * HEAD_DIM + d];
            pp[HEAD_DIM] = m[qi];
            pp[HEAD_DIM + 1] = l[qi];
        }
    }
}
#endif

/* Merges the SPLIT partial results of each query row: one work-group of
 * HEAD_DIM work-items per row. */
__kernel __attribute__((reqd_work_group_size(HEAD_DIM, 1, 1))) void
gqa_combine(__global const float *part, __global ushort *o, int split)
{
    long r = get_group_id(0);
    int t = get_local_id(0);
    __global const float *p = part + r * split * PART_STRIDE;
    float mx = -INFINITY, sum = 0.0f, acc = 0.0f;
    for (int s = 0; s < split; s++) mx = fmax(mx, p[s * PART_STRIDE + HEAD_DIM]);
    for (int s = 0; s < split; s++) {
        float w = exp2(p[s * PART_STRIDE + HEAD_DIM] - mx);
        sum += p[s * PART_STRIDE + HEAD_DIM + 1] * w;
        acc += p[s * PART_STRIDE + t] * w;
    }
    o[r * HEAD_DIM + t] = to_bf(acc / sum);
}
/* EVOLVE-BLOCK-END */

#else
#include <kevolve/task.h>
#include <CL/cl.h>

/* Partial results of split rows: created once per context, never freed
 * (the worker process ends after the evaluation). */
static cl_mem scratch;
static cl_context scratch_ctx;

static int set_args(cl_kernel k, int n, const size_t *sizes, const void *const *vals)
{
    for (int i = 0; i < n; i++)
        if (clSetKernelArg(k, (cl_uint)i, sizes[i], vals[i]) != CL_SUCCESS) return -1;
    return 0;
}

/* EVOLVE-BLOCK-START */
int kv_launch(const kv_launch_args *a)
{
    cl_command_queue queue = (cl_command_queue)a->stream;
    cl_mem q = a->tensors[0], k = a->tensors[1], v = a->tensors[2], o = a->tensors[3];
    cl_int B = (cl_int)a->syms[0], HQ = (cl_int)a->syms[1], HKV = (cl_int)a->syms[2],
           SQ = (cl_int)a->syms[3], L = (cl_int)a->syms[4];
    if (a->syms[5] != HEAD_DIM || HKV <= 0 || HQ % HKV != 0) return 1;
    cl_int G = HQ / HKV, nh = 1;
    if (SHARE_KV)
        for (nh = G < 8 ? G : 8; G % nh != 0; nh--) {
        }
    long rows = (long)B * HQ * SQ;
    long max_split = (L + TILE_K - 1) / TILE_K;
    cl_int split = SPLIT < max_split ? SPLIT : (cl_int)max_split;
    while (split > 1 && rows * split * PART_STRIDE > SCRATCH_FLOATS) split /= 2;
    if (split < 1) split = 1;
    if (split > 1 && (!scratch || scratch_ctx != (cl_context)a->context)) {
        cl_int e;
        scratch = clCreateBuffer((cl_context)a->context, CL_MEM_READ_WRITE,
                                 (size_t)SCRATCH_FLOATS * sizeof(float), NULL, &e);
        if (e != CL_SUCCESS) return 2;
        scratch_ctx = (cl_context)a->context;
    }
    cl_mem part = split > 1 ? scratch : o;
    cl_kernel ka = (cl_kernel)a->cl_kernel(a, SERIAL ? "gqa_rows" : "gqa_attn");
    if (!ka) return 3;
    size_t sz[11] = {sizeof q,      sizeof k,      sizeof v,      sizeof o,
                     sizeof part,   sizeof(cl_int), sizeof(cl_int), sizeof(cl_int),
                     sizeof(cl_int), sizeof(cl_int), sizeof(cl_int)};
    const void *val[11] = {&q, &k, &v, &o, &part, &HQ, &HKV, &SQ, &L, &nh, &split};
    if (set_args(ka, 11, sz, val) != 0) return 4;
    size_t wg = SERIAL ? 1 : THREADS, blocks = SERIAL ? ((size_t)SQ + ROWS - 1) / ROWS : (size_t)SQ;
    size_t global[3] = {blocks * (size_t)split * wg, (size_t)(HQ / nh), (size_t)B};
    size_t local[3] = {wg, 1, 1};
    if (clEnqueueNDRangeKernel(queue, ka, 3, NULL, global, local, 0, NULL, NULL) != CL_SUCCESS)
        return 5;
    if (split == 1) return 0;
    cl_kernel kc = (cl_kernel)a->cl_kernel(a, "gqa_combine");
    if (!kc) return 6;
    size_t csz[3] = {sizeof part, sizeof o, sizeof(cl_int)};
    const void *cval[3] = {&part, &o, &split};
    if (set_args(kc, 3, csz, cval) != 0) return 7;
    size_t cglobal = (size_t)rows * HEAD_DIM, clocal = HEAD_DIM;
    return clEnqueueNDRangeKernel(queue, kc, 1, NULL, &cglobal, &clocal, 0, NULL, NULL) ==
                   CL_SUCCESS
               ? 0
               : 8;
}
/* EVOLVE-BLOCK-END */
#endif
