// The judge's timed-input kernels on one GPU: the dtype-specialised draw
// of KVJ_QUICK_NORMAL (quick_gen_kernel, quick_changed_kernel) against the
// generic path (gen_kernel, changed_kernel) and a plain memset, with the
// bits of both compared with each other and with the host's twin
// (kvj_quick_at). Built and run by bench/judge_gen_speed.sh, which puts
// <kevolve/judge_ops.h> in place as the harness does.
#include "../src/backend/cuda/judge_kernels.cu"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static cudaEvent_t e0, e1;

// Milliseconds of the best of five runs of LAUNCH (after one not counted).
template <typename F> static double best_ms(F launch)
{
    double best = 1e30;
    for (int r = 0; r < 6; r++) {
        CK(cudaEventRecord(e0));
        launch();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0 && ms < best) best = ms;
    }
    return best;
}

// The host's bits of element I (kvj_quick_at, rounded to nearest even).
static uint32_t host_bits(int dt, uint64_t seed, uint64_t i)
{
    float v = kvj_quick_at(seed, i);
    uint32_t u;
    memcpy(&u, &v, 4);
    if (dt == KV_F32) return u;
    if (dt == KV_BF16) return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    __half_raw h = __float2half_rn(v);
    return h.x;
}

static unsigned long long changed_count(unsigned long long *res)
{
    unsigned long long h[2];
    CK(cudaMemcpy(h, res, sizeof h, cudaMemcpyDeviceToHost));
    return h[0];
}

int main(void)
{
    const size_t bytes = 1ull << 30;
    const uint64_t seed = 0x243f6a8885a308d3ull;
    void *a = NULL, *b = NULL;
    unsigned long long *res = NULL;
    CK(cudaMalloc(&a, bytes + 256));
    CK(cudaMalloc(&b, bytes + 256));
    CK(cudaMalloc(&res, 2 * sizeof *res));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    int fails = 0;
    printf("%-34s %9s %9s\n", "kernel (1 GiB)", "ms", "GB/s");
    double ms = best_ms([&] { CK(cudaMemsetAsync(a, 0x5a, bytes)); });
    printf("%-34s %9.3f %9.0f\n", "memset", ms, bytes / ms / 1e6);
    const int dts[3] = {KV_BF16, KV_F16, KV_F32};
    const char *names[3] = {"bf16", "f16", "f32"};
    for (int d = 0; d < 3; d++) {
        int dt = dts[d], es = dt == KV_F32 ? 4 : 2;
        uint64_t n = bytes / es;
        int g = grid_for(n);
        char label[64];
        ms = best_ms([&] { gen_kernel<<<g, 256>>>(b, dt, KVJ_QUICK_NORMAL, n, seed, 0); });
        snprintf(label, sizeof label, "gen %s generic", names[d]);
        printf("%-34s %9.3f %9.0f\n", label, ms, bytes / ms / 1e6);
        ms = best_ms([&] { kvj_gen(0, a, dt, KVJ_QUICK_NORMAL, n, seed, 0); });
        snprintf(label, sizeof label, "gen %s specialised", names[d]);
        printf("%-34s %9.3f %9.0f\n", label, ms, bytes / ms / 1e6);
        CK(cudaDeviceSynchronize());
        kvj_count_diff(0, a, b, es, n, res);
        unsigned long long diff = changed_count(res);
        ms = best_ms([&] {
            reset(0, res);
            changed_kernel<<<g, 256>>>(a, dt, KVJ_QUICK_NORMAL, n, seed, 0, res);
        });
        snprintf(label, sizeof label, "check %s generic", names[d]);
        printf("%-34s %9.3f %9.0f\n", label, ms, bytes / ms / 1e6);
        unsigned long long ch_old = changed_count(res);
        ms = best_ms([&] { kvj_count_changed(0, a, dt, KVJ_QUICK_NORMAL, n, seed, 0, res); });
        snprintf(label, sizeof label, "check %s specialised", names[d]);
        printf("%-34s %9.3f %9.0f\n", label, ms, bytes / ms / 1e6);
        unsigned long long ch_new = changed_count(res);
        // The host's twin on a sample, the high half of the index set too.
        unsigned char host[64];
        int host_bad = 0;
        for (uint64_t at : {(uint64_t)0, (uint64_t)12345, n - 64 / es}) {
            CK(cudaMemcpy(host, (char *)a + at * es, 64, cudaMemcpyDeviceToHost));
            for (int k = 0; k < 64 / es; k++) {
                uint32_t got = es == 2 ? ((uint16_t *)host)[k] : ((uint32_t *)host)[k];
                host_bad += got != host_bits(dt, seed, at + k);
            }
        }
        // A tail and an unaligned start go through the element-wise loops.
        uint64_t odd = 1000003;
        char *u = (char *)a + es;
        kvj_gen(0, u, dt, KVJ_QUICK_NORMAL, odd, seed ^ 7, 0);
        kvj_count_changed(0, u, dt, KVJ_QUICK_NORMAL, odd, seed ^ 7, 0, res);
        unsigned long long tail_new = changed_count(res);
        reset(0, res);
        changed_kernel<<<grid_for(odd), 256>>>(u, dt, KVJ_QUICK_NORMAL, odd, seed ^ 7, 0, res);
        unsigned long long tail_old = changed_count(res);
        int ok = diff == 0 && ch_old == 0 && ch_new == 0 && tail_new == 0 && tail_old == 0 &&
                 host_bad == 0;
        printf("  %s bits: specialised vs generic differ in %llu; changed by generic %llu, by "
               "specialised %llu; odd tail %llu/%llu; host twin differs in %d: %s\n",
               names[d], diff, ch_old, ch_new, tail_old, tail_new, host_bad,
               ok ? "same" : "DIFFER");
        fails += !ok;
        // One changed element is found (the odd tail above drew over the start).
        kvj_gen(0, a, dt, KVJ_QUICK_NORMAL, n, seed, 0);
        CK(cudaMemset((char *)a + 4096 * es, 0x11, es));
        kvj_count_changed(0, a, dt, KVJ_QUICK_NORMAL, n, seed, 0, res);
        unsigned long long one = changed_count(res);
        printf("  %s one element changed: specialised finds %llu\n", names[d], one);
        fails += one != 1;
    }
    // A timed block's poison count: 8,192 sets of a decode's 4,096 outputs.
    {
        uint64_t n = 16 * 2 * 128, sets = 8192, stride = n + 64;
        CK(cudaMemset(a, 0, stride * sets * 2));
        ms = best_ms([&] { kvj_count_equal(0, a, 2, n, sets, stride, 0x7fc1u, res); });
        printf("%-34s %9.3f %9.0f\n", "poison count, 8192 sets x 8 KB", ms,
               (double)n * sets * 2 / ms / 1e6);
        CK(cudaMemset((char *)a + (stride * 5000 + 17) * 2, 0xc1, 1));
        CK(cudaMemset((char *)a + (stride * 5000 + 17) * 2 + 1, 0x7f, 1));
        kvj_count_equal(0, a, 2, n, sets, stride, 0x7fc1u, res);
        unsigned long long h[2];
        CK(cudaMemcpy(h, res, sizeof h, cudaMemcpyDeviceToHost));
        int ok = h[0] == 1 && h[1] == 5000 * n + 17;
        printf("  poison found: %llu at %llu (want 1 at %llu): %s\n", h[0], h[1],
               (unsigned long long)(5000 * n + 17), ok ? "ok" : "WRONG");
        fails += !ok;
    }
    printf("%s\n", fails ? "FAILED" : "all bits as drawn");
    return fails != 0;
}
