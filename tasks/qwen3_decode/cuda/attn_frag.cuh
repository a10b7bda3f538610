// The tensor-core fragments of qwen3_decode_attn's mma seeds (attn_mma.cu,
// attn_cluster.cu, attn_pipe.cu): a group of 16 cache rows loaded as lane (g, t) of the
// m16n8k16 needs them, straight from global memory, and folded into the
// lane's online softmax and O^T accumulators; a tile's 8 query rows are the
// mma's 8 columns. Then the prologue and epilogue they share: the tile's
// Q^T, its causal ends, the warps' partials staged, merged and written
// for gqa_merge_rows_to. Outside the seeds' evolve blocks: the maths the seeds
// share, which the mutators leave as it is.
#ifndef QWEN3_DECODE_ATTN_FRAG_CUH
#define QWEN3_DECODE_ATTN_FRAG_CUH

#include <gqa_attention/cuda/gqa_common.cuh>

namespace qd_frag
{

constexpr int D = GQA_D, COLS = 8;

__device__ __forceinline__ unsigned word(const uint4 &u, int i)
{
    return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
}

// 2^(a - m), 0 where m is -inf (a row that has seen no key yet).
__device__ __forceinline__ float wexp2(float a, float m)
{
    return m == -INFINITY ? 0.0f : gqa_exp2(a - m);
}

// One group of 16 keys as lane (g, t) needs them: K rows base+g and
// base+g+8, pieces 4*kq+t; V rows base+2t, +1 and base+8+2t, +1, pieces g
// and g+8. Rows at or past J1 read as zeros (never read: they may hold
// nothing yet).
struct keys16 {
    uint4 ka[4], kb[4], v[8];
};

__device__ __forceinline__ void load_group(keys16 &G_, const bf16_t *kg, const bf16_t *vg, int base,
                                           int j1, int g, int t)
{
    const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int kq = 0; kq < 4; kq++) {
        const int piece = (4 * kq + t) * 8;
        G_.ka[kq] = base + g < j1 ? gqa_ldg_stream(kg + (long long)(base + g) * D + piece) : z;
        G_.kb[kq] =
            base + g + 8 < j1 ? gqa_ldg_stream(kg + (long long)(base + g + 8) * D + piece) : z;
    }
#pragma unroll
    for (int i = 0; i < 8; i++) { // (key pair half, piece half, key of the pair)
        const int key = base + 2 * t + (i & 1) + ((i >> 2) << 3),
                  piece = (g + ((i >> 1) & 1) * 8) * 8;
        G_.v[i] = key < j1 ? gqa_ldg_stream(vg + (long long)key * D + piece) : z;
    }
}

// Folds one group into this lane's online softmax (m, l: rows 2t, 2t+1,
// log2 units) and O^T accumulators; END[hd]: row 2t+hd sees keys < END.
__device__ __forceinline__ void fold_group(const keys16 &G_, const uint4 *qb, int base,
                                           const int *end, int g, float sl2, float *m, float *l,
                                           float (*oacc)[4])
{
    float sc[4] = {0.0f, 0.0f, 0.0f, 0.0f}; // S^T[key g | g+8][row 2t | 2t+1]
#pragma unroll
    for (int kq = 0; kq < 4; kq++)
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const unsigned a[4] = {word(G_.ka[kq], 2 * hh), word(G_.kb[kq], 2 * hh),
                                   word(G_.ka[kq], 2 * hh + 1), word(G_.kb[kq], 2 * hh + 1)};
            gqa_mma_bf16(sc, a, word(qb[kq], 2 * hh), word(qb[kq], 2 * hh + 1));
        }
    sc[0] = base + g < end[0] ? sc[0] * sl2 : -INFINITY;
    sc[1] = base + g < end[1] ? sc[1] * sl2 : -INFINITY;
    sc[2] = base + g + 8 < end[0] ? sc[2] * sl2 : -INFINITY;
    sc[3] = base + g + 8 < end[1] ? sc[3] * sl2 : -INFINITY;
#pragma unroll
    for (int hd = 0; hd < 2; hd++) { // row 2t + hd: keys g and g+8 here, the rest across g
        float mx = fmaxf(sc[hd], sc[2 + hd]);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
        const float mn = fmaxf(m[hd], mx);
        const float alpha = wexp2(m[hd], mn);
        m[hd] = mn;
        sc[hd] = wexp2(sc[hd], mn);
        sc[2 + hd] = wexp2(sc[2 + hd], mn);
        l[hd] = l[hd] * alpha + sc[hd] + sc[2 + hd];
#pragma unroll
        for (int mt = 0; mt < 8; mt++) {
            oacc[mt][hd] *= alpha;
            oacc[mt][2 + hd] *= alpha;
        }
    }
    // P^T (keys x rows) in accumulator layout -> P^T as the B operand
    const unsigned b0 = gqa_movt(gqa_pack_bf2(sc[0], sc[1]));
    const unsigned b1 = gqa_movt(gqa_pack_bf2(sc[2], sc[3]));
#pragma unroll
    for (int mt = 0; mt < 8; mt++) { // O^T rows 8g+mt and 64+8g+mt
        const unsigned sel = (mt & 1) ? 0x7632u : 0x5410u;
        const int w = mt >> 1;
        const unsigned a[4] = {__byte_perm(word(G_.v[0], w), word(G_.v[1], w), sel),
                               __byte_perm(word(G_.v[2], w), word(G_.v[3], w), sel),
                               __byte_perm(word(G_.v[4], w), word(G_.v[5], w), sel),
                               __byte_perm(word(G_.v[6], w), word(G_.v[7], w), sel)};
        gqa_mma_bf16(oacc[mt], a, b0, b1);
    }
}

// Where row COL of the tile lives in q and o ([batch, q_len, q_heads, D]).
template <class Args>
__device__ __forceinline__ long long row_of(const Args &a, int b, int kvh, int tile, int col)
{
    const int rr = tile * COLS + col;
    return ((long long)b * a.q_len + rr / a.g) * a.hq + (long long)kvh * a.g + rr % a.g;
}

// Q^T of the tile as the B operand (row g, pieces 4*kq+t), as it is: the
// scale goes on the fp32 scores (bf16 q / sqrt(D) would round again).
template <class Args>
__device__ __forceinline__ void load_qt(uint4 *qb, const Args &a, int b, int kvh, int tile, int nr,
                                        int g, int t)
{
    const bf16_t *qr = a.q + row_of(a, b, kvh, tile, g < nr ? g : 0) * D;
#pragma unroll
    for (int kq = 0; kq < 4; kq++)
        qb[kq] = g < nr ? *reinterpret_cast<const uint4 *>(qr + (4 * kq + t) * 8)
                        : make_uint4(0, 0, 0, 0);
}

// Row 2t+hd of the tile sees keys < end[hd] of a chunk that ends at J1
// (FIRST: the cache row of the step's token 0).
template <class Args>
__device__ __forceinline__ void causal_ends(int *end, const Args &a, int first, int j1, int tile,
                                            int nr, int t)
{
#pragma unroll
    for (int hd = 0; hd < 2; hd++) {
        const int col = 2 * t + hd;
        end[hd] = col < nr ? min(j1, first + (tile * COLS + col) / a.g + 1) : 0;
    }
}

__device__ __forceinline__ void clear_acc(float (*oacc)[4])
{
#pragma unroll
    for (int mt = 0; mt < 8; mt++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            oacc[mt][e] = 0.0f;
}

// The warp's partial in shared memory: its O^T sums, and per column its
// max and its row sum (summed over the column's lanes).
__device__ __forceinline__ void stage_warp(float (*sm_o)[COLS][D], float (*sm_ml)[COLS][2],
                                           int warp, int g, int t, const float (*oacc)[4],
                                           const float *m, const float *l)
{
#pragma unroll
    for (int hd = 0; hd < 2; hd++) {
        float ls = l[hd];
        ls += __shfl_xor_sync(0xffffffffu, ls, 4);
        ls += __shfl_xor_sync(0xffffffffu, ls, 8);
        ls += __shfl_xor_sync(0xffffffffu, ls, 16);
        const int col = 2 * t + hd;
#pragma unroll
        for (int mt = 0; mt < 8; mt++) {
            sm_o[warp][col][8 * g + mt] = oacc[mt][hd];
            sm_o[warp][col][64 + 8 * g + mt] = oacc[mt][2 + hd];
        }
        if (g == 0) {
            sm_ml[warp][col][0] = m[hd];
            sm_ml[warp][col][1] = ls;
        }
    }
}

// Output (COL, C) over the block's W staged warps: the max M, the sum of
// exp2 S and the unnormalised sum A.
template <int W>
__device__ __forceinline__ void merge_warps(const float (*sm_o)[COLS][D],
                                            const float (*sm_ml)[COLS][2], int col, int c, float &M,
                                            float &S, float &A)
{
    M = -INFINITY;
    S = 0.0f;
    A = 0.0f;
#pragma unroll
    for (int w = 0; w < W; w++)
        M = fmaxf(M, sm_ml[w][col][0]);
#pragma unroll
    for (int w = 0; w < W; w++) {
        const float wt = wexp2(sm_ml[w][col][0], M);
        S += sm_ml[w][col][1] * wt;
        A += sm_o[w][col][c] * wt;
    }
}

// Partial S (of SPLIT) of output row COL of GROUP, column C, where
// gqa_merge_rows_to reads it: the unnormalised sum A, and with column 0
// the max M (log2 units) and the sum of exp2 L.
__device__ __forceinline__ void put_part(float *part, long long group, int col, int split, int s,
                                         int c, float A, float M, float L)
{
    float *pp = part + ((group * COLS + col) * split + s) * GQA_PART;
    pp[c] = A;
    if (c == 0) {
        pp[D] = M;
        pp[D + 1] = L;
    }
}

} // namespace qd_frag

#endif
