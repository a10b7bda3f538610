// Tensor-core (mma.sync) split-KV decode kernel for GQA attention, bf16,
// head_dim 128, Hopper (sm_90a), with its own correctness check against a
// float64 CPU reference and a timing table of the decode scenarios. Layout:
// tasks/gqa_attention/gqa_attention.h (decode: one query row, all L keys).
// The region between the KERNEL BEGIN / KERNEL END markers is meant to be
// pasted into tasks/gqa_attention/cuda/naive.cu as another decode axis next
// to gqa_decode_warp; it uses HEAD_DIM, PART_STRIDE, bf16_t (defined here
// only where missing) and names prefixed mmad_.
//
// Build: nvcc -O3 -arch=sm_90a -std=c++17 bench/gqa_mma_decode.cu -o /tmp/x
// Run:   /tmp/x            (checks, then times; exit 1 on any FAIL)
//        /tmp/x --check    (checks only, e.g. under compute-sanitizer)
//        /tmp/x --sweep    (checks and times every compiled configuration)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

// ---- KERNEL BEGIN ----
// Design: one block of 4 warps per (sequence, KV head, chunk of keys); grid
// (split, HKV, B). The G = HQ/HKV query heads of the KV head are the M rows
// of mma.m16n8k16 (rows G..15 zero), so S[16 x keys] = Q K^T and
// O[16 x 128] += P V run on the tensor cores while the block streams K and V.
// Tiles of 4*KW keys (K and V) are copied with cp.async into STAGES
// shared-memory stages (XOR-swizzled 256-byte rows: ldmatrix and cp.async
// free of bank conflicts); warp w takes keys w*KW .. w*KW+KW-1 of every tile
// and keeps its own online softmax (base 2: scores scaled by
// rsqrt(128)*log2(e)). Q fragments stay in registers. At the end the warps
// are merged through shared memory; with split > 1 each block writes its
// partial (unnormalised sums, max, sum of exp2) to part, and the last block
// of a (sequence, KV head) to finish merges all chunks and resets its
// counter. Keys past the chunk are zero-filled by cp.async (never read) and
// masked to -inf before the max.
#ifndef HEAD_DIM
#define HEAD_DIM 128
#endif
#ifndef PART_STRIDE
#define PART_STRIDE (HEAD_DIM + 2) // a partial result: HEAD_DIM sums, max, sum of exp
#endif
typedef unsigned short bf16_t; // bf16 bit pattern (an identical typedef may precede it)

#ifndef MMAD_KW
#define MMAD_KW 16 // keys per warp per tile (16 or 32)
#endif
#ifndef MMAD_STAGES
#define MMAD_STAGES 3 // shared-memory stages of the cp.async pipeline (2 to 4)
#endif
#define MMAD_WARPS 4
#define MMAD_THREADS (MMAD_WARPS * 32)
#define MMAD_ROWB (HEAD_DIM * 2)   // bytes of one shared-memory row
#define MMAD_CHUNKS (HEAD_DIM / 8) // 16-byte chunks of one row
#define MMAD_OS (HEAD_DIM + 8)     // floats per row of the warp-merge buffer
#define MMAD_MAX_G 16              // query heads per KV head (the 16 mma rows)
#define MMAD_MAX_SPLIT 128         // chunks per (sequence, KV head)
#define MMAD_MAX_COUNTERS (1 << 16)

static_assert(HEAD_DIM == 128, "mmad_ kernels assume head_dim 128");

// Per (sequence, KV head): chunks finished so far in this launch; the last
// one resets it to zero for the next launch.
__device__ unsigned int mmad_done[MMAD_MAX_COUNTERS];

// Shared-memory byte offset of 16-byte chunk c of row r (XOR swizzle).
__device__ __forceinline__ unsigned mmad_swz(int r, int c)
{
    return (unsigned)(r * MMAD_ROWB + ((c ^ (r & 7)) << 4));
}

// Copies 16 bytes global -> shared asynchronously; zero-fills when !ok (src
// is then not read but must still be a valid address).
__device__ __forceinline__ void mmad_cp16(unsigned dst, const void *src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void mmad_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most N committed cp.async groups of this thread are pending.
template <int N> __device__ __forceinline__ void mmad_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void mmad_ldsm4(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                           unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

// As mmad_ldsm4, each matrix transposed.
__device__ __forceinline__ void mmad_ldsm4t(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                            unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

// c += a (16x16 row-major bf16) * b (16x8 col-major bf16), fp32 accumulate.
__device__ __forceinline__ void mmad_mma(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> bf16x2 (round to nearest even), lo in the low half.
__device__ __forceinline__ unsigned mmad_pack(float lo, float hi)
{
    __nv_bfloat162 t = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&t);
}

// exp2(a - m) where m may be -inf (nothing seen): 0 instead of NaN.
__device__ __forceinline__ float mmad_wexp2(float a, float m)
{
    return m == -INFINITY ? 0.0f : exp2f(a - m);
}

__device__ __forceinline__ bf16_t mmad_bf16(float x)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

// Dynamic shared memory of one configuration: Q (16 rows), then STAGES
// stages of K and V tiles; the merges reuse the stages.
template <int KW, int STAGES> constexpr int mmad_smem_bytes()
{
    return (16 + STAGES * 2 * MMAD_WARPS * KW) * MMAD_ROWB;
}

// One block: keys [sp*chunk, min(L, sp*chunk + chunk)) of KV head blockIdx.y
// of sequence blockIdx.z, for its G = HQ/HKV query heads (1 <= G <= 16).
// split == 1: writes o. Else writes part rows ((b*HQ + h)*split + sp) and the
// last block of the (sequence, KV head) merges them into o. chunk is a
// multiple of 4*KW and every chunk holds at least one key.
template <int KW, int STAGES>
__global__ void __launch_bounds__(MMAD_THREADS)
    mmad_decode(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                const bf16_t *__restrict__ v, bf16_t *__restrict__ o, float *__restrict__ part,
                int HQ, int HKV, int L, int chunk, int split, int part_vec2)
{
    constexpr int T = MMAD_WARPS * KW; // keys per tile
    constexpr int NF = KW / 8;         // 8-key column tiles of S per warp
    constexpr int DF = HEAD_DIM / 8;   // 8-wide column tiles of O
    constexpr int KD = HEAD_DIM / 16;  // 16-deep steps over the head dimension
    static_assert(KW % 16 == 0, "KW: multiple of 16");
    static_assert(STAGES >= 2, "STAGES >= 2");
    // merge buffers (floats): warp outputs, warp (m, l), chunk weights, sums
    constexpr int MERGE_FLOATS =
        MMAD_WARPS * 16 * MMAD_OS + MMAD_WARPS * 16 * 2 + MMAD_MAX_G * MMAD_MAX_SPLIT;
    static_assert(MERGE_FLOATS * 4 <= STAGES * 2 * T * MMAD_ROWB, "merge buffers fit the stages");

    extern __shared__ __align__(128) unsigned char mmad_smem[];
    __shared__ int sm_last;
    const unsigned sQ = (unsigned)__cvta_generic_to_shared(mmad_smem);
    const unsigned sKV = sQ + 16 * MMAD_ROWB; // stage st: K at +2*st*T rows, V T rows later

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, tig = lane & 3;
    const int sp = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int G = HQ / HKV;
    const int j0 = sp * chunk, j1 = min(L, j0 + chunk);
    const int nt = (j1 - j0 + T - 1) / T;
    const long long row0 = (long long)b * HQ + (long long)kvh * G; // first query row (head)
    const bf16_t *qg = q + row0 * HEAD_DIM;
    const bf16_t *kg = k + ((long long)b * HKV + kvh) * L * HEAD_DIM;
    const bf16_t *vg = v + ((long long)b * HKV + kvh) * L * HEAD_DIM;
    const float sl2 = rsqrtf((float)HEAD_DIM) * 1.4426950408889634f; // scores in log2 units

    // Q rows 0..G-1 (rows G..15 zero-filled), then the first STAGES-1 tiles.
    for (int i = tid; i < 16 * MMAD_CHUNKS; i += MMAD_THREADS) {
        const int r = i / MMAD_CHUNKS, c = i % MMAD_CHUNKS;
        const bool ok = r < G;
        mmad_cp16(sQ + mmad_swz(r, c), ok ? qg + r * HEAD_DIM + c * 8 : qg, ok);
    }
    mmad_commit();
    auto load_tile = [&](int t, int st) {
        const unsigned dk = sKV + (unsigned)(st * 2 * T * MMAD_ROWB), dv = dk + T * MMAD_ROWB;
        for (int i = tid; i < T * MMAD_CHUNKS; i += MMAD_THREADS) {
            const int r = i / MMAD_CHUNKS, c = i % MMAD_CHUNKS, key = j0 + t * T + r;
            const bool ok = key < j1;
            const long long go = ok ? (long long)key * HEAD_DIM + c * 8 : 0;
            mmad_cp16(dk + mmad_swz(r, c), kg + go, ok);
            mmad_cp16(dv + mmad_swz(r, c), vg + go, ok);
        }
    };
#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < nt) load_tile(st, st);
        mmad_commit(); // empty groups keep the group count uniform
    }

    // Per-lane ldmatrix row/chunk selectors (PTX ISA fragment tables):
    //  A (Q): matrices {rows 0-7, 8-15} x {k 0-7, 8-15}: row lane&15, chunk lane>>4.
    //  B (K): {keys 0-7: k 0-7, k 8-15}, {keys 8-15: ...}: key (lane&7) + (lane>>4)*8,
    //     chunk (lane>>3)&1.
    //  B (V, trans): {keys 0-7, 8-15} x {dims 0-7, 8-15}: key (lane&7) + ((lane>>3)&1)*8,
    //     chunk lane>>4.
    const int a_row = lane & 15, a_ch = lane >> 4;
    const int k_row = (lane & 7) + ((lane >> 4) << 3), k_ch = (lane >> 3) & 1;
    const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_ch = lane >> 4;

    mmad_wait<STAGES - 1>(); // the Q group is complete
    __syncthreads();
    unsigned qf[KD][4];
#pragma unroll
    for (int kk = 0; kk < KD; kk++)
        mmad_ldsm4(sQ + mmad_swz(a_row, kk * 2 + a_ch), qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);

    float oacc[DF][4];
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}; // rows g, g + 8
#pragma unroll
    for (int d = 0; d < DF; d++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            oacc[d][e] = 0.0f;

    for (int t = 0; t < nt; t++) {
        mmad_wait<STAGES - 2>(); // tile t has landed (this thread's copies)
        __syncthreads();         // ... everyone's; and stage (t-1)%STAGES is free
        {
            const int tn = t + STAGES - 1;
            if (tn < nt) load_tile(tn, tn % STAGES);
            mmad_commit();
        }
        const int kb = j0 + t * T + warp * KW; // first key of this warp
        if (kb >= j1) continue;                // all masked (warp-uniform)
        const unsigned tK = sKV + (unsigned)((t % STAGES) * 2 * T * MMAD_ROWB),
                       tV = tK + T * MMAD_ROWB;
        float s[NF][4];
#pragma unroll
        for (int nf = 0; nf < NF; nf++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                s[nf][e] = 0.0f;
                // S = Q K^T over this warp's KW keys
#pragma unroll
        for (int kk = 0; kk < KD; kk++)
#pragma unroll
            for (int n2 = 0; n2 < NF / 2; n2++) {
                unsigned b0, b1, b2, b3;
                mmad_ldsm4(tK + mmad_swz(warp * KW + n2 * 16 + k_row, kk * 2 + k_ch), b0, b1, b2,
                           b3);
                mmad_mma(s[2 * n2], qf[kk], b0, b1);
                mmad_mma(s[2 * n2 + 1], qf[kk], b2, b3);
            }
            // scale to log2 units; keys past the chunk -> -inf
#pragma unroll
        for (int nf = 0; nf < NF; nf++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int key = kb + nf * 8 + tig * 2 + (e & 1);
                s[nf][e] = key < j1 ? s[nf][e] * sl2 : -INFINITY;
            }
            // online softmax; row statistics reduced over the quad sharing a row
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float mx = m[hr];
#pragma unroll
            for (int nf = 0; nf < NF; nf++)
                mx = fmaxf(mx, fmaxf(s[nf][2 * hr], s[nf][2 * hr + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float base = mx == -INFINITY ? 0.0f : mx; // no -inf - -inf
            const float alpha = exp2f(m[hr] - base);        // 0 when m was -inf
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
            l[hr] = l[hr] * alpha + sum; // per-lane partial sum
#pragma unroll
            for (int d = 0; d < DF; d++) {
                oacc[d][2 * hr] *= alpha;
                oacc[d][2 * hr + 1] *= alpha;
            }
        }
        // O += P V (P as bf16 A fragments straight from the S accumulators)
#pragma unroll
        for (int kk = 0; kk < KW / 16; kk++) {
            unsigned pa[4];
            pa[0] = mmad_pack(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = mmad_pack(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = mmad_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = mmad_pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int d2 = 0; d2 < DF / 2; d2++) {
                unsigned b0, b1, b2, b3;
                mmad_ldsm4t(tV + mmad_swz(warp * KW + kk * 16 + v_row, d2 * 2 + v_ch), b0, b1, b2,
                            b3);
                mmad_mma(oacc[2 * d2], pa, b0, b1);
                mmad_mma(oacc[2 * d2 + 1], pa, b2, b3);
            }
        }
    }

    // Merge the warps: each stages its rows < G, then thread (r, c) combines.
    mmad_wait<0>();
    __syncthreads(); // every warp is done with the stages
    float *sm_o = reinterpret_cast<float *>(mmad_smem + 16 * MMAD_ROWB); // [warp][16][OS]
    float *sm_ml = sm_o + MMAD_WARPS * 16 * MMAD_OS;                     // [warp][16][2]
    float *sm_w = sm_ml + MMAD_WARPS * 16 * 2;                           // [G][split]
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        float ls = l[hr];
        ls += __shfl_xor_sync(0xffffffffu, ls, 1);
        ls += __shfl_xor_sync(0xffffffffu, ls, 2);
        const int r = g + 8 * hr;
        if (r < G) {
            float *dst = sm_o + (warp * 16 + r) * MMAD_OS + tig * 2;
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
    for (int i = tid; i < G * HEAD_DIM; i += MMAD_THREADS) {
        const int r = i / HEAD_DIM, c = i % HEAD_DIM;
        float M = -INFINITY, S = 0.0f, A = 0.0f;
#pragma unroll
        for (int w = 0; w < MMAD_WARPS; w++)
            M = fmaxf(M, sm_ml[(w * 16 + r) * 2]);
#pragma unroll
        for (int w = 0; w < MMAD_WARPS; w++) {
            const float wg = mmad_wexp2(sm_ml[(w * 16 + r) * 2], M);
            S += sm_ml[(w * 16 + r) * 2 + 1] * wg;
            A += sm_o[(w * 16 + r) * MMAD_OS + c] * wg;
        }
        if (split == 1) {
            o[(row0 + r) * HEAD_DIM + c] = mmad_bf16(A / S);
        } else {
            float *pp = part + ((row0 + r) * split + sp) * PART_STRIDE;
            pp[c] = A;
            if (c == 0) {
                pp[HEAD_DIM] = M;
                pp[HEAD_DIM + 1] = S;
            }
        }
    }
    if (split == 1) return;

    // The last block of this (sequence, KV head) to finish merges every chunk.
    __threadfence();
    __syncthreads();
    unsigned int *done = &mmad_done[(long long)b * HKV + kvh];
    if (tid == 0) sm_last = atomicAdd(done, 1u) == (unsigned)split - 1;
    __syncthreads();
    if (!sm_last) return;
    if (tid == 0) *done = 0;
    // chunk maxima -> weights exp2(m_s - M) / S per row (one warp per row)
    for (int i = tid; i < G * split; i += MMAD_THREADS) {
        const int r = i / split, s2 = i % split;
        sm_w[i] = __ldcg(part + ((row0 + r) * split + s2) * PART_STRIDE + HEAD_DIM);
    }
    __syncthreads();
    for (int r = warp; r < G; r += MMAD_WARPS) {
        float *w = sm_w + r * split;
        const float *pr = part + (row0 + r) * split * PART_STRIDE;
        float M = -INFINITY, S = 0.0f;
        for (int s2 = lane; s2 < split; s2 += 32)
            M = fmaxf(M, w[s2]);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
        for (int s2 = lane; s2 < split; s2 += 32)
            S += __ldcg(pr + s2 * PART_STRIDE + HEAD_DIM + 1) * mmad_wexp2(w[s2], M);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            S += __shfl_xor_sync(0xffffffffu, S, off);
        const float inv = 1.0f / S; // S >= 1: the chunk holding the maximum adds >= 1
        for (int s2 = lane; s2 < split; s2 += 32)
            w[s2] = mmad_wexp2(w[s2], M) * inv;
    }
    __syncthreads();
    if (part_vec2) { // part is 8-byte aligned: two columns per load
        for (int i = tid; i < G * (HEAD_DIM / 2); i += MMAD_THREADS) {
            const int r = i / (HEAD_DIM / 2), c = (i % (HEAD_DIM / 2)) * 2;
            const float *w = sm_w + r * split;
            const float *pr = part + (row0 + r) * split * PART_STRIDE + c;
            float ax = 0.0f, ay = 0.0f;
#pragma unroll 8
            for (int s2 = 0; s2 < split; s2++) {
                const float2 x = __ldcg(reinterpret_cast<const float2 *>(pr + s2 * PART_STRIDE));
                ax += x.x * w[s2];
                ay += x.y * w[s2];
            }
            *reinterpret_cast<unsigned *>(o + (row0 + r) * HEAD_DIM + c) =
                (unsigned)mmad_bf16(ax) | ((unsigned)mmad_bf16(ay) << 16);
        }
    } else {
        for (int i = tid; i < G * HEAD_DIM; i += MMAD_THREADS) {
            const int r = i / HEAD_DIM, c = i % HEAD_DIM;
            const float *w = sm_w + r * split;
            const float *pr = part + (row0 + r) * split * PART_STRIDE + c;
            float a = 0.0f;
#pragma unroll 8
            for (int s2 = 0; s2 < split; s2++)
                a += __ldcg(pr + s2 * PART_STRIDE) * w[s2];
            o[(row0 + r) * HEAD_DIM + c] = mmad_bf16(a);
        }
    }
}

// Multiprocessors of the current device (looked up once, before any graph
// capture: correctness runs come first).
static int mmad_sm_count(void)
{
    static int n;
    if (!n) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            n = 1;
    }
    return n;
}

// Chunks per (sequence, KV head) for bps resident blocks per multiprocessor:
// as many as fill every slot once (rounded down, so the blocks make whole
// waves), at most one per tile of keys and MMAD_MAX_SPLIT.
static int mmad_auto_split(int B, int HKV, int L, int tile, int bps)
{
    long long pairs = (long long)B * HKV, slots = (long long)mmad_sm_count() * bps;
    long long want = slots / pairs, max_split = (L + tile - 1) / tile;
    if (want > max_split) want = max_split;
    if (want > MMAD_MAX_SPLIT) want = MMAD_MAX_SPLIT;
    return want < 1 ? 1 : (int)want;
}

// Launches one configuration; split <= 0 picks it (mmad_auto_split). The
// split used is at most the one given (or picked): part must hold
// B*HQ*split*PART_STRIDE floats when it is > 1. Returns the cudaError_t.
template <int KW, int STAGES>
static int mmad_launch_cfg(const bf16_t *q, const bf16_t *k, const bf16_t *v, bf16_t *o,
                           float *part, int B, int HQ, int HKV, int L, int split, cudaStream_t s)
{
    constexpr int T = MMAD_WARPS * KW;
    constexpr int smem = mmad_smem_bytes<KW, STAGES>();
    if (B < 1 || HKV < 1 || L < 1 || HQ < HKV || HQ % HKV != 0 || HQ / HKV > MMAD_MAX_G ||
        (long long)B * HKV > MMAD_MAX_COUNTERS)
        return (int)cudaErrorInvalidValue;
    static int bps; // resident blocks per multiprocessor, looked up once
    if (!bps) {
        cudaError_t e = cudaFuncSetAttribute(mmad_decode<KW, STAGES>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e == cudaSuccess)
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, mmad_decode<KW, STAGES>,
                                                              MMAD_THREADS, smem);
        if (e != cudaSuccess) return (int)e;
        if (bps < 1) return (int)cudaErrorInvalidConfiguration;
    }
    if (split <= 0) split = mmad_auto_split(B, HKV, L, T, bps);
    if (split > MMAD_MAX_SPLIT) split = MMAD_MAX_SPLIT;
    if (split > (L + T - 1) / T) split = (L + T - 1) / T;
    if (split < 1) split = 1;
    int chunk = (L + split - 1) / split;
    chunk = (chunk + T - 1) / T * T; // whole tiles per chunk
    split = (L + chunk - 1) / chunk; // so that no chunk is empty
    if (split > 1 && !part) return (int)cudaErrorInvalidValue;
    const int vec2 = ((unsigned long long)part & 7) == 0;
    dim3 grid((unsigned)split, (unsigned)HKV, (unsigned)B);
    mmad_decode<KW, STAGES>
        <<<grid, MMAD_THREADS, smem, s>>>(q, k, v, o, part, HQ, HKV, L, chunk, split, vec2);
    return (int)cudaGetLastError();
}

// o = GQA decode attention of q, k, v (layout: gqa_attention.h, one query
// row, all L keys) on stream s, with up to split chunks of keys per
// (sequence, KV head) (split <= 0: picked to fill the GPU); partial results
// in part (B*HQ*split*PART_STRIDE floats, or MMAD_MAX_SPLIT for split <= 0).
// Returns the cudaError_t (cudaSuccess = 0).
static int mmad_launch(const bf16_t *q, const bf16_t *k, const bf16_t *v, bf16_t *o, float *part,
                       int B, int HQ, int HKV, int L, int split, cudaStream_t s)
{
    return mmad_launch_cfg<MMAD_KW, MMAD_STAGES>(q, k, v, o, part, B, HQ, HKV, L, split, s);
}
// ---- KERNEL END ----

// ---------------------------------------------------------------- host side

typedef int (*launch_fn)(const bf16_t *, const bf16_t *, const bf16_t *, bf16_t *, float *, int,
                         int, int, int, int, cudaStream_t);

struct config {
    const char *name;
    launch_fn fn;
};

static const config CONFIGS[] = {
    {"default", mmad_launch},
    {"kw16_st2", mmad_launch_cfg<16, 2>},
    {"kw16_st3", mmad_launch_cfg<16, 3>},
    {"kw16_st4", mmad_launch_cfg<16, 4>},
    {"kw32_st2", mmad_launch_cfg<32, 2>},
    {"kw32_st3", mmad_launch_cfg<32, 3>},
};

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
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

// p[i] = normal(0, 1) rounded to bf16, from a hash of (i, seed).
__global__ void fill_kernel(bf16_t *p, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long z = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
        z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
        z ^= z >> 29;
        float u1 = ((z & 0xffffff) + 1) / 16777217.0f, u2 = ((z >> 24) & 0xffffff) / 16777216.0f;
        float g = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
        p[i] = __bfloat16_as_ushort(__float2bfloat16_rn(g));
    }
}

#define CANARY 4096 // bytes of guard pattern after every buffer
static const unsigned char CANARY_VAL = 0xA5;

// Device buffer of n bytes plus a canary tail; returns its pointer.
static void *dev_alloc(size_t n)
{
    unsigned char *p;
    CK(cudaMalloc(&p, n + CANARY));
    CK(cudaMemset(p + n, CANARY_VAL, CANARY));
    return p;
}

static bool canary_ok(const void *p, size_t n)
{
    std::vector<unsigned char> c(CANARY);
    CK(cudaMemcpy(c.data(), (const unsigned char *)p + n, CANARY, cudaMemcpyDeviceToHost));
    for (unsigned char x : c)
        if (x != CANARY_VAL) return false;
    return true;
}

// Float64 reference of decode o (as doubles), threads over (b, h).
static void reference(const std::vector<bf16_t> &q, const std::vector<bf16_t> &k,
                      const std::vector<bf16_t> &v, std::vector<double> &o, int B, int HQ, int HKV,
                      int L)
{
    const int D = HEAD_DIM;
    auto work = [&](int bh) {
        int b = bh / HQ, h = bh % HQ, kvh = h / (HQ / HKV);
        const bf16_t *kb = &k[(size_t)(b * HKV + kvh) * L * D],
                     *vb = &v[(size_t)(b * HKV + kvh) * L * D];
        std::vector<double> sc(L), qd(D), acc(D, 0.0);
        for (int d = 0; d < D; d++)
            qd[d] = bf2f(q[(size_t)bh * D + d]);
        double mx = -INFINITY;
        for (int j = 0; j < L; j++) {
            double s = 0;
            for (int d = 0; d < D; d++)
                s += qd[d] * bf2f(kb[(size_t)j * D + d]);
            sc[j] = s / sqrt((double)D);
            mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (int j = 0; j < L; j++) {
            double p = exp(sc[j] - mx);
            sum += p;
            for (int d = 0; d < D; d++)
                acc[d] += p * bf2f(vb[(size_t)j * D + d]);
        }
        for (int d = 0; d < D; d++)
            o[(size_t)bh * D + d] = acc[d] / sum;
    };
    int nthr = (int)std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (int t = 0; t < nthr; t++)
        th.emplace_back([&, t] {
            for (int bh = t; bh < B * HQ; bh += nthr)
                work(bh);
        });
    for (auto &t : th)
        t.join();
}

struct shape {
    int B, HQ, HKV, L;
};

// Checks cfg on shape s (outliers: a few q and k values of +-50 that line up
// into dominant scores) for several splits; prints one line per split.
// Returns the number of failures.
static int check(const config &cfg, const shape &s, bool outliers, unsigned long long seed)
{
    const size_t nq = (size_t)s.B * s.HQ * HEAD_DIM, nk = (size_t)s.B * s.HKV * s.L * HEAD_DIM;
    std::vector<bf16_t> hq(nq), hk(nk), hv(nk), ho(nq);
    bf16_t *dq = (bf16_t *)dev_alloc(nq * 2), *dk = (bf16_t *)dev_alloc(nk * 2),
           *dv = (bf16_t *)dev_alloc(nk * 2), *dout = (bf16_t *)dev_alloc(nq * 2);
    const size_t part_bytes = (size_t)s.B * s.HQ * MMAD_MAX_SPLIT * PART_STRIDE * sizeof(float);
    float *dpart = (float *)dev_alloc(part_bytes);
    fill_kernel<<<1024, 256>>>(dq, nq, seed);
    fill_kernel<<<1024, 256>>>(dk, nk, seed + 1);
    fill_kernel<<<1024, 256>>>(dv, nk, seed + 2);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hq.data(), dq, nq * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hk.data(), dk, nk * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hv.data(), dv, nk * 2, cudaMemcpyDeviceToHost));
    if (outliers) {
        const int G = s.HQ / s.HKV;
        for (int b = 0; b < s.B; b++)
            for (int h = 0; h < s.HQ; h += 2) { // every other head: one big q value
                int d = (h * 37 + b) % HEAD_DIM;
                hq[((size_t)b * s.HQ + h) * HEAD_DIM + d] = f2bf(h % 4 ? -50.0f : 50.0f);
                int kvh = h / G, key = (h * 7919 + b * 104729) % s.L; // and one key to match
                hk[(((size_t)b * s.HKV + kvh) * s.L + key) * HEAD_DIM + d] =
                    f2bf(h % 8 < 4 ? 50.0f : -50.0f);
            }
        CK(cudaMemcpy(dq, hq.data(), nq * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dk, hk.data(), nk * 2, cudaMemcpyHostToDevice));
    }
    std::vector<double> ref(nq);
    reference(hq, hk, hv, ref, s.B, s.HQ, s.HKV, s.L);
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    int fails = 0;
    const int splits[] = {0, 1, 3, MMAD_MAX_SPLIT};
    for (int sp : splits) {
        CK(cudaMemset(dout, 0xff, nq * 2)); // NaN: unwritten outputs fail
        int rc = cfg.fn(dq, dk, dv, dout, dpart, s.B, s.HQ, s.HKV, s.L, sp, st);
        cudaError_t e = cudaStreamSynchronize(st);
        if (rc || e != cudaSuccess) {
            printf("  %-9s B=%d HQ=%d HKV=%d L=%-6d split=%-3d FAIL launch %d / %s\n", cfg.name,
                   s.B, s.HQ, s.HKV, s.L, sp, rc, cudaGetErrorString(e));
            exit(2); // the context may be unusable
        }
        CK(cudaMemcpy(ho.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
        double maxerr = 0, worst = 0;
        for (size_t i = 0; i < nq; i++) {
            double got = bf2f(ho[i]), err = fabs(got - ref[i]);
            if (!std::isfinite(got)) err = INFINITY;
            maxerr = std::max(maxerr, err);
            worst = std::max(worst, err / (1e-2 + 1e-2 * fabs(ref[i])));
        }
        bool guards = canary_ok(dq, nq * 2) && canary_ok(dk, nk * 2) && canary_ok(dv, nk * 2) &&
                      canary_ok(dout, nq * 2) && canary_ok(dpart, part_bytes);
        bool ok = worst <= 1.0 && guards;
        fails += !ok;
        printf("  %-9s B=%d HQ=%d HKV=%d L=%-6d %s split=%-4s max|err| %.3e  err/tol %.3f%s  %s\n",
               cfg.name, s.B, s.HQ, s.HKV, s.L, outliers ? "outl" : "    ",
               sp ? std::to_string(sp).c_str() : "auto", maxerr, worst,
               guards ? "" : "  GUARD OVERWRITTEN", ok ? "PASS" : "FAIL");
        fflush(stdout);
    }
    CK(cudaStreamDestroy(st));
    CK(cudaFree(dq));
    CK(cudaFree(dk));
    CK(cudaFree(dv));
    CK(cudaFree(dout));
    CK(cudaFree(dpart));
    return fails;
}

// Median microseconds per call: a graph of calls over input sets rotated so
// that together they outsize the L2 (> 200 MB), replayed (as gqa_sweep.cu,
// without its cap of 64 sets, so small shapes are timed cold too).
static double timeit(const config &cfg, const shape &s, cudaStream_t st)
{
    const size_t nq = (size_t)s.B * s.HQ * HEAD_DIM, nk = (size_t)s.B * s.HKV * s.L * HEAD_DIM;
    const size_t set_bytes = (nq * 2 + nk * 2) * 2;
    const int nsets = (int)std::max<size_t>(2, (200u << 20) / set_bytes + 1); // > 200 MB
    std::vector<bf16_t *> d(4 * nsets);
    for (int i = 0; i < nsets; i++)
        for (int t = 0; t < 4; t++) {
            size_t n = t == 1 || t == 2 ? nk : nq;
            CK(cudaMalloc(&d[4 * i + t], n * 2));
            fill_kernel<<<1024, 256>>>(d[4 * i + t], n, 99 + 4 * i + t);
        }
    float *part;
    CK(cudaMalloc(&part, (size_t)s.B * s.HQ * MMAD_MAX_SPLIT * PART_STRIDE * sizeof(float)));
    CK(cudaDeviceSynchronize());
    auto call = [&](int i) {
        return cfg.fn(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3], part, s.B, s.HQ, s.HKV,
                      s.L, 0, st);
    };
    for (int i = 0; i < nsets; i++)
        if (call(i)) exit(2);
    CK(cudaStreamSynchronize(st));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nsets; i++)
        call(i);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int reps = std::max(1, 2000 / nsets);
    std::vector<double> t;
    for (int round = 0; round < 5; round++) {
        CK(cudaEventRecord(e0, st));
        for (int r = 0; r < reps; r++)
            CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1e3 / (reps * nsets));
    }
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    for (bf16_t *p : d)
        CK(cudaFree(p));
    CK(cudaFree(part));
    return t[2];
}

int main(int argc, char **argv)
{
    const bool sweep = argc > 1 && !strcmp(argv[1], "--sweep");
    const bool check_only = argc > 1 && !strcmp(argv[1], "--check");
    const int ncfg = sweep ? (int)(sizeof CONFIGS / sizeof CONFIGS[0]) : 1;
    const shape CHECKS[] = {{1, 16, 8, 1},     {3, 40, 8, 1000}, {2, 16, 8, 4099},
                            {1, 40, 8, 32768}, {1, 16, 8, 128},  {4, 16, 1, 77},
                            {2, 8, 8, 300},    {1, 24, 8, 515}}; // and G = 1, G = 3
    const shape OUTLIER_CHECKS[] = {{3, 40, 8, 1000}, {2, 16, 8, 4099}, {4, 16, 1, 77}};
    const shape TIMES[] = {{1, 16, 8, 128},   {1, 16, 8, 1024}, {1, 16, 8, 8192},
                           {1, 16, 8, 32768}, {8, 16, 8, 8192}, {32, 16, 8, 4096},
                           {1, 40, 8, 128},   {1, 40, 8, 1024}, {1, 40, 8, 8192},
                           {1, 40, 8, 32768}, {8, 40, 8, 8192}, {32, 40, 8, 4096}};
    int fails = 0;
    for (int c = 0; c < ncfg; c++) {
        printf("check %s (KW=%d STAGES=%d for default)\n", CONFIGS[c].name, MMAD_KW, MMAD_STAGES);
        unsigned long long seed = 1234;
        for (const shape &s : CHECKS)
            fails += check(CONFIGS[c], s, false, seed += 10);
        for (const shape &s : OUTLIER_CHECKS)
            fails += check(CONFIGS[c], s, true, seed += 10);
    }
    printf("%s: %d failure(s)\n", fails ? "FAIL" : "PASS", fails);
    if (check_only || fails) return fails ? 1 : 0;
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    for (int c = 0; c < ncfg; c++)
        for (const shape &s : TIMES) {
            double us = timeit(CONFIGS[c], s, st);
            double kv = 4.0 * s.B * s.HKV * s.L * HEAD_DIM; // bytes of k and v
            printf("%-9s decode_%dx%d_b%d_l%-6d %9.2f us  %7.0f GB/s(kv)\n", CONFIGS[c].name, s.HQ,
                   s.HKV, s.B, s.L, us, kv / us * 1e-3);
            fflush(stdout);
        }
    CK(cudaStreamDestroy(st));
    return 0;
}
