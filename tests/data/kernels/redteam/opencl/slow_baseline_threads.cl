/* Red team, class THE BASELINE IN THE CANDIDATE'S PROCESS (issue 11),
 * opencl, task softmax.
 *
 * The task's own baseline, word for word (device and host), plus three
 * host threads started when the library is loaded (a constructor) that
 * burn the cores whenever this kernel is not running. PoCL runs the
 * baseline's kernels on the same cores: wherever it is timed while they
 * burn, the copy looks faster than the original.
 *
 * The judge must say: "correct" with no gain (combined_score near 1), or
 * rejected for the threads it leaves running. */
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
#include <stdatomic.h>
#include <string.h>
#include <time.h>

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

static atomic_int in_call;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

/* Burns CPU while no call is running; waits (not spinning) during calls.
 * Gives up after 10 minutes, whatever happens. */
static void *burn(void *arg)
{
    (void)arg;
    volatile double v = 1.0;
    time_t end = time(NULL) + 600;
    while (time(NULL) < end) {
        for (int i = 0; i < 20000 && !atomic_load(&in_call); i++)
            v = v * 1.0000001 + 1e-9;
        if (atomic_load(&in_call)) {
            pthread_mutex_lock(&mu);
            while (atomic_load(&in_call))
                pthread_cond_wait(&cv, &mu);
            pthread_mutex_unlock(&mu);
        }
    }
    return NULL;
}

__attribute__((constructor)) static void start_burners(void)
{
    for (int i = 0; i < 3; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, burn, NULL) == 0) pthread_detach(t);
    }
}

int kv_launch(const kv_launch_args *a)
{
    atomic_store(&in_call, 1);
    int rc = rt_enqueue(a, "softmax_rows", NULL);
    clFinish((cl_command_queue)a->stream); /* the burners wait until the kernel is done */
    pthread_mutex_lock(&mu);
    atomic_store(&in_call, 0);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return rc;
}
#endif
