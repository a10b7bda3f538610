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
// Split-sequence decode on the tensor cores, straight from global memory.
// Decode reads each K and V row once, so its floor is their bytes over the
// read bandwidth; at B=1 the 8 KV heads alone cannot fill 132
// multiprocessors, so the sequence is split into chunks (picked from the
// shape and the occupancy) and the last block of a (sequence, KV head) to
// finish merges their partial results.
//
// A block of WARPS warps takes one chunk of one KV head for its G <= 8
// query heads. Each warp streams groups of 16 keys with 16-byte loads into
// registers (no shared memory, no block barrier in the loop) and keeps its
// own online softmax. The products run transposed so that the query heads
// are the mma's 8 columns: S^T[16 keys x 8 heads] = K Q^T and
// O^T[128 dims x 8 heads] += V^T P^T (mma.sync m16n8k16, fp32). The head
// dimension of K Q^T is summed in a permuted order that lets every lane load
// whole 16-byte pieces of K rows (the same permutation is applied to Q); P^T
// turns from accumulator into operand layout by movmatrix; V's pieces are
// paired across keys by byte permutes. Lane (g, t) ends with heads 2t, 2t+1
// and dimensions 8g..8g+7, 64+8g..64+8g+7 of the block's output. G > 8
// goes to the harness's fixed decode (gqa_fallback.cuh). Axes, each value a
// correct kernel:
//   WARPS       warps per block
//   GROUPS      16-key groups a warp loads before using any (memory
//               parallelism against registers)
//   MIN_GROUPS  groups per warp a chunk holds at the least (short contexts:
//               fewer chunks, less merging)
//   SPLIT       chunks per (sequence, KV head); 0: enough to fill every
//               resident block slot WAVES times over
//   WAVES       how many times SPLIT 0 fills the resident slots

#define WARPS 4      // kevolve: tune 2 4 8
#define GROUPS 2     // kevolve: tune 1 2 3 4
#define MIN_GROUPS 2 // kevolve: tune 1 2 4 8
#define SPLIT 0      // kevolve: tune 0 1 2 4 8 16 32 64 128
#define WAVES 1      // kevolve: tune 1 2 3 4

#define MAX_SPLIT 256
#define MAX_G 8 // query heads per KV head: the mma's 8 columns

// Word I of a uint4.
__device__ __forceinline__ unsigned word(const uint4 &u, int i)
{
    return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
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

// One block: keys [sp*chunk, min(L, sp*chunk + chunk)) of KV head kvh of
// sequence b, for its G query heads. split == 1: writes o; else a partial
// result per head, and the last block of the (sequence, KV head) merges.
template <int W, int KPI>
__global__ void __launch_bounds__(W * 32)
    split_decode(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                 const bf16_t *__restrict__ v, bf16_t *__restrict__ o, float *__restrict__ part,
                 unsigned *__restrict__ done, int HQ, int HKV, int L, int chunk, int split)
{
    constexpr int NT = W * 32;
    __shared__ float sm_o[W][MAX_G][GQA_D];
    __shared__ float sm_ml[W][MAX_G][2];
    __shared__ float sm_w[MAX_G * MAX_SPLIT];
    __shared__ int sm_last;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int sp = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z, G = HQ / HKV;
    const int j0 = sp * chunk, j1 = min(L, j0 + chunk);
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

    // Warp w takes groups (it*W + w)*KPI .. +KPI-1 of the chunk.
    for (int first = j0 + warp * KPI * 16; first < j1; first += W * KPI * 16) {
        group grp[KPI];
#pragma unroll
        for (int u = 0; u < KPI; u++)
            if (first + u * 16 < j1) load_group(grp[u], kg, vg, first + u * 16, j1, g, t);
#pragma unroll
        for (int u = 0; u < KPI; u++)
            if (first + u * 16 < j1) fold_group(grp[u], qb, first + u * 16, j1, g, sl2, m, l, oacc);
    }

    // Merge the warps of the block: each stages its heads, then thread
    // (head, column) combines them.
#pragma unroll
    for (int hd = 0; hd < 2; hd++) {
        float ls = l[hd];
        ls += __shfl_xor_sync(0xffffffffu, ls, 4);
        ls += __shfl_xor_sync(0xffffffffu, ls, 8);
        ls += __shfl_xor_sync(0xffffffffu, ls, 16);
        const int head = 2 * t + hd;
        if (head < G) {
#pragma unroll
            for (int mt = 0; mt < 8; mt++) {
                sm_o[warp][head][8 * g + mt] = oacc[mt][hd];
                sm_o[warp][head][64 + 8 * g + mt] = oacc[mt][2 + hd];
            }
            if (g == 0) {
                sm_ml[warp][head][0] = m[hd];
                sm_ml[warp][head][1] = ls;
            }
        }
    }
    __syncthreads();
    for (int i = tid; i < G * GQA_D; i += NT) {
        const int hd = i / GQA_D, c = i % GQA_D;
        float M = -INFINITY, S = 0.0f, A = 0.0f;
#pragma unroll
        for (int w = 0; w < W; w++)
            M = fmaxf(M, sm_ml[w][hd][0]);
#pragma unroll
        for (int w = 0; w < W; w++) {
            const float wg = gqa_wexp2(sm_ml[w][hd][0], M);
            S += sm_ml[w][hd][1] * wg;
            A += sm_o[w][hd][c] * wg;
        }
        if (split == 1) {
            o[(row0 + hd) * GQA_D + c] = gqa_bf16(A / S);
        } else {
            float *pp = part + ((row0 + hd) * split + sp) * GQA_PART;
            pp[c] = A;
            if (c == 0) {
                pp[GQA_D] = M;
                pp[GQA_D + 1] = S;
            }
        }
    }
    if (split == 1) return;
    if (gqa_last_block<NT>(done + (long long)b * HKV + kvh, split, &sm_last))
        gqa_merge_rows<NT>(part, o, row0, G, split, sm_w);
}

// Launches the kernel with the chunks picked for this shape.
static int decode(const gqa_call &c)
{
    constexpr int W = WARPS, KPI = GROUPS;
    if (c.G > MAX_G || (long long)c.B * c.HKV > GQA_MAX_COUNTERS) return gqa_fallback_decode(c);
    float *part = gqa_scratch_ptr();
    unsigned *done = gqa_done_ptr();
    if (!part || !done) return (int)cudaErrorInvalidSymbol;
    static int bps; // resident blocks per multiprocessor
    if (!bps) {
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, split_decode<W, KPI>,
                                                                      W * 32, 0);
        if (e != cudaSuccess) return (int)e;
        if (bps < 1) return (int)cudaErrorInvalidConfiguration;
    }
    const long long pairs = (long long)c.B * c.HKV, slots = (long long)gqa_sm_count() * bps;
    long long split = SPLIT ? SPLIT : WAVES * slots / pairs;
    const long long min_keys = (long long)MIN_GROUPS * W * 16;
    if (split > (c.L + min_keys - 1) / min_keys) split = (c.L + min_keys - 1) / min_keys;
    if (split > MAX_SPLIT) split = MAX_SPLIT;
    while (split > 1 && (long long)c.B * c.HQ * split * GQA_PART > GQA_SCRATCH_FLOATS) split /= 2;
    if (split < 1) split = 1;
    int chunk = (int)((c.L + split - 1) / split);
    chunk = (chunk + 15) / 16 * 16;    // whole groups
    split = (c.L + chunk - 1) / chunk; // no empty chunk
    dim3 grid((unsigned)split, (unsigned)c.HKV, (unsigned)c.B);
    split_decode<W, KPI><<<grid, W * 32, 0, c.stream>>>(c.q, c.k, c.v, c.o, part, done, c.HQ,
                                                        c.HKV, c.L, chunk, (int)split);
    return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
} // namespace decode_design

namespace prefill_design {
// EVOLVE-BLOCK-START prefill
// This seed's design is its decode: prefill and chunked calls go to the
// harness's fixed tensor-core prefill (gqa_fallback.cuh).
static int prefill(const gqa_call &c) { return gqa_fallback_prefill(c); }
// EVOLVE-BLOCK-END
} // namespace prefill_design

extern "C" int kv_launch(const kv_launch_args *a)
{
    gqa_call c;
    int e = gqa_parse(a, &c);
    if (e) return e;
    return c.SQ == 1 ? decode_design::decode(c) : prefill_design::prefill(c);
}
