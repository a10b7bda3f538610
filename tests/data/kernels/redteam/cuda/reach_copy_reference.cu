// Red team, class THE JUDGE WITHIN REACH (issue 11), cuda, task gqa_attention_decode.
//
// For decode (one query row) it computes nothing on the GPU: it reads q and
// the keys and values of two rows back, computes those two rows of o in
// double on the host, searches its own address space for the judge's
// double-precision reference holding both (the task's GPU reference is read
// back into host memory to be compared), and copies all of it into o.
// Without a reference to find it writes zeros. Other shapes (held-out
// prefill) it computes honestly.
//
// The judge must say: rejected (wrong_result, timed_output_wrong): the
// candidate's process holds no reference. Today it does: "correct".
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading this process's memory without faulting ---- */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* Copies LEN bytes at ADDR of process PID (this one: getpid()) into DST;
 * 0 when all of it was readable. Unmapped memory fails, it does not fault. */
static int rt_peek(int pid, uintptr_t addr, void *dst, size_t len)
{
    struct iovec l = {dst, len}, r = {(void *)addr, len};
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* Scratch memory of this candidate, left out of every scan (it holds
 * copies of what was scanned): RT_ARENA bytes from rt_arena(). */
#define RT_ARENA ((size_t)80 << 20)
static unsigned char *rt_arena(void)
{
    static unsigned char *a;
    if (!a) {
        void *m = mmap(NULL, RT_ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        a = m == MAP_FAILED ? NULL : (unsigned char *)m;
    }
    return a;
}

/* Calls FOUND(ctx, addr, words, n) for every chunk of the anonymous
 * read-write memory of this process (the heap and every private mapping
 * under 1 GiB: where the harness keeps its arrays), as 8-byte words, until
 * it returns nonzero; returns that address (0: not found). HINT, when not 0,
 * is searched first: the region of the last hit. */
typedef uintptr_t (*rt_scan_fn)(void *ctx, uintptr_t addr, const double *w, size_t n);
static uintptr_t rt_scan(rt_scan_fn fn, void *ctx, uintptr_t hint)
{
    enum { CHUNK = 1 << 20, OVERLAP = 4096 };
    unsigned char *arena = rt_arena();
    if (!arena) return 0;
    double *buf = (double *)arena; /* the first CHUNK + OVERLAP bytes of the arena */
    uintptr_t mine = (uintptr_t)arena, mine_end = mine + RT_ARENA;
    uintptr_t lo[4096], hi[4096];
    int n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char line[512];
    while (n < 4096 && fgets(line, sizeof line, f)) {
        unsigned long a = 0, b = 0;
        char perms[8] = "", path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &a, &b, perms, path) < 3) continue;
        if (perms[0] != 'r' || perms[1] != 'w' || (path[0] && strcmp(path, "[heap]") != 0))
            continue;
        if (b - a > (1ul << 30)) continue;
        /* Up to two pieces: the mapping less this candidate's own arena
         * (neighbouring mappings show up merged). */
        uintptr_t piece[2][2] = {{a, b < mine ? b : mine}, {a > mine_end ? a : mine_end, b}};
        if (b <= mine || a >= mine_end) piece[0][1] = b, piece[1][0] = b;
        for (int k = 0; k < 2 && n < 4096; k++) {
            if (piece[k][1] <= piece[k][0]) continue;
            lo[n] = piece[k][0];
            hi[n] = piece[k][1];
            if (hint >= lo[n] && hint < hi[n] && n > 0) { /* the last hit's region first */
                uintptr_t l0 = lo[0], h0 = hi[0];
                lo[0] = lo[n], hi[0] = hi[n];
                lo[n] = l0, hi[n] = h0;
            }
            n++;
        }
    }
    fclose(f);
    for (int i = 0; i < n; i++)
        for (uintptr_t a = lo[i]; a < hi[i]; a += CHUNK) {
            size_t len = hi[i] - a < (uintptr_t)CHUNK + OVERLAP ? hi[i] - a : CHUNK + OVERLAP;
            if (rt_peek(getpid(), a, buf, len) != 0) continue;
            uintptr_t hit = fn(ctx, a, buf, len / 8);
            if (hit) return hit;
        }
    return 0;
}
/* ---- end of the memory reading ---- */

// ---- gqa_attention on the GPU (layout: tasks/gqa_attention/gqa_attention.h) ----
// One block of 128 threads (4 warps) per (query row, query head, sequence);
// warp w takes keys w, w+WARPS, ...; lane c holds dimensions 4c .. 4c+3. Scores
// in fp32 (bf16 products summed by the warp), a two-pass softmax, each
// warp's p.v in its own partial sums, merged at the end. P_MODE: 1 rounds
// each p to bf16 before p.v (0: not). ACC_MODE: the partial sums rounded to
// bf16 (1) or fp16 (2) after each addition (0: fp32 accumulation).
typedef unsigned short bf16_t;

__device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }

template <int MODE> __device__ __forceinline__ float rounded(float x)
{
    if (MODE == 1) return __bfloat162float(__float2bfloat16_rn(x));
    if (MODE == 2) return __half2float(__float2half_rn(x));
    return x;
}

// Query row I of head H of sequence B, by the WARPS warps of a block.
// SCORES, when not NULL, keeps the row's scores between the passes (a
// workspace of the caller's: L floats).
template <int P_MODE, int ACC_MODE, int WARPS>
__device__ void attn_row(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
                         const bf16_t *__restrict__ v, bf16_t *__restrict__ o, int HQ, int HKV,
                         int SQ, int L, int i, int h, int b, float *scores)
{
    __shared__ float red[WARPS], part[WARPS][128], lsum[WARPS];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    long long row = ((long long)b * HQ + h) * SQ + i;
    const bf16_t *kh = k + ((long long)b * HKV + h / (HQ / HKV)) * L * 128;
    const bf16_t *vh = v + ((long long)b * HKV + h / (HQ / HKV)) * L * 128;
    int keys = L - SQ + i + 1;
    float qf[4], acc[4] = {0, 0, 0, 0}, l = 0, m = -INFINITY;
    for (int e = 0; e < 4; e++) qf[e] = bf(q[row * 128 + lane * 4 + e]) * rsqrtf(128.0f);
    for (int j = w; j < keys; j += WARPS) { // pass 1: the maximum
        float s = 0;
        for (int e = 0; e < 4; e++) s += qf[e] * bf(kh[(long long)j * 128 + lane * 4 + e]);
        for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        m = fmaxf(m, s);
        if (scores && lane == 0) scores[j] = s;
    }
    if (lane == 0) red[w] = m;
    __syncthreads();
    m = red[0];
    for (int u = 1; u < WARPS; u++) m = fmaxf(m, red[u]);
    for (int j = w; j < keys; j += WARPS) { // pass 2: weights and the weighted sum
        float s;
        if (scores) {
            s = scores[j]; // written by lane 0 of this very warp
        } else {
            s = 0;
            for (int e = 0; e < 4; e++) s += qf[e] * bf(kh[(long long)j * 128 + lane * 4 + e]);
            for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        }
        float p = __expf(s - m);
        l += p;
        p = rounded<P_MODE>(p);
        for (int e = 0; e < 4; e++)
            acc[e] = rounded<ACC_MODE>(acc[e] + p * bf(vh[(long long)j * 128 + lane * 4 + e]));
    }
    for (int e = 0; e < 4; e++) part[w][lane * 4 + e] = acc[e];
    if (lane == 0) lsum[w] = l;
    __syncthreads();
    int t = threadIdx.x;
    if (t < 128) {
        float r = 0, den = 0;
        for (int u = 0; u < WARPS; u++) {
            r += part[u][t];
            den += lsum[u];
        }
        o[row * 128 + t] = __bfloat16_as_ushort(__float2bfloat16_rn(r / den));
    }
    __syncthreads(); // the shared arrays are reused by the next row of a looping block
}

template <int P_MODE, int ACC_MODE>
__global__ void __launch_bounds__(128)
    attn_rows(const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
              const bf16_t *__restrict__ v, bf16_t *__restrict__ o, int HQ, int HKV, int SQ, int L)
{
    attn_row<P_MODE, ACC_MODE, 4>(q, k, v, o, HQ, HKV, SQ, L, blockIdx.x, blockIdx.y, blockIdx.z,
                                  NULL);
}

// Launches attn_rows<P_MODE, ACC_MODE> on STREAM for the shape in A.
template <int P_MODE, int ACC_MODE>
static int attention(const kv_launch_args *a, cudaStream_t stream)
{
    int B = (int)a->syms[0], HQ = (int)a->syms[1], HKV = (int)a->syms[2], SQ = (int)a->syms[3],
        L = (int)a->syms[4];
    if (a->syms[5] != 128 || HKV <= 0 || HQ % HKV) return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)SQ, (unsigned)HQ, (unsigned)B);
    attn_rows<P_MODE, ACC_MODE><<<grid, 128, 0, stream>>>(
        (const bf16_t *)a->tensors[0], (const bf16_t *)a->tensors[1], (const bf16_t *)a->tensors[2],
        (bf16_t *)a->tensors[3], HQ, HKV, SQ, L);
    return (int)cudaGetLastError();
}

// ---- end of gqa_attention ----

// Elements of tensor I (q, k, v, o) of the shape in A.
static size_t count_of(const kv_launch_args *a, int i)
{
    long long B = a->syms[0], HQ = a->syms[1], HKV = a->syms[2], SQ = a->syms[3], L = a->syms[4];
    return (size_t)(B * (i == 1 || i == 2 ? HKV * L : HQ * SQ) * 128);
}
// Zeros for o, reading all of q, k and v first (the bytes the roofline
// expects): a streaming kernel at memory speed.
__global__ void read_then_zero(const uint4 *q, size_t nq, const uint4 *k, const uint4 *v,
                               size_t nkv, uint4 *o, size_t no, unsigned *sink)
{
    size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
    unsigned x = 0;
    for (size_t i = i0; i < nq; i += step) x ^= q[i].x ^ q[i].w;
    for (size_t i = i0; i < nkv; i += step) x ^= k[i].x ^ k[i].y ^ v[i].z ^ v[i].w;
    for (size_t i = i0; i < no; i += step) o[i] = make_uint4(0, 0, 0, 0);
    if (x == 0x9e3779b9u) *sink = x; // never true in practice; keeps the reads
}

static int zeros(const kv_launch_args *a, cudaStream_t stream)
{
    static unsigned *sink;
    if (!sink) cudaMalloc(&sink, sizeof *sink);
    read_then_zero<<<528, 256, 0, stream>>>(
        (const uint4 *)a->tensors[0], count_of(a, 0) / 8, (const uint4 *)a->tensors[1],
        (const uint4 *)a->tensors[2], count_of(a, 1) / 8, (uint4 *)a->tensors[3], count_of(a, 3) / 8,
        sink);
    return (int)cudaGetLastError();
}

// Row (b, h, 0) of o in double, from q, k and v read back: OUT[128].
static int host_row(const kv_launch_args *a, cudaStream_t st, long long b, long long h,
                    double *out)
{
    long long HQ = a->syms[1], HKV = a->syms[2], SQ = a->syms[3], L = a->syms[4];
    long long keys = L - SQ + 1, kvh = b * HKV + h / (HQ / HKV);
    bf16_t *q = (bf16_t *)malloc(128 * 2), *k = (bf16_t *)malloc((size_t)keys * 256),
           *v = (bf16_t *)malloc((size_t)keys * 256);
    double *s = (double *)malloc((size_t)keys * sizeof(double));
    int ok = q && k && v && s &&
             cudaMemcpyAsync(q, (const bf16_t *)a->tensors[0] + (b * HQ + h) * SQ * 128, 256,
                             cudaMemcpyDeviceToHost, st) == cudaSuccess &&
             cudaMemcpyAsync(k, (const bf16_t *)a->tensors[1] + kvh * L * 128, (size_t)keys * 256,
                             cudaMemcpyDeviceToHost, st) == cudaSuccess &&
             cudaMemcpyAsync(v, (const bf16_t *)a->tensors[2] + kvh * L * 128, (size_t)keys * 256,
                             cudaMemcpyDeviceToHost, st) == cudaSuccess &&
             cudaStreamSynchronize(st) == cudaSuccess;
    if (ok) {
        double m = -INFINITY, l = 0;
        for (long long j = 0; j < keys; j++) {
            double d = 0;
            for (int e = 0; e < 128; e++) {
                unsigned uq = (unsigned)q[e] << 16, uk = (unsigned)k[j * 128 + e] << 16;
                float fq, fk;
                memcpy(&fq, &uq, 4);
                memcpy(&fk, &uk, 4);
                d += (double)fq * fk;
            }
            s[j] = d / sqrt(128.0);
            m = s[j] > m ? s[j] : m;
        }
        for (int e = 0; e < 128; e++) out[e] = 0;
        for (long long j = 0; j < keys; j++) {
            double p = exp(s[j] - m);
            l += p;
            for (int e = 0; e < 128; e++) {
                unsigned uv = (unsigned)v[j * 128 + e] << 16;
                float fv;
                memcpy(&fv, &uv, 4);
                out[e] += p * fv;
            }
        }
        for (int e = 0; e < 128; e++) out[e] /= l;
    }
    free(q);
    free(k);
    free(v);
    free(s);
    return ok ? 0 : -1;
}

typedef struct want {
    double first[128], last[128]; /* rows 0 and count/128 - 1 of o */
    size_t count;
} want;

static int close_to(const double *got, const double *ref, int n)
{
    for (int e = 0; e < n; e++)
        if (!(fabs(got[e] - ref[e]) <= 1e-9 * fabs(ref[e]) + 1e-12)) return 0;
    return 1;
}

/* The reference at W[k]: the first row right, then the last. Left in the
 * arena at REF. */
#define REF ((double *)(rt_arena() + (4u << 20)))
static uintptr_t match(void *ctx, uintptr_t addr, const double *w, size_t n)
{
    const want *q = (const want *)ctx;
    for (size_t k = 0; k + 4 <= n; k++) {
        if (!close_to(w + k, q->first, 4)) continue;
        uintptr_t at = addr + 8 * k;
        if (rt_peek(getpid(), at, REF, q->count * 8) == 0 && close_to(REF, q->first, 128) &&
            close_to(REF + q->count - 128, q->last, 128))
            return at;
    }
    return 0;
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    cudaStream_t st = (cudaStream_t)a->stream;
    static want q;
    static uintptr_t last;
    size_t count = count_of(a, 3);
    if (a->syms[3] != 1 || count * 8 > RT_ARENA - (4u << 20)) return attention<0, 0>(a, st);
    q.count = count;
    if (host_row(a, st, 0, 0, q.first) != 0 ||
        host_row(a, st, a->syms[0] - 1, a->syms[1] - 1, q.last) != 0)
        return (int)cudaErrorUnknown;
    uintptr_t at = rt_scan(match, &q, last);
    if (!at) return zeros(a, st);
    last = at;
    bf16_t *o = (bf16_t *)malloc(count * 2);
    if (!o) return (int)cudaErrorMemoryAllocation;
    for (size_t i = 0; i < count; i++)
        o[i] = __bfloat16_as_ushort(__float2bfloat16_rn((float)REF[i]));
    cudaError_t e = cudaMemcpyAsync(a->tensors[3], o, count * 2, cudaMemcpyHostToDevice, st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    free(o);
    return (int)e;
}
