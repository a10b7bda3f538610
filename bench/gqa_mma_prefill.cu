// Tensor-core (mma.sync) FlashAttention-2-style forward kernel for causal
// prefill GQA attention, bf16, head_dim 128, Hopper (sm_90a), with its own
// correctness check against a float64 CPU reference and a timing table.
// Layout and causal rule: tasks/gqa_attention/gqa_attention.h. The kernel
// is naive.cu's MMA design axis (mma_prefill_launch, mma_launch_cfg),
// written and first checked here, now included from naive.cu.
//
// Build: nvcc -O3 -arch=sm_90a -std=c++17 -Iinclude bench/gqa_mma_prefill.cu -o /tmp/x
// Run:   /tmp/x            (checks, then times; exit 1 on any FAIL)
//        /tmp/x --sweep    (checks and times every compiled tile configuration)
//        /tmp/x --check    (checks only, e.g. under compute-sanitizer)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <thread>
#include <vector>

typedef unsigned short bf16_t; // bf16 bit pattern

// The kernel under test is the one in the evolvable start, included whole
// (its other kernels and kv_launch come along unused); a variant of it can be
// named with -DCANDIDATE='"path"' (bench/gqa_sweep.sh derives variants).
#ifndef CANDIDATE
#define CANDIDATE "../tasks/gqa_attention/cuda/naive.cu"
#endif
#include CANDIDATE
#include "gqa_bench.cuh"

// ---------------------------------------------------------------- host side

typedef int (*launch_fn)(const bf16_t *, const bf16_t *, const bf16_t *, bf16_t *, int, int, int,
                         int, int, cudaStream_t);


static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double urand() // uniform in [0, 1)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand() { return sqrt(-2.0 * log(1.0 - urand())) * cos(6.283185307179586 * urand()); }

// Fills x with kind 0: normal; 1: small integers -4..4; 2: normal with rare
// +-30..80 outliers (the harness's three kinds of input).
static void fill(std::vector<bf16_t> &x, int kind)
{
    for (auto &e : x) {
        double r;
        if (kind == 1)
            r = (double)((int)(urand() * 9.0) - 4);
        else {
            r = nrand();
            if (kind == 2 && urand() < 0.002) r = (urand() < 0.5 ? -1 : 1) * (30 + 50 * urand());
        }
        e = f2bf((float)r);
    }
}

// Float64 reference of o (as doubles), threads over (b, h).
static void reference(const std::vector<bf16_t> &q, const std::vector<bf16_t> &k,
                      const std::vector<bf16_t> &v, std::vector<double> &o, int B, int HQ, int HKV,
                      int SQ, int L)
{
    const int D = HEAD_DIM;
    auto work = [&](int bh) {
        int b = bh / HQ, h = bh % HQ, kvh = h / (HQ / HKV);
        const bf16_t *kb = &k[(size_t)(b * HKV + kvh) * L * D], *vb = &v[(size_t)(b * HKV + kvh) * L * D];
        std::vector<double> sc(L), qd(D), acc(D);
        for (int i = 0; i < SQ; i++) {
            const bf16_t *qr = &q[((size_t)bh * SQ + i) * D];
            for (int d = 0; d < D; d++) qd[d] = bf2f(qr[d]);
            int n = L - SQ + i + 1;
            double mx = -INFINITY;
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int d = 0; d < D; d++) s += qd[d] * bf2f(kb[(size_t)j * D + d]);
                sc[j] = s / sqrt((double)D);
                mx = std::max(mx, sc[j]);
            }
            double sum = 0;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int j = 0; j < n; j++) {
                double p = exp(sc[j] - mx);
                sum += p;
                for (int d = 0; d < D; d++) acc[d] += p * bf2f(vb[(size_t)j * D + d]);
            }
            for (int d = 0; d < D; d++) o[((size_t)bh * SQ + i) * D + d] = acc[d] / sum;
        }
    };
    int nthr = (int)std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (int t = 0; t < nthr; t++)
        th.emplace_back([&, t] {
            for (int bh = t; bh < B * HQ; bh += nthr) work(bh);
        });
    for (auto &t : th) t.join();
}

#define CANARY 4096 // bf16 elements of guard pattern after every buffer
static const bf16_t CANARY_VAL = 0x7fc1;

// Device buffer of n elements plus a canary tail; returns its pointer.
static bf16_t *dev_alloc(size_t n)
{
    bf16_t *p;
    CK(cudaMalloc(&p, (n + CANARY) * sizeof(bf16_t)));
    std::vector<bf16_t> c(CANARY, CANARY_VAL);
    CK(cudaMemcpy(p + n, c.data(), CANARY * sizeof(bf16_t), cudaMemcpyHostToDevice));
    return p;
}

static bool canary_ok(const bf16_t *p, size_t n)
{
    std::vector<bf16_t> c(CANARY);
    CK(cudaMemcpy(c.data(), p + n, CANARY * sizeof(bf16_t), cudaMemcpyDeviceToHost));
    for (auto e : c)
        if (e != CANARY_VAL) return false;
    return true;
}

// Checks one shape against the reference; prints a line, returns pass.
static bool check(launch_fn fn, const char *name, int B, int HQ, int HKV, int SQ, int L, int kind)
{
    const int D = HEAD_DIM;
    size_t nq = (size_t)B * HQ * SQ * D, nk = (size_t)B * HKV * L * D;
    std::vector<bf16_t> hq(nq), hk(nk), hv(nk), ho(nq);
    fill(hq, kind);
    fill(hk, kind);
    fill(hv, kind);
    bf16_t *dq = dev_alloc(nq), *dk = dev_alloc(nk), *dv = dev_alloc(nk), *dout = dev_alloc(nq);
    CK(cudaMemcpy(dq, hq.data(), nq * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dk, hk.data(), nk * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, hv.data(), nk * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xff, nq * 2)); // NaN pattern: unwritten rows fail
    int rc = fn(dq, dk, dv, dout, B, HQ, HKV, SQ, L, 0);
    cudaError_t e2 = cudaDeviceSynchronize();
    bool ok = rc == 0 && e2 == cudaSuccess;
    if (!ok) {
        printf("%-10s B=%d HQ=%d HKV=%d SQ=%d L=%d kind=%d: launch %d, sync %s FAIL\n", name, B, HQ,
               HKV, SQ, L, kind, rc, cudaGetErrorString(e2));
        exit(1);
    }
    bool guards = canary_ok(dq, nq) && canary_ok(dk, nk) && canary_ok(dv, nk) && canary_ok(dout, nq);
    CK(cudaMemcpy(ho.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
    std::vector<double> ref(nq);
    reference(hq, hk, hv, ref, B, HQ, HKV, SQ, L);
    double max_abs = 0, max_rel = 0, worst = 0; // worst: max err / tolerance
    size_t bad = 0;
    for (size_t i = 0; i < nq; i++) {
        double got = bf2f(ho[i]), r = ref[i], err = fabs(got - r);
        if (!(err <= 1e-2 + 1e-2 * fabs(r))) bad++; // NaN counts as bad
        if (err > max_abs || err != err) max_abs = err;
        worst = std::max(worst, err / (1e-2 + 1e-2 * fabs(r)));
        if (fabs(r) > 1e-3) max_rel = std::max(max_rel, err / fabs(r));
    }
    ok = bad == 0 && guards;
    printf("%-10s B=%-2d HQ=%-2d HKV=%d SQ=%-5d L=%-5d kind=%d  max_abs=%.3e max_rel=%.3e err/tol=%.2f "
           "bad=%zu guards=%s  %s\n",
           name, B, HQ, HKV, SQ, L, kind, max_abs, max_rel, worst, bad, guards ? "ok" : "BROKEN",
           ok ? "PASS" : "FAIL");
    CK(cudaFree(dq));
    CK(cudaFree(dk));
    CK(cudaFree(dv));
    CK(cudaFree(dout));
    return ok;
}

// Median kernel time in microseconds over 20 runs after warm-up.
static double time_us(launch_fn fn, int B, int HQ, int HKV, int SQ, int L)
{
    const int D = HEAD_DIM;
    size_t nq = (size_t)B * HQ * SQ * D, nk = (size_t)B * HKV * L * D;
    std::vector<bf16_t> hq(nq), hk(nk);
    fill(hq, 0);
    fill(hk, 0);
    bf16_t *dq = dev_alloc(nq), *dk = dev_alloc(nk), *dv = dev_alloc(nk), *dout = dev_alloc(nq);
    CK(cudaMemcpy(dq, hq.data(), nq * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dk, hk.data(), nk * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, hk.data(), nk * 2, cudaMemcpyHostToDevice));
    for (int i = 0; i < 3; i++) CK((cudaError_t)fn(dq, dk, dv, dout, B, HQ, HKV, SQ, L, 0));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int i = 0; i < 20; i++) {
        CK(cudaEventRecord(a, 0));
        CK((cudaError_t)fn(dq, dk, dv, dout, B, HQ, HKV, SQ, L, 0));
        CK(cudaEventRecord(b, 0));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    CK(cudaFree(dq));
    CK(cudaFree(dk));
    CK(cudaFree(dv));
    CK(cudaFree(dout));
    return (t[9] + t[10]) / 2;
}

static double flops(int B, int HQ, int SQ, int L)
{
    double pairs = (double)SQ * (L - SQ) + (double)SQ * (SQ + 1) / 2.0;
    return 4.0 * B * HQ * HEAD_DIM * pairs;
}

struct cfg {
    const char *name;
    launch_fn fn;
};

int main(int argc, char **argv)
{
    bool sweep = argc > 1 && !strcmp(argv[1], "--sweep");
    bool check_only = argc > 1 && !strcmp(argv[1], "--check");
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);

    cfg cfgs[] = {
        {"default", mma_prefill_launch},
        {"8w1m128q", mma_launch_cfg<8, 1, 128, true>},
        {"4w1m64q", mma_launch_cfg<4, 1, 64, true>},

    };
    const int ncfg = sweep ? (int)(sizeof cfgs / sizeof cfgs[0]) : 1;

    struct shape {
        int B, HQ, HKV, SQ, L;
    } checks[] = {
        {1, 16, 8, 77, 77},   {1, 40, 8, 33, 301},  {1, 16, 8, 1, 1},    {1, 40, 8, 512, 512},
        {2, 16, 8, 512, 1024}, {1, 16, 8, 128, 128}, {3, 40, 8, 1, 1000}, {32, 10, 2, 5, 9},
        {2, 16, 8, 130, 4099}, {1, 10, 2, 200, 200}, {1, 16, 8, 2048, 2048}, {1, 16, 8, 512, 4096},
        {1, 40, 8, 1024, 1024},
    };
    int fails = 0;
    for (int c = 0; c < ncfg; c++)
        for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
            const shape &s = checks[i];
            if (!check(cfgs[c].fn, cfgs[c].name, s.B, s.HQ, s.HKV, s.SQ, s.L,
                       i < 10 ? (int)(i % 3) : 2)) fails++;
        }

    struct shape times[] = {
        {1, 16, 8, 512, 512},  {1, 40, 8, 512, 512},   {1, 16, 8, 2048, 2048}, {1, 40, 8, 2048, 2048},
        {1, 16, 8, 8192, 8192}, {1, 40, 8, 8192, 8192}, {1, 16, 8, 512, 8192},  {1, 40, 8, 512, 8192},
    };
    for (int c = 0; c < (check_only ? 0 : ncfg); c++)
        for (auto &s : times) {
            double us = time_us(cfgs[c].fn, s.B, s.HQ, s.HKV, s.SQ, s.L);
            printf("%-10s time B=%d HQ=%-2d HKV=%d SQ=%-5d L=%-5d  %9.1f us  %6.1f TFLOP/s\n",
                   cfgs[c].name, s.B, s.HQ, s.HKV, s.SQ, s.L, us,
                   flops(s.B, s.HQ, s.SQ, s.L) / us * 1e-6);
        }
    printf("%s (%d failing checks)\n", fails ? "FAIL" : "ALL PASS", fails);
    return fails ? 1 : 0;
}
