// The gqa_attention float64 GPU reference, old against new, on one GPU
// (bench/reference_f64_h200.sh builds and runs it). OLD_SRC and NEW_SRC name
// the two reference_f64.cu files (with OLD_GENERAL, OLD_SRC is compiled with
// REFERENCE_F64_GENERAL: its general kernel alone, the kernel before the
// tiled one); each is compiled here inside a namespace of its own with its
// kv_launch renamed, so both run in one process on the same inputs.
//
// For every shape (the 18 scenarios of gqa_attention_search, the two
// 8192-row prefills of gqa_attention, every held-out shape, windowed shapes
// of attention_window, and multi-query and multi-head ones) and every input
// law the judge draws (normal, normal with outliers, small integers: the
// last two make the softmax peaky), it runs both on the same bf16 inputs
// and compares o and os element by element with the judge's cross-check
// rule (|new - old| <= 1e-9 (|o| + os) + 1e-12, os the old error scale). It
// prints per shape and law max |o_new - o_old| / max(os_old, 1e-6), the same
// for os, the elements out of the rule, and for the normal law the time of
// each (cudaEvent, median of 3 after one warm-up) and the speedup. Exit
// status 1 if any element is out of the rule (or not finite), 2 on a CUDA
// error.
//
// Usage: reference_f64_h200 [--quick] [NAME_SUBSTRING...]
//   --quick  one law (normal) and no 8192-row prefills
#include <kevolve/task.h>

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

namespace ref_old
{
#define kv_launch kv_launch_old
#ifdef OLD_GENERAL
#define REFERENCE_F64_GENERAL
#endif
#include OLD_SRC
#undef REFERENCE_F64_GENERAL
#undef kv_launch
} // namespace ref_old

namespace ref_new
{
#define kv_launch kv_launch_new
#include NEW_SRC
#undef kv_launch
} // namespace ref_new

#include "gqa_bench.cuh" // CK

struct Shape {
    const char *name;
    int64_t B, HQ, HKV, SQ, L, W; // W > 0: attention_window's seventh symbol
    bool big;                     // the 8192-row prefills: the normal law only, skipped by --quick
};

static const Shape shapes[] = {
    // gqa_attention_search's scenarios (gqa_attention.c), in order
    {"decode_16x8_b1_l128", 1, 16, 8, 1, 128, 0, false},
    {"decode_16x8_b1_l1024", 1, 16, 8, 1, 1024, 0, false},
    {"decode_16x8_b1_l8192", 1, 16, 8, 1, 8192, 0, false},
    {"decode_16x8_b1_l32768", 1, 16, 8, 1, 32768, 0, false},
    {"decode_16x8_b8_l8192", 8, 16, 8, 1, 8192, 0, false},
    {"decode_16x8_b32_l4096", 32, 16, 8, 1, 4096, 0, false},
    {"decode_40x8_b1_l128", 1, 40, 8, 1, 128, 0, false},
    {"decode_40x8_b1_l1024", 1, 40, 8, 1, 1024, 0, false},
    {"decode_40x8_b1_l8192", 1, 40, 8, 1, 8192, 0, false},
    {"decode_40x8_b1_l32768", 1, 40, 8, 1, 32768, 0, false},
    {"decode_40x8_b8_l8192", 8, 40, 8, 1, 8192, 0, false},
    {"decode_40x8_b32_l4096", 32, 40, 8, 1, 4096, 0, false},
    {"prefill_16x8_s512", 1, 16, 8, 512, 512, 0, false},
    {"prefill_16x8_s2048", 1, 16, 8, 2048, 2048, 0, false},
    {"chunked_16x8_q512_l8192", 1, 16, 8, 512, 8192, 0, false},
    {"prefill_40x8_s512", 1, 40, 8, 512, 512, 0, false},
    {"prefill_40x8_s2048", 1, 40, 8, 2048, 2048, 0, false},
    {"chunked_40x8_q512_l8192", 1, 40, 8, 512, 8192, 0, false},
    // gqa_attention's last two
    {"prefill_16x8_s8192", 1, 16, 8, 8192, 8192, 0, true},
    {"prefill_40x8_s8192", 1, 40, 8, 8192, 8192, 0, true},
    // gqa_held_out
    {"held_decode_16x8_b1_l1", 1, 16, 8, 1, 1, 0, false},
    {"held_decode_40x8_b3_l1000", 3, 40, 8, 1, 1000, 0, false},
    {"held_decode_16x8_b2_l4099", 2, 16, 8, 1, 4099, 0, false},
    {"held_prefill_16x8_s77", 1, 16, 8, 77, 77, 0, false},
    {"held_chunked_40x8_q33_l301", 1, 40, 8, 33, 301, 0, false},
    {"held_decode_16x8_b1_l32767", 1, 16, 8, 1, 32767, 0, false},
    // attention_window: held-out shapes, then windows shorter than the keys
    {"win_prefill_16x8_s77_w33", 1, 16, 8, 77, 77, 33, false},
    {"win_decode_40x8_b3_l1000_w100", 3, 40, 8, 1, 1000, 100, false},
    {"win_chunked_40x8_q33_l301_w64", 1, 40, 8, 33, 301, 64, false},
    {"win_decode_16x8_b1_l5_w1", 1, 16, 8, 1, 5, 1, false},
    {"win_prefill_16x8_s20_w4096", 1, 16, 8, 20, 20, 4096, false},
    {"win_decode_16x8_b1_l32768_w4096", 1, 16, 8, 1, 32768, 4096, false},
    {"win_prefill_16x8_s2048_w512", 1, 16, 8, 2048, 2048, 512, false},
    {"win_chunked_40x8_q512_l16384_w4096", 1, 40, 8, 512, 16384, 4096, false},
    // attention_mqa and attention_mha (one KV head for 32 or 40 query heads; one each)
    {"mqa_decode_32x1_b8_l8192", 8, 32, 1, 1, 8192, 0, false},
    {"mqa_prefill_32x1_s2048", 1, 32, 1, 2048, 2048, 0, false},
    {"mqa_chunked_40x1_q33_l301", 1, 40, 1, 33, 301, 0, false},
    {"mha_decode_32x32_b8_l4096", 8, 32, 32, 1, 4096, 0, false},
    {"mha_prefill_32x32_s2048", 1, 32, 32, 2048, 2048, 0, false},
    {"mha_chunked_8x8_q33_l301", 1, 8, 8, 33, 301, 0, false},
};
#define NSEARCH 18

enum { LAW_NORMAL, LAW_OUTLIERS, LAW_SMALL_INT, NLAWS };
static const char *const law_names[NLAWS] = {"normal", "outliers", "small_int"};

static __device__ uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 29)) * 0x94d049bb133111ebull;
    return z ^ (z >> 32);
}

// p[i] drawn from LAW, rounded to bf16, from a hash of (i, seed): normal
// N(0, 1); outliers: normal with one element in 500 of size 30..80, either
// sign; small_int: integers in [-4, 4].
__global__ void fill(uint16_t *p, size_t n, uint64_t seed, int law)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = mix((i + 1) * 0x9e3779b97f4a7c15ull ^ seed),
                 y = mix(z ^ 0x5851f42d4c957f2dull);
        float x;
        if (law == LAW_SMALL_INT) {
            x = (float)((int)(z % 9) - 4);
        } else {
            float u1 = ((z & 0xffffff) + 1) / 16777217.0f,
                  u2 = ((z >> 24) & 0xffffff) / 16777216.0f;
            x = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
            if (law == LAW_OUTLIERS && y % 500 == 0)
                x = (30.0f + 50.0f * (float)((y >> 20) & 0xffff) / 65536.0f) *
                    (y & 1 ? -1.0f : 1.0f);
        }
        unsigned u = __float_as_uint(x);
        u += 0x7fffu + ((u >> 16) & 1u);
        p[i] = (uint16_t)(u >> 16);
    }
}

struct Diff {
    unsigned long long max_o, max_os; // bits of non-negative doubles (ordered as integers)
    unsigned long long bad;           // elements out of the rule, or not finite
};

// Element by element: the judge's cross-check rule, and |diff| / max(os_old, 1e-6).
__global__ void compare(const double *o_old, const double *os_old, const double *o_new,
                        const double *os_new, size_t n, Diff *d)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        double want = o_old[i], ws = os_old[i];
        double eo = fabs(o_new[i] - want), es = fabs(os_new[i] - ws);
        double room = 1e-9 * (fabs(want) + ws) + 1e-12;
        bool ok = eo <= room && es <= room && isfinite(want) && isfinite(ws);
        if (!ok) atomicAdd(&d->bad, 1ull);
        double den = fmax(ws, 1e-6);
        double ro = eo / den, rs = es / den;
        if (!(ro >= 0.0) || !(rs >= 0.0)) continue; // NaN: counted in bad
        atomicMax(&d->max_o, (unsigned long long)__double_as_longlong(ro));
        atomicMax(&d->max_os, (unsigned long long)__double_as_longlong(rs));
    }
}

typedef int (*launch_fn)(const kv_launch_args *);

// Runs LAUNCH once on STREAM; its time in ms (events around the launch).
static float run_once(launch_fn launch, kv_launch_args *a, cudaStream_t stream)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, stream));
    int rc = launch(a);
    if (rc != 0) {
        fprintf(stderr, "kv_launch returned %d (%s)\n", rc, cudaGetErrorString((cudaError_t)rc));
        exit(2);
    }
    CK(cudaEventRecord(e1, stream));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return ms;
}

// Median of 3 timed runs after a warm-up.
static float timed(launch_fn launch, kv_launch_args *a, cudaStream_t stream)
{
    run_once(launch, a, stream);
    float t[3];
    for (int i = 0; i < 3; i++)
        t[i] = run_once(launch, a, stream);
    std::sort(t, t + 3);
    return t[1];
}

static bool wanted(const char *name, int argc, char **argv)
{
    bool any = false;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') continue;
        any = true;
        if (strstr(name, argv[i])) return true;
    }
    return !any;
}

int main(int argc, char **argv)
{
    bool quick = false;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--quick")) quick = true;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("== gqa float64 reference, old vs new, on %s (%d SMs)\n", prop.name,
           prop.multiProcessorCount);
    printf("%-36s %-9s %10s %10s %8s %10s %10s %6s\n", "shape", "law", "old_ms", "new_ms",
           "speedup", "err_o", "err_os", "bad");
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Diff *diff;
    CK(cudaMalloc(&diff, sizeof(Diff)));
    int failures = 0;
    double sum_old = 0, sum_new = 0; // the search scenarios, normal law
    uint64_t seed = 0x243f6a8885a308d3ull;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const Shape &sh = shapes[si];
        if (!wanted(sh.name, argc, argv) || (quick && sh.big)) continue;
        size_t nq = (size_t)(sh.B * sh.HQ * sh.SQ * 128), nk = (size_t)(sh.B * sh.HKV * sh.L * 128);
        uint16_t *q, *k, *v;
        double *out[4]; // o_old, os_old, o_new, os_new
        CK(cudaMalloc(&q, nq * 2));
        CK(cudaMalloc(&k, nk * 2));
        CK(cudaMalloc(&v, nk * 2));
        for (int i = 0; i < 4; i++)
            CK(cudaMalloc(&out[i], nq * sizeof(double)));
        kv_launch_args a[2];
        for (int w = 0; w < 2; w++) {
            memset(&a[w], 0, sizeof a[w]);
            a[w].abi_version = KV_TASK_ABI_VERSION;
            a[w].num_tensors = 5;
            a[w].tensors[0] = q;
            a[w].tensors[1] = k;
            a[w].tensors[2] = v;
            a[w].tensors[3] = out[2 * w];
            a[w].tensors[4] = out[2 * w + 1];
            a[w].num_syms = sh.W > 0 ? 7 : 6;
            int64_t syms[7] = {sh.B, sh.HQ, sh.HKV, sh.SQ, sh.L, 128, sh.W};
            for (int i = 0; i < 7; i++)
                a[w].syms[i] = syms[i];
            a[w].stream = stream;
        }
        for (int law = 0; law < NLAWS; law++) {
            if ((quick || sh.big) && law != LAW_NORMAL) continue;
            fill<<<1024, 256, 0, stream>>>(q, nq, seed++, law);
            fill<<<1024, 256, 0, stream>>>(k, nk, seed++, law);
            fill<<<1024, 256, 0, stream>>>(v, nk, seed++, law);
            for (int i = 0; i < 4; i++) // NaN bytes: an element left unwritten shows
                CK(cudaMemsetAsync(out[i], 0xff, nq * sizeof(double), stream));
            CK(cudaGetLastError());
            float t_old = 0, t_new = 0;
            if (law == LAW_NORMAL) {
                t_old = timed(ref_old::kv_launch_old, &a[0], stream);
                t_new = timed(ref_new::kv_launch_new, &a[1], stream);
            } else {
                run_once(ref_old::kv_launch_old, &a[0], stream);
                run_once(ref_new::kv_launch_new, &a[1], stream);
            }
            CK(cudaMemsetAsync(diff, 0, sizeof(Diff), stream));
            compare<<<1024, 256, 0, stream>>>(out[0], out[1], out[2], out[3], nq, diff);
            Diff h;
            CK(cudaMemcpyAsync(&h, diff, sizeof h, cudaMemcpyDeviceToHost, stream));
            CK(cudaStreamSynchronize(stream));
            double eo, es;
            memcpy(&eo, &h.max_o, 8);
            memcpy(&es, &h.max_os, 8);
            bool ok = h.bad == 0;
            failures += !ok;
            if (law == LAW_NORMAL) {
                printf("%-36s %-9s %10.3f %10.3f %8.1f %10.2e %10.2e %6llu%s\n", sh.name,
                       law_names[law], t_old, t_new, t_old / t_new, eo, es, h.bad,
                       ok ? "" : "  DIFFERS");
                if (si < NSEARCH) {
                    sum_old += t_old;
                    sum_new += t_new;
                }
            } else {
                printf("%-36s %-9s %10s %10s %8s %10.2e %10.2e %6llu%s\n", sh.name, law_names[law],
                       "-", "-", "-", eo, es, h.bad, ok ? "" : "  DIFFERS");
            }
            fflush(stdout);
        }
        CK(cudaFree(q));
        CK(cudaFree(k));
        CK(cudaFree(v));
        for (int i = 0; i < 4; i++)
            CK(cudaFree(out[i]));
    }
    if (sum_old > 0)
        printf(
            "sum over the search scenarios shown (normal law): old %.3f ms, new %.3f ms, %.1fx\n",
            sum_old, sum_new, sum_old / sum_new);
    printf("%s\n", failures ? "FAIL: the new reference differs" : "all shapes agree");
    return failures ? 1 : 0;
}
