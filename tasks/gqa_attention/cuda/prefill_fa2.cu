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
// This seed's design is its prefill: decode calls go to the harness's fixed
// tensor-core decode (gqa_fallback.cuh).
static int decode(const gqa_call &c) { return gqa_fallback_decode(c); }
// EVOLVE-BLOCK-END
} // namespace decode_design

namespace prefill_design {
// EVOLVE-BLOCK-START prefill
// Prefill on the tensor cores, FlashAttention-2 style: one block per
// (sequence * query head, BM = 16*MT*NW query rows, chunk of the keys);
// warp w owns 16*MT rows. Q (BM x 128) is staged once in shared memory and kept as mma A
// fragments in registers; K and V tiles of BN keys are streamed by cp.async
// into two shared-memory stages (tile j+1 loads while tile j computes),
// rows of 256 bytes XOR-swizzled so that ldmatrix and cp.async are free of
// bank conflicts. S = Q K^T (mma.sync m16n8k16, fp32), online softmax in
// base 2 on the accumulator fragments (row statistics reduced over the 4
// lanes sharing a row), P rounded to bf16 (or fp16) and reused in registers
// as the A operand of O += P V (V by ldmatrix.trans). Causal: key tiles past
// the block's last row are never loaded, only tiles crossing the diagonal
// are masked, warps whose rows all precede a tile skip it; row blocks are
// launched longest first. When there are too few row blocks to fill the GPU
// (chunked prefill: 512 queries on 8192 keys), the keys are split in
// chunks whose partial results the last block of a row block merges.
// Axes, each value a correct kernel:
//   NW, BN          warps (rows) and keys per tile of the configuration used
//                   when there are at least two waves of 16*NW-row blocks
//   NW_S, BN_S      the configuration used otherwise (more, smaller blocks)
//   P_F16           P and V enter P V as fp16 (p rounded to 11 bits; V
//                   converted in shared memory; needs |v| <= 65504), else
//                   bf16 as FlashAttention (faster; admitted by the task's
//                   stol tolerance)
//   KSPLIT          chunks of the keys per row block; 0: enough blocks for
//                   KFILL per multiprocessor (1 when the rows already fill it)
// H200 (2026-11-30, bench/NOTES.md, bf16 P): S=8192 16:8 873 us
// (315 TFLOP/s), chunked 16:8 157 us without the key split.

#define NW 8     // kevolve: tune 4 8
#define BN 128   // kevolve: tune 32 64 128
#define NW_S 4   // kevolve: tune 2 4 8
#define BN_S 64  // kevolve: tune 32 64 128
#define P_F16 0  // kevolve: tune 0 1
#define KSPLIT 0 // kevolve: tune 0 1 2 4 8
#define KFILL 2  // kevolve: tune 1 2 3 4

#define RB (GQA_D * 2) // bytes of one shared-memory row
#define CH (GQA_D / 8) // 16-byte chunks of one row

// One block: query rows m0 .. m0+BM-1 of (sequence, head) blockIdx.x, key
// tiles [kz * tpc, (kz + 1) * tpc) of those the rows see (kz = blockIdx.z,
// tpc tiles per chunk). nsplit == 1: writes o. Else writes partial rows and
// the last block of the row block merges them. Dynamic shared memory:
// (BM + 4 * BNT) rows: Q, two stages of K, two of V.
template <int NWT, int BNT>
__global__ void __launch_bounds__(NWT * 32, 1)
    fa2_fwd(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
            const bf16_t *__restrict__ v, bf16_t *__restrict__ o, float *__restrict__ part,
            unsigned *__restrict__ done, int HQ, int HKV, int SQ, int L, int tpc, float sl2)
{
    constexpr int BM = 16 * NWT, NT = NWT * 32;
    constexpr int NF = BNT / 8, DF = GQA_D / 8, KD = GQA_D / 16;
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ int sm_last;
    const unsigned sQ = (unsigned)__cvta_generic_to_shared(smem);
    const unsigned sK = sQ + BM * RB, sV = sK + 2 * BNT * RB;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tig = lane & 3;
    const int bh = blockIdx.x, b = bh / HQ, h = bh % HQ, kvh = h / (HQ / HKV);
    const int rb = gridDim.y - 1 - blockIdx.y, m0 = rb * BM; // longest blocks first
    const int kz = blockIdx.z, nsplit = gridDim.z;
    const bf16_t *qg = q + ((size_t)bh * SQ + m0) * GQA_D;
    const bf16_t *kg = k + (size_t)(b * HKV + kvh) * L * GQA_D;
    const bf16_t *vg = v + (size_t)(b * HKV + kvh) * L * GQA_D;
    const int off = L - SQ;                            // position of query row 0
    const int n_end = min(L, off + m0 + BM);           // keys any row of the block sees
    const int t0 = kz * tpc, t1 = min((n_end + BNT - 1) / BNT, t0 + tpc); // this chunk's tiles
    const int wr = warp * 16, warp_last = off + m0 + wr + 15;

    for (int i = tid; i < BM * CH; i += NT) {
        const int r = i / CH, c = i % CH;
        const bool ok = m0 + r < SQ;
        gqa_cp16(sQ + gqa_swz(r, c), ok ? qg + (size_t)r * GQA_D + c * 8 : q, ok);
    }
    gqa_cp_commit();
    auto load_kv = [&](int j, int st) {
        for (int i = tid; i < BNT * CH; i += NT) {
            const int r = i / CH, c = i % CH, key = j * BNT + r;
            const bool ok = key < L;
            const size_t go = ok ? (size_t)key * GQA_D + c * 8 : 0;
            gqa_cp16(sK + st * BNT * RB + gqa_swz(r, c), kg + go, ok);
            gqa_cp16(sV + st * BNT * RB + gqa_swz(r, c), vg + go, ok);
        }
    };
    if (t0 < t1) load_kv(t0, 0);
    gqa_cp_commit();
    // ldmatrix row/chunk of this lane: A (Q), B (K), B (V, transposed)
    const int a_row = lane & 15, a_ch = lane >> 4;
    const int k_row = (lane & 7) + ((lane >> 4) << 3), k_ch = (lane >> 3) & 1;
    const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_ch = lane >> 4;
    unsigned qf[KD][4];
    gqa_cp_wait<1>();
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < KD; kk++)
        gqa_ldsm4(sQ + gqa_swz(wr + a_row, kk * 2 + a_ch), qf[kk][0], qf[kk][1], qf[kk][2],
                  qf[kk][3]);
    float oacc[DF][4], mrow[2], lrow[2];
    int lim[2];
#pragma unroll
    for (int d = 0; d < DF; d++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            oacc[d][e] = 0.0f;
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        mrow[hr] = -INFINITY;
        lrow[hr] = 0.0f;
        lim[hr] = min(off + m0 + wr + g + hr * 8, L - 1); // last key this row may see
    }
    for (int j = t0; j < t1; j++) {
        const int st = (j - t0) & 1;
        if (j + 1 < t1) {
            load_kv(j + 1, st ^ 1);
            gqa_cp_commit();
            gqa_cp_wait<1>();
        } else {
            gqa_cp_wait<0>();
        }
#if P_F16
        { // V tile -> fp16 in place, each thread the chunks it copied itself
            unsigned char *tv = smem + (BM + 2 * BNT + st * BNT) * RB;
            for (int i = tid; i < BNT * CH; i += NT) {
                uint4 *c4 = reinterpret_cast<uint4 *>(tv + gqa_swz(i / CH, i % CH));
                uint4 x = *c4;
                x.x = gqa_bf2h(x.x);
                x.y = gqa_bf2h(x.y);
                x.z = gqa_bf2h(x.z);
                x.w = gqa_bf2h(x.w);
                *c4 = x;
            }
        }
#endif
        __syncthreads();
        const int n0 = j * BNT;
        if (n0 <= warp_last) { // else every key of the tile is after this warp's rows
            const unsigned tK = sK + st * BNT * RB, tV = sV + st * BNT * RB;
            float s[NF][4];
#pragma unroll
            for (int nf = 0; nf < NF; nf++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    s[nf][e] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < KD; kk++) // S = Q K^T
#pragma unroll
                for (int n2 = 0; n2 < NF / 2; n2++) {
                    unsigned b0, b1, b2, b3;
                    gqa_ldsm4(tK + gqa_swz(n2 * 16 + k_row, kk * 2 + k_ch), b0, b1, b2, b3);
                    gqa_mma_bf16(s[2 * n2], qf[kk], b0, b1);
                    gqa_mma_bf16(s[2 * n2 + 1], qf[kk], b2, b3);
                }
            if (n0 + BNT - 1 > off + m0 + wr) { // the tile crosses a row's diagonal (or L)
#pragma unroll
                for (int nf = 0; nf < NF; nf++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        if (n0 + nf * 8 + tig * 2 + (e & 1) > lim[e >> 1]) s[nf][e] = -INFINITY;
            }
#pragma unroll
            for (int hr = 0; hr < 2; hr++) { // online softmax (base 2), P kept in s
                float mx = mrow[hr];
#pragma unroll
                for (int nf = 0; nf < NF; nf++)
                    mx = fmaxf(mx, fmaxf(s[nf][2 * hr], s[nf][2 * hr + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float base = mx == -INFINITY ? 0.0f : mx * sl2; // no inf - inf
                const float alpha = gqa_exp2(mrow[hr] * sl2 - base);
                mrow[hr] = mx;
                float sum = 0.0f;
#pragma unroll
                for (int nf = 0; nf < NF; nf++)
#pragma unroll
                    for (int e = 2 * hr; e < 2 * hr + 2; e++) {
                        const float p = gqa_exp2(fmaf(s[nf][e], sl2, -base));
                        s[nf][e] = p;
                        sum += p;
                    }
                lrow[hr] = lrow[hr] * alpha + sum; // per-lane partial sum
#pragma unroll
                for (int d = 0; d < DF; d++) {
                    oacc[d][2 * hr] *= alpha;
                    oacc[d][2 * hr + 1] *= alpha;
                }
            }
#pragma unroll
            for (int kk = 0; kk < BNT / 16; kk++) { // O += P V
                unsigned pa[4];
#if P_F16
#define PPACK gqa_pack_h2
#define PMMA gqa_mma_f16
#else
#define PPACK gqa_pack_bf2
#define PMMA gqa_mma_bf16
#endif
                pa[0] = PPACK(s[2 * kk][0], s[2 * kk][1]);
                pa[1] = PPACK(s[2 * kk][2], s[2 * kk][3]);
                pa[2] = PPACK(s[2 * kk + 1][0], s[2 * kk + 1][1]);
                pa[3] = PPACK(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
                for (int d2 = 0; d2 < DF / 2; d2++) {
                    unsigned b0, b1, b2, b3;
                    gqa_ldsm4t(tV + gqa_swz(kk * 16 + v_row, d2 * 2 + v_ch), b0, b1, b2, b3);
                    PMMA(oacc[2 * d2], pa, b0, b1);
                    PMMA(oacc[2 * d2 + 1], pa, b2, b3);
                }
#undef PPACK
#undef PMMA
            }
        }
        __syncthreads(); // stage st is overwritten by the next iteration's load
    }
    if (nsplit == 1) { // normalise; stage the warp's rows in its own Q rows; 16-byte stores
        bf16_t *og = o + ((size_t)bh * SQ + m0) * GQA_D;
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float l = lrow[hr];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            const int r = wr + g + hr * 8;
#pragma unroll
            for (int d = 0; d < DF; d++)
                *reinterpret_cast<unsigned *>(smem + gqa_swz(r, d) + tig * 4) =
                    gqa_pack_bf2(oacc[d][2 * hr] * inv, oacc[d][2 * hr + 1] * inv);
        }
        __syncwarp();
#pragma unroll
        for (int it = 0; it < 16 * CH / 32; it++) {
            const int idx = it * 32 + lane, r = wr + idx / CH, c = idx % CH;
            if (m0 + r < SQ)
                *reinterpret_cast<uint4 *>(og + (size_t)r * GQA_D + c * 8) =
                    *reinterpret_cast<const uint4 *>(smem + gqa_swz(r, c));
        }
        return;
    }
    // Split keys: this chunk's partial rows (unnormalised sums, max in log2
    // units, sum of exp2), then the last block of the row block merges.
    const long long row0 = (long long)bh * SQ + m0;
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        float l = lrow[hr];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const int r = wr + g + hr * 8;
        if (m0 + r < SQ) {
            float *pp = part + ((row0 + r) * nsplit + kz) * GQA_PART;
#pragma unroll
            for (int d = 0; d < DF; d++)
                *reinterpret_cast<float2 *>(pp + d * 8 + tig * 2) =
                    make_float2(oacc[d][2 * hr], oacc[d][2 * hr + 1]);
            if (tig == 0) {
                pp[GQA_D] = mrow[hr] == -INFINITY ? -INFINITY : mrow[hr] * sl2;
                pp[GQA_D + 1] = l;
            }
        }
    }
    float *sm_w = reinterpret_cast<float *>(smem + BM * RB); // the K stages are free now
    if (gqa_last_block<NT>(done + (long long)bh * gridDim.y + rb, nsplit, &sm_last))
        gqa_merge_rows<NT>(part, o, row0, min(BM, SQ - m0), nsplit, sm_w);
}

// Launches one configuration; the key split from KSPLIT and the shape.
template <int NWT, int BNT> static int launch(const gqa_call &c)
{
    constexpr int BM = 16 * NWT;
    const int smem = (BM + 4 * BNT) * RB;
    static bool attr_set;
    if (!attr_set) {
        cudaError_t e = cudaFuncSetAttribute(fa2_fwd<NWT, BNT>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess) return (int)e;
        attr_set = true;
    }
    const int rblocks = (c.SQ + BM - 1) / BM, ntiles = (c.L + BNT - 1) / BNT;
    const long long blocks = (long long)c.B * c.HQ * rblocks;
    long long split = KSPLIT ? KSPLIT : (KFILL * (long long)gqa_sm_count() + blocks - 1) / blocks;
    if (split > ntiles / 2) split = ntiles / 2; // at least two tiles per chunk
    if (split > 64) split = 64;                 // the merge's shared weights: BM * split floats
    if (blocks > GQA_MAX_COUNTERS) split = 1;
    while (split > 1 && (long long)c.B * c.HQ * c.SQ * split * GQA_PART > GQA_SCRATCH_FLOATS)
        split /= 2;
    if (split < 1) split = 1;
    const int tpc = (int)((ntiles + split - 1) / split);
    float *part = gqa_scratch_ptr();
    unsigned *done = gqa_done_ptr();
    if (split > 1 && (!part || !done)) return (int)cudaErrorInvalidSymbol;
    dim3 grid((unsigned)(c.B * c.HQ), (unsigned)rblocks, (unsigned)split);
    fa2_fwd<NWT, BNT><<<grid, NWT * 32, smem, c.stream>>>(c.q, c.k, c.v, c.o, part, done, c.HQ,
                                                          c.HKV, c.SQ, c.L, tpc,
                                                          GQA_LOG2E / sqrtf((float)GQA_D));
    return (int)cudaGetLastError();
}

static int prefill(const gqa_call &c)
{
    if ((long long)c.B * c.HQ * ((c.SQ + 16 * NW - 1) / (16 * NW)) >= 2LL * gqa_sm_count())
        return launch<NW, BN>(c);
    return launch<NW_S, BN_S>(c);
}
// EVOLVE-BLOCK-END
} // namespace prefill_design

extern "C" int kv_launch(const kv_launch_args *a)
{
    gqa_call c;
    int e = gqa_parse(a, &c);
    if (e) return e;
    return c.SQ == 1 ? decode_design::decode(c) : prefill_design::prefill(c);
}
