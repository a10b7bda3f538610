// The gqa_attention tasks' double-precision reference on the GPU: the same
// computation as gqa_reference.c (kv_task.reference_scale), for the shapes
// whose float64 reference would take the CPU seconds to minutes (a prefill
// of 8192 rows is about 10^12 multiply-adds). It is the harness's code, not a
// candidate: every evaluation also computes the CPU reference on the
// held-out shapes and fails if the two disagree.
//
// What it computes, all in double: row i of a sequence sees keys [lo, hi),
// hi = L - SQ + i + 1, lo = hi - W with a window W > 0 shorter than hi, else
// 0; s = q.k / sqrt(D), p = exp(s - max s), o = sum p v / sum p and o's
// error scale os = sqrt(sum p^2 v^2) / sum p. Only the order of the double
// sums differs from the CPU's.
//
// Two kernels compute it:
//
// The tiled kernel (D = 128 on sm_80 and later: every gqa_attention shape).
// Why tiled: the judge runs the reference for every correctness trial of
// every scenario, and one block per query row (the general kernel) re-reads
// each k and v row once per row and query head and computes every score
// twice, which cost a fast child most of a second of its GPU time. A
// block here takes one (sequence, KV head) and 16 or 32 query vectors of it,
// the G query heads of that KV head times consecutive rows (g fastest), so
// each k and v row it reads serves them all. It walks its keys in tiles of
// 32 staged in shared memory as doubles; q.k and p.v run on the fp64 tensor
// cores (mma m16n8k4 .f64: IEEE double multiply-adds, the same sums in
// another order); the softmax is online: per query vector a running maximum
// m and sums z = sum p, acc = sum p v, sacc = sum p^2 v^2, rescaled by
// exp(m_old - m_new) (sacc by its square) when a tile raises m. A vector's
// own key range (causal end, window) masks its scores to p = 0 within the
// block's tiles.
//
// The general kernel (any other D or GPU): one block per query row and
// range of its keys. Pass 1 finds the range's maximum score; pass 2
// recomputes each score, p = exp(s - max), and sums p, p v and p^2 v^2.
// Scores are computed one key per thread in chunks of blockDim keys; the p v
// sums one output dimension per thread.
//
// A decode has few rows and long contexts: in either kernel its keys are
// split over enough blocks to fill the GPU, each leaving its (max, sums) in
// a scratch buffer, and a second kernel rescales the parts to the row's
// maximum and adds them (the same sums in another order).
//
// Compiled with REFERENCE_F64_GENERAL, kv_launch takes the general kernel
// alone, as it did before the tiled one (bench/reference_f64_h200.sh
// compares the two).
//
// kv_launch's tensors: q, k, v (bf16, the uploaded inputs), then o and o's
// error scales as doubles: [B, HQ, SQ, D] each. Inputs are finite (the
// judge's draws): in the tiled kernel a key outside a row's range but inside
// its block's tiles is multiplied by p = 0, which an infinite v would turn
// into NaN.
#include <kevolve/task.h>

#include <cuda_runtime.h>
#include <stdint.h>

enum { B_ = 0, HQ_, HKV_, SQ_, L_, D_, W_ }; // W_: attention_window's window, when given

static __device__ double bf(uint16_t h)
{
    return (double)__uint_as_float((unsigned)h << 16);
}

// A part of one row: its maximum score, the sum of p, then p v and
// p^2 v^2 for each of the D dimensions.
static __device__ __host__ size_t part_doubles(int D)
{
    return 2 + 2 * (size_t)D;
}

// ---------------------------------------------------------------------------
// The tiled kernel (D = 128).

namespace tiled
{

constexpr int D = 128;       // the head dimension it handles
constexpr int KEYS = 32;     // keys per tile
constexpr int THREADS = 256; // 8 warps
constexpr int WARPS = THREADS / 32;
constexpr int ST = D + 4;     // row stride (doubles) of q, k and v in shared memory
constexpr int SST = KEYS + 4; // row stride of the scores
// The strides are 4 mod 16 doubles: the 32 lanes of a fragment load (8 rows
// by 4 columns, or 4 by 8) then hit each pair of banks twice, the least for
// 256 bytes.

// What a block keeps in shared memory. MT: 16-vector blocks (1 or 2).
template <int MT> struct Shared {
    static constexpr int NV = 16 * MT;         // query vectors
    static constexpr int DP = MT == 1 ? 2 : 1; // the score tile's parts over D (see scores)
    double q[NV][ST];                          // the vectors' q, as doubles
    double k[KEYS][ST], v[KEYS][ST];           // the tile's keys and values
    double s[DP][NV][SST];                     // scores (partial over D), then p
    double m[NV], z[NV], alpha[NV];            // running max, sum p, this tile's rescale
    long long lo[NV], hi[NV];                  // each vector's keys within this block
};

// C += A B for one warp on the fp64 tensor cores, A 16x4, B 4x8, C 16x8
// (mma m16n8k4 .f64, IEEE double multiply-adds; before sm_90, two m8n8k4 of
// the same products and sums). With g = lane / 4 and t = lane % 4, a lane
// holds A rows g and g + 8 at column t (A0, A1), B row t at column g, and C
// rows g (c[0], c[1]) and g + 8 (c[2], c[3]) at columns 2 t and 2 t + 1.
static __device__ __forceinline__ void dmma(double (&c)[4], double a0, double a1, double b)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                 "{%0,%1,%2,%3};\n"
                 : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
                 : "d"(a0), "d"(a1), "d"(b));
#elif __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(c[0]), "+d"(c[1])
                 : "d"(a0), "d"(b));
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(c[2]), "+d"(c[3])
                 : "d"(a1), "d"(b));
#else
    __trap(); // kv_launch takes the general kernel below sm_80
#endif
}

// Two bf16 (the low one first in memory) as doubles.
static __device__ __forceinline__ double2 bf2(uint32_t w)
{
    return make_double2(bf((uint16_t)(w & 0xffffu)), bf((uint16_t)(w >> 16)));
}

// Per tile, each thread moves PAIRS bf16 pairs of k and of v (a warp reads
// 128 contiguous bytes of one key and writes them as 512 contiguous bytes).
constexpr int PAIRS = KEYS * (D / 2) / THREADS;

// The grid: one block per (sequence, KV head) x tile of query vectors x
// range of keys, the (sequence, KV head) fastest and the tiles of the last
// rows (most keys) first.
template <int MT>
__global__ void __launch_bounds__(THREADS, 2)
    gqa_reference_f64_tiled(const uint16_t *q, const uint16_t *k, const uint16_t *v, double *o,
                            double *os, int B, int HQ, int HKV, int SQ, int64_t L, int64_t W,
                            int splits, double *parts)
{
    typedef Shared<MT> S;
    constexpr int NV = S::NV, DP = S::DP;
    extern __shared__ __align__(16) unsigned char smem[];
    S &sh = *reinterpret_cast<S *>(smem);
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31, g = lane >> 2, tg = lane & 3;

    // Block indices fit 32 bits (kv_launch checks the grid and G SQ).
    const int G = HQ / HKV;  // query heads per KV head
    const int nvec = G * SQ; // query vectors of a (sequence, KV head)
    const int tiles = (nvec + NV - 1) / NV, BH = B * HKV;
    const int bh = blockIdx.x % BH; // b * HKV + kvh
    const int tile = tiles - 1 - blockIdx.x / BH % tiles, split = blockIdx.x / BH / tiles;
    const int b = bh / HKV, kvh = bh % HKV;
    const uint16_t *kb = k + (int64_t)bh * L * D, *vb = v + (int64_t)bh * L * D;
    const int first = tile * NV; // vector x is row x / G, query head kvh * G + x % G
    const int count = nvec - first < NV ? nvec - first : NV;
    // Where vector X's q and outputs are: row (b HQ + h) SQ + i.
    auto row_of = [&](int x) { return ((int64_t)b * HQ + kvh * G + x % G) * SQ + x / G; };

    // This block's keys: those of its rows (the first row's lo to the last
    // row's hi; both grow with the row) within range SPLIT of the context.
    const int64_t span = (L + splits - 1) / splits, s0 = (int64_t)split * span,
                  s1 = s0 + span < L ? s0 + span : L;
    auto keys_hi = [&](int x) { return L - SQ + x / G + 1; };
    auto keys_lo = [&](int64_t hi) { return W > 0 && hi > W ? hi - W : (int64_t)0; };
    int64_t kbeg = keys_lo(keys_hi(first)), kend = keys_hi(first + count - 1);
    if (kbeg < s0) kbeg = s0;
    if (kend > s1) kend = s1;

    if (t < NV) {
        long long lo = 0, hi = 0; // an empty slot: no keys
        if (t < count) {
            hi = keys_hi(first + t);
            lo = keys_lo(hi);
            lo = lo > kbeg ? lo : kbeg;
            hi = hi < kend ? hi : kend;
        }
        sh.lo[t] = lo;
        sh.hi[t] = hi;
        sh.m[t] = -INFINITY;
        sh.z[t] = 0.0;
    }
    for (int e = t; e < NV * (D / 2); e += THREADS) {
        int x = e / (D / 2), d = 2 * (e % (D / 2));
        double2 qq = make_double2(0.0, 0.0);
        if (x < count) qq = bf2(*(const uint32_t *)(q + row_of(first + x) * D + d));
        *(double2 *)&sh.q[x][d] = qq;
    }

    // A tile's k and v as loaded (bf16 pairs), zero past the block's keys:
    // this thread's are keys pj + u ROWS_STEP, dimensions pd and pd + 1.
    constexpr int ROWS_STEP = THREADS / (D / 2);
    const int pj = t / (D / 2), pd = 2 * (t % (D / 2));
    uint32_t rk[PAIRS], rv[PAIRS];
    auto fetch = [&](int64_t j0) {
        const uint16_t *kr = kb + (j0 + pj) * D + pd, *vr = vb + (j0 + pj) * D + pd;
#pragma unroll
        for (int u = 0; u < PAIRS; u++) {
            bool in = j0 + pj + u * ROWS_STEP < kend;
            rk[u] = in ? __ldg((const unsigned int *)(kr + u * ROWS_STEP * D)) : 0u;
            rv[u] = in ? __ldg((const unsigned int *)(vr + u * ROWS_STEP * D)) : 0u;
        }
    };

    // Scores: one item a warp, (16-vector block smt, 8-key block snb, part
    // sdp of D). 32 vectors: 2 x 4 items. 16 vectors: 4 items, each split in
    // two halves of D (DP = 2) so that all 8 warps work; the softmax adds
    // the halves.
    constexpr int NB = KEYS / 8, KSTEPS = D / 4 / DP;
    static_assert(MT * NB * DP == WARPS, "one score item a warp");
    const int sdp = warp % DP, snb = warp / DP % NB, smt = warp / (DP * NB);
    // p.v: PTW items a warp, 16-vector block pmt times 8-dimension blocks
    // pnb .. pnb + PTW - 1.
    constexpr int PTW = MT * (D / 8) / WARPS;
    const int pmt = warp * PTW / (D / 8), pnb = warp * PTW % (D / 8);
    double acc[PTW][4], sacc[PTW][4];
#pragma unroll
    for (int u = 0; u < PTW; u++)
        for (int c = 0; c < 4; c++)
            acc[u][c] = sacc[u][c] = 0.0;
    const double scale = 1.0 / sqrt((double)D);

    // Blocks of 16 vectors (decode: keys from memory) load the next tile
    // while they compute this one; blocks of 32 (prefill: keys mostly in L2,
    // read by many blocks) need those registers for their sums.
    constexpr bool PREFETCH = MT == 1;
    if (PREFETCH && kbeg < kend) fetch(kbeg);
    for (int64_t j0 = kbeg; j0 < kend; j0 += KEYS) {
        if (!PREFETCH) fetch(j0);
        __syncthreads(); // the last tile's p.v is done with k, v and p
#pragma unroll
        for (int u = 0; u < PAIRS; u++) {
            *(double2 *)&sh.k[pj + u * ROWS_STEP][pd] = bf2(rk[u]);
            *(double2 *)&sh.v[pj + u * ROWS_STEP][pd] = bf2(rv[u]);
        }
        __syncthreads();
        if (PREFETCH && j0 + KEYS < kend) fetch(j0 + KEYS); // in flight during this tile

        // Scores q.k (unscaled) of the warp's item, in two sums (even and
        // odd steps of 4 dimensions: two chains of mma in flight).
        {
            double c[4] = {0.0, 0.0, 0.0, 0.0}, c2[4] = {0.0, 0.0, 0.0, 0.0};
            const double *qa = &sh.q[smt * 16 + g][sdp * KSTEPS * 4 + tg];
            const double *kr = &sh.k[snb * 8 + g][sdp * KSTEPS * 4 + tg];
#pragma unroll 4
            for (int st = 0; st < KSTEPS; st += 2) {
                dmma(c, qa[4 * st], qa[8 * ST + 4 * st], kr[4 * st]);
                dmma(c2, qa[4 * st + 4], qa[8 * ST + 4 * st + 4], kr[4 * st + 4]);
            }
            for (int i = 0; i < 4; i++)
                c[i] += c2[i];
            double *sr = &sh.s[sdp][smt * 16 + g][snb * 8 + 2 * tg];
            sr[0] = c[0];
            sr[1] = c[1];
            sr[8 * SST] = c[2];
            sr[8 * SST + 1] = c[3];
        }
        __syncthreads();

        // Online softmax: warp w takes vectors w VPW .. w VPW + VPW - 1, lane
        // = key. p replaces the score; alpha rescales the vector's old sums.
        constexpr int VPW = NV / WARPS;
#pragma unroll 1
        for (int u = 0; u < VPW; u++) {
            const int x = warp * VPW + u;
            double s = sh.s[0][x][lane];
            if (DP == 2) s += sh.s[DP - 1][x][lane];
            s *= scale;
            const int64_t j = j0 + lane;
            const bool in = j >= sh.lo[x] && j < sh.hi[x];
            double tmax = in ? s : -INFINITY;
            for (int off = 16; off > 0; off >>= 1)
                tmax = fmax(tmax, __shfl_xor_sync(0xffffffffu, tmax, off));
            const double mo = sh.m[x], mn = fmax(mo, tmax);
            double alpha = 1.0, p = 0.0; // no key of the vector yet: nothing to rescale
            if (mn != -INFINITY) {
                alpha = exp(mo - mn); // 0 while mo is -inf
                p = in ? exp(s - mn) : 0.0;
            }
            double zt = p;
            for (int off = 16; off > 0; off >>= 1)
                zt += __shfl_xor_sync(0xffffffffu, zt, off);
            sh.s[0][x][lane] = p;
            if (lane == 0) {
                sh.m[x] = mn;
                sh.z[x] = sh.z[x] * alpha + zt;
                sh.alpha[x] = alpha;
            }
        }
        __syncthreads();

        // acc = alpha acc + p v, sacc = alpha^2 sacc + p^2 v^2 for the warp's
        // items; the lane's rows are vectors pmt * 16 + g and that + 8.
        {
            const double al0 = sh.alpha[pmt * 16 + g], al1 = sh.alpha[pmt * 16 + g + 8];
#pragma unroll
            for (int u = 0; u < PTW; u++)
                for (int c = 0; c < 2; c++) {
                    acc[u][c] *= al0;
                    sacc[u][c] *= al0 * al0;
                    acc[u][2 + c] *= al1;
                    sacc[u][2 + c] *= al1 * al1;
                }
            const double *pr = &sh.s[0][pmt * 16 + g][tg];
            const double *vr = &sh.v[tg][pnb * 8 + g];
#pragma unroll 2
            for (int st = 0; st < KEYS / 4; st++) {
                const double p0 = pr[4 * st], p1 = pr[8 * SST + 4 * st];
                const double pp0 = p0 * p0, pp1 = p1 * p1;
#pragma unroll
                for (int u = 0; u < PTW; u++) {
                    const double vx = vr[4 * st * ST + u * 8];
                    dmma(acc[u], p0, p1, vx);
                    dmma(sacc[u], pp0, pp1, vx * vx);
                }
            }
        }
    }
    __syncthreads(); // m and z final (and written, for a block with no keys)

    // The lane's vectors pmt * 16 + g + 8 h, its dimensions (pnb + u) * 8 +
    // 2 tg + c in acc[u][2 h + c].
    for (int h = 0; h < 2; h++) {
        const int x = pmt * 16 + g + 8 * h;
        if (x >= count) break;
        const int64_t row = row_of(first + x);
        if (splits > 1) {
            // An empty range (past a causal row's last key) leaves m = -inf, z = 0.
            double *part = parts + (row * splits + split) * part_doubles(D);
            if (pnb == 0 && tg == 0) {
                part[0] = sh.m[x];
                part[1] = sh.z[x];
            }
#pragma unroll
            for (int u = 0; u < PTW; u++)
                for (int c = 0; c < 2; c++) {
                    int d = (pnb + u) * 8 + 2 * tg + c;
                    part[2 + d] = acc[u][2 * h + c];
                    part[2 + D + d] = sacc[u][2 * h + c];
                }
        } else {
            const double z = sh.z[x];
#pragma unroll
            for (int u = 0; u < PTW; u++)
                for (int c = 0; c < 2; c++) {
                    int d = (pnb + u) * 8 + 2 * tg + c;
                    o[row * D + d] = acc[u][2 * h + c] / z;
                    os[row * D + d] = sqrt(sacc[u][2 * h + c]) / z;
                }
        }
    }
}

} // namespace tiled

// ---------------------------------------------------------------------------
// The general kernel (any D).

// Score of key J against the row's query QS (D doubles in shared memory);
// the k row is read 8 elements at a time when D allows.
static __device__ double score(const double *qs, const uint16_t *k, int64_t j, int D, double scale)
{
    const uint16_t *kr = k + j * D;
    double s = 0.0;
    if (D % 8 == 0) {
        for (int d = 0; d < D; d += 8) {
            uint4 w = *(const uint4 *)(kr + d);
            unsigned u[4] = {w.x, w.y, w.z, w.w};
            for (int e = 0; e < 4; e++) {
                s += qs[d + 2 * e] * bf((uint16_t)(u[e] & 0xffffu));
                s += qs[d + 2 * e + 1] * bf((uint16_t)(u[e] >> 16));
            }
        }
    } else {
        for (int d = 0; d < D; d++)
            s += qs[d] * bf(kr[d]);
    }
    return s * scale;
}

__global__ void gqa_reference_f64(const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                  double *o, double *os, int HQ, int HKV, int SQ, int64_t L, int D,
                                  int64_t W, double *parts)
{
    extern __shared__ double sh[]; // q row [D], then p of one chunk [blockDim.x], reduction [32]
    double *qs = sh, *ps = sh + D, *red = sh + D + blockDim.x;
    int64_t row = blockIdx.x; // ((b * HQ + h) * SQ + i)
    int i = (int)(row % SQ);
    int64_t bh = row / SQ;
    int h = (int)(bh % HQ);
    int64_t b = bh / HQ;
    int kvh = h / (HQ / HKV);
    const uint16_t *kb = k + (b * HKV + kvh) * L * D, *vb = v + (b * HKV + kvh) * L * D;
    int64_t keys = L - SQ + i + 1;
    // A sliding window (W > 0) leaves the row its last W keys only.
    int64_t lo = W > 0 && keys > W ? keys - W : 0;
    // This block's keys: range blockIdx.y of gridDim.y over the context.
    int64_t span = (L + gridDim.y - 1) / gridDim.y;
    int64_t k0 = (int64_t)blockIdx.y * span, k1 = k0 + span < keys ? k0 + span : keys;
    if (k0 < lo) k0 = lo;
    double scale = 1.0 / sqrt((double)D);
    int t = threadIdx.x, nt = blockDim.x;
    for (int d = t; d < D; d += nt)
        qs[d] = bf(q[row * D + d]);
    __syncthreads();

    double m = -INFINITY; // pass 1: the maximum score
    for (int64_t j = k0 + t; j < k1; j += nt)
        m = fmax(m, score(qs, kb, j, D, scale));
    for (int off = 16; off > 0; off >>= 1)
        m = fmax(m, __shfl_xor_sync(0xffffffffu, m, off));
    if ((t & 31) == 0) red[t >> 5] = m;
    __syncthreads();
    if (t == 0) {
        for (int w = 1; w < (nt + 31) / 32; w++)
            red[0] = fmax(red[0], red[w]);
    }
    __syncthreads();
    m = red[0];
    __syncthreads();

    // pass 2: p, its sum, p v and p^2 v^2; each thread owns dimensions t, t + nt, ...
    double z = 0.0, acc[4] = {0, 0, 0, 0}, sacc[4] = {0, 0, 0, 0};
    for (int64_t j0 = k0; j0 < k1; j0 += nt) {
        int64_t j = j0 + t;
        double p = j < k1 ? exp(score(qs, kb, j, D, scale) - m) : 0.0;
        ps[t] = p;
        z += p;
        __syncthreads();
        int64_t n = k1 - j0 < nt ? k1 - j0 : nt;
        for (int64_t jj = 0; jj < n; jj++) {
            double pj = ps[jj];
            const uint16_t *vr = vb + (j0 + jj) * D;
            for (int c = 0, d = t; d < D && c < 4; c++, d += nt) {
                double x = bf(vr[d]);
                acc[c] += pj * x;
                sacc[c] += pj * pj * x * x;
            }
        }
        __syncthreads();
    }
    for (int off = 16; off > 0; off >>= 1)
        z += __shfl_xor_sync(0xffffffffu, z, off);
    if ((t & 31) == 0) red[t >> 5] = z;
    __syncthreads();
    if (t == 0) {
        double s = 0.0;
        for (int w = 0; w < (nt + 31) / 32; w++)
            s += red[w];
        red[0] = s;
    }
    __syncthreads();
    z = red[0];
    if (gridDim.y > 1) {
        // An empty range (past a causal row's last key) leaves m = -inf, z = 0.
        double *part = parts + (row * gridDim.y + blockIdx.y) * part_doubles(D);
        if (t == 0) {
            part[0] = m;
            part[1] = z;
        }
        for (int c = 0, d = t; d < D && c < 4; c++, d += nt) {
            part[2 + d] = acc[c];
            part[2 + D + d] = sacc[c];
        }
        return;
    }
    for (int c = 0, d = t; d < D && c < 4; c++, d += nt) {
        o[row * D + d] = acc[c] / z;
        os[row * D + d] = sqrt(sacc[c]) / z;
    }
}

// One block per row: the row's SPLITS parts rescaled to its maximum and
// added (p by exp(m_i - m), p^2 by its square). Both kernels' parts.
__global__ void gqa_reference_f64_combine(const double *parts, double *o, double *os, int splits,
                                          int D)
{
    int64_t row = blockIdx.x;
    const double *first = parts + row * splits * part_doubles(D);
    double m = -INFINITY;
    for (int s = 0; s < splits; s++)
        m = fmax(m, first[s * part_doubles(D)]);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        double z = 0.0, acc = 0.0, sacc = 0.0;
        for (int s = 0; s < splits; s++) {
            const double *part = first + s * part_doubles(D);
            if (part[1] == 0.0) continue;
            double w = exp(part[0] - m);
            z += w * part[1];
            acc += w * part[2 + d];
            sacc += w * w * part[2 + D + d];
        }
        o[row * D + d] = acc / z;
        os[row * D + d] = sqrt(sacc) / z;
    }
}

// ---------------------------------------------------------------------------
// The launcher.

// The device's multiprocessors and compute capability (major), looked up once.
static int sms, cc_major;
static void device_info(void)
{
    if (sms) return;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
        sms = 132;
        cc_major = 0; // unknown: the general kernel
    }
}

// How many ranges each row's keys are split into: enough blocks (BLOCKS
// without a split) for WANT, each range at least MIN_KEYS keys.
static int splits_for(int64_t blocks, int64_t want, int64_t L, int64_t min_keys)
{
    int64_t n = (want + blocks - 1) / blocks, most = (L + min_keys - 1) / min_keys;
    if (n > most) n = most;
    return n < 1 ? 1 : (int)(n > 1024 ? 1024 : n);
}

// The parts' scratch, kept for the judge's next calls (grown when short).
static double *scratch;
static size_t scratch_bytes;

static int ensure_scratch(size_t need, cudaStream_t stream)
{
    if (need <= scratch_bytes) return 0;
    cudaStreamSynchronize(stream); /* the old scratch may still be read */
    cudaFree(scratch);
    scratch = NULL;
    scratch_bytes = 0;
    if (cudaMalloc((void **)&scratch, need) != cudaSuccess) return (int)cudaGetLastError();
    scratch_bytes = need;
    return 0;
}

template <int MT> static int launch_tiled(const kv_launch_args *a, int64_t W, cudaStream_t stream)
{
    const int64_t *s = a->syms;
    int64_t B = s[B_], HQ = s[HQ_], HKV = s[HKV_], SQ = s[SQ_], L = s[L_];
    int64_t nvec = HQ / HKV * SQ, tiles = (nvec + 16 * MT - 1) / (16 * MT),
            blocks = B * HKV * tiles;
    // Two blocks fit a multiprocessor: two waves of them at least, each
    // range at least 4 tiles (decode) or 8 (prefill: fewer parts to add).
    int splits = splits_for(blocks, 4 * (int64_t)sms, L, MT == 1 ? 128 : 256);
    if (blocks * splits > 0x7fffffff) return (int)cudaErrorInvalidConfiguration;
    int64_t rows = B * HQ * SQ;
    if (splits > 1) {
        int rc =
            ensure_scratch((size_t)rows * splits * part_doubles(tiled::D) * sizeof(double), stream);
        if (rc) return rc;
    }
    size_t shared = sizeof(tiled::Shared<MT>);
    static bool configured; // the kernel's attributes, set at its first launch
    if (!configured) {
        cudaError_t e = cudaFuncSetAttribute(
            tiled::gqa_reference_f64_tiled<MT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
            (int)shared);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(tiled::gqa_reference_f64_tiled<MT>,
                                     cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared);
        if (e != cudaSuccess) return (int)e;
        configured = true;
    }
    tiled::gqa_reference_f64_tiled<MT>
        <<<(unsigned)(blocks * splits), tiled::THREADS, shared, stream>>>(
            (const uint16_t *)a->tensors[0], (const uint16_t *)a->tensors[1],
            (const uint16_t *)a->tensors[2], (double *)a->tensors[3], (double *)a->tensors[4],
            (int)B, (int)HQ, (int)HKV, (int)SQ, L, W, splits, scratch);
    if (splits > 1)
        gqa_reference_f64_combine<<<(unsigned)rows, 128, 0, stream>>>(
            scratch, (double *)a->tensors[3], (double *)a->tensors[4], splits, tiled::D);
    return (int)cudaGetLastError();
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    const int64_t *s = a->syms;
    int D = (int)s[D_];
    int64_t rows = s[B_] * s[HQ_] * s[SQ_];
    if (rows == 0) return 0;
    cudaStream_t stream = (cudaStream_t)a->stream;
    int64_t W = a->num_syms > W_ ? s[W_] : 0;
    device_info();
#ifndef REFERENCE_F64_GENERAL
    if (D == tiled::D && cc_major >= 8 && s[HKV_] > 0 && s[HQ_] % s[HKV_] == 0 &&
        s[HQ_] / s[HKV_] * s[SQ_] <= 0x7fffffff) {
        // Up to 16 query vectors per (sequence, KV head) (decode of up to 16
        // query heads a KV head): blocks of 16 vectors, else of 32.
        if (s[HQ_] / s[HKV_] * s[SQ_] <= 16) return launch_tiled<1>(a, W, stream);
        return launch_tiled<2>(a, W, stream);
    }
#endif

    int nt = 128; // a multiple of 32; each thread owns up to 4 dimensions
    if (D > 4 * nt) return (int)cudaErrorInvalidValue;
    size_t shared = (size_t)(D + nt + 32) * sizeof(double);
    // Enough blocks for two per multiprocessor, each range at least 512 keys.
    int splits = splits_for(rows, 2 * (int64_t)sms, s[L_], 512);
    if (splits > 1) {
        int rc = ensure_scratch((size_t)rows * splits * part_doubles(D) * sizeof(double), stream);
        if (rc) return rc;
    }
    dim3 grid((unsigned)rows, (unsigned)splits);
    gqa_reference_f64<<<grid, nt, shared, stream>>>(
        (const uint16_t *)a->tensors[0], (const uint16_t *)a->tensors[1],
        (const uint16_t *)a->tensors[2], (double *)a->tensors[3], (double *)a->tensors[4],
        (int)s[HQ_], (int)s[HKV_], (int)s[SQ_], s[L_], D, W, scratch);
    if (splits > 1)
        gqa_reference_f64_combine<<<(unsigned)rows, nt, 0, stream>>>(
            scratch, (double *)a->tensors[3], (double *)a->tensors[4], splits, D);
    return (int)cudaGetLastError();
}
