// The seeds' RING axis: decode_gemv.cuh's skinny product with the weights
// streamed through a ring of shared memory instead of registers. Each lane
// copies its own 16-byte chunks of the warp's rows (cp.async, L1 bypassed)
// into its own slots of S stages and later reads back only what it copied,
// so no barrier of any kind is needed between the copies and the products:
// a lane's cp.async.wait_group is enough. S - 1 stages stay in flight at
// every step, whatever the products cost and however few registers are
// free, where dot_rows waits out each batch of UNROLL loads before its
// products (14B's weights are read at about 70% of the card's bandwidth
// that way). start() may come before the block's RMSNorm prologue: the
// weights are on their way while the tokens are normalised.
#ifndef QWEN3_DECODE_RING_CUH
#define QWEN3_DECODE_RING_CUH

#include <qwen3_decode/cuda/decode_gemv.cuh>

namespace qd
{

// 16 bytes from global SRC to the shared-window address DST, zeros where !OK
// (nothing read then).
__device__ __forceinline__ void cp16_async(unsigned dst, const void *src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_commit()
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}
// Until at most N of this thread's committed groups are pending.
template <int N> __device__ __forceinline__ void cp_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Shared memory one warp's ring takes: S stages of SLOTS chunks a lane.
__host__ __device__ constexpr size_t ring_warp_bytes(int slots, int s)
{
    return (size_t)s * slots * 32 * 16;
}

// Lane partial sums acc[r][t] of ROWS[r] . X[t] over the chunks of K this
// warp's PART of KS takes, as dot_rows (K % 8 == 0 and every pointer 16-byte
// aligned: the caller's VEC), summed across the warp by finish(). XG: the
// tokens (X[t] at X + t * XS) are in global memory and stream through the
// ring beside the weights; else they are in shared memory, read in
// finish(). RING: this warp's ring_warp_bytes(NR + (XG ? TP : 0), S).
template <int NR, int TP, int S, bool XG> struct ring_dot {
    static constexpr int XT = XG ? TP : 0, SLOTS = NR + XT;
    static_assert(S >= 2, "a ring of at least two stages");
    const bf16 *rp[NR];
    const bf16 *xp[TP];
    int64_t c0, step;
    int n;
    unsigned base;

    __device__ __forceinline__ void issue(int i)
    {
        if (i < n) {
            const int64_t c = c0 + (int64_t)i * step;
            const unsigned s = base + (unsigned)((i % S) * SLOTS * 512);
#pragma unroll
            for (int r = 0; r < NR; r++)
                cp16_async(s + r * 512, rp[r] + c * 8, true);
#pragma unroll
            for (int t = 0; t < XT; t++)
                cp16_async(s + (NR + t) * 512, xp[t] + c * 8, true);
        }
        cp_commit(); // one group a step, empty or not: the wait counts steps
    }

    // Asks for the first S - 1 steps. A warp with no row (ROWS all NULL)
    // asks for nothing, and finish() then sums nothing.
    __device__ __forceinline__ void start(const bf16 *const (&rows)[NR], int64_t k, const bf16 *x,
                                          int64_t xs, int t_n, int part, int ks, uint4 *ring)
    {
        const bf16 *any = nullptr;
#pragma unroll
        for (int r = NR - 1; r >= 0; r--)
            if (rows[r]) any = rows[r];
#pragma unroll
        for (int r = 0; r < NR; r++)
            rp[r] = rows[r] ? rows[r] : any; // a NULL row's sums are garbage, never written
#pragma unroll
        for (int t = 0; t < TP; t++)
            xp[t] = x + (int64_t)(t < t_n ? t : t_n - 1) * xs;
        const int lane = threadIdx.x & 31;
        const int64_t chunks = k / 8;
        step = 32 * (int64_t)ks;
        c0 = lane + 32 * (int64_t)part;
        n = any && c0 < chunks ? (int)((chunks - 1 - c0) / step + 1) : 0;
        base = (unsigned)__cvta_generic_to_shared(ring + lane);
        if (!any) return;
#pragma unroll
        for (int i = 0; i < S - 1; i++)
            issue(i);
    }

    // The products, each step's chunks once they have landed; X (shared
    // memory, !XG) must be readable by now. Every lane of the warp calls it.
    __device__ __forceinline__ void finish(float (&acc)[NR][TP])
    {
#pragma unroll
        for (int r = 0; r < NR; r++)
#pragma unroll
            for (int t = 0; t < TP; t++)
                acc[r][t] = 0.0f;
        if (!rp[0]) return; // the whole warp: no row
        for (int i = 0; i < n; i++) {
            issue(i + S - 1);
            cp_wait<S - 1>();
            const uint4 *s =
                (const uint4 *)__cvta_shared_to_generic(base + (unsigned)((i % S) * SLOTS * 512));
            const int64_t c = c0 + (int64_t)i * step;
            float wf[NR][8];
#pragma unroll
            for (int r = 0; r < NR; r++)
                unpack8(s[r * 32], wf[r]);
#pragma unroll
            for (int t = 0; t < TP; t++) {
                float xf[8];
                unpack8(XG ? s[(NR + t) * 32] : *(const uint4 *)(xp[t] + c * 8), xf);
#pragma unroll
                for (int r = 0; r < NR; r++)
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        acc[r][t] = fmaf(wf[r][e], xf[e], acc[r][t]);
            }
        }
        cp_wait<0>(); // the empty groups past the end
#pragma unroll
        for (int r = 0; r < NR; r++)
#pragma unroll
            for (int t = 0; t < TP; t++)
                acc[r][t] = warp_sum(acc[r][t]);
    }
};

} // namespace qd

#endif
