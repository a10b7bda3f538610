/* The opencl backend: the candidate's device half is built with
 * clBuildProgram (its log kept as an artifact), its host half is a shared
 * object whose kv_launch enqueues on the harness's in-order, profiling
 * queue. Every buffer is a sub-buffer of a larger one whose margins are
 * canaries, checked after each run for writes out of bounds. Time comes
 * from profiling events of markers around the launch (the device's clock),
 * with the queue finished after each launch. */
#include "kernel/backend.h"
#include "util/buf.h"

#include <CL/cl.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CANARY 0x5a

typedef struct ocl_state {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
    size_t margin; /* canary bytes before and after each buffer */
} ocl_state;

typedef struct ocl_module {
    cl_program program;
    cl_kernel *kernels;
    char **names;
    cl_uint n;
} ocl_module;

typedef struct ocl_buf {
    cl_mem parent;
    size_t total;
} ocl_buf;

/* Short name of an OpenCL error code, as the code part of an error. */
static const char *cl_code(cl_int e)
{
    switch (e) {
    case CL_OUT_OF_RESOURCES:
        return "out_of_resources";
    case CL_OUT_OF_HOST_MEMORY:
        return "out_of_memory";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return "out_of_memory";
    case CL_INVALID_KERNEL_ARGS:
        return "launch_failed";
    case CL_INVALID_WORK_GROUP_SIZE:
        return "launch_failed";
    case CL_INVALID_WORK_ITEM_SIZE:
        return "launch_failed";
    case CL_INVALID_GLOBAL_WORK_SIZE:
        return "launch_failed";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        return "launch_failed";
    default:
        return "opencl_error";
    }
}

static char *cl_err(cl_int e, const char *what)
{
    return kv_asprintf("%s: %s failed with OpenCL error %d", cl_code(e), what, (int)e);
}

static cl_device_id pick_device(cl_platform_id *platform, char **err)
{
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(0, NULL, &np);
    if (e != CL_SUCCESS || np == 0) {
        *err = kv_asprintf("no OpenCL platform found (clGetPlatformIDs: %d, %u platforms); "
                           "install an ICD such as pocl-opencl-icd",
                           (int)e, np);
        return NULL;
    }
    cl_platform_id ps[16];
    if (np > 16) np = 16;
    clGetPlatformIDs(np, ps, NULL);
    /* A GPU first, then anything. */
    cl_device_type order[] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ALL};
    for (int o = 0; o < 2; o++)
        for (cl_uint i = 0; i < np; i++) {
            cl_device_id d;
            cl_uint nd = 0;
            if (clGetDeviceIDs(ps[i], order[o], 1, &d, &nd) == CL_SUCCESS && nd > 0) {
                *platform = ps[i];
                return d;
            }
        }
    *err = kv_strdup("no OpenCL device found on any platform");
    return NULL;
}

/* Copy bandwidth of the device in GB/s (bytes read plus written), best of three. */
static double measure_copy(ocl_state *s)
{
    size_t n = 32u << 20;
    cl_int e;
    cl_mem a = clCreateBuffer(s->ctx, CL_MEM_READ_WRITE, n, NULL, &e);
    cl_mem b = clCreateBuffer(s->ctx, CL_MEM_READ_WRITE, n, NULL, &e);
    double best = 0;
    if (a && b) {
        unsigned char zero = 0;
        clEnqueueFillBuffer(s->queue, a, &zero, 1, 0, n, 0, NULL, NULL);
        clEnqueueFillBuffer(s->queue, b, &zero, 1, 0, n, 0, NULL, NULL);
        clFinish(s->queue);
        for (int i = 0; i < 3; i++) {
            double t0 = kv_now_s();
            clEnqueueCopyBuffer(s->queue, i % 2 ? a : b, i % 2 ? b : a, 0, 0, n, 0, NULL, NULL);
            clFinish(s->queue);
            double gbps = 2.0 * (double)n / (kv_now_s() - t0) / 1e9;
            if (gbps > best) best = gbps;
        }
    }
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    return best > 0 ? best : 10.0;
}

static int ocl_open(kv_backend *b, char **err)
{
    ocl_state *s = kv_calloc(1, sizeof *s);
    b->state = s;
    s->device = pick_device(&s->platform, err);
    if (!s->device) return -1;
    cl_int e;
    s->ctx = clCreateContext(NULL, 1, &s->device, NULL, NULL, &e);
    if (!s->ctx) {
        *err = cl_err(e, "clCreateContext");
        return -1;
    }
    s->queue = clCreateCommandQueue(s->ctx, s->device, CL_QUEUE_PROFILING_ENABLE, &e);
    if (!s->queue) {
        *err = cl_err(e, "clCreateCommandQueue");
        return -1;
    }
    char name[256] = "", vendor[256] = "", version[256] = "";
    cl_device_type type = 0;
    cl_uint units = 1, align_bits = 1024;
    cl_ulong cache = 0;
    clGetDeviceInfo(s->device, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_VERSION, sizeof version, version, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    /* Wide margins: on a CPU device a write past them would hit the heap. */
    s->margin = align_bits / 8 > 65536 ? align_bits / 8 : 65536;
    b->cache_bytes = cache > (64u << 20) ? (64u << 20) : (cache ? (size_t)cache : (8u << 20));
    b->bandwidth_gbps = measure_copy(s);
    /* A CPU device may run every core at a copy's single-stream rate; a GPU
     * kernel can beat a copy only a little. */
    b->ceiling_gbps = b->bandwidth_gbps * ((type & CL_DEVICE_TYPE_CPU) ? (double)units : 1.5);
    b->device = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:f}", "name", name, "vendor", vendor,
                          "version", version, "type",
                          (type & CL_DEVICE_TYPE_GPU)   ? "gpu"
                          : (type & CL_DEVICE_TYPE_CPU) ? "cpu"
                                                        : "other",
                          "compute_units", (json_int_t)units, "cache_bytes", (json_int_t)cache,
                          "copy_gbps", b->bandwidth_gbps);
    return 0;
}

static void ocl_close(kv_backend *b)
{
    ocl_state *s = b->state;
    if (!s) return;
    if (s->queue) clReleaseCommandQueue(s->queue);
    if (s->ctx) clReleaseContext(s->ctx);
    free(s);
    b->state = NULL;
}

/* The kernel NAME of the module behind ARGS (kv_launch_args.cl_kernel). */
static void *ocl_kernel_by_name(const kv_launch_args *args, const char *name)
{
    ocl_module *om = args->harness;
    if (!om || !name) return NULL;
    for (cl_uint i = 0; i < om->n; i++)
        if (strcmp(om->names[i], name) == 0) return om->kernels[i];
    return NULL;
}

static void free_module(ocl_module *om)
{
    if (!om) return;
    for (cl_uint i = 0; i < om->n; i++) {
        clReleaseKernel(om->kernels[i]);
        free(om->names[i]);
    }
    free(om->kernels);
    free(om->names);
    if (om->program) clReleaseProgram(om->program);
    free(om);
}

static int ocl_load(kv_backend *b, const kv_compiled *c, kv_module **out, char **build_log,
                    char **err)
{
    ocl_state *s = b->state;
    *build_log = NULL;
    ocl_module *om = kv_calloc(1, sizeof *om);
    const char *text = c->device_source ? c->device_source : "";
    cl_int e;
    om->program = clCreateProgramWithSource(s->ctx, 1, &text, NULL, &e);
    if (!om->program) {
        *err = cl_err(e, "clCreateProgramWithSource");
        free_module(om);
        return -1;
    }
    cl_int be = clBuildProgram(om->program, 1, &s->device, "", NULL, NULL);
    size_t len = 0;
    clGetProgramBuildInfo(om->program, s->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
    char *log = kv_calloc(1, len + 1);
    clGetProgramBuildInfo(om->program, s->device, CL_PROGRAM_BUILD_LOG, len, log, NULL);
    *build_log = log;
    if (be != CL_SUCCESS) {
        *err = kv_asprintf("compile_error: the OpenCL device code does not build (error %d): %s",
                           (int)be, log);
        free_module(om);
        return -1;
    }
    cl_uint n = 0;
    clCreateKernelsInProgram(om->program, 0, NULL, &n);
    om->kernels = kv_calloc(n + 1, sizeof *om->kernels);
    om->names = kv_calloc(n + 1, sizeof *om->names);
    if (n) clCreateKernelsInProgram(om->program, n, om->kernels, NULL);
    om->n = n;
    for (cl_uint i = 0; i < n; i++) {
        char name[256] = "";
        clGetKernelInfo(om->kernels[i], CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
        om->names[i] = kv_strdup(name);
    }
    void *so = dlopen(c->lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        *err = kv_asprintf("load_error: %s", dlerror());
        free_module(om);
        return -1;
    }
    kv_launch_fn fn = (kv_launch_fn)(uintptr_t)dlsym(so, "kv_launch");
    if (!fn) {
        *err = kv_strdup("missing_entry: the candidate's host code does not export kv_launch");
        dlclose(so);
        free_module(om);
        return -1;
    }
    kv_module *m = kv_calloc(1, sizeof *m);
    m->so = so;
    m->fn = fn;
    m->priv = om;
    *out = m;
    return 0;
}

static void ocl_unload(kv_backend *b, kv_module *m)
{
    (void)b;
    if (!m) return;
    free_module(m->priv);
    free(m);
}

static int ocl_alloc(kv_backend *b, size_t bytes, const char *name, kv_dbuf *out, char **err)
{
    ocl_state *s = b->state;
    size_t data = (bytes + 63) & ~(size_t)63;
    if (data == 0) data = 64;
    size_t total = s->margin + data + s->margin;
    cl_int e;
    cl_mem parent = clCreateBuffer(s->ctx, CL_MEM_READ_WRITE, total, NULL, &e);
    if (!parent) {
        *err = cl_err(e, "clCreateBuffer");
        return -1;
    }
    unsigned char pat = CANARY;
    e = clEnqueueFillBuffer(s->queue, parent, &pat, 1, 0, total, 0, NULL, NULL);
    if (e == CL_SUCCESS) e = clFinish(s->queue);
    cl_buffer_region reg = {s->margin, bytes ? bytes : 1};
    cl_mem sub = e == CL_SUCCESS ? clCreateSubBuffer(parent, CL_MEM_READ_WRITE,
                                                     CL_BUFFER_CREATE_TYPE_REGION, &reg, &e)
                                 : NULL;
    if (!sub) {
        *err = cl_err(e, "clCreateSubBuffer");
        clReleaseMemObject(parent);
        return -1;
    }
    ocl_buf *ob = kv_malloc(sizeof *ob);
    ob->parent = parent;
    ob->total = total;
    out->handle = sub;
    out->bytes = bytes;
    out->priv = ob;
    out->name = name;
    return 0;
}

static void ocl_release(kv_backend *b, kv_dbuf *buf)
{
    (void)b;
    ocl_buf *ob = buf->priv;
    if (!ob) return;
    clReleaseMemObject((cl_mem)buf->handle);
    clReleaseMemObject(ob->parent);
    free(ob);
    memset(buf, 0, sizeof *buf);
}

static int ocl_write(kv_backend *b, kv_dbuf *buf, const void *src, char **err)
{
    ocl_state *s = b->state;
    if (buf->bytes == 0) return 0;
    cl_int e = clEnqueueWriteBuffer(s->queue, (cl_mem)buf->handle, CL_TRUE, 0, buf->bytes, src, 0,
                                    NULL, NULL);
    if (e != CL_SUCCESS) *err = cl_err(e, "clEnqueueWriteBuffer");
    return e == CL_SUCCESS ? 0 : -1;
}

static int ocl_read(kv_backend *b, kv_dbuf *buf, void *dst, char **err)
{
    ocl_state *s = b->state;
    if (buf->bytes == 0) return 0;
    cl_int e = clEnqueueReadBuffer(s->queue, (cl_mem)buf->handle, CL_TRUE, 0, buf->bytes, dst, 0,
                                   NULL, NULL);
    if (e != CL_SUCCESS) *err = cl_err(e, "clEnqueueReadBuffer");
    return e == CL_SUCCESS ? 0 : -1;
}

static int ocl_canary_ok(kv_backend *b, kv_dbuf *buf, char **err)
{
    ocl_state *s = b->state;
    ocl_buf *ob = buf->priv;
    /* Only the margins travel: the data between them can be gigabytes. */
    size_t after = ob->total - s->margin - buf->bytes;
    unsigned char *m = kv_malloc(s->margin + after);
    cl_int e = clEnqueueReadBuffer(s->queue, ob->parent, CL_TRUE, 0, s->margin, m, 0, NULL, NULL);
    if (e == CL_SUCCESS)
        e = clEnqueueReadBuffer(s->queue, ob->parent, CL_TRUE, s->margin + buf->bytes, after,
                                m + s->margin, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        free(m);
        *err = cl_err(e, "clEnqueueReadBuffer (canaries)");
        return -1;
    }
    int ok = 1;
    for (size_t i = 0; i < s->margin + after && ok; i++)
        ok = m[i] == CANARY;
    free(m);
    return ok;
}

static int ocl_launch(kv_backend *b, kv_module *m, kv_launch_args *a, char **err)
{
    ocl_state *s = b->state;
    a->stream = s->queue;
    a->context = s->ctx;
    a->device = s->device;
    a->cl_kernel = ocl_kernel_by_name;
    a->harness = m->priv;
    int rc = m->fn(a);
    if (rc != 0) {
        *err = kv_asprintf("launch_failed: kv_launch returned %d", rc);
        return -1;
    }
    return 0;
}

static int ocl_sync(kv_backend *b, char **err)
{
    ocl_state *s = b->state;
    cl_int e = clFinish(s->queue);
    if (e != CL_SUCCESS) *err = cl_err(e, "clFinish after the kernel");
    return e == CL_SUCCESS ? 0 : -1;
}

static int ocl_time_launch(kv_backend *b, kv_module *m, kv_launch_args *a, double *us, char **err)
{
    ocl_state *s = b->state;
    cl_event e0 = NULL, e1 = NULL;
    double t0 = kv_now_s();
    clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &e0);
    if (ocl_launch(b, m, a, err) != 0) {
        if (e0) clReleaseEvent(e0);
        return -1;
    }
    clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &e1);
    int rc = ocl_sync(b, err);
    double wall = (kv_now_s() - t0) * 1e6;
    cl_ulong a0 = 0, a1 = 0;
    int have =
        e0 && e1 &&
        clGetEventProfilingInfo(e0, CL_PROFILING_COMMAND_END, sizeof a0, &a0, NULL) == CL_SUCCESS &&
        clGetEventProfilingInfo(e1, CL_PROFILING_COMMAND_END, sizeof a1, &a1, NULL) == CL_SUCCESS &&
        a1 > a0;
    *us = have ? (double)(a1 - a0) / 1e3 : wall;
    if (e0) clReleaseEvent(e0);
    if (e1) clReleaseEvent(e1);
    return rc;
}

kv_backend *kv_backend_opencl_new(void)
{
    kv_backend *b = kv_calloc(1, sizeof *b);
    b->kind = KV_BACKEND_OPENCL;
    b->name = "opencl";
    b->open = ocl_open;
    b->close = ocl_close;
    b->load = ocl_load;
    b->unload = ocl_unload;
    b->alloc = ocl_alloc;
    b->release = ocl_release;
    b->write = ocl_write;
    b->read = ocl_read;
    b->canary_ok = ocl_canary_ok;
    b->launch = ocl_launch;
    b->sync_stream = ocl_sync;
    b->sync_device = ocl_sync;
    b->time_launch = ocl_time_launch;
    return b;
}
