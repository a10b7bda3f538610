// The judge's own kernels on the cuda backend (never the candidate's): they
// write a timed block's inputs on the device inside the judge's timed
// window, and check a block's outputs and inputs without copying them to
// the host. Compiled by the harness like a task's reference and loaded into
// the judge, which runs them on its own stream of the primary context.
//
// Inputs are a pure function of (distribution, seed, index) as
// <kevolve/judge_ops.h> defines them, rounded to the tensor's dtype, so the
// judge can tell later, by generating again, whether an input changed; its
// checks of a correctness trial's outputs run here too (kvj_check), and
// only a summary per block comes back to the host.
#include <kevolve/task.h>
#include <kevolve/judge_ops.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

// The bits element I of dtype DT holds (16 or 32 bits).
static __device__ __forceinline__ uint32_t bits_at(int dt, int dist, uint64_t seed,
                                                   uint64_t forced, uint64_t i)
{
    if (dist == KVJ_INDEX) return kvj_index_at(seed, forced, i); // FORCED: the bound
    float v = kvj_value_at(dist, seed, forced, i);
    switch (dt) {
    case KV_F32:
        return __float_as_uint(v);
    case KV_F16:
        return __half_as_ushort(__float2half_rn(v));
    case KV_BF16:
        return __bfloat16_as_ushort(__float2bfloat16_rn(v));
    default: // KV_I32: integers carrying the spread, as the host's fill does
        return (uint32_t)(int32_t)(dist == KVJ_SMALL_INT || dist == KVJ_QUICK_SMALL_INT ? v
                                                                             : rintf(v * 8.0f));
    }
}

// Element I of P (dtype DT) as a double.
static __device__ __forceinline__ double load_at(const void *p, int dt, uint64_t i)
{
    switch (dt) {
    case KV_F32:
        return ((const float *)p)[i];
    case KV_F16:
        return __half2float(__ushort_as_half(((const uint16_t *)p)[i]));
    case KV_BF16:
        return __uint_as_float((uint32_t)((const uint16_t *)p)[i] << 16);
    default:
        return ((const int32_t *)p)[i];
    }
}

static __device__ __forceinline__ uint32_t raw_at(const void *p, int esize, uint64_t i)
{
    return esize == 2 ? ((const uint16_t *)p)[i] : ((const uint32_t *)p)[i];
}

// The 16 bytes of elements I0 .. I0 + 16 / ESIZE - 1 as drawn.
static __device__ __forceinline__ uint4 bits16_at(int dt, int esize, int dist, uint64_t seed,
                                                  uint64_t forced, uint64_t i0)
{
    uint32_t w[4];
    if (esize == 2) {
#pragma unroll
        for (int k = 0; k < 4; k++)
            w[k] = bits_at(dt, dist, seed, forced, i0 + 2 * k) |
                   bits_at(dt, dist, seed, forced, i0 + 2 * k + 1) << 16;
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++)
            w[k] = bits_at(dt, dist, seed, forced, i0 + k);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// How many 16-byte pieces of P's N elements go whole (0 unless P is
// aligned to them; the judge's arenas are, to 256 bytes): a store or load
// per 8 (or 4) elements, not one per element; those past them go one by one.
static __device__ __forceinline__ uint64_t pieces(const void *p, int esize, uint64_t n)
{
    return ((uintptr_t)p & 15) ? 0 : n / (16 / esize);
}

// KVJ_QUICK_NORMAL's draw, the timed blocks' (every input written in a
// window and drawn again to check it), with its dtype fixed at compile time:
// the generic path's switches on the distribution and the dtype, its 64-bit
// index arithmetic and its int-to-float conversion ran per element and made
// the draw compute-bound at 1-1.4 TB/s, a third of what the H200 writes
// (bench/NOTES.md, 2026-12-02, commit d94eae3). The bits are kvj_quick_at's, rounded as
// bits_at rounds: (float)sum is exact either way.
static __device__ __forceinline__ float quick_of_hash(uint32_t h)
{
    int sum = (int)__dp4a(h, 0x01010101u, 0u);
    // 2^23 + sum as a float, less 2^23 + 510: (float)sum - 510, exact.
    float centred = __int_as_float(0x4B000000 | sum) - 8389118.0f;
    return centred * (1.7320508f / 256.0f);
}

// The 16 bytes of elements I0 .. I0 + 16 / size - 1 (I0 a multiple of 8,
// so all share I0's high half and so the key) of dtype DT.
template <int DT, int DIST>
static __device__ __forceinline__ uint4 quick16_at(uint32_t key0, uint64_t i0, uint64_t forced)
{
    const uint32_t g = 0x9e3779b9u;
    uint32_t base = (uint32_t)i0 * g + (key0 ^ ((uint32_t)(i0 >> 32) * 0xc2b2ae35u));
    uint32_t w[4];
    // Element I0 + E's value from its hash: KVJ_QUICK_NORMAL's the fast way.
#define QUICK_VALUE(E)                                                                             \
    (DIST == KVJ_QUICK_NORMAL ? quick_of_hash(kvj_mix32(base + (uint32_t)(E) * g))                  \
                              : kvj_quick_of(DIST, kvj_mix32(base + (uint32_t)(E) * g),            \
                                             i0 + (uint64_t)(E), forced))
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if (DT == KV_F32) {
            w[k] = __float_as_uint(QUICK_VALUE(k));
        } else {
            float lo = QUICK_VALUE(2 * k), hi = QUICK_VALUE(2 * k + 1);
            if (DT == KV_BF16) {
                __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
                w[k] = *(uint32_t *)&v;
            } else {
                __half2 v = __floats2half2_rn(lo, hi);
                w[k] = *(uint32_t *)&v;
            }
        }
    }
#undef QUICK_VALUE
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// kvj_quick_at's key, the part of it that the seed alone sets.
static __device__ __forceinline__ uint32_t quick_key(uint64_t seed)
{
    return (uint32_t)seed ^ ((uint32_t)(seed >> 32) * 0x85ebca6bu);
}

// gen_kernel for the quick draw DIST of dtype DT.
template <int DT, int DIST>
__global__ void quick_gen_kernel(void *p, uint64_t n, uint64_t seed, uint64_t forced)
{
    const int esize = DT == KV_F32 ? 4 : 2, per = 16 / esize;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x,
                   me = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x, nv = pieces(p, esize, n);
    const uint32_t key0 = quick_key(seed);
    for (uint64_t v = me; v < nv; v += step)
        ((uint4 *)p)[v] = quick16_at<DT, DIST>(key0, v * per, forced);
    for (uint64_t i = nv * per + me; i < n; i += step) {
        uint32_t b = bits_at(DT, DIST, seed, forced, i);
        if (esize == 2)
            ((uint16_t *)p)[i] = (uint16_t)b;
        else
            ((uint32_t *)p)[i] = b;
    }
}

__global__ void gen_kernel(void *p, int dt, int dist, uint64_t n, uint64_t seed, uint64_t forced)
{
    const int esize = dt == KV_F16 || dt == KV_BF16 ? 2 : 4, per = 16 / esize;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x,
                   me = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x, nv = pieces(p, esize, n);
    for (uint64_t v = me; v < nv; v += step)
        ((uint4 *)p)[v] = bits16_at(dt, esize, dist, seed, forced, v * per);
    for (uint64_t i = nv * per + me; i < n; i += step) {
        uint32_t b = bits_at(dt, dist, seed, forced, i);
        if (esize == 2)
            ((uint16_t *)p)[i] = (uint16_t)b;
        else
            ((uint32_t *)p)[i] = b;
    }
}

// Adds a count and a first index to RES (res[0] += count, res[1] = min).
static __device__ __forceinline__ void add_count(unsigned long long mine, unsigned long long first,
                                                 unsigned long long *res)
{
    for (int o = 16; o > 0; o >>= 1) {
        mine += __shfl_xor_sync(0xffffffffu, mine, o);
        unsigned long long f = __shfl_xor_sync(0xffffffffu, first, o);
        first = f < first ? f : first;
    }
    if ((threadIdx.x & 31) == 0 && mine) {
        atomicAdd(&res[0], mine);
        atomicMin(&res[1], first);
    }
}

// res[0]: how many elements equal PATTERN; res[1]: the smallest such index.
__global__ void count_kernel(const void *p, int esize, uint64_t n, uint32_t pattern,
                             unsigned long long *res)
{
    unsigned long long mine = 0, first = ~0ull;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        if (raw_at(p, esize, i) == pattern) {
            mine++;
            if (i < first) first = i;
        }
    add_count(mine, first, res);
}

// Elements whose bits differ between A and B.
__global__ void diff_kernel(const void *a, const void *b, int esize, uint64_t n,
                            unsigned long long *res)
{
    unsigned long long mine = 0, first = ~0ull;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        if (raw_at(a, esize, i) != raw_at(b, esize, i)) {
            mine++;
            if (i < first) first = i;
        }
    add_count(mine, first, res);
}

// Elements where two runs' outputs A and B differ by more than the
// tolerance around the reference (as kv_compare_runs).
__global__ void compare_kernel(const void *a, const void *b, int dt, const double *ref,
                               const double *scale, uint64_t n, double atol, double rtol,
                               double stol, unsigned long long *res)
{
    unsigned long long mine = 0, first = ~0ull;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        double x = load_at(a, dt, i), y = load_at(b, dt, i);
        double limit = atol + rtol * fabs(ref[i]) + stol * (scale ? scale[i] : 0.0);
        int same = x == y || (isnan(x) && isnan(y)) || fabs(x - y) <= limit;
        if (!same) {
            mine++;
            if (i < first) first = i;
        }
    }
    add_count(mine, first, res);
}

#define CHECK_THREADS 128

// One part per block: OUT (dtype DT, N elements) against REF and SCALE,
// POISON the unwritten pattern (HAS_POISON), in contiguous slices so that
// each part covers one range of indices.
__global__ void __launch_bounds__(CHECK_THREADS)
    check_kernel(const void *out, int dt, const double *ref, const double *scale, uint64_t n,
                 uint32_t poison, int has_poison, double atol, double rtol, double stol,
                 kvj_part *parts)
{
    __shared__ kvj_part sh[CHECK_THREADS];
    kvj_part me;
    kvj_part_init(&me);
    int esize = dt == KV_F16 || dt == KV_BF16 ? 2 : 4;
    uint64_t per = (n + gridDim.x - 1) / gridDim.x;
    uint64_t i0 = blockIdx.x * per, i1 = i0 + per < n ? i0 + per : n;
    for (uint64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
        int poisoned = has_poison && raw_at(out, esize, i) == poison;
        double want = ref[i];
        double limit = atol + rtol * fabs(want) + stol * (scale ? scale[i] : 0.0);
        kvj_part_add(&me, i, poisoned, poisoned ? 0.0 : load_at(out, dt, i), want, limit, atol);
    }
    sh[threadIdx.x] = me;
    __syncthreads();
    for (int w = CHECK_THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) kvj_part_merge(&sh[threadIdx.x], &sh[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) parts[blockIdx.x] = sh[0];
}

static int grid_for(uint64_t n)
{
    uint64_t g = (n + 255) / 256;
    return g > 4096 ? 4096 : (g ? (int)g : 1);
}

// LAUNCH(DT, DIST) for a quick draw DIST of a dtype with a quick kernel
// (bf16, f16, f32), both as template arguments; else the statement that
// follows (variadic: a launch's <<<...>>> holds commas).
#define QUICK_DISPATCH_DT(dt, DIST, LAUNCH)                                                        \
    do {                                                                                           \
        if ((dt) == KV_BF16)                                                                       \
            LAUNCH(KV_BF16, DIST);                                                                 \
        else if ((dt) == KV_F16)                                                                   \
            LAUNCH(KV_F16, DIST);                                                                  \
        else                                                                                       \
            LAUNCH(KV_F32, DIST);                                                                  \
    } while (0)
#define QUICK_DISPATCH(dt, dist, LAUNCH, ...)                                                      \
    do {                                                                                           \
        int quick_dt_ = (dt) == KV_BF16 || (dt) == KV_F16 || (dt) == KV_F32;                       \
        if (quick_dt_ && (dist) == KVJ_QUICK_NORMAL)                                               \
            QUICK_DISPATCH_DT(dt, KVJ_QUICK_NORMAL, LAUNCH);                                       \
        else if (quick_dt_ && (dist) == KVJ_QUICK_OUTLIERS)                                        \
            QUICK_DISPATCH_DT(dt, KVJ_QUICK_OUTLIERS, LAUNCH);                                     \
        else if (quick_dt_ && (dist) == KVJ_QUICK_SMALL_INT)                                       \
            QUICK_DISPATCH_DT(dt, KVJ_QUICK_SMALL_INT, LAUNCH);                                    \
        else                                                                                       \
            __VA_ARGS__;                                                                           \
    } while (0)

extern "C" int kvj_gen(void *stream, void *p, int dt, int dist, unsigned long long n,
                       unsigned long long seed, unsigned long long forced)
{
    cudaStream_t s = (cudaStream_t)stream;
    int g = grid_for(n);
#define QUICK_GEN(DT, DIST) quick_gen_kernel<DT, DIST><<<g, 256, 0, s>>>(p, n, seed, forced)
    QUICK_DISPATCH(dt, dist, QUICK_GEN, gen_kernel<<<g, 256, 0, s>>>(p, dt, dist, n, seed, forced));
#undef QUICK_GEN
    return (int)cudaGetLastError();
}

// RES: a device buffer of two counters, reset here.
static void reset(cudaStream_t s, unsigned long long *res)
{
    unsigned long long init[2] = {0, ~0ull};
    cudaMemcpyAsync(res, init, sizeof init, cudaMemcpyHostToDevice, s);
}

// Elements equal to PATTERN in SETS runs of N elements, STRIDE elements
// apart (a timed block's outputs); res[1] the first as set * N + index. A
// row of blocks per set (the y dimension): no 64-bit division per element.
__global__ void count_sets_kernel(const void *p, int esize, uint64_t n, uint64_t sets,
                                  uint64_t stride, uint32_t pattern, unsigned long long *res)
{
    unsigned long long mine = 0, first = ~0ull;
    for (uint64_t s = blockIdx.y; s < sets; s += gridDim.y)
        for (uint64_t k = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; k < n;
             k += (uint64_t)gridDim.x * blockDim.x)
            if (raw_at(p, esize, s * stride + k) == pattern) {
                mine++;
                if (s * n + k < first) first = s * n + k;
            }
    add_count(mine, first, res);
}

extern "C" int kvj_count_equal(void *stream, const void *p, int esize, unsigned long long n,
                               unsigned long long sets, unsigned long long stride,
                               unsigned int pattern, unsigned long long *res)
{
    cudaStream_t s = (cudaStream_t)stream;
    reset(s, res);
    if (sets < 2) {
        count_kernel<<<grid_for(n), 256, 0, s>>>(p, esize, n, pattern, res);
    } else {
        // About as many blocks as one run of N * SETS elements would have.
        int gx = grid_for(n);
        uint64_t gy = (uint64_t)grid_for(n * sets) / (uint64_t)gx;
        if (gy > sets) gy = sets;
        dim3 grid(gx, gy < 1 ? 1 : gy > 65535 ? 65535 : (unsigned)gy);
        count_sets_kernel<<<grid, 256, 0, s>>>(p, esize, n, sets, stride, pattern, res);
    }
    return (int)cudaGetLastError();
}

// Spans of bytes that should all be BYTE (the canaries around an arena's
// tensors), passed by value: one launch and one answer for all of them.
struct kvj_spans {
    unsigned long long at[KVJ_MAX_SPANS], len[KVJ_MAX_SPANS];
    int n;
};

// res[0]: bytes of the spans that are not BYTE; res[1]: the first span
// holding one. Blocks (span, slice): a span's aligned middle read 16 bytes
// at a time by all its blocks (a slab of gigabytes is checked whole after
// each child), its ragged ends byte by byte.
__global__ void spans_kernel(kvj_spans sp, unsigned int byte, unsigned long long *res)
{
    const unsigned char *p = (const unsigned char *)(uintptr_t)sp.at[blockIdx.x];
    const unsigned long long len = sp.len[blockIdx.x];
    const unsigned long long me = blockIdx.y * (unsigned long long)blockDim.x + threadIdx.x,
                             step = (unsigned long long)gridDim.y * blockDim.x;
    unsigned long long head = (16 - ((uintptr_t)p & 15)) & 15;
    if (head > len) head = len;
    const unsigned long long nv = (len - head) / 16, tail = head + nv * 16;
    const unsigned int w = byte * 0x01010101u;
    const uint4 *v = (const uint4 *)(p + head);
    unsigned long long mine = 0, first = ~0ull;
    for (unsigned long long i = me; i < nv; i += step) {
        uint4 x = v[i];
        mine += (__popc(__vcmpne4(x.x, w)) + __popc(__vcmpne4(x.y, w)) +
                 __popc(__vcmpne4(x.z, w)) + __popc(__vcmpne4(x.w, w))) / 8;
    }
    for (unsigned long long i = me; i < head; i += step)
        mine += p[i] != byte;
    for (unsigned long long i = tail + me; i < len; i += step)
        mine += p[i] != byte;
    if (mine) first = blockIdx.x;
    add_count(mine, first, res);
}

extern "C" int kvj_count_spans(void *stream, const unsigned long long *at,
                               const unsigned long long *len, int n, unsigned int byte,
                               unsigned long long *res)
{
    cudaStream_t s = (cudaStream_t)stream;
    reset(s, res);
    if (n < 1) return 0;
    kvj_spans sp;
    sp.n = n > KVJ_MAX_SPANS ? KVJ_MAX_SPANS : n;
    unsigned long long most = 0;
    for (int i = 0; i < sp.n; i++) {
        sp.at[i] = at[i];
        sp.len[i] = len[i];
        if (len[i] > most) most = len[i];
    }
    // About 64 KiB a block: canaries (bytes to pages) take one, a slab many.
    unsigned long long slices = (most + 65535) / 65536;
    dim3 grid((unsigned)sp.n, slices < 1 ? 1 : slices > 4096 ? 4096 : (unsigned)slices);
    spans_kernel<<<grid, 256, 0, s>>>(sp, byte, res);
    return (int)cudaGetLastError();
}

// res[0]: elements of P that differ from their draw; res[1]: the first.
__global__ void changed_kernel(const void *p, int dt, int dist, uint64_t n, uint64_t seed,
                               uint64_t forced, unsigned long long *res)
{
    const int esize = dt == KV_F16 || dt == KV_BF16 ? 2 : 4, per = 16 / esize;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x,
                   me = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x, nv = pieces(p, esize, n);
    unsigned long long mine = 0, first = ~0ull;
    for (uint64_t v = me; v < nv; v += step) {
        uint4 got = ((const uint4 *)p)[v], want = bits16_at(dt, esize, dist, seed, forced, v * per);
        if (got.x == want.x && got.y == want.y && got.z == want.z && got.w == want.w) continue;
        for (int k = 0; k < per; k++) { // the piece's elements one by one
            uint64_t i = v * per + k;
            if (raw_at(p, esize, i) != bits_at(dt, dist, seed, forced, i)) {
                mine++;
                if (i < first) first = i;
            }
        }
    }
    for (uint64_t i = nv * per + me; i < n; i += step)
        if (raw_at(p, esize, i) != bits_at(dt, dist, seed, forced, i)) {
            mine++;
            if (i < first) first = i;
        }
    add_count(mine, first, res);
}

// changed_kernel for the quick draw DIST of dtype DT.
template <int DT, int DIST>
__global__ void quick_changed_kernel(const void *p, uint64_t n, uint64_t seed, uint64_t forced,
                                     unsigned long long *res)
{
    const int esize = DT == KV_F32 ? 4 : 2, per = 16 / esize;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x,
                   me = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x, nv = pieces(p, esize, n);
    const uint32_t key0 = quick_key(seed);
    unsigned long long mine = 0, first = ~0ull;
    for (uint64_t v = me; v < nv; v += step) {
        uint4 got = ((const uint4 *)p)[v], want = quick16_at<DT, DIST>(key0, v * per, forced);
        if (got.x == want.x && got.y == want.y && got.z == want.z && got.w == want.w) continue;
        for (int k = 0; k < per; k++) { // the piece's elements one by one
            uint64_t i = v * per + k;
            if (raw_at(p, esize, i) != bits_at(DT, DIST, seed, forced, i)) {
                mine++;
                if (i < first) first = i;
            }
        }
    }
    for (uint64_t i = nv * per + me; i < n; i += step)
        if (raw_at(p, esize, i) != bits_at(DT, DIST, seed, forced, i)) {
            mine++;
            if (i < first) first = i;
        }
    add_count(mine, first, res);
}

extern "C" int kvj_count_changed(void *stream, const void *p, int dt, int dist,
                                 unsigned long long n, unsigned long long seed,
                                 unsigned long long forced, unsigned long long *res)
{
    cudaStream_t s = (cudaStream_t)stream;
    reset(s, res);
    int g = grid_for(n);
#define QUICK_CHANGED(DT, DIST)                                                                    \
    quick_changed_kernel<DT, DIST><<<g, 256, 0, s>>>(p, n, seed, forced, res)
    QUICK_DISPATCH(dt, dist, QUICK_CHANGED,
                   changed_kernel<<<g, 256, 0, s>>>(p, dt, dist, n, seed, forced, res));
#undef QUICK_CHANGED
    return (int)cudaGetLastError();
}

extern "C" int kvj_count_diff(void *stream, const void *a, const void *b, int esize,
                              unsigned long long n, unsigned long long *res)
{
    cudaStream_t s = (cudaStream_t)stream;
    reset(s, res);
    diff_kernel<<<grid_for(n), 256, 0, s>>>(a, b, esize, n, res);
    return (int)cudaGetLastError();
}

extern "C" int kvj_compare(void *stream, const void *a, const void *b, int dt, const double *ref,
                           const double *scale, unsigned long long n, double atol, double rtol,
                           double stol, unsigned long long *res)
{
    cudaStream_t s = (cudaStream_t)stream;
    reset(s, res);
    compare_kernel<<<grid_for(n), 256, 0, s>>>(a, b, dt, ref, scale, n, atol, rtol, stol, res);
    return (int)cudaGetLastError();
}

// PARTS: room for KVJ_MAX_PARTS; *NPARTS: how many were written.
extern "C" int kvj_check(void *stream, const void *out, int dt, const double *ref,
                         const double *scale, unsigned long long n, unsigned int poison,
                         int has_poison, double atol, double rtol, double stol, kvj_part *parts,
                         int *nparts)
{
    unsigned long long g = (n + 4 * CHECK_THREADS - 1) / (4 * CHECK_THREADS);
    int grid = g > KVJ_MAX_PARTS ? KVJ_MAX_PARTS : (g ? (int)g : 1);
    *nparts = grid;
    check_kernel<<<grid, CHECK_THREADS, 0, (cudaStream_t)stream>>>(
        out, dt, ref, scale, n, poison, has_poison, atol, rtol, stol, parts);
    return (int)cudaGetLastError();
}
