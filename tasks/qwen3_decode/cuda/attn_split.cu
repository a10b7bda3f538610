// qwen3_decode_attn's seed: the cache's rows split across every
// multiprocessor. Decode reads each k and v row once, so the floor is
// their bytes over the card's bandwidth; at batch 1 the 8 kv heads alone
// cannot fill 132 multiprocessors, so each (sequence, kv head, tile of
// query rows) is split into chunks of rows (from the cache's length and
// the occupancy, not from the device's lengths: one grid serves every
// step of a captured graph; a chunk past a sequence's written rows ends at
// once), and the last block of a group to finish merges their partials.
//
// A block of WARPS warps takes one chunk for ROWS query rows (the G q
// heads of a kv head times the new tokens, token-major), q in shared
// memory as fp32. A warp takes 32 rows of the cache at a time, a row a
// lane: the lane reads its k row whole (16-byte loads, through L1 so the
// other half of each sector is a hit) and dots it with every query row (q
// read from shared memory as a broadcast); the warp's 32 scores per query
// row update its online softmax at once; then the warp reads the 32 v
// rows together (8 bytes a lane: one whole row an instruction) and each
// lane adds p v into its 4 of the 128 dimensions. Head sizes other than
// 128 go to attn_generic.cuh. Axes, each value a correct kernel:
//   WARPS     warps per block
//   ROWS      query rows a block takes (more rows: each k and v row read
//             once for more heads; fewer: fewer registers)
//   SPLIT     chunks per group; 0: enough to fill the resident block slots
//             WAVES times over
//   WAVES     how many times SPLIT 0 fills the resident slots
//   MIN_KEYS  rows a chunk holds at the least (short contexts: fewer
//             chunks, less merging)
//   PDL       1: programmatic dependent launch (decode_gemv.cuh), the
//             launch overlapping the end of the kernel before it
#include <kevolve/task.h>
#include <qwen3_decode/cuda/attn_generic.cuh>
#include <qwen3_decode/cuda/decode_gemv.cuh>

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

// EVOLVE-BLOCK-START
#define WARPS 4       // kevolve: tune 2 4 8
#define ROWS 4        // kevolve: tune 1 2 4 8
#define SPLIT 0       // kevolve: tune 0 4 8 16 32 64 128
#define WAVES 2       // kevolve: tune 1 2 3 4
#define MIN_KEYS 256  // kevolve: tune 64 128 256 512 1024
#define PDL 0         // kevolve: tune 0 1

namespace qa {

constexpr int D = 128;
constexpr int PART = D + 2; // a partial: D sums, max (log2 units), sum of exp2
constexpr int MAX_SPLIT = 256;
constexpr long long SCRATCH_FLOATS = 16ll << 20; // 64 MB of partials
constexpr int MAX_GROUPS = 1 << 14;
constexpr float LOG2E = 1.4426950408889634f;

__device__ __align__(16) float scratch[SCRATCH_FLOATS];
// Chunks finished so far per group in this launch; the last resets it.
__device__ unsigned done[MAX_GROUPS];

__device__ __forceinline__ float wexp2(float a, float m) { return m == -INFINITY ? 0.0f : exp2f(a - m); }

struct args {
    const unsigned short *q, *k, *v;
    const int *free_rows;
    unsigned short *o;
    float *part;
    unsigned *done;
    int q_len, hq, hkv, tiles, split, chunk;
    long long len;
};

template <int W, int R>
__global__ void __launch_bounds__(W * 32) split_attn(args a)
{
    constexpr int NT = W * 32;
    __shared__ __align__(16) float qs[R][D];
    __shared__ float wm[W][R], wl[W][R];
    __shared__ __align__(16) float wacc[W][R][D];
    __shared__ int last;
    qd::pdl_release(); // nothing here is read before the kernel before it is done
    qd::pdl_wait();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int sp = blockIdx.x, b = blockIdx.z, kvh = blockIdx.y / a.tiles, tile = blockIdx.y % a.tiles;
    const int g = a.hq / a.hkv, rows_all = g * a.q_len, r0 = tile * R;
    const int nr = min(R, rows_all - r0);
    const long long first = a.len - a.free_rows[b] - a.q_len, n_all = first + a.q_len;
    const long long j0 = (long long)sp * a.chunk, j1 = min(n_all, j0 + a.chunk);
    const float sl2 = rsqrtf((float)D) * LOG2E; // scores in log2 units

    // Query row r of the tile: token (r0 + r) / g, head kvh * g + (r0 + r) % g.
    for (int i = tid; i < R * D; i += NT) {
        const int r = i / D, c = i % D, rr = r0 + r;
        float val = 0.0f;
        if (r < nr) {
            const long long qi = (((long long)b * a.q_len + rr / g) * a.hq + kvh * g + rr % g) * D + c;
            val = __uint_as_float((unsigned)a.q[qi] << 16) * sl2;
        }
        qs[r][c] = val;
    }
    __syncthreads();
    long long lim[R]; // rows 0 .. lim - 1 are row r's
#pragma unroll
    for (int r = 0; r < R; r++)
        lim[r] = r < nr ? first + (r0 + r) / g + 1 : 0;

    const unsigned short *kg = a.k + ((long long)b * a.hkv + kvh) * a.len * D;
    const unsigned short *vg = a.v + ((long long)b * a.hkv + kvh) * a.len * D;
    float m[R], l[R], acc[R][4];
#pragma unroll
    for (int r = 0; r < R; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++)
            acc[r][e] = 0.0f;
    }
    for (long long g0 = j0 + (long long)warp * 32; g0 < j1; g0 += W * 32) {
        const long long j = g0 + lane;
        const bool valid = j < j1;
        const uint4 *kr = reinterpret_cast<const uint4 *>(kg + (valid ? j : g0) * D);
        float s[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            s[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < D / 8; c++) {
            float kf[8];
            qd::unpack8(__ldg(kr + c), kf);
#pragma unroll
            for (int r = 0; r < R; r++) {
                const float4 qa4 = *reinterpret_cast<const float4 *>(&qs[r][c * 8]);
                const float4 qb4 = *reinterpret_cast<const float4 *>(&qs[r][c * 8 + 4]);
                s[r] = fmaf(kf[0], qa4.x, s[r]);
                s[r] = fmaf(kf[1], qa4.y, s[r]);
                s[r] = fmaf(kf[2], qa4.z, s[r]);
                s[r] = fmaf(kf[3], qa4.w, s[r]);
                s[r] = fmaf(kf[4], qb4.x, s[r]);
                s[r] = fmaf(kf[5], qb4.y, s[r]);
                s[r] = fmaf(kf[6], qb4.z, s[r]);
                s[r] = fmaf(kf[7], qb4.w, s[r]);
            }
        }
        float p[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (!valid || j >= lim[r]) s[r] = -INFINITY;
            float gm = s[r];
#pragma unroll
            for (int off = 16; off; off >>= 1)
                gm = fmaxf(gm, __shfl_xor_sync(0xffffffffu, gm, off));
            const float mn = fmaxf(m[r], gm);
            const float alpha = mn == -INFINITY ? 1.0f : wexp2(m[r], mn);
            p[r] = wexp2(s[r], mn);
            l[r] = l[r] * alpha + p[r];
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[r][e] *= alpha;
            m[r] = mn;
        }
        const int nv = (int)min(32ll, j1 - g0); // warp-uniform
        const uint2 *vr = reinterpret_cast<const uint2 *>(vg + g0 * D) + lane;
#pragma unroll 8
        for (int jj = 0; jj < nv; jj++) {
            const uint2 w = __ldcs(vr + jj * (D / 4));
            const float v0 = __uint_as_float(w.x << 16), v1 = __uint_as_float(w.x & 0xffff0000u);
            const float v2 = __uint_as_float(w.y << 16), v3 = __uint_as_float(w.y & 0xffff0000u);
#pragma unroll
            for (int r = 0; r < R; r++) {
                const float pj = __shfl_sync(0xffffffffu, p[r], jj);
                acc[r][0] = fmaf(pj, v0, acc[r][0]);
                acc[r][1] = fmaf(pj, v1, acc[r][1]);
                acc[r][2] = fmaf(pj, v2, acc[r][2]);
                acc[r][3] = fmaf(pj, v3, acc[r][3]);
            }
        }
    }
    // The block's warps merged: each stages its rows, then thread (row,
    // column) combines them.
#pragma unroll
    for (int r = 0; r < R; r++) {
        float ls = l[r];
#pragma unroll
        for (int off = 16; off; off >>= 1)
            ls += __shfl_xor_sync(0xffffffffu, ls, off);
        if (lane == 0) {
            wm[warp][r] = m[r];
            wl[warp][r] = ls;
        }
        *reinterpret_cast<float4 *>(&wacc[warp][r][4 * lane]) =
            make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    }
    __syncthreads();
    const long long group = ((long long)b * a.hkv + kvh) * a.tiles + tile;
    for (int i = tid; i < nr * D; i += NT) {
        const int r = i / D, c = i % D;
        float M = -INFINITY, S = 0.0f, A = 0.0f;
#pragma unroll
        for (int w = 0; w < W; w++)
            M = fmaxf(M, wm[w][r]);
#pragma unroll
        for (int w = 0; w < W; w++) {
            const float wt = wexp2(wm[w][r], M);
            S += wl[w][r] * wt;
            A += wacc[w][r][c] * wt;
        }
        if (a.split == 1) {
            const int rr = r0 + r;
            const long long oi = (((long long)b * a.q_len + rr / g) * a.hq + kvh * g + rr % g) * D + c;
            a.o[oi] = __bfloat16_as_ushort(__float2bfloat16(A / S));
        } else {
            float *pp = a.part + ((group * a.split + sp) * R + r) * PART;
            pp[c] = A;
            if (c == 0) {
                pp[D] = M;
                pp[D + 1] = S;
            }
        }
    }
    if (a.split == 1) return;
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        const int is_last = atomicAdd(a.done + group, 1u) == (unsigned)a.split - 1;
        if (is_last) a.done[group] = 0;
        last = is_last;
    }
    __syncthreads();
    if (!last) return;
    __threadfence(); // the other blocks' partials are visible
    for (int i = tid; i < nr * D; i += NT) {
        const int r = i / D, c = i % D;
        const float *pr = a.part + (group * a.split * R + r) * PART;
        float M = -INFINITY, S = 0.0f, A = 0.0f;
        for (int s2 = 0; s2 < a.split; s2++)
            M = fmaxf(M, __ldcg(pr + (long long)s2 * R * PART + D));
        for (int s2 = 0; s2 < a.split; s2++) {
            const float *q2 = pr + (long long)s2 * R * PART;
            const float wt = wexp2(__ldcg(q2 + D), M);
            S += __ldcg(q2 + D + 1) * wt;
            A += __ldcg(q2 + c) * wt;
        }
        const int rr = r0 + r;
        const long long oi = (((long long)b * a.q_len + rr / g) * a.hq + kvh * g + rr % g) * D + c;
        a.o[oi] = __bfloat16_as_ushort(__float2bfloat16(A / S));
    }
}

static int sm_count(void)
{
    static int n;
    int dev = 0;
    if (!n && (cudaGetDevice(&dev) != cudaSuccess ||
               cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess))
        n = 1;
    return n;
}

static int launch(const kv_launch_args *k)
{
    constexpr int W = WARPS, R = ROWS;
    args a;
    a.q = (const unsigned short *)k->tensors[0];
    a.k = (const unsigned short *)k->tensors[1];
    a.v = (const unsigned short *)k->tensors[2];
    a.free_rows = (const int *)k->tensors[3];
    a.o = (unsigned short *)k->tensors[4];
    const long long b_n = k->syms[0];
    a.q_len = (int)k->syms[1];
    a.hq = (int)k->syms[2];
    a.hkv = (int)k->syms[3];
    a.len = k->syms[5];
    if (k->syms[4] != D || a.hkv < 1 || a.hq % a.hkv) return qd_attn::launch_generic(k, 256);
    const int rows_all = a.hq / a.hkv * a.q_len;
    a.tiles = (rows_all + R - 1) / R;
    const long long groups = b_n * a.hkv * a.tiles;
    if (groups > MAX_GROUPS) return qd_attn::launch_generic(k, 256);
    static float *part;
    static unsigned *cnt;
    static int bps; // resident blocks per multiprocessor
    if (!part && cudaGetSymbolAddress((void **)&part, scratch) != cudaSuccess) return (int)cudaErrorInvalidSymbol;
    if (!cnt && cudaGetSymbolAddress((void **)&cnt, done) != cudaSuccess) return (int)cudaErrorInvalidSymbol;
    if (!bps) {
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, split_attn<W, R>, W * 32, 0);
        if (e != cudaSuccess) return (int)e;
        if (bps < 1) return (int)cudaErrorInvalidConfiguration;
    }
    long long split = SPLIT ? SPLIT : WAVES * (long long)sm_count() * bps / groups;
    const long long most = (a.len + MIN_KEYS - 1) / MIN_KEYS;
    if (split > most) split = most;
    if (split > MAX_SPLIT) split = MAX_SPLIT;
    while (split > 1 && groups * split * R * PART > SCRATCH_FLOATS) split /= 2;
    if (split < 1) split = 1;
    long long chunk = (a.len + split - 1) / split;
    chunk = (chunk + 31) / 32 * 32;     // whole groups of 32 rows
    split = (a.len + chunk - 1) / chunk; // no chunk past the cache
    a.chunk = (int)chunk;
    a.split = (int)split;
    a.part = part;
    a.done = cnt;
    dim3 grid((unsigned)split, (unsigned)(a.hkv * a.tiles), (unsigned)b_n);
    qd::launch_cfg c(grid, dim3(W * 32), 0, (cudaStream_t)k->stream, PDL);
    return (int)cudaLaunchKernelEx(&c.cfg, split_attn<W, R>, a);
}

} // namespace qa

extern "C" int kv_launch(const kv_launch_args *a)
{
    return qa::launch(a);
}
// EVOLVE-BLOCK-END
