// qwen3_decode_mlp's seed: two kernels. The first normalises the tokens
// into shared memory (the post-attention RMSNorm as a prologue, every block
// its own copy: a few KB from L2) and takes NR gate rows with their NR up
// rows a warp, so one pass over the weights yields act = silu(g) * u, its
// epilogue (with XREG, a single token over a hidden size of at most 256
// XREG is normalised in each warp's registers while its weights are on
// their way: qd::norm_token_regs; with RING, the weights stream through a
// ring of RING stages in shared memory, asked for before the prologue:
// decode_ring.cuh); the second is the down projection with the residual
// add (qd::proj_residual, DOWN_RING its ring). Roundings as PyTorch's bf16
// Qwen3MLP: g, u, silu(g) and the product each rounded to bf16. GRID 1:
// both as one kernel instead (mlp_grid), its stages apart by a grid-wide
// barrier (decode_grid.cuh).
#include <kevolve/task.h>
#include <qwen3_decode/cuda/decode_grid.cuh>
#include <qwen3_decode/cuda/decode_proj.cuh>
#include <qwen3_decode/cuda/decode_ring.cuh>

// EVOLVE-BLOCK-START
#define NR 2          // kevolve: tune 1 2 4
#define UNROLL 4      // kevolve: tune 1 2 4 8
#define WARPS 4       // kevolve: tune 1 2 4 8 16
#define DOWN_NR 2     // kevolve: tune 1 2 4 8
#define DOWN_UNROLL 4 // kevolve: tune 1 2 4 8
#define DOWN_WARPS 4  // kevolve: tune 1 2 4 8 16
#define DOWN_KS 2     // kevolve: tune 1 2 4 8
#define PDL 0         // kevolve: tune 0 1
#define XREG 4        // kevolve: tune 0 4 8
#define RING 0        // kevolve: tune 0 4 8 16
#define DOWN_RING 0   // kevolve: tune 0 4 8 16
#define GRID 0        // kevolve: tune 0 1

using qd::bf16;
using qd::swiglu; // act = silu(g) * u, rounded as PyTorch's bf16 (decode_grid.cuh)

template <int TP>
__global__ void __launch_bounds__(WARPS * 32)
    gate_up_silu(const bf16 *__restrict__ x, const bf16 *__restrict__ ln,
                 const bf16 *__restrict__ wg, const bf16 *__restrict__ wu, bf16 *__restrict__ act,
                 int t_n, int64_t hid, int64_t inter, bool pdl, bool ring)
{
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *h = (bf16 *)smem, *ws = qd::norm_weight_slot(h, t_n, hid);
    if (pdl && hid % 8 == 0 && qd::aligned16(wg) && qd::aligned16(wu) &&
        (threadIdx.x & 31) == 0) { // this warp's gate and up rows into L2
        const int64_t r0 = ((int64_t)blockIdx.x * WARPS + (threadIdx.x >> 5)) * NR;
        if (r0 < inter) {
            const int64_t n = (r0 + NR <= inter ? NR : inter - r0) * hid * (int64_t)sizeof(bf16);
            qd::prefetch_l2(wg + r0 * hid, n);
            qd::prefetch_l2(wu + r0 * hid, n);
        }
    }
    qd::pdl_release();
    qd::pdl_wait();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t j0 = ((int64_t)blockIdx.x * WARPS + warp) * NR;
    const bf16 *rows[2 * NR];
#pragma unroll
    for (int r = 0; r < NR; r++) {
        rows[r] = j0 + r < inter ? wg + (j0 + r) * hid : nullptr;
        rows[NR + r] = j0 + r < inter ? wu + (j0 + r) * hid : nullptr;
    }
    const bool vec = hid % 8 == 0 && qd::aligned16(wg) && qd::aligned16(wu);
    if (TP == 1 &&
        qd::token_regs_fit(XREG, t_n, hid, vec && qd::aligned16(x) && qd::aligned16(ln))) {
        if (j0 >= inter) return; // no barrier on this path
        constexpr int KC = XREG > 0 ? XREG : 1;
        const int kcn = (int)(hid / 256);
        uint4 wr[2 * NR][KC], h1[KC];
        qd::load_rows_regs<2 * NR, KC>(rows, kcn, wr);
        qd::norm_token_regs<KC>(x, ln, hid, kcn, h1);
        float acc[2 * NR];
        qd::dot_regs<2 * NR, KC>(wr, h1, kcn, acc);
#pragma unroll
        for (int r = 0; r < NR; r++)
            if ((r & 31) == lane && rows[r]) act[j0 + r] = swiglu(acc[r], acc[NR + r]);
        return;
    }
    constexpr int RS = RING >= 2 ? RING : 2;
    qd::ring_dot<2 * NR, TP, RS, false> rd;
    const bool use_ring = RING >= 2 && ring && vec && t_n <= TP; // the ring takes one pass
    if (use_ring) // the weights on their way during the prologue
        rd.start(rows, hid, h, hid, t_n, 0, 1,
                 (uint4 *)(smem + qd::norm_smem_bytes(t_n, hid) +
                           warp * qd::ring_warp_bytes(2 * NR, RS)));
    qd::norm_rows_to_shared(x, ln, hid, t_n, h, ws);
    __syncthreads();
    for (int t0 = 0; t0 < t_n; t0 += TP) {
        const int tn = min(TP, t_n - t0);
        float acc[2 * NR][TP];
        if (use_ring)
            rd.finish(acc); // a single pass: t_n <= TP
        else
            qd::dot_rows<2 * NR, TP, UNROLL>(rows, hid, h + t0 * hid, hid, tn, 0, 1, vec, acc);
#pragma unroll
        for (int r = 0; r < NR; r++)
#pragma unroll
            for (int t = 0; t < TP; t++)
                if (((r * TP + t) & 31) == lane && t < tn && rows[r])
                    act[(int64_t)(t0 + t) * inter + j0 + r] = swiglu(acc[r][t], acc[NR + r][t]);
    }
}

template <int TP> static cudaError_t launch_gate_up(const kv_launch_args *a, size_t smem)
{
    const int64_t inter = a->syms[2];
    // The ring beside the tokens where a block's shared memory holds both
    // within 200 KB (else the register path, as RING 0).
    const size_t ring_bytes = RING >= 2 ? WARPS * qd::ring_warp_bytes(2 * NR, RING) : 0;
    const bool ring = ring_bytes > 0 && smem + ring_bytes <= 200 * 1024;
    if (ring) smem += ring_bytes;
    const unsigned grid = (unsigned)((inter + WARPS * NR - 1) / (WARPS * NR));
    if (qd::smem_opt_in(smem, qd::norm_static_bytes)) {
        cudaError_t e = cudaFuncSetAttribute(
            gate_up_silu<TP>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    qd::launch_cfg c(dim3(grid), dim3(WARPS * 32), smem, (cudaStream_t)a->stream, PDL);
    return cudaLaunchKernelEx(&c.cfg, gate_up_silu<TP>, (const bf16 *)a->tensors[0],
                              (const bf16 *)a->tensors[1], (const bf16 *)a->tensors[2],
                              (const bf16 *)a->tensors[3], (bf16 *)a->tensors[5], (int)a->syms[0],
                              a->syms[1], inter, (bool)PDL, ring);
}

// GRID 1: the MLP as one kernel of at most as many blocks as the card holds
// at once (decode_grid.cuh). Each block takes a contiguous share of the
// gate/up rows and of the down rows, asks L2 for both shares' weights
// before anything else (where the three matrices fit in half of a 50 MB
// L2), normalises the tokens into shared memory, writes its share of act,
// waits at the grid barrier for every block's act, then takes its down
// rows (DOWN_KS warps splitting a group of DOWN_NR rows; WARPS warps in
// both stages) with the residual in the epilogue, act read through L2.
template <int TP>
__global__ void __launch_bounds__(WARPS * 32)
    mlp_grid(const bf16 *__restrict__ x, const bf16 *__restrict__ ln, const bf16 *__restrict__ wg,
             const bf16 *__restrict__ wu, const bf16 *__restrict__ wd, bf16 *act,
             bf16 *__restrict__ out, int t_n, int64_t hid, int64_t inter, qd::grid_bar *bar)
{
    constexpr int KS = DOWN_KS <= WARPS ? DOWN_KS : WARPS;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *h = (bf16 *)smem, *ws = qd::norm_weight_slot(h, t_n, hid);
    int64_t a0, a1, d0, d1;
    qd::block_share(inter, a0, a1);
    qd::block_share(hid, d0, d1);
    const bool vec_a = hid % 8 == 0 && qd::aligned16(wg) && qd::aligned16(wu);
    const bool vec_d = inter % 8 == 0 && qd::aligned16(wd) && qd::aligned16(act);
    if (vec_a && vec_d && 3 * hid * inter * (int64_t)sizeof(bf16) <= 25 * 1024 * 1024 &&
        threadIdx.x == 0) {
        qd::prefetch_share(wg, hid, a0, a1);
        qd::prefetch_share(wu, hid, a0, a1);
        qd::prefetch_share(wd, inter, d0, d1);
    }
    qd::pdl_release();
    qd::pdl_wait();
    qd::norm_rows_to_shared(x, ln, hid, t_n, h, ws);
    __syncthreads();
    qd::gate_up_rows<NR, TP, UNROLL, WARPS>(h, wg, wu, act, t_n, hid, inter, a0, a1, vec_a);
    qd::grid_sync(bar);
    qd::proj_rows_residual<DOWN_NR, TP, DOWN_UNROLL, WARPS, KS, true>(act, wd, x, out, t_n, inter,
                                                                      hid, d0, d1, vec_d);
}

template <int TP> static cudaError_t launch_grid(const kv_launch_args *a)
{
    const int t_n = (int)a->syms[0];
    const int64_t hid = a->syms[1], inter = a->syms[2];
    const size_t smem = qd::norm_smem_bytes(t_n, hid);
    const size_t stat = qd::norm_static_bytes + sizeof(float) * WARPS * DOWN_NR * TP;
    if (qd::smem_opt_in(smem, stat)) {
        cudaError_t e = cudaFuncSetAttribute(
            mlp_grid<TP>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    const cudaStream_t s = (cudaStream_t)a->stream;
    qd::grid_bar *bar = qd::grid_slot(s);
    const int most = qd::grid_blocks(mlp_grid<TP>, WARPS * 32, smem);
    if (!bar || most <= 0) return cudaErrorLaunchOutOfResources;
    constexpr int ks = DOWN_KS <= WARPS ? DOWN_KS : WARPS;
    const int64_t up = qd::groups_of(inter, WARPS * NR);
    const int64_t down = qd::groups_of(hid, (WARPS / ks) * DOWN_NR);
    const unsigned grid = qd::grid_size(up > down ? up : down, most);
    qd::launch_cfg c(dim3(grid), dim3(WARPS * 32), smem, s, PDL);
    return cudaLaunchKernelEx(&c.cfg, mlp_grid<TP>, (const bf16 *)a->tensors[0],
                              (const bf16 *)a->tensors[1], (const bf16 *)a->tensors[2],
                              (const bf16 *)a->tensors[3], (const bf16 *)a->tensors[4],
                              (bf16 *)a->tensors[5], (bf16 *)a->tensors[6], t_n, hid, inter, bar);
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    const int t_n = (int)a->syms[0];
    const int64_t hid = a->syms[1], inter = a->syms[2];
    if (GRID)
        return (int)(t_n <= 1   ? launch_grid<1>(a)
                     : t_n <= 2 ? launch_grid<2>(a)
                     : t_n <= 4 ? launch_grid<4>(a)
                                : launch_grid<8>(a));
    const size_t smem = qd::norm_smem_bytes(t_n, hid);
    cudaError_t e = t_n <= 1   ? launch_gate_up<1>(a, smem)
                    : t_n <= 2 ? launch_gate_up<2>(a, smem)
                    : t_n <= 4 ? launch_gate_up<4>(a, smem)
                               : launch_gate_up<8>(a, smem);
    if (e != cudaSuccess) return (int)e;
    constexpr int ks = DOWN_KS <= DOWN_WARPS ? DOWN_KS : DOWN_WARPS;
    return (int)qd::launch_proj_residual<DOWN_NR, DOWN_UNROLL, DOWN_WARPS, ks, DOWN_RING>(
        (const bf16 *)a->tensors[5], (const bf16 *)a->tensors[4], (const bf16 *)a->tensors[0],
        (bf16 *)a->tensors[6], t_n, inter, hid, (cudaStream_t)a->stream, PDL);
}
// EVOLVE-BLOCK-END
