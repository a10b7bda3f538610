// qwen3_decode_o's seed: the output projection with the residual add in
// its epilogue, one kernel (qd::proj_residual, decode_proj.cuh): each warp
// takes NR rows of wo at a time, KS warps split a row group's inner
// dimension, UNROLL chunks of every row in flight (RING > 0: RING - 1
// steps of every row and token in flight through shared memory instead,
// decode_ring.cuh); the sum rounded to bf16 as o_proj's output, the
// residual added and rounded again. PDL 1: programmatic dependent launch
// (decode_gemv.cuh: the weights asked of L2 while the kernel before it
// finishes).
#include <kevolve/task.h>
#include <qwen3_decode/cuda/decode_proj.cuh>

// EVOLVE-BLOCK-START
#define NR 2     // kevolve: tune 1 2 4 8
#define UNROLL 4 // kevolve: tune 1 2 4 8
#define WARPS 4  // kevolve: tune 1 2 4 8 16
#define KS 1     // kevolve: tune 1 2 4 8
#define PDL 0    // kevolve: tune 0 1
#define RING 0   // kevolve: tune 0 4 8 16

extern "C" int kv_launch(const kv_launch_args *a)
{
    constexpr int ks = KS <= WARPS ? KS : WARPS;
    const qd::bf16 *attn = (const qd::bf16 *)a->tensors[0], *wo = (const qd::bf16 *)a->tensors[1];
    const qd::bf16 *res = (const qd::bf16 *)a->tensors[2];
    qd::bf16 *out = (qd::bf16 *)a->tensors[3];
    return (int)qd::launch_proj_residual<NR, UNROLL, WARPS, ks, RING>(
        attn, wo, res, out, (int)a->syms[0], a->syms[1], a->syms[2], (cudaStream_t)a->stream, PDL);
}
// EVOLVE-BLOCK-END
