// qwen3_decode_post's seed: the output projection, the residual, the
// post-attention RMSNorm, gate/up with SwiGLU and the down projection with
// the residual as one kernel, its three stages apart by grid-wide barriers
// (decode_grid.cuh), where o_fused.cu and mlp_fused.cu take three kernels.
// At one token of Qwen3-0.6B each stage is a few microseconds of reading,
// so a kernel boundary (a launch, a ramp, a wait on the edge before it)
// costs as much as a stage; a barrier costs about one.
//
// At most as many blocks as the card holds at once (OCC > 0: no more than
// OCC a multiprocessor, fewer blocks to arrive at each barrier); each block takes a
// contiguous share of the hidden rows (its mid and out rows: wo's and
// w_down's rows) and of the intermediate rows (gate/up), and with PREFETCH
// asks L2 for all of its weights before anything else (where the four
// matrices fit in half of a 50 MB L2), so that the later stages' weights
// arrive while the earlier ones run. Stage 1: mid = residual + wo . attn
// (O_KS warps splitting a group of O_NR rows). Stage 2: every block
// normalises all of mid (through L2) into shared memory and writes its
// act rows (NR gate rows with their up rows a warp). Stage 3: out = mid +
// w_down . act (DOWN_KS warps a group of DOWN_NR rows), act through L2.
// Roundings as PyTorch's bf16 Qwen3: o_proj's sum, the residual sum, the
// norm, g, u, silu(g), the product, the down sum and the last residual.
#include <kevolve/task.h>
#include <qwen3_decode/cuda/decode_grid.cuh>

// EVOLVE-BLOCK-START
#define WARPS 8       // kevolve: tune 4 8 16
#define O_NR 1        // kevolve: tune 1 2 4
#define O_UNROLL 2    // kevolve: tune 1 2 4 8
#define O_KS 8        // kevolve: tune 1 2 4 8
#define NR 1          // kevolve: tune 1 2 4
#define UNROLL 4      // kevolve: tune 1 2 4 8
#define DOWN_NR 1     // kevolve: tune 1 2 4 8
#define DOWN_UNROLL 2 // kevolve: tune 1 2 4 8
#define DOWN_KS 8     // kevolve: tune 1 2 4 8
#define PDL 1         // kevolve: tune 0 1
#define PREFETCH 1    // kevolve: tune 0 1
#define OCC 0         // kevolve: tune 0 1 2

using qd::bf16;
constexpr int OKS = O_KS <= WARPS ? O_KS : WARPS, DKS = DOWN_KS <= WARPS ? DOWN_KS : WARPS;

template <int TP>
__global__ void __launch_bounds__(WARPS * 32)
    post_grid(const bf16 *__restrict__ attn, const bf16 *__restrict__ wo,
              const bf16 *__restrict__ res, const bf16 *__restrict__ ln,
              const bf16 *__restrict__ wg, const bf16 *__restrict__ wu, const bf16 *__restrict__ wd,
              bf16 *mid, bf16 *act, bf16 *__restrict__ out, int t_n, int64_t inner, int64_t hid,
              int64_t inter, qd::grid_bar *bar)
{
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *h = (bf16 *)smem, *ws = qd::norm_weight_slot(h, t_n, hid);
    int64_t m0, m1, a0, a1;
    qd::block_share(hid, m0, m1);
    qd::block_share(inter, a0, a1);
    const bool vec_o = inner % 8 == 0 && qd::aligned16(wo) && qd::aligned16(attn);
    const bool vec_a = hid % 8 == 0 && qd::aligned16(wg) && qd::aligned16(wu);
    const bool vec_d = inter % 8 == 0 && qd::aligned16(wd) && qd::aligned16(act);
    const int64_t wbytes = (hid * inner + 3 * hid * inter) * (int64_t)sizeof(bf16);
    if (PREFETCH && vec_o && vec_a && vec_d && wbytes <= 25 * 1024 * 1024 && threadIdx.x == 0) {
        qd::prefetch_share(wo, inner, m0, m1);
        qd::prefetch_share(wg, hid, a0, a1);
        qd::prefetch_share(wu, hid, a0, a1);
        qd::prefetch_share(wd, inter, m0, m1);
    }
    qd::pdl_release();
    qd::pdl_wait();
    qd::proj_rows_residual<O_NR, TP, O_UNROLL, WARPS, OKS, false>(attn, wo, res, mid, t_n, inner,
                                                                  hid, m0, m1, vec_o);
    qd::grid_sync(bar);
    qd::norm_rows_to_shared<true>(mid, ln, hid, t_n, h, ws);
    __syncthreads();
    qd::gate_up_rows<NR, TP, UNROLL, WARPS>(h, wg, wu, act, t_n, hid, inter, a0, a1, vec_a);
    qd::grid_sync(bar);
    qd::proj_rows_residual<DOWN_NR, TP, DOWN_UNROLL, WARPS, DKS, true>(act, wd, mid, out, t_n,
                                                                       inter, hid, m0, m1, vec_d);
}

template <int TP> static cudaError_t launch_post(const kv_launch_args *a)
{
    const int t_n = (int)a->syms[0];
    const int64_t inner = a->syms[1], hid = a->syms[2], inter = a->syms[3];
    const size_t smem = qd::norm_smem_bytes(t_n, hid);
    // the norm's sums and the two projections' part sums beside the tokens
    const size_t stat = qd::norm_static_bytes + sizeof(float) * WARPS * TP * (O_NR + DOWN_NR);
    if (qd::smem_opt_in(smem, stat)) {
        cudaError_t e = cudaFuncSetAttribute(
            post_grid<TP>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    const cudaStream_t s = (cudaStream_t)a->stream;
    qd::grid_bar *bar = qd::grid_slot(s);
    const int most = qd::grid_blocks(post_grid<TP>, WARPS * 32, smem, OCC);
    if (!bar || most <= 0) return cudaErrorLaunchOutOfResources;
    int64_t want = qd::groups_of(hid, (WARPS / OKS) * O_NR);
    const int64_t up = qd::groups_of(inter, WARPS * NR);
    const int64_t down = qd::groups_of(hid, (WARPS / DKS) * DOWN_NR);
    want = up > want ? up : want;
    want = down > want ? down : want;
    const unsigned grid = qd::grid_size(want, most);
    qd::launch_cfg c(dim3(grid), dim3(WARPS * 32), smem, s, PDL);
    const void *const *t = a->tensors;
    return cudaLaunchKernelEx(&c.cfg, post_grid<TP>, (const bf16 *)t[0], (const bf16 *)t[1],
                              (const bf16 *)t[2], (const bf16 *)t[3], (const bf16 *)t[4],
                              (const bf16 *)t[5], (const bf16 *)t[6], (bf16 *)t[7], (bf16 *)t[8],
                              (bf16 *)t[9], t_n, inner, hid, inter, bar);
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    const int t_n = (int)a->syms[0];
    return (int)(t_n <= 1   ? launch_post<1>(a)
                 : t_n <= 2 ? launch_post<2>(a)
                 : t_n <= 4 ? launch_post<4>(a)
                            : launch_post<8>(a));
}
// EVOLVE-BLOCK-END
