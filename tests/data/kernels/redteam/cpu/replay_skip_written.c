/* Red team, class REPLAYS THAT MOVE THE ROOFLINE'S BYTES (issue 11), cpu,
 * task softmax.
 *
 * Skips the work when the output already holds its last answer: per output
 * buffer it remembers a hash of the input it computed from and a hash of
 * what it wrote. A call whose input hashes the same (the input is read
 * once, as the roofline expects) and whose output still hashes to what it
 * wrote returns at once; any other runs the task's own baseline.
 *
 * The judge must say: either rejected (timed_output_wrong,
 * stale_or_unwritten_output, wrong_result), or "correct" with no gain over
 * the baseline it copies (fresh inputs, or outputs poisoned before every
 * timed call). Today timed calls repeat the same inputs on outputs left as
 * they were: "correct", several times faster than the baseline. */
#include <kevolve/task.h>
#include <math.h>
#include <string.h>

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

#define SLOTS 64
static struct seen {
    float *y;
    int64_t n;
    uint64_t in, out;
} seen[SLOTS];
static int next_slot;

int kv_launch(const kv_launch_args *a)
{
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    size_t bytes = (size_t)n * sizeof *x;
    uint64_t in = rt_hash(x, bytes);
    struct seen *s = NULL;
    for (int i = 0; i < SLOTS; i++)
        if (seen[i].y == y && seen[i].n == n) s = &seen[i];
    if (s && s->in == in && rt_hash(y, bytes) == s->out) return 0; /* still there */
    rt_softmax_baseline(x, y, rows, cols);
    if (!s) s = &seen[next_slot++ % SLOTS];
    *s = (struct seen){y, n, in, rt_hash(y, bytes)};
    return 0;
}
