/* Red team, class REPLAYS THAT MOVE THE ROOFLINE'S BYTES (issue 11), cpu,
 * task softmax.
 *
 * A content cache keyed on a SAMPLED hash: 256 elements of the input spread
 * over it, and the shape. A hit copies the cached answer without reading
 * the rest of the input; a miss runs the task's own baseline. It is wrong
 * whenever two inputs agree on the sample and differ elsewhere.
 *
 * The judge must say: either rejected (timed_output_wrong, wrong_result,
 * result_cached_across_calls, faster_than_roofline), or "correct" with no
 * gain over the baseline it copies (no input repeats). Today the timing
 * input sets repeat: "correct" and faster than the baseline. */
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
#define SAMPLES 256
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
    float sample[SAMPLES];
    for (int i = 0; i < SAMPLES; i++)
        sample[i] = x[(int64_t)i * n / SAMPLES];
    uint64_t key = rt_hash(sample, sizeof sample) ^ (uint64_t)rows * 0x9e3779b97f4a7c15u ^
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
