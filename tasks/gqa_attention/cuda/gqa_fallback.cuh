// Fixed kernels for the kind of call a seed's design does not cover: a
// decode seed calls gqa_fallback_prefill for SQ > 1, a prefill seed calls
// gqa_fallback_decode for SQ = 1. Provided by the harness outside the
// mutable text, so they never evolve: they are the best points of the first
// sessions' hand sweeps (bench/NOTES.md), fast enough that a seed's score
// is decided by its own design. The prefill_fa2.cu seed starts from a
// mutable copy of the prefill kernel here.
//
//   gqa_fallback_prefill  FlashAttention-2 style on mma.sync: one block per
//                         (sequence, query head, 64 or 128 query rows), K/V
//                         tiles by cp.async into two swizzled stages, online
//                         softmax on the accumulators, bf16 P. H200: 873 us
//                         at S=8192 16:8 (315 TFLOP/s), 157 us chunked.
//   gqa_fallback_decode   tensor-core decode: the query heads of a KV head
//                         are the mma rows, K and V streamed by cp.async, the
//                         keys split in chunks that fill the GPU, merged by
//                         the last block. H200: 39.6 us at L=32768, 4.1 us
//                         at L=128, 124 us at B=32 L=4096.
#ifndef GQA_FALLBACK_CUH
#define GQA_FALLBACK_CUH

#include "gqa_common.cuh"

// ---- prefill and chunked prefill (SQ > 1) ----
// One block per (sequence * query head, BM = 16*MT*NW query rows, longest
// first); warp w owns rows 16*MT*w ..; dynamic shared memory (BM + 4*BN)
// rows of 256 bytes: Q, then two stages of K, then two of V.
template <int NW, int MT, int BN>
__global__ void __launch_bounds__(NW * 32, 1)
    gqa_fb_prefill(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                   const bf16_t *__restrict__ v, bf16_t *__restrict__ o, int HQ, int HKV, int SQ,
                   int L, float sl2)
{
    constexpr int BM = 16 * MT * NW, NT = NW * 32, RB = GQA_D * 2, CH = GQA_D / 8;
    constexpr int NF = BN / 8, DF = GQA_D / 8, KD = GQA_D / 16;
    extern __shared__ __align__(128) unsigned char fb_smem[];
    const unsigned sQ = (unsigned)__cvta_generic_to_shared(fb_smem);
    const unsigned sK = sQ + BM * RB, sV = sK + 2 * BN * RB;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tig = lane & 3;
    const int bh = blockIdx.x, b = bh / HQ, h = bh % HQ, kvh = h / (HQ / HKV);
    const int m0 = (gridDim.y - 1 - blockIdx.y) * BM;
    const bf16_t *qg = q + ((size_t)bh * SQ + m0) * GQA_D;
    const bf16_t *kg = k + (size_t)(b * HKV + kvh) * L * GQA_D;
    const bf16_t *vg = v + (size_t)(b * HKV + kvh) * L * GQA_D;
    bf16_t *og = o + ((size_t)bh * SQ + m0) * GQA_D;
    const int off = L - SQ, n_end = min(L, off + m0 + BM), ntiles = (n_end + BN - 1) / BN;
    const int wr = warp * 16 * MT, warp_last = off + m0 + wr + 16 * MT - 1;

    for (int i = tid; i < BM * CH; i += NT) {
        const int r = i / CH, c = i % CH;
        const bool ok = m0 + r < SQ;
        gqa_cp16(sQ + gqa_swz(r, c), ok ? qg + (size_t)r * GQA_D + c * 8 : q, ok);
    }
    gqa_cp_commit();
    auto load_kv = [&](int j, int st) {
        for (int i = tid; i < BN * CH; i += NT) {
            const int r = i / CH, c = i % CH, key = j * BN + r;
            const bool ok = key < L;
            const size_t go = ok ? (size_t)key * GQA_D + c * 8 : 0;
            gqa_cp16(sK + st * BN * RB + gqa_swz(r, c), kg + go, ok);
            gqa_cp16(sV + st * BN * RB + gqa_swz(r, c), vg + go, ok);
        }
    };
    load_kv(0, 0);
    gqa_cp_commit();
    const int a_row = lane & 15, a_ch = lane >> 4;
    const int k_row = (lane & 7) + ((lane >> 4) << 3), k_ch = (lane >> 3) & 1;
    const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_ch = lane >> 4;
    unsigned qf[MT][KD][4];
    gqa_cp_wait<1>();
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int kk = 0; kk < KD; kk++)
            gqa_ldsm4(sQ + gqa_swz(wr + mt * 16 + a_row, kk * 2 + a_ch), qf[mt][kk][0],
                      qf[mt][kk][1], qf[mt][kk][2], qf[mt][kk][3]);
    float oacc[MT][DF][4], mrow[MT][2], lrow[MT][2];
    int lim[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int d = 0; d < DF; d++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                oacc[mt][d][e] = 0.0f;
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            mrow[mt][hr] = -INFINITY;
            lrow[mt][hr] = 0.0f;
            lim[mt][hr] = min(off + m0 + wr + mt * 16 + g + hr * 8, L - 1); // last key of the row
        }
    }
    for (int j = 0; j < ntiles; j++) {
        const int st = j & 1;
        if (j + 1 < ntiles) {
            load_kv(j + 1, st ^ 1);
            gqa_cp_commit();
            gqa_cp_wait<1>();
        } else {
            gqa_cp_wait<0>();
        }
        __syncthreads();
        const int n0 = j * BN;
        if (n0 <= warp_last) { // else every key of the tile is after this warp's rows
            const unsigned tK = sK + st * BN * RB, tV = sV + st * BN * RB;
            float s[MT][NF][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nf = 0; nf < NF; nf++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        s[mt][nf][e] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < KD; kk++)
#pragma unroll
                for (int n2 = 0; n2 < NF / 2; n2++) {
                    unsigned b0, b1, b2, b3;
                    gqa_ldsm4(tK + gqa_swz(n2 * 16 + k_row, kk * 2 + k_ch), b0, b1, b2, b3);
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        gqa_mma_bf16(s[mt][2 * n2], qf[mt][kk], b0, b1);
                        gqa_mma_bf16(s[mt][2 * n2 + 1], qf[mt][kk], b2, b3);
                    }
                }
            if (n0 + BN - 1 > off + m0 + wr) { // the tile crosses a row's diagonal (or L)
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int nf = 0; nf < NF; nf++)
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            if (n0 + nf * 8 + tig * 2 + (e & 1) > lim[mt][e >> 1])
                                s[mt][nf][e] = -INFINITY;
            }
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int hr = 0; hr < 2; hr++) {
                    float mx = mrow[mt][hr];
#pragma unroll
                    for (int nf = 0; nf < NF; nf++)
                        mx = fmaxf(mx, fmaxf(s[mt][nf][2 * hr], s[mt][nf][2 * hr + 1]));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                    const float base = mx == -INFINITY ? 0.0f : mx * sl2;
                    const float alpha = gqa_exp2(mrow[mt][hr] * sl2 - base);
                    mrow[mt][hr] = mx;
                    float sum = 0.0f;
#pragma unroll
                    for (int nf = 0; nf < NF; nf++)
#pragma unroll
                        for (int e = 2 * hr; e < 2 * hr + 2; e++) {
                            const float p = gqa_exp2(fmaf(s[mt][nf][e], sl2, -base));
                            s[mt][nf][e] = p;
                            sum += p;
                        }
                    lrow[mt][hr] = lrow[mt][hr] * alpha + sum;
#pragma unroll
                    for (int d = 0; d < DF; d++) {
                        oacc[mt][d][2 * hr] *= alpha;
                        oacc[mt][d][2 * hr + 1] *= alpha;
                    }
                }
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
                unsigned pa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    pa[mt][0] = gqa_pack_bf2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                    pa[mt][1] = gqa_pack_bf2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                    pa[mt][2] = gqa_pack_bf2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                    pa[mt][3] = gqa_pack_bf2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
                }
#pragma unroll
                for (int d2 = 0; d2 < DF / 2; d2++) {
                    unsigned b0, b1, b2, b3;
                    gqa_ldsm4t(tV + gqa_swz(kk * 16 + v_row, d2 * 2 + v_ch), b0, b1, b2, b3);
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        gqa_mma_bf16(oacc[mt][2 * d2], pa[mt], b0, b1);
                        gqa_mma_bf16(oacc[mt][2 * d2 + 1], pa[mt], b2, b3);
                    }
                }
            }
        }
        __syncthreads(); // stage st is overwritten by the next iteration's load
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++) // normalise; stage the warp's rows in its own Q rows
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float l = lrow[mt][hr];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            const int r = wr + mt * 16 + g + hr * 8;
#pragma unroll
            for (int d = 0; d < DF; d++)
                *reinterpret_cast<unsigned *>(fb_smem + gqa_swz(r, d) + tig * 4) =
                    gqa_pack_bf2(oacc[mt][d][2 * hr] * inv, oacc[mt][d][2 * hr + 1] * inv);
        }
    __syncwarp();
#pragma unroll
    for (int it = 0; it < MT * 16 * CH / 32; it++) {
        const int idx = it * 32 + lane, r = wr + idx / CH, c = idx % CH;
        if (m0 + r < SQ)
            *reinterpret_cast<uint4 *>(og + (size_t)r * GQA_D + c * 8) =
                *reinterpret_cast<const uint4 *>(fb_smem + gqa_swz(r, c));
    }
}

template <int NW, int MT, int BN> static int gqa_fb_prefill_launch(const gqa_call &c)
{
    constexpr int BM = 16 * MT * NW;
    const int smem = (BM + 4 * BN) * GQA_D * 2;
    static bool attr_set;
    if (!attr_set) {
        cudaError_t e = cudaFuncSetAttribute(gqa_fb_prefill<NW, MT, BN>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess) return (int)e;
        attr_set = true;
    }
    dim3 grid((unsigned)(c.B * c.HQ), (unsigned)((c.SQ + BM - 1) / BM));
    gqa_fb_prefill<NW, MT, BN><<<grid, NW * 32, smem, c.stream>>>(
        c.q, c.k, c.v, c.o, c.HQ, c.HKV, c.SQ, c.L, GQA_LOG2E / sqrtf((float)GQA_D));
    return (int)cudaGetLastError();
}

// Any call (decode too, if slowly); at least two waves of 128-row blocks:
// 8 warps x (128 rows, 128-key tiles), else 4 warps x (64 rows, 64-key tiles).
static int gqa_fallback_prefill(const gqa_call &c)
{
    if ((long long)c.B * c.HQ * ((c.SQ + 127) / 128) >= 2LL * gqa_sm_count())
        return gqa_fb_prefill_launch<8, 1, 128>(c);
    return gqa_fb_prefill_launch<4, 1, 64>(c);
}

// ---- decode (SQ = 1) ----
// One block of 4 warps per (sequence, KV head, chunk of keys); the G query
// heads of the KV head are mma rows 0..G-1. Tiles of 4*KW keys in STAGES
// cp.async stages; warp w takes keys w*KW.. of each tile with its own online
// softmax; warps merged in shared memory; chunks merged by the last block.
#define GQA_FBD_KW 32
#define GQA_FBD_STAGES 2
#define GQA_FBD_WARPS 4
#define GQA_FBD_MAX_SPLIT 128
#define GQA_FBD_OS (GQA_D + 8) // floats per row of the warp-merge buffer

__global__ void __launch_bounds__(GQA_FBD_WARPS * 32)
    gqa_fb_decode(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                  const bf16_t *__restrict__ v, bf16_t *__restrict__ o, float *__restrict__ part,
                  unsigned *__restrict__ done, int HQ, int HKV, int L, int chunk, int split)
{
    constexpr int KW = GQA_FBD_KW, STAGES = GQA_FBD_STAGES, W = GQA_FBD_WARPS, NT = W * 32;
    constexpr int T = W * KW, NF = KW / 8, DF = GQA_D / 8, KD = GQA_D / 16, RB = GQA_D * 2;
    constexpr int CH = GQA_D / 8;
    extern __shared__ __align__(128) unsigned char fbd_smem[];
    __shared__ int sm_last;
    const unsigned sQ = (unsigned)__cvta_generic_to_shared(fbd_smem), sKV = sQ + 16 * RB;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tig = lane & 3;
    const int sp = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z, G = HQ / HKV;
    const int j0 = sp * chunk, j1 = min(L, j0 + chunk), nt = (j1 - j0 + T - 1) / T;
    const long long row0 = (long long)b * HQ + (long long)kvh * G;
    const bf16_t *qg = q + row0 * GQA_D;
    const bf16_t *kg = k + ((long long)b * HKV + kvh) * L * GQA_D;
    const bf16_t *vg = v + ((long long)b * HKV + kvh) * L * GQA_D;
    const float sl2 = rsqrtf((float)GQA_D) * GQA_LOG2E;

    for (int i = tid; i < 16 * CH; i += NT) {
        const int r = i / CH, c = i % CH;
        gqa_cp16(sQ + gqa_swz(r, c), r < G ? qg + r * GQA_D + c * 8 : qg, r < G);
    }
    gqa_cp_commit();
    auto load_tile = [&](int t, int st) {
        const unsigned dk = sKV + (unsigned)(st * 2 * T * RB), dv = dk + T * RB;
        for (int i = tid; i < T * CH; i += NT) {
            const int r = i / CH, c = i % CH, key = j0 + t * T + r;
            const bool ok = key < j1;
            const long long go = ok ? (long long)key * GQA_D + c * 8 : 0;
            gqa_cp16(dk + gqa_swz(r, c), kg + go, ok);
            gqa_cp16(dv + gqa_swz(r, c), vg + go, ok);
        }
    };
#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < nt) load_tile(st, st);
        gqa_cp_commit();
    }
    const int a_row = lane & 15, a_ch = lane >> 4;
    const int k_row = (lane & 7) + ((lane >> 4) << 3), k_ch = (lane >> 3) & 1;
    const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_ch = lane >> 4;
    gqa_cp_wait<STAGES - 1>();
    __syncthreads();
    unsigned qf[KD][4];
#pragma unroll
    for (int kk = 0; kk < KD; kk++)
        gqa_ldsm4(sQ + gqa_swz(a_row, kk * 2 + a_ch), qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);
    float oacc[DF][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int d = 0; d < DF; d++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            oacc[d][e] = 0.0f;
    for (int t = 0; t < nt; t++) {
        gqa_cp_wait<STAGES - 2>();
        __syncthreads();
        {
            const int tn = t + STAGES - 1;
            if (tn < nt) load_tile(tn, tn % STAGES);
            gqa_cp_commit();
        }
        const int kb = j0 + t * T + warp * KW;
        if (kb >= j1) continue;
        const unsigned tK = sKV + (unsigned)((t % STAGES) * 2 * T * RB), tV = tK + T * RB;
        float s[NF][4];
#pragma unroll
        for (int nf = 0; nf < NF; nf++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                s[nf][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KD; kk++)
#pragma unroll
            for (int n2 = 0; n2 < NF / 2; n2++) {
                unsigned b0, b1, b2, b3;
                gqa_ldsm4(tK + gqa_swz(warp * KW + n2 * 16 + k_row, kk * 2 + k_ch), b0, b1, b2, b3);
                gqa_mma_bf16(s[2 * n2], qf[kk], b0, b1);
                gqa_mma_bf16(s[2 * n2 + 1], qf[kk], b2, b3);
            }
#pragma unroll
        for (int nf = 0; nf < NF; nf++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int key = kb + nf * 8 + tig * 2 + (e & 1);
                s[nf][e] = key < j1 ? s[nf][e] * sl2 : -INFINITY;
            }
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float mx = m[hr];
#pragma unroll
            for (int nf = 0; nf < NF; nf++)
                mx = fmaxf(mx, fmaxf(s[nf][2 * hr], s[nf][2 * hr + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float base = mx == -INFINITY ? 0.0f : mx;
            const float alpha = exp2f(m[hr] - base);
            m[hr] = mx;
            float sum = 0.0f;
#pragma unroll
            for (int nf = 0; nf < NF; nf++)
#pragma unroll
                for (int e = 2 * hr; e < 2 * hr + 2; e++) {
                    const float p = exp2f(s[nf][e] - base);
                    s[nf][e] = p;
                    sum += p;
                }
            l[hr] = l[hr] * alpha + sum;
#pragma unroll
            for (int d = 0; d < DF; d++) {
                oacc[d][2 * hr] *= alpha;
                oacc[d][2 * hr + 1] *= alpha;
            }
        }
#pragma unroll
        for (int kk = 0; kk < KW / 16; kk++) {
            unsigned pa[4];
            pa[0] = gqa_pack_bf2(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = gqa_pack_bf2(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = gqa_pack_bf2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = gqa_pack_bf2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int d2 = 0; d2 < DF / 2; d2++) {
                unsigned b0, b1, b2, b3;
                gqa_ldsm4t(tV + gqa_swz(warp * KW + kk * 16 + v_row, d2 * 2 + v_ch), b0, b1, b2,
                           b3);
                gqa_mma_bf16(oacc[2 * d2], pa, b0, b1);
                gqa_mma_bf16(oacc[2 * d2 + 1], pa, b2, b3);
            }
        }
    }
    gqa_cp_wait<0>();
    __syncthreads();
    float *sm_o = reinterpret_cast<float *>(fbd_smem + 16 * RB); // [warp][16][OS]
    float *sm_ml = sm_o + W * 16 * GQA_FBD_OS;                    // [warp][16][2]
    float *sm_w = sm_ml + W * 16 * 2;                             // [G][split]
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        float ls = l[hr];
        ls += __shfl_xor_sync(0xffffffffu, ls, 1);
        ls += __shfl_xor_sync(0xffffffffu, ls, 2);
        const int r = g + 8 * hr;
        if (r < G) {
            float *dst = sm_o + (warp * 16 + r) * GQA_FBD_OS + tig * 2;
#pragma unroll
            for (int d = 0; d < DF; d++)
                *reinterpret_cast<float2 *>(dst + d * 8) =
                    make_float2(oacc[d][2 * hr], oacc[d][2 * hr + 1]);
            if (tig == 0) {
                sm_ml[(warp * 16 + r) * 2] = m[hr];
                sm_ml[(warp * 16 + r) * 2 + 1] = ls;
            }
        }
    }
    __syncthreads();
    for (int i = tid; i < G * GQA_D; i += NT) {
        const int r = i / GQA_D, c = i % GQA_D;
        float M = -INFINITY, S = 0.0f, A = 0.0f;
#pragma unroll
        for (int w = 0; w < W; w++)
            M = fmaxf(M, sm_ml[(w * 16 + r) * 2]);
#pragma unroll
        for (int w = 0; w < W; w++) {
            const float wg = gqa_wexp2(sm_ml[(w * 16 + r) * 2], M);
            S += sm_ml[(w * 16 + r) * 2 + 1] * wg;
            A += sm_o[(w * 16 + r) * GQA_FBD_OS + c] * wg;
        }
        if (split == 1) {
            o[(row0 + r) * GQA_D + c] = gqa_bf16(A / S);
        } else {
            float *pp = part + ((row0 + r) * split + sp) * GQA_PART;
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

// Decode (SQ = 1) of any shape with G <= 16 query heads per KV head.
static int gqa_fallback_decode(const gqa_call &c)
{
    constexpr int T = GQA_FBD_WARPS * GQA_FBD_KW;
    constexpr int smem = (16 + GQA_FBD_STAGES * 2 * T) * GQA_D * 2;
    if (c.SQ != 1 || c.G > 16 || (long long)c.B * c.HKV > GQA_MAX_COUNTERS)
        return (int)cudaErrorInvalidValue;
    float *part = gqa_scratch_ptr();
    unsigned *done = gqa_done_ptr();
    if (!part || !done) return (int)cudaErrorInvalidSymbol;
    static int bps; // resident blocks per multiprocessor
    if (!bps) {
        cudaError_t e = cudaFuncSetAttribute(gqa_fb_decode,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e == cudaSuccess)
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, gqa_fb_decode,
                                                              GQA_FBD_WARPS * 32, smem);
        if (e != cudaSuccess) return (int)e;
        if (bps < 1) return (int)cudaErrorInvalidConfiguration;
    }
    // As many chunks as fill every resident slot once, at most one per tile
    // and GQA_FBD_MAX_SPLIT, and as the scratch holds.
    long long pairs = (long long)c.B * c.HKV, split = (long long)gqa_sm_count() * bps / pairs;
    long long cap = GQA_SCRATCH_FLOATS / ((long long)c.B * c.HQ * GQA_PART);
    if (split > (c.L + T - 1) / T) split = (c.L + T - 1) / T;
    if (split > GQA_FBD_MAX_SPLIT) split = GQA_FBD_MAX_SPLIT;
    if (split > cap) split = cap;
    if (split < 1) split = 1;
    int chunk = (int)((c.L + split - 1) / split);
    chunk = (chunk + T - 1) / T * T; // whole tiles per chunk
    split = (c.L + chunk - 1) / chunk; // no empty chunk
    dim3 grid((unsigned)split, (unsigned)c.HKV, (unsigned)c.B);
    gqa_fb_decode<<<grid, GQA_FBD_WARPS * 32, smem, c.stream>>>(
        c.q, c.k, c.v, c.o, part, done, c.HQ, c.HKV, c.L, chunk, (int)split);
    return (int)cudaGetLastError();
}

#endif
