// The gqa_attention tasks' double-precision reference on the GPU: the same
// computation as gqa_reference.c (kv_task.reference_scale), for the shapes
// whose float64 reference would take the CPU seconds to minutes (a prefill
// of 8192 rows is about 10^12 multiply-adds). It is the harness's code, not a
// candidate: every evaluation also computes the CPU reference on the
// held-out shapes and fails if the two disagree.
//
// One block per query row (sequence, head, row) and range of its keys.
// Pass 1 finds the range's maximum score; pass 2 recomputes each score,
// p = exp(s - max), and sums p, p v and p^2 v^2, all in double. Scores are
// computed one key per thread in chunks of blockDim keys; the p v sums one
// output dimension per thread. A decode has few rows and long contexts: its
// keys are split over enough blocks to fill the GPU, each leaving its
// (max, sums) in a scratch buffer, and a second kernel rescales the parts
// to the row's maximum and adds them (the same sums in another order).
//
// kv_launch's tensors: q, k, v (bf16, the uploaded inputs), then o and o's
// error scales as doubles: [B, HQ, SQ, D] each.
#include <kevolve/task.h>

#include <cuda_runtime.h>
#include <stdint.h>

enum { B_ = 0, HQ_, HKV_, SQ_, L_, D_, W_ }; // W_: attention_window's window, when given

static __device__ double bf(uint16_t h)
{
    return (double)__uint_as_float((unsigned)h << 16);
}

// Score of key J against the row's query QS (D doubles in shared memory);
// the k row is read 8 elements at a time when D allows.
static __device__ double score(const double *qs, const uint16_t *k, int64_t j, int D, double scale)
{
    const uint16_t *kr = k + j * D;
    double s = 0.0;
    if (D % 8 == 0) {
        for (int d = 0; d < D; d += 8) {
            uint4 w = *(const uint4 *)(kr + d);
            unsigned u[4] = {w.x, w.y, w.z, w.w};
            for (int e = 0; e < 4; e++) {
                s += qs[d + 2 * e] * bf((uint16_t)(u[e] & 0xffffu));
                s += qs[d + 2 * e + 1] * bf((uint16_t)(u[e] >> 16));
            }
        }
    } else {
        for (int d = 0; d < D; d++)
            s += qs[d] * bf(kr[d]);
    }
    return s * scale;
}

// A part of one row: its maximum score, the sum of p, then p v and
// p^2 v^2 for each of the D dimensions.
static __device__ __host__ size_t part_doubles(int D)
{
    return 2 + 2 * (size_t)D;
}

__global__ void gqa_reference_f64(const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                  double *o, double *os, int HQ, int HKV, int SQ, int64_t L, int D,
                                  int64_t W, double *parts)
{
    extern __shared__ double sh[]; // q row [D], then p of one chunk [blockDim.x], reduction [32]
    double *qs = sh, *ps = sh + D, *red = sh + D + blockDim.x;
    int64_t row = blockIdx.x; // ((b * HQ + h) * SQ + i)
    int i = (int)(row % SQ);
    int64_t bh = row / SQ;
    int h = (int)(bh % HQ);
    int64_t b = bh / HQ;
    int kvh = h / (HQ / HKV);
    const uint16_t *kb = k + (b * HKV + kvh) * L * D, *vb = v + (b * HKV + kvh) * L * D;
    int64_t keys = L - SQ + i + 1;
    // A sliding window (W > 0) leaves the row its last W keys only.
    int64_t lo = W > 0 && keys > W ? keys - W : 0;
    // This block's keys: range blockIdx.y of gridDim.y over the context.
    int64_t span = (L + gridDim.y - 1) / gridDim.y;
    int64_t k0 = (int64_t)blockIdx.y * span, k1 = k0 + span < keys ? k0 + span : keys;
    if (k0 < lo) k0 = lo;
    double scale = 1.0 / sqrt((double)D);
    int t = threadIdx.x, nt = blockDim.x;
    for (int d = t; d < D; d += nt)
        qs[d] = bf(q[row * D + d]);
    __syncthreads();

    double m = -INFINITY; // pass 1: the maximum score
    for (int64_t j = k0 + t; j < k1; j += nt)
        m = fmax(m, score(qs, kb, j, D, scale));
    for (int off = 16; off > 0; off >>= 1)
        m = fmax(m, __shfl_xor_sync(0xffffffffu, m, off));
    if ((t & 31) == 0) red[t >> 5] = m;
    __syncthreads();
    if (t == 0) {
        for (int w = 1; w < (nt + 31) / 32; w++)
            red[0] = fmax(red[0], red[w]);
    }
    __syncthreads();
    m = red[0];
    __syncthreads();

    // pass 2: p, its sum, p v and p^2 v^2; each thread owns dimensions t, t + nt, ...
    double z = 0.0, acc[4] = {0, 0, 0, 0}, sacc[4] = {0, 0, 0, 0};
    for (int64_t j0 = k0; j0 < k1; j0 += nt) {
        int64_t j = j0 + t;
        double p = j < k1 ? exp(score(qs, kb, j, D, scale) - m) : 0.0;
        ps[t] = p;
        z += p;
        __syncthreads();
        int64_t n = k1 - j0 < nt ? k1 - j0 : nt;
        for (int64_t jj = 0; jj < n; jj++) {
            double pj = ps[jj];
            const uint16_t *vr = vb + (j0 + jj) * D;
            for (int c = 0, d = t; d < D && c < 4; c++, d += nt) {
                double x = bf(vr[d]);
                acc[c] += pj * x;
                sacc[c] += pj * pj * x * x;
            }
        }
        __syncthreads();
    }
    for (int off = 16; off > 0; off >>= 1)
        z += __shfl_xor_sync(0xffffffffu, z, off);
    if ((t & 31) == 0) red[t >> 5] = z;
    __syncthreads();
    if (t == 0) {
        double s = 0.0;
        for (int w = 0; w < (nt + 31) / 32; w++)
            s += red[w];
        red[0] = s;
    }
    __syncthreads();
    z = red[0];
    if (gridDim.y > 1) {
        // An empty range (past a causal row's last key) leaves m = -inf, z = 0.
        double *part = parts + (row * gridDim.y + blockIdx.y) * part_doubles(D);
        if (t == 0) {
            part[0] = m;
            part[1] = z;
        }
        for (int c = 0, d = t; d < D && c < 4; c++, d += nt) {
            part[2 + d] = acc[c];
            part[2 + D + d] = sacc[c];
        }
        return;
    }
    for (int c = 0, d = t; d < D && c < 4; c++, d += nt) {
        o[row * D + d] = acc[c] / z;
        os[row * D + d] = sqrt(sacc[c]) / z;
    }
}

// One block per row: the row's SPLITS parts rescaled to its maximum and
// added (p by exp(m_i - m), p^2 by its square).
__global__ void gqa_reference_f64_combine(const double *parts, double *o, double *os, int splits,
                                          int D)
{
    int64_t row = blockIdx.x;
    const double *first = parts + row * splits * part_doubles(D);
    double m = -INFINITY;
    for (int s = 0; s < splits; s++)
        m = fmax(m, first[s * part_doubles(D)]);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        double z = 0.0, acc = 0.0, sacc = 0.0;
        for (int s = 0; s < splits; s++) {
            const double *part = first + s * part_doubles(D);
            if (part[1] == 0.0) continue;
            double w = exp(part[0] - m);
            z += w * part[1];
            acc += w * part[2 + d];
            sacc += w * w * part[2 + D + d];
        }
        o[row * D + d] = acc / z;
        os[row * D + d] = sqrt(sacc) / z;
    }
}

// How many ranges each row's keys are split into: enough blocks for two
// per multiprocessor, each range at least 512 keys.
static int splits_for(int64_t rows, int64_t L)
{
    static int sms;
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            sms = 132;
    }
    int64_t want = (2 * (int64_t)sms + rows - 1) / rows, most = (L + 511) / 512;
    int64_t n = want < most ? want : most;
    return n < 1 ? 1 : (int)(n > 1024 ? 1024 : n);
}

// The parts' scratch, kept for the judge's next calls (grown when short).
static double *scratch;
static size_t scratch_bytes;

extern "C" int kv_launch(const kv_launch_args *a)
{
    const int64_t *s = a->syms;
    int D = (int)s[D_];
    int nt = 128;          // a multiple of 32; each thread owns up to 4 dimensions
    if (D > 4 * nt) return (int)cudaErrorInvalidValue;
    int64_t rows = s[B_] * s[HQ_] * s[SQ_];
    if (rows == 0) return 0;
    cudaStream_t stream = (cudaStream_t)a->stream;
    size_t shared = (size_t)(D + nt + 32) * sizeof(double);
    int splits = splits_for(rows, s[L_]);
    size_t need = (size_t)rows * splits * part_doubles(D) * sizeof(double);
    if (splits > 1 && need > scratch_bytes) {
        cudaStreamSynchronize(stream); /* the old scratch may still be read */
        cudaFree(scratch);
        scratch_bytes = 0;
        if (cudaMalloc((void **)&scratch, need) != cudaSuccess) return (int)cudaGetLastError();
        scratch_bytes = need;
    }
    dim3 grid((unsigned)rows, (unsigned)splits);
    gqa_reference_f64<<<grid, nt, shared, stream>>>(
        (const uint16_t *)a->tensors[0], (const uint16_t *)a->tensors[1],
        (const uint16_t *)a->tensors[2], (double *)a->tensors[3], (double *)a->tensors[4],
        (int)s[HQ_], (int)s[HKV_], (int)s[SQ_], s[L_], D, a->num_syms > W_ ? s[W_] : 0, scratch);
    if (splits > 1)
        gqa_reference_f64_combine<<<(unsigned)rows, nt, 0, stream>>>(
            scratch, (double *)a->tensors[3], (double *)a->tensors[4], splits, D);
    return (int)cudaGetLastError();
}
