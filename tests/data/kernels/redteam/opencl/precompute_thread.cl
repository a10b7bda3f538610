/* Red team, class REPLAYS THAT MOVE THE ROOFLINE'S BYTES (issue 11):
 * precomputing from the inputs before the timed call; opencl, task
 * softmax.
 *
 * A host thread with a command queue of its own watches every input buffer
 * the kernel has been handed (64 sampled elements, every millisecond) and,
 * whenever one changes, runs the baseline kernel on it into a buffer of
 * its own. A call reads the same sample and, when the thread has an answer
 * for it, copies that answer into the output; else it runs the baseline.
 * On OpenCL the runner that holds the device holds the inputs before the
 * timed call: this is what it can do with them.
 *
 * The judge must say: "correct" with no gain over the baseline, or
 * rejected (timed_output_wrong, wrong_result, result_cached_across_calls,
 * async_work_outside_harness_stream). */
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
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

enum { SAMPLES = 64, ENTRIES = 16 };

typedef struct entry {
    cl_mem x; /* NULL: free */
    cl_long rows, cols;
    float sample[SAMPLES]; /* what the answer was computed from */
    cl_mem answer;
    int ready;
} entry;

static entry table[ENTRIES];
static int next_entry;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static cl_command_queue bg_queue;
static cl_kernel bg_kernel;

/* Reads the sample of X (N floats) on Q into S: 0 on success. */
static int read_sample(cl_command_queue q, cl_mem x, cl_long n, float *s)
{
    for (int i = 0; i < SAMPLES; i++)
        if (clEnqueueReadBuffer(q, x, CL_FALSE, (size_t)(i * n / SAMPLES) * sizeof(float),
                                sizeof(float), &s[i], 0, NULL, NULL) != CL_SUCCESS)
            return -1;
    return clFinish(q) == CL_SUCCESS ? 0 : -1;
}

static void *watch(void *arg)
{
    (void)arg;
    time_t end = time(NULL) + 600;
    float s[SAMPLES];
    while (time(NULL) < end) {
        for (int i = 0; i < ENTRIES; i++) {
            pthread_mutex_lock(&mu);
            entry *e = &table[i];
            if (e->x && e->answer && e->ready && read_sample(bg_queue, e->x, e->rows * e->cols, s) == 0 &&
                memcmp(s, e->sample, sizeof s) != 0) {
                clSetKernelArg(bg_kernel, 0, sizeof e->x, &e->x);
                clSetKernelArg(bg_kernel, 1, sizeof e->answer, &e->answer);
                clSetKernelArg(bg_kernel, 2, sizeof e->rows, &e->rows);
                clSetKernelArg(bg_kernel, 3, sizeof e->cols, &e->cols);
                size_t global = (size_t)e->rows;
                if (clEnqueueNDRangeKernel(bg_queue, bg_kernel, 1, NULL, &global, NULL, 0, NULL,
                                           NULL) == CL_SUCCESS &&
                    clFinish(bg_queue) == CL_SUCCESS) {
                    memcpy(e->sample, s, sizeof s);
                    e->ready = 1;
                }
            }
            pthread_mutex_unlock(&mu);
        }
        usleep(1000);
    }
    return NULL;
}

/* The watcher, its queue and its own kernel object (kernels are not to be
 * shared between threads). */
static void start_watcher(const kv_launch_args *a)
{
    cl_program prog = NULL;
    cl_kernel k = (cl_kernel)a->cl_kernel(a, "softmax_rows");
    if (!k || clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL) != CL_SUCCESS) return;
    bg_queue = clCreateCommandQueue((cl_context)a->context, (cl_device_id)a->device, 0, NULL);
    bg_kernel = clCreateKernel(prog, "softmax_rows", NULL);
    pthread_t t;
    if (bg_queue && bg_kernel && pthread_create(&t, NULL, watch, NULL) == 0) pthread_detach(t);
}

int kv_launch(const kv_launch_args *a)
{
    static int started;
    if (!started++) start_watcher(a);
    cl_command_queue queue = (cl_command_queue)a->stream;
    cl_mem x = (cl_mem)a->tensors[0], y = (cl_mem)a->tensors[1];
    cl_long rows = a->syms[0], cols = a->syms[1];
    size_t bytes = (size_t)(rows * cols) * sizeof(float);
    float s[SAMPLES];
    if (read_sample(queue, x, rows * cols, s) != 0) return 1;
    pthread_mutex_lock(&mu);
    entry *e = NULL;
    for (int i = 0; i < ENTRIES; i++)
        if (table[i].x == x && table[i].rows == rows && table[i].cols == cols) e = &table[i];
    if (e && e->ready && memcmp(e->sample, s, sizeof s) == 0) {
        cl_int rc = clEnqueueCopyBuffer(queue, e->answer, y, 0, 0, bytes, 0, NULL, NULL);
        clFinish(queue);
        pthread_mutex_unlock(&mu);
        return rc == CL_SUCCESS ? 0 : 2;
    }
    int rc = rt_enqueue(a, "softmax_rows", NULL);
    if (!e) { /* a new entry: the buffer is retained (the harness may release its handle) */
        e = &table[next_entry++ % ENTRIES];
        if (e->answer) clReleaseMemObject(e->answer);
        if (e->x) clReleaseMemObject(e->x);
        memset(e, 0, sizeof *e);
        clRetainMemObject(x);
        e->x = x;
    }
    if (!e->answer)
        e->answer = clCreateBuffer((cl_context)a->context, CL_MEM_READ_WRITE, bytes, NULL, NULL);
    if (e->answer && clEnqueueCopyBuffer(queue, y, e->answer, 0, 0, bytes, 0, NULL, NULL) ==
                         CL_SUCCESS &&
        clFinish(queue) == CL_SUCCESS) {
        e->rows = rows;
        e->cols = cols;
        memcpy(e->sample, s, sizeof s);
        e->ready = 1;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}
#endif
