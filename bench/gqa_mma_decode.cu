// Tensor-core (mma.sync) split-KV decode kernel for GQA attention, bf16,
// head_dim 128, Hopper (sm_90a), with its own correctness check against a
// float64 CPU reference and a timing table of the decode scenarios. Layout:
// tasks/gqa_attention/gqa_attention.h (decode: one query row, all L keys).
// The kernel is naive.cu's MMA_DECODE design axis (mmad_launch,
// mmad_launch_cfg), written and first checked here, now included from
// naive.cu.
//
// Build: nvcc -O3 -arch=sm_90a -std=c++17 -Iinclude bench/gqa_mma_decode.cu -o /tmp/x
// Run:   /tmp/x            (checks, then times; exit 1 on any FAIL)
//        /tmp/x --check    (checks only, e.g. under compute-sanitizer)
//        /tmp/x --sweep    (checks and times every compiled configuration)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

// The kernel under test is the one in the evolvable start, included whole
// (its other kernels and kv_launch come along unused); a variant of it can be
// named with -DCANDIDATE='"path"' (bench/gqa_sweep.sh derives variants).
#ifndef CANDIDATE
#define CANDIDATE "../tasks/gqa_attention/cuda/naive.cu"
#endif
#include CANDIDATE
#include "gqa_bench.cuh"

// ---------------------------------------------------------------- host side

typedef int (*launch_fn)(const bf16_t *, const bf16_t *, const bf16_t *, bf16_t *, float *, int,
                         int, int, int, int, cudaStream_t);

struct config {
    const char *name;
    launch_fn fn;
};

// One configuration with the split capped only by MMAD_MAX_SPLIT.
template <int KW, int STAGES>
static int cfg(const bf16_t *q, const bf16_t *k, const bf16_t *v, bf16_t *o, float *part, int B,
               int HQ, int HKV, int L, int split, cudaStream_t s)
{
    return mmad_launch_cfg<KW, STAGES>(q, k, v, o, part, B, HQ, HKV, L, split, MMAD_MAX_SPLIT, s);
}

static const config CONFIGS[] = {
    {"default", cfg<MMAD_KW, MMAD_STAGES>},
    {"kw16_st2", cfg<16, 2>},
    {"kw16_st3", cfg<16, 3>},
    {"kw16_st4", cfg<16, 4>},
    {"kw32_st2", cfg<32, 2>},
    {"kw32_st3", cfg<32, 3>},
};

#define CANARY 4096 // bytes of guard pattern after every buffer
static const unsigned char CANARY_VAL = 0xA5;

// Device buffer of n bytes plus a canary tail; returns its pointer.
static void *dev_alloc(size_t n)
{
    unsigned char *p;
    CK(cudaMalloc(&p, n + CANARY));
    CK(cudaMemset(p + n, CANARY_VAL, CANARY));
    return p;
}

static bool canary_ok(const void *p, size_t n)
{
    std::vector<unsigned char> c(CANARY);
    CK(cudaMemcpy(c.data(), (const unsigned char *)p + n, CANARY, cudaMemcpyDeviceToHost));
    for (unsigned char x : c)
        if (x != CANARY_VAL) return false;
    return true;
}

// Float64 reference of decode o (as doubles), threads over (b, h).
static void reference(const std::vector<bf16_t> &q, const std::vector<bf16_t> &k,
                      const std::vector<bf16_t> &v, std::vector<double> &o, int B, int HQ, int HKV,
                      int L)
{
    const int D = HEAD_DIM;
    auto work = [&](int bh) {
        int b = bh / HQ, h = bh % HQ, kvh = h / (HQ / HKV);
        const bf16_t *kb = &k[(size_t)(b * HKV + kvh) * L * D],
                     *vb = &v[(size_t)(b * HKV + kvh) * L * D];
        std::vector<double> sc(L), qd(D), acc(D, 0.0);
        for (int d = 0; d < D; d++)
            qd[d] = bf2f(q[(size_t)bh * D + d]);
        double mx = -INFINITY;
        for (int j = 0; j < L; j++) {
            double s = 0;
            for (int d = 0; d < D; d++)
                s += qd[d] * bf2f(kb[(size_t)j * D + d]);
            sc[j] = s / sqrt((double)D);
            mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (int j = 0; j < L; j++) {
            double p = exp(sc[j] - mx);
            sum += p;
            for (int d = 0; d < D; d++)
                acc[d] += p * bf2f(vb[(size_t)j * D + d]);
        }
        for (int d = 0; d < D; d++)
            o[(size_t)bh * D + d] = acc[d] / sum;
    };
    int nthr = (int)std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (int t = 0; t < nthr; t++)
        th.emplace_back([&, t] {
            for (int bh = t; bh < B * HQ; bh += nthr)
                work(bh);
        });
    for (auto &t : th)
        t.join();
}

struct shape {
    int B, HQ, HKV, L;
};

// Checks cfg on shape s (outliers: a few q and k values of +-50 that line up
// into dominant scores) for several splits; prints one line per split.
// Returns the number of failures.
static int check(const config &cfg, const shape &s, bool outliers, unsigned long long seed)
{
    const size_t nq = (size_t)s.B * s.HQ * HEAD_DIM, nk = (size_t)s.B * s.HKV * s.L * HEAD_DIM;
    std::vector<bf16_t> hq(nq), hk(nk), hv(nk), ho(nq);
    bf16_t *dq = (bf16_t *)dev_alloc(nq * 2), *dk = (bf16_t *)dev_alloc(nk * 2),
           *dv = (bf16_t *)dev_alloc(nk * 2), *dout = (bf16_t *)dev_alloc(nq * 2);
    const size_t part_bytes = (size_t)s.B * s.HQ * MMAD_MAX_SPLIT * PART_STRIDE * sizeof(float);
    float *dpart = (float *)dev_alloc(part_bytes);
    fill_kernel<<<1024, 256>>>(dq, nq, seed);
    fill_kernel<<<1024, 256>>>(dk, nk, seed + 1);
    fill_kernel<<<1024, 256>>>(dv, nk, seed + 2);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hq.data(), dq, nq * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hk.data(), dk, nk * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hv.data(), dv, nk * 2, cudaMemcpyDeviceToHost));
    if (outliers) {
        const int G = s.HQ / s.HKV;
        for (int b = 0; b < s.B; b++)
            for (int h = 0; h < s.HQ; h += 2) { // every other head: one big q value
                int d = (h * 37 + b) % HEAD_DIM;
                hq[((size_t)b * s.HQ + h) * HEAD_DIM + d] = f2bf(h % 4 ? -50.0f : 50.0f);
                int kvh = h / G, key = (h * 7919 + b * 104729) % s.L; // and one key to match
                hk[(((size_t)b * s.HKV + kvh) * s.L + key) * HEAD_DIM + d] =
                    f2bf(h % 8 < 4 ? 50.0f : -50.0f);
            }
        CK(cudaMemcpy(dq, hq.data(), nq * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dk, hk.data(), nk * 2, cudaMemcpyHostToDevice));
    }
    std::vector<double> ref(nq);
    reference(hq, hk, hv, ref, s.B, s.HQ, s.HKV, s.L);
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    int fails = 0;
    const int splits[] = {0, 1, 3, MMAD_MAX_SPLIT};
    for (int sp : splits) {
        CK(cudaMemset(dout, 0xff, nq * 2)); // NaN: unwritten outputs fail
        int rc = cfg.fn(dq, dk, dv, dout, dpart, s.B, s.HQ, s.HKV, s.L, sp, st);
        cudaError_t e = cudaStreamSynchronize(st);
        if (rc || e != cudaSuccess) {
            printf("  %-9s B=%d HQ=%d HKV=%d L=%-6d split=%-3d FAIL launch %d / %s\n", cfg.name,
                   s.B, s.HQ, s.HKV, s.L, sp, rc, cudaGetErrorString(e));
            exit(2); // the context may be unusable
        }
        CK(cudaMemcpy(ho.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
        double maxerr = 0, worst = 0;
        for (size_t i = 0; i < nq; i++) {
            double got = bf2f(ho[i]), err = fabs(got - ref[i]);
            if (!std::isfinite(got)) err = INFINITY;
            maxerr = std::max(maxerr, err);
            worst = std::max(worst, err / (1e-2 + 1e-2 * fabs(ref[i])));
        }
        bool guards = canary_ok(dq, nq * 2) && canary_ok(dk, nk * 2) && canary_ok(dv, nk * 2) &&
                      canary_ok(dout, nq * 2) && canary_ok(dpart, part_bytes);
        bool ok = worst <= 1.0 && guards;
        fails += !ok;
        printf("  %-9s B=%d HQ=%d HKV=%d L=%-6d %s split=%-4s max|err| %.3e  err/tol %.3f%s  %s\n",
               cfg.name, s.B, s.HQ, s.HKV, s.L, outliers ? "outl" : "    ",
               sp ? std::to_string(sp).c_str() : "auto", maxerr, worst,
               guards ? "" : "  GUARD OVERWRITTEN", ok ? "PASS" : "FAIL");
        fflush(stdout);
    }
    CK(cudaStreamDestroy(st));
    CK(cudaFree(dq));
    CK(cudaFree(dk));
    CK(cudaFree(dv));
    CK(cudaFree(dout));
    CK(cudaFree(dpart));
    return fails;
}

// Median microseconds per call: a graph of calls over input sets rotated so
// that together they outsize the L2 (> 200 MB), replayed (as gqa_sweep.cu,
// without its cap of 64 sets, so small shapes are timed cold too).
static double timeit(const config &cfg, const shape &s, cudaStream_t st)
{
    const size_t nq = (size_t)s.B * s.HQ * HEAD_DIM, nk = (size_t)s.B * s.HKV * s.L * HEAD_DIM;
    const size_t set_bytes = (nq * 2 + nk * 2) * 2;
    const int nsets = (int)std::max<size_t>(2, (200u << 20) / set_bytes + 1); // > 200 MB
    std::vector<bf16_t *> d(4 * nsets);
    for (int i = 0; i < nsets; i++)
        for (int t = 0; t < 4; t++) {
            size_t n = t == 1 || t == 2 ? nk : nq;
            CK(cudaMalloc(&d[4 * i + t], n * 2));
            fill_kernel<<<1024, 256>>>(d[4 * i + t], n, 99 + 4 * i + t);
        }
    float *part;
    CK(cudaMalloc(&part, (size_t)s.B * s.HQ * MMAD_MAX_SPLIT * PART_STRIDE * sizeof(float)));
    CK(cudaDeviceSynchronize());
    auto call = [&](int i) {
        return cfg.fn(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3], part, s.B, s.HQ, s.HKV,
                      s.L, 0, st);
    };
    for (int i = 0; i < nsets; i++)
        if (call(i)) exit(2);
    CK(cudaStreamSynchronize(st));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nsets; i++)
        call(i);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    const double us = graph_median_us(ge, st, nsets, std::max(1, 2000 / nsets));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    for (bf16_t *p : d)
        CK(cudaFree(p));
    CK(cudaFree(part));
    return us;
}

int main(int argc, char **argv)
{
    const bool sweep = argc > 1 && !strcmp(argv[1], "--sweep");
    const bool check_only = argc > 1 && !strcmp(argv[1], "--check");
    const int ncfg = sweep ? (int)(sizeof CONFIGS / sizeof CONFIGS[0]) : 1;
    const shape CHECKS[] = {{1, 16, 8, 1},     {3, 40, 8, 1000}, {2, 16, 8, 4099},
                            {1, 40, 8, 32768}, {1, 16, 8, 128},  {4, 16, 1, 77},
                            {2, 8, 8, 300},    {1, 24, 8, 515}}; // and G = 1, G = 3
    const shape OUTLIER_CHECKS[] = {{3, 40, 8, 1000}, {2, 16, 8, 4099}, {4, 16, 1, 77}};
    const shape TIMES[] = {{1, 16, 8, 128},   {1, 16, 8, 1024}, {1, 16, 8, 8192},
                           {1, 16, 8, 32768}, {8, 16, 8, 8192}, {32, 16, 8, 4096},
                           {1, 40, 8, 128},   {1, 40, 8, 1024}, {1, 40, 8, 8192},
                           {1, 40, 8, 32768}, {8, 40, 8, 8192}, {32, 40, 8, 4096}};
    int fails = 0;
    for (int c = 0; c < ncfg; c++) {
        printf("check %s (KW=%d STAGES=%d for default)\n", CONFIGS[c].name, MMAD_KW, MMAD_STAGES);
        unsigned long long seed = 1234;
        for (const shape &s : CHECKS)
            fails += check(CONFIGS[c], s, false, seed += 10);
        for (const shape &s : OUTLIER_CHECKS)
            fails += check(CONFIGS[c], s, true, seed += 10);
    }
    printf("%s: %d failure(s)\n", fails ? "FAIL" : "PASS", fails);
    if (check_only || fails) return fails ? 1 : 0;
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    for (int c = 0; c < ncfg; c++)
        for (const shape &s : TIMES) {
            double us = timeit(CONFIGS[c], s, st);
            double kv = 4.0 * s.B * s.HKV * s.L * HEAD_DIM; // bytes of k and v
            printf("%-9s decode_%dx%d_b%d_l%-6d %9.2f us  %7.0f GB/s(kv)\n", CONFIGS[c].name, s.HQ,
                   s.HKV, s.B, s.L, us, kv / us * 1e-3);
            fflush(stdout);
        }
    CK(cudaStreamDestroy(st));
    return 0;
}
