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
// Decode by half-warps: each half-warp streams its own keys of one KV head
// with 16-byte loads (lane c owns dimensions 8c .. 8c+7) and keeps a private online softmax for
// the block's query heads; scores are reduced by warp shuffles, the block's
// half-warps merged once at the end, and chunks of a split sequence merged
// by the last block to finish (no second kernel). Axes, each value a
// correct kernel:
//   THREADS         threads per block
//   KEYS_IN_FLIGHT  keys each half-warp loads before using any of them:
//                   memory parallelism against registers
//   PREFETCH        the next group of keys is loaded before the current one
//                   is used, doubling the loads in flight
//   SPLIT           chunks of the keys per (sequence, head group), merged
//                   by the last block; 0: enough to fill the GPU FILL times
//   FILL            blocks per multiprocessor that SPLIT 0 aims at
//   SHARE_KV        one block serves all query heads of a KV head (up to 8)
//                   so each k and v row is read once for all of them; 0: one
//                   head per block
// H200 (2026-11-30, bench/NOTES.md): 2.4-4.0 TB/s on K and V at 16:8;
// compute-bound at 40:8 (five heads' FMAs and shuffles per key).

#define THREADS 128      // kevolve: tune 64 128 256 512
#define KEYS_IN_FLIGHT 2 // kevolve: tune 1 2 4 8
#define PREFETCH 0       // kevolve: tune 0 1
#define SPLIT 0          // kevolve: tune 0 1 2 4 8 16 32 64
#define FILL 4           // kevolve: tune 1 2 4 8
#define SHARE_KV 1       // kevolve: tune 0 1

#define DW (THREADS / 32) // warps per block
#define KIF KEYS_IN_FLIGHT
#define MAX_SPLIT 256

// Loads rows j, j + stride, ... (KIF of them) of k and v for this lane;
// rows at or past j1 read as zeros.
__device__ __forceinline__ void load_keys(const bf16_t *kb, const bf16_t *vb, int j, int stride,
                                          int j1, uint4 *kk, uint4 *vv)
{
#pragma unroll
    for (int u = 0; u < KIF; u++) {
        kk[u] = vv[u] = make_uint4(0, 0, 0, 0);
        if (j + u * stride < j1) {
            kk[u] = __ldg((const uint4 *)(kb + (long long)(j + u * stride) * GQA_D));
            vv[u] = __ldg((const uint4 *)(vb + (long long)(j + u * stride) * GQA_D));
        }
    }
}

// One block: keys [j0, j1) of one KV head for query heads h0 .. h0+nh-1 of
// sequence b. Lane c of a half-warp owns dimensions 8c .. 8c+7.
template <int NH> // heads per block, known at compile time so the state stays in registers
__global__ void __launch_bounds__(THREADS)
    gqa_decode_warp(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                    const bf16_t *__restrict__ v, bf16_t *__restrict__ o, float *__restrict__ part,
                    unsigned *__restrict__ done, int HQ, int HKV, int L, int split)
{
    __shared__ float sm_acc[DW][GQA_D];
    __shared__ float sm_ml[DW][2];
    __shared__ int sm_last;
    __shared__ float sm_w[NH * MAX_SPLIT];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, hw = lane >> 4, c = lane & 15;
    int sp = blockIdx.x, hg = blockIdx.y, b = blockIdx.z;
    const int nh = NH;
    int h0 = hg * nh, kvh = h0 / (HQ / HKV);
    int chunk = (L + split - 1) / split;
    int j0 = min(L, sp * chunk), j1 = min(L, j0 + chunk);
    float qscale = rsqrtf((float)GQA_D) * GQA_LOG2E; // scores in log2 units
    float qr[NH][8], m[NH], l[NH], acc[NH][8];
#pragma unroll
    for (int h = 0; h < NH; h++) {
        uint4 u = *(const uint4 *)(q + ((long long)b * HQ + h0 + h) * GQA_D + c * 8);
        gqa_unpack8(u, qr[h]);
        m[h] = -INFINITY;
        l[h] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) {
            qr[h][e] *= qscale;
            acc[h][e] = 0.0f;
        }
    }
    const bf16_t *kb = k + ((long long)b * HKV + kvh) * L * GQA_D + c * 8;
    const bf16_t *vb = v + ((long long)b * HKV + kvh) * L * GQA_D + c * 8;
    const int stride = 2 * DW; // keys one pass of the block covers
    // The loop bound is the same for both halves of a warp, so the
    // shuffles below always run with all 32 lanes.
    uint4 kk[KIF], vv[KIF];
    load_keys(kb, vb, j0 + 2 * w + hw, stride, j1, kk, vv);
    for (int jb = j0 + 2 * w; jb < j1; jb += stride * KIF) {
#if PREFETCH // the next group's loads go out before this group's arithmetic
        uint4 nk[KIF], nv[KIF];
        load_keys(kb, vb, jb + stride * KIF + hw, stride, j1, nk, nv);
#endif
        float s[KIF][NH];
#pragma unroll
        for (int u = 0; u < KIF; u++) {
            float x[8];
            gqa_unpack8(kk[u], x);
            bool ok = jb + hw + u * stride < j1;
#pragma unroll
            for (int h = 0; h < NH; h++) {
                float d = 0.0f;
#pragma unroll
                for (int e = 0; e < 8; e++) d += qr[h][e] * x[e];
#pragma unroll
                for (int off = 8; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
                s[u][h] = ok ? d : -INFINITY;
            }
        }
#pragma unroll
        for (int h = 0; h < NH; h++) {
            float mn = m[h];
#pragma unroll
            for (int u = 0; u < KIF; u++) mn = fmaxf(mn, s[u][h]);
            float alpha = mn == -INFINITY ? 1.0f : exp2f(m[h] - mn);
            m[h] = mn;
            l[h] *= alpha;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[h][e] *= alpha;
#pragma unroll
            for (int u = 0; u < KIF; u++) {
                float p = gqa_wexp2(s[u][h], mn);
                s[u][h] = p;
                l[h] += p;
            }
        }
#pragma unroll
        for (int u = 0; u < KIF; u++) {
            float y[8];
            gqa_unpack8(vv[u], y);
#pragma unroll
            for (int h = 0; h < NH; h++)
#pragma unroll
                for (int e = 0; e < 8; e++) acc[h][e] += s[u][h] * y[e];
        }
#if PREFETCH
#pragma unroll
        for (int u = 0; u < KIF; u++) {
            kk[u] = nk[u];
            vv[u] = nv[u];
        }
#else
        load_keys(kb, vb, jb + stride * KIF + hw, stride, j1, kk, vv);
#endif
    }
    // Merge the two halves of each warp (lanes c and c + 16 own the same
    // dimensions), then the warps of the block, one head at a time.
#pragma unroll
    for (int h = 0; h < NH; h++) {
        float mo = __shfl_xor_sync(0xffffffffu, m[h], 16);
        float lo = __shfl_xor_sync(0xffffffffu, l[h], 16);
        float mn = fmaxf(m[h], mo), a = gqa_wexp2(m[h], mn), ao = gqa_wexp2(mo, mn);
#pragma unroll
        for (int e = 0; e < 8; e++) {
            float other = __shfl_xor_sync(0xffffffffu, acc[h][e], 16);
            acc[h][e] = acc[h][e] * a + other * ao;
        }
        m[h] = mn;
        l[h] = l[h] * a + lo * ao;
    }
    long long row0 = (long long)b * HQ + h0; // decode: one query row per head
#pragma unroll
    for (int h = 0; h < NH; h++) {
        __syncthreads();
        if (lane < 16)
#pragma unroll
            for (int e = 0; e < 8; e++) sm_acc[w][c * 8 + e] = acc[h][e];
        if (lane == 0) {
            sm_ml[w][0] = m[h];
            sm_ml[w][1] = l[h];
        }
        __syncthreads();
        // Every dimension, also where the block has fewer threads (64).
        for (int t = threadIdx.x; t < GQA_D; t += THREADS) {
            float M = -INFINITY, S = 0.0f, A = 0.0f;
            for (int g = 0; g < DW; g++) M = fmaxf(M, sm_ml[g][0]);
            for (int g = 0; g < DW; g++) {
                float wg = gqa_wexp2(sm_ml[g][0], M);
                S += sm_ml[g][1] * wg;
                A += sm_acc[g][t] * wg;
            }
            if (split == 1) {
                o[(row0 + h) * GQA_D + t] = gqa_bf16(A / S);
            } else {
                float *pp = part + ((row0 + h) * split + sp) * GQA_PART;
                pp[t] = A;
                if (t == 0) {
                    pp[GQA_D] = M;
                    pp[GQA_D + 1] = S;
                }
            }
        }
    }
    if (split == 1) return;
    // The last block of this head group to finish merges every chunk.
    if (gqa_last_block<THREADS>(done + (long long)b * (HQ / nh) + hg, split, &sm_last))
        gqa_merge_rows<THREADS>(part, o, row0, nh, split, sm_w);
}

// SPLIT, or with SPLIT 0 enough chunks for FILL blocks per multiprocessor
// over BLOCKS blocks per chunk; at least 2 * DW * KIF keys per chunk.
static int choose_split(long long blocks, int L)
{
    const long long min_keys = 2 * DW * KIF, max_split = (L + min_keys - 1) / min_keys;
    long long want = SPLIT ? SPLIT : (FILL * (long long)gqa_sm_count() + blocks - 1) / blocks;
    if (want > max_split) want = max_split;
    if (want > MAX_SPLIT) want = MAX_SPLIT;
    return want < 1 ? 1 : (int)want;
}

static int decode(const gqa_call &c)
{
    int nh = 1;
    if (SHARE_KV)
        for (nh = c.G < 8 ? c.G : 8; c.G % nh != 0; nh--) {
        }
    const long long groups = (long long)c.B * (c.HQ / nh);
    if (groups > GQA_MAX_COUNTERS) return gqa_fallback_decode(c);
    float *part = gqa_scratch_ptr();
    unsigned *done = gqa_done_ptr();
    if (!part || !done) return (int)cudaErrorInvalidSymbol;
    int split = choose_split(groups, c.L);
    while (split > 1 && (long long)c.B * c.HQ * split * GQA_PART > GQA_SCRATCH_FLOATS) split /= 2;
    dim3 grid((unsigned)split, (unsigned)(c.HQ / nh), (unsigned)c.B);
    switch (nh) {
#define WARP_CASE(n)                                                                               \
    case n:                                                                                        \
        gqa_decode_warp<n><<<grid, THREADS, 0, c.stream>>>(c.q, c.k, c.v, c.o, part, done, c.HQ,   \
                                                           c.HKV, c.L, split);                     \
        break;
        WARP_CASE(1) WARP_CASE(2) WARP_CASE(3) WARP_CASE(4) WARP_CASE(5) WARP_CASE(6) WARP_CASE(7)
            WARP_CASE(8)
#undef WARP_CASE
    default:
        return (int)cudaErrorInvalidValue;
    }
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
