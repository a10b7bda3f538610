// Vectorised swiglu for the cuda backend, the second seed beside naive.cu:
// each thread loads UNROLL vectors of VEC elements (16 bytes at 8) of the
// gate and the matching ones of the up before it computes any, so enough
// bytes are in flight to cover the memory's latency; silu(gate) * up in
// fp32, rounded to bf16 once, stored as vectors. The vectors are numbered
// over the flat output (a row holds INTER / VEC of them, none straddles
// two rows); WAVES > 0 caps the grid at WAVES blocks per SM and loops over
// the rest (grid stride), 0 launches a thread per UNROLL vectors. FAST_EXP
// uses the hardware's exponential and division (a few ulp of fp32, far
// inside bf16's rounding). When VEC does not divide INTER, or a tensor is
// not aligned to the vector, the scalar path (VEC 1) runs. gate_up's row
// holds the gate's INTER values, then the up's; bf16 is handled as its bit
// patterns.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// EVOLVE-BLOCK-START
#define VEC 4       // kevolve: tune 1 2 4 8
#define THREADS 256 // kevolve: tune 64 128 256 512 1024
#define UNROLL 1    // kevolve: tune 1 2 4 8
#define WAVES 0     // kevolve: tune 0 1 2 4 8 16 32
#define FAST_EXP 1  // kevolve: tune 0 1
#define STREAM 0    // kevolve: tune 0 1

template <int V> struct vt;
template <> struct vt<8> { typedef uint4 T; };
template <> struct vt<4> { typedef uint2 T; };
template <> struct vt<2> { typedef unsigned int T; };
template <> struct vt<1> { typedef unsigned short T; };

template <int V> union pk {
    typename vt<V>::T v;
    unsigned short s[V];
    __nv_bfloat162 h2[V / 2 > 0 ? V / 2 : 1];
};

__device__ __forceinline__ float bf(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

__device__ __forceinline__ float silu_mul(float g, float u)
{
#if FAST_EXP
    return __fdividef(g, 1.0f + __expf(-g)) * u;
#else
    return g / (1.0f + expf(-g)) * u;
#endif
}

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

template <int V>
__device__ __forceinline__ typename vt<V>::T swiglu_v(typename vt<V>::T gv, typename vt<V>::T uv)
{
    pk<V> g, u, o;
    g.v = gv;
    u.v = uv;
    if constexpr (V == 1) {
        o.s[0] = __bfloat16_as_ushort(__float2bfloat16_rn(silu_mul(bf(g.s[0]), bf(u.s[0]))));
    } else {
#pragma unroll
        for (int k = 0; k < V / 2; k++)
            o.h2[k] = __floats2bfloat162_rn(silu_mul(bf(g.s[2 * k]), bf(u.s[2 * k])),
                                            silu_mul(bf(g.s[2 * k + 1]), bf(u.s[2 * k + 1])));
    }
    return o.v;
}

// Vector j of the output (elements j*V ...) is row j / vpr's vector j % vpr;
// I is the index type (32 bits where the counts fit).
template <int V, typename I>
__global__ void __launch_bounds__(THREADS)
    swiglu_vec(const unsigned short *__restrict__ gu, unsigned short *__restrict__ out, I nv,
               I vpr)
{
    typedef typename vt<V>::T T;
    const I step = (I)gridDim.x * (THREADS * UNROLL);
    for (I base = (I)blockIdx.x * (THREADS * UNROLL) + threadIdx.x; base < nv; base += step) {
        T g[UNROLL], u[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            I j = base + (I)(k * THREADS);
            if (j < nv) {
                I r = j / vpr, c = j - r * vpr;
                const unsigned short *p = gu + ((unsigned long long)r * 2 * vpr + c) * V;
                g[k] = ld<V>(p);
                u[k] = ld<V>(p + (unsigned long long)vpr * V);
            }
        }
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            I j = base + (I)(k * THREADS);
            if (j < nv) st<V>(out + (unsigned long long)j * V, swiglu_v<V>(g[k], u[k]));
        }
    }
}

template <int V>
static int go(const unsigned short *gu, unsigned short *out, long long rows, long long inter,
              cudaStream_t s)
{
    long long nv = rows * inter / V, per = (long long)THREADS * UNROLL;
    long long grid = (nv + per - 1) / per;
    if (WAVES > 0) {
        static int sms = 0;
        if (!sms) {
            int dev = 0;
            if (cudaGetDevice(&dev) != cudaSuccess ||
                cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
                sms = 132;
        }
        if (grid > (long long)sms * WAVES) grid = (long long)sms * WAVES;
    }
    if (grid > 0x7fffffffLL) grid = 0x7fffffffLL;
    if (nv + grid * per < 0x7fffffffLL)
        swiglu_vec<V, unsigned><<<(unsigned)grid, THREADS, 0, s>>>(gu, out, (unsigned)nv,
                                                                   (unsigned)(inter / V));
    else
        swiglu_vec<V, unsigned long long><<<(unsigned)grid, THREADS, 0, s>>>(
            gu, out, (unsigned long long)nv, (unsigned long long)(inter / V));
    return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END

static bool aligned(const void *p, int bytes) { return ((unsigned long long)p % bytes) == 0; }

extern "C" int kv_launch(const kv_launch_args *a)
{
    long long rows = a->syms[0], inter = a->syms[2];
    if (rows <= 0 || inter <= 0) return 0;
    const unsigned short *gu = (const unsigned short *)a->tensors[0];
    unsigned short *out = (unsigned short *)a->tensors[1];
    cudaStream_t s = (cudaStream_t)a->stream;
    if (inter % VEC == 0 && aligned(gu, 2 * VEC) && aligned(out, 2 * VEC))
        return go<VEC>(gu, out, rows, inter, s);
    return go<1>(gu, out, rows, inter, s);
}
