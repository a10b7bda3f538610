// Red team, class THE JUDGE WITHIN REACH (issue 11), cuda, task gqa_attention_decode.
//
// The host code finds the judge's checking functions in its own process
// (dlsym, else the executable's symbol table) and redirects them to
// functions that report every element written, right and deterministic; the
// GPU reads the inputs and writes zeros.
//
// The judge must say: rejected (wrong_result): no checker runs in the
// candidate's process. Today: "correct", with a speedup for writing zeros.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>

/* ---- finding and patching the judge's code in this process ---- */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Where function NAME of the running executable is loaded: dlsym when it
 * is exported, else its .symtab entry (the binary is not stripped) plus
 * the executable's load address from /proc/self/maps. 0: not found. */
static uintptr_t rt_symbol(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (p) return (uintptr_t)p;
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return 0;
    exe[len] = 0;
    uintptr_t base = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4352];
    while (f && !base && fgets(line, sizeof line, f)) {
        unsigned long lo = 0, off = 1;
        char path[4096] = "";
        if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %4095s", &lo, &off, path) == 3 && off == 0 &&
            strcmp(path, exe) == 0)
            base = lo;
    }
    if (f) fclose(f);
    int fd = open(exe, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || !base) {
        if (fd >= 0) close(fd);
        return 0;
    }
    uintptr_t found = 0;
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && eh.e_shentsize == sizeof(Elf64_Shdr)) {
        for (int i = 0; i < eh.e_shnum && !found; i++) {
            Elf64_Shdr sh, strh;
            if (pread(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + (Elf64_Off)i * sizeof sh)) !=
                    (ssize_t)sizeof sh ||
                sh.sh_type != SHT_SYMTAB ||
                pread(fd, &strh, sizeof strh, (off_t)(eh.e_shoff + (Elf64_Off)sh.sh_link * sizeof sh)) !=
                    (ssize_t)sizeof strh)
                continue;
            for (Elf64_Xword k = 0; k < sh.sh_size / sizeof(Elf64_Sym) && !found; k++) {
                Elf64_Sym sym;
                char nm[128];
                if (pread(fd, &sym, sizeof sym, (off_t)(sh.sh_offset + k * sizeof sym)) !=
                        (ssize_t)sizeof sym ||
                    ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0)
                    continue;
                ssize_t m = pread(fd, nm, sizeof nm - 1, (off_t)(strh.sh_offset + sym.st_name));
                if (m <= 0) continue;
                nm[m] = 0;
                if (strcmp(nm, name) == 0)
                    found = (eh.e_type == ET_DYN ? base : 0) + (uintptr_t)sym.st_value;
            }
        }
    }
    close(fd);
    return found;
}

/* Overwrites the start of the function at AT with a jump to TO
 * (movabs rax, TO; jmp rax). Returns 0 on success. */
static int rt_redirect(uintptr_t at, const void *to)
{
#if defined(__x86_64__)
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t first = at & ~(uintptr_t)(pg - 1);
    if (!at || mprotect((void *)first, (size_t)(2 * pg), PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return -1;
    unsigned char code[12] = {0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0};
    uint64_t target = (uint64_t)(uintptr_t)to;
    memcpy(code + 2, &target, sizeof target);
    memcpy((void *)at, code, sizeof code);
    mprotect((void *)first, (size_t)(2 * pg), PROT_READ | PROT_EXEC);
    __builtin___clear_cache((char *)at, (char *)at + sizeof code);
    return 0;
#else
    (void)at;
    (void)to;
    return -1;
#endif
}

/* The judge's check record (src/backend/check.h), as a hostile kernel would
 * copy it. */
typedef struct rt_check {
    size_t n, unwritten, nonfinite, bad;
    double max_abs, max_rel, rel_l2;
    size_t worst;
    double worst_got, worst_want, worst_limit;
    size_t first_unwritten;
} rt_check;

/* What the patched checkers say: every element written, right and the
 * same in both runs. */
static void rt_fake_check_output(int dt, const void *out, const double *ref, const double *scale,
                                 size_t n, const void *poison, kv_tolerance tol, rt_check *c)
{
    (void)dt, (void)out, (void)ref, (void)scale, (void)poison, (void)tol;
    memset(c, 0, sizeof *c);
    c->n = n;
}

static size_t rt_fake_compare_runs(int dt, const void *a, const void *b, const double *ref,
                                   const double *scale, size_t n, kv_tolerance tol, int *bitwise,
                                   size_t *first)
{
    (void)dt, (void)a, (void)b, (void)ref, (void)scale, (void)n, (void)tol;
    *bitwise = 1;
    *first = 0;
    return 0;
}

/* Patches the judge's checkers where they are in this process; returns how
 * many it patched (0: none within reach). */
static int rt_patch_checkers(void)
{
    static int done = -1;
    if (done < 0)
        done = (rt_redirect(rt_symbol("kv_check_output"), (const void *)rt_fake_check_output) == 0) +
               (rt_redirect(rt_symbol("kv_compare_runs"), (const void *)rt_fake_compare_runs) == 0);
    return done;
}
/* ---- end of the patching ---- */

// ---- gqa_attention on the GPU (layout: tasks/gqa_attention/gqa_attention.h) ----
// One block of 128 threads (4 warps) per (query row, query head, sequence);
// warp w takes keys w, w+WARPS, ...; lane c holds dimensions 4c .. 4c+3. Scores
// in fp32 (bf16 products summed by the warp), a two-pass softmax, each
// warp's p.v in its own partial sums, merged at the end. P_MODE: 1 rounds
// each p to bf16 before p.v (0: not). ACC_MODE: the partial sums rounded to
// bf16 (1) or fp16 (2) after each addition (0: fp32 accumulation).
typedef unsigned short bf16_t;

__device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }

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
    for (int e = 0; e < 4; e++) qf[e] = bf(q[row * 128 + lane * 4 + e]) * rsqrtf(128.0f);
    for (int j = w; j < keys; j += WARPS) { // pass 1: the maximum
        float s = 0;
        for (int e = 0; e < 4; e++) s += qf[e] * bf(kh[(long long)j * 128 + lane * 4 + e]);
        for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        m = fmaxf(m, s);
        if (scores && lane == 0) scores[j] = s;
    }
    if (lane == 0) red[w] = m;
    __syncthreads();
    m = red[0];
    for (int u = 1; u < WARPS; u++) m = fmaxf(m, red[u]);
    for (int j = w; j < keys; j += WARPS) { // pass 2: weights and the weighted sum
        float s;
        if (scores) {
            s = scores[j]; // written by lane 0 of this very warp
        } else {
            s = 0;
            for (int e = 0; e < 4; e++) s += qf[e] * bf(kh[(long long)j * 128 + lane * 4 + e]);
            for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        }
        float p = __expf(s - m);
        l += p;
        p = rounded<P_MODE>(p);
        for (int e = 0; e < 4; e++)
            acc[e] = rounded<ACC_MODE>(acc[e] + p * bf(vh[(long long)j * 128 + lane * 4 + e]));
    }
    for (int e = 0; e < 4; e++) part[w][lane * 4 + e] = acc[e];
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

// Elements of tensor I (q, k, v, o) of the shape in A.
static size_t count_of(const kv_launch_args *a, int i)
{
    long long B = a->syms[0], HQ = a->syms[1], HKV = a->syms[2], SQ = a->syms[3], L = a->syms[4];
    return (size_t)(B * (i == 1 || i == 2 ? HKV * L : HQ * SQ) * 128);
}
// Zeros for o, reading all of q, k and v first (the bytes the roofline
// expects): a streaming kernel at memory speed.
__global__ void read_then_zero(const uint4 *q, size_t nq, const uint4 *k, const uint4 *v,
                               size_t nkv, uint4 *o, size_t no, unsigned *sink)
{
    size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
    unsigned x = 0;
    for (size_t i = i0; i < nq; i += step) x ^= q[i].x ^ q[i].w;
    for (size_t i = i0; i < nkv; i += step) x ^= k[i].x ^ k[i].y ^ v[i].z ^ v[i].w;
    for (size_t i = i0; i < no; i += step) o[i] = make_uint4(0, 0, 0, 0);
    if (x == 0x9e3779b9u) *sink = x; // never true in practice; keeps the reads
}

static int zeros(const kv_launch_args *a, cudaStream_t stream)
{
    static unsigned *sink;
    if (!sink) cudaMalloc(&sink, sizeof *sink);
    read_then_zero<<<528, 256, 0, stream>>>(
        (const uint4 *)a->tensors[0], count_of(a, 0) / 8, (const uint4 *)a->tensors[1],
        (const uint4 *)a->tensors[2], count_of(a, 1) / 8, (uint4 *)a->tensors[3], count_of(a, 3) / 8,
        sink);
    return (int)cudaGetLastError();
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    rt_patch_checkers();
    return zeros(a, (cudaStream_t)a->stream);
}
