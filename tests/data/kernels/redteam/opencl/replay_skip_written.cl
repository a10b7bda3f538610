/* Red team, class REPLAYS THAT MOVE THE ROOFLINE'S BYTES (issue 11),
 * opencl, task softmax.
 *
 * Skips the work when the output already holds its last answer: the input
 * and the output are read back and hashed; when the input is the one it
 * last computed from for this output buffer and the output still holds
 * what it wrote, it returns at once; else it enqueues the task's baseline.
 *
 * The judge must say: rejected (timed_output_wrong,
 * stale_or_unwritten_output, wrong_result), or "correct" with no gain over
 * the baseline. */
#ifdef __OPENCL_VERSION__

/* The task's baseline kernel, as it is: one work-item per row, three passes. */
__kernel void softmax_rows(__global const float *x, __global float *y, long rows, long cols)
{
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + r * cols;
    __global float *yr = y + r * cols;
    float m = -INFINITY;
    for (long c = 0; c < cols; c++)
        m = fmax(m, xr[c]);
    float sum = 0.0f;
    for (long c = 0; c < cols; c++)
        sum += exp(xr[c] - m);
    for (long c = 0; c < cols; c++)
        yr[c] = exp(xr[c] - m) / sum;
}

/* Zeros for y, reading x (the bytes the roofline expects). */
__kernel void zeros(__global const float *x, __global float *y, long n)
{
    long i = get_global_id(0);
    if (i < n) y[i] = x[i] * 0.0f;
}

#else
#include <kevolve/task.h>
#include <CL/cl.h>
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

/* Enqueues the device kernel NAME (softmax_rows or zeros) on queue Q, or
 * on the harness's queue when Q is NULL. Returns 0 on success. */
static int rt_enqueue(const kv_launch_args *a, const char *name, cl_command_queue q)
{
    cl_kernel k = (cl_kernel)a->cl_kernel(a, name);
    if (!k) return 1;
    cl_mem x = (cl_mem)a->tensors[0], y = (cl_mem)a->tensors[1];
    cl_long rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    int whole = strcmp(name, "zeros") == 0;
    clSetKernelArg(k, 0, sizeof x, &x);
    clSetKernelArg(k, 1, sizeof y, &y);
    if (whole) {
        clSetKernelArg(k, 2, sizeof n, &n);
    } else {
        clSetKernelArg(k, 2, sizeof rows, &rows);
        clSetKernelArg(k, 3, sizeof cols, &cols);
    }
    size_t global = (size_t)(whole ? n : rows);
    return clEnqueueNDRangeKernel(q ? q : (cl_command_queue)a->stream, k, 1, NULL, &global, NULL,
                                  0, NULL, NULL) == CL_SUCCESS
               ? 0
               : 2;
}

#define SLOTS 64
static struct seen {
    cl_mem y;
    int64_t n;
    uint64_t in, out;
} seen[SLOTS];
static int next_slot;

/* Hash of BUF's first BYTES, read back on Q (0 when it cannot be read). */
static uint64_t hash_buffer(cl_command_queue q, cl_mem buf, size_t bytes, float *scratch)
{
    if (clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, scratch, 0, NULL, NULL) != CL_SUCCESS)
        return 0;
    return rt_hash(scratch, bytes);
}

int kv_launch(const kv_launch_args *a)
{
    cl_command_queue queue = (cl_command_queue)a->stream;
    cl_mem x = (cl_mem)a->tensors[0], y = (cl_mem)a->tensors[1];
    int64_t n = a->syms[0] * a->syms[1];
    size_t bytes = (size_t)n * sizeof(float);
    float *scratch = (float *)malloc(bytes);
    if (!scratch) return 1;
    uint64_t in = hash_buffer(queue, x, bytes, scratch);
    struct seen *s = NULL;
    for (int i = 0; i < SLOTS; i++)
        if (seen[i].y == y && seen[i].n == n) s = &seen[i];
    if (s && s->in == in && hash_buffer(queue, y, bytes, scratch) == s->out) {
        free(scratch);
        return 0; /* still there */
    }
    int rc = rt_enqueue(a, "softmax_rows", NULL);
    if (!s) s = &seen[next_slot++ % SLOTS];
    *s = (struct seen){y, n, in, hash_buffer(queue, y, bytes, scratch)};
    free(scratch);
    return rc;
}
#endif
