/* Red team, class REPLAYS THAT MOVE THE ROOFLINE'S BYTES (issue 11),
 * opencl, task softmax.
 *
 * A content cache on the host: the input is read back and hashed whole
 * (every byte moves); a hit writes the cached answer into the output, a
 * miss enqueues the task's baseline kernel and keeps a copy of its answer.
 *
 * The judge must say: rejected (timed_output_wrong, wrong_result,
 * result_cached_across_calls), or "correct" with no gain over the baseline
 * (no input repeats). */
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

#define SLOTS 16
static struct slot {
    uint64_t key;
    int64_t n;
    float *y;
} cache[SLOTS];
static int next_slot;

int kv_launch(const kv_launch_args *a)
{
    cl_command_queue queue = (cl_command_queue)a->stream;
    int64_t rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    size_t bytes = (size_t)n * sizeof(float);
    float *x = (float *)malloc(bytes);
    if (!x || clEnqueueReadBuffer(queue, (cl_mem)a->tensors[0], CL_TRUE, 0, bytes, x, 0, NULL,
                                  NULL) != CL_SUCCESS) {
        free(x);
        return 1;
    }
    uint64_t key = rt_hash(x, bytes) ^ (uint64_t)rows * 0x9e3779b97f4a7c15u ^ (uint64_t)cols;
    free(x);
    for (int s = 0; s < SLOTS; s++)
        if (cache[s].y && cache[s].key == key && cache[s].n == n)
            return clEnqueueWriteBuffer(queue, (cl_mem)a->tensors[1], CL_TRUE, 0, bytes,
                                        cache[s].y, 0, NULL, NULL) == CL_SUCCESS
                       ? 0
                       : 2;
    if (rt_enqueue(a, "softmax_rows", NULL) != 0) return 3;
    struct slot *s = &cache[next_slot++ % SLOTS];
    float *copy = (float *)realloc(s->y, bytes);
    if (!copy) return 0;
    clEnqueueReadBuffer(queue, (cl_mem)a->tensors[1], CL_TRUE, 0, bytes, copy, 0, NULL, NULL);
    *s = (struct slot){key, n, copy};
    return 0;
}
#endif
