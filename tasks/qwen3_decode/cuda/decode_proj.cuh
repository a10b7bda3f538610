// The projection with the residual add in its epilogue: the output
// projection and the down projection of a decode step (o_fused.cu,
// mlp_fused.cu), the weights through registers (decode_gemv.cuh's
// dot_rows) or, RING > 0, through a ring of RING stages in shared memory
// with the tokens beside them (decode_ring.cuh).
#ifndef QWEN3_DECODE_PROJ_CUH
#define QWEN3_DECODE_PROJ_CUH

#include <qwen3_decode/cuda/decode_gemv.cuh>
#include <qwen3_decode/cuda/decode_ring.cuh>

namespace qd
{

// Shared memory the ring of a block of WARPS warps takes (0: no ring, or
// one that would not fit beside the other blocks' slots, 100 KB a block:
// the register path then).
template <int NR, int TP, int WARPS, int RING>
__host__ __device__ constexpr size_t proj_ring_bytes()
{
    return RING < 2 || WARPS * ring_warp_bytes(NR + TP, RING) > 100 * 1024
               ? 0
               : WARPS * ring_warp_bytes(NR + TP, RING);
}

// The epilogue of a projection whose row group's K is split over KS warps
// (warp % KS its part): the parts' sums of ACC met in PART_SUM (every warp
// of the block calls it: block barriers), then out[o] = bf16(res[o] +
// bf16(sum)) for rows ROWS (n0 + r) and tokens t0 + t, t < TN (res through
// L2 when CG, decode_gemv.cuh's load_x).
template <int NR, int TP, int KS, bool CG, int WARPS>
__device__ __forceinline__ void
sum_parts_add_residual(float (&acc)[NR][TP], float (&part_sum)[WARPS][NR][TP],
                       const bf16 *const (&rows)[NR], const bf16 *res, bf16 *out, int t0, int tn,
                       int64_t n0, int64_t n_rows)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, part = warp % KS;
    if (KS > 1) {
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < NR; r++)
#pragma unroll
                for (int t = 0; t < TP; t++)
                    part_sum[warp][r][t] = acc[r][t];
        __syncthreads();
        if (part == 0)
#pragma unroll
            for (int r = 0; r < NR; r++)
#pragma unroll
                for (int t = 0; t < TP; t++)
                    for (int p = 1; p < KS; p++)
                        acc[r][t] += part_sum[warp + p][r][t];
        __syncthreads();
    }
    if (part == 0) {
        // lane (r * TP + t) % 32 writes output (r, t): every lane holds every sum
#pragma unroll
        for (int r = 0; r < NR; r++)
#pragma unroll
            for (int t = 0; t < TP; t++)
                if (((r * TP + t) & 31) == lane && t < tn && rows[r]) {
                    const int64_t o = (int64_t)(t0 + t) * n_rows + n0 + r;
                    out[o] = to_bf16(f32(load_x1<CG>(res + o)) + rnd(acc[r][t]));
                }
    }
}

// out[t][n] = bf16(residual[t][n] + bf16(W[n] . x[t])) for the rows of this
// block: WARPS / KS row groups of NR rows, each group's K split over KS
// warps. PDL: launched with programmatic dependent launch (its weights
// asked of L2 before the kernel before it is done).
template <int NR, int TP, int UNROLL, int WARPS, int KS, int RING>
__global__ void __launch_bounds__(WARPS * 32)
    proj_residual(const bf16 *__restrict__ x, const bf16 *__restrict__ w,
                  const bf16 *__restrict__ residual, bf16 *__restrict__ out, int t_n, int64_t k,
                  int64_t n_rows, bool pdl)
{
    __shared__ float part_sum[WARPS][NR][TP];
    extern __shared__ __align__(16) unsigned char ring_smem[];
    constexpr bool use_ring = proj_ring_bytes<NR, TP, WARPS, RING>() > 0;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int group = warp / KS, part = warp % KS;
    const int64_t n0 = ((int64_t)blockIdx.x * (WARPS / KS) + group) * NR;
    const bf16 *rows[NR];
    bool vec = (k % 8) == 0 && aligned16(w) && aligned16(x);
    if (pdl && vec && part == 0 && lane == 0 && n0 < n_rows)
        prefetch_l2(w + n0 * k, (n0 + NR <= n_rows ? NR : n_rows - n0) * k * (int64_t)sizeof(bf16));
    pdl_release();
    pdl_wait();
#pragma unroll
    for (int r = 0; r < NR; r++)
        rows[r] = n0 + r < n_rows ? w + (n0 + r) * k : nullptr;
    for (int t0 = 0; t0 < t_n; t0 += TP) {
        const int tn = min(TP, t_n - t0);
        float acc[NR][TP];
        if (use_ring && vec) {
            ring_dot<NR, TP, use_ring ? RING : 2, true> rd;
            rd.start(rows, k, x + t0 * k, k, tn, part, KS,
                     (uint4 *)(ring_smem + warp * ring_warp_bytes(NR + TP, use_ring ? RING : 2)));
            rd.finish(acc);
        } else {
            dot_rows<NR, TP, UNROLL>(rows, k, x + t0 * k, k, tn, part, KS, vec, acc);
        }
        sum_parts_add_residual<NR, TP, KS, false>(acc, part_sum, rows, residual, out, t0, tn, n0,
                                                  n_rows);
    }
}

template <int NR, int TP, int UNROLL, int WARPS, int KS, int RING>
cudaError_t launch_proj_residual_tp(const bf16 *x, const bf16 *w, const bf16 *residual, bf16 *out,
                                    int t_n, int64_t k, int64_t n_rows, cudaStream_t s, bool pdl)
{
    constexpr size_t smem = proj_ring_bytes<NR, TP, WARPS, RING>();
    const int per_block = (WARPS / KS) * NR;
    if (smem_opt_in(smem, sizeof(float) * WARPS * NR * TP)) { // part_sum beside the ring
        cudaError_t e =
            cudaFuncSetAttribute(proj_residual<NR, TP, UNROLL, WARPS, KS, RING>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    launch_cfg c(dim3((unsigned)((n_rows + per_block - 1) / per_block)), dim3(WARPS * 32), smem, s,
                 pdl);
    return cudaLaunchKernelEx(&c.cfg, proj_residual<NR, TP, UNROLL, WARPS, KS, RING>, x, w,
                              residual, out, t_n, k, n_rows, pdl);
}

// Launches proj_residual with TP the least of 1, 2, 4, 8 that covers T
// (PDL: with programmatic dependent launch).
template <int NR, int UNROLL, int WARPS, int KS, int RING = 0>
cudaError_t launch_proj_residual(const bf16 *x, const bf16 *w, const bf16 *residual, bf16 *out,
                                 int t_n, int64_t k, int64_t n_rows, cudaStream_t s,
                                 bool pdl = false)
{
    if (t_n <= 1)
        return launch_proj_residual_tp<NR, 1, UNROLL, WARPS, KS, RING>(x, w, residual, out, t_n, k,
                                                                       n_rows, s, pdl);
    if (t_n <= 2)
        return launch_proj_residual_tp<NR, 2, UNROLL, WARPS, KS, RING>(x, w, residual, out, t_n, k,
                                                                       n_rows, s, pdl);
    if (t_n <= 4)
        return launch_proj_residual_tp<NR, 4, UNROLL, WARPS, KS, RING>(x, w, residual, out, t_n, k,
                                                                       n_rows, s, pdl);
    return launch_proj_residual_tp<NR, 8, UNROLL, WARPS, KS, RING>(x, w, residual, out, t_n, k,
                                                                   n_rows, s, pdl);
}

} // namespace qd

#endif
