// qwen3_decode_attn's tensor-core seed: gqa_attention's decode_split.cu
// design (K and V straight from global memory into mma fragments, no
// shared memory and no barrier in the loop) over Qwen3's static cache. The
// floor is the cache's rows read once; at batch 1 the 8 kv heads cannot
// fill the multiprocessors, so each (sequence, kv head, tile of 8 query
// rows) is split into chunks of rows picked from the cache's length and the
// occupancy (one grid serves every step of a captured graph; a chunk past
// a sequence's written rows ends at once), and the last block of a group to
// finish merges the partials.
//
// A tile's 8 query rows are the mma's 8 columns (the G q heads of a kv
// head times the new tokens, token-major): S^T[16 keys x 8 rows] = K Q^T
// and O^T[128 dims x 8 rows] += V^T P^T (m16n8k16, fp32 accumulators).
// Each row has its own causal end (token i of the step sees rows 0 .. p +
// i), so a column's scores past its end are -inf and a column may see no
// key of a group. Lane (g, t) keeps the online softmax of rows 2t and
// 2t+1 (the loads and the fold in attn_frag.cuh, shared with
// attn_cluster.cu). Head sizes other than 128 go to attn_generic.cuh. Axes, each value
// a correct kernel:
//   WARPS       warps per block
//   GROUPS      16-key groups a warp loads before using any (memory
//               parallelism against registers)
//   MIN_GROUPS  groups per warp a chunk holds at the least (short
//               contexts: fewer chunks, less merging)
//   SPLIT       chunks per group of rows; 0: enough to fill the resident
//               block slots WAVES times over
//   WAVES       how many times SPLIT 0 fills the resident slots
//   PDL         1: programmatic dependent launch (decode_gemv.cuh), the
//               launch overlapping the end of the kernel before it
//   PREFETCH    1: before waiting for the kernel before it, each warp asks
//               L2 for the cache rows of its first groups (no value read)
#include <kevolve/task.h>
#include <gqa_attention/cuda/gqa_common.cuh>
#include <qwen3_decode/cuda/attn_frag.cuh>
#include <qwen3_decode/cuda/attn_generic.cuh>
#include <qwen3_decode/cuda/decode_gemv.cuh>

// EVOLVE-BLOCK-START
#define WARPS 4      // kevolve: tune 2 4 8
#define GROUPS 2     // kevolve: tune 1 2 3 4
#define MIN_GROUPS 2 // kevolve: tune 1 2 4 8
#define SPLIT 0      // kevolve: tune 0 4 8 16 32 64 128
#define WAVES 1      // kevolve: tune 1 2 3 4
#define PDL 0        // kevolve: tune 0 1
#define PREFETCH 0   // kevolve: tune 0 1

namespace qm
{

using namespace qd_frag;
constexpr int PART = GQA_PART, MAX_SPLIT = 256;

struct args {
    const bf16_t *q, *k, *v;
    const int *free_rows;
    bf16_t *o;
    float *part;
    unsigned *done;
    int q_len, hq, hkv, g, tiles, split, chunk, len;
};

template <int W, int KPI> __global__ void __launch_bounds__(W * 32) mma_attn(args a)
{
    constexpr int NT = W * 32;
    __shared__ float sm_o[W][COLS][D];
    __shared__ float sm_ml[W][COLS][2];
    __shared__ float sm_w[COLS * MAX_SPLIT];
    __shared__ int sm_last;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int sp = blockIdx.x, b = blockIdx.z, kvh = blockIdx.y / a.tiles,
              tile = blockIdx.y % a.tiles;
    const int nr = min(COLS, a.g * a.q_len - tile * COLS); // rows of this tile
    const int j0 = sp * a.chunk;
    const bf16_t *kg = a.k + ((long long)b * a.hkv + kvh) * a.len * D;
    const bf16_t *vg = a.v + ((long long)b * a.hkv + kvh) * a.len * D;
    if (PREFETCH &&
        lane == 0) { // the first groups' rows, which lie in the cache whatever is written
        const int r0 = j0 + warp * KPI * 16, n = min(KPI * 16, a.len - r0);
        if (n > 0) {
            qd::prefetch_l2(kg + (long long)r0 * D, (int64_t)n * D * 2);
            qd::prefetch_l2(vg + (long long)r0 * D, (int64_t)n * D * 2);
        }
    }
    qd::pdl_release(); // nothing here is read before the kernel before it is done
    qd::pdl_wait();
    const int first = a.len - a.free_rows[b] - a.q_len; // the row of the step's token 0
    const int j1 = min(first + a.q_len, j0 + a.chunk);
    const float sl2 = rsqrtf((float)D) * GQA_LOG2E; // scores in log2 units

    uint4 qb[4];
    load_qt(qb, a, b, kvh, tile, nr, g, t);
    int end[2];
    causal_ends(end, a, first, j1, tile, nr, t);
    float oacc[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    clear_acc(oacc);

    // Warp w takes groups (it*W + w)*KPI .. +KPI-1 of the chunk.
    for (int f0 = j0 + warp * KPI * 16; f0 < j1; f0 += W * KPI * 16) {
        keys16 grp[KPI];
#pragma unroll
        for (int u = 0; u < KPI; u++)
            if (f0 + u * 16 < j1) load_group(grp[u], kg, vg, f0 + u * 16, j1, g, t);
#pragma unroll
        for (int u = 0; u < KPI; u++)
            if (f0 + u * 16 < j1) fold_group(grp[u], qb, f0 + u * 16, end, g, sl2, m, l, oacc);
    }

    // Merge the block's warps: each stages its rows, then thread (row,
    // column) combines them.
    stage_warp(sm_o, sm_ml, warp, g, t, oacc, m, l);
    __syncthreads();
    const long long group = ((long long)b * a.hkv + kvh) * a.tiles + tile;
    for (int i = tid; i < nr * D; i += NT) {
        const int col = i / D, c = i % D;
        float M, S, A;
        merge_warps<W>(sm_o, sm_ml, col, c, M, S, A);
        if (a.split == 1) {
            a.o[row_of(a, b, kvh, tile, col) * D + c] = gqa_bf16(A / S);
        } else {
            put_part(a.part, group, col, a.split, sp, c, A, M, S);
        }
    }
    if (a.split == 1) return;
    if (gqa_last_block<NT>(a.done + group, a.split, &sm_last))
        gqa_merge_rows_to<NT>(
            a.part, [&](int col) { return a.o + row_of(a, b, kvh, tile, col) * D; }, group * COLS,
            nr, a.split, sm_w);
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
    static int bps; // resident blocks per multiprocessor
    if (!bps) {
        cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, mma_attn<W, KPI>, W * 32, 0);
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
    qd::launch_cfg c(grid, dim3(W * 32), 0, (cudaStream_t)k->stream, PDL);
    return (int)cudaLaunchKernelEx(&c.cfg, mma_attn<W, KPI>, a);
}

} // namespace qm

extern "C" int kv_launch(const kv_launch_args *a)
{
    return qm::launch(a);
}
// EVOLVE-BLOCK-END
