// The gqa_attention tasks' double-precision reference on the GPU: the same
// computation as gqa_reference.c (kv_task.reference_scale), for the shapes
// whose float64 reference would take the CPU seconds to minutes (a prefill
// of 8192 rows is about 10^12 multiply-adds). It is the harness's code, not a
// candidate: every evaluation also computes the CPU reference on the
// held-out shapes and fails if the two disagree.
//
// One block per query row (sequence, head, row). Pass 1 finds the row's
// maximum score; pass 2 recomputes each score, p = exp(s - max), and sums p,
// p v and p |v|, all in double. Scores are computed one key per thread in
// chunks of blockDim keys; the p v sums one output dimension per thread.
//
// kv_launch's tensors: q, k, v (bf16, the uploaded inputs), then o and o's
// error scales as doubles: [B, HQ, SQ, D] each.
#include <kevolve/task.h>

#include <cuda_runtime.h>
#include <stdint.h>

enum { B_ = 0, HQ_, HKV_, SQ_, L_, D_ };

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

__global__ void gqa_reference_f64(const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                  double *o, double *os, int HQ, int HKV, int SQ, int64_t L, int D)
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
    double scale = 1.0 / sqrt((double)D);
    int t = threadIdx.x, nt = blockDim.x;
    for (int d = t; d < D; d += nt)
        qs[d] = bf(q[row * D + d]);
    __syncthreads();

    double m = -INFINITY; // pass 1: the maximum score
    for (int64_t j = t; j < keys; j += nt)
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
    for (int64_t j0 = 0; j0 < keys; j0 += nt) {
        int64_t j = j0 + t;
        double p = j < keys ? exp(score(qs, kb, j, D, scale) - m) : 0.0;
        ps[t] = p;
        z += p;
        __syncthreads();
        int64_t n = keys - j0 < nt ? keys - j0 : nt;
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
    for (int c = 0, d = t; d < D && c < 4; c++, d += nt) {
        o[row * D + d] = acc[c] / z;
        os[row * D + d] = sqrt(sacc[c]) / z;
    }
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    const int64_t *s = a->syms;
    int D = (int)s[D_];
    int nt = 128;          // a multiple of 32; each thread owns up to 4 dimensions
    if (D > 4 * nt) return (int)cudaErrorInvalidValue;
    int64_t rows = s[B_] * s[HQ_] * s[SQ_];
    if (rows == 0) return 0;
    size_t shared = (size_t)(D + nt + 32) * sizeof(double);
    gqa_reference_f64<<<(unsigned)rows, nt, shared, (cudaStream_t)a->stream>>>(
        (const uint16_t *)a->tensors[0], (const uint16_t *)a->tensors[1],
        (const uint16_t *)a->tensors[2], (double *)a->tensors[3], (double *)a->tensors[4],
        (int)s[HQ_], (int)s[HKV_], (int)s[SQ_], s[L_], D);
    return (int)cudaGetLastError();
}
