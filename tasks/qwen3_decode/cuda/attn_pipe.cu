// qwen3_decode_attn's pipelined tensor-core seed: attn_mma.cu's maths
// (a tile of 8 query rows as the mma's columns, 16 cache rows a group, each
// query row's own causal end, the same split of the rows and merge by the
// last block of a group), but K and V stream through shared memory: every
// thread of the block issues 16-byte asynchronous copies (cp.async, no
// registers held) of the next STAGES - 1 tiles while its warp folds the
// current one, so a block keeps (STAGES - 1) x 16 x WARPS rows of K and V
// in flight whatever the folds cost, where attn_mma's warps wait out each
// load before they fold. A tile is 16 rows a warp; a row's 16-byte pieces
// sit XOR-swizzled by its row (swz), so that the fragment reads of both
// operands (K: two rows a lane quad, V: four rows a piece pair) fall in
// distinct banks. Rows at or past the chunk's end are copied as zeros (no
// read: they may hold nothing yet). Head sizes other than 128 go to
// attn_generic.cuh. Axes, each value a correct kernel:
//   WARPS       warps per block (a tile is 16 rows a warp)
//   STAGES      tiles in the ring (at most what 200 KB of shared memory
//               holds: the rest of the value is ignored)
//   MIN_GROUPS  tiles a chunk holds at the least (short contexts: fewer
//               chunks, less merging)
//   SPLIT       chunks per group of rows; 0: enough to fill the resident
//               block slots WAVES times over
//   WAVES       how many times SPLIT 0 fills the resident slots
//   PDL         1: programmatic dependent launch (decode_gemv.cuh), the
//               launch overlapping the end of the kernel before it
#include <kevolve/task.h>
#include <gqa_attention/cuda/gqa_common.cuh>
#include <qwen3_decode/cuda/attn_frag.cuh>
#include <qwen3_decode/cuda/attn_generic.cuh>
#include <qwen3_decode/cuda/decode_gemv.cuh>

// EVOLVE-BLOCK-START
#define WARPS 4      // kevolve: tune 2 4 8
#define STAGES 3     // kevolve: tune 2 3 4 6
#define MIN_GROUPS 2 // kevolve: tune 1 2 4 8
#define SPLIT 0      // kevolve: tune 0 4 8 16 32 64 128
#define WAVES 1      // kevolve: tune 1 2 3 4
#define PDL 0        // kevolve: tune 0 1

namespace qp {

using namespace qd_frag;
constexpr int PART = GQA_PART, MAX_SPLIT = 256, PIECES = D / 8;
constexpr int ROW_BYTES = D * 2;
// The ring's stages: STAGES, fewer where WARPS x 16 rows of K and V a
// stage would take more than 200 KB.
__host__ __device__ constexpr int stages_for(int w)
{
    return STAGES * w * 16 * 2 * ROW_BYTES <= 200 * 1024 ? STAGES : 200 * 1024 / (w * 16 * 2 * ROW_BYTES);
}

struct args {
    const bf16_t *q, *k, *v;
    const int *free_rows;
    bf16_t *o;
    float *part;
    unsigned *done;
    int q_len, hq, hkv, g, tiles, split, chunk, len;
};

// Where piece P of row R of a tile sits: the low three bits of P XOR a
// function of R's low three bits, so that the K reads (rows g, g + 1 of a
// lane quad, pieces 4kq + t) and the V reads (rows 2t, 2t + 2, ..., pieces
// g, g + 1) of 8 lanes touch 8 distinct 16-byte bank groups.
__device__ __forceinline__ int swz(int r, int p)
{
    return r * PIECES + (p ^ (((r & 1) << 2) ^ (((r >> 1) & 3) << 1)));
}

__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool ok)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(ok ? 16 : 0)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// The block's copies of tile rows BASE .. BASE + KT - 1 of K and V into
// slot S (K then V, KT rows of PIECES pieces each); rows at or past J1
// become zeros.
template <int NT, int KT>
__device__ __forceinline__ void issue_tile(uint4 *slot, const bf16_t *kg, const bf16_t *vg, int base,
                                           int j1)
{
    constexpr int PER = KT * PIECES; // pieces of one operand
#pragma unroll
    for (int u = 0; u < 2 * PER / NT; u++) {
        const int i = threadIdx.x + u * NT, which = i / PER, r = (i % PER) / PIECES, p = i % PIECES;
        const int key = base + r;
        const bf16_t *src = (which ? vg : kg) + (long long)(key < j1 ? key : 0) * D + p * 8;
        cp_async16(slot + which * PER + swz(r, p), src, key < j1);
    }
}

// Lane (g, t)'s fragments of the 16 rows at tile row R0 (a multiple of
// 16) of slot S, as attn_mma's load_group reads them from global memory.
template <int KT> __device__ __forceinline__ void read_group(keys16 &G_, const uint4 *slot, int r0, int g, int t)
{
    const uint4 *ks = slot, *vs = slot + KT * PIECES;
#pragma unroll
    for (int kq = 0; kq < 4; kq++) {
        G_.ka[kq] = ks[swz(r0 + g, 4 * kq + t)];
        G_.kb[kq] = ks[swz(r0 + g + 8, 4 * kq + t)];
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int key = r0 + 2 * t + (i & 1) + ((i >> 2) << 3), piece = g + ((i >> 1) & 1) * 8;
        G_.v[i] = vs[swz(key, piece)];
    }
}

template <int W> __global__ void __launch_bounds__(W * 32) pipe_attn(args a)
{
    constexpr int NT = W * 32, KT = 16 * W, S = stages_for(W), SLOT = 2 * KT * PIECES;
    extern __shared__ __align__(16) uint4 ring[];
    __shared__ int sm_last;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int sp = blockIdx.x, b = blockIdx.z, kvh = blockIdx.y / a.tiles,
              tile = blockIdx.y % a.tiles;
    const int nr = min(COLS, a.g * a.q_len - tile * COLS); // rows of this tile
    const int j0 = sp * a.chunk;
    const bf16_t *kg = a.k + ((long long)b * a.hkv + kvh) * a.len * D;
    const bf16_t *vg = a.v + ((long long)b * a.hkv + kvh) * a.len * D;
    qd::pdl_release(); // nothing here is read before the kernel before it is done
    qd::pdl_wait();
    const int first = a.len - a.free_rows[b] - a.q_len; // the row of the step's token 0
    const int j1 = min(first + a.q_len, j0 + a.chunk);
    const int ntiles = j1 > j0 ? (j1 - j0 + KT - 1) / KT : 0;
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < ntiles) issue_tile<NT, KT>(ring + s * SLOT, kg, vg, j0 + s * KT, j1);
        cp_async_commit();
    }
    const float sl2 = rsqrtf((float)D) * GQA_LOG2E; // scores in log2 units

    uint4 qb[4];
    load_qt(qb, a, b, kvh, tile, nr, g, t);
    int end[2];
    causal_ends(end, a, first, j1, tile, nr, t);
    float oacc[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    clear_acc(oacc);

    // Tile IT in slot IT % S: its copies waited for, then the slot the
    // last tile used (every warp has folded it: the barrier) refilled.
    for (int it = 0; it < ntiles; it++) {
        cp_async_wait<S - 2>();
        __syncthreads();
        const int nx = it + S - 1;
        if (nx < ntiles) issue_tile<NT, KT>(ring + (nx % S) * SLOT, kg, vg, j0 + nx * KT, j1);
        cp_async_commit();
        const int base = j0 + it * KT + warp * 16;
        if (base < j1) {
            keys16 grp;
            read_group<KT>(grp, ring + (it % S) * SLOT, warp * 16, g, t);
            fold_group(grp, qb, base, end, g, sl2, m, l, oacc);
        }
    }
    cp_async_wait<0>();
    __syncthreads(); // the ring is free: the merge's staging goes there

    float(*sm_o)[COLS][D] = reinterpret_cast<float(*)[COLS][D]>(ring);
    float(*sm_ml)[COLS][2] = reinterpret_cast<float(*)[COLS][2]>(&sm_o[W][0][0]);
    float *sm_w = &sm_ml[W][0][0];
    stage_warp(sm_o, sm_ml, warp, g, t, oacc, m, l);
    __syncthreads();
    const long long group = ((long long)b * a.hkv + kvh) * a.tiles + tile;
    for (int i = tid; i < nr * D; i += NT) {
        const int col = i / D, c = i % D;
        float M, Ssum, A;
        merge_warps<W>(sm_o, sm_ml, col, c, M, Ssum, A);
        if (a.split == 1) {
            a.o[row_of(a, b, kvh, tile, col) * D + c] = gqa_bf16(A / Ssum);
        } else {
            put_part(a.part, group, col, a.split, sp, c, A, M, Ssum);
        }
    }
    if (a.split == 1) return;
    if (gqa_last_block<NT>(a.done + group, a.split, &sm_last))
        gqa_merge_rows_to<NT>(a.part, [&](int col) { return a.o + row_of(a, b, kvh, tile, col) * D; },
                              group * COLS, nr, a.split, sm_w);
}

// The ring's bytes (also what the merge stages there: it fits).
__host__ __device__ constexpr size_t ring_bytes(int w)
{
    return (size_t)stages_for(w) * 2 * 16 * w * ROW_BYTES;
}
static_assert(ring_bytes(WARPS) >= sizeof(float) * (WARPS * COLS * (D + 2) + COLS * MAX_SPLIT),
              "the merge's staging fits in the ring");

static int launch(const kv_launch_args *k)
{
    constexpr int W = WARPS;
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
    if (k->syms[4] != D || a.hkv < 1 || a.hq % a.hkv || k->syms[5] > (1 << 24))
        return qd_attn::launch_generic(k, 256);
    a.len = (int)k->syms[5];
    a.g = a.hq / a.hkv;
    a.tiles = (a.g * a.q_len + COLS - 1) / COLS;
    const long long groups = b_n * a.hkv * a.tiles;
    if (groups > GQA_MAX_COUNTERS) return qd_attn::launch_generic(k, 256);
    a.part = gqa_scratch_ptr();
    a.done = gqa_done_ptr();
    if (!a.part || !a.done) return (int)cudaErrorInvalidSymbol;
    constexpr size_t smem = ring_bytes(W);
    static int bps; // resident blocks per multiprocessor
    if (!bps) {
        cudaError_t e = cudaFuncSetAttribute(pipe_attn<W>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)smem);
        if (e != cudaSuccess) return (int)e;
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, pipe_attn<W>, W * 32, smem);
        if (e != cudaSuccess) return (int)e;
        if (bps < 1) return (int)cudaErrorInvalidConfiguration;
    }
    long long split = SPLIT ? SPLIT : WAVES * (long long)gqa_sm_count() * bps / groups;
    const long long min_keys = (long long)MIN_GROUPS * W * 16;
    if (split > (a.len + min_keys - 1) / min_keys) split = (a.len + min_keys - 1) / min_keys;
    if (split > MAX_SPLIT) split = MAX_SPLIT;
    while (split > 1 && groups * split * COLS * PART > GQA_SCRATCH_FLOATS)
        split /= 2;
    if (split < 1) split = 1;
    long long chunk = (a.len + split - 1) / split;
    chunk = (chunk + 15) / 16 * 16;      // whole groups
    split = (a.len + chunk - 1) / chunk; // no chunk past the cache
    a.chunk = (int)chunk;
    a.split = (int)split;
    dim3 grid((unsigned)split, (unsigned)(a.hkv * a.tiles), (unsigned)b_n);
    qd::launch_cfg c(grid, dim3(W * 32), smem, (cudaStream_t)k->stream, PDL);
    return (int)cudaLaunchKernelEx(&c.cfg, pipe_attn<W>, a);
}

} // namespace qp

extern "C" int kv_launch(const kv_launch_args *a)
{
    return qp::launch(a);
}
// EVOLVE-BLOCK-END
