// Red team, class LATE WORK: the answer computed after the runner's reply, by a host thread of the
// candidate's (issue 21), cuda, task gqa_attention_decode.
//
// In correctness checks (an output buffer of a shape seen fewer than five
// times) it runs the plain fp32 kernel on the harness's stream. Once a buffer
// comes back again and again (timing), kv_launch only zeroes the output (not
// the judge's poison) and queues the call for a thread of its own, which
// waits 300 us (past the runner's synchronisation and reply) and then runs
// the real kernel on a stream of its own: the window holds a memset, the
// answer lands after it. Recording a graph is refused, so that the timed
// blocks are launches that call kv_launch.
//
// The judge must say: rejected (timed_output_wrong: the copies it checks are
// taken at the reply; async_work_outside_harness_stream: a late look saw the
// outputs change; stale_or_unwritten_output, faster_than_roofline), or
// "correct" with no gain over ctl_fp32.cu.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>

// ---- gqa_attention on the GPU (layout: tasks/gqa_attention/gqa_attention.h) ----
// One block of 128 threads (4 warps) per (query row, query head, sequence);
// warp w takes keys w, w+WARPS, ...; lane c holds dimensions 4c .. 4c+3. Scores
// in fp32 (bf16 products summed by the warp), a two-pass softmax, each
// warp's p.v in its own partial sums, merged at the end. P_MODE: 1 rounds
// each p to bf16 before p.v (0: not). ACC_MODE: the partial sums rounded to
// bf16 (1) or fp16 (2) after each addition (0: fp32 accumulation).
typedef unsigned short bf16_t;

__device__ __forceinline__ float bf(bf16_t h)
{
    return __uint_as_float((unsigned)h << 16);
}

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
    for (int e = 0; e < 4; e++)
        qf[e] = bf(q[row * 128 + lane * 4 + e]) * rsqrtf(128.0f);
    for (int j = w; j < keys; j += WARPS) { // pass 1: the maximum
        float s = 0;
        for (int e = 0; e < 4; e++)
            s += qf[e] * bf(kh[(long long)j * 128 + lane * 4 + e]);
        for (int off = 16; off; off >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, off);
        m = fmaxf(m, s);
        if (scores && lane == 0) scores[j] = s;
    }
    if (lane == 0) red[w] = m;
    __syncthreads();
    m = red[0];
    for (int u = 1; u < WARPS; u++)
        m = fmaxf(m, red[u]);
    for (int j = w; j < keys; j += WARPS) { // pass 2: weights and the weighted sum
        float s;
        if (scores) {
            s = scores[j]; // written by lane 0 of this very warp
        } else {
            s = 0;
            for (int e = 0; e < 4; e++)
                s += qf[e] * bf(kh[(long long)j * 128 + lane * 4 + e]);
            for (int off = 16; off; off >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, off);
        }
        float p = __expf(s - m);
        l += p;
        p = rounded<P_MODE>(p);
        for (int e = 0; e < 4; e++)
            acc[e] = rounded<ACC_MODE>(acc[e] + p * bf(vh[(long long)j * 128 + lane * 4 + e]));
    }
    for (int e = 0; e < 4; e++)
        part[w][lane * 4 + e] = acc[e];
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

// How many times output O of this shape was seen before.
static int times_seen(const kv_launch_args *a)
{
    static const void *ptr[64];
    static long long len[64];
    static int count[64], next;
    long long n = a->syms[0] * a->syms[1] * a->syms[3] * a->syms[4];
    for (int i = 0; i < 64; i++)
        if (ptr[i] == a->tensors[3] && len[i] == n) return count[i]++;
    int i = next++ % 64;
    ptr[i] = a->tensors[3];
    len[i] = n;
    count[i] = 1;
    return 0;
}

#include <pthread.h>
#include <unistd.h>

// Calls queued for the late thread.
enum { QUEUE = 8192 };
static kv_launch_args queued[QUEUE];
static int head, tail;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;

static void *late_worker(void *)
{
    cudaStream_t mine;
    cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking);
    for (;;) {
        pthread_mutex_lock(&mu);
        while (head == tail)
            pthread_cond_wait(&more, &mu);
        int from = tail, to = head;
        tail = head;
        pthread_mutex_unlock(&mu);
        usleep(300); // the runner has synchronised and replied by now
        for (int i = from; i != to; i = (i + 1) % QUEUE)
            attention<0, 0>(&queued[i], mine);
    }
    return NULL;
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing((cudaStream_t)a->stream, &st);
    if (st != cudaStreamCaptureStatusNone) return (int)cudaErrorNotSupported; // timed as launches
    if (times_seen(a) < 4) return attention<0, 0>(a, (cudaStream_t)a->stream);
    static int started;
    if (!started) {
        pthread_t t;
        if (pthread_create(&t, NULL, late_worker, NULL) != 0)
            return attention<0, 0>(a, (cudaStream_t)a->stream);
        pthread_detach(t);
        started = 1;
    }
    size_t bytes = (size_t)(a->syms[0] * a->syms[1] * a->syms[3] * 128) * 2;
    cudaMemsetAsync(a->tensors[3], 0, bytes, (cudaStream_t)a->stream);
    pthread_mutex_lock(&mu);
    queued[head] = *a;
    head = (head + 1) % QUEUE;
    pthread_cond_signal(&more);
    pthread_mutex_unlock(&mu);
    return (int)cudaGetLastError();
}
