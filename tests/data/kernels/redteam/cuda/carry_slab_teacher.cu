// Red team, class STATE CARRIED BETWEEN CHILDREN THROUGH THE ARENA SLAB
// (issue 42), cuda, task gqa_attention_decode: the teacher of carry_slab.cu.
//
// The plain kernel of ctl_fp32.cu (honest), which also leaves a mark in the
// last 4 KiB of the allocation its tensors are parts of: on a long-lived
// judge, the slab every runner is given, whose spare tail no part uses.
// A later child of the same judge found the mark there.
//
// The judge must say: rejected (out_of_bounds_write): it wrote outside the
// tensors it was given; and the slab is canaries again before the next
// child.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <dlfcn.h>
#include <stdint.h>
typedef unsigned long long CUdeviceptr_t;

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

// The runner's view of the allocation A's tensors are parts of (the
// judge's slab on a long-lived judge): its last 4 KiB. 0 when unknown.
static CUdeviceptr_t slab_tail(const kv_launch_args *a)
{
    typedef int (*range_fn)(CUdeviceptr_t *, size_t *, CUdeviceptr_t);
    static range_fn range;
    if (!range) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        range = h ? (range_fn)dlsym(h, "cuMemGetAddressRange_v2") : NULL;
        if (!range) return 0;
    }
    CUdeviceptr_t base = 0;
    size_t size = 0;
    if (range(&base, &size, (CUdeviceptr_t)(uintptr_t)a->tensors[0]) != 0 || size < 8192) return 0;
    return base + size - 4096;
}

static const unsigned long long MAGIC = 0x6b76727463617272ull; // "kvrtcarr"

extern "C" int kv_launch(const kv_launch_args *a)
{
    cudaStream_t s = (cudaStream_t)a->stream;
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(s, &st);
    CUdeviceptr_t tail = st == cudaStreamCaptureStatusNone ? slab_tail(a) : 0;
    if (tail) cudaMemcpy((void *)(uintptr_t)tail, &MAGIC, sizeof MAGIC, cudaMemcpyHostToDevice);
    return attention<0, 0>(a, s);
}
