/* Red team, class REPLAYS THAT MOVE THE ROOFLINE'S BYTES (issue 11):
 * precomputing from the inputs before the timed call; cpu, task softmax.
 *
 * A thread started at load time watches every input buffer the kernel has
 * been handed (a sample of 64 elements, every millisecond, read without
 * faulting) and, whenever one changes, computes the answer for its new
 * contents in the background. A call hashes its whole input (the bytes the
 * roofline expects) and, when the thread has the answer for exactly that
 * input, copies it; else it runs the task's baseline.
 *
 * The judge must say: "correct" with no gain over the baseline (no input
 * is in the candidate's reach before its timed call, or the thread is
 * stopped while the judge prepares them), or rejected. Today the timing
 * inputs never change: the thread has nothing to do, and its answers come
 * from the calls themselves (a cache). */
#define _GNU_SOURCE
#include <kevolve/task.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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

/* Copies LEN bytes at FROM in this process into TO without faulting. */
static int peek(void *to, const void *from, size_t len)
{
    struct iovec l = {to, len}, r = {(void *)from, len};
    return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

enum { SAMPLES = 64, ENTRIES = 32 };

typedef struct entry {
    const float *x; /* NULL: free */
    int64_t rows, cols;
    uint64_t sample; /* hash of the sample the answer was computed for */
    uint64_t full;   /* hash of the whole input it was computed for */
    float *answer;
} entry;

static entry table[ENTRIES];
static int next_entry;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t sample_hash(const float *x, int64_t n, int *ok)
{
    float s[SAMPLES];
    *ok = 1;
    for (int i = 0; i < SAMPLES && *ok; i++)
        *ok = peek(&s[i], x + (int64_t)i * n / SAMPLES, sizeof s[i]) == 0;
    return rt_hash(s, sizeof s);
}

/* The watcher: recomputes the answer of every input that changed. */
static void *watch(void *arg)
{
    (void)arg;
    time_t end = time(NULL) + 600;
    while (time(NULL) < end) {
        for (int i = 0; i < ENTRIES; i++) {
            pthread_mutex_lock(&mu);
            entry e = table[i];
            pthread_mutex_unlock(&mu);
            if (!e.x) continue;
            int64_t n = e.rows * e.cols;
            int ok;
            uint64_t h = sample_hash(e.x, n, &ok);
            if (ok && h == e.sample) continue;
            float *in = ok ? (float *)malloc((size_t)n * sizeof *in) : NULL;
            float *out = in ? (float *)malloc((size_t)n * sizeof *out) : NULL;
            if (out && peek(in, e.x, (size_t)n * sizeof *in) == 0) {
                rt_softmax_baseline(in, out, e.rows, e.cols);
                uint64_t full = rt_hash(in, (size_t)n * sizeof *in);
                pthread_mutex_lock(&mu);
                if (table[i].x == e.x && table[i].rows == e.rows && table[i].cols == e.cols) {
                    free(table[i].answer);
                    table[i].answer = out;
                    table[i].full = full;
                    table[i].sample = h;
                    out = NULL;
                }
                pthread_mutex_unlock(&mu);
            } else if (!ok) {
                pthread_mutex_lock(&mu); /* unmapped: forget it */
                if (table[i].x == e.x) {
                    free(table[i].answer);
                    memset(&table[i], 0, sizeof table[i]);
                }
                pthread_mutex_unlock(&mu);
            }
            free(in);
            free(out);
        }
        usleep(1000);
    }
    return NULL;
}

__attribute__((constructor)) static void start_watcher(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, watch, NULL) == 0) pthread_detach(t);
}

int kv_launch(const kv_launch_args *a)
{
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    size_t bytes = (size_t)n * sizeof *x;
    uint64_t full = rt_hash(x, bytes);
    int hit = 0, slot = -1;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < ENTRIES; i++)
        if (table[i].x == x && table[i].rows == rows && table[i].cols == cols) {
            slot = i;
            if (table[i].answer && table[i].full == full) {
                memcpy(y, table[i].answer, bytes);
                hit = 1;
            }
        }
    pthread_mutex_unlock(&mu);
    if (hit) return 0;
    rt_softmax_baseline(x, y, rows, cols);
    float *answer = (float *)malloc(bytes);
    if (!answer) return 0;
    memcpy(answer, y, bytes);
    int ok;
    uint64_t sample = sample_hash(x, n, &ok);
    pthread_mutex_lock(&mu);
    if (slot < 0) slot = next_entry++ % ENTRIES;
    free(table[slot].answer);
    table[slot] = (entry){x, rows, cols, sample, full, answer};
    pthread_mutex_unlock(&mu);
    return 0;
}
