// A grid-wide barrier for the qwen3_decode seeds' one-kernel paths (the MLP
// seed's GRID axis, post_grid.cu): stages of a block that need every
// block's output of the stage before (the down projection needs all of
// act) run in one kernel, with a barrier instead of a kernel boundary (a
// launch, a ramp and a wait on the edge before it). On an H100 the barrier
// cost more than the boundary it replaced, with programmatic dependent
// launch (2026-12-08, bench/NOTES.md "qwen3-decode-grid"; bench/
// grid_barrier.cu measures it alone).
//
// Every block of the grid must be resident at once, or the barrier never
// opens: grid_blocks gives the most a kernel may launch (the card's
// multiprocessors times the blocks of this kernel each holds). With
// programmatic dependent launch that still holds: the kernel before
// finishes on its own, and the kernel after is launched only once every
// block of this one has released it (pdl_release), so is resident.
//
// The barrier's state lives in device memory, one slot per stream that
// launches such a kernel (grid_slot), so that grids on two streams never
// share a counter; a grid leaves its slot as it found it (the last block
// to arrive resets the count and advances the generation). Two such grids
// running at once on two streams could each hold part of the card and
// wait for the rest: launch them on one stream, as a model's step does.
#ifndef QWEN3_DECODE_GRID_CUH
#define QWEN3_DECODE_GRID_CUH

#include <mutex>

#include <qwen3_decode/cuda/decode_proj.cuh>

namespace qd
{

struct grid_bar {
    unsigned count, gen;
};

constexpr int GRID_SLOTS = 64;
__device__ grid_bar grid_bars[GRID_SLOTS];

// Waits until every block of the grid has arrived; what any block wrote
// before it is visible to every block after it.
__device__ __forceinline__ void grid_sync(grid_bar *bar)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned gen;
        asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(gen) : "l"(&bar->gen) : "memory");
        __threadfence(); // this block's writes before its arrival
        if (atomicAdd(&bar->count, 1u) == gridDim.x - 1) {
            bar->count = 0;
            __threadfence();
            asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(&bar->gen), "r"(gen + 1) : "memory");
        } else {
            unsigned now;
            do {
                asm volatile("ld.acquire.gpu.u32 %0, [%1];"
                             : "=r"(now)
                             : "l"(&bar->gen)
                             : "memory");
            } while (now == gen);
        }
        __threadfence();
    }
    __syncthreads();
}

// The device slot of stream S (one per stream that ever asked; NULL when
// GRID_SLOTS streams already hold one).
inline grid_bar *grid_slot(cudaStream_t s)
{
    static std::mutex lock;
    static cudaStream_t owner[GRID_SLOTS];
    static grid_bar *slot[GRID_SLOTS]; // on the stream's device, looked up once
    static int used;
    std::lock_guard<std::mutex> hold(lock);
    int i = 0;
    while (i < used && owner[i] != s)
        i++;
    if (i < used) return slot[i];
    if (i == GRID_SLOTS) return nullptr;
    grid_bar *base = nullptr;
    if (cudaGetSymbolAddress((void **)&base, grid_bars) != cudaSuccess) return nullptr;
    owner[used] = s;
    slot[used++] = base + i;
    return base + i;
}

// The most blocks of KERNEL (THREADS threads, SMEM bytes of dynamic shared
// memory) that the current device holds at once, no more than PER_SM_CAP a
// multiprocessor when it is above 0; 0 on an error.
template <typename K> inline int grid_blocks(K kernel, int threads, size_t smem, int per_sm_cap = 0)
{
    int dev = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) !=
            cudaSuccess)
        return 0;
    return sms * (per_sm_cap > 0 && per_sm_cap < per_sm ? per_sm_cap : per_sm);
}

// The blocks a grid launches: WANT (at least 1), no more than MOST.
inline unsigned grid_size(int64_t want, int most)
{
    return (unsigned)(want < most ? (want > 0 ? want : 1) : most);
}

// Groups of PER that cover N.
__host__ __device__ constexpr int64_t groups_of(int64_t n, int64_t per)
{
    return (n + per - 1) / per;
}

// The contiguous share [LO, HI) of N rows that this block takes: every
// stage of a grid shares its rows alike, so a block's rows of one stage
// over N are its rows of another over N.
__device__ __forceinline__ void block_share(int64_t n, int64_t &lo, int64_t &hi)
{
    const int64_t per = (n + gridDim.x - 1) / gridDim.x;
    lo = min(n, (int64_t)blockIdx.x * per);
    hi = min(n, lo + per);
}

// act = silu(g) * u from the gate and up sums, rounded as PyTorch's bf16
// Qwen3MLP: g, u, silu(g) and the product.
__device__ __forceinline__ bf16 swiglu(float gate_sum, float up_sum)
{
    const float g = rnd(gate_sum), u = rnd(up_sum);
    return to_bf16(rnd(__fdividef(g, 1.0f + __expf(-g))) * u);
}

// Rows [LO, HI) of act ([t_n, inter]) from the T_N normalised tokens H
// (shared memory, HID values each): a warp takes NR gate rows with their
// NR up rows at a time. VEC: HID % 8 == 0 and the weights 16-byte aligned.
template <int NR, int TP, int UNROLL, int WARPS>
__device__ __forceinline__ void gate_up_rows(const bf16 *h, const bf16 *wg, const bf16 *wu,
                                             bf16 *act, int t_n, int64_t hid, int64_t inter,
                                             int64_t lo, int64_t hi, bool vec)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int64_t j0 = lo + warp * NR; j0 < hi; j0 += WARPS * NR) {
        const bf16 *rows[2 * NR];
#pragma unroll
        for (int r = 0; r < NR; r++) {
            rows[r] = j0 + r < hi ? wg + (j0 + r) * hid : nullptr;
            rows[NR + r] = j0 + r < hi ? wu + (j0 + r) * hid : nullptr;
        }
        for (int t0 = 0; t0 < t_n; t0 += TP) {
            const int tn = min(TP, t_n - t0);
            float acc[2 * NR][TP];
            dot_rows<2 * NR, TP, UNROLL>(rows, hid, h + t0 * hid, hid, tn, 0, 1, vec, acc);
#pragma unroll
            for (int r = 0; r < NR; r++)
#pragma unroll
                for (int t = 0; t < TP; t++)
                    if (((r * TP + t) & 31) == lane && t < tn && rows[r])
                        act[(int64_t)(t0 + t) * inter + j0 + r] = swiglu(acc[r][t], acc[NR + r][t]);
        }
    }
}

// Rows [LO, HI) of out = bf16(res + bf16(W . x)) for T_N tokens (x [t_n,
// k], res and out [t_n, n_rows]; x and res through L2 when CG), KS warps
// splitting each group of NR rows. Every warp of the block calls it and
// takes as many turns as the others: the partial sums meet at block
// barriers. VEC: K % 8 == 0 and W and X 16-byte aligned.
template <int NR, int TP, int UNROLL, int WARPS, int KS, bool CG>
__device__ __forceinline__ void proj_rows_residual(const bf16 *x, const bf16 *w, const bf16 *res,
                                                   bf16 *out, int t_n, int64_t k, int64_t n_rows,
                                                   int64_t lo, int64_t hi, bool vec)
{
    constexpr int GROUPS = WARPS / KS;
    __shared__ float part_sum[WARPS][NR][TP];
    const int warp = threadIdx.x >> 5, group = warp / KS, part = warp % KS;
    for (int64_t base = lo; base < hi; base += (int64_t)GROUPS * NR) {
        const int64_t n0 = base + (int64_t)group * NR;
        const bf16 *rows[NR];
#pragma unroll
        for (int r = 0; r < NR; r++)
            rows[r] = group < GROUPS && n0 + r < hi ? w + (n0 + r) * k : nullptr;
        for (int t0 = 0; t0 < t_n; t0 += TP) {
            const int tn = min(TP, t_n - t0);
            float acc[NR][TP];
            dot_rows<NR, TP, UNROLL, CG>(rows, k, x + t0 * k, k, tn, part, KS, vec, acc);
            sum_parts_add_residual<NR, TP, KS, CG>(acc, part_sum, rows, res, out, t0, tn, n0,
                                                   n_rows);
        }
    }
}

// Rows [LO, HI) of the N rows of K values of W asked of L2 (thread 0).
__device__ __forceinline__ void prefetch_share(const bf16 *w, int64_t k, int64_t lo, int64_t hi)
{
    if (hi > lo) prefetch_l2(w + lo * k, (hi - lo) * k * (int64_t)sizeof(bf16));
}

} // namespace qd

#endif
