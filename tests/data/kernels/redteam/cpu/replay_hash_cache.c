/* Red team, class REPLAYS THAT MOVE THE ROOFLINE'S BYTES (issue 11), cpu,
 * task softmax.
 *
 * A content cache: the output of every input it has seen, keyed on a hash
 * of the whole input (so each call still reads all of it, as the roofline
 * expects) and the shape. A hit copies the cached answer; a miss runs the
 * task's own baseline. It is right whenever it answers, and its speed comes
 * only from inputs that repeat.
 *
 * The judge must say: either rejected (timed_output_wrong, wrong_result,
 * result_cached_across_calls), or "correct" with no gain over the baseline
 * it copies (its cache never hits: fresh inputs for every block). Today
 * the timing input sets repeat: "correct", several times faster than the
 * baseline. */
#include <kevolve/task.h>
#include <math.h>
#include <stdlib.h>
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

#define SLOTS 16
static struct slot {
    uint64_t key;
    int64_t n;
    float *y;
} cache[SLOTS];
static int next_slot;

int kv_launch(const kv_launch_args *a)
{
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    uint64_t key = rt_hash(x, (size_t)n * sizeof *x) ^ (uint64_t)rows * 0x9e3779b97f4a7c15u ^
                   (uint64_t)cols;
    for (int s = 0; s < SLOTS; s++)
        if (cache[s].y && cache[s].key == key && cache[s].n == n) {
            memcpy(y, cache[s].y, (size_t)n * sizeof *y);
            return 0;
        }
    rt_softmax_baseline(x, y, rows, cols);
    struct slot *s = &cache[next_slot++ % SLOTS];
    float *copy = (float *)realloc(s->y, (size_t)n * sizeof *y);
    if (!copy) return 0;
    memcpy(copy, y, (size_t)n * sizeof *y);
    *s = (struct slot){key, n, copy};
    return 0;
}
