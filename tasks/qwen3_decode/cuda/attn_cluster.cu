// qwen3_decode_attn's cluster seed: attn_mma.cu's maths (a tile of 8 query
// rows as the mma's columns, 16 cache rows a group straight from global
// memory into tensor-core fragments, each query row's own causal end),
// with the fixed costs of a split decode cut. What a decode call costs
// beyond its rows read once is a chain of waits: the written length
// (free[b]) before the first load, each warp's loads before its folds, and
// attn_mma's merge (the partials to global memory, a fence, a counter, then
// three rounds of reads by the last block). Here:
//   - the chunks of a group of rows are the blocks of one cluster, and they
//     merge through distributed shared memory: each block's partial in its
//     own shared memory, one cluster barrier, every block merging its share
//     of the outputs from all of them, one barrier more; no scratch, no
//     counter, no fence;
//   - EARLY: a warp's first loads go out before free[b] is known (rows
//     inside the cache, whatever is written; the V rows past the written
//     ones are zeroed in registers when it is, and their scores are -inf);
//   - PIPE: the next step's loads go out before the current step is folded
//     (two register buffers), so a warp always has rows in flight;
//   - SPAN: a group's rows may span several clusters, so that the chunks
//     fill every multiprocessor (8 KV heads in clusters of 8 use 64 of an
//     H100's 132, and it holds 15 such clusters, not 16: 2026-12-07). Each
//     cluster's merged partial goes to global memory and the group's last
//     block merges those few (attn_mma's merge, over SPAN partials, not
//     over every chunk).
// Head sizes other than 128 go to attn_generic.cuh. Axes, each value a
// correct kernel:
//   WARPS       warps per block
//   GROUPS      16-row groups a warp loads a step
//   PIPE        1: the next step loaded while this one folds
//   CLUSTER     the most chunks (blocks of a cluster) a cluster holds;
//               fewer where the rows or the multiprocessors ask for fewer,
//               or where the card cannot hold every cluster at once
//   SPAN        the most clusters a group of rows spans
//   MIN_GROUPS  groups per warp a chunk holds at the least
//   EARLY       1: the first step's loads before the written length
//   PDL         1: programmatic dependent launch (decode_gemv.cuh)
//   PREFETCH    1: before waiting for the kernel before it, each warp asks
//               L2 for its first step's rows (no value read)
#include <kevolve/task.h>
#include <cooperative_groups.h>
#include <gqa_attention/cuda/gqa_common.cuh>
#include <qwen3_decode/cuda/attn_frag.cuh>
#include <qwen3_decode/cuda/attn_generic.cuh>
#include <qwen3_decode/cuda/decode_gemv.cuh>

// EVOLVE-BLOCK-START
#define WARPS 8      // kevolve: tune 4 8
#define GROUPS 1     // kevolve: tune 1 2
#define PIPE 1       // kevolve: tune 0 1
#define CLUSTER 8    // kevolve: tune 2 4 8 16
#define SPAN 1       // kevolve: tune 1 2 4 8 16
#define MIN_GROUPS 2 // kevolve: tune 1 2 4 8
#define EARLY 1      // kevolve: tune 0 1
#define PDL 0        // kevolve: tune 0 1
#define PREFETCH 0   // kevolve: tune 0 1

namespace qc
{

namespace cg = cooperative_groups;
using namespace qd_frag;
constexpr int MAX_CLUSTER = 16, MAX_SPAN = 16, PART = GQA_PART;

struct args {
    const bf16_t *q, *k, *v;
    const int *free_rows;
    bf16_t *o;
    float *part;    // SPAN > 1: each cluster's merged partial, as gqa_merge_rows_to reads it
    unsigned *done; // SPAN > 1: the group's blocks done
    int q_len, hq, hkv, g, tiles, split, span, chunk, len;
};

// V rows at or past J1 as zeros: loaded before the written length was
// known, they may hold anything (a NaN times a zero weight is a NaN).
__device__ __forceinline__ void zero_unwritten(keys16 &G_, int base, int j1, int t)
{
    const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < 8; i++)
        if (base + 2 * t + (i & 1) + ((i >> 2) << 3) >= j1) G_.v[i] = z;
}

template <int KPI>
__device__ __forceinline__ void load_step(keys16 *buf, const bf16_t *kg, const bf16_t *vg, int f,
                                          int bound, int g, int t)
{
#pragma unroll
    for (int u = 0; u < KPI; u++)
        if (f + u * 16 < bound) load_group(buf[u], kg, vg, f + u * 16, bound, g, t);
}

template <int KPI>
__device__ __forceinline__ void fold_step(const keys16 *buf, const uint4 *qb, int f, int j1,
                                          const int *end, int g, float sl2, float *m, float *l,
                                          float (*oacc)[4])
{
#pragma unroll
    for (int u = 0; u < KPI; u++)
        if (f + u * 16 < j1) fold_group(buf[u], qb, f + u * 16, end, g, sl2, m, l, oacc);
}

// The group's last block to finish merges its clusters' partials.
template <int NT>
__device__ __forceinline__ void merge_span(const args &a, long long group, int b, int kvh, int tile,
                                           int nr, float *sm_w, int *sm_last)
{
    if (gqa_last_block<NT>(a.done + group, a.split * a.span, sm_last))
        gqa_merge_rows_to<NT>(
            a.part, [&](int col) { return a.o + row_of(a, b, kvh, tile, col) * D; }, group * COLS,
            nr, a.span, sm_w);
}

template <int W, int KPI> __global__ void __launch_bounds__(W * 32, 1) cluster_attn(args a)
{
    constexpr int NT = W * 32, STEP = W * KPI * 16;
    __shared__ float sm_o[W][COLS][D];
    __shared__ float sm_ml[W][COLS][2];
    __shared__ float sm_p[COLS][D]; // this block's partial: the chunk's sums, unnormalised
    __shared__ float sm_pml[COLS][2];
    __shared__ float sm_w[COLS * MAX_SPAN];
    __shared__ int sm_last;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int sp = blockIdx.x, b = blockIdx.z, kvh = blockIdx.y / a.tiles,
              tile = blockIdx.y % a.tiles;
    const int nr = min(COLS, a.g * a.q_len - tile * COLS); // rows of this tile
    const long long group = ((long long)b * a.hkv + kvh) * a.tiles + tile;
    const int j0 = sp * a.chunk, cend = min(a.len, j0 + a.chunk);
    const bf16_t *kg = a.k + ((long long)b * a.hkv + kvh) * a.len * D;
    const bf16_t *vg = a.v + ((long long)b * a.hkv + kvh) * a.len * D;
    int f = j0 + warp * KPI * 16;
    if (PREFETCH && lane == 0 && f < cend) {
        const int n = min(KPI * 16, cend - f);
        qd::prefetch_l2(kg + (long long)f * D, (int64_t)n * D * 2);
        qd::prefetch_l2(vg + (long long)f * D, (int64_t)n * D * 2);
    }
    qd::pdl_release(); // nothing here is read before the kernel before it is done
    qd::pdl_wait();
    keys16 A[KPI], B[PIPE ? KPI : 1];
    if (EARLY) load_step<KPI>(A, kg, vg, f, cend, g, t); // rows in the cache, written or not
    const int first = a.len - a.free_rows[b] - a.q_len;  // the row of the step's token 0
    const int j1 = min(first + a.q_len, cend);
    const float sl2 = rsqrtf((float)D) * GQA_LOG2E; // scores in log2 units
    if (EARLY) {
#pragma unroll
        for (int u = 0; u < KPI; u++)
            zero_unwritten(A[u], f + u * 16, j1, t);
    } else {
        load_step<KPI>(A, kg, vg, f, j1, g, t);
    }

    uint4 qb[4];
    load_qt(qb, a, b, kvh, tile, nr, g, t);
    int end[2];
    causal_ends(end, a, first, j1, tile, nr, t);
    float oacc[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    clear_acc(oacc);

    // Warp w takes groups (it*W + w)*KPI .. +KPI-1 of the chunk; A holds
    // the step at F, B the next one where PIPE is on.
    while (f < j1) {
        if (!PIPE) {
            fold_step<KPI>(A, qb, f, j1, end, g, sl2, m, l, oacc);
            f += STEP;
            if (f < j1) load_step<KPI>(A, kg, vg, f, j1, g, t);
            continue;
        }
        if (f + STEP < j1) load_step<KPI>(B, kg, vg, f + STEP, j1, g, t);
        fold_step<KPI>(A, qb, f, j1, end, g, sl2, m, l, oacc);
        f += STEP;
        if (f >= j1) break;
        if (f + STEP < j1) load_step<KPI>(A, kg, vg, f + STEP, j1, g, t);
        fold_step<KPI>(B, qb, f, j1, end, g, sl2, m, l, oacc);
        f += STEP;
    }

    // The block's warps merged into its partial (sm_p, sm_pml).
    stage_warp(sm_o, sm_ml, warp, g, t, oacc, m, l);
    __syncthreads();
    for (int i = tid; i < nr * D; i += NT) {
        const int col = i / D, c = i % D;
        float M, S, A_;
        merge_warps<W>(sm_o, sm_ml, col, c, M, S, A_);
        if (a.split > 1) {
            sm_p[col][c] = A_;
            if (c == 0) {
                sm_pml[col][0] = M;
                sm_pml[col][1] = S;
            }
        } else if (a.span == 1) {
            a.o[row_of(a, b, kvh, tile, col) * D + c] = gqa_bf16(A_ / S);
        } else {
            put_part(a.part, group, col, a.span, sp, c, A_, M, S);
        }
    }
    if (a.split == 1) {
        if (a.span > 1) merge_span<NT>(a, group, b, kvh, tile, nr, sm_w, &sm_last);
        return;
    }

    // The cluster's blocks are the group's chunks: block r merges outputs
    // r*NT + tid, stepping split*NT, from every block's shared memory.
    cg::cluster_group cl = cg::this_cluster();
    const int rank = (int)cl.block_rank();
    cl.sync();
    for (int i = rank * NT + tid; i < nr * D; i += a.split * NT) {
        const int col = i / D, c = i % D;
        float ms[MAX_CLUSTER], M = -INFINITY;
#pragma unroll
        for (int s = 0; s < MAX_CLUSTER; s++)
            if (s < a.split) {
                ms[s] = cl.map_shared_rank(&sm_pml[col][0], s)[0];
                M = fmaxf(M, ms[s]);
            }
        float S = 0.0f, A_ = 0.0f;
#pragma unroll
        for (int s = 0; s < MAX_CLUSTER; s++)
            if (s < a.split) {
                const float wt = wexp2(ms[s], M);
                S += cl.map_shared_rank(&sm_pml[col][1], s)[0] * wt;
                A_ += cl.map_shared_rank(&sm_p[col][c], s)[0] * wt;
            }
        if (a.span == 1)
            a.o[row_of(a, b, kvh, tile, col) * D + c] = gqa_bf16(A_ / S);
        else
            put_part(a.part, group, col, a.span, sp / a.split, c, A_, M, S);
    }
    cl.sync(); // no block's shared memory goes while another reads it
    if (a.span > 1) merge_span<NT>(a, group, b, kvh, tile, nr, sm_w, &sm_last);
}

// Clusters the card holds at once of C blocks (0: none); each size asked
// once (16 asks for the non-portable size).
template <int W, int KPI> static int clusters_held(int c, cudaStream_t s)
{
    static int held[MAX_CLUSTER + 1]; // 0 unknown, -1 none, else clusters held at once
    if (!held[c]) {
        held[c] = -1;
        if (c > 8 && cudaFuncSetAttribute(cluster_attn<W, KPI>,
                                          cudaFuncAttributeNonPortableClusterSizeAllowed,
                                          1) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        qd::launch_cfg cfg(dim3((unsigned)c), dim3(W * 32), 0, s, false);
        cfg.add_cluster((unsigned)c);
        int n = 0;
        if (cudaOccupancyMaxActiveClusters(&n, cluster_attn<W, KPI>, &cfg.cfg) != cudaSuccess)
            (void)cudaGetLastError();
        else if (n >= 1)
            held[c] = n;
    }
    return held[c] > 0 ? held[c] : 0;
}

// The cluster size C (a power of two, at most CLUSTER) and the clusters a
// group spans (at most SPAN) for WANT chunks a group: the most chunks in
// all, C * span <= WANT, with every group's clusters held at once (where
// the card holds fewer they run in waves, slower than half the size in
// one: CLUSTER 16 against 8 on an H100, 2026-12-07); at a tie the larger
// cluster, whose merge stays in shared memory.
template <int W, int KPI>
static void cluster_fit(long long want, long long groups, cudaStream_t s, int *c_out, int *span_out)
{
    int best_c = 1, best_span = (int)(want < SPAN ? want : SPAN);
    for (int c = 2; c <= CLUSTER && c <= want; c *= 2) {
        long long span = want / c;
        if (span > SPAN) span = SPAN;
        const long long fit = clusters_held<W, KPI>(c, s) / groups;
        if (span > fit) span = fit;
        if (span >= 1 && c * span >= (long long)best_c * best_span) {
            best_c = c;
            best_span = (int)span;
        }
    }
    *c_out = best_c;
    *span_out = best_span < 1 ? 1 : best_span;
}

static int launch(const kv_launch_args *k)
{
    constexpr int W = WARPS, KPI = GROUPS;
    args a;
    a.q = (const bf16_t *)k->tensors[0];
    a.k = (const bf16_t *)k->tensors[1];
    a.v = (const bf16_t *)k->tensors[2];
    a.free_rows = (const int *)k->tensors[3];
    a.o = (bf16_t *)k->tensors[4];
    const long long b_n = k->syms[0];
    a.q_len = (int)k->syms[1];
    a.hq = (int)k->syms[2];
    a.hkv = (int)k->syms[3];
    if (k->syms[4] != D || a.hkv < 1 || a.hq % a.hkv || k->syms[5] > (1 << 24) || b_n > 65535)
        return qd_attn::launch_generic(k, 256);
    a.len = (int)k->syms[5];
    a.g = a.hq / a.hkv;
    a.tiles = (a.g * a.q_len + COLS - 1) / COLS;
    const long long groups = b_n * a.hkv * a.tiles;
    if (a.hkv * a.tiles > 65535) return qd_attn::launch_generic(k, 256);
    const cudaStream_t s = (cudaStream_t)k->stream;
    // Chunks: no more than fill the multiprocessors once (one block each)
    // and none under MIN_GROUPS groups a warp.
    long long want = gqa_sm_count() / groups;
    const long long min_keys = (long long)MIN_GROUPS * W * 16;
    if (want > (a.len + min_keys - 1) / min_keys) want = (a.len + min_keys - 1) / min_keys;
    if (want < 1) want = 1;
    int c = 1, span = 1;
    cluster_fit<W, KPI>(want, groups, s, &c, &span);
    while (span > 1 && groups * COLS * span * PART > GQA_SCRATCH_FLOATS)
        span /= 2;
    if (span > 1 && groups > GQA_MAX_COUNTERS) span = 1;
    a.part = gqa_scratch_ptr();
    a.done = gqa_done_ptr();
    if (span > 1 && (!a.part || !a.done)) return (int)cudaErrorInvalidSymbol;
    long long chunk = (a.len + (long long)c * span - 1) / ((long long)c * span);
    chunk = (chunk + 15) / 16 * 16; // whole groups
    a.chunk = (int)chunk;
    a.split = c; // a chunk past the cache holds no row: its partial is empty
    a.span = span;
    dim3 grid((unsigned)(c * span), (unsigned)(a.hkv * a.tiles), (unsigned)b_n);
    qd::launch_cfg cfg(grid, dim3(W * 32), 0, s, PDL);
    if (c > 1) cfg.add_cluster((unsigned)c);
    return (int)cudaLaunchKernelEx(&cfg.cfg, cluster_attn<W, KPI>, a);
}

} // namespace qc

extern "C" int kv_launch(const kv_launch_args *a)
{
    return qc::launch(a);
}
// EVOLVE-BLOCK-END
