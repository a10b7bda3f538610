// Device and host helpers shared by every gqa_attention CUDA seed. The
// harness provides this header to every candidate (as it provides
// kevolve/task.h), outside the mutable text, so a seed's EVOLVE-BLOCK holds
// only its design: include it as <gqa_attention/cuda/gqa_common.cuh>.
// Layout and causal rule: tasks/gqa_attention/gqa_attention.h; why the
// seeds are split this way: tasks/gqa_attention/README.md.
//
//   gqa_call, gqa_parse       the call's tensors and shape from kv_launch_args
//   gqa_bf, gqa_unpack2/8     bf16 bit patterns to float
//   gqa_pack_bf2/h2, gqa_bf16 floats to bf16x2 / fp16x2 / bf16 (nearest even)
//   gqa_exp2, gqa_wexp2       2^x (MUFU), and 2^(a - m) that is 0 for m = -inf
//   gqa_cp16, gqa_cp_*        cp.async 16-byte copies (zero-fill), commit, wait
//   gqa_ldg_stream            16-byte global load that skips L1
//   gqa_swz                   XOR swizzle of 256-byte shared rows (16-byte chunks)
//   gqa_ldsm4, gqa_ldsm4t     ldmatrix x4 (and transposed)
//   gqa_mma_bf16, _f16        mma.sync m16n8k16, fp32 accumulators
//   gqa_movt                  movmatrix: transposes an 8x8 b16 fragment
//   gqa_scratch, gqa_done     64 MB of partial results, per-group done counters
//   gqa_merge_rows(_to)       the last block's merge of split partial results
//   gqa_sm_count              multiprocessors of the current device
#ifndef GQA_COMMON_CUH
#define GQA_COMMON_CUH

#include <kevolve/task.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#define GQA_D 128                    // head dimension (the task's D)
#define GQA_PART (GQA_D + 2)         // a partial result: D sums, max (log2 units), sum of exp2
#define GQA_SCRATCH_FLOATS (16 << 20) // 64 MB of partial results
#define GQA_MAX_COUNTERS (1 << 16)   // done counters (groups merged by a last block)
#define GQA_LOG2E 1.4426950408889634f

typedef unsigned short bf16_t; // a bf16 bit pattern

// One call of the task: q [B, HQ, SQ, D], k and v [B, HKV, L, D], o [B, HQ, SQ, D].
struct gqa_call {
    const bf16_t *q, *k, *v;
    bf16_t *o;
    int B, HQ, HKV, SQ, L, G; // G = HQ / HKV query heads per KV head
    cudaStream_t stream;
};

// Fills C from A; 0, or cudaErrorInvalidValue for a shape no seed handles
// (D != 128, HQ not a multiple of HKV, SQ > L, empty).
static inline int gqa_parse(const kv_launch_args *a, gqa_call *c)
{
    c->q = (const bf16_t *)a->tensors[0];
    c->k = (const bf16_t *)a->tensors[1];
    c->v = (const bf16_t *)a->tensors[2];
    c->o = (bf16_t *)a->tensors[3];
    c->B = (int)a->syms[0];
    c->HQ = (int)a->syms[1];
    c->HKV = (int)a->syms[2];
    c->SQ = (int)a->syms[3];
    c->L = (int)a->syms[4];
    c->stream = (cudaStream_t)a->stream;
    if (a->syms[5] != GQA_D || c->B < 1 || c->HKV < 1 || c->HQ < c->HKV || c->HQ % c->HKV != 0 ||
        c->SQ < 1 || c->L < c->SQ)
        return (int)cudaErrorInvalidValue;
    c->G = c->HQ / c->HKV;
    return 0;
}

// ---- numbers ----
__device__ __forceinline__ float gqa_bf(unsigned h16) { return __uint_as_float(h16 << 16); }

__device__ __forceinline__ void gqa_unpack2(unsigned w, float *x)
{
    x[0] = __uint_as_float(w << 16);
    x[1] = __uint_as_float(w & 0xffff0000u);
}

__device__ __forceinline__ void gqa_unpack8(uint4 u, float *x)
{
    gqa_unpack2(u.x, x);
    gqa_unpack2(u.y, x + 2);
    gqa_unpack2(u.z, x + 4);
    gqa_unpack2(u.w, x + 6);
}

__device__ __forceinline__ unsigned gqa_pack_bf2(float lo, float hi)
{
    __nv_bfloat162 t = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&t);
}

__device__ __forceinline__ unsigned gqa_pack_h2(float lo, float hi)
{
    __half2 t = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&t);
}

// bf16x2 -> fp16x2 (exact for |x| in fp16's normal range).
__device__ __forceinline__ unsigned gqa_bf2h(unsigned w)
{
    return gqa_pack_h2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}

__device__ __forceinline__ bf16_t gqa_bf16(float x)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

// 2^x (MUFU.EX2; flushes denormals; 2^-inf = 0).
__device__ __forceinline__ float gqa_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// 2^(a - m) where m may be -inf (nothing seen yet): 0 instead of NaN.
__device__ __forceinline__ float gqa_wexp2(float a, float m)
{
    return m == -INFINITY ? 0.0f : exp2f(a - m);
}

// ---- memory ----
// 16 bytes from global memory, read-only, not kept in L1 (streamed once).
__device__ __forceinline__ uint4 gqa_ldg_stream(const void *p)
{
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
    return r;
}

// Copies 16 bytes global -> shared asynchronously; zero-fills when !ok (src
// is then not read but must still be a valid address).
__device__ __forceinline__ void gqa_cp16(unsigned dst, const void *src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void gqa_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most N committed cp.async groups of this thread are pending.
template <int N> __device__ __forceinline__ void gqa_cp_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Byte offset of 16-byte chunk c of row r in shared rows of 256 bytes (one
// head-dim row of bf16), XOR-swizzled by (r & 7): ldmatrix and cp.async
// free of bank conflicts.
__device__ __forceinline__ unsigned gqa_swz(int r, int c)
{
    return (unsigned)(r * (GQA_D * 2) + ((c ^ (r & 7)) << 4));
}

// ---- tensor cores (mma.sync, sm_80 and later) ----
// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void gqa_ldsm4(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                          unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

// As gqa_ldsm4, each matrix transposed.
__device__ __forceinline__ void gqa_ldsm4t(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                           unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

// c += a (16x16, row-major, bf16) * b (16x8, col-major, bf16), fp32 accumulators.
// Fragments (g = lane / 4, t = lane % 4): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..],
// a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]; b0 = B[2t..2t+1][g], b1 = B[2t+8..][g];
// c0, c1 = C[g][2t..2t+1], c2, c3 = C[g+8][2t..2t+1].
__device__ __forceinline__ void gqa_mma_bf16(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// As gqa_mma_bf16 with fp16 operands.
__device__ __forceinline__ void gqa_mma_f16(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The fragment of the transpose of an 8x8 b16 matrix: lane (g, t) holds
// M[g][2t..2t+1] in X and gets M[2t..2t+1][g] (two b16 in one register).
__device__ __forceinline__ unsigned gqa_movt(unsigned x)
{
    unsigned y;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
    return y;
}

// ---- device-wide state ----
// Partial results of split rows (64 MB, allocated when the module loads).
__device__ __align__(16) float gqa_scratch[GQA_SCRATCH_FLOATS];
// Per group of split chunks (a design's choice of group): chunks finished
// so far in this launch; the last one resets it to zero for the next.
__device__ unsigned int gqa_done[GQA_MAX_COUNTERS];

// Device address of gqa_scratch (looked up once), or NULL.
static inline float *gqa_scratch_ptr(void)
{
    static float *p;
    if (!p && cudaGetSymbolAddress((void **)&p, gqa_scratch) != cudaSuccess) p = NULL;
    return p;
}

// Device address of gqa_done (looked up once), or NULL.
static inline unsigned *gqa_done_ptr(void)
{
    static unsigned *p;
    if (!p && cudaGetSymbolAddress((void **)&p, gqa_done) != cudaSuccess) p = NULL;
    return p;
}

// Multiprocessors of the current device (looked up once).
static inline int gqa_sm_count(void)
{
    static int n;
    if (!n) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            n = 1;
    }
    return n;
}

// Barrier among the block's threads (BAR 0: __syncthreads) or, for BAR in
// 1..15, among the N threads (a multiple of 32) that use barrier BAR, so a
// subset of warps (say, a warp-specialised block's consumers) can sync.
__device__ __forceinline__ void gqa_sync(int bar, int n)
{
    if (bar == 0)
        __syncthreads();
    else
        asm volatile("bar.sync %0, %1;\n" ::"r"(bar), "r"(n) : "memory");
}

// Merges split partial results, in a block whose counter says it is the
// last of its group to finish: row r (r < nrows, D columns) goes to
// out_row(r); its chunk s is at part + ((row0 + r) * split + s) * GQA_PART:
// D unnormalised sums, its max (log2 units), its sum of exp2. SM_W: nrows
// * split floats of shared memory. Called by NT threads numbered TID = 0 ..
// NT-1 that sync on barrier BAR (gqa_sync).
template <int NT, typename OutRow>
__device__ void gqa_merge_rows_to(const float *part, OutRow out_row, long long row0, int nrows,
                                  int split, float *sm_w, int tid = threadIdx.x, int bar = 0)
{
    const int warp = tid >> 5, lane = tid & 31;
    for (int i = tid; i < nrows * split; i += NT) {
        const int r = i / split, s = i % split;
        sm_w[i] = __ldcg(part + ((row0 + r) * split + s) * GQA_PART + GQA_D);
    }
    gqa_sync(bar, NT);
    for (int r = warp; r < nrows; r += NT / 32) { // chunk weights exp2(m_s - M) / S, a warp a row
        float *w = sm_w + r * split;
        const float *pr = part + (row0 + r) * split * GQA_PART;
        float M = -INFINITY, S = 0.0f;
        for (int s = lane; s < split; s += 32)
            M = fmaxf(M, w[s]);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
        for (int s = lane; s < split; s += 32)
            S += __ldcg(pr + s * GQA_PART + GQA_D + 1) * gqa_wexp2(w[s], M);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            S += __shfl_xor_sync(0xffffffffu, S, off);
        __syncwarp();
        const float inv = S > 0.0f ? 1.0f / S : 0.0f;
        for (int s = lane; s < split; s += 32)
            w[s] = gqa_wexp2(w[s], M) * inv;
    }
    gqa_sync(bar, NT);
    for (int i = tid; i < nrows * (GQA_D / 4); i += NT) { // four columns per thread
        const int r = i / (GQA_D / 4), c = (i % (GQA_D / 4)) * 4;
        const float *w = sm_w + r * split;
        const float *pr = part + (row0 + r) * split * GQA_PART + c;
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll 16
        for (int s = 0; s < split; s++) {
            const float2 x = __ldcg(reinterpret_cast<const float2 *>(pr + s * GQA_PART));
            const float2 y = __ldcg(reinterpret_cast<const float2 *>(pr + s * GQA_PART + 2));
            a0 += x.x * w[s];
            a1 += x.y * w[s];
            a2 += y.x * w[s];
            a3 += y.y * w[s];
        }
        uint2 packed;
        packed.x = (unsigned)gqa_bf16(a0) | ((unsigned)gqa_bf16(a1) << 16);
        packed.y = (unsigned)gqa_bf16(a2) | ((unsigned)gqa_bf16(a3) << 16);
        *reinterpret_cast<uint2 *>(out_row(r) + c) = packed;
    }
}

// gqa_merge_rows_to into rows row0 .. row0+nrows-1 of o.
template <int NT>
__device__ void gqa_merge_rows(const float *part, bf16_t *o, long long row0, int nrows, int split,
                               float *sm_w, int tid = threadIdx.x, int bar = 0)
{
    gqa_merge_rows_to<NT>(part, [=](int r) { return o + (row0 + r) * GQA_D; }, row0, nrows, split,
                          sm_w, tid, bar);
}

// 1 in the block that is the last of COUNTER's SPLIT chunks to finish (it
// then resets the counter for the next launch), else 0. Call after this
// block's partial results are written; the NT threads of barrier BAR
// (numbered TID) call it.
template <int NT>
__device__ __forceinline__ int gqa_last_block(unsigned *counter, int split, int *sm_flag,
                                              int tid = threadIdx.x, int bar = 0)
{
    __threadfence();
    gqa_sync(bar, NT);
    if (tid == 0) {
        const int last = atomicAdd(counter, 1u) == (unsigned)split - 1;
        if (last) *counter = 0;
        *sm_flag = last;
    }
    gqa_sync(bar, NT);
    if (*sm_flag) __threadfence(); // the other blocks' partial results are visible
    return *sm_flag;
}

#endif
