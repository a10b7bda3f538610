// Vectorised rope for the cuda backend, the second seed beside naive.cu:
// each thread takes VEC consecutive pairs (i .. i+VEC, i+D/2 .. i+D/2+VEC)
// of one head's row and rotates them in place with 16-byte loads and
// stores at VEC 8 (the pair's two halves, and the token's cos and sin at
// both, in four loads of the table that the heads of a token share in the
// cache). Consecutive threads take consecutive chunks of one token's heads
// (q's rows, then k's), so a warp's loads are contiguous. HEADS_PER_THREAD
// > 1 gives a thread the same chunk of several heads, reusing its table
// values from registers. When VEC does not divide D/2, or a tensor is not
// aligned to the vector, the scalar path (VEC 1) runs. fp32 arithmetic,
// one rounding to bf16; bf16 is handled as its bit patterns.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// EVOLVE-BLOCK-START
#define VEC 4              // kevolve: tune 1 2 4 8
#define THREADS 256        // kevolve: tune 64 128 256 512 1024
#define HEADS_PER_THREAD 1 // kevolve: tune 1 2 4 8

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

// Thread t: token T, head group G (HPT heads G*HPT ..), chunk C of the
// row's D/2 / V chunks; heads run over q's HQ then k's HKV.
template <int V, int HPT>
__global__ void __launch_bounds__(THREADS)
    rope_vec(unsigned short *q, unsigned short *k, const unsigned short *cos_t,
             const unsigned short *sin_t, const int *pos, long long tokens, int hq, int hkv, int d)
{
    int h2 = d / 2, chunks = h2 / V, heads = hq + hkv, groups = (heads + HPT - 1) / HPT;
    long long t = blockIdx.x * (long long)THREADS + threadIdx.x;
    long long per_token = (long long)groups * chunks;
    if (t >= tokens * per_token) return;
    long long tok = t / per_token;
    int rem = (int)(t % per_token), g = rem / chunks, i = (rem % chunks) * V;
    const unsigned short *crow = cos_t + (long long)pos[tok] * d, *srow = sin_t + (long long)pos[tok] * d;
    pk<V> c0, c1, s0, s1;
    c0.v = *(const typename vt<V>::T *)(crow + i);
    c1.v = *(const typename vt<V>::T *)(crow + i + h2);
    s0.v = *(const typename vt<V>::T *)(srow + i);
    s1.v = *(const typename vt<V>::T *)(srow + i + h2);
#pragma unroll
    for (int hh = 0; hh < HPT; hh++) {
        int h = g * HPT + hh;
        unsigned short *row = h < hq ? q + (tok * hq + h) * (long long)d
                                     : k + (tok * hkv + (h - hq)) * (long long)d;
        pk<V> a, b, x, y;
        a.v = *(const typename vt<V>::T *)(row + i);
        b.v = *(const typename vt<V>::T *)(row + i + h2);
#pragma unroll
        for (int e = 0; e < V; e++) {
            float av = bf(a.s[e]), bv = bf(b.s[e]);
            x.s[e] = to_bf(av * bf(c0.s[e]) - bv * bf(s0.s[e]));
            y.s[e] = to_bf(bv * bf(c1.s[e]) + av * bf(s1.s[e]));
        }
        *(typename vt<V>::T *)(row + i) = x.v;
        *(typename vt<V>::T *)(row + i + h2) = y.v;
    }
}

template <int V, int HPT>
static void launch(const kv_launch_args *a, cudaStream_t s)
{
    long long tokens = a->syms[0];
    int hq = (int)a->syms[1], hkv = (int)a->syms[2], d = (int)a->syms[3];
    long long n = tokens * (long long)((hq + hkv + HPT - 1) / HPT) * (d / 2 / V);
    if (n == 0) return;
    rope_vec<V, HPT><<<(unsigned)((n + THREADS - 1) / THREADS), THREADS, 0, s>>>(
        (unsigned short *)a->tensors[0], (unsigned short *)a->tensors[1],
        (const unsigned short *)a->tensors[2], (const unsigned short *)a->tensors[3],
        (const int *)a->tensors[4], tokens, hq, hkv, d);
}
// EVOLVE-BLOCK-END

static bool aligned(const kv_launch_args *a, int bytes)
{
    for (int t = 0; t < 4; t++)
        if ((size_t)a->tensors[t] % bytes) return false;
    return true;
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    cudaStream_t s = (cudaStream_t)a->stream;
    int h2 = (int)(a->syms[3] / 2);
    // Rows start every D elements: D/2 a multiple of VEC keeps every vector aligned.
    if (VEC > 1 && h2 % VEC == 0 && aligned(a, VEC * 2))
        launch<VEC, HEADS_PER_THREAD>(a, s);
    else
        launch<1, HEADS_PER_THREAD>(a, s);
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : (int)e;
}
