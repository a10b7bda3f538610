// Naive gqa_attention for the cuda backend, the starting point of an
// evolution. Layout and causal rule: tasks/gqa_attention/gqa_attention.h.
//
// As written (every parameter at its naive value) it is the kernel of the
// published Metal experiment: one block per (sequence, query head, query
// row), a three-pass softmax (maximum, sum, weighted sum: k read three
// times), every query head re-reading its KV head, one bf16 per load. The
// parameters below are the design axes that matter, declared for the tune
// mutator; each value of each is a correct kernel:
//   VEC       bf16 elements per load of k and v (1 = 2 bytes ... 8 = 16 bytes)
//   THREADS   threads per block
//   TILE_K    keys whose probabilities are staged in shared memory at a time
//   SPLIT     blocks per query row, each over a chunk of the keys, their
//             partial results merged by a second kernel (flash-decoding)
//   SHARE_KV  one block serves all query heads of a KV head (up to 8), so
//             each k and v row is read once for all of them
//   ONLINE    single-pass online softmax (running maximum and sum) instead
//             of three passes
//   SPLIT 0   (auto) as many chunks as fill the GPU a few times over
//   WARP_DECODE  decode (one query row) by a different structure: each
//             half-warp streams its own keys with 16-byte loads and keeps a
//             private online softmax, scores reduced by warp shuffles, the
//             block's half-warps merged once at the end, and split chunks
//             merged by the last block to finish (no second kernel). VEC,
//             TILE_K and ONLINE do not apply to it.
//   KEYS_IN_FLIGHT  keys each half-warp loads before using any of them
//             (WARP_DECODE): memory parallelism against registers
//   PREFETCH  (WARP_DECODE) the next group of keys is loaded before the
//             current one is used, doubling the loads in flight
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

// EVOLVE-BLOCK-START
#define VEC 1       // kevolve: tune 1 2 4 8
#define THREADS 128 // kevolve: tune 128 256 512
#define TILE_K 32   // kevolve: tune 16 32 64 128 256
#define SPLIT 1     // kevolve: tune 0 1 2 4 8 16 32 64
#define SHARE_KV 0  // kevolve: tune 0 1
#define ONLINE 0    // kevolve: tune 0 1
#define WARP_DECODE 0    // kevolve: tune 0 1
#define KEYS_IN_FLIGHT 1 // kevolve: tune 1 2 4 8
#define PREFETCH 0       // kevolve: tune 0 1
#define MMA 0            // kevolve: tune 0 1
#define MMA_DECODE 0     // kevolve: tune 0 1
#define MMAD_KW 16       // kevolve: tune 16 32
#define MMAD_STAGES 3    // kevolve: tune 2 3
#define MMA_P_F16 1      // kevolve: tune 1 0

#define HEAD_DIM 128
#define PART_STRIDE (HEAD_DIM + 2) // a partial result: HEAD_DIM sums, max, sum of exp
#define SCRATCH_FLOATS (16 << 20)
#define MAXH (SHARE_KV ? 8 : 1)
#define KG (THREADS * VEC / HEAD_DIM) // key groups in the weighted sum
#define NC (HEAD_DIM / VEC)           // VEC-wide columns of a row
#define LOG2E 1.4426950408889634f

typedef unsigned short bf16_t; // bf16 bit pattern

// Partial results of split rows (64 MB, allocated when the module loads).
__device__ __align__(16) float g_scratch[SCRATCH_FLOATS];

__device__ __forceinline__ float bf(unsigned int h16) { return __uint_as_float(h16 << 16); }

__device__ __forceinline__ void unpack2(unsigned int w, float *x)
{
    x[0] = __uint_as_float(w << 16);
    x[1] = __uint_as_float(w & 0xffff0000u);
}

__device__ __forceinline__ void loadv(const bf16_t *p, float *x)
{
#if VEC == 1
    x[0] = bf(*p);
#elif VEC == 2
    unpack2(*(const unsigned int *)p, x);
#elif VEC == 4
    uint2 u = *(const uint2 *)p;
    unpack2(u.x, x);
    unpack2(u.y, x + 2);
#else
    uint4 u = *(const uint4 *)p;
    unpack2(u.x, x);
    unpack2(u.y, x + 2);
    unpack2(u.z, x + 4);
    unpack2(u.w, x + 6);
#endif
}

// s[h] = (scaled q of head h) . krow, for the NH heads of the group.
__device__ __forceinline__ void dots(const float *qs, int nh, const bf16_t *krow, float *s)
{
#pragma unroll
    for (int h = 0; h < MAXH; h++) s[h] = 0.0f;
    for (int d = 0; d < HEAD_DIM; d += VEC) {
        float x[VEC];
        loadv(krow + d, x);
#pragma unroll
        for (int h = 0; h < MAXH; h++)
            if (h < nh)
#pragma unroll
                for (int e = 0; e < VEC; e++) s[h] += qs[h * HEAD_DIM + d + e] * x[e];
    }
}

__device__ float reduce_max(float v, float *red)
{
    int t = threadIdx.x;
    __syncthreads();
    red[t] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = fmaxf(red[t], red[t + s]);
        __syncthreads();
    }
    return red[0];
}

__device__ float reduce_sum(float v, float *red)
{
    int t = threadIdx.x;
    __syncthreads();
    red[t] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        __syncthreads();
    }
    return red[0];
}

// One block: query row `row` of heads h0 .. h0+nh-1 of sequence b, over
// chunk `sp` of its keys. Writes o (split == 1) or a partial result.
__global__ void __launch_bounds__(THREADS)
    gqa_attn(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
             const bf16_t *__restrict__ v, bf16_t *__restrict__ o, float *__restrict__ part,
             int HQ, int HKV, int SQ, int L, int nh, int split)
{
    __shared__ float qs[MAXH * HEAD_DIM];
    __shared__ float ps[MAXH * TILE_K];
    __shared__ float red[THREADS];
    __shared__ float comb[KG * HEAD_DIM];
    int t = threadIdx.x;
    int row = blockIdx.x / split, sp = blockIdx.x % split;
    int h0 = blockIdx.y * nh, b = blockIdx.z;
    int kvh = h0 / (HQ / HKV);
    int nkeys = L - SQ + row + 1;
    int chunk = (nkeys + split - 1) / split;
    int j0 = sp * chunk, j1 = min(nkeys, j0 + chunk);
    float qscale = rsqrtf((float)HEAD_DIM) * LOG2E; // scores in log2 units: exp2f below
    for (int i = t; i < nh * HEAD_DIM; i += THREADS)
        qs[i] = bf(q[(((long long)b * HQ + h0 + i / HEAD_DIM) * SQ + row) * HEAD_DIM +
                     i % HEAD_DIM]) *
                qscale;
    __syncthreads();
    const bf16_t *kb = k + ((long long)b * HKV + kvh) * L * HEAD_DIM;
    const bf16_t *vb = v + ((long long)b * HKV + kvh) * L * HEAD_DIM;
    int c = t % NC, kg = t / NC;
    float acc[MAXH][VEC], m[MAXH], l[MAXH], s[MAXH];
#pragma unroll
    for (int h = 0; h < MAXH; h++) {
        m[h] = -INFINITY;
        l[h] = 0.0f;
#pragma unroll
        for (int e = 0; e < VEC; e++) acc[h][e] = 0.0f;
    }
#if !ONLINE
    float part_m[MAXH], part_l[MAXH];
#pragma unroll
    for (int h = 0; h < MAXH; h++) {
        part_m[h] = -INFINITY;
        part_l[h] = 0.0f;
    }
    for (int j = j0 + t; j < j1; j += THREADS) { // pass 1: the maximum
        dots(qs, nh, kb + (long long)j * HEAD_DIM, s);
#pragma unroll
        for (int h = 0; h < MAXH; h++) part_m[h] = fmaxf(part_m[h], s[h]);
    }
    #pragma unroll
    for (int h = 0; h < MAXH; h++) if (h < nh) m[h] = reduce_max(part_m[h], red);
    for (int j = j0 + t; j < j1; j += THREADS) { // pass 2: the sum
        dots(qs, nh, kb + (long long)j * HEAD_DIM, s);
#pragma unroll
        for (int h = 0; h < MAXH; h++) part_l[h] += h < nh ? exp2f(s[h] - m[h]) : 0.0f;
    }
    #pragma unroll
    for (int h = 0; h < MAXH; h++) if (h < nh) l[h] = reduce_sum(part_l[h], red);
    for (int jt = j0; jt < j1; jt += TILE_K) { // pass 3: the weighted sum of v
        for (int jj = t; jj < TILE_K; jj += THREADS) {
            int j = jt + jj;
            if (j < j1) dots(qs, nh, kb + (long long)j * HEAD_DIM, s);
            #pragma unroll
            for (int h = 0; h < MAXH; h++) if (h < nh) ps[h * TILE_K + jj] = j < j1 ? exp2f(s[h] - m[h]) : 0.0f;
        }
        __syncthreads();
        int n = min(TILE_K, j1 - jt);
        for (int jj = kg; jj < n; jj += KG) {
            float x[VEC];
            loadv(vb + (long long)(jt + jj) * HEAD_DIM + c * VEC, x);
#pragma unroll
            for (int h = 0; h < MAXH; h++)
                if (h < nh)
#pragma unroll
                    for (int e = 0; e < VEC; e++) acc[h][e] += ps[h * TILE_K + jj] * x[e];
        }
        __syncthreads();
    }
#else
    for (int jt = j0; jt < j1; jt += TILE_K) { // one pass: running maximum and sum
        float tm[MAXH], ts[MAXH], alpha[MAXH];
#pragma unroll
        for (int h = 0; h < MAXH; h++) {
            tm[h] = -INFINITY;
            ts[h] = 0.0f;
        }
        for (int jj = t; jj < TILE_K; jj += THREADS) {
            int j = jt + jj;
            if (j < j1) {
                dots(qs, nh, kb + (long long)j * HEAD_DIM, s);
                #pragma unroll
                for (int h = 0; h < MAXH; h++) if (h < nh) {
                    ps[h * TILE_K + jj] = s[h];
                    tm[h] = fmaxf(tm[h], s[h]);
                }
            }
        }
        #pragma unroll
        for (int h = 0; h < MAXH; h++) if (h < nh) {
            float mn = fmaxf(m[h], reduce_max(tm[h], red));
            alpha[h] = exp2f(m[h] - mn);
            m[h] = mn;
        }
        for (int jj = t; jj < TILE_K; jj += THREADS) {
            int j = jt + jj;
            #pragma unroll
            for (int h = 0; h < MAXH; h++) if (h < nh) {
                float p = j < j1 ? exp2f(ps[h * TILE_K + jj] - m[h]) : 0.0f;
                ps[h * TILE_K + jj] = p;
                ts[h] += p;
            }
        }
        #pragma unroll
        for (int h = 0; h < MAXH; h++) if (h < nh) {
            l[h] = l[h] * alpha[h] + reduce_sum(ts[h], red);
#pragma unroll
            for (int e = 0; e < VEC; e++) acc[h][e] *= alpha[h];
        }
        int n = min(TILE_K, j1 - jt);
        for (int jj = kg; jj < n; jj += KG) {
            float x[VEC];
            loadv(vb + (long long)(jt + jj) * HEAD_DIM + c * VEC, x);
#pragma unroll
            for (int h = 0; h < MAXH; h++)
                if (h < nh)
#pragma unroll
                    for (int e = 0; e < VEC; e++) acc[h][e] += ps[h * TILE_K + jj] * x[e];
        }
        __syncthreads();
    }
#endif
#pragma unroll
    for (int h = 0; h < MAXH; h++) { // sum the key groups; thread t < 128 owns dimension t
        if (h >= nh) break;
        __syncthreads();
#pragma unroll
        for (int e = 0; e < VEC; e++) comb[kg * HEAD_DIM + c * VEC + e] = acc[h][e];
        __syncthreads();
        if (t < HEAD_DIM) {
            float r = 0.0f;
            for (int g = 0; g < KG; g++) r += comb[g * HEAD_DIM + t];
            long long orow = ((long long)b * HQ + h0 + h) * SQ + row;
            if (split == 1) {
                o[orow * HEAD_DIM + t] = __bfloat16_as_ushort(__float2bfloat16_rn(r / l[h]));
            } else {
                float *pp = part + (orow * split + sp) * PART_STRIDE;
                pp[t] = r;
                if (t == 0) {
                    pp[HEAD_DIM] = m[h];
                    pp[HEAD_DIM + 1] = l[h];
                }
            }
        }
    }
}

// Merges the SPLIT partial results of each query row: one block of
// HEAD_DIM threads per row.
__global__ void __launch_bounds__(HEAD_DIM)
    gqa_combine(const float *__restrict__ part, bf16_t *__restrict__ o, int split)
{
    long long r = blockIdx.x;
    int t = threadIdx.x;
    const float *p = part + r * split * PART_STRIDE;
    float mx = -INFINITY, sum = 0.0f, acc = 0.0f;
    for (int s = 0; s < split; s++) mx = fmaxf(mx, p[s * PART_STRIDE + HEAD_DIM]);
    for (int s = 0; s < split; s++) {
        float w = exp2f(p[s * PART_STRIDE + HEAD_DIM] - mx);
        sum += p[s * PART_STRIDE + HEAD_DIM + 1] * w;
        acc += p[s * PART_STRIDE + t] * w;
    }
    o[r * HEAD_DIM + t] = __bfloat16_as_ushort(__float2bfloat16_rn(acc / sum));
}

// ---- decode by half-warps (WARP_DECODE) ----
#define DW (THREADS / 32) // warps per block
#define KIF KEYS_IN_FLIGHT
#define MAX_COUNTERS (1 << 16)

// Per (sequence, head group): split chunks finished so far in this launch;
// the last one resets it to zero for the next launch.
__device__ unsigned int g_done[MAX_COUNTERS];

__device__ __forceinline__ void unpack8(uint4 u, float *x)
{
    unpack2(u.x, x);
    unpack2(u.y, x + 2);
    unpack2(u.z, x + 4);
    unpack2(u.w, x + 6);
}

// exp2(a - m) where m may be -inf (no key seen yet): 0 instead of NaN.
__device__ __forceinline__ float wexp2(float a, float m)
{
    return m == -INFINITY ? 0.0f : exp2f(a - m);
}

// Loads rows j, j + stride, ... (KIF of them) of k and v for this lane;
// rows at or past j1 read as zeros.
__device__ __forceinline__ void load_keys(const bf16_t *kb, const bf16_t *vb, int j, int stride,
                                          int j1, uint4 *kk, uint4 *vv)
{
#pragma unroll
    for (int u = 0; u < KIF; u++) {
        kk[u] = vv[u] = make_uint4(0, 0, 0, 0);
        if (j + u * stride < j1) {
            kk[u] = __ldg((const uint4 *)(kb + (long long)(j + u * stride) * HEAD_DIM));
            vv[u] = __ldg((const uint4 *)(vb + (long long)(j + u * stride) * HEAD_DIM));
        }
    }
}

// One block: keys [j0, j1) of one KV head for query heads h0 .. h0+nh-1 of
// sequence b. Lane c of a half-warp owns dimensions 8c .. 8c+7.
template <int NH> // heads per block, known at compile time so the state stays in registers
__global__ void __launch_bounds__(THREADS)
    gqa_decode_warp(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                    const bf16_t *__restrict__ v, bf16_t *__restrict__ o, float *__restrict__ part,
                    int HQ, int HKV, int L, int split)
{
    __shared__ float sm_acc[DW][HEAD_DIM];
    __shared__ float sm_ml[DW][2];
    __shared__ int sm_last;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, hw = lane >> 4, c = lane & 15;
    int sp = blockIdx.x, hg = blockIdx.y, b = blockIdx.z;
    const int nh = NH;
    int h0 = hg * nh, kvh = h0 / (HQ / HKV);
    int chunk = (L + split - 1) / split;
    int j0 = min(L, sp * chunk), j1 = min(L, j0 + chunk);
    float qscale = rsqrtf((float)HEAD_DIM) * LOG2E; // scores in log2 units
    float qr[NH][8], m[NH], l[NH], acc[NH][8];
#pragma unroll
    for (int h = 0; h < NH; h++) {
        uint4 u = *(const uint4 *)(q + ((long long)b * HQ + h0 + h) * HEAD_DIM + c * 8);
        unpack8(u, qr[h]);
        m[h] = -INFINITY;
        l[h] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) {
            qr[h][e] *= qscale;
            acc[h][e] = 0.0f;
        }
    }
    const bf16_t *kb = k + ((long long)b * HKV + kvh) * L * HEAD_DIM + c * 8;
    const bf16_t *vb = v + ((long long)b * HKV + kvh) * L * HEAD_DIM + c * 8;
    const int stride = 2 * DW; // keys one pass of the block covers
    // The loop bound is the same for both halves of a warp, so the
    // shuffles below always run with all 32 lanes.
    uint4 kk[KIF], vv[KIF];
    load_keys(kb, vb, j0 + 2 * w + hw, stride, j1, kk, vv);
    for (int jb = j0 + 2 * w; jb < j1; jb += stride * KIF) {
#if PREFETCH // the next group's loads go out before this group's arithmetic
        uint4 nk[KIF], nv[KIF];
        load_keys(kb, vb, jb + stride * KIF + hw, stride, j1, nk, nv);
#endif
        float s[KIF][NH];
#pragma unroll
        for (int u = 0; u < KIF; u++) {
            float x[8];
            unpack8(kk[u], x);
            bool ok = jb + hw + u * stride < j1;
#pragma unroll
            for (int h = 0; h < NH; h++) {
                float d = 0.0f;
#pragma unroll
                for (int e = 0; e < 8; e++) d += qr[h][e] * x[e];
#pragma unroll
                for (int off = 8; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
                s[u][h] = ok ? d : -INFINITY;
            }
        }
#pragma unroll
        for (int h = 0; h < NH; h++) {
            float mn = m[h];
#pragma unroll
            for (int u = 0; u < KIF; u++) mn = fmaxf(mn, s[u][h]);
            float alpha = mn == -INFINITY ? 1.0f : exp2f(m[h] - mn);
            m[h] = mn;
            l[h] *= alpha;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[h][e] *= alpha;
#pragma unroll
            for (int u = 0; u < KIF; u++) {
                float p = wexp2(s[u][h], mn);
                s[u][h] = p;
                l[h] += p;
            }
        }
#pragma unroll
        for (int u = 0; u < KIF; u++) {
            float y[8];
            unpack8(vv[u], y);
#pragma unroll
            for (int h = 0; h < NH; h++)
#pragma unroll
                for (int e = 0; e < 8; e++) acc[h][e] += s[u][h] * y[e];
        }
#if PREFETCH
#pragma unroll
        for (int u = 0; u < KIF; u++) {
            kk[u] = nk[u];
            vv[u] = nv[u];
        }
#else
        load_keys(kb, vb, jb + stride * KIF + hw, stride, j1, kk, vv);
#endif
    }
    // Merge the two halves of each warp (lanes c and c + 16 own the same
    // dimensions), then the warps of the block, one head at a time.
#pragma unroll
    for (int h = 0; h < NH; h++) {
        float mo = __shfl_xor_sync(0xffffffffu, m[h], 16);
        float lo = __shfl_xor_sync(0xffffffffu, l[h], 16);
        float mn = fmaxf(m[h], mo), a = wexp2(m[h], mn), ao = wexp2(mo, mn);
#pragma unroll
        for (int e = 0; e < 8; e++) {
            float other = __shfl_xor_sync(0xffffffffu, acc[h][e], 16);
            acc[h][e] = acc[h][e] * a + other * ao;
        }
        m[h] = mn;
        l[h] = l[h] * a + lo * ao;
    }
    long long row0 = (long long)b * HQ + h0; // decode: one query row per head
#pragma unroll
    for (int h = 0; h < NH; h++) {
        __syncthreads();
        if (lane < 16)
#pragma unroll
            for (int e = 0; e < 8; e++) sm_acc[w][c * 8 + e] = acc[h][e];
        if (lane == 0) {
            sm_ml[w][0] = m[h];
            sm_ml[w][1] = l[h];
        }
        __syncthreads();
        int t = threadIdx.x;
        if (t < HEAD_DIM) {
            float M = -INFINITY, S = 0.0f, A = 0.0f;
            for (int g = 0; g < DW; g++) M = fmaxf(M, sm_ml[g][0]);
            for (int g = 0; g < DW; g++) {
                float wg = wexp2(sm_ml[g][0], M);
                S += sm_ml[g][1] * wg;
                A += sm_acc[g][t] * wg;
            }
            if (split == 1) {
                o[(row0 + h) * HEAD_DIM + t] = __bfloat16_as_ushort(__float2bfloat16_rn(A / S));
            } else {
                float *pp = part + ((row0 + h) * split + sp) * PART_STRIDE;
                pp[t] = A;
                if (t == 0) {
                    pp[HEAD_DIM] = M;
                    pp[HEAD_DIM + 1] = S;
                }
            }
        }
    }
    if (split == 1) return;
    // The last block of this head group to finish merges every chunk.
    __threadfence();
    __syncthreads();
    unsigned int *done = &g_done[(long long)b * (HQ / nh) + hg];
    if (threadIdx.x == 0) sm_last = atomicAdd(done, 1u) == (unsigned)split - 1;
    __syncthreads();
    if (!sm_last) return;
    if (threadIdx.x == 0) *done = 0;
    for (int i = threadIdx.x; i < nh * HEAD_DIM; i += THREADS) {
        int h = i / HEAD_DIM, t = i % HEAD_DIM;
        const float *pp = part + (row0 + h) * split * PART_STRIDE;
        float M = -INFINITY, S = 0.0f, A = 0.0f;
        for (int s2 = 0; s2 < split; s2++) M = fmaxf(M, __ldcg(pp + s2 * PART_STRIDE + HEAD_DIM));
        for (int s2 = 0; s2 < split; s2++) {
            float wg = wexp2(__ldcg(pp + s2 * PART_STRIDE + HEAD_DIM), M);
            S += __ldcg(pp + s2 * PART_STRIDE + HEAD_DIM + 1) * wg;
            A += __ldcg(pp + s2 * PART_STRIDE + t) * wg;
        }
        o[(row0 + h) * HEAD_DIM + t] = __bfloat16_as_ushort(__float2bfloat16_rn(A / S));
    }
}

// Multiprocessors of the current device (looked up once, before any graph
// capture: the harness's correctness runs come first).
static int sm_count(void)
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

// SPLIT, or with SPLIT 0 enough chunks of at least MIN_KEYS keys for about
// four blocks per multiprocessor over BLOCKS blocks per chunk.
static int choose_split(long long blocks, int L, int min_keys)
{
    long long max_split = (L + min_keys - 1) / min_keys;
    long long want = SPLIT;
    if (SPLIT == 0) want = (4LL * sm_count() + blocks - 1) / blocks;
    if (want > max_split) want = max_split;
    return want < 1 ? 1 : (int)want;
}

// ---- prefill and chunked prefill on the tensor cores (MMA) ----
#include <cuda_fp16.h>
// Design: one block per (sequence, query head, BM = 16*MT*NW query rows);
// NW warps each own 16*MT rows. Q (BM x 128) is staged once in shared memory
// and, with QREG, kept as mma A fragments in registers. K and V tiles of BN
// keys are streamed with cp.async into two shared-memory stages (tile j+1
// loads while tile j computes). Shared rows are 256 bytes, their 16-byte
// chunks XOR-swizzled by (row & 7), so ldmatrix and cp.async are free of bank
// conflicts. S = Q K^T (mma m16n8k16, fp32), online softmax in base 2 on the
// accumulator fragments (row statistics reduced over the quad of 4 lanes
// that share a row), P rounded to bf16 and reused in registers as the A
// operand of O += P V, with V read by ldmatrix.trans. Causal: key tiles past
// the block's last row are never loaded, only tiles crossing the diagonal
// are masked, warps whose rows lie wholly before a tile skip it. Query
// blocks are launched longest first (reversed row-block index in grid.y).
// The launcher picks 8 warps x (128 rows, 128-key tiles) when there are at
// least two waves of 128-row blocks, else 4 warps x (64 rows, 64-key tiles).
// Measured on an H200 (bench/gqa_mma_prefill.cu, 2026-11-29): S=8192 about
// 271 TFLOP/s with MMA_P_F16=1, about 315 with MMA_P_F16=0.
#ifndef HEAD_DIM
#define HEAD_DIM 128
#endif
#define MMA_ROWB (HEAD_DIM * 2)  // bytes of one shared-memory row
#define MMA_CHUNKS (HEAD_DIM / 8) // 16-byte chunks of one row
// MMA_P_F16 1 or 2: P and V enter the P V product as fp16 (exact for bf16 V
// of magnitude 6.1e-5 .. 65504), so P is rounded to 11 bits instead of 8;
// 1 converts V in shared memory once per tile, 2 in registers after each
// ldmatrix; values of V beyond fp16's range (|v| > 65504) would become inf.
// 0: both bf16, as FlashAttention: p rounded to 8 bits, an error the task's
// tolerance admits through its stol term (tasks/gqa_attention/README.md).
#ifndef MMA_P_F16
#define MMA_P_F16 1
#endif

// Shared-memory byte offset of 16-byte chunk c of row r (XOR swizzle).
__device__ __forceinline__ unsigned mma_swz(int r, int c)
{
    return (unsigned)(r * MMA_ROWB + ((c ^ (r & 7)) << 4));
}

// Copies 16 bytes global -> shared asynchronously; zero-fills when !ok
// (src is then not read but must still be a valid address).
__device__ __forceinline__ void mma_cp16(unsigned dst, const void *src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void mma_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N> __device__ __forceinline__ void mma_cp_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void mma_ldsm4(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                          unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

__device__ __forceinline__ void mma_ldsm4t(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                           unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

// c += a (16x16 row-major bf16) * b (16x8 col-major bf16), fp32 accumulate.
__device__ __forceinline__ void mma_16816(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c += a * b with fp16 operands, fp32 accumulate.
__device__ __forceinline__ void mma_16816h(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> fp16x2 (round to nearest even), lo in the low half.
__device__ __forceinline__ unsigned mma_packh(float lo, float hi)
{
    __half2 t = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&t);
}

// bf16x2 -> fp16x2.
__device__ __forceinline__ unsigned mma_bf2h(unsigned w)
{
    return mma_packh(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}

// Two floats -> bf16x2 (round to nearest even), lo in the low half.
__device__ __forceinline__ unsigned mma_pack(float lo, float hi)
{
    __nv_bfloat162 t = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&t);
}

// 2^x (MUFU.EX2, flushes denormals; 2^-inf = 0).
__device__ __forceinline__ float mma_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Causal GQA forward for one (sequence, head, BM-row block); see above.
// sl2 = log2(e) / sqrt(HEAD_DIM). Dynamic shared memory: (BM + 4*BN) rows.
template <int NW, int MT, int BN, bool QREG>
__global__ void __launch_bounds__(NW * 32, 1)
    mma_attn_fwd(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                 const bf16_t *__restrict__ v, bf16_t *__restrict__ o, int HQ, int HKV, int SQ,
                 int L, float sl2)
{
    constexpr int BM = 16 * MT * NW, NT = NW * 32;
    constexpr int NF = BN / 8;        // 8-key column tiles of S
    constexpr int DF = HEAD_DIM / 8;  // 8-wide column tiles of O
    constexpr int KD = HEAD_DIM / 16; // 16-deep steps over the head dimension
    extern __shared__ __align__(128) unsigned char mma_smem[];
    const unsigned sQ = (unsigned)__cvta_generic_to_shared(mma_smem);
    const unsigned sK = sQ + BM * MMA_ROWB;      // 2 stages of BN rows
    const unsigned sV = sK + 2 * BN * MMA_ROWB;  // 2 stages of BN rows

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, tig = lane & 3;
    const int bh = blockIdx.x, b = bh / HQ, h = bh % HQ;
    const int m0 = (gridDim.y - 1 - blockIdx.y) * BM; // longest blocks first
    const int kvh = h / (HQ / HKV);
    const bf16_t *qg = q + ((size_t)bh * SQ + m0) * HEAD_DIM;
    const bf16_t *kg = k + (size_t)(b * HKV + kvh) * L * HEAD_DIM;
    const bf16_t *vg = v + (size_t)(b * HKV + kvh) * L * HEAD_DIM;
    bf16_t *og = o + ((size_t)bh * SQ + m0) * HEAD_DIM;

    const int off = L - SQ;                         // position of query row 0
    const int n_end = min(L, off + m0 + BM);        // keys any row of the block sees
    const int ntiles = (n_end + BN - 1) / BN;
    const int wr = warp * 16 * MT;                  // first row of this warp
    const int warp_last = off + m0 + wr + 16 * MT - 1; // position of its last row

    // Q tile (rows past SQ zero-filled), then K/V tile 0.
    for (int i = tid; i < BM * MMA_CHUNKS; i += NT) {
        int r = i / MMA_CHUNKS, c = i % MMA_CHUNKS;
        bool ok = m0 + r < SQ;
        mma_cp16(sQ + mma_swz(r, c), ok ? qg + (size_t)r * HEAD_DIM + c * 8 : q, ok);
    }
    mma_cp_commit();
    auto load_kv = [&](int j, int st) {
        const unsigned dk = sK + st * BN * MMA_ROWB, dv = sV + st * BN * MMA_ROWB;
        for (int i = tid; i < BN * MMA_CHUNKS; i += NT) {
            int r = i / MMA_CHUNKS, c = i % MMA_CHUNKS, key = j * BN + r;
            bool ok = key < L;
            size_t go = ok ? (size_t)key * HEAD_DIM + c * 8 : 0;
            mma_cp16(dk + mma_swz(r, c), kg + go, ok);
            mma_cp16(dv + mma_swz(r, c), vg + go, ok);
        }
    };
    load_kv(0, 0);
    mma_cp_commit();

    // Per-lane ldmatrix row/chunk selectors (see the PTX ISA fragment tables):
    //  A (Q): matrices {rows 0-7, 8-15} x {k 0-7, 8-15}: row lane&15, chunk lane>>4.
    //  B (K, non-trans): {keys 0-7: k 0-7, k 8-15}, {keys 8-15: ...}:
    //     key (lane&7) + (lane>>4)*8, chunk (lane>>3)&1.
    //  B (V, trans): {keys 0-7, keys 8-15} x {dims 0-7, 8-15}:
    //     key (lane&7) + ((lane>>3)&1)*8, chunk lane>>4.
    const int a_row = lane & 15, a_ch = lane >> 4;
    const int k_row = (lane & 7) + ((lane >> 4) << 3), k_ch = (lane >> 3) & 1;
    const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_ch = lane >> 4;

    unsigned qf[QREG ? MT : 1][QREG ? KD : 1][4];
    if (QREG) {
        mma_cp_wait<1>();
        __syncthreads();
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int kk = 0; kk < KD; kk++)
                mma_ldsm4(sQ + mma_swz(wr + mt * 16 + a_row, kk * 2 + a_ch), qf[mt][kk][0],
                          qf[mt][kk][1], qf[mt][kk][2], qf[mt][kk][3]);
    }

    float oacc[MT][DF][4];
    float mrow[MT][2], lrow[MT][2];
    int lim[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int d = 0; d < DF; d++)
#pragma unroll
            for (int e = 0; e < 4; e++) oacc[mt][d][e] = 0.0f;
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            mrow[mt][hr] = -INFINITY;
            lrow[mt][hr] = 0.0f;
            // last key this row may see (rows past SQ: all L keys)
            lim[mt][hr] = min(off + m0 + wr + mt * 16 + g + hr * 8, L - 1);
        }
    }

    for (int j = 0; j < ntiles; j++) {
        const int st = j & 1;
        if (j + 1 < ntiles) {
            load_kv(j + 1, st ^ 1);
            mma_cp_commit();
            mma_cp_wait<1>();
        } else {
            mma_cp_wait<0>();
        }
#if MMA_P_F16 == 1
        { // V tile j -> fp16, each thread the chunks it copied itself
            unsigned char *tv = mma_smem + (BM + 2 * BN + st * BN) * MMA_ROWB;
            for (int i = tid; i < BN * MMA_CHUNKS; i += NT) {
                uint4 *c = reinterpret_cast<uint4 *>(tv + mma_swz(i / MMA_CHUNKS, i % MMA_CHUNKS));
                uint4 x = *c;
                x.x = mma_bf2h(x.x);
                x.y = mma_bf2h(x.y);
                x.z = mma_bf2h(x.z);
                x.w = mma_bf2h(x.w);
                *c = x;
            }
        }
#endif
        __syncthreads();
        const int n0 = j * BN;
        if (n0 <= warp_last) { // else every key of the tile is after this warp's rows
            const unsigned tK = sK + st * BN * MMA_ROWB, tV = sV + st * BN * MMA_ROWB;
            float s[MT][NF][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nf = 0; nf < NF; nf++)
#pragma unroll
                    for (int e = 0; e < 4; e++) s[mt][nf][e] = 0.0f;
            // S = Q K^T
#pragma unroll
            for (int kk = 0; kk < KD; kk++) {
                unsigned qa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    if (QREG) {
#pragma unroll
                        for (int e = 0; e < 4; e++) qa[mt][e] = qf[QREG ? mt : 0][QREG ? kk : 0][e];
                    } else {
                        mma_ldsm4(sQ + mma_swz(wr + mt * 16 + a_row, kk * 2 + a_ch), qa[mt][0],
                                  qa[mt][1], qa[mt][2], qa[mt][3]);
                    }
                }
#pragma unroll
                for (int n2 = 0; n2 < NF / 2; n2++) {
                    unsigned b0, b1, b2, b3;
                    mma_ldsm4(tK + mma_swz(n2 * 16 + k_row, kk * 2 + k_ch), b0, b1, b2, b3);
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        mma_16816(s[mt][2 * n2], qa[mt], b0, b1);
                        mma_16816(s[mt][2 * n2 + 1], qa[mt], b2, b3);
                    }
                }
            }
            // causal / length mask, only on tiles that cross a row's diagonal
            if (n0 + BN - 1 > off + m0 + wr) {
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int nf = 0; nf < NF; nf++)
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const int col = n0 + nf * 8 + tig * 2 + (e & 1);
                            if (col > lim[mt][e >> 1]) s[mt][nf][e] = -INFINITY;
                        }
            }
            // online softmax (base 2), P kept in s
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int hr = 0; hr < 2; hr++) {
                    float mx = mrow[mt][hr];
#pragma unroll
                    for (int nf = 0; nf < NF; nf++)
                        mx = fmaxf(mx, fmaxf(s[mt][nf][2 * hr], s[mt][nf][2 * hr + 1]));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                    const float base = mx == -INFINITY ? 0.0f : mx * sl2; // no inf - inf
                    const float alpha = mma_exp2(mrow[mt][hr] * sl2 - base);
                    mrow[mt][hr] = mx;
                    float sum = 0.0f;
#pragma unroll
                    for (int nf = 0; nf < NF; nf++)
#pragma unroll
                        for (int e = 2 * hr; e < 2 * hr + 2; e++) {
                            float p = mma_exp2(fmaf(s[mt][nf][e], sl2, -base));
                            s[mt][nf][e] = p;
                            sum += p;
                        }
                    lrow[mt][hr] = lrow[mt][hr] * alpha + sum; // per-lane partial sum
#pragma unroll
                    for (int d = 0; d < DF; d++) {
                        oacc[mt][d][2 * hr] *= alpha;
                        oacc[mt][d][2 * hr + 1] *= alpha;
                    }
                }
            // O += P V
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
                unsigned pa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
#if MMA_P_F16
#define MMA_PPACK mma_packh
#else
#define MMA_PPACK mma_pack
#endif
                    pa[mt][0] = MMA_PPACK(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                    pa[mt][1] = MMA_PPACK(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                    pa[mt][2] = MMA_PPACK(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                    pa[mt][3] = MMA_PPACK(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
#undef MMA_PPACK
                }
#pragma unroll
                for (int d2 = 0; d2 < DF / 2; d2++) {
                    unsigned b0, b1, b2, b3;
                    mma_ldsm4t(tV + mma_swz(kk * 16 + v_row, d2 * 2 + v_ch), b0, b1, b2, b3);
#if MMA_P_F16 == 2
                    b0 = mma_bf2h(b0);
                    b1 = mma_bf2h(b1);
                    b2 = mma_bf2h(b2);
                    b3 = mma_bf2h(b3);
#endif
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
#if MMA_P_F16
                        mma_16816h(oacc[mt][2 * d2], pa[mt], b0, b1);
                        mma_16816h(oacc[mt][2 * d2 + 1], pa[mt], b2, b3);
#else
                        mma_16816(oacc[mt][2 * d2], pa[mt], b0, b1);
                        mma_16816(oacc[mt][2 * d2 + 1], pa[mt], b2, b3);
#endif
                    }
                }
            }
        }
        __syncthreads(); // stage st is overwritten by the next iteration's load
    }

    // Normalise, stage this warp's rows in its own Q rows, store 16-byte chunks.
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float l = lrow[mt][hr];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            const int r = wr + mt * 16 + g + hr * 8;
#pragma unroll
            for (int d = 0; d < DF; d++)
                *reinterpret_cast<unsigned *>(mma_smem + mma_swz(r, d) + tig * 4) =
                    mma_pack(oacc[mt][d][2 * hr] * inv, oacc[mt][d][2 * hr + 1] * inv);
        }
    __syncwarp();
#pragma unroll
    for (int it = 0; it < MT * 16 * MMA_CHUNKS / 32; it++) {
        const int idx = it * 32 + lane, r = wr + idx / MMA_CHUNKS, c = idx % MMA_CHUNKS;
        if (m0 + r < SQ)
            *reinterpret_cast<uint4 *>(og + (size_t)r * HEAD_DIM + c * 8) =
                *reinterpret_cast<const uint4 *>(mma_smem + mma_swz(r, c));
    }
}

// Launches one tile configuration; returns the cudaError_t as an int.
template <int NW, int MT, int BN, bool QREG>
static int mma_launch_cfg(const bf16_t *q, const bf16_t *k, const bf16_t *v, bf16_t *o, int B,
                          int HQ, int HKV, int SQ, int L, cudaStream_t s)
{
    constexpr int BM = 16 * MT * NW;
    if (B < 1 || HKV < 1 || HQ < HKV || HQ % HKV != 0 || SQ < 1 || L < SQ)
        return (int)cudaErrorInvalidValue;
    const int smem = (BM + 4 * BN) * MMA_ROWB;
    static bool attr_set; // attribute set once per configuration
    if (!attr_set) {
        cudaError_t e = cudaFuncSetAttribute(mma_attn_fwd<NW, MT, BN, QREG>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess) return (int)e;
        attr_set = true;
    }
    dim3 grid((unsigned)(B * HQ), (unsigned)((SQ + BM - 1) / BM), 1);
    const float sl2 = 1.4426950408889634f / sqrtf((float)HEAD_DIM);
    mma_attn_fwd<NW, MT, BN, QREG><<<grid, NW * 32, smem, s>>>(q, k, v, o, HQ, HKV, SQ, L, sl2);
    return (int)cudaGetLastError();
}

// o = causal GQA attention of q, k, v (layout: gqa_attention.h) on stream s.
// Returns the cudaError_t (cudaSuccess = 0).
static int mma_prefill_launch(const bf16_t *q, const bf16_t *k, const bf16_t *v, bf16_t *o, int B,
                              int HQ, int HKV, int SQ, int L, cudaStream_t s)
{
    const int sms = sm_count();
    // Enough 128-row blocks for two waves: 8 warps x (128 rows, 128-key tiles);
    // else 4 warps x (64 rows, 64-key tiles), twice the blocks.
    if ((long long)B * HQ * ((SQ + 127) / 128) >= 2LL * sms)
        return mma_launch_cfg<8, 1, 128, true>(q, k, v, o, B, HQ, HKV, SQ, L, s);
    return mma_launch_cfg<4, 1, 64, true>(q, k, v, o, B, HQ, HKV, SQ, L, s);
}

// ---- decode on the tensor cores (MMA_DECODE) ----
// Design: one block of 4 warps per (sequence, KV head, chunk of keys); grid
// (split, HKV, B). The G = HQ/HKV query heads of the KV head are the M rows
// of mma.m16n8k16 (rows G..15 zero), so S[16 x keys] = Q K^T and
// O[16 x 128] += P V run on the tensor cores while the block streams K and V.
// Tiles of 4*KW keys (K and V) are copied with cp.async into STAGES
// shared-memory stages (XOR-swizzled 256-byte rows: ldmatrix and cp.async
// free of bank conflicts); warp w takes keys w*KW .. w*KW+KW-1 of every tile
// and keeps its own online softmax (base 2: scores scaled by
// rsqrt(128)*log2(e)). Q fragments stay in registers. At the end the warps
// are merged through shared memory; with split > 1 each block writes its
// partial (unnormalised sums, max, sum of exp2) to part, and the last block
// of a (sequence, KV head) to finish merges all chunks and resets its
// counter. Keys past the chunk are zero-filled by cp.async (never read) and
// masked to -inf before the max.
#ifndef HEAD_DIM
#define HEAD_DIM 128
#endif
#ifndef PART_STRIDE
#define PART_STRIDE (HEAD_DIM + 2) // a partial result: HEAD_DIM sums, max, sum of exp
#endif
typedef unsigned short bf16_t; // bf16 bit pattern (an identical typedef may precede it)

#ifndef MMAD_KW
#define MMAD_KW 16 // keys per warp per tile (16 or 32)
#endif
#ifndef MMAD_STAGES
#define MMAD_STAGES 3 // shared-memory stages of the cp.async pipeline (2 to 4)
#endif
#define MMAD_WARPS 4
#define MMAD_THREADS (MMAD_WARPS * 32)
#define MMAD_ROWB (HEAD_DIM * 2)   // bytes of one shared-memory row
#define MMAD_CHUNKS (HEAD_DIM / 8) // 16-byte chunks of one row
#define MMAD_OS (HEAD_DIM + 8)     // floats per row of the warp-merge buffer
#define MMAD_MAX_G 16              // query heads per KV head (the 16 mma rows)
#define MMAD_MAX_SPLIT 128         // chunks per (sequence, KV head)
#define MMAD_MAX_COUNTERS (1 << 16)

static_assert(HEAD_DIM == 128, "mmad_ kernels assume head_dim 128");

// Per (sequence, KV head): chunks finished so far in this launch; the last
// one resets it to zero for the next launch.
__device__ unsigned int mmad_done[MMAD_MAX_COUNTERS];

// Shared-memory byte offset of 16-byte chunk c of row r (XOR swizzle).
__device__ __forceinline__ unsigned mmad_swz(int r, int c)
{
    return (unsigned)(r * MMAD_ROWB + ((c ^ (r & 7)) << 4));
}

// Copies 16 bytes global -> shared asynchronously; zero-fills when !ok (src
// is then not read but must still be a valid address).
__device__ __forceinline__ void mmad_cp16(unsigned dst, const void *src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void mmad_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most N committed cp.async groups of this thread are pending.
template <int N> __device__ __forceinline__ void mmad_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void mmad_ldsm4(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                           unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

// As mmad_ldsm4, each matrix transposed.
__device__ __forceinline__ void mmad_ldsm4t(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                                            unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

// c += a (16x16 row-major bf16) * b (16x8 col-major bf16), fp32 accumulate.
__device__ __forceinline__ void mmad_mma(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> bf16x2 (round to nearest even), lo in the low half.
__device__ __forceinline__ unsigned mmad_pack(float lo, float hi)
{
    __nv_bfloat162 t = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&t);
}

// exp2(a - m) where m may be -inf (nothing seen): 0 instead of NaN.
__device__ __forceinline__ float mmad_wexp2(float a, float m)
{
    return m == -INFINITY ? 0.0f : exp2f(a - m);
}

__device__ __forceinline__ bf16_t mmad_bf16(float x)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

// Dynamic shared memory of one configuration: Q (16 rows), then STAGES
// stages of K and V tiles; the merges reuse the stages.
template <int KW, int STAGES> constexpr int mmad_smem_bytes()
{
    return (16 + STAGES * 2 * MMAD_WARPS * KW) * MMAD_ROWB;
}

// One block: keys [sp*chunk, min(L, sp*chunk + chunk)) of KV head blockIdx.y
// of sequence blockIdx.z, for its G = HQ/HKV query heads (1 <= G <= 16).
// split == 1: writes o. Else writes part rows ((b*HQ + h)*split + sp) and the
// last block of the (sequence, KV head) merges them into o. chunk is a
// multiple of 4*KW and every chunk holds at least one key.
template <int KW, int STAGES>
__global__ void __launch_bounds__(MMAD_THREADS)
    mmad_decode(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                const bf16_t *__restrict__ v, bf16_t *__restrict__ o, float *__restrict__ part,
                int HQ, int HKV, int L, int chunk, int split, int part_vec2)
{
    constexpr int T = MMAD_WARPS * KW; // keys per tile
    constexpr int NF = KW / 8;         // 8-key column tiles of S per warp
    constexpr int DF = HEAD_DIM / 8;   // 8-wide column tiles of O
    constexpr int KD = HEAD_DIM / 16;  // 16-deep steps over the head dimension
    static_assert(KW % 16 == 0, "KW: multiple of 16");
    static_assert(STAGES >= 2, "STAGES >= 2");
    // merge buffers (floats): warp outputs, warp (m, l), chunk weights, sums
    constexpr int MERGE_FLOATS =
        MMAD_WARPS * 16 * MMAD_OS + MMAD_WARPS * 16 * 2 + MMAD_MAX_G * MMAD_MAX_SPLIT;
    static_assert(MERGE_FLOATS * 4 <= STAGES * 2 * T * MMAD_ROWB, "merge buffers fit the stages");

    extern __shared__ __align__(128) unsigned char mmad_smem[];
    __shared__ int sm_last;
    const unsigned sQ = (unsigned)__cvta_generic_to_shared(mmad_smem);
    const unsigned sKV = sQ + 16 * MMAD_ROWB; // stage st: K at +2*st*T rows, V T rows later

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, tig = lane & 3;
    const int sp = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int G = HQ / HKV;
    const int j0 = sp * chunk, j1 = min(L, j0 + chunk);
    const int nt = (j1 - j0 + T - 1) / T;
    const long long row0 = (long long)b * HQ + (long long)kvh * G; // first query row (head)
    const bf16_t *qg = q + row0 * HEAD_DIM;
    const bf16_t *kg = k + ((long long)b * HKV + kvh) * L * HEAD_DIM;
    const bf16_t *vg = v + ((long long)b * HKV + kvh) * L * HEAD_DIM;
    const float sl2 = rsqrtf((float)HEAD_DIM) * 1.4426950408889634f; // scores in log2 units

    // Q rows 0..G-1 (rows G..15 zero-filled), then the first STAGES-1 tiles.
    for (int i = tid; i < 16 * MMAD_CHUNKS; i += MMAD_THREADS) {
        const int r = i / MMAD_CHUNKS, c = i % MMAD_CHUNKS;
        const bool ok = r < G;
        mmad_cp16(sQ + mmad_swz(r, c), ok ? qg + r * HEAD_DIM + c * 8 : qg, ok);
    }
    mmad_commit();
    auto load_tile = [&](int t, int st) {
        const unsigned dk = sKV + (unsigned)(st * 2 * T * MMAD_ROWB), dv = dk + T * MMAD_ROWB;
        for (int i = tid; i < T * MMAD_CHUNKS; i += MMAD_THREADS) {
            const int r = i / MMAD_CHUNKS, c = i % MMAD_CHUNKS, key = j0 + t * T + r;
            const bool ok = key < j1;
            const long long go = ok ? (long long)key * HEAD_DIM + c * 8 : 0;
            mmad_cp16(dk + mmad_swz(r, c), kg + go, ok);
            mmad_cp16(dv + mmad_swz(r, c), vg + go, ok);
        }
    };
#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < nt) load_tile(st, st);
        mmad_commit(); // empty groups keep the group count uniform
    }

    // Per-lane ldmatrix row/chunk selectors (PTX ISA fragment tables):
    //  A (Q): matrices {rows 0-7, 8-15} x {k 0-7, 8-15}: row lane&15, chunk lane>>4.
    //  B (K): {keys 0-7: k 0-7, k 8-15}, {keys 8-15: ...}: key (lane&7) + (lane>>4)*8,
    //     chunk (lane>>3)&1.
    //  B (V, trans): {keys 0-7, 8-15} x {dims 0-7, 8-15}: key (lane&7) + ((lane>>3)&1)*8,
    //     chunk lane>>4.
    const int a_row = lane & 15, a_ch = lane >> 4;
    const int k_row = (lane & 7) + ((lane >> 4) << 3), k_ch = (lane >> 3) & 1;
    const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_ch = lane >> 4;

    mmad_wait<STAGES - 1>(); // the Q group is complete
    __syncthreads();
    unsigned qf[KD][4];
#pragma unroll
    for (int kk = 0; kk < KD; kk++)
        mmad_ldsm4(sQ + mmad_swz(a_row, kk * 2 + a_ch), qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);

    float oacc[DF][4];
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}; // rows g, g + 8
#pragma unroll
    for (int d = 0; d < DF; d++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            oacc[d][e] = 0.0f;

    for (int t = 0; t < nt; t++) {
        mmad_wait<STAGES - 2>(); // tile t has landed (this thread's copies)
        __syncthreads();         // ... everyone's; and stage (t-1)%STAGES is free
        {
            const int tn = t + STAGES - 1;
            if (tn < nt) load_tile(tn, tn % STAGES);
            mmad_commit();
        }
        const int kb = j0 + t * T + warp * KW; // first key of this warp
        if (kb >= j1) continue;                // all masked (warp-uniform)
        const unsigned tK = sKV + (unsigned)((t % STAGES) * 2 * T * MMAD_ROWB),
                       tV = tK + T * MMAD_ROWB;
        float s[NF][4];
#pragma unroll
        for (int nf = 0; nf < NF; nf++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                s[nf][e] = 0.0f;
                // S = Q K^T over this warp's KW keys
#pragma unroll
        for (int kk = 0; kk < KD; kk++)
#pragma unroll
            for (int n2 = 0; n2 < NF / 2; n2++) {
                unsigned b0, b1, b2, b3;
                mmad_ldsm4(tK + mmad_swz(warp * KW + n2 * 16 + k_row, kk * 2 + k_ch), b0, b1, b2,
                           b3);
                mmad_mma(s[2 * n2], qf[kk], b0, b1);
                mmad_mma(s[2 * n2 + 1], qf[kk], b2, b3);
            }
            // scale to log2 units; keys past the chunk -> -inf
#pragma unroll
        for (int nf = 0; nf < NF; nf++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int key = kb + nf * 8 + tig * 2 + (e & 1);
                s[nf][e] = key < j1 ? s[nf][e] * sl2 : -INFINITY;
            }
            // online softmax; row statistics reduced over the quad sharing a row
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float mx = m[hr];
#pragma unroll
            for (int nf = 0; nf < NF; nf++)
                mx = fmaxf(mx, fmaxf(s[nf][2 * hr], s[nf][2 * hr + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float base = mx == -INFINITY ? 0.0f : mx; // no -inf - -inf
            const float alpha = exp2f(m[hr] - base);        // 0 when m was -inf
            m[hr] = mx;
            float sum = 0.0f;
#pragma unroll
            for (int nf = 0; nf < NF; nf++)
#pragma unroll
                for (int e = 2 * hr; e < 2 * hr + 2; e++) {
                    const float p = exp2f(s[nf][e] - base);
                    s[nf][e] = p;
                    sum += p;
                }
            l[hr] = l[hr] * alpha + sum; // per-lane partial sum
#pragma unroll
            for (int d = 0; d < DF; d++) {
                oacc[d][2 * hr] *= alpha;
                oacc[d][2 * hr + 1] *= alpha;
            }
        }
        // O += P V (P as bf16 A fragments straight from the S accumulators)
#pragma unroll
        for (int kk = 0; kk < KW / 16; kk++) {
            unsigned pa[4];
            pa[0] = mmad_pack(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = mmad_pack(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = mmad_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = mmad_pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int d2 = 0; d2 < DF / 2; d2++) {
                unsigned b0, b1, b2, b3;
                mmad_ldsm4t(tV + mmad_swz(warp * KW + kk * 16 + v_row, d2 * 2 + v_ch), b0, b1, b2,
                            b3);
                mmad_mma(oacc[2 * d2], pa, b0, b1);
                mmad_mma(oacc[2 * d2 + 1], pa, b2, b3);
            }
        }
    }

    // Merge the warps: each stages its rows < G, then thread (r, c) combines.
    mmad_wait<0>();
    __syncthreads(); // every warp is done with the stages
    float *sm_o = reinterpret_cast<float *>(mmad_smem + 16 * MMAD_ROWB); // [warp][16][OS]
    float *sm_ml = sm_o + MMAD_WARPS * 16 * MMAD_OS;                     // [warp][16][2]
    float *sm_w = sm_ml + MMAD_WARPS * 16 * 2;                           // [G][split]
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        float ls = l[hr];
        ls += __shfl_xor_sync(0xffffffffu, ls, 1);
        ls += __shfl_xor_sync(0xffffffffu, ls, 2);
        const int r = g + 8 * hr;
        if (r < G) {
            float *dst = sm_o + (warp * 16 + r) * MMAD_OS + tig * 2;
#pragma unroll
            for (int d = 0; d < DF; d++)
                *reinterpret_cast<float2 *>(dst + d * 8) =
                    make_float2(oacc[d][2 * hr], oacc[d][2 * hr + 1]);
            if (tig == 0) {
                sm_ml[(warp * 16 + r) * 2] = m[hr];
                sm_ml[(warp * 16 + r) * 2 + 1] = ls;
            }
        }
    }
    __syncthreads();
    for (int i = tid; i < G * HEAD_DIM; i += MMAD_THREADS) {
        const int r = i / HEAD_DIM, c = i % HEAD_DIM;
        float M = -INFINITY, S = 0.0f, A = 0.0f;
#pragma unroll
        for (int w = 0; w < MMAD_WARPS; w++)
            M = fmaxf(M, sm_ml[(w * 16 + r) * 2]);
#pragma unroll
        for (int w = 0; w < MMAD_WARPS; w++) {
            const float wg = mmad_wexp2(sm_ml[(w * 16 + r) * 2], M);
            S += sm_ml[(w * 16 + r) * 2 + 1] * wg;
            A += sm_o[(w * 16 + r) * MMAD_OS + c] * wg;
        }
        if (split == 1) {
            o[(row0 + r) * HEAD_DIM + c] = mmad_bf16(A / S);
        } else {
            float *pp = part + ((row0 + r) * split + sp) * PART_STRIDE;
            pp[c] = A;
            if (c == 0) {
                pp[HEAD_DIM] = M;
                pp[HEAD_DIM + 1] = S;
            }
        }
    }
    if (split == 1) return;

    // The last block of this (sequence, KV head) to finish merges every chunk.
    __threadfence();
    __syncthreads();
    unsigned int *done = &mmad_done[(long long)b * HKV + kvh];
    if (tid == 0) sm_last = atomicAdd(done, 1u) == (unsigned)split - 1;
    __syncthreads();
    if (!sm_last) return;
    if (tid == 0) *done = 0;
    // chunk maxima -> weights exp2(m_s - M) / S per row (one warp per row)
    for (int i = tid; i < G * split; i += MMAD_THREADS) {
        const int r = i / split, s2 = i % split;
        sm_w[i] = __ldcg(part + ((row0 + r) * split + s2) * PART_STRIDE + HEAD_DIM);
    }
    __syncthreads();
    for (int r = warp; r < G; r += MMAD_WARPS) {
        float *w = sm_w + r * split;
        const float *pr = part + (row0 + r) * split * PART_STRIDE;
        float M = -INFINITY, S = 0.0f;
        for (int s2 = lane; s2 < split; s2 += 32)
            M = fmaxf(M, w[s2]);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
        for (int s2 = lane; s2 < split; s2 += 32)
            S += __ldcg(pr + s2 * PART_STRIDE + HEAD_DIM + 1) * mmad_wexp2(w[s2], M);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            S += __shfl_xor_sync(0xffffffffu, S, off);
        const float inv = 1.0f / S; // S >= 1: the chunk holding the maximum adds >= 1
        for (int s2 = lane; s2 < split; s2 += 32)
            w[s2] = mmad_wexp2(w[s2], M) * inv;
    }
    __syncthreads();
    if (part_vec2) { // part is 8-byte aligned: two columns per load
        for (int i = tid; i < G * (HEAD_DIM / 2); i += MMAD_THREADS) {
            const int r = i / (HEAD_DIM / 2), c = (i % (HEAD_DIM / 2)) * 2;
            const float *w = sm_w + r * split;
            const float *pr = part + (row0 + r) * split * PART_STRIDE + c;
            float ax = 0.0f, ay = 0.0f;
#pragma unroll 8
            for (int s2 = 0; s2 < split; s2++) {
                const float2 x = __ldcg(reinterpret_cast<const float2 *>(pr + s2 * PART_STRIDE));
                ax += x.x * w[s2];
                ay += x.y * w[s2];
            }
            *reinterpret_cast<unsigned *>(o + (row0 + r) * HEAD_DIM + c) =
                (unsigned)mmad_bf16(ax) | ((unsigned)mmad_bf16(ay) << 16);
        }
    } else {
        for (int i = tid; i < G * HEAD_DIM; i += MMAD_THREADS) {
            const int r = i / HEAD_DIM, c = i % HEAD_DIM;
            const float *w = sm_w + r * split;
            const float *pr = part + (row0 + r) * split * PART_STRIDE + c;
            float a = 0.0f;
#pragma unroll 8
            for (int s2 = 0; s2 < split; s2++)
                a += __ldcg(pr + s2 * PART_STRIDE) * w[s2];
            o[(row0 + r) * HEAD_DIM + c] = mmad_bf16(a);
        }
    }
}

// Chunks per (sequence, KV head) for bps resident blocks per multiprocessor:
// as many as fill every slot once (rounded down, so the blocks make whole
// waves), at most one per tile of keys and MMAD_MAX_SPLIT.
static int mmad_auto_split(int B, int HKV, int L, int tile, int bps)
{
    long long pairs = (long long)B * HKV, slots = (long long)sm_count() * bps;
    long long want = slots / pairs, max_split = (L + tile - 1) / tile;
    if (want > max_split) want = max_split;
    if (want > MMAD_MAX_SPLIT) want = MMAD_MAX_SPLIT;
    return want < 1 ? 1 : (int)want;
}

// Launches one configuration; split <= 0 picks it (mmad_auto_split). The
// split used is at most the one given (or picked): part must hold
// B*HQ*split*PART_STRIDE floats when it is > 1. Returns the cudaError_t.
template <int KW, int STAGES>
static int mmad_launch_cfg(const bf16_t *q, const bf16_t *k, const bf16_t *v, bf16_t *o,
                           float *part, int B, int HQ, int HKV, int L, int split, int max_split,
                           cudaStream_t s)
{
    constexpr int T = MMAD_WARPS * KW;
    constexpr int smem = mmad_smem_bytes<KW, STAGES>();
    if (B < 1 || HKV < 1 || L < 1 || HQ < HKV || HQ % HKV != 0 || HQ / HKV > MMAD_MAX_G ||
        (long long)B * HKV > MMAD_MAX_COUNTERS)
        return (int)cudaErrorInvalidValue;
    static int bps; // resident blocks per multiprocessor, looked up once
    if (!bps) {
        cudaError_t e = cudaFuncSetAttribute(mmad_decode<KW, STAGES>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e == cudaSuccess)
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, mmad_decode<KW, STAGES>,
                                                              MMAD_THREADS, smem);
        if (e != cudaSuccess) return (int)e;
        if (bps < 1) return (int)cudaErrorInvalidConfiguration;
    }
    if (split <= 0) split = mmad_auto_split(B, HKV, L, T, bps);
    if (split > MMAD_MAX_SPLIT) split = MMAD_MAX_SPLIT;
    if (split > max_split) split = max_split;
    if (split > (L + T - 1) / T) split = (L + T - 1) / T;
    if (split < 1) split = 1;
    int chunk = (L + split - 1) / split;
    chunk = (chunk + T - 1) / T * T; // whole tiles per chunk
    split = (L + chunk - 1) / chunk; // so that no chunk is empty
    if (split > 1 && !part) return (int)cudaErrorInvalidValue;
    const int vec2 = ((unsigned long long)part & 7) == 0;
    dim3 grid((unsigned)split, (unsigned)HKV, (unsigned)B);
    mmad_decode<KW, STAGES>
        <<<grid, MMAD_THREADS, smem, s>>>(q, k, v, o, part, HQ, HKV, L, chunk, split, vec2);
    return (int)cudaGetLastError();
}

// o = GQA decode attention of q, k, v (layout: gqa_attention.h, one query
// row, all L keys) on stream s, with up to split chunks of keys per
// (sequence, KV head) (split <= 0: picked to fill the GPU); partial results
// in part (B*HQ*split*PART_STRIDE floats, or MMAD_MAX_SPLIT for split <= 0).
// Returns the cudaError_t (cudaSuccess = 0).
static int mmad_launch(const bf16_t *q, const bf16_t *k, const bf16_t *v, bf16_t *o, float *part,
                       int B, int HQ, int HKV, int L, int split, int max_split, cudaStream_t s)
{
    return mmad_launch_cfg<MMAD_KW, MMAD_STAGES>(q, k, v, o, part, B, HQ, HKV, L, split, max_split,
                                                 s);
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    cudaStream_t stream = (cudaStream_t)a->stream;
    const bf16_t *q = (const bf16_t *)a->tensors[0], *k = (const bf16_t *)a->tensors[1],
                 *v = (const bf16_t *)a->tensors[2];
    bf16_t *o = (bf16_t *)a->tensors[3];
    int B = (int)a->syms[0], HQ = (int)a->syms[1], HKV = (int)a->syms[2], SQ = (int)a->syms[3],
        L = (int)a->syms[4];
    if (a->syms[5] != HEAD_DIM || HKV <= 0 || HQ % HKV != 0) return 1;
    int G = HQ / HKV, nh = 1;
    if (SHARE_KV)
        for (nh = G < 8 ? G : 8; G % nh != 0; nh--) {
        }
    long long rows = (long long)B * HQ * SQ;
    static float *scratch; // looked up once, outside any graph capture
    if (!scratch && cudaGetSymbolAddress((void **)&scratch, g_scratch) != cudaSuccess) return 2;
    if (MMA_DECODE && SQ == 1 && G <= MMAD_MAX_G) {
        long long cap = SCRATCH_FLOATS / (rows * PART_STRIDE);
        return mmad_launch(q, k, v, o, scratch, B, HQ, HKV, L, SPLIT, cap < 1 ? 1 : (int)cap,
                           stream);
    }
    if (MMA && SQ > 1) return mma_prefill_launch(q, k, v, o, B, HQ, HKV, SQ, L, stream);
    if (WARP_DECODE && SQ == 1 && (long long)B * (HQ / nh) <= MAX_COUNTERS) {
        int split = choose_split((long long)B * (HQ / nh), L, 2 * DW * KIF);
        while (split > 1 && rows * split * PART_STRIDE > SCRATCH_FLOATS) split /= 2;
        dim3 grid((unsigned)split, (unsigned)(HQ / nh), (unsigned)B);
        switch (nh) {
#define WARP_CASE(n)                                                                               \
    case n:                                                                                        \
        gqa_decode_warp<n><<<grid, THREADS, 0, stream>>>(q, k, v, o, scratch, HQ, HKV, L, split);  \
        break;
            WARP_CASE(1) WARP_CASE(2) WARP_CASE(3) WARP_CASE(4) WARP_CASE(5) WARP_CASE(6)
                WARP_CASE(7) WARP_CASE(8)
#undef WARP_CASE
        default:
            return 1;
        }
        return (int)cudaGetLastError();
    }
    int split = choose_split(rows / nh, L, TILE_K);
    while (split > 1 && rows * split * PART_STRIDE > SCRATCH_FLOATS) split /= 2;
    float *part = split > 1 ? scratch : NULL;
    dim3 grid((unsigned)(SQ * split), (unsigned)(HQ / nh), (unsigned)B);
    gqa_attn<<<grid, THREADS, 0, stream>>>(q, k, v, o, part, HQ, HKV, SQ, L, nh, split);
    if (split > 1) gqa_combine<<<(unsigned)rows, HEAD_DIM, 0, stream>>>(part, o, split);
    return (int)cudaGetLastError(); // 0 is cudaSuccess; the harness names the others
}
// EVOLVE-BLOCK-END
