// A quick check-and-time driver for gqa_attention CUDA candidates, used to
// sweep the design axes by hand on the GPU machine in seconds (the kernel
// harness, with its full checks, takes minutes per candidate on the big
// shapes). Not a substitute for `kevolve eval`: every number worth quoting
// comes from the harness or bench/gqa_h200.sh. Build with the candidate
// included: nvcc -O3 -arch=sm_90a -Iinclude -DCANDIDATE='"path.cu"' ...
// Usage: gqa_sweep [all|decode|prefill]   prints one line per shape:
// max error against a float64 CPU reference (small shapes) or time.
#include CANDIDATE
#include "gqa_bench.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

struct shape {
    const char *name;
    int B, HQ, HKV, SQ, L;
    bool check, time;
};

static const shape SHAPES[] = {
    {"decode_16x8_b1_l1", 1, 16, 8, 1, 1, true, false},
    {"decode_40x8_b3_l1000", 3, 40, 8, 1, 1000, true, false},
    {"decode_16x8_b2_l4099", 2, 16, 8, 1, 4099, true, false},
    {"prefill_16x8_s77", 1, 16, 8, 77, 77, true, false},
    {"chunked_40x8_q33_l301", 1, 40, 8, 33, 301, true, false},
    {"decode_40x8_b1_l32768", 1, 40, 8, 1, 32768, true, false},
    {"prefill_40x8_s512", 1, 40, 8, 512, 512, true, false},
    {"decode_16x8_b1_l128", 1, 16, 8, 1, 128, false, true},
    {"decode_16x8_b1_l1024", 1, 16, 8, 1, 1024, false, true},
    {"decode_16x8_b1_l8192", 1, 16, 8, 1, 8192, false, true},
    {"decode_16x8_b1_l32768", 1, 16, 8, 1, 32768, false, true},
    {"decode_16x8_b8_l8192", 8, 16, 8, 1, 8192, false, true},
    {"decode_16x8_b32_l4096", 32, 16, 8, 1, 4096, false, true},
    {"decode_40x8_b1_l128", 1, 40, 8, 1, 128, false, true},
    {"decode_40x8_b1_l1024", 1, 40, 8, 1, 1024, false, true},
    {"decode_40x8_b1_l8192", 1, 40, 8, 1, 8192, false, true},
    {"decode_40x8_b1_l32768", 1, 40, 8, 1, 32768, false, true},
    {"decode_40x8_b8_l8192", 8, 40, 8, 1, 8192, false, true},
    {"decode_40x8_b32_l4096", 32, 40, 8, 1, 4096, false, true},
    {"prefill_16x8_s512", 1, 16, 8, 512, 512, false, true},
    {"prefill_16x8_s2048", 1, 16, 8, 2048, 2048, false, true},
    {"prefill_16x8_s8192", 1, 16, 8, 8192, 8192, false, true},
    {"chunked_16x8_q512_l8192", 1, 16, 8, 512, 8192, false, true},
    {"prefill_40x8_s512", 1, 40, 8, 512, 512, false, true},
    {"prefill_40x8_s2048", 1, 40, 8, 2048, 2048, false, true},
    {"prefill_40x8_s8192", 1, 40, 8, 8192, 8192, false, true},
    {"chunked_40x8_q512_l8192", 1, 40, 8, 512, 8192, false, true},
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
    for (int i = 0; i < 4; i++) a.tensors[i] = t[i];
    a.num_syms = 6;
    long long sy[6] = {s.B, s.HQ, s.HKV, s.SQ, s.L, 128};
    for (int i = 0; i < 6; i++) a.syms[i] = sy[i];
    a.stream = st;
    return kv_launch(&a);
}

// Max |got - ref| / (1e-2 + 1e-2 |ref|) over o: <= 1 is within tolerance.
static double check(const shape &s, cudaStream_t st)
{
    std::vector<unsigned short> h[4];
    void *d[4];
    for (int t = 0; t < 4; t++) {
        h[t].resize(count(s, t));
        CK(cudaMalloc(&d[t], h[t].size() * 2));
        if (t < 3) {
            fill_kernel<<<1024, 256>>>((unsigned short *)d[t], h[t].size(), 1234 + t);
            CK(cudaMemcpy(h[t].data(), d[t], h[t].size() * 2, cudaMemcpyDeviceToHost));
        } else {
            CK(cudaMemset(d[t], 0xff, h[t].size() * 2));
        }
    }
    int rc = launch(s, d, st);
    if (rc) {
        fprintf(stderr, "kv_launch returned %d\n", rc);
        exit(2);
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(h[3].data(), d[3], h[3].size() * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    std::vector<double> sc(s.L);
    for (int b = 0; b < s.B; b++)
        for (int hq = 0; hq < s.HQ; hq++)
            for (int r = 0; r < s.SQ; r++) {
                int kvh = hq / (s.HQ / s.HKV), keys = s.L - s.SQ + r + 1;
                const unsigned short *q = &h[0][(((size_t)b * s.HQ + hq) * s.SQ + r) * 128];
                const unsigned short *k = &h[1][((size_t)b * s.HKV + kvh) * s.L * 128];
                const unsigned short *v = &h[2][((size_t)b * s.HKV + kvh) * s.L * 128];
                double mx = -INFINITY, z = 0;
                for (int j = 0; j < keys; j++) {
                    double dot = 0;
                    for (int e = 0; e < 128; e++)
                        dot += (double)bf2f(q[e]) * bf2f(k[(size_t)j * 128 + e]);
                    sc[j] = dot / sqrt(128.0);
                    mx = std::max(mx, sc[j]);
                }
                for (int j = 0; j < keys; j++) z += sc[j] = exp(sc[j] - mx);
                for (int e = 0; e < 128; e++) {
                    double acc = 0;
                    for (int j = 0; j < keys; j++) acc += sc[j] * bf2f(v[(size_t)j * 128 + e]);
                    double ref = acc / z;
                    double got = bf2f(h[3][(((size_t)b * s.HQ + hq) * s.SQ + r) * 128 + e]);
                    double err = std::isfinite(got) ? fabs(got - ref) / (1e-2 + 1e-2 * fabs(ref))
                                                    : INFINITY;
                    worst = std::max(worst, err);
                }
            }
    for (int t = 0; t < 4; t++) CK(cudaFree(d[t]));
    return worst;
}

// Median microseconds per call: a graph of calls over input sets rotated
// so that together they outsize the L2, replayed (as bench/gqa_sdpa.py).
static double timeit(const shape &s, cudaStream_t st)
{
    size_t set_bytes = 0;
    for (int t = 0; t < 4; t++) set_bytes += count(s, t) * 2;
    int nsets = (int)std::min<size_t>(64, std::max<size_t>(2, (200u << 20) / set_bytes + 1));
    std::vector<void *> d(4 * nsets);
    for (int i = 0; i < nsets; i++)
        for (int t = 0; t < 4; t++) {
            CK(cudaMalloc(&d[4 * i + t], count(s, t) * 2));
            fill_kernel<<<1024, 256>>>((unsigned short *)d[4 * i + t], count(s, t), 99 + 4 * i + t);
        }
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < nsets; i++)
        if (launch(s, &d[4 * i], st)) exit(2);
    CK(cudaStreamSynchronize(st));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nsets; i++) launch(s, &d[4 * i], st);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    int reps = std::max(1, 2000 / nsets);
    if ((double)s.B * s.HQ * s.SQ * s.L > 1e8) reps = std::max(1, 50 / nsets);
    double us = graph_median_us(ge, st, nsets, reps);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    for (void *p : d) CK(cudaFree(p));
    return us;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    int bad = 0;
    for (const shape &s : SHAPES) {
        bool dec = s.SQ == 1;
        if (!strcmp(which, "decode") && !dec && !s.check) continue;
        if (!strcmp(which, "prefill") && dec && !s.check) continue;
        if (s.check) {
            double e = check(s, st);
            printf("%-26s err/tol %.3f %s\n", s.name, e, e <= 1 ? "ok" : "WRONG");
            bad += !(e <= 1);
        } else {
            double us = timeit(s, st);
            double kv = 4.0 * s.B * s.HKV * s.L * 128, pairs = s.SQ * (double)(s.L - s.SQ) +
                                                               s.SQ * (s.SQ + 1.0) / 2.0;
            printf("%-26s %9.2f us  %7.0f GB/s(kv)  %6.1f TFLOP/s\n", s.name, us, kv / us * 1e-3,
                   4.0 * s.B * s.HQ * pairs * 128 / us * 1e-6);
        }
        fflush(stdout);
    }
    return bad ? 1 : 0;
}
