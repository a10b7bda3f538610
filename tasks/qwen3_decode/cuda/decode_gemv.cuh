// Shared by the CUDA seeds of the qwen3_decode tasks: the skinny matrix
// product at the heart of a decode step (a few tokens times a bf16 weight
// matrix read once, row-major [rows, K] as PyTorch's Linear holds it), and
// the roundings of PyTorch's bf16 Qwen3, which the seeds repeat so that a
// patched model picks the same greedy tokens.
//
// A warp takes NR rows at a time and walks K in 16-byte chunks, UNROLL
// chunks of every row loaded before any is used, so that enough bytes are
// in flight to cover the memory's latency; the weights bypass L1 (read
// once), the tokens' vectors come from shared memory or L2. Each lane
// keeps NR x TP partial sums (TP tokens at a time), summed across the
// warp at the end. Shapes no vector divides take a scalar path.
#ifndef QWEN3_DECODE_GEMV_CUH
#define QWEN3_DECODE_GEMV_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace qd
{

typedef unsigned short bf16;

__device__ __forceinline__ float f32(bf16 h)
{
    return __uint_as_float((unsigned)h << 16);
}
__device__ __forceinline__ bf16 to_bf16(float v)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}
// v rounded to bf16 and widened again: where PyTorch stores a bf16 tensor.
__device__ __forceinline__ float rnd(float v)
{
    return f32(to_bf16(v));
}

__device__ __forceinline__ uint4 load_weights(const bf16 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ void unpack8(uint4 v, float *o)
{
    const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        o[2 * i] = __uint_as_float(u[i] << 16);
        o[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
    }
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__host__ __device__ __forceinline__ bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

// Programmatic dependent launch (Hopper; the seeds' PDL axis): a kernel
// launched with it may start while the kernel before it in the stream
// finishes. Before pdl_wait it touches nothing another kernel writes (in a
// model the weights are constant, but the judge writes fresh ones before
// each block): it only asks L2 for its weights (prefetch_l2, no value read
// into a register), then lets the next kernel be launched (pdl_release)
// and waits for the one before to complete with its memory visible
// (pdl_wait). Without the launch attribute both are no-ops.
__device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_release()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// BYTES at P into L2 (P and BYTES multiples of 16), in pieces of 32 KB.
__device__ __forceinline__ void prefetch_l2(const void *p, int64_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const char *c = (const char *)p;
    for (int64_t off = 0; off < bytes; off += 32768) {
        const unsigned n = (unsigned)(bytes - off < 32768 ? bytes - off : 32768);
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(c + off), "r"(n)
                     : "memory");
    }
#else
    (void)p;
    (void)bytes;
#endif
}

// A launch configuration on S, with programmatic dependent launch when PDL.
struct launch_cfg {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr[2];
    launch_cfg(dim3 grid, dim3 block, size_t smem, cudaStream_t s, bool pdl)
    {
        cfg = cudaLaunchConfig_t{};
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.dynamicSmemBytes = smem;
        cfg.stream = s;
        cfg.attrs = attr;
        cfg.numAttrs = 0;
        if (pdl) add_pdl();
    }
    void add_pdl()
    {
        attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
        cfg.numAttrs++;
    }
    void add_cluster(unsigned x)
    {
        attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
        attr[cfg.numAttrs].val.clusterDim.x = x;
        attr[cfg.numAttrs].val.clusterDim.y = 1;
        attr[cfg.numAttrs].val.clusterDim.z = 1;
        cfg.numAttrs++;
    }
};

// A 16-byte (or bf16) load of X, through L2 when CG (data another
// multiprocessor wrote in this grid, before a grid barrier: decode_grid.cuh;
// L1 is not kept coherent within a grid).
template <bool CG> __device__ __forceinline__ uint4 load_x(const bf16 *p)
{
    if (CG) return __ldcg((const uint4 *)p);
    return *(const uint4 *)p;
}
template <bool CG> __device__ __forceinline__ bf16 load_x1(const bf16 *p)
{
    if (CG) return __ldcg((const unsigned short *)p);
    return *p;
}

// Lane partial sums acc[r][t] of ROWS[r] . X[t] (t < T <= TP; X[t] at X +
// t * XS) over the chunks of K this warp's PART of KS takes. VEC: K % 8 ==
// 0 and every row, X and XS 16-byte aligned. A NULL row's sums are
// garbage (it reads another row of the warp's: no branch around a load),
// and so are those of tokens T..TP-1 (they read token T-1): the caller
// writes neither. The loops have no branch, so that every load of an
// unrolled step is in flight before the first is used; rows warp-uniform.
// CG: X read through L2 (load_x).
template <int NR, int TP, int UNROLL, bool CG = false>
__device__ __forceinline__ void dot_rows(const bf16 *const (&rows)[NR], int64_t k, const bf16 *x,
                                         int64_t xs, int t_n, int part, int ks, bool vec,
                                         float (&acc)[NR][TP])
{
#pragma unroll
    for (int r = 0; r < NR; r++)
#pragma unroll
        for (int t = 0; t < TP; t++)
            acc[r][t] = 0.0f;
    const bf16 *any = nullptr;
#pragma unroll
    for (int r = NR - 1; r >= 0; r--)
        if (rows[r]) any = rows[r];
    if (!any) return; // a warp past the last row
    const bf16 *rp[NR];
    const bf16 *xp[TP];
#pragma unroll
    for (int r = 0; r < NR; r++)
        rp[r] = rows[r] ? rows[r] : any;
#pragma unroll
    for (int t = 0; t < TP; t++)
        xp[t] = x + (int64_t)(t < t_n ? t : t_n - 1) * xs;
    const int lane = threadIdx.x & 31;
    if (vec) {
        const int64_t chunks = k / 8, step = 32 * (int64_t)ks;
        int64_t c = lane + 32 * (int64_t)part;
        for (; c + (UNROLL - 1) * step < chunks; c += UNROLL * step) {
            uint4 w[UNROLL][NR];
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
#pragma unroll
                for (int r = 0; r < NR; r++)
                    w[u][r] = load_weights(rp[r] + (c + u * step) * 8);
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                uint4 xv[TP];
#pragma unroll
                for (int t = 0; t < TP; t++)
                    xv[t] = load_x<CG>(xp[t] + (c + u * step) * 8);
                float wf[NR][8];
#pragma unroll
                for (int r = 0; r < NR; r++)
                    unpack8(w[u][r], wf[r]);
#pragma unroll
                for (int t = 0; t < TP; t++) {
                    float xf[8];
                    unpack8(xv[t], xf);
#pragma unroll
                    for (int r = 0; r < NR; r++)
#pragma unroll
                        for (int i = 0; i < 8; i++)
                            acc[r][t] = fmaf(wf[r][i], xf[i], acc[r][t]);
                }
            }
        }
        for (; c < chunks; c += step) {
            float wf[NR][8];
#pragma unroll
            for (int r = 0; r < NR; r++)
                unpack8(load_weights(rp[r] + c * 8), wf[r]);
#pragma unroll
            for (int t = 0; t < TP; t++) {
                float xf[8];
                unpack8(load_x<CG>(xp[t] + c * 8), xf);
#pragma unroll
                for (int r = 0; r < NR; r++)
#pragma unroll
                    for (int i = 0; i < 8; i++)
                        acc[r][t] = fmaf(wf[r][i], xf[i], acc[r][t]);
            }
        }
    } else {
        for (int64_t i = lane + 32 * (int64_t)part; i < k; i += 32 * (int64_t)ks) {
            float wv[NR];
#pragma unroll
            for (int r = 0; r < NR; r++)
                wv[r] = f32(rp[r][i]);
#pragma unroll
            for (int t = 0; t < TP; t++) {
                const float xv = f32(load_x1<CG>(xp[t] + i));
#pragma unroll
                for (int r = 0; r < NR; r++)
                    acc[r][t] = fmaf(wv[r], xv, acc[r][t]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < NR; r++)
#pragma unroll
        for (int t = 0; t < TP; t++)
            acc[r][t] = warp_sum(acc[r][t]);
}

// Eight values H of a row normalised with weight W as PyTorch's
// Qwen3RMSNorm rounds them: bf16(w * bf16(h * rstd)).
__device__ __forceinline__ uint4 norm8(uint4 h, uint4 w, float rstd)
{
    float hv[8], wv[8];
    unpack8(h, hv);
    unpack8(w, wv);
    unsigned o[4];
#pragma unroll
    for (int e = 0; e < 4; e++)
        o[e] = (unsigned)to_bf16(wv[2 * e] * rnd(hv[2 * e] * rstd)) |
               (unsigned)to_bf16(wv[2 * e + 1] * rnd(hv[2 * e + 1] * rstd)) << 16;
    return make_uint4(o[0], o[1], o[2], o[3]);
}

// norm_rows_to_shared's static shared memory: a row's sum of squares in
// each warp's part, for up to NORM_PARTS rows.
constexpr int NORM_PARTS = 8;
constexpr size_t norm_static_bytes = sizeof(float) * NORM_PARTS * 32;

// Whether a kernel needs the opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize)
// for DYNAMIC bytes of shared memory beside STATIC ones: past 48 KB together.
__host__ __device__ constexpr bool smem_opt_in(size_t dynamic, size_t stat)
{
    return dynamic + stat > 48 * 1024;
}

// The RMSNorm prologue: T rows of X (K values each) normalised with
// weight W into shared memory H as PyTorch's Qwen3RMSNorm rounds them,
// h = bf16(w * bf16(x / rms(x))). The whole block first copies the rows
// and W into shared memory (H and WS, K values), every thread's loads in
// flight at once, 16 bytes each where K and the pointers allow: one trip
// to L2 rather than a warp's chain of them. Then the warps take a row
// each, its sum of squares and its normalised values from shared memory;
// with fewer rows than warps (one token), the whole block takes each row,
// its sum of squares in the warps' parts (another order: within the
// tolerance, as norm_token_regs). CG: X read through L2 (load_x).
template <bool CG = false>
__device__ __forceinline__ void norm_rows_to_shared(const bf16 *x, const bf16 *w, int64_t k,
                                                    int t_n, bf16 *h, bf16 *ws)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const bool vec = k % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(h) && aligned16(ws);
    if (vec) {
        const int64_t xc = (int64_t)t_n * k / 8, n = xc + k / 8, bd = blockDim.x;
        for (int64_t c0 = threadIdx.x; c0 < n; c0 += 4 * bd) {
            uint4 v[4]; // four loads in flight before the first store
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int64_t c = c0 + u * bd;
                if (c < n) v[u] = c < xc ? load_x<CG>(x + c * 8) : ((const uint4 *)w)[c - xc];
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int64_t c = c0 + u * bd;
                if (c < xc)
                    ((uint4 *)h)[c] = v[u];
                else if (c < n)
                    ((uint4 *)ws)[c - xc] = v[u];
            }
        }
    } else {
        for (int64_t i = threadIdx.x; i < (int64_t)t_n * k; i += blockDim.x)
            h[i] = load_x1<CG>(x + i);
        for (int64_t i = threadIdx.x; i < k; i += blockDim.x)
            ws[i] = w[i];
    }
    __syncthreads();
    // Fewer rows than warps: every warp shares every row.
    if (t_n < warps && t_n <= NORM_PARTS && vec) {
        __shared__ float part[NORM_PARTS][32];
        for (int t = 0; t < t_n; t++) {
            float ss = 0.0f;
            for (int64_t c = threadIdx.x; c < k / 8; c += blockDim.x) {
                float v[8];
                unpack8(((const uint4 *)(h + t * k))[c], v);
#pragma unroll
                for (int e = 0; e < 8; e++)
                    ss = fmaf(v[e], v[e], ss);
            }
            ss = warp_sum(ss);
            if (lane == 0) part[t][warp] = ss;
        }
        __syncthreads();
        for (int t = 0; t < t_n; t++) {
            float ss = 0.0f;
            for (int i = 0; i < warps; i++)
                ss += part[t][i];
            const float rstd = rsqrtf(ss / (float)k + 1e-6f);
            for (int64_t c = threadIdx.x; c < k / 8; c += blockDim.x)
                ((uint4 *)(h + t * k))[c] =
                    norm8(((const uint4 *)(h + t * k))[c], ((const uint4 *)ws)[c], rstd);
        }
        return; // the caller's barrier before the products
    }
    for (int t = warp; t < t_n; t += warps) {
        bf16 *hr = h + t * k;
        float ss = 0.0f;
        for (int64_t i = lane; i < k; i += 32) {
            const float v = f32(hr[i]);
            ss = fmaf(v, v, ss);
        }
        const float rstd = rsqrtf(warp_sum(ss) / (float)k + 1e-6f);
        if (vec) {
            for (int64_t c = lane; c < k / 8; c += 32)
                ((uint4 *)hr)[c] = norm8(((const uint4 *)hr)[c], ((const uint4 *)ws)[c], rstd);
        } else {
            for (int64_t i = lane; i < k; i += 32)
                hr[i] = to_bf16(f32(ws[i]) * rnd(f32(hr[i]) * rstd));
        }
    }
}

// The one-token path (the seeds' XREG axis): a warp that takes rows of a
// block against a single token needs only its lanes' chunks of that token.
// load_rows_regs first asks for the warp's weights (lane l's chunks l + 32
// i, i < KCN = K / 256 <= KC, of each row), then norm_token_regs reads the
// token's and the norm weight's same chunks straight from global memory
// and normalises them in registers with norm_rows_to_shared's roundings
// (the sum of squares in another order): the two trips to memory overlap,
// and there is no shared memory and no barrier before the products.
// dot_regs then sums as dot_rows does, chunk by chunk, lane by lane.
template <int NR, int KC>
__device__ __forceinline__ void load_rows_regs(const bf16 *const (&rows)[NR], int kcn,
                                               uint4 (&w)[NR][KC])
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int r = 0; r < NR; r++)
#pragma unroll
        for (int i = 0; i < KC; i++)
            w[r][i] = rows[r] && i < kcn ? load_weights(rows[r] + (lane + 32 * i) * 8)
                                         : make_uint4(0, 0, 0, 0);
}

template <int KC>
__device__ __forceinline__ void norm_token_regs(const bf16 *x, const bf16 *w, int64_t k, int kcn,
                                                uint4 (&h)[KC])
{
    const int lane = threadIdx.x & 31;
    uint4 wv[KC];
#pragma unroll
    for (int i = 0; i < KC; i++) {
        h[i] = i < kcn ? ((const uint4 *)x)[lane + 32 * i] : make_uint4(0, 0, 0, 0);
        wv[i] = i < kcn ? ((const uint4 *)w)[lane + 32 * i] : make_uint4(0, 0, 0, 0);
    }
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < KC; i++) {
        float hv[8];
        unpack8(h[i], hv);
#pragma unroll
        for (int e = 0; e < 8; e++)
            ss = fmaf(hv[e], hv[e], ss);
    }
    const float rstd = rsqrtf(warp_sum(ss) / (float)k + 1e-6f);
#pragma unroll
    for (int i = 0; i < KC; i++)
        h[i] = norm8(h[i], wv[i], rstd);
}

template <int NR, int KC>
__device__ __forceinline__ void dot_regs(const uint4 (&w)[NR][KC], const uint4 (&h)[KC], int kcn,
                                         float (&acc)[NR])
{
#pragma unroll
    for (int r = 0; r < NR; r++)
        acc[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < KC; i++) {
        if (i >= kcn) break;
        float xf[8];
        unpack8(h[i], xf);
#pragma unroll
        for (int r = 0; r < NR; r++) {
            float wf[8];
            unpack8(w[r][i], wf);
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[r] = fmaf(wf[e], xf[e], acc[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < NR; r++)
        acc[r] = warp_sum(acc[r]);
}

// Whether the one-token path takes a block of T tokens over K (X, the norm
// weight W and every weight matrix 16-byte aligned: ALIGNED).
__host__ __device__ __forceinline__ bool token_regs_fit(int kc, int t_n, int64_t k, bool aligned)
{
    return kc > 0 && t_n == 1 && aligned && k % 256 == 0 && k / 256 <= kc;
}

// Bytes of shared memory norm_rows_to_shared's H and WS take, each part
// rounded up to 16 bytes, and where WS starts after H.
__host__ __device__ __forceinline__ size_t align16_bytes(size_t n)
{
    return (n + 15) & ~(size_t)15;
}
__host__ __device__ __forceinline__ size_t norm_smem_bytes(int t_n, int64_t k)
{
    return align16_bytes((size_t)t_n * k * sizeof(bf16)) + align16_bytes((size_t)k * sizeof(bf16));
}
__device__ __forceinline__ bf16 *norm_weight_slot(bf16 *h, int t_n, int64_t k)
{
    return (bf16 *)((unsigned char *)h + align16_bytes((size_t)t_n * k * sizeof(bf16)));
}

} // namespace qd

#endif
