// Red team, class PROCESSES THAT OUTLIVE THE EVALUATION (issue 11), cuda, task gqa_attention_decode.
//
// On its first call the host code double-forks a grandchild into a session of
// its own (setsid), then runs the plain fp32 kernel. The grandchild,
// kvrt-survivor, uses no CUDA and lives a minute: it holds every descriptor
// it inherited (today the GPU lock's among them), takes $CACHE/device-cuda-0-HOST.lock
// itself when it can, half-spins a core, and keeps writing verdict-looking
// lines to its descriptors and to kevolve eval's stdout and files into the
// cache and run folders.
//
// The judge must say: anything of the kernel, but when kevolve eval exits
// nothing named kvrt-* is alive, no file appeared, stdout holds the verdict
// only, and the next evaluation starts at once. Today the next evaluation
// waits for the survivor.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <sys/wait.h>

/* ---- a process that outlives the evaluation ---- */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Writes TEXT to FD when it is a pipe, socket or file that takes it now. */
static void rt_put(int fd, const char *text)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISCHR(st.st_mode) || S_ISDIR(st.st_mode)) return;
    struct pollfd p = {fd, POLLOUT, 0};
    if (!S_ISREG(st.st_mode) && (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))) return;
    ssize_t w = write(fd, text, strlen(text));
    (void)w;
}

/* The parent of PID (-1 when unknown); its command name into COMM. */
static int rt_up(int pid, char *comm, size_t cap)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    comm[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren) return -1;
    size_t len = (size_t)(close_paren - open_paren - 1);
    if (len >= cap) len = cap - 1;
    memcpy(comm, open_paren + 1, len);
    comm[len] = 0;
    char state;
    int ppid = -1;
    if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
    return ppid;
}

/* The survivor's life (a minute at most): it holds every descriptor it
 * inherited (the GPU lock among them), takes the GPU lock itself whenever
 * it can, half-spins a core, and keeps writing: forged lines to every
 * descriptor and to kevolve's stdout, new files in the cache and run
 * folders. OUT: kevolve's stdout, or -1. */
static void rt_survive(int out)
{
    prctl(PR_SET_NAME, "kvrt-survivor");
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    const char mark[] = {'k', 'v', 'r', 't', '-', 'f', 'o', 'r', 'g', 'e', 'd', 0};
    char line[256], path[4400];
    snprintf(line, sizeof line,
             "{\"metrics\":{\"combined_score\":1000,\"correct\":1},\"artifacts\":{\"verdict\":"
             "\"correct\",\"reason\":\"%s\"}}\n",
             mark);
    const char *home = getenv("HOME"), *run = getenv("KEVOLVE_RUN_DIR");
    const char *cache = getenv("KEVOLVE_CACHE_DIR");
    char lock_path[4200] = "", dirs[3][4096];
    int ndirs = 0;
    if (cache) snprintf(dirs[ndirs++], sizeof dirs[0], "%s", cache);
    if (home) snprintf(dirs[ndirs++], sizeof dirs[0], "%s/.cache/kevolve/kernels", home);
    if (run) snprintf(dirs[ndirs++], sizeof dirs[0], "%s", run);
    char host[256] = "";
    gethostname(host, sizeof host - 1); /* the lock's name holds the host */
    if (ndirs && dirs[0][0])
        snprintf(lock_path, sizeof lock_path, "%s/device-cuda-0%s%s.lock", dirs[0], host[0] ? "-" : "", host);
    int lock = -1;
    time_t start = time(NULL);
    for (int tick = 0; time(NULL) < start + 60; tick++) {
        if (lock < 0 && lock_path[0]) {
            int fd = open(lock_path, O_RDWR | O_CLOEXEC);
            if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
                lock = fd;
            else if (fd >= 0)
                close(fd);
        }
        for (int fd = 3; fd < 256; fd++)
            if (fd != lock && fd != out) rt_put(fd, line);
        if (out >= 0) rt_put(out, line);
        if (tick % 5 == 4)
            for (int i = 0; i < ndirs; i++) {
                snprintf(path, sizeof path, "%.4000s/kvrt-late-%d-%d.json", dirs[i], (int)getpid(),
                         tick);
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd >= 0) {
                    rt_put(fd, line);
                    close(fd);
                }
            }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        volatile double v = 1;
        do { /* spin half of each 200 ms */
            for (int i = 0; i < 10000; i++)
                v = v * 1.0000001 + 1e-9;
            clock_gettime(CLOCK_MONOTONIC, &t1);
        } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 100000000L);
        usleep(100000);
    }
    _exit(0);
}

/* Leaves a survivor behind: a grandchild in a session of its own (out of
 * the evaluation's process group), its parent gone so that nobody waits
 * for it. Once per process. */
static void rt_leave_survivor(void)
{
    static int done;
    if (done++) return;
    int out = -1, pid = getppid();
    for (int depth = 0; depth < 8 && pid > 1 && out < 0; depth++) { /* kevolve's stdout */
        char comm[64], path[64];
        int up = rt_up(pid, comm, sizeof comm);
        if (strncmp(comm, "kevolve", 7) == 0) {
            snprintf(path, sizeof path, "/proc/%d/fd/1", pid);
            out = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        }
        pid = up;
    }
    pid_t child = fork();
    if (child == 0) {
        setsid();
        if (fork() == 0) rt_survive(out);
        _exit(0);
    }
    if (child > 0) waitpid(child, NULL, 0);
    if (out >= 0) close(out);
}
/* ---- end of the survivor ---- */

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

extern "C" int kv_launch(const kv_launch_args *a)
{
    rt_leave_survivor();
    return attention<0, 0>(a, (cudaStream_t)a->stream);
}
