// Fast check-and-time driver for gqa_attention CUDA seeds on the GPU
// machine (bench/gqa_flagship_h200.sh builds one per seed and variant).
// Not a substitute for `kevolve eval`, whose checks are the judge: this one
// finds out in seconds whether a new kernel is right and how fast it is.
//
// Checks: the candidate's output against a float64 reference computed on
// the GPU (one block per checked query row: every row of decode and small
// shapes, a spread sample of long prefills), element by element within the
// task's bf16 tolerance |o - ref| <= 1e-2 + 1e-2 |ref| + 2^-8 scale (scale
// = sum p|v| / sum p, tasks/gqa_attention/README.md), with o poisoned
// (NaN) before the call and every element checked for having been written.
// Timing: a CUDA graph of calls over input sets rotated so that together
// they outsize the L2, replayed, median of 5 rounds (as bench/gqa_sdpa.py
// times PyTorch).
//
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Iinclude -Itasks
//        -DCANDIDATE='"tasks/gqa_attention/cuda/decode_split.cu"' bench/gqa_flagship.cu
// Usage: gqa_flagship [--time decode|prefill|all|none] [--check small|all]
//                     [--only NAME[,NAME...]] [--bw] [--list]
// Prints one line per shape: "CHECK name err/tol X ok|WRONG|FAIL ..." and
// "TIME name us ... GB/s ... TFLOP/s"; --bw first prints "BW read GB/s".
// Exit status: 0 when every check passed, 1 when one failed, 2 on a CUDA
// error (the remaining shapes are not run: the script reruns them one by
// one).
#include CANDIDATE
#include "gqa_bench.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

struct shape {
    const char *name;
    int B, HQ, HKV, SQ, L;
    bool scenario; // one of the task's 20 (timed); else a check-only shape
};

// The task's held-out shapes and small awkward ones, then its 20 scenarios
// (tasks/gqa_attention/gqa_attention.c).
static const shape SHAPES[] = {
    {"decode_16x8_b1_l1", 1, 16, 8, 1, 1, false},
    {"decode_40x8_b3_l1000", 3, 40, 8, 1, 1000, false},
    {"decode_16x8_b2_l4099", 2, 16, 8, 1, 4099, false},
    {"prefill_16x8_s77", 1, 16, 8, 77, 77, false},
    {"chunked_40x8_q33_l301", 1, 40, 8, 33, 301, false},
    {"chunked_16x8_q200_l3000", 1, 16, 8, 200, 3000, false},
    {"prefill_40x8_s300", 2, 40, 8, 300, 300, false},
    {"decode_16x8_b1_l128", 1, 16, 8, 1, 128, true},
    {"decode_16x8_b1_l1024", 1, 16, 8, 1, 1024, true},
    {"decode_16x8_b1_l8192", 1, 16, 8, 1, 8192, true},
    {"decode_16x8_b1_l32768", 1, 16, 8, 1, 32768, true},
    {"decode_16x8_b8_l8192", 8, 16, 8, 1, 8192, true},
    {"decode_16x8_b32_l4096", 32, 16, 8, 1, 4096, true},
    {"decode_40x8_b1_l128", 1, 40, 8, 1, 128, true},
    {"decode_40x8_b1_l1024", 1, 40, 8, 1, 1024, true},
    {"decode_40x8_b1_l8192", 1, 40, 8, 1, 8192, true},
    {"decode_40x8_b1_l32768", 1, 40, 8, 1, 32768, true},
    {"decode_40x8_b8_l8192", 8, 40, 8, 1, 8192, true},
    {"decode_40x8_b32_l4096", 32, 40, 8, 1, 4096, true},
    {"prefill_16x8_s512", 1, 16, 8, 512, 512, true},
    {"prefill_16x8_s2048", 1, 16, 8, 2048, 2048, true},
    {"chunked_16x8_q512_l8192", 1, 16, 8, 512, 8192, true},
    {"prefill_40x8_s512", 1, 40, 8, 512, 512, true},
    {"prefill_40x8_s2048", 1, 40, 8, 2048, 2048, true},
    {"chunked_40x8_q512_l8192", 1, 40, 8, 512, 8192, true},
    {"prefill_16x8_s8192", 1, 16, 8, 8192, 8192, true},
    {"prefill_40x8_s8192", 1, 40, 8, 8192, 8192, true},
};

static size_t count(const shape &s, int t)
{
    return t == 1 || t == 2 ? (size_t)s.B * s.HKV * s.L * 128 : (size_t)s.B * s.HQ * s.SQ * 128;
}

static int launch(const shape &s, void *const *t, cudaStream_t st)
{
    kv_launch_args a;
    memset(&a, 0, sizeof a);
    a.abi_version = KV_TASK_ABI_VERSION;
    a.num_tensors = 4;
    for (int i = 0; i < 4; i++)
        a.tensors[i] = t[i];
    a.num_syms = 6;
    const long long sy[6] = {s.B, s.HQ, s.HKV, s.SQ, s.L, 128};
    for (int i = 0; i < 6; i++)
        a.syms[i] = sy[i];
    a.stream = st;
    return kv_launch(&a);
}

// Reference of the checked rows: block i takes row rows[i] (flat index
// (b*HQ + h)*SQ + r): scores into sc (L doubles per row), then for each
// dimension d (thread d) o = sum p v / sum p and scale = sum p |v| / sum p.
__global__ void ref_rows(const unsigned short *q, const unsigned short *k, const unsigned short *v,
                         const long long *rows, double *sc, double *ref, double *scale, int HQ,
                         int HKV, int SQ, int L)
{
    __shared__ double red[128];
    __shared__ float qs[128];
    const long long row = rows[blockIdx.x];
    const int r = (int)(row % SQ), bh = (int)(row / SQ), b = bh / HQ, h = bh % HQ;
    const int kvh = h / (HQ / HKV), nkeys = L - SQ + r + 1, d = threadIdx.x;
    const unsigned short *kb = k + ((size_t)b * HKV + kvh) * L * 128;
    const unsigned short *vb = v + ((size_t)b * HKV + kvh) * L * 128;
    double *s = sc + (size_t)blockIdx.x * L;
    qs[d] = __uint_as_float((unsigned)q[row * 128 + d] << 16);
    __syncthreads();
    double mx = -INFINITY;
    for (int j = d; j < nkeys; j += 128) {
        double dot = 0;
        for (int e = 0; e < 128; e++)
            dot += (double)qs[e] * (double)__uint_as_float((unsigned)kb[(size_t)j * 128 + e] << 16);
        s[j] = dot / sqrt(128.0);
        mx = fmax(mx, s[j]);
    }
    red[d] = mx;
    __syncthreads();
    for (int w = 64; w > 0; w >>= 1) {
        if (d < w) red[d] = fmax(red[d], red[d + w]);
        __syncthreads();
    }
    mx = red[0];
    __syncthreads();
    double z = 0, acc = 0, aabs = 0;
    for (int j = 0; j < nkeys; j++) {
        const double p = exp(s[j] - mx), x = __uint_as_float((unsigned)vb[(size_t)j * 128 + d] << 16);
        z += p;
        acc += p * x;
        aabs += p * fabs(x);
    }
    ref[(size_t)blockIdx.x * 128 + d] = acc / z;
    scale[(size_t)blockIdx.x * 128 + d] = aabs / z;
}

// Counts the elements of o that are still NaN (the poison) into *n.
__global__ void count_nan(const unsigned short *o, size_t n, unsigned long long *out)
{
    unsigned long long c = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        c += (o[i] & 0x7fff) > 0x7f80;
    atomicAdd(out, c);
}

// Rows checked: all, up to 8192; else a spread sample of about 2048 that
// includes each head's first and last row.
static std::vector<long long> rows_to_check(const shape &s)
{
    const long long total = (long long)s.B * s.HQ * s.SQ;
    std::vector<long long> rows;
    if (total <= 8192) {
        for (long long i = 0; i < total; i++)
            rows.push_back(i);
        return rows;
    }
    const long long heads = (long long)s.B * s.HQ, per = std::max(2LL, 2048 / heads);
    for (long long bh = 0; bh < heads; bh++)
        for (long long i = 0; i < per; i++) {
            long long r = i == per - 1 ? s.SQ - 1 : (i * s.SQ + (bh * 7919) % s.SQ) / per % s.SQ;
            rows.push_back(bh * s.SQ + r);
        }
    return rows;
}

// Max err/tol over the checked rows (> 1: wrong), or -1 with *msg on a
// failure; *unwritten: elements of o left NaN anywhere.
static double check(const shape &s, cudaStream_t st, unsigned long long *unwritten,
                    std::string *msg)
{
    void *d[4];
    for (int t = 0; t < 4; t++) {
        CK(cudaMalloc(&d[t], count(s, t) * 2));
        if (t < 3)
            fill_kernel<<<1024, 256>>>((unsigned short *)d[t], count(s, t), 1234 + 77 * t + s.L,
                                       t == 0 ? 2.0f : 1.0f);
        else
            CK(cudaMemset(d[t], 0xff, count(s, t) * 2));
    }
    CK(cudaDeviceSynchronize());
    const int rc = launch(s, d, st);
    cudaError_t e = cudaStreamSynchronize(st);
    if (rc != 0 || e != cudaSuccess) {
        char b[256];
        snprintf(b, sizeof b, "kv_launch returned %d, stream: %s", rc, cudaGetErrorString(e));
        *msg = b;
        if (e != cudaSuccess) {
            printf("CHECK %-26s FAIL %s\n", s.name, b);
            exit(2); // a sticky error: the context is lost
        }
        for (int t = 0; t < 4; t++)
            CK(cudaFree(d[t]));
        return -1;
    }
    unsigned long long *dn;
    CK(cudaMalloc(&dn, 8));
    CK(cudaMemset(dn, 0, 8));
    count_nan<<<1024, 256>>>((const unsigned short *)d[3], count(s, 3), dn);
    CK(cudaMemcpy(unwritten, dn, 8, cudaMemcpyDeviceToHost));
    CK(cudaFree(dn));
    std::vector<long long> rows = rows_to_check(s);
    long long *drows;
    double *dsc, *dref, *dscale;
    CK(cudaMalloc(&drows, rows.size() * 8));
    CK(cudaMemcpy(drows, rows.data(), rows.size() * 8, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&dsc, rows.size() * (size_t)s.L * 8));
    CK(cudaMalloc(&dref, rows.size() * 128 * 8));
    CK(cudaMalloc(&dscale, rows.size() * 128 * 8));
    ref_rows<<<(unsigned)rows.size(), 128>>>((const unsigned short *)d[0],
                                              (const unsigned short *)d[1],
                                              (const unsigned short *)d[2], drows, dsc, dref,
                                              dscale, s.HQ, s.HKV, s.SQ, s.L);
    CK(cudaDeviceSynchronize());
    std::vector<double> ref(rows.size() * 128), scale(rows.size() * 128);
    std::vector<unsigned short> out(count(s, 3));
    CK(cudaMemcpy(ref.data(), dref, ref.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(scale.data(), dscale, scale.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out.data(), d[3], out.size() * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    long long worst_at = -1;
    for (size_t i = 0; i < rows.size(); i++)
        for (int c = 0; c < 128; c++) {
            const double got = bf2f(out[rows[i] * 128 + c]), r = ref[i * 128 + c];
            const double tol = 1e-2 + 1e-2 * fabs(r) + scale[i * 128 + c] / 256.0;
            const double err = std::isfinite(got) ? fabs(got - r) / tol : INFINITY;
            if (!(err <= worst)) {
                worst = err;
                worst_at = rows[i] * 128 + c;
            }
        }
    if (worst > 1 && worst_at >= 0) {
        char b[256];
        const long long row = worst_at / 128;
        snprintf(b, sizeof b, "worst at (b*HQ+h %lld, row %lld, dim %lld)", row / s.SQ,
                 row % s.SQ, worst_at % 128);
        *msg = b;
    }
    for (int t = 0; t < 4; t++)
        CK(cudaFree(d[t]));
    CK(cudaFree(drows));
    CK(cudaFree(dsc));
    CK(cudaFree(dref));
    CK(cudaFree(dscale));
    return worst;
}

// Median microseconds per call over rotated input sets (graph replay).
static double timeit(const shape &s, cudaStream_t st)
{
    size_t set_bytes = 0;
    for (int t = 0; t < 4; t++)
        set_bytes += count(s, t) * 2;
    const int nsets = (int)std::min<size_t>(64, std::max<size_t>(2, (200u << 20) / set_bytes + 1));
    std::vector<void *> d(4 * nsets);
    for (int i = 0; i < nsets; i++)
        for (int t = 0; t < 4; t++) {
            CK(cudaMalloc(&d[4 * i + t], count(s, t) * 2));
            fill_kernel<<<1024, 256>>>((unsigned short *)d[4 * i + t], count(s, t), 99 + 4 * i + t,
                                       1.0f);
        }
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < nsets; i++)
        if (launch(s, &d[4 * i], st)) exit(2);
    CK(cudaStreamSynchronize(st));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nsets; i++)
        launch(s, &d[4 * i], st);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    // Replays per round: about 20 ms of GPU time (one replay measured first).
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float one_ms = 1;
    CK(cudaEventElapsedTime(&one_ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    const int reps = std::max(1, std::min(500, (int)(20.0 / std::max(one_ms, 1e-3f))));
    const double us = graph_median_us(ge, st, nsets, reps);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    for (void *p : d)
        CK(cudaFree(p));
    return us;
}

// Read bandwidth: a vectorised sum over 2 GB, GB/s (decode's floor).
__global__ void read_sum(const uint4 *p, size_t n, unsigned *out)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint4 x = p[i];
        acc ^= x.x ^ x.y ^ x.z ^ x.w;
    }
    if (acc == 0x12345678u) *out = acc; // keeps the loads
}

static double read_gbps(cudaStream_t st)
{
    const size_t bytes = (size_t)2 << 30, n = bytes / 16;
    uint4 *p;
    unsigned *o;
    CK(cudaMalloc(&p, bytes));
    CK(cudaMalloc(&o, 4));
    CK(cudaMemset(p, 1, bytes));
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    read_sum<<<sms * 8, 512, 0, st>>>(p, n, o);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    const double us = graph_median_us(ge, st, 1, 20);
    CK(cudaFree(p));
    CK(cudaFree(o));
    return bytes / us * 1e-3;
}

int main(int argc, char **argv)
{
    std::string time_what = "all", check_what = "all", only;
    bool bw = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--time") && i + 1 < argc)
            time_what = argv[++i];
        else if (!strcmp(argv[i], "--check") && i + 1 < argc)
            check_what = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = std::string(",") + argv[++i] + ",";
        else if (!strcmp(argv[i], "--bw"))
            bw = true;
        else if (!strcmp(argv[i], "--list")) { // the shapes' names, one a line (no GPU needed)
            for (const shape &s : SHAPES)
                printf("%s\n", s.name);
            return 0;
        }
        else {
            fprintf(stderr, "usage: %s [--time decode|prefill|all|none] [--check small|all] "
                            "[--only NAMES] [--bw] [--list]\n",
                    argv[0]);
            return 2;
        }
    }
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    if (bw) printf("BW read %.0f GB/s\n", read_gbps(st));
    int bad = 0;
    for (const shape &s : SHAPES) {
        if (!only.empty() && only.find(std::string(",") + s.name + ",") == std::string::npos)
            continue;
        const bool dec = s.SQ == 1;
        if (!s.scenario || check_what == "all") {
            unsigned long long unwritten = 0;
            std::string msg;
            const double e = check(s, st, &unwritten, &msg);
            const bool ok = e >= 0 && e <= 1 && unwritten == 0;
            printf("CHECK %-26s err/tol %.3f unwritten %llu %s %s\n", s.name, e, unwritten,
                   e < 0 ? "FAIL" : ok ? "ok" : "WRONG", msg.c_str());
            bad += !ok;
            fflush(stdout);
        }
        if (s.scenario &&
            (time_what == "all" || (time_what == "decode" && dec) ||
             (time_what == "prefill" && !dec))) {
            const double us = timeit(s, st);
            const double kv = 4.0 * s.B * s.HKV * s.L * 128;
            const double pairs = s.SQ * (double)(s.L - s.SQ) + s.SQ * (s.SQ + 1.0) / 2.0;
            printf("TIME %-26s %10.2f us %7.0f GB/s %6.1f TFLOP/s\n", s.name, us, kv / us * 1e-3,
                   4.0 * s.B * s.HQ * pairs * 128 / us * 1e-6);
            fflush(stdout);
        }
    }
    return bad ? 1 : 0;
}
