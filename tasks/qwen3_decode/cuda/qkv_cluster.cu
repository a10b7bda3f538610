// qwen3_decode_qkv's seed: one kernel, a cluster of CLUSTER blocks per
// head (q heads, then k, then v), each block D / CLUSTER of the head's
// rows, so that the whole card streams the weights. Every block first
// normalises the tokens into shared memory (the input RMSNorm as a
// prologue: a few KB from L2), then its warps take NR rows at a time
// (qd::dot_rows); with XREG, a single token over a hidden size of at most
// 256 XREG is instead normalised in each warp's registers while its
// weights are on their way (qd::norm_token_regs: no barrier before the
// products); with RING, where each warp takes a single group of rows, the
// weights stream through a ring of RING stages in shared memory, asked
// for before the prologue (decode_ring.cuh). A q or k head's RMSNorm over
// head_dim sums the blocks' squares through distributed shared memory,
// and the rotation reads each value's partner (i +- D/2) from the block
// that holds it, normalising it there: one cluster barrier between the
// products and the stores. k and v go straight to their cache rows.
// Roundings as PyTorch's bf16 Qwen3.
#include <kevolve/task.h>
#include <cooperative_groups.h>
#include <qwen3_decode/cuda/decode_gemv.cuh>
#include <qwen3_decode/cuda/decode_ring.cuh>

namespace cg = cooperative_groups;

// EVOLVE-BLOCK-START
#define CLUSTER 8 // kevolve: tune 1 2 4 8
#define NR 2      // kevolve: tune 1 2 4 8
#define UNROLL 4  // kevolve: tune 1 2 4 8
#define WARPS 4   // kevolve: tune 1 2 4 8
#define PDL 0     // kevolve: tune 0 1
#define XREG 4    // kevolve: tune 0 4 8
#define RING 0    // kevolve: tune 0 4 8 16

using qd::bf16;

struct qkv_args {
    const bf16 *x, *ln, *wq, *wk, *wv, *qn, *kn, *cs, *sn;
    const int *start;
    bf16 *q, *kc, *vc;
    int nb, q_len, nq, nkv, d, len;
    int64_t hid;
    bool ring; // the ring fits beside the tokens (launch)
};

// Where a block's ring starts: after the tokens and the head's sums.
__host__ __device__ inline size_t qkv_ring_offset(int t_n, int64_t hid, int rb)
{
    return qd::align16_bytes(qd::norm_smem_bytes(t_n, hid) +
                             sizeof(float) * ((size_t)t_n * rb + t_n));
}

template <int TP> __global__ void __launch_bounds__(WARPS * 32) qkv_kernel(qkv_args p)
{
    cg::cluster_group cl = cg::this_cluster();
    const int csize = (int)cl.num_blocks(), rank = (int)cl.block_rank();
    const int head = blockIdx.x / csize, rb = p.d / csize, r0 = rank * rb;
    const int t_n = p.nb * p.q_len, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *h = (bf16 *)smem, *ws = qd::norm_weight_slot(h, t_n, p.hid);
    float *ps = (float *)(smem + qd::norm_smem_bytes(t_n, p.hid)), *ssp = ps + t_n * rb;
    if (PDL && threadIdx.x == 0 && p.hid % 8 == 0) { // this block's rows of its head into L2
        const int kd = head < p.nq ? 0 : head < p.nq + p.nkv ? 1 : 2;
        const int hx = kd == 0 ? head : kd == 1 ? head - p.nq : head - p.nq - p.nkv;
        const bf16 *wh = (kd == 0   ? p.wq
                          : kd == 1 ? p.wk
                                    : p.wv) +
                         ((int64_t)hx * p.d + r0) * p.hid;
        if (qd::aligned16(wh)) qd::prefetch_l2(wh, (int64_t)rb * p.hid * (int64_t)sizeof(bf16));
    }
    qd::pdl_release();
    qd::pdl_wait();

    const int kind = head < p.nq ? 0 : head < p.nq + p.nkv ? 1 : 2; // q, k, v
    const int hh = kind == 0 ? head : kind == 1 ? head - p.nq : head - p.nq - p.nkv;
    const bf16 *w = (kind == 0 ? p.wq : kind == 1 ? p.wk : p.wv) + (int64_t)hh * p.d * p.hid;
    const bool vec =
        p.hid % 8 == 0 && qd::aligned16(p.wq) && qd::aligned16(p.wk) && qd::aligned16(p.wv);
    if (TP == 1 &&
        qd::token_regs_fit(XREG, t_n, p.hid, vec && qd::aligned16(p.x) && qd::aligned16(p.ln))) {
        constexpr int KC = XREG > 0 ? XREG : 1;
        const int kcn = (int)(p.hid / 256);
        uint4 h1[KC];
        for (int g0 = warp * NR; g0 < rb; g0 += WARPS * NR) {
            const bf16 *rows[NR];
#pragma unroll
            for (int r = 0; r < NR; r++)
                rows[r] = g0 + r < rb ? w + (int64_t)(r0 + g0 + r) * p.hid : nullptr;
            uint4 wr[NR][KC];
            qd::load_rows_regs<NR, KC>(rows, kcn, wr);
            if (g0 == warp * NR) qd::norm_token_regs<KC>(p.x, p.ln, p.hid, kcn, h1);
            float acc[NR];
            qd::dot_regs<NR, KC>(wr, h1, kcn, acc);
#pragma unroll
            for (int r = 0; r < NR; r++)
                if ((r & 31) == lane && rows[r]) ps[g0 + r] = qd::rnd(acc[r]);
        }
    } else if (RING >= 2 && p.ring && vec) { // a group a warp (launch)
        constexpr int RS = RING >= 2 ? RING : 2;
        const int g0 = warp * NR;
        const bf16 *rows[NR];
#pragma unroll
        for (int r = 0; r < NR; r++)
            rows[r] = g0 + r < rb ? w + (int64_t)(r0 + g0 + r) * p.hid : nullptr;
        qd::ring_dot<NR, TP, RS, false> rd;
        rd.start(
            rows, p.hid, h, p.hid, t_n, 0, 1,
            (uint4 *)(smem + qkv_ring_offset(t_n, p.hid, rb) + warp * qd::ring_warp_bytes(NR, RS)));
        qd::norm_rows_to_shared(p.x, p.ln, p.hid, t_n, h, ws);
        __syncthreads();
        float acc[NR][TP];
        rd.finish(acc);
#pragma unroll
        for (int r = 0; r < NR; r++)
#pragma unroll
            for (int t = 0; t < TP; t++)
                if (((r * TP + t) & 31) == lane && t < t_n && rows[r])
                    ps[t * rb + g0 + r] = qd::rnd(acc[r][t]);
    } else {
        qd::norm_rows_to_shared(p.x, p.ln, p.hid, t_n, h, ws);
        __syncthreads();
        for (int g0 = warp * NR; g0 < rb; g0 += WARPS * NR) {
            const bf16 *rows[NR];
#pragma unroll
            for (int r = 0; r < NR; r++)
                rows[r] = g0 + r < rb ? w + (int64_t)(r0 + g0 + r) * p.hid : nullptr;
            for (int t0 = 0; t0 < t_n; t0 += TP) {
                const int tn = min(TP, t_n - t0);
                float acc[NR][TP];
                qd::dot_rows<NR, TP, UNROLL>(rows, p.hid, h + t0 * p.hid, p.hid, tn, 0, 1, vec,
                                             acc);
#pragma unroll
                for (int r = 0; r < NR; r++)
#pragma unroll
                    for (int t = 0; t < TP; t++)
                        if (((r * TP + t) & 31) == lane && t < tn && rows[r])
                            ps[(t0 + t) * rb + g0 + r] = qd::rnd(acc[r][t]);
            }
        }
    }
    __syncthreads();
    if (kind == 2) { // v: no norm, no rotation (uniform over the cluster)
        for (int i = threadIdx.x; i < t_n * rb; i += blockDim.x) {
            const int t = i / rb, c = i % rb, b = t / p.q_len, pos = p.start[b] + t % p.q_len;
            p.vc[(((int64_t)b * p.nkv + hh) * p.len + pos) * p.d + r0 + c] = qd::to_bf16(ps[i]);
        }
        return;
    }
    for (int t = warp; t < t_n; t += WARPS) {
        float s = 0.0f;
        for (int c = lane; c < rb; c += 32)
            s = fmaf(ps[t * rb + c], ps[t * rb + c], s);
        s = qd::warp_sum(s);
        if (lane == 0) ssp[t] = s;
    }
    cl.sync();
    // Each value and its partner normalised here, the partner's projection
    // read from the block that holds it (the same head's norm weight).
    const bf16 *nw = kind == 0 ? p.qn : p.kn;
    const int half = p.d / 2;
    for (int i = threadIdx.x; i < t_n * rb; i += blockDim.x) {
        const int t = i / rb, gi = r0 + i % rb, gj = gi < half ? gi + half : gi - half;
        float sq[CLUSTER], s = 0.0f; // every block's loads in flight at once
#pragma unroll
        for (int k = 0; k < CLUSTER; k++)
            sq[k] = k < csize ? *cl.map_shared_rank(ssp + t, k) : 0.0f;
#pragma unroll
        for (int k = 0; k < CLUSTER; k++)
            if (k < csize) s += sq[k];
        const float rs = rsqrtf(s / (float)p.d + 1e-6f);
        const float own = qd::rnd(qd::f32(nw[gi]) * qd::rnd(ps[i] * rs));
        const float pj = *cl.map_shared_rank(ps + t * rb + gj % rb, gj / rb);
        const float pair = qd::rnd(qd::f32(nw[gj]) * qd::rnd(pj * rs));
        const float co = qd::f32(p.cs[t * p.d + gi]), si = qd::f32(p.sn[t * p.d + gi]);
        const bf16 o = qd::to_bf16(qd::rnd(own * co) + qd::rnd((gi < half ? -pair : pair) * si));
        if (kind == 0) {
            p.q[((int64_t)t * p.nq + hh) * p.d + gi] = o;
        } else {
            const int b = t / p.q_len, pos = p.start[b] + t % p.q_len;
            p.kc[(((int64_t)b * p.nkv + hh) * p.len + pos) * p.d + gi] = o;
        }
    }
    cl.sync(); // the partners' values stay until every block has read them
}

template <int TP> static cudaError_t launch(qkv_args p, int csize, cudaStream_t s)
{
    const int t_n = p.nb * p.q_len, rb = p.d / csize;
    size_t smem = qd::norm_smem_bytes(t_n, p.hid) + sizeof(float) * ((size_t)t_n * rb + t_n);
    // The ring where each warp takes one group of rows and a block's shared
    // memory holds it within 200 KB (else the register path, as RING 0).
    const size_t ring_end =
        qkv_ring_offset(t_n, p.hid, rb) + (RING >= 2 ? WARPS * qd::ring_warp_bytes(NR, RING) : 0);
    p.ring = RING >= 2 && rb <= WARPS * NR && t_n <= TP && ring_end <= 200 * 1024;
    if (p.ring) smem = ring_end;
    if (qd::smem_opt_in(smem, qd::norm_static_bytes)) {
        cudaError_t e = cudaFuncSetAttribute(
            qkv_kernel<TP>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    qd::launch_cfg c(dim3((unsigned)((p.nq + 2 * p.nkv) * csize)), dim3(WARPS * 32), smem, s, PDL);
    c.add_cluster((unsigned)csize);
    return cudaLaunchKernelEx(&c.cfg, qkv_kernel<TP>, p);
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    qkv_args p;
    p.x = (const bf16 *)a->tensors[0];
    p.ln = (const bf16 *)a->tensors[1];
    p.wq = (const bf16 *)a->tensors[2];
    p.wk = (const bf16 *)a->tensors[3];
    p.wv = (const bf16 *)a->tensors[4];
    p.qn = (const bf16 *)a->tensors[5];
    p.kn = (const bf16 *)a->tensors[6];
    p.cs = (const bf16 *)a->tensors[7];
    p.sn = (const bf16 *)a->tensors[8];
    p.start = (const int *)a->tensors[9];
    p.q = (bf16 *)a->tensors[10];
    p.kc = (bf16 *)a->tensors[11];
    p.vc = (bf16 *)a->tensors[12];
    p.nb = (int)a->syms[0];
    p.q_len = (int)a->syms[1];
    p.hid = a->syms[2];
    p.nq = (int)a->syms[3];
    p.nkv = (int)a->syms[4];
    p.d = (int)a->syms[5];
    p.len = (int)a->syms[6];
    const int csize = p.d % CLUSTER == 0 ? CLUSTER : 1;
    const int t_n = p.nb * p.q_len;
    const cudaStream_t s = (cudaStream_t)a->stream;
    const cudaError_t e = t_n <= 1   ? launch<1>(p, csize, s)
                          : t_n <= 2 ? launch<2>(p, csize, s)
                          : t_n <= 4 ? launch<4>(p, csize, s)
                                     : launch<8>(p, csize, s);
    return (int)e;
}
// EVOLVE-BLOCK-END
