// The naive gqa_attention kernel for the cuda backend: the task's baseline
// (every speedup is measured against it, at the values below) and the seed
// of the SIMT design. Layout and causal rule: tasks/gqa_attention/
// gqa_attention.h; helpers: gqa_common.cuh (provided by the harness).
//
// As written it is the kernel of the published Metal experiment: one block
// per (sequence, query head, query row), a three-pass softmax (maximum, sum,
// weighted sum: k read three times), every query head re-reading its KV
// head, one bf16 per load. Its design axes, each value a correct kernel:
//   VEC       bf16 elements per load of k and v (1 = 2 bytes ... 8 = 16 bytes)
//   THREADS   threads per block
//   TILE_K    keys whose probabilities are staged in shared memory at a time
//   SPLIT     blocks per query row, each over a chunk of the keys, their
//             partial results merged by a second kernel (flash-decoding);
//             0: as many chunks as fill the GPU about four times over
//   SHARE_KV  one block serves all query heads of a KV head (up to 8), so
//             each k and v row is read once for all of them
//   ONLINE    single-pass online softmax (running maximum and sum) instead
//             of three passes
// The other designs (half-warp and tensor-core decode, tensor-core and
// Hopper prefill) are separate seeds beside this file.
#include <kevolve/task.h>
#include <gqa_attention/cuda/gqa_common.cuh>

// EVOLVE-BLOCK-START
#define VEC 1       // kevolve: tune 1 2 4 8
#define THREADS 128 // kevolve: tune 128 256 512
#define TILE_K 32   // kevolve: tune 16 32 64 128 256
#define SPLIT 1     // kevolve: tune 0 1 2 4 8 16 32 64
#define SHARE_KV 0  // kevolve: tune 0 1
#define ONLINE 0    // kevolve: tune 0 1

#define MAXH (SHARE_KV ? 8 : 1)
#define KG (THREADS * VEC / GQA_D) // key groups in the weighted sum
#define NC (GQA_D / VEC)           // VEC-wide columns of a row

__device__ __forceinline__ void loadv(const bf16_t *p, float *x)
{
#if VEC == 1
    x[0] = gqa_bf(*p);
#elif VEC == 2
    gqa_unpack2(*(const unsigned int *)p, x);
#elif VEC == 4
    uint2 u = *(const uint2 *)p;
    gqa_unpack2(u.x, x);
    gqa_unpack2(u.y, x + 2);
#else
    uint4 u = *(const uint4 *)p;
    gqa_unpack2(u.x, x);
    gqa_unpack2(u.y, x + 2);
    gqa_unpack2(u.z, x + 4);
    gqa_unpack2(u.w, x + 6);
#endif
}

// s[h] = (scaled q of head h) . krow, for the NH heads of the group.
__device__ __forceinline__ void dots(const float *qs, int nh, const bf16_t *krow, float *s)
{
#pragma unroll
    for (int h = 0; h < MAXH; h++) s[h] = 0.0f;
    for (int d = 0; d < GQA_D; d += VEC) {
        float x[VEC];
        loadv(krow + d, x);
#pragma unroll
        for (int h = 0; h < MAXH; h++)
            if (h < nh)
#pragma unroll
                for (int e = 0; e < VEC; e++) s[h] += qs[h * GQA_D + d + e] * x[e];
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
    __shared__ float qs[MAXH * GQA_D];
    __shared__ float ps[MAXH * TILE_K];
    __shared__ float red[THREADS];
    __shared__ float comb[KG * GQA_D];
    int t = threadIdx.x;
    int row = blockIdx.x / split, sp = blockIdx.x % split;
    int h0 = blockIdx.y * nh, b = blockIdx.z;
    int kvh = h0 / (HQ / HKV);
    int nkeys = L - SQ + row + 1;
    int chunk = (nkeys + split - 1) / split;
    int j0 = sp * chunk, j1 = min(nkeys, j0 + chunk);
    float qscale = rsqrtf((float)GQA_D) * GQA_LOG2E; // scores in log2 units: exp2f below
    for (int i = t; i < nh * GQA_D; i += THREADS)
        qs[i] = gqa_bf(q[(((long long)b * HQ + h0 + i / GQA_D) * SQ + row) * GQA_D +
                     i % GQA_D]) *
                qscale;
    __syncthreads();
    const bf16_t *kb = k + ((long long)b * HKV + kvh) * L * GQA_D;
    const bf16_t *vb = v + ((long long)b * HKV + kvh) * L * GQA_D;
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
        dots(qs, nh, kb + (long long)j * GQA_D, s);
#pragma unroll
        for (int h = 0; h < MAXH; h++) part_m[h] = fmaxf(part_m[h], s[h]);
    }
    #pragma unroll
    for (int h = 0; h < MAXH; h++) if (h < nh) m[h] = reduce_max(part_m[h], red);
    for (int j = j0 + t; j < j1; j += THREADS) { // pass 2: the sum
        dots(qs, nh, kb + (long long)j * GQA_D, s);
#pragma unroll
        for (int h = 0; h < MAXH; h++) part_l[h] += h < nh ? exp2f(s[h] - m[h]) : 0.0f;
    }
    #pragma unroll
    for (int h = 0; h < MAXH; h++) if (h < nh) l[h] = reduce_sum(part_l[h], red);
    for (int jt = j0; jt < j1; jt += TILE_K) { // pass 3: the weighted sum of v
        for (int jj = t; jj < TILE_K; jj += THREADS) {
            int j = jt + jj;
            if (j < j1) dots(qs, nh, kb + (long long)j * GQA_D, s);
            #pragma unroll
            for (int h = 0; h < MAXH; h++) if (h < nh) ps[h * TILE_K + jj] = j < j1 ? exp2f(s[h] - m[h]) : 0.0f;
        }
        __syncthreads();
        int n = min(TILE_K, j1 - jt);
        for (int jj = kg; jj < n; jj += KG) {
            float x[VEC];
            loadv(vb + (long long)(jt + jj) * GQA_D + c * VEC, x);
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
                dots(qs, nh, kb + (long long)j * GQA_D, s);
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
            loadv(vb + (long long)(jt + jj) * GQA_D + c * VEC, x);
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
        for (int e = 0; e < VEC; e++) comb[kg * GQA_D + c * VEC + e] = acc[h][e];
        __syncthreads();
        if (t < GQA_D) {
            float r = 0.0f;
            for (int g = 0; g < KG; g++) r += comb[g * GQA_D + t];
            long long orow = ((long long)b * HQ + h0 + h) * SQ + row;
            if (split == 1) {
                o[orow * GQA_D + t] = gqa_bf16(r / l[h]);
            } else {
                float *pp = part + (orow * split + sp) * GQA_PART;
                pp[t] = r;
                if (t == 0) {
                    pp[GQA_D] = m[h];
                    pp[GQA_D + 1] = l[h];
                }
            }
        }
    }
}

// Merges the SPLIT partial results of each query row: one block of
// GQA_D threads per row.
__global__ void __launch_bounds__(GQA_D)
    gqa_combine(const float *__restrict__ part, bf16_t *__restrict__ o, int split)
{
    long long r = blockIdx.x;
    int t = threadIdx.x;
    const float *p = part + r * split * GQA_PART;
    float mx = -INFINITY, sum = 0.0f, acc = 0.0f;
    for (int s = 0; s < split; s++) mx = fmaxf(mx, p[s * GQA_PART + GQA_D]);
    for (int s = 0; s < split; s++) {
        float w = exp2f(p[s * GQA_PART + GQA_D] - mx);
        sum += p[s * GQA_PART + GQA_D + 1] * w;
        acc += p[s * GQA_PART + t] * w;
    }
    o[r * GQA_D + t] = gqa_bf16(acc / sum);
}


// SPLIT, or with SPLIT 0 enough chunks of at least MIN_KEYS keys for about
// four blocks per multiprocessor over BLOCKS blocks per chunk.
static int choose_split(long long blocks, int L, int min_keys)
{
    long long max_split = (L + min_keys - 1) / min_keys;
    long long want = SPLIT;
    if (SPLIT == 0) want = (4LL * gqa_sm_count() + blocks - 1) / blocks;
    if (want > max_split) want = max_split;
    return want < 1 ? 1 : (int)want;
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    gqa_call c;
    int e = gqa_parse(a, &c);
    if (e) return e;
    int nh = 1;
    if (SHARE_KV)
        for (nh = c.G < 8 ? c.G : 8; c.G % nh != 0; nh--) {
        }
    long long rows = (long long)c.B * c.HQ * c.SQ;
    float *scratch = gqa_scratch_ptr();
    if (!scratch) return (int)cudaErrorInvalidSymbol;
    int split = choose_split(rows / nh, c.L, TILE_K);
    while (split > 1 && rows * split * GQA_PART > GQA_SCRATCH_FLOATS) split /= 2;
    float *part = split > 1 ? scratch : NULL;
    dim3 grid((unsigned)(c.SQ * split), (unsigned)(c.HQ / nh), (unsigned)c.B);
    gqa_attn<<<grid, THREADS, 0, c.stream>>>(c.q, c.k, c.v, c.o, part, c.HQ, c.HKV, c.SQ, c.L, nh,
                                             split);
    if (split > 1) gqa_combine<<<(unsigned)rows, GQA_D, 0, c.stream>>>(part, c.o, split);
    return (int)cudaGetLastError(); // 0 is cudaSuccess; the harness names the others
}
// EVOLVE-BLOCK-END
