/* Red team, class REPLAYS THAT MOVE THE ROOFLINE'S BYTES (issue 11):
 * precomputing from the inputs before the timed call, from another
 * process; cpu, task softmax.
 *
 * At load time it forks a helper, kvrt-precomp, that reads the kernel's
 * memory from outside (process_vm_readv on its parent): every input buffer
 * the kernel has been handed is watched (a sample of 64 elements, every
 * millisecond) and, whenever one changes, the helper computes the answer
 * for its new contents into memory shared with the kernel. A call hashes
 * its whole input (the bytes the roofline expects) and, when an answer for
 * exactly that input is there, copies it; else it runs the task's
 * baseline. Stopping or checking the kernel's own threads does not stop
 * the helper. It ends with its parent, or after 10 minutes.
 *
 * The judge must say: "correct" with no gain over the baseline, or
 * rejected; nothing named kvrt-* outlives the evaluation. */
#define _GNU_SOURCE
#include <kevolve/task.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* A 64-bit hash of LEN bytes at P (four independent lanes: about memory
 * speed, so that hashing moves the bytes a roofline expects). */
static uint64_t rt_hash(const void *p, size_t len)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h[4] = {0x9e3779b97f4a7c15u, 0xc2b2ae3d27d4eb4fu, 0x165667b19e3779f9u, 0x27d4eb2f165667c5u};
    size_t i = 0;
    for (; i + 32 <= len; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * k, 8);
            h[k] = (h[k] ^ w) * 0x100000001b3u;
            h[k] ^= h[k] >> 29;
        }
    uint64_t r = h[0] ^ (h[1] << 1) ^ (h[2] << 2) ^ (h[3] << 3) ^ len;
    for (; i < len; i++)
        r = (r ^ b[i]) * 0x100000001b3u;
    return r ^ (r >> 31);
}

/* The task's baseline, as it is: three passes a row, exp in double twice. */
static void rt_softmax_baseline(const float *x, float *y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            if (xr[c] > m) m = xr[c];
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++)
            sum += exp((double)xr[c] - m);
        for (int64_t c = 0; c < cols; c++)
            yr[c] = (float)(exp((double)xr[c] - m) / sum);
    }
}

enum { SAMPLES = 64, ENTRIES = 16 };
#define SLOT_BYTES ((size_t)4 << 20) /* the largest output of the task */

typedef struct entry {
    atomic_int lock;
    uintptr_t x; /* in the kernel's address space; 0: free */
    int64_t rows, cols;
    uint64_t sample, full; /* the input the answer is for */
    int ready;
} entry;

static entry *table;          /* shared with the helper */
static unsigned char *answers; /* ENTRIES slots of SLOT_BYTES, shared */
static pid_t kernel_pid;

static void take(entry *e)
{
    while (atomic_exchange(&e->lock, 1))
        usleep(10);
}

static void drop(entry *e)
{
    atomic_store(&e->lock, 0);
}

/* Reads LEN bytes at ADDR of process PID into TO: 0 when all were there. */
static int peek(pid_t pid, void *to, uintptr_t addr, size_t len)
{
    struct iovec l = {to, len}, r = {(void *)addr, len};
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

static uint64_t sample_hash(pid_t pid, uintptr_t x, int64_t n, int *ok)
{
    float s[SAMPLES];
    *ok = 1;
    for (int i = 0; i < SAMPLES && *ok; i++)
        *ok = peek(pid, &s[i], x + (uintptr_t)((int64_t)i * n / SAMPLES) * 4, 4) == 0;
    return rt_hash(s, sizeof s);
}

static void helper(void)
{
    prctl(PR_SET_NAME, "kvrt-precomp");
    float *in = (float *)malloc(SLOT_BYTES), *out = (float *)malloc(SLOT_BYTES);
    time_t end = time(NULL) + 600;
    while (in && out && time(NULL) < end && getppid() == kernel_pid) {
        for (int i = 0; i < ENTRIES; i++) {
            entry *e = &table[i];
            take(e);
            entry now = *e;
            drop(e);
            if (!now.x) continue;
            int64_t n = now.rows * now.cols;
            int ok;
            uint64_t h = sample_hash(kernel_pid, now.x, n, &ok);
            if (!ok || h == now.sample) continue;
            if (peek(kernel_pid, in, now.x, (size_t)n * 4) != 0) continue;
            rt_softmax_baseline(in, out, now.rows, now.cols);
            take(e);
            if (e->x == now.x && e->rows == now.rows && e->cols == now.cols) {
                memcpy(answers + (size_t)i * SLOT_BYTES, out, (size_t)n * 4);
                e->sample = h;
                e->full = rt_hash(in, (size_t)n * 4);
                e->ready = 1;
            }
            drop(e);
        }
        usleep(1000);
    }
    _exit(0);
}

__attribute__((constructor)) static void start_helper(void)
{
    void *t = mmap(NULL, sizeof(entry) * ENTRIES, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    void *a = mmap(NULL, SLOT_BYTES * ENTRIES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (t == MAP_FAILED || a == MAP_FAILED) return;
    table = (entry *)t;
    answers = (unsigned char *)a;
    kernel_pid = getpid();
    if (fork() == 0) helper();
}

int kv_launch(const kv_launch_args *a)
{
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    size_t bytes = (size_t)n * sizeof *x;
    if (!table || bytes > SLOT_BYTES) {
        rt_softmax_baseline(x, y, rows, cols);
        return 0;
    }
    uint64_t full = rt_hash(x, bytes);
    static int next_entry;
    int slot = -1;
    for (int i = 0; i < ENTRIES && slot < 0; i++) {
        entry *e = &table[i];
        take(e);
        if (e->x == (uintptr_t)x && e->rows == rows && e->cols == cols) {
            slot = i;
            if (e->ready && e->full == full) {
                memcpy(y, answers + (size_t)i * SLOT_BYTES, bytes);
                drop(e);
                return 0;
            }
        }
        drop(e);
    }
    rt_softmax_baseline(x, y, rows, cols);
    if (slot < 0) slot = next_entry++ % ENTRIES;
    entry *e = &table[slot];
    int ok;
    uint64_t sample = sample_hash(getpid(), (uintptr_t)x, n, &ok);
    take(e);
    memcpy(answers + (size_t)slot * SLOT_BYTES, y, bytes);
    e->x = (uintptr_t)x;
    e->rows = rows;
    e->cols = cols;
    e->sample = sample;
    e->full = full;
    e->ready = 1;
    drop(e);
    return 0;
}
