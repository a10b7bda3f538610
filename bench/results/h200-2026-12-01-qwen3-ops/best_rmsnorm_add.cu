// Vectorised rmsnorm and rmsnorm_add for the cuda backend, the second seed
// beside naive.cu (five tensors: fused). A group of threads per row loads
// the row in VEC-element vectors (16 bytes at 8) and keeps up to VPT of
// them per thread in registers, so x (and the residual) is read once: the
// sum of squares in fp32, reduced by warp shuffles (and through shared
// memory when a row takes more than a warp), then each cached element is
// scaled and rounded to bf16 once. The fused task rounds the residual sum
// to bf16, writes it and normalises that. The group's size follows the
// row: ceil(hidden / (VEC * VPT)) threads, a power of two up to a warp
// (THREADS / that many rows per block), else a multiple of 32 up to
// MAX_TPR (a block per row); rows beyond the registers' reach go round
// again. Up to DECODE_ROWS rows (decode) use VPT_DECODE instead, to spread
// a row over more threads. Rows whose hidden size VEC does not divide, or
// tensors not aligned to the vector, take the scalar path (VEC 1).
// bf16 is handled as its bit patterns.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// EVOLVE-BLOCK-START
#define VEC 8          // kevolve: tune 1 2 4 8
#define VPT 4          // kevolve: tune 1 2 3 4 5 6 8
#define THREADS 256    // kevolve: tune 64 128 256 512
#define MAX_TPR 1024    // kevolve: tune 128 256 512 1024
#define DECODE_ROWS 64 // kevolve: tune 0 16 64 256
#define VPT_DECODE 1   // kevolve: tune 1 2 4 when DECODE_ROWS > 0
#define WPRE 1         // kevolve: tune 0 1
#define STREAM 0       // kevolve: tune 0 1
#define EPS 1e-6f
#define LB (THREADS > MAX_TPR ? THREADS : MAX_TPR)

template <int V> struct vt;
template <> struct vt<8> { typedef uint4 T; };
template <> struct vt<4> { typedef uint2 T; };
template <> struct vt<2> { typedef unsigned int T; };
template <> struct vt<1> { typedef unsigned short T; };

template <int V> union pk {
    typename vt<V>::T v;
    unsigned short s[V];
};

__device__ __forceinline__ float bf(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
__device__ __forceinline__ unsigned short to_bf(float f)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

// Loads and stores of x, the residual, y and the residual sum (streaming
// hints with STREAM: each byte is touched once); the weight through the
// read-only path.
template <int V> __device__ __forceinline__ typename vt<V>::T ld(const unsigned short *p)
{
#if STREAM
    return __ldcs((const typename vt<V>::T *)p);
#else
    return *(const typename vt<V>::T *)p;
#endif
}
template <int V> __device__ __forceinline__ void st(unsigned short *p, typename vt<V>::T v)
{
#if STREAM
    __stcs((typename vt<V>::T *)p, v);
#else
    *(typename vt<V>::T *)p = v;
#endif
}
template <int V> __device__ __forceinline__ typename vt<V>::T ldw(const unsigned short *p)
{
    return __ldg((const typename vt<V>::T *)p);
}

// x + residual rounded to bf16 (fused), else x as loaded.
template <int V, bool F>
__device__ __forceinline__ typename vt<V>::T row_in(typename vt<V>::T a, typename vt<V>::T b)
{
    if (!F) return a;
    pk<V> p, q;
    p.v = a;
    q.v = b;
#pragma unroll
    for (int k = 0; k < V; k++)
        p.s[k] = to_bf(bf(p.s[k]) + bf(q.s[k]));
    return p.v;
}

template <int V> __device__ __forceinline__ float sumsq(typename vt<V>::T a)
{
    pk<V> p;
    p.v = a;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < V; k++)
        s += bf(p.s[k]) * bf(p.s[k]);
    return s;
}

template <int V>
__device__ __forceinline__ typename vt<V>::T scale(typename vt<V>::T a, typename vt<V>::T w,
                                                   float rstd)
{
    pk<V> p, q;
    p.v = a;
    q.v = w;
#pragma unroll
    for (int k = 0; k < V; k++)
        p.s[k] = to_bf(bf(p.s[k]) * rstd * bf(q.s[k]));
    return p.v;
}

// One row per group of TPR threads (TPR a power of two up to 32, else the
// block). Vector i of a row goes to lane i % TPR; a lane's first R
// vectors stay in registers.
template <int V, int R, bool F>
__global__ void __launch_bounds__(LB)
    rmsnorm_vec(const unsigned short *__restrict__ x, const unsigned short *__restrict__ res,
                const unsigned short *__restrict__ w, unsigned short *__restrict__ y,
                unsigned short *__restrict__ rout, long long rows, int h, int tpr)
{
    typedef typename vt<V>::T T;
    const int nv = h / V;
    const int lane = threadIdx.x % tpr;
    const long long r = (long long)blockIdx.x * (blockDim.x / tpr) + threadIdx.x / tpr;
    const bool live = r < rows;
    const long long off = live ? r * h : 0;
    T c[R], b[R], wv[R];
    float ss = 0.0f;
    if (live) {
#pragma unroll
        for (int k = 0; k < R; k++) {
            int i = lane + k * tpr;
            if (i < nv) {
                c[k] = ld<V>(x + off + (long long)i * V);
                if (F) b[k] = ld<V>(res + off + (long long)i * V);
                if (WPRE) wv[k] = ldw<V>(w + (long long)i * V);
            }
        }
#pragma unroll
        for (int k = 0; k < R; k++) {
            int i = lane + k * tpr;
            if (i < nv) {
                c[k] = row_in<V, F>(c[k], b[k]);
                if (F) st<V>(rout + off + (long long)i * V, c[k]);
                ss += sumsq<V>(c[k]);
            }
        }
        for (int i = lane + R * tpr; i < nv; i += tpr) {
            T v = row_in<V, F>(ld<V>(x + off + (long long)i * V),
                               F ? ld<V>(res + off + (long long)i * V) : T());
            if (F) st<V>(rout + off + (long long)i * V, v);
            ss += sumsq<V>(v);
        }
    }
    const int width = tpr < 32 ? tpr : 32;
    for (int o = width / 2; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (tpr > 32) {
        __shared__ float red[32];
        if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
        __syncthreads();
        ss = 0.0f;
        for (int k = 0; k < (int)(blockDim.x >> 5); k++)
            ss += red[k];
    }
    if (!live) return;
    const float rstd = rsqrtf(ss / (float)h + EPS);
#pragma unroll
    for (int k = 0; k < R; k++) {
        int i = lane + k * tpr;
        if (i < nv) {
            T wk = WPRE ? wv[k] : ldw<V>(w + (long long)i * V);
            st<V>(y + off + (long long)i * V, scale<V>(c[k], wk, rstd));
        }
    }
    for (int i = lane + R * tpr; i < nv; i += tpr) {
        T v = row_in<V, F>(ld<V>(x + off + (long long)i * V),
                           F ? ld<V>(res + off + (long long)i * V) : T());
        st<V>(y + off + (long long)i * V, scale<V>(v, ldw<V>(w + (long long)i * V), rstd));
    }
}

template <int V, int R>
static int go(const unsigned short *x, const unsigned short *res, const unsigned short *w,
              unsigned short *y, unsigned short *rout, long long rows, long long h,
              cudaStream_t s)
{
    long long nv = h / V, want = (nv + R - 1) / R;
    int tpr = 1;
    if (want <= 32)
        while (tpr < want)
            tpr <<= 1;
    else
        tpr = (int)(want < MAX_TPR ? (want + 31) / 32 * 32 : MAX_TPR);
    int block = tpr <= 32 ? THREADS : tpr;
    long long per = block / tpr, grid = (rows + per - 1) / per;
    if (res)
        rmsnorm_vec<V, R, true><<<(unsigned)grid, block, 0, s>>>(x, res, w, y, rout, rows, (int)h, tpr);
    else
        rmsnorm_vec<V, R, false><<<(unsigned)grid, block, 0, s>>>(x, res, w, y, rout, rows, (int)h, tpr);
    return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END

static bool aligned(const void *p, int bytes) { return ((unsigned long long)p % bytes) == 0; }

extern "C" int kv_launch(const kv_launch_args *a)
{
    bool fused = a->num_tensors == 5;
    const unsigned short *x = (const unsigned short *)a->tensors[0];
    const unsigned short *res = fused ? (const unsigned short *)a->tensors[1] : nullptr;
    const unsigned short *w = (const unsigned short *)a->tensors[fused ? 2 : 1];
    unsigned short *y = (unsigned short *)a->tensors[fused ? 3 : 2];
    unsigned short *rout = fused ? (unsigned short *)a->tensors[4] : nullptr;
    long long rows = a->syms[0], h = a->syms[1];
    if (rows <= 0 || h <= 0) return 0;
    cudaStream_t s = (cudaStream_t)a->stream;
    const int vb = 2 * VEC;
    bool vec = h % VEC == 0 && aligned(x, vb) && aligned(w, vb) && aligned(y, vb) &&
               (!fused || (aligned(res, vb) && aligned(rout, vb)));
    if (!vec) return go<1, VPT>(x, res, w, y, rout, rows, h, s);
    if (rows <= DECODE_ROWS) return go<VEC, VPT_DECODE>(x, res, w, y, rout, rows, h, s);
    return go<VEC, VPT>(x, res, w, y, rout, rows, h, s);
}
