// Tensor-core (mma.sync) FlashAttention-2-style forward kernel for causal
// prefill GQA attention, bf16, head_dim 128, Hopper (sm_90a), with its own
// correctness check against a float64 CPU reference and a timing table.
// Layout and causal rule: tasks/gqa_attention/gqa_attention.h. The region
// between the KERNEL BEGIN / KERNEL END markers is meant to be pasted into
// tasks/gqa_attention/cuda/naive.cu as its MMA design axis; it uses only
// HEAD_DIM and names prefixed mma_.
//
// Build: nvcc -O3 -arch=sm_90a -std=c++17 bench/gqa_mma_prefill.cu -o /tmp/x
// Run:   /tmp/x            (checks, then times; exit 1 on any FAIL)
//        /tmp/x --sweep    (checks and times every compiled tile configuration)
//        /tmp/x --check    (checks only, e.g. under compute-sanitizer)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <thread>
#include <vector>

typedef unsigned short bf16_t; // bf16 bit pattern

// ---- KERNEL BEGIN ----
#include <cuda_fp16.h>
// Design: one block per (sequence, query head, BM = 16*MT*NW query rows);
// NW warps each own 16*MT rows. Q (BM x 128) is staged once in shared memory
// and, with QREG, kept as mma A fragments in registers. K and V tiles of BN
// keys are streamed with cp.async into two shared-memory stages (tile j+1
// loads while tile j computes). Shared rows are 256 bytes, their 16-byte
// chunks XOR-swizzled by (row & 7), so ldmatrix and cp.async are free of bank
// conflicts. S = Q K^T (mma m16n8k16, fp32), online softmax in base 2 on the
// accumulator fragments (row statistics reduced over the quad of 4 lanes
// that share a row), P rounded to bf16 and reused in registers as the A
// operand of O += P V, with V read by ldmatrix.trans. Causal: key tiles past
// the block's last row are never loaded, only tiles crossing the diagonal
// are masked, warps whose rows lie wholly before a tile skip it. Query
// blocks are launched longest first (reversed row-block index in grid.y).
// The launcher picks 8 warps x (128 rows, 128-key tiles) when there are at
// least two waves of 128-row blocks, else 4 warps x (64 rows, 64-key tiles).
// Measured on an H200 (this file's timing table, MMA_P_F16=1): S=8192 about
// 271 TFLOP/s, 16:8 and 40:8; with MMA_P_F16=0 about 315, but then the
// bf16 rounding of P fails |err| <= 1e-2 + 1e-2|ref| on outlier inputs.
#ifndef HEAD_DIM
#define HEAD_DIM 128
#endif
#define MMA_ROWB (HEAD_DIM * 2)  // bytes of one shared-memory row
#define MMA_CHUNKS (HEAD_DIM / 8) // 16-byte chunks of one row
// MMA_P_F16 1 or 2: P and V enter the P V product as fp16 (exact for bf16 V
// of magnitude 6.1e-5 .. 65504), so P is rounded to 11 bits instead of 8;
// 1 converts V in shared memory once per tile, 2 in registers after each
// ldmatrix. 0: both bf16, as FlashAttention (fails the harness's tolerance
// on its outlier inputs now and then).
#ifndef MMA_P_F16
#define MMA_P_F16 1
#endif

// Shared-memory byte offset of 16-byte chunk c of row r (XOR swizzle).
__device__ __forceinline__ unsigned mma_swz(int r, int c)
{
    return (unsigned)(r * MMA_ROWB + ((c ^ (r & 7)) << 4));
}

// Copies 16 bytes global -> shared asynchronously; zero-fills when !ok
// (src is then not read but must still be a valid address).
__device__ __forceinline__ void mma_cp16(unsigned dst, const void *src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void mma_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N> __device__ __forceinline__ void mma_cp_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void mma_ldsm4(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                          unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

__device__ __forceinline__ void mma_ldsm4t(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                           unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

// c += a (16x16 row-major bf16) * b (16x8 col-major bf16), fp32 accumulate.
__device__ __forceinline__ void mma_16816(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c += a * b with fp16 operands, fp32 accumulate.
__device__ __forceinline__ void mma_16816h(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> fp16x2 (round to nearest even), lo in the low half.
__device__ __forceinline__ unsigned mma_packh(float lo, float hi)
{
    __half2 t = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&t);
}

// bf16x2 -> fp16x2.
__device__ __forceinline__ unsigned mma_bf2h(unsigned w)
{
    return mma_packh(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}

// Two floats -> bf16x2 (round to nearest even), lo in the low half.
__device__ __forceinline__ unsigned mma_pack(float lo, float hi)
{
    __nv_bfloat162 t = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&t);
}

// 2^x (MUFU.EX2, flushes denormals; 2^-inf = 0).
__device__ __forceinline__ float mma_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Causal GQA forward for one (sequence, head, BM-row block); see above.
// sl2 = log2(e) / sqrt(HEAD_DIM). Dynamic shared memory: (BM + 4*BN) rows.
template <int NW, int MT, int BN, bool QREG>
__global__ void __launch_bounds__(NW * 32, 1)
    mma_attn_fwd(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                 const bf16_t *__restrict__ v, bf16_t *__restrict__ o, int HQ, int HKV, int SQ,
                 int L, float sl2)
{
    constexpr int BM = 16 * MT * NW, NT = NW * 32;
    constexpr int NF = BN / 8;        // 8-key column tiles of S
    constexpr int DF = HEAD_DIM / 8;  // 8-wide column tiles of O
    constexpr int KD = HEAD_DIM / 16; // 16-deep steps over the head dimension
    extern __shared__ __align__(128) unsigned char mma_smem[];
    const unsigned sQ = (unsigned)__cvta_generic_to_shared(mma_smem);
    const unsigned sK = sQ + BM * MMA_ROWB;      // 2 stages of BN rows
    const unsigned sV = sK + 2 * BN * MMA_ROWB;  // 2 stages of BN rows

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, tig = lane & 3;
    const int bh = blockIdx.x, b = bh / HQ, h = bh % HQ;
    const int m0 = (gridDim.y - 1 - blockIdx.y) * BM; // longest blocks first
    const int kvh = h / (HQ / HKV);
    const bf16_t *qg = q + ((size_t)bh * SQ + m0) * HEAD_DIM;
    const bf16_t *kg = k + (size_t)(b * HKV + kvh) * L * HEAD_DIM;
    const bf16_t *vg = v + (size_t)(b * HKV + kvh) * L * HEAD_DIM;
    bf16_t *og = o + ((size_t)bh * SQ + m0) * HEAD_DIM;

    const int off = L - SQ;                         // position of query row 0
    const int n_end = min(L, off + m0 + BM);        // keys any row of the block sees
    const int ntiles = (n_end + BN - 1) / BN;
    const int wr = warp * 16 * MT;                  // first row of this warp
    const int warp_last = off + m0 + wr + 16 * MT - 1; // position of its last row

    // Q tile (rows past SQ zero-filled), then K/V tile 0.
    for (int i = tid; i < BM * MMA_CHUNKS; i += NT) {
        int r = i / MMA_CHUNKS, c = i % MMA_CHUNKS;
        bool ok = m0 + r < SQ;
        mma_cp16(sQ + mma_swz(r, c), ok ? qg + (size_t)r * HEAD_DIM + c * 8 : q, ok);
    }
    mma_cp_commit();
    auto load_kv = [&](int j, int st) {
        const unsigned dk = sK + st * BN * MMA_ROWB, dv = sV + st * BN * MMA_ROWB;
        for (int i = tid; i < BN * MMA_CHUNKS; i += NT) {
            int r = i / MMA_CHUNKS, c = i % MMA_CHUNKS, key = j * BN + r;
            bool ok = key < L;
            size_t go = ok ? (size_t)key * HEAD_DIM + c * 8 : 0;
            mma_cp16(dk + mma_swz(r, c), kg + go, ok);
            mma_cp16(dv + mma_swz(r, c), vg + go, ok);
        }
    };
    load_kv(0, 0);
    mma_cp_commit();

    // Per-lane ldmatrix row/chunk selectors (see the PTX ISA fragment tables):
    //  A (Q): matrices {rows 0-7, 8-15} x {k 0-7, 8-15}: row lane&15, chunk lane>>4.
    //  B (K, non-trans): {keys 0-7: k 0-7, k 8-15}, {keys 8-15: ...}:
    //     key (lane&7) + (lane>>4)*8, chunk (lane>>3)&1.
    //  B (V, trans): {keys 0-7, keys 8-15} x {dims 0-7, 8-15}:
    //     key (lane&7) + ((lane>>3)&1)*8, chunk lane>>4.
    const int a_row = lane & 15, a_ch = lane >> 4;
    const int k_row = (lane & 7) + ((lane >> 4) << 3), k_ch = (lane >> 3) & 1;
    const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_ch = lane >> 4;

    unsigned qf[QREG ? MT : 1][QREG ? KD : 1][4];
    if (QREG) {
        mma_cp_wait<1>();
        __syncthreads();
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int kk = 0; kk < KD; kk++)
                mma_ldsm4(sQ + mma_swz(wr + mt * 16 + a_row, kk * 2 + a_ch), qf[mt][kk][0],
                          qf[mt][kk][1], qf[mt][kk][2], qf[mt][kk][3]);
    }

    float oacc[MT][DF][4];
    float mrow[MT][2], lrow[MT][2];
    int lim[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int d = 0; d < DF; d++)
#pragma unroll
            for (int e = 0; e < 4; e++) oacc[mt][d][e] = 0.0f;
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            mrow[mt][hr] = -INFINITY;
            lrow[mt][hr] = 0.0f;
            // last key this row may see (rows past SQ: all L keys)
            lim[mt][hr] = min(off + m0 + wr + mt * 16 + g + hr * 8, L - 1);
        }
    }

    for (int j = 0; j < ntiles; j++) {
        const int st = j & 1;
        if (j + 1 < ntiles) {
            load_kv(j + 1, st ^ 1);
            mma_cp_commit();
            mma_cp_wait<1>();
        } else {
            mma_cp_wait<0>();
        }
#if MMA_P_F16 == 1
        { // V tile j -> fp16, each thread the chunks it copied itself
            unsigned char *tv = mma_smem + (BM + 2 * BN + st * BN) * MMA_ROWB;
            for (int i = tid; i < BN * MMA_CHUNKS; i += NT) {
                uint4 *c = reinterpret_cast<uint4 *>(tv + mma_swz(i / MMA_CHUNKS, i % MMA_CHUNKS));
                uint4 x = *c;
                x.x = mma_bf2h(x.x);
                x.y = mma_bf2h(x.y);
                x.z = mma_bf2h(x.z);
                x.w = mma_bf2h(x.w);
                *c = x;
            }
        }
#endif
        __syncthreads();
        const int n0 = j * BN;
        if (n0 <= warp_last) { // else every key of the tile is after this warp's rows
            const unsigned tK = sK + st * BN * MMA_ROWB, tV = sV + st * BN * MMA_ROWB;
            float s[MT][NF][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nf = 0; nf < NF; nf++)
#pragma unroll
                    for (int e = 0; e < 4; e++) s[mt][nf][e] = 0.0f;
            // S = Q K^T
#pragma unroll
            for (int kk = 0; kk < KD; kk++) {
                unsigned qa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    if (QREG) {
#pragma unroll
                        for (int e = 0; e < 4; e++) qa[mt][e] = qf[QREG ? mt : 0][QREG ? kk : 0][e];
                    } else {
                        mma_ldsm4(sQ + mma_swz(wr + mt * 16 + a_row, kk * 2 + a_ch), qa[mt][0],
                                  qa[mt][1], qa[mt][2], qa[mt][3]);
                    }
                }
#pragma unroll
                for (int n2 = 0; n2 < NF / 2; n2++) {
                    unsigned b0, b1, b2, b3;
                    mma_ldsm4(tK + mma_swz(n2 * 16 + k_row, kk * 2 + k_ch), b0, b1, b2, b3);
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        mma_16816(s[mt][2 * n2], qa[mt], b0, b1);
                        mma_16816(s[mt][2 * n2 + 1], qa[mt], b2, b3);
                    }
                }
            }
            // causal / length mask, only on tiles that cross a row's diagonal
            if (n0 + BN - 1 > off + m0 + wr) {
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int nf = 0; nf < NF; nf++)
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const int col = n0 + nf * 8 + tig * 2 + (e & 1);
                            if (col > lim[mt][e >> 1]) s[mt][nf][e] = -INFINITY;
                        }
            }
            // online softmax (base 2), P kept in s
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
                    const float base = mx == -INFINITY ? 0.0f : mx * sl2; // no inf - inf
                    const float alpha = mma_exp2(mrow[mt][hr] * sl2 - base);
                    mrow[mt][hr] = mx;
                    float sum = 0.0f;
#pragma unroll
                    for (int nf = 0; nf < NF; nf++)
#pragma unroll
                        for (int e = 2 * hr; e < 2 * hr + 2; e++) {
                            float p = mma_exp2(fmaf(s[mt][nf][e], sl2, -base));
                            s[mt][nf][e] = p;
                            sum += p;
                        }
                    lrow[mt][hr] = lrow[mt][hr] * alpha + sum; // per-lane partial sum
#pragma unroll
                    for (int d = 0; d < DF; d++) {
                        oacc[mt][d][2 * hr] *= alpha;
                        oacc[mt][d][2 * hr + 1] *= alpha;
                    }
                }
            // O += P V
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
                unsigned pa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
#if MMA_P_F16
#define MMA_PPACK mma_packh
#else
#define MMA_PPACK mma_pack
#endif
                    pa[mt][0] = MMA_PPACK(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                    pa[mt][1] = MMA_PPACK(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                    pa[mt][2] = MMA_PPACK(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                    pa[mt][3] = MMA_PPACK(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
#undef MMA_PPACK
                }
#pragma unroll
                for (int d2 = 0; d2 < DF / 2; d2++) {
                    unsigned b0, b1, b2, b3;
                    mma_ldsm4t(tV + mma_swz(kk * 16 + v_row, d2 * 2 + v_ch), b0, b1, b2, b3);
#if MMA_P_F16 == 2
                    b0 = mma_bf2h(b0);
                    b1 = mma_bf2h(b1);
                    b2 = mma_bf2h(b2);
                    b3 = mma_bf2h(b3);
#endif
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
#if MMA_P_F16
                        mma_16816h(oacc[mt][2 * d2], pa[mt], b0, b1);
                        mma_16816h(oacc[mt][2 * d2 + 1], pa[mt], b2, b3);
#else
                        mma_16816(oacc[mt][2 * d2], pa[mt], b0, b1);
                        mma_16816(oacc[mt][2 * d2 + 1], pa[mt], b2, b3);
#endif
                    }
                }
            }
        }
        __syncthreads(); // stage st is overwritten by the next iteration's load
    }

    // Normalise, stage this warp's rows in its own Q rows, store 16-byte chunks.
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float l = lrow[mt][hr];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            const int r = wr + mt * 16 + g + hr * 8;
#pragma unroll
            for (int d = 0; d < DF; d++)
                *reinterpret_cast<unsigned *>(mma_smem + mma_swz(r, d) + tig * 4) =
                    mma_pack(oacc[mt][d][2 * hr] * inv, oacc[mt][d][2 * hr + 1] * inv);
        }
    __syncwarp();
#pragma unroll
    for (int it = 0; it < MT * 16 * MMA_CHUNKS / 32; it++) {
        const int idx = it * 32 + lane, r = wr + idx / MMA_CHUNKS, c = idx % MMA_CHUNKS;
        if (m0 + r < SQ)
            *reinterpret_cast<uint4 *>(og + (size_t)r * HEAD_DIM + c * 8) =
                *reinterpret_cast<const uint4 *>(mma_smem + mma_swz(r, c));
    }
}

// Launches one tile configuration; returns the cudaError_t as an int.
template <int NW, int MT, int BN, bool QREG>
static int mma_launch_cfg(const bf16_t *q, const bf16_t *k, const bf16_t *v, bf16_t *o, int B,
                          int HQ, int HKV, int SQ, int L, cudaStream_t s)
{
    constexpr int BM = 16 * MT * NW;
    if (B < 1 || HKV < 1 || HQ < HKV || HQ % HKV != 0 || SQ < 1 || L < SQ)
        return (int)cudaErrorInvalidValue;
    const int smem = (BM + 4 * BN) * MMA_ROWB;
    static bool attr_set; // attribute set once per configuration
    if (!attr_set) {
        cudaError_t e = cudaFuncSetAttribute(mma_attn_fwd<NW, MT, BN, QREG>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess) return (int)e;
        attr_set = true;
    }
    dim3 grid((unsigned)(B * HQ), (unsigned)((SQ + BM - 1) / BM), 1);
    const float sl2 = 1.4426950408889634f / sqrtf((float)HEAD_DIM);
    mma_attn_fwd<NW, MT, BN, QREG><<<grid, NW * 32, smem, s>>>(q, k, v, o, HQ, HKV, SQ, L, sl2);
    return (int)cudaGetLastError();
}

// o = causal GQA attention of q, k, v (layout: gqa_attention.h) on stream s.
// Returns the cudaError_t (cudaSuccess = 0).
static int mma_prefill_launch(const bf16_t *q, const bf16_t *k, const bf16_t *v, bf16_t *o, int B,
                              int HQ, int HKV, int SQ, int L, cudaStream_t s)
{
    static int sms; // multiprocessors of device 0, read once
    if (!sms && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
        sms = 132;
    // Enough 128-row blocks for two waves: 8 warps x (128 rows, 128-key tiles);
    // else 4 warps x (64 rows, 64-key tiles), twice the blocks.
    if ((long long)B * HQ * ((SQ + 127) / 128) >= 2LL * sms)
        return mma_launch_cfg<8, 1, 128, true>(q, k, v, o, B, HQ, HKV, SQ, L, s);
    return mma_launch_cfg<4, 1, 64, true>(q, k, v, o, B, HQ, HKV, SQ, L, s);
}
// ---- KERNEL END ----

// ---------------------------------------------------------------- host side

typedef int (*launch_fn)(const bf16_t *, const bf16_t *, const bf16_t *, bf16_t *, int, int, int,
                         int, int, cudaStream_t);

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static float bf2f(bf16_t h)
{
    unsigned u = (unsigned)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static bf16_t f2bf(float f) // round to nearest even (inputs are finite)
{
    unsigned u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (bf16_t)(u >> 16);
}

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double urand() // uniform in [0, 1)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand() { return sqrt(-2.0 * log(1.0 - urand())) * cos(6.283185307179586 * urand()); }

// Fills x with kind 0: normal; 1: small integers -4..4; 2: normal with rare
// +-30..80 outliers (the harness's three kinds of input).
static void fill(std::vector<bf16_t> &x, int kind)
{
    for (auto &e : x) {
        double r;
        if (kind == 1)
            r = (double)((int)(urand() * 9.0) - 4);
        else {
            r = nrand();
            if (kind == 2 && urand() < 0.002) r = (urand() < 0.5 ? -1 : 1) * (30 + 50 * urand());
        }
        e = f2bf((float)r);
    }
}

// Float64 reference of o (as doubles), threads over (b, h).
static void reference(const std::vector<bf16_t> &q, const std::vector<bf16_t> &k,
                      const std::vector<bf16_t> &v, std::vector<double> &o, int B, int HQ, int HKV,
                      int SQ, int L)
{
    const int D = HEAD_DIM;
    auto work = [&](int bh) {
        int b = bh / HQ, h = bh % HQ, kvh = h / (HQ / HKV);
        const bf16_t *kb = &k[(size_t)(b * HKV + kvh) * L * D], *vb = &v[(size_t)(b * HKV + kvh) * L * D];
        std::vector<double> sc(L), qd(D), acc(D);
        for (int i = 0; i < SQ; i++) {
            const bf16_t *qr = &q[((size_t)bh * SQ + i) * D];
            for (int d = 0; d < D; d++) qd[d] = bf2f(qr[d]);
            int n = L - SQ + i + 1;
            double mx = -INFINITY;
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int d = 0; d < D; d++) s += qd[d] * bf2f(kb[(size_t)j * D + d]);
                sc[j] = s / sqrt((double)D);
                mx = std::max(mx, sc[j]);
            }
            double sum = 0;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int j = 0; j < n; j++) {
                double p = exp(sc[j] - mx);
                sum += p;
                for (int d = 0; d < D; d++) acc[d] += p * bf2f(vb[(size_t)j * D + d]);
            }
            for (int d = 0; d < D; d++) o[((size_t)bh * SQ + i) * D + d] = acc[d] / sum;
        }
    };
    int nthr = (int)std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (int t = 0; t < nthr; t++)
        th.emplace_back([&, t] {
            for (int bh = t; bh < B * HQ; bh += nthr) work(bh);
        });
    for (auto &t : th) t.join();
}

#define CANARY 4096 // bf16 elements of guard pattern after every buffer
static const bf16_t CANARY_VAL = 0x7fc1;

// Device buffer of n elements plus a canary tail; returns its pointer.
static bf16_t *dev_alloc(size_t n)
{
    bf16_t *p;
    CK(cudaMalloc(&p, (n + CANARY) * sizeof(bf16_t)));
    std::vector<bf16_t> c(CANARY, CANARY_VAL);
    CK(cudaMemcpy(p + n, c.data(), CANARY * sizeof(bf16_t), cudaMemcpyHostToDevice));
    return p;
}

static bool canary_ok(const bf16_t *p, size_t n)
{
    std::vector<bf16_t> c(CANARY);
    CK(cudaMemcpy(c.data(), p + n, CANARY * sizeof(bf16_t), cudaMemcpyDeviceToHost));
    for (auto e : c)
        if (e != CANARY_VAL) return false;
    return true;
}

// Checks one shape against the reference; prints a line, returns pass.
static bool check(launch_fn fn, const char *name, int B, int HQ, int HKV, int SQ, int L, int kind)
{
    const int D = HEAD_DIM;
    size_t nq = (size_t)B * HQ * SQ * D, nk = (size_t)B * HKV * L * D;
    std::vector<bf16_t> hq(nq), hk(nk), hv(nk), ho(nq);
    fill(hq, kind);
    fill(hk, kind);
    fill(hv, kind);
    bf16_t *dq = dev_alloc(nq), *dk = dev_alloc(nk), *dv = dev_alloc(nk), *dout = dev_alloc(nq);
    CK(cudaMemcpy(dq, hq.data(), nq * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dk, hk.data(), nk * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, hv.data(), nk * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xff, nq * 2)); // NaN pattern: unwritten rows fail
    int rc = fn(dq, dk, dv, dout, B, HQ, HKV, SQ, L, 0);
    cudaError_t e2 = cudaDeviceSynchronize();
    bool ok = rc == 0 && e2 == cudaSuccess;
    if (!ok) {
        printf("%-10s B=%d HQ=%d HKV=%d SQ=%d L=%d kind=%d: launch %d, sync %s FAIL\n", name, B, HQ,
               HKV, SQ, L, kind, rc, cudaGetErrorString(e2));
        exit(1);
    }
    bool guards = canary_ok(dq, nq) && canary_ok(dk, nk) && canary_ok(dv, nk) && canary_ok(dout, nq);
    CK(cudaMemcpy(ho.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
    std::vector<double> ref(nq);
    reference(hq, hk, hv, ref, B, HQ, HKV, SQ, L);
    double max_abs = 0, max_rel = 0, worst = 0; // worst: max err / tolerance
    size_t bad = 0;
    for (size_t i = 0; i < nq; i++) {
        double got = bf2f(ho[i]), r = ref[i], err = fabs(got - r);
        if (!(err <= 1e-2 + 1e-2 * fabs(r))) bad++; // NaN counts as bad
        if (err > max_abs || err != err) max_abs = err;
        worst = std::max(worst, err / (1e-2 + 1e-2 * fabs(r)));
        if (fabs(r) > 1e-3) max_rel = std::max(max_rel, err / fabs(r));
    }
    ok = bad == 0 && guards;
    printf("%-10s B=%-2d HQ=%-2d HKV=%d SQ=%-5d L=%-5d kind=%d  max_abs=%.3e max_rel=%.3e err/tol=%.2f "
           "bad=%zu guards=%s  %s\n",
           name, B, HQ, HKV, SQ, L, kind, max_abs, max_rel, worst, bad, guards ? "ok" : "BROKEN",
           ok ? "PASS" : "FAIL");
    CK(cudaFree(dq));
    CK(cudaFree(dk));
    CK(cudaFree(dv));
    CK(cudaFree(dout));
    return ok;
}

// Median kernel time in microseconds over 20 runs after warm-up.
static double time_us(launch_fn fn, int B, int HQ, int HKV, int SQ, int L)
{
    const int D = HEAD_DIM;
    size_t nq = (size_t)B * HQ * SQ * D, nk = (size_t)B * HKV * L * D;
    std::vector<bf16_t> hq(nq), hk(nk);
    fill(hq, 0);
    fill(hk, 0);
    bf16_t *dq = dev_alloc(nq), *dk = dev_alloc(nk), *dv = dev_alloc(nk), *dout = dev_alloc(nq);
    CK(cudaMemcpy(dq, hq.data(), nq * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dk, hk.data(), nk * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, hk.data(), nk * 2, cudaMemcpyHostToDevice));
    for (int i = 0; i < 3; i++) CK((cudaError_t)fn(dq, dk, dv, dout, B, HQ, HKV, SQ, L, 0));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int i = 0; i < 20; i++) {
        CK(cudaEventRecord(a, 0));
        CK((cudaError_t)fn(dq, dk, dv, dout, B, HQ, HKV, SQ, L, 0));
        CK(cudaEventRecord(b, 0));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    CK(cudaFree(dq));
    CK(cudaFree(dk));
    CK(cudaFree(dv));
    CK(cudaFree(dout));
    return (t[9] + t[10]) / 2;
}

static double flops(int B, int HQ, int SQ, int L)
{
    double pairs = (double)SQ * (L - SQ) + (double)SQ * (SQ + 1) / 2.0;
    return 4.0 * B * HQ * HEAD_DIM * pairs;
}

struct cfg {
    const char *name;
    launch_fn fn;
};

int main(int argc, char **argv)
{
    bool sweep = argc > 1 && !strcmp(argv[1], "--sweep");
    bool check_only = argc > 1 && !strcmp(argv[1], "--check");
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);

    cfg cfgs[] = {
        {"default", mma_prefill_launch},
        {"8w1m128q", mma_launch_cfg<8, 1, 128, true>},
        {"4w1m64q", mma_launch_cfg<4, 1, 64, true>},

    };
    const int ncfg = sweep ? (int)(sizeof cfgs / sizeof cfgs[0]) : 1;

    struct shape {
        int B, HQ, HKV, SQ, L;
    } checks[] = {
        {1, 16, 8, 77, 77},   {1, 40, 8, 33, 301},  {1, 16, 8, 1, 1},    {1, 40, 8, 512, 512},
        {2, 16, 8, 512, 1024}, {1, 16, 8, 128, 128}, {3, 40, 8, 1, 1000}, {32, 10, 2, 5, 9},
        {2, 16, 8, 130, 4099}, {1, 10, 2, 200, 200}, {1, 16, 8, 2048, 2048}, {1, 16, 8, 512, 4096},
        {1, 40, 8, 1024, 1024},
    };
    int fails = 0;
    for (int c = 0; c < ncfg; c++)
        for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
            const shape &s = checks[i];
            if (!check(cfgs[c].fn, cfgs[c].name, s.B, s.HQ, s.HKV, s.SQ, s.L,
                       i < 10 ? (int)(i % 3) : 2)) fails++;
        }

    struct shape times[] = {
        {1, 16, 8, 512, 512},  {1, 40, 8, 512, 512},   {1, 16, 8, 2048, 2048}, {1, 40, 8, 2048, 2048},
        {1, 16, 8, 8192, 8192}, {1, 40, 8, 8192, 8192}, {1, 16, 8, 512, 8192},  {1, 40, 8, 512, 8192},
    };
    for (int c = 0; c < (check_only ? 0 : ncfg); c++)
        for (auto &s : times) {
            double us = time_us(cfgs[c].fn, s.B, s.HQ, s.HKV, s.SQ, s.L);
            printf("%-10s time B=%d HQ=%-2d HKV=%d SQ=%-5d L=%-5d  %9.1f us  %6.1f TFLOP/s\n",
                   cfgs[c].name, s.B, s.HQ, s.HKV, s.SQ, s.L, us,
                   flops(s.B, s.HQ, s.SQ, s.L) / us * 1e-6);
        }
    printf("%s (%d failing checks)\n", fails ? "FAIL" : "ALL PASS", fails);
    return fails ? 1 : 0;
}
