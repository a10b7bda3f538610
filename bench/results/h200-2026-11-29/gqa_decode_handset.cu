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
// Tensor cores (mma) for prefill are the next axis: left to an LLM mutator
// (see tasks/gqa_attention/README.md).
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

// EVOLVE-BLOCK-START
#define VEC 8       // kevolve: tune 1 2 4 8
#define THREADS 256 // kevolve: tune 128 256 512
#define TILE_K 64   // kevolve: tune 16 32 64 128 256
#define SPLIT 16     // kevolve: tune 1 2 4 8 16 32 64
#define SHARE_KV 1  // kevolve: tune 0 1
#define ONLINE 1    // kevolve: tune 0 1

#define HEAD_DIM 128
#define PART_STRIDE (HEAD_DIM + 2) // a partial result: HEAD_DIM sums, max, sum of exp
#define SCRATCH_FLOATS (16 << 20)
#define MAXH (SHARE_KV ? 8 : 1)
#define KG (THREADS * VEC / HEAD_DIM) // key groups in the weighted sum
#define NC (HEAD_DIM / VEC)           // VEC-wide columns of a row
#define LOG2E 1.4426950408889634f

typedef unsigned short bf16_t; // bf16 bit pattern

// Partial results of split rows (64 MB, allocated when the module loads).
__device__ float g_scratch[SCRATCH_FLOATS];

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
    long long max_split = (L + TILE_K - 1) / TILE_K;
    int split = SPLIT < max_split ? SPLIT : (int)max_split;
    while (split > 1 && rows * split * PART_STRIDE > SCRATCH_FLOATS) split /= 2;
    if (split < 1) split = 1;
    static float *scratch; // looked up once, outside any graph capture
    if (!scratch && cudaGetSymbolAddress((void **)&scratch, g_scratch) != cudaSuccess) return 2;
    float *part = split > 1 ? scratch : NULL;
    dim3 grid((unsigned)(SQ * split), (unsigned)(HQ / nh), (unsigned)B);
    gqa_attn<<<grid, THREADS, 0, stream>>>(q, k, v, o, part, HQ, HKV, SQ, L, nh, split);
    if (split > 1) gqa_combine<<<(unsigned)rows, HEAD_DIM, 0, stream>>>(part, o, split);
    return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
// EVOLVE-BLOCK-END
