// A seed of gqa_attention for the cuda backend. Every seed but naive.cu has
// this same text outside its two EVOLVE-BLOCKs: one for decode (calls of
// one query row), one for prefill (many rows, chunked or not). A seed's
// design is one of the two; its other block calls the harness's fixed kernel
// (gqa_fallback.cuh). So a crossover of two seeds can give a child the
// decode of one design and the prefill of another. Each block is a namespace
// of its own, and no macro of one design is a name in a design of the other
// kind (tests/unit/test_gqa_seeds.c).
#include <kevolve/task.h>
#include <gqa_attention/cuda/gqa_common.cuh>
#include <gqa_attention/cuda/gqa_hopper.cuh>
#include <gqa_attention/cuda/gqa_fallback.cuh>

#include <cooperative_groups.h>

namespace decode_design {
// EVOLVE-BLOCK-START decode
// Split-sequence decode merged inside a thread-block cluster. At B=1 the 8 KV
// heads cannot fill 132 multiprocessors, so each (sequence, KV head) is split
// into C chunks; merging partial results through global memory (a
// threadfence, a done counter, the last block re-reading every partial) costs
// about 4 us a call on an H200, more than reading K and V at L=1024. Here the
// C chunks of a (sequence, KV head) are the C blocks of one cluster (sm_90)
// and merge through distributed shared memory: no global scratch, no atomics.
//
// A block of WARPS warps takes keys [r*chunk, r*chunk + chunk) of its KV
// head (r: its rank in the cluster; empty for the last ranks when L is
// short) for the G <= 8 query heads. Each warp streams groups of 16 keys
// with 16-byte loads straight into mma fragments (no shared memory, no
// barrier in the loop) with its own online softmax, as decode_split.cu: the
// query heads are the mma's 8 columns, S^T = K Q^T and O^T += V^T P^T
// (m16n8k16, fp32), P^T turned into an operand by movmatrix. The warps
// merge in shared memory into the block's partial (max and sum per head,
// unnormalised O); after a cluster barrier each block reads the C partials
// of a different slice of the G x 128 outputs through map_shared_rank,
// merges them and writes bf16; a last cluster barrier keeps every block's
// shared memory alive until all have read it. A cluster holds at most 16
// blocks, too few to keep K and V streaming on a long cache at B=1: caches
// longer than MAX_L (and G > 8) go to the harness's fixed decode
// (gqa_fallback.cuh), which splits across the whole GPU. Axes, each value a
// correct kernel:
//   WARPS       warps per block
//   GROUPS      16-key groups a warp loads before using any (memory
//               parallelism against registers); a warp's groups are W
//               groups apart, so short chunks still spread over every warp
//   MIN_GROUPS  groups per warp a chunk holds at the least (CLUSTER 0)
//   CLUSTER     blocks per cluster (chunks per KV head), capped at the
//               largest size the GPU schedules; 0: from the shape, the
//               largest whose clusters are all resident at once
//   MAX_L       the longest cache this design takes; 0: every length

#define WARPS 4      // kevolve: tune 2 4 8
#define GROUPS 2     // kevolve: tune 1 2
#define MIN_GROUPS 2 // kevolve: tune 1 2 4 8
#define CLUSTER 0    // kevolve: tune 0 2 4 8 16
#define MAX_L 2048      // kevolve: tune 0 2048 8192

#define MAX_C 16       // largest cluster (non-portable size on Hopper)
#define MAX_G 8        // query heads per KV head: the mma's 8 columns
#define Q4 (GQA_D / 4) // quads (4 dimensions, a float4) per head

namespace cg = cooperative_groups;

// Word I of a uint4.
__device__ __forceinline__ unsigned word(const uint4 &u, int i)
{
    return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
}

// Where quad CQ of a head's staged row sits: the 16-byte pieces swizzled so
// that a warp's float4 stores (lane (g, t): quads 2g + 0|1 of heads 2t,
// 2t+1) hit every bank group once per 128 bytes.
__device__ __forceinline__ int quad_at(int cq)
{
    return cq ^ ((cq >> 3) & 1);
}

// One group of 16 keys as this lane needs them: K rows base+g and base+g+8,
// pieces 4*kq+t (kq = 0..3); V rows base+2t, +1 and base+8+2t, +1, pieces g
// and g+8. Keys at or past j1 read as zeros.
struct group {
    uint4 ka[4], kb[4], v[8];
};

__device__ __forceinline__ void load_group(group &G_, const bf16_t *kg, const bf16_t *vg, int base,
                                           int j1, int g, int t)
{
    const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int kq = 0; kq < 4; kq++) {
        const int piece = (4 * kq + t) * 8;
        G_.ka[kq] = base + g < j1 ? gqa_ldg_stream(kg + (long long)(base + g) * GQA_D + piece) : z;
        G_.kb[kq] = base + g + 8 < j1 ? gqa_ldg_stream(kg + (long long)(base + g + 8) * GQA_D + piece)
                                      : z;
    }
#pragma unroll
    for (int i = 0; i < 8; i++) { // (key pair half, piece half, key of the pair)
        const int key = base + 2 * t + (i & 1) + ((i >> 2) << 3), piece = (g + ((i >> 1) & 1) * 8) * 8;
        G_.v[i] = key < j1 ? gqa_ldg_stream(vg + (long long)key * GQA_D + piece) : z;
    }
}

// Folds one group into this lane's online softmax state (m, l: heads 2t,
// 2t+1, log2 units) and O^T accumulators.
__device__ __forceinline__ void fold_group(const group &G_, const uint4 *qb, int base, int j1,
                                           int g, float sl2, float *m, float *l, float (*oacc)[4])
{
    float sc[4] = {0.0f, 0.0f, 0.0f, 0.0f}; // S^T[key g | g+8][head 2t | 2t+1]
#pragma unroll
    for (int kq = 0; kq < 4; kq++)
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const unsigned a[4] = {word(G_.ka[kq], 2 * hh), word(G_.kb[kq], 2 * hh),
                                   word(G_.ka[kq], 2 * hh + 1), word(G_.kb[kq], 2 * hh + 1)};
            gqa_mma_bf16(sc, a, word(qb[kq], 2 * hh), word(qb[kq], 2 * hh + 1));
        }
    const bool ok0 = base + g < j1, ok1 = base + g + 8 < j1;
    sc[0] = ok0 ? sc[0] * sl2 : -INFINITY;
    sc[1] = ok0 ? sc[1] * sl2 : -INFINITY;
    sc[2] = ok1 ? sc[2] * sl2 : -INFINITY;
    sc[3] = ok1 ? sc[3] * sl2 : -INFINITY;
#pragma unroll
    for (int hd = 0; hd < 2; hd++) { // head 2t + hd: keys g and g+8 here, the rest across g
        float mx = fmaxf(sc[hd], sc[2 + hd]);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
        const float mn = fmaxf(m[hd], mx); // finite: key base (g = 0) is in the chunk
        const float alpha = gqa_exp2(m[hd] - mn);
        m[hd] = mn;
        sc[hd] = gqa_exp2(sc[hd] - mn);
        sc[2 + hd] = gqa_exp2(sc[2 + hd] - mn);
        l[hd] = l[hd] * alpha + sc[hd] + sc[2 + hd];
#pragma unroll
        for (int mt = 0; mt < 8; mt++) {
            oacc[mt][hd] *= alpha;
            oacc[mt][2 + hd] *= alpha;
        }
    }
    // P^T (keys x heads) in accumulator layout -> P^T as the B operand
    const unsigned b0 = gqa_movt(gqa_pack_bf2(sc[0], sc[1]));
    const unsigned b1 = gqa_movt(gqa_pack_bf2(sc[2], sc[3]));
#pragma unroll
    for (int mt = 0; mt < 8; mt++) { // O^T rows 8g+mt and 64+8g+mt
        const unsigned sel = (mt & 1) ? 0x7632u : 0x5410u;
        const int w = mt >> 1;
        const unsigned a[4] = {__byte_perm(word(G_.v[0], w), word(G_.v[1], w), sel),
                               __byte_perm(word(G_.v[2], w), word(G_.v[3], w), sel),
                               __byte_perm(word(G_.v[4], w), word(G_.v[5], w), sel),
                               __byte_perm(word(G_.v[6], w), word(G_.v[7], w), sel)};
        gqa_mma_bf16(oacc[mt], a, b0, b1);
    }
}

// One block: rank r = blockIdx.x of the cluster of (sequence b, KV head
// kvh), keys [r*chunk, min(L, r*chunk + chunk)), its G query heads; the
// cluster (gridDim.x blocks) merges the partials and writes o.
template <int W, int KPI>
__global__ void __launch_bounds__(W * 32)
    cluster_decode(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                   const bf16_t *__restrict__ v, bf16_t *__restrict__ o, int HQ, int HKV, int L,
                   int chunk)
{
    constexpr int NT = W * 32;
    __shared__ float4 sm_o[W][MAX_G][Q4]; // O^T staged per warp; [0]: the block's partial
    __shared__ float sm_ml[W][MAX_G][2];
    __shared__ float sm_pml[MAX_G][2]; // the block's partial max (log2 units), sum
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int rank = blockIdx.x, C = gridDim.x, kvh = blockIdx.y, b = blockIdx.z, G = HQ / HKV;
    const int j0 = rank * chunk, j1 = min(L, j0 + chunk);          // j0 >= j1: an empty chunk
    const long long row0 = (long long)b * HQ + (long long)kvh * G; // first query row (head)
    const bf16_t *kg = k + ((long long)b * HKV + kvh) * L * GQA_D;
    const bf16_t *vg = v + ((long long)b * HKV + kvh) * L * GQA_D;
    const float sl2 = rsqrtf((float)GQA_D) * GQA_LOG2E; // scores in log2 units

    uint4 qb[4]; // Q^T as B operand: head g, pieces 4*kq+t
#pragma unroll
    for (int kq = 0; kq < 4; kq++)
        qb[kq] = g < G ? *reinterpret_cast<const uint4 *>(q + (row0 + g) * GQA_D + (4 * kq + t) * 8)
                       : make_uint4(0, 0, 0, 0);
    float oacc[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int mt = 0; mt < 8; mt++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            oacc[mt][e] = 0.0f;

    // Warp w takes groups w, w + W, w + 2W, ... of the chunk, KPI at a time.
    for (int first = j0 + warp * 16; first < j1; first += W * KPI * 16) {
        group grp[KPI];
#pragma unroll
        for (int u = 0; u < KPI; u++)
            if (first + u * W * 16 < j1) load_group(grp[u], kg, vg, first + u * W * 16, j1, g, t);
#pragma unroll
        for (int u = 0; u < KPI; u++)
            if (first + u * W * 16 < j1)
                fold_group(grp[u], qb, first + u * W * 16, j1, g, sl2, m, l, oacc);
    }

    // Merge the warps of the block: each stages its heads (lane (g, t) owns
    // quads 2g, 2g+1, 16+2g, 16+2g+1 of heads 2t, 2t+1), then thread (head,
    // quad) combines them into the block's partial, in place of warp 0's
    // (each quad is read and written by its own thread only).
#pragma unroll
    for (int hd = 0; hd < 2; hd++) {
        float ls = l[hd];
        ls += __shfl_xor_sync(0xffffffffu, ls, 4);
        ls += __shfl_xor_sync(0xffffffffu, ls, 8);
        ls += __shfl_xor_sync(0xffffffffu, ls, 16);
        const int head = 2 * t + hd;
        if (head < G) {
#pragma unroll
            for (int qh = 0; qh < 2; qh++) { // dims 8g+4qh.. and 64+8g+4qh..
                const int mt = 4 * qh;
                sm_o[warp][head][quad_at(2 * g + qh)] =
                    make_float4(oacc[mt][hd], oacc[mt + 1][hd], oacc[mt + 2][hd], oacc[mt + 3][hd]);
                sm_o[warp][head][quad_at(16 + 2 * g + qh)] =
                    make_float4(oacc[mt][2 + hd], oacc[mt + 1][2 + hd], oacc[mt + 2][2 + hd],
                                oacc[mt + 3][2 + hd]);
            }
            if (g == 0) {
                sm_ml[warp][head][0] = m[hd];
                sm_ml[warp][head][1] = ls;
            }
        }
    }
    __syncthreads();
    for (int i = tid; i < G * Q4; i += NT) {
        const int hd = i / Q4, cq = quad_at(i % Q4);
        float M = -INFINITY, S = 0.0f;
        float4 A = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int w = 0; w < W; w++)
            M = fmaxf(M, sm_ml[w][hd][0]);
#pragma unroll
        for (int w = 0; w < W; w++) {
            const float wg = gqa_wexp2(sm_ml[w][hd][0], M); // 0 for an empty warp or chunk
            const float4 x = sm_o[w][hd][cq];
            S += sm_ml[w][hd][1] * wg;
            A.x += x.x * wg;
            A.y += x.y * wg;
            A.z += x.z * wg;
            A.w += x.w * wg;
        }
        sm_o[0][hd][cq] = A;
        if (cq == 0) {
            sm_pml[hd][0] = M;
            sm_pml[hd][1] = S;
        }
    }

    // Merge the cluster: block r takes quads (4 columns of a head) r*per ..
    // of the G*32, reading every rank's partial of them.
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync(); // every partial written (release / acquire)
    const int nq = G * Q4, per = (nq + C - 1) / C, q1 = min(nq, rank * per + per);
    for (int i = rank * per + tid; i < q1; i += NT) {
        const int hd = i / Q4, c = (i % Q4) * 4, cq = quad_at(i % Q4);
        float mr[MAX_C], lr[MAX_C];
        float4 orr[MAX_C];
#pragma unroll
        for (int r = 0; r < MAX_C; r++) { // every load issued before any use
            if (r < C) {
                const float *pml = cluster.map_shared_rank(&sm_pml[hd][0], r);
                mr[r] = pml[0];
                lr[r] = pml[1];
                orr[r] = *cluster.map_shared_rank(&sm_o[0][hd][cq], r);
            } else {
                mr[r] = -INFINITY;
                lr[r] = 0.0f;
                orr[r] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
        }
        float M = -INFINITY; // finite: rank 0 holds key 0
#pragma unroll
        for (int r = 0; r < MAX_C; r++)
            M = fmaxf(M, mr[r]);
        float S = 0.0f, a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll
        for (int r = 0; r < MAX_C; r++) {
            const float w = gqa_wexp2(mr[r], M); // 0 for an empty chunk
            S += lr[r] * w;
            a0 += orr[r].x * w;
            a1 += orr[r].y * w;
            a2 += orr[r].z * w;
            a3 += orr[r].w * w;
        }
        const float inv = 1.0f / S;
        uint2 packed;
        packed.x = (unsigned)gqa_bf16(a0 * inv) | ((unsigned)gqa_bf16(a1 * inv) << 16);
        packed.y = (unsigned)gqa_bf16(a2 * inv) | ((unsigned)gqa_bf16(a3 * inv) << 16);
        *reinterpret_cast<uint2 *>(o + (row0 + hd) * GQA_D + c) = packed;
    }
    cluster.sync(); // no block's shared memory goes while another reads it
}

// The launch configuration of a grid of clusters of CS blocks along x.
static void cluster_config(cudaLaunchConfig_t &cfg, cudaLaunchAttribute *at, dim3 grid, int cs,
                           cudaStream_t st)
{
    cfg = cudaLaunchConfig_t{};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(WARPS * 32, 1, 1);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = st;
    at[0] = cudaLaunchAttribute{};
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)cs;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
}

// Launches one cluster per (sequence, KV head) with the size picked for
// this shape.
static int decode(const gqa_call &c)
{
    constexpr int W = WARPS, KPI = GROUPS;
    if (c.G > MAX_G || c.HKV > 65535 || c.B > 65535 || (MAX_L && c.L > MAX_L))
        return gqa_fallback_decode(c);
    void (*kern)(const bf16_t *, const bf16_t *, const bf16_t *, bf16_t *, int, int, int, int) =
        cluster_decode<W, KPI>;
    static int act[MAX_C + 1], ready; // act[cs]: clusters of cs blocks resident at once
    if (!ready) {
        if (cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
            cudaSuccess)
            (void)cudaGetLastError(); // then only the portable sizes (up to 8)
        for (int cs = 1; cs <= MAX_C; cs *= 2) {
            cudaLaunchConfig_t cfg;
            cudaLaunchAttribute at[1];
            cluster_config(cfg, at, dim3((unsigned)cs, 1, 1), cs, c.stream);
            if (cudaOccupancyMaxActiveClusters(&act[cs], kern, &cfg) != cudaSuccess) {
                act[cs] = 0;
                (void)cudaGetLastError();
            }
        }
        ready = 1;
    }
    const long long pairs = (long long)c.B * c.HKV, min_keys = (long long)MIN_GROUPS * W * 16;
    int C = 1;
    for (int cs = 2; cs <= MAX_C && act[cs] > 0; cs *= 2)
        if (CLUSTER ? cs <= CLUSTER : act[cs] >= pairs && (long long)(cs - 1) * min_keys < c.L)
            C = cs;
    int chunk = (int)((c.L + C - 1) / C);
    chunk = (chunk + 15) / 16 * 16; // whole groups; the last ranks may get none
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[1];
    cluster_config(cfg, at, dim3((unsigned)C, (unsigned)c.HKV, (unsigned)c.B), C, c.stream);
    const cudaError_t e =
        cudaLaunchKernelEx(&cfg, kern, c.q, c.k, c.v, c.o, c.HQ, c.HKV, c.L, chunk);
    const cudaError_t last = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : last);
}
// EVOLVE-BLOCK-END
} // namespace decode_design

namespace prefill_design {
// EVOLVE-BLOCK-START prefill
// Prefill for Hopper, in the manner of FlashAttention-3: warp-specialised
// blocks of three warpgroups.
// Warpgroup 0 is the producer: one thread issues TMA copies of the block's
// Q tile (128 rows) and of K and V tiles of BN keys into STAGES shared
// stages (128-byte swizzle), each completing on an mbarrier; it keeps few
// registers (setmaxnreg). Warpgroups 1 and 2 are consumers of 64 query rows
// each, with most of the registers: S = Q K^T by wgmma from shared memory,
// the online softmax (base 2) on the fp32 accumulators, P rounded to bf16
// and fed from registers to O += P V by wgmma (V read transposed from its
// [keys][dims] tile); then they release the stage to the producer. While one
// consumer runs its softmax, the other's products keep the tensor cores
// busy. Causal: key tiles past the block's last row are never loaded, only
// tiles crossing a row's diagonal are masked; row blocks run longest first.
// When the row blocks alone cannot fill the GPU (chunked prefill: 512
// queries on 8192 keys), the keys of a row block are split in chunks whose
// partial results the last block to finish merges. PTX wrappers (TMA,
// mbarrier, wgmma, descriptors): gqa_hopper.cuh. Axes, each value a
// correct kernel:
//   BN          keys per tile (the N of S = Q K^T)
//   STAGES      shared-memory stages of K and V in flight
//   KSPLIT      chunks of the keys per row block; 0: picked from the shape
//               (fewest waves per unit of work, SPLIT_COST % per chunk)
//   SPLIT_COST  the cost of one more chunk (merging), in % of the work
//   MIN_TILES   key tiles a chunk holds at the least (KSPLIT 0): a causal
//               prefill of few rows has too few tiles to split
//   OVERLAP     the next tile's S = Q K^T runs during this tile's softmax
//               (two products in flight per consumer: more registers)

#define BN 128        // kevolve: tune 64 128
#define STAGES 2      // kevolve: tune 2 3
#define KSPLIT 0      // kevolve: tune 0 1 2 3 4 8
#define SPLIT_COST 0  // kevolve: tune 0 1 3 10
#define MIN_TILES 4   // kevolve: tune 2 4 8
#define OVERLAP 0     // kevolve: tune 0 1

#define BM 128                  // query rows per block: two consumer warpgroups of 64
#define NTHREADS 384            // producer warpgroup + two consumers
#define PRODUCER_REGS 24        // registers of the producer after setmaxnreg
#define CONSUMER_REGS 240       // and of each consumer: 128*24 + 256*240 <= 65536
#define TILE_BYTES(rows) ((rows) * GQA_D * 2)
#define MAX_KSPLIT 64

// The consumer warpgroups' part of hopper_fwd (its comment says what they
// do). OVL: the next tile's S = Q K^T is issued before this tile's P V and
// runs during the softmax (FlashAttention-3's intra-warpgroup overlap).
template <int BNT, int ST, bool OVL>
__device__ __forceinline__ void consume(bf16_t *__restrict__ o, float *__restrict__ part,
                                        unsigned *__restrict__ done, int SQ, int L, float sl2,
                                        int bh, int rb, int m0, int kz, int nsplit, int off, int t0,
                                        int nt, unsigned sQ, unsigned sK, unsigned sV,
                                        unsigned barQ, unsigned barK, unsigned barV,
                                        unsigned barE, unsigned raw, unsigned char *smem_raw,
                                        int *sm_last)
{
    constexpr int NS = BNT / 8; // 8-key column tiles of S per row
    const int tid = threadIdx.x;

    const int ctid = tid - 128, c = ctid >> 7, w = (ctid >> 5) & 3, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const int r0 = 64 * c + 16 * w + g; // this lane's rows: r0 and r0 + 8 of the block
    int lim[2];                         // last key each row may see
    lim[0] = min(off + m0 + r0, L - 1);
    lim[1] = min(off + m0 + r0 + 8, L - 1);
    float oacc[64], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 64; i++)
        oacc[i] = 0.0f;
    gqa_mbar_wait(barQ, 0);
    const unsigned qrows = sQ + 64 * c * 128; // this warpgroup's 64 rows in each 64-column block
    auto k_tile = [&](int it) { return sK + (it % ST) * TILE_BYTES(BNT); };
    auto v_tile = [&](int it) { return sV + (it % ST) * TILE_BYTES(BNT); };
    auto parity = [&](int it) { return (unsigned)((it / ST) & 1); };
    // S = Q K^T over the head dimension, issued (wgmma is asynchronous)
    auto issue_qk = [&](float *sacc, unsigned tK) {
        gqa_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < GQA_D / 16; kk++) {
            const uint64_t da =
                gqa_desc_kmajor(qrows + (kk >> 2) * TILE_BYTES(BM) / 2 + (kk & 3) * 32);
            const uint64_t db =
                gqa_desc_kmajor(tK + (kk >> 2) * TILE_BYTES(BNT) / 2 + (kk & 3) * 32);
            if constexpr (BNT == 128)
                gqa_wgmma_m64n128_ss(sacc, da, db, kk > 0);
            else
                gqa_wgmma_m64n64_ss(sacc, da, db, kk > 0);
        }
        gqa_wgmma_commit();
    };
    // O += P V, V read [keys][dims] and transposed by the instruction, issued
    auto issue_pv = [&](unsigned (*pf)[4], unsigned tV) {
        gqa_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BNT / 16; kk++)
            gqa_wgmma_m64n128_rs_t(oacc, pf[kk],
                                   gqa_desc_mnmajor(tV + kk * 2048, TILE_BYTES(BNT) / 2), 1);
        gqa_wgmma_commit();
    };
    // The tile of keys n0.. in sacc (landed): causal mask, online softmax
    // (base 2) of rows r0 and r0 + 8, P as the A operand of P V in pf, and
    // the factor alpha[] by which O must be rescaled before P V is added.
    auto softmax_tile = [&](float *sacc, int n0, unsigned (*pf)[4], float *alpha) {
#pragma unroll
        for (int i = 0; i < BNT / 2; i++)
            gqa_reg_fence(sacc[i]);
        if (n0 + BNT - 1 > off + m0 + 64 * c) { // the tile crosses a row's diagonal (or L)
#pragma unroll
            for (int j = 0; j < NS; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (n0 + 8 * j + 2 * t + (e & 1) > lim[e >> 1]) sacc[4 * j + e] = -INFINITY;
        }
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float mx = m[hr];
#pragma unroll
            for (int j = 0; j < NS; j++)
                mx = fmaxf(mx, fmaxf(sacc[4 * j + 2 * hr], sacc[4 * j + 2 * hr + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float base = mx == -INFINITY ? 0.0f : mx * sl2; // no inf - inf
            alpha[hr] = gqa_exp2(m[hr] * sl2 - base);
            m[hr] = mx;
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < NS; j++)
#pragma unroll
                for (int e = 2 * hr; e < 2 * hr + 2; e++) {
                    const float p = gqa_exp2(fmaf(sacc[4 * j + e], sl2, -base));
                    sacc[4 * j + e] = p;
                    sum += p;
                }
            l[hr] = l[hr] * alpha[hr] + sum; // per-lane partial sum
        }
#pragma unroll
        for (int kk = 0; kk < BNT / 16; kk++) {
            pf[kk][0] = gqa_pack_bf2(sacc[8 * kk + 0], sacc[8 * kk + 1]);
            pf[kk][1] = gqa_pack_bf2(sacc[8 * kk + 2], sacc[8 * kk + 3]);
            pf[kk][2] = gqa_pack_bf2(sacc[8 * kk + 4], sacc[8 * kk + 5]);
            pf[kk][3] = gqa_pack_bf2(sacc[8 * kk + 6], sacc[8 * kk + 7]);
        }
    };
    auto rescale = [&](const float *alpha) {
#pragma unroll
        for (int j = 0; j < GQA_D / 8; j++) {
            oacc[4 * j + 0] *= alpha[0];
            oacc[4 * j + 1] *= alpha[0];
            oacc[4 * j + 2] *= alpha[1];
            oacc[4 * j + 3] *= alpha[1];
        }
    };
    auto o_landed = [&]() {
#pragma unroll
        for (int i = 0; i < 64; i++)
            gqa_reg_fence(oacc[i]);
    };
    auto release = [&](int it) { // this warp is done with the stage of tile it
        if (lane == 0) gqa_mbar_arrive(barE + 8 * (it % ST));
    };

    float sacc[BNT / 2], alpha[2];
    unsigned pf[BNT / 16][4];
    if constexpr (!OVL) { // each product waits for the one before
        for (int it = 0; it < nt; it++) {
            gqa_mbar_wait(barK + 8 * (it % ST), parity(it));
            issue_qk(sacc, k_tile(it));
            gqa_wgmma_wait<0>();
            softmax_tile(sacc, (t0 + it) * BNT, pf, alpha);
            rescale(alpha);
            gqa_mbar_wait(barV + 8 * (it % ST), parity(it));
            issue_pv(pf, v_tile(it));
            gqa_wgmma_wait<0>();
            o_landed();
            release(it);
        }
    } else if (nt > 0) { // S of tile it+1 runs on the tensor cores during the softmax
        unsigned pf2[BNT / 16][4];
        gqa_mbar_wait(barK, parity(0));
        issue_qk(sacc, k_tile(0));
        gqa_wgmma_wait<0>();
        softmax_tile(sacc, t0 * BNT, pf, alpha); // O is zero: no rescale
        for (int it = 1; it < nt; it++) {
            gqa_mbar_wait(barK + 8 * (it % ST), parity(it));
            issue_qk(sacc, k_tile(it));
            gqa_mbar_wait(barV + 8 * ((it - 1) % ST), parity(it - 1));
            issue_pv(pf, v_tile(it - 1));
            gqa_wgmma_wait<1>(); // S of tile it has landed; P V of tile it-1 may run on
            softmax_tile(sacc, (t0 + it) * BNT, pf2, alpha);
            gqa_wgmma_wait<0>();
            o_landed();
            release(it - 1);
            rescale(alpha);
#pragma unroll
            for (int kk = 0; kk < BNT / 16; kk++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    pf[kk][e] = pf2[kk][e];
        }
        gqa_mbar_wait(barV + 8 * ((nt - 1) % ST), parity(nt - 1));
        issue_pv(pf, v_tile(nt - 1));
        gqa_wgmma_wait<0>();
        o_landed();
        release(nt - 1);
    }

#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        l[hr] += __shfl_xor_sync(0xffffffffu, l[hr], 1);
        l[hr] += __shfl_xor_sync(0xffffffffu, l[hr], 2);
    }
    if (nsplit == 1) {
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            const int r = m0 + r0 + 8 * hr;
            if (r >= SQ) continue;
            const float inv = l[hr] > 0.0f ? 1.0f / l[hr] : 0.0f;
            bf16_t *orow = o + ((size_t)bh * SQ + r) * GQA_D + 2 * t;
#pragma unroll
            for (int j = 0; j < GQA_D / 8; j++)
                *reinterpret_cast<unsigned *>(orow + 8 * j) =
                    gqa_pack_bf2(oacc[4 * j + 2 * hr] * inv, oacc[4 * j + 2 * hr + 1] * inv);
        }
        return;
    }
    // Split keys: this chunk's partial rows, then the last block merges.
    const long long row0 = (long long)bh * SQ + m0;
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        const int r = r0 + 8 * hr;
        if (m0 + r >= SQ) continue;
        float *pp = part + ((row0 + r) * nsplit + kz) * GQA_PART;
#pragma unroll
        for (int j = 0; j < GQA_D / 8; j++)
            *reinterpret_cast<float2 *>(pp + 8 * j + 2 * t) =
                make_float2(oacc[4 * j + 2 * hr], oacc[4 * j + 2 * hr + 1]);
        if (t == 0) {
            pp[GQA_D] = m[hr] == -INFINITY ? -INFINITY : m[hr] * sl2;
            pp[GQA_D + 1] = l[hr];
        }
    }
    // The K stages are free: every tile was consumed.
    float *sm_w = reinterpret_cast<float *>(smem_raw + (sK - raw));
    if (gqa_last_block<256>(done + (long long)bh * gridDim.y + rb, nsplit, sm_last, ctid, 1))
        gqa_merge_rows<256>(part, o, row0, min(BM, SQ - m0), nsplit, sm_w, ctid, 1);
}

// One block: query rows m0 .. m0+BM-1 of (sequence, head) blockIdx.x
// (row block gridDim.y-1-blockIdx.y, longest first), key tiles
// [kz*tpc, (kz+1)*tpc) of those the rows see (kz = blockIdx.z). nsplit
// (gridDim.z) == 1: writes o; else partial rows, merged by the last block.
template <int BNT, int ST>
__global__ void __launch_bounds__(NTHREADS, 1)
    hopper_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
               const __grid_constant__ CUtensorMap tv, bf16_t *__restrict__ o,
               float *__restrict__ part, unsigned *__restrict__ done, int HQ, int HKV, int SQ,
               int L, int tpc, float sl2)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t bars[1 + 3 * ST]; // Q, full K[ST], full V[ST], empty[ST]
    __shared__ int sm_last;
    const unsigned raw = (unsigned)__cvta_generic_to_shared(smem_raw);
    const unsigned sQ = (raw + 1023u) & ~1023u; // swizzled tiles start on 1024-byte atoms
    const unsigned sK = sQ + TILE_BYTES(BM), sV = sK + ST * TILE_BYTES(BNT);
    const unsigned bar0 = (unsigned)__cvta_generic_to_shared(bars);
    const unsigned barQ = bar0, barK = bar0 + 8, barV = bar0 + 8 * (1 + ST),
                   barE = bar0 + 8 * (1 + 2 * ST);
    const int tid = threadIdx.x, wg = tid >> 7;
    const int bh = blockIdx.x, b = bh / HQ, h = bh % HQ, kvh = h / (HQ / HKV);
    const int rb = gridDim.y - 1 - blockIdx.y, m0 = rb * BM;
    const int kz = blockIdx.z, nsplit = gridDim.z;
    const int off = L - SQ;                                          // position of query row 0
    const int n_end = min(L, off + m0 + BM);                         // keys any row sees
    const int t0 = kz * tpc, t1 = min((n_end + BNT - 1) / BNT, t0 + tpc), nt = max(0, t1 - t0);

    if (tid == 0) {
        gqa_mbar_init(barQ, 1);
        for (int s = 0; s < ST; s++) {
            gqa_mbar_init(barK + 8 * s, 1);
            gqa_mbar_init(barV + 8 * s, 1);
            gqa_mbar_init(barE + 8 * s, 8); // one arrival per consumer warp
        }
        gqa_mbar_fence_init();
    }
    __syncthreads();

    if (wg == 0) { // ---- producer ----
        gqa_setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            gqa_tma_prefetch_map(&tq);
            gqa_tma_prefetch_map(&tk);
            gqa_tma_prefetch_map(&tv);
            gqa_mbar_expect_tx(barQ, TILE_BYTES(BM));
            gqa_tma_load_3d(sQ, &tq, 0, m0, bh, barQ);
            gqa_tma_load_3d(sQ + TILE_BYTES(BM) / 2, &tq, 64, m0, bh, barQ);
            const int kv_row = b * HKV + kvh;
            for (int it = 0; it < nt; it++) {
                const int s = it % ST, key0 = (t0 + it) * BNT;
                if (it >= ST) gqa_mbar_wait(barE + 8 * s, ((it / ST) & 1) ^ 1);
                const unsigned dk = sK + s * TILE_BYTES(BNT), dv = sV + s * TILE_BYTES(BNT);
                gqa_mbar_expect_tx(barK + 8 * s, TILE_BYTES(BNT));
                gqa_tma_load_3d(dk, &tk, 0, key0, kv_row, barK + 8 * s);
                gqa_tma_load_3d(dk + TILE_BYTES(BNT) / 2, &tk, 64, key0, kv_row, barK + 8 * s);
                gqa_mbar_expect_tx(barV + 8 * s, TILE_BYTES(BNT));
                gqa_tma_load_3d(dv, &tv, 0, key0, kv_row, barV + 8 * s);
                gqa_tma_load_3d(dv + TILE_BYTES(BNT) / 2, &tv, 64, key0, kv_row, barV + 8 * s);
            }
        }
    } else { // ---- consumers: warpgroup c owns rows 64c .. 64c+63 of the block ----
        gqa_setmaxnreg_inc<CONSUMER_REGS>();
        consume<BNT, ST, OVERLAP != 0>(o, part, done, SQ, L, sl2, bh, rb, m0, kz, nsplit, off, t0, nt, sQ, sK, sV,
                         barQ, barK, barV, barE, raw, smem_raw, &sm_last);
    }
}

// Chunks of the keys per row block: KSPLIT, or the count of at least
// MIN_TILES tiles each that makes the fewest waves of blocks per unit of
// work, SPLIT_COST % dearer per chunk.
static int choose_split(long long blocks, int ntiles)
{
    int best = 1;
    if (KSPLIT) {
        best = KSPLIT;
    } else {
        const long long sms = gqa_sm_count();
        double best_cost = 1e30;
        for (int s = 1; s <= MAX_KSPLIT && s <= ntiles / MIN_TILES + (s == 1); s++) {
            const double waves = (double)((blocks * s + sms - 1) / sms);
            const double cost = waves / s * (1.0 + SPLIT_COST * 0.01 * (s - 1));
            if (cost < best_cost - 1e-9) {
                best_cost = cost;
                best = s;
            }
        }
    }
    return best < 1 ? 1 : best;
}

template <int BNT, int ST> static int launch(const gqa_call &c)
{
    const int smem = 1024 + TILE_BYTES(BM) + 2 * ST * TILE_BYTES(BNT);
    static bool attr_set;
    if (!attr_set) {
        cudaError_t e = cudaFuncSetAttribute(hopper_fwd<BNT, ST>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess) return (int)e;
        attr_set = true;
    }
    CUtensorMap tq, tk, tv; // the tensors' addresses change between calls: encoded each call
    int e = gqa_tmap_bf16_3d(&tq, c.q, GQA_D, (uint64_t)c.SQ, (uint64_t)c.B * c.HQ, 64, BM);
    if (!e) e = gqa_tmap_bf16_3d(&tk, c.k, GQA_D, (uint64_t)c.L, (uint64_t)c.B * c.HKV, 64, BNT);
    if (!e) e = gqa_tmap_bf16_3d(&tv, c.v, GQA_D, (uint64_t)c.L, (uint64_t)c.B * c.HKV, 64, BNT);
    if (e) return e;
    const int rblocks = (c.SQ + BM - 1) / BM, ntiles = (c.L + BNT - 1) / BNT;
    const long long blocks = (long long)c.B * c.HQ * rblocks;
    int split = blocks > GQA_MAX_COUNTERS ? 1 : choose_split(blocks, ntiles);
    while (split > 1 && (long long)c.B * c.HQ * c.SQ * split * GQA_PART > GQA_SCRATCH_FLOATS)
        split /= 2;
    const int tpc = (ntiles + split - 1) / split;
    float *part = gqa_scratch_ptr();
    unsigned *done = gqa_done_ptr();
    if (split > 1 && (!part || !done)) return (int)cudaErrorInvalidSymbol;
    dim3 grid((unsigned)(c.B * c.HQ), (unsigned)rblocks, (unsigned)split);
    hopper_fwd<BNT, ST><<<grid, NTHREADS, smem, c.stream>>>(
        tq, tk, tv, c.o, part, done, c.HQ, c.HKV, c.SQ, c.L, tpc, GQA_LOG2E / sqrtf((float)GQA_D));
    return (int)cudaGetLastError();
}

static int prefill(const gqa_call &c) { return launch<BN, STAGES>(c); }
// EVOLVE-BLOCK-END
} // namespace prefill_design

extern "C" int kv_launch(const kv_launch_args *a)
{
    gqa_call c;
    int e = gqa_parse(a, &c);
    if (e) return e;
    return c.SQ == 1 ? decode_design::decode(c) : prefill_design::prefill(c);
}
