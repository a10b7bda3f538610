// Naive attention_window for the cuda backend: one block of 128 threads per
// query row (sequence, head, row), over the last W keys of the row only (the
// sliding window, symbol 6), in tiles of 128 keys: each thread scores one
// key of the tile, the block keeps a running maximum and sum (an online
// softmax in fp32), and each thread owns one of the 128 output dimensions.
// MIN_BLOCKS: the blocks per multiprocessor the compiler must leave room
// for. bf16 is handled as its bit patterns. Layout: gqa_attention.h.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

// EVOLVE-BLOCK-START
#define HEAD_DIM 128 // threads per block: one per dimension, one per key of a tile
#define MIN_BLOCKS 1 // kevolve: tune 1 2 4 8

__device__ __forceinline__ float bf(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

// The block's maximum (MAX) or sum of X; every thread gets it.
__device__ float block_reduce(float x, bool max, float *red)
{
    for (int o = 16; o > 0; o >>= 1) {
        float y = __shfl_xor_sync(0xffffffffu, x, o);
        x = max ? fmaxf(x, y) : x + y;
    }
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
    __syncthreads();
    x = red[0];
    for (int w = 1; w < HEAD_DIM / 32; w++)
        x = max ? fmaxf(x, red[w]) : x + red[w];
    return x;
}

__global__ void __launch_bounds__(HEAD_DIM, MIN_BLOCKS)
    window_rows(const unsigned short *q, const unsigned short *k,
                            const unsigned short *v, unsigned short *o, int HQ, int HKV, int SQ,
                            long long L, long long W)
{
    __shared__ float qs[HEAD_DIM], ps[HEAD_DIM], red[HEAD_DIM / 32];
    long long row = blockIdx.x;
    int t = threadIdx.x, i = (int)(row % SQ), h = (int)((row / SQ) % HQ);
    long long b = row / SQ / HQ, kv = (b * HKV + h / (HQ / HKV)) * L * HEAD_DIM;
    long long keys = L - SQ + i + 1, lo = W > 0 && keys > W ? keys - W : 0;
    float scale = rsqrtf((float)HEAD_DIM), m = -INFINITY, sum = 0.0f, acc = 0.0f;
    qs[t] = bf(q[row * HEAD_DIM + t]);
    __syncthreads();
    for (long long j0 = lo; j0 < keys; j0 += HEAD_DIM) {
        long long j = j0 + t;
        float s = -INFINITY;
        if (j < keys) {
            s = 0.0f;
            for (int d = 0; d < HEAD_DIM; d++)
                s += qs[d] * bf(k[kv + j * HEAD_DIM + d]);
            s *= scale;
        }
        float mn = fmaxf(m, block_reduce(s, true, red));
        float corr = expf(m - mn), p = j < keys ? expf(s - mn) : 0.0f;
        ps[t] = p;
        sum = sum * corr + block_reduce(p, false, red);
        acc *= corr;
        __syncthreads();
        int n = keys - j0 < HEAD_DIM ? (int)(keys - j0) : HEAD_DIM;
        for (int jj = 0; jj < n; jj++)
            acc += ps[jj] * bf(v[kv + (j0 + jj) * HEAD_DIM + t]);
        __syncthreads();
        m = mn;
    }
    o[row * HEAD_DIM + t] = __bfloat16_as_ushort(__float2bfloat16_rn(acc / sum));
}
// EVOLVE-BLOCK-END

extern "C" int kv_launch(const kv_launch_args *a)
{
    const int64_t *s = a->syms;
    int HQ = (int)s[1], HKV = (int)s[2], SQ = (int)s[3];
    long long rows = (long long)(s[0] * s[1] * s[3]), W = a->num_syms > 6 ? (long long)s[6] : 0;
    if (s[5] != HEAD_DIM || HKV <= 0 || HQ % HKV != 0) return 1;
    if (rows == 0) return 0;
    window_rows<<<(unsigned)rows, HEAD_DIM, 0, (cudaStream_t)a->stream>>>(
        (const unsigned short *)a->tensors[0], (const unsigned short *)a->tensors[1],
        (const unsigned short *)a->tensors[2], (unsigned short *)a->tensors[3], HQ, HKV, SQ, s[4],
        W);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
