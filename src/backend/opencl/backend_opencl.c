/* The opencl backend.
 *
 * OpenCL has no way to share a device buffer between processes, so the
 * device belongs to the runner: the judge's arenas are host staging memory
 * (memfds, as on cpu) that both map, and for each block the runner copies
 * the inputs and the poisoned outputs from the staging memory into device
 * buffers of its own, launches, and copies the outputs back, all inside
 * the judge's timed window (the judge subtracts what the same copies cost
 * with no launch, measured before the candidate was loaded). The judge
 * opens the device too, for its facts (bandwidth, cache).
 *
 * What this cannot promise, since the device and its copies are the
 * candidate process's: canaries around device buffers are checked by the
 * runner, so an overrun is caught only when the candidate has not patched
 * the runner; inputs modified on the device are not seen by the judge (they
 * only hurt the candidate: every call's inputs come fresh from the judge's
 * memory, which the candidate cannot reach outside its mapping, and the
 * judge checks the staging copy). The verdict, the reference, the checks and
 * the clock stay the judge's. */
#include "backend/backend.h"
#include "runner/rdev.h"
#include "backend/memfd_arena.h"
#include "util/buf.h"

#include <CL/cl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CANARY 0x5a
#define MAX_BUFS 4096

/* The harness's code for OpenCL error E. */
static kv_reason cl_code(cl_int e)
{
    switch (e) {
    case CL_OUT_OF_RESOURCES:
        return KV_R_OUT_OF_RESOURCES;
    case CL_OUT_OF_HOST_MEMORY:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return KV_R_OUT_OF_MEMORY;
    case CL_INVALID_KERNEL_ARGS:
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE:
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        return KV_R_LAUNCH_FAILED;
    default:
        return KV_R_OPENCL_ERROR;
    }
}

/* Fails ERR with OpenCL error E of WHAT. Returns -1. */
static int cl_fail(kv_fail *err, cl_int e, const char *what)
{
    return kv_fail_set(err, cl_code(e), "%s failed with OpenCL error %d", what, (int)e);
}

/* Every device of every platform, GPUs first (the order kevolve numbers
 * them in), at most MAX; their platforms beside. Returns how many, or -1
 * with *ERR when there is no platform. */
static int list_devices(cl_device_id *devs, cl_platform_id *plats, int max, char **err)
{
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(0, NULL, &np);
    if (e != CL_SUCCESS || np == 0) {
        *err = kv_asprintf("no OpenCL platform found (clGetPlatformIDs: %d, %u platforms); "
                           "install an ICD such as pocl-opencl-icd",
                           (int)e, np);
        return -1;
    }
    cl_platform_id ps[16];
    if (np > 16) np = 16;
    clGetPlatformIDs(np, ps, NULL);
    int n = 0;
    for (int gpu = 1; gpu >= 0; gpu--)
        for (cl_uint i = 0; i < np; i++) {
            cl_device_id d[32];
            cl_uint nd = 0;
            if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 32, d, &nd) != CL_SUCCESS) continue;
            for (cl_uint k = 0; k < nd && k < 32; k++) {
                cl_device_type type = 0;
                clGetDeviceInfo(d[k], CL_DEVICE_TYPE, sizeof type, &type, NULL);
                if (!!(type & CL_DEVICE_TYPE_GPU) != gpu || n >= max) continue;
                plats[n] = ps[i];
                devs[n++] = d[k];
            }
        }
    return n;
}

/* Device INDEX of list_devices's numbering. */
static cl_device_id pick_device(int index, cl_platform_id *platform, kv_fail *err)
{
    cl_device_id devs[64];
    cl_platform_id plats[64];
    char *why = NULL;
    int n = list_devices(devs, plats, 64, &why);
    if (n < 0) {
        kv_fail_take(err, KV_R_NO_DEVICE, why);
        return NULL;
    }
    if (index < 0 || index >= n) {
        kv_fail_set(err, KV_R_NO_DEVICE, "no OpenCL device %d: %d device(s) on this machine", index,
                    n);
        return NULL;
    }
    *platform = plats[index];
    return devs[index];
}

json_t *kv_opencl_devices(char **err)
{
    cl_device_id devs[64];
    cl_platform_id plats[64];
    int n = list_devices(devs, plats, 64, err);
    if (n < 0) return NULL;
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        char name[256] = "", vendor[256] = "", version[256] = "", driver[256] = "", pname[256] = "";
        cl_device_type type = 0;
        cl_uint units = 0;
        cl_ulong mem = 0;
        clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof name, name, NULL);
        clGetDeviceInfo(devs[i], CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
        clGetDeviceInfo(devs[i], CL_DEVICE_VERSION, sizeof version, version, NULL);
        clGetDeviceInfo(devs[i], CL_DRIVER_VERSION, sizeof driver, driver, NULL);
        clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
        clGetDeviceInfo(devs[i], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
        clGetDeviceInfo(devs[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        json_array_append_new(list, json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "index", i,
                                              "name", name, "type",
                                              (type & CL_DEVICE_TYPE_GPU)   ? "gpu"
                                              : (type & CL_DEVICE_TYPE_CPU) ? "cpu"
                                                                            : "other",
                                              "vendor", vendor, "platform", pname, "version",
                                              version, "driver", driver, "compute_units",
                                              (json_int_t)units, "memory_bytes", (json_int_t)mem));
    }
    return list;
}

typedef struct ocl_ctx {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
    double cpu_units; /* the judge's: a CPU device's compute units, 0 for others */
} ocl_ctx;

static int open_ctx(ocl_ctx *s, int index, kv_fail *err)
{
    s->device = pick_device(index, &s->platform, err);
    if (!s->device) return -1;
    cl_int e;
    s->ctx = clCreateContext(NULL, 1, &s->device, NULL, NULL, &e);
    if (!s->ctx) {
        return cl_fail(err, e, "clCreateContext");
    }
    s->queue = clCreateCommandQueue(s->ctx, s->device, 0, &e);
    if (!s->queue) {
        return cl_fail(err, e, "clCreateCommandQueue");
    }
    return 0;
}

/* ---- the judge's half ---- */

/* Copy bandwidth of the device in GB/s (bytes read plus written), best of three. */
static double measure_copy(ocl_ctx *s)
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

static int ocl_open(kv_jdev *b, kv_fail *err)
{
    ocl_ctx *s = kv_calloc(1, sizeof *s);
    b->state = s;
    if (open_ctx(s, b->index, err) != 0) return -1;
    char name[256] = "", vendor[256] = "", version[256] = "", platform[512] = "";
    cl_device_type type = 0;
    cl_uint units = 1;
    cl_ulong cache = 0;
    clGetDeviceInfo(s->device, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_VERSION, sizeof version, version, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, NULL);
    /* The implementation (PoCL, a GPU vendor's) and its version, for the record. */
    clGetPlatformInfo(s->platform, CL_PLATFORM_VERSION, sizeof platform, platform, NULL);
    b->cache_bytes = cache > (64u << 20) ? (64u << 20) : (cache ? (size_t)cache : (8u << 20));
    b->device = json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:I,s:I}", "name", name, "index", b->index,
                          "vendor", vendor, "version", version, "platform", platform, "type",
                          (type & CL_DEVICE_TYPE_GPU)   ? "gpu"
                          : (type & CL_DEVICE_TYPE_CPU) ? "cpu"
                                                        : "other",
                          "compute_units", (json_int_t)units, "cache_bytes", (json_int_t)cache);
    s->cpu_units = (type & CL_DEVICE_TYPE_CPU) ? (double)units : 0;
    return 0;
}

static int ocl_measure(kv_jdev *b, kv_fail *err)
{
    (void)err;
    ocl_ctx *s = b->state;
    if (!s->ctx) return 0; /* measured already */
    b->bandwidth_gbps = measure_copy(s);
    /* A CPU device may run every core at a copy's single-stream rate; a GPU
     * kernel can beat a copy only a little. */
    b->ceiling_gbps = b->bandwidth_gbps * (s->cpu_units > 0 ? s->cpu_units : 1.5);
    json_object_set_new(b->device, "copy_gbps", json_real(b->bandwidth_gbps));
    /* The judge needs the device only for its facts. */
    clReleaseCommandQueue(s->queue);
    clReleaseContext(s->ctx);
    s->queue = NULL;
    s->ctx = NULL;
    return 0;
}

static void ocl_close(kv_jdev *b)
{
    free(b->state);
    b->state = NULL;
}

kv_jdev *kv_jdev_opencl_new(void)
{
    kv_jdev *b = kv_calloc(1, sizeof *b);
    kv_memfd_jdev_ops(b);
    b->open = ocl_open;
    b->measure = ocl_measure;
    b->close = ocl_close;
    return b;
}

/* ---- the runner's half ---- */

typedef struct ocl_module {
    cl_program program;
    cl_kernel *kernels;
    char **names;
    cl_uint n;
} ocl_module;

/* A device buffer standing for the tensor at OFFSET of arena ARENA: a
 * sub-buffer of PARENT, whose margins are canaries. */
typedef struct ocl_rbuf {
    uint32_t arena;
    uint64_t offset, bytes;
    cl_mem parent, sub;
} ocl_rbuf;

typedef struct ocl_rarena {
    uint32_t id;
    unsigned char *base;
    size_t bytes;
} ocl_rarena;

typedef struct ocl_rstate {
    ocl_ctx c;
    size_t margin;
    ocl_rarena arenas[64];
    ocl_rbuf *bufs;
    size_t nbufs;
    ocl_module *mod;
    void *so;
    kv_launch_fn fn;
} ocl_rstate;

static int ocl_ropen(kv_rdev *b, kv_fail *err)
{
    ocl_rstate *s = kv_calloc(1, sizeof *s);
    b->state = s;
    if (open_ctx(&s->c, b->index, err) != 0) return -1;
    cl_uint align_bits = 1024;
    clGetDeviceInfo(s->c.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                    NULL);
    /* Wide margins: on a CPU device a write past them would hit the heap. */
    s->margin = align_bits / 8 > 65536 ? align_bits / 8 : 65536;
    s->bufs = kv_calloc(MAX_BUFS, sizeof *s->bufs);
    return 0;
}

static ocl_rarena *find_arena(ocl_rstate *s, uint32_t id)
{
    for (int i = 0; i < 64; i++)
        if (s->arenas[i].base && s->arenas[i].id == id) return &s->arenas[i];
    return NULL;
}

static int ocl_map(kv_rdev *b, const kv_rmsg_map *m, int fd, kv_fail *err)
{
    ocl_rstate *s = b->state;
    ocl_rarena *slot = NULL;
    for (int i = 0; i < 64 && !slot; i++)
        if (!s->arenas[i].base) slot = &s->arenas[i];
    if (!slot || fd < 0) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "an arena without its descriptor, or too many arenas");
        if (fd >= 0) close(fd);
        return -1;
    }
    kv_rmsg_map plain = *m;
    plain.num_guards = 0; /* staging memory: the device buffers carry the canaries */
    unsigned char *p = kv_memfd_map_guarded(&plain, fd, err);
    close(fd);
    if (!p) return -1;
    slot->id = m->arena;
    slot->base = p;
    slot->bytes = m->bytes;
    return 0;
}

static void release_buf(ocl_rbuf *rb)
{
    if (rb->sub) clReleaseMemObject(rb->sub);
    if (rb->parent) clReleaseMemObject(rb->parent);
    memset(rb, 0, sizeof *rb);
}

static void ocl_unmap(kv_rdev *b, uint32_t id)
{
    ocl_rstate *s = b->state;
    ocl_rarena *a = find_arena(s, id);
    if (!a) return;
    for (size_t i = 0; i < s->nbufs; i++)
        if (s->bufs[i].parent && s->bufs[i].arena == id) release_buf(&s->bufs[i]);
    munmap(a->base, a->bytes);
    memset(a, 0, sizeof *a);
}

/* The device buffer for the tensor at OFFSET of arena ID, made on first use. */
static ocl_rbuf *device_buf(ocl_rstate *s, uint32_t id, uint64_t offset, uint64_t bytes,
                            kv_fail *err)
{
    ocl_rbuf *free_slot = NULL;
    for (size_t i = 0; i < s->nbufs; i++) {
        ocl_rbuf *rb = &s->bufs[i];
        if (rb->parent && rb->arena == id && rb->offset == offset && rb->bytes == bytes) return rb;
        if (!rb->parent && !free_slot) free_slot = rb;
    }
    if (!free_slot) {
        if (s->nbufs == MAX_BUFS) {
            kv_fail_set(err, KV_R_HARNESS_ERROR, "too many device buffers");
            return NULL;
        }
        free_slot = &s->bufs[s->nbufs++];
    }
    size_t data = (bytes + 63) & ~(size_t)63;
    size_t total = s->margin + (data ? data : 64) + s->margin;
    cl_int e;
    cl_mem parent = clCreateBuffer(s->c.ctx, CL_MEM_READ_WRITE, total, NULL, &e);
    if (!parent) {
        cl_fail(err, e, "clCreateBuffer");
        return NULL;
    }
    unsigned char pat = CANARY;
    e = clEnqueueFillBuffer(s->c.queue, parent, &pat, 1, 0, total, 0, NULL, NULL);
    cl_buffer_region reg = {s->margin, bytes ? bytes : 1};
    cl_mem sub = e == CL_SUCCESS ? clCreateSubBuffer(parent, CL_MEM_READ_WRITE,
                                                     CL_BUFFER_CREATE_TYPE_REGION, &reg, &e)
                                 : NULL;
    if (!sub) {
        cl_fail(err, e, "clCreateSubBuffer");
        clReleaseMemObject(parent);
        return NULL;
    }
    *free_slot =
        (ocl_rbuf){.arena = id, .offset = offset, .bytes = bytes, .parent = parent, .sub = sub};
    return free_slot;
}

/* 1 when the canaries around RB are intact, 0 when not, -1 on error. */
static int canary_ok(ocl_rstate *s, ocl_rbuf *rb)
{
    size_t data = (rb->bytes + 63) & ~(size_t)63;
    size_t total = s->margin + (data ? data : 64) + s->margin;
    size_t after = total - s->margin - rb->bytes;
    unsigned char *m = kv_malloc(s->margin + after);
    cl_int e = clEnqueueReadBuffer(s->c.queue, rb->parent, CL_TRUE, 0, s->margin, m, 0, NULL, NULL);
    if (e == CL_SUCCESS)
        e = clEnqueueReadBuffer(s->c.queue, rb->parent, CL_TRUE, s->margin + rb->bytes, after,
                                m + s->margin, 0, NULL, NULL);
    int ok = e == CL_SUCCESS ? 1 : -1;
    for (size_t i = 0; i < s->margin + after && ok == 1; i++)
        ok = m[i] == CANARY;
    free(m);
    return ok;
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

/* The kernel NAME of the module behind ARGS (kv_launch_args.cl_kernel). */
static void *ocl_kernel_by_name(const kv_launch_args *args, const char *name)
{
    ocl_module *om = args->harness;
    if (!om || !name) return NULL;
    for (cl_uint i = 0; i < om->n; i++)
        if (strcmp(om->names[i], name) == 0) return om->kernels[i];
    return NULL;
}

static int ocl_load(kv_rdev *b, const char *lib, const char *device_src, char **log, kv_fail *err)
{
    ocl_rstate *s = b->state;
    *log = NULL;
    ocl_module *om = kv_calloc(1, sizeof *om);
    const char *text = device_src ? device_src : "";
    cl_int e;
    om->program = clCreateProgramWithSource(s->c.ctx, 1, &text, NULL, &e);
    if (!om->program) {
        cl_fail(err, e, "clCreateProgramWithSource");
        free_module(om);
        return -1;
    }
    cl_int be = clBuildProgram(om->program, 1, &s->c.device, "", NULL, NULL);
    size_t len = 0;
    clGetProgramBuildInfo(om->program, s->c.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
    char *text_log = kv_calloc(1, len + 1);
    clGetProgramBuildInfo(om->program, s->c.device, CL_PROGRAM_BUILD_LOG, len, text_log, NULL);
    *log = text_log;
    if (be != CL_SUCCESS) {
        kv_fail_set(err, KV_R_COMPILE_ERROR, "the OpenCL device code does not build (error %d)",
                    (int)be);
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
    s->mod = om;
    return kv_rdev_load_entry(lib, &s->so, &s->fn,
                              "the candidate's host code does not export kv_launch", err);
}

/* REPLY's failure from OpenCL error E of WHAT in call CALL. */
static int fail_cl(kv_rmsg_reply *reply, uint32_t call, cl_int e, const char *what)
{
    return kv_reply_fail(reply, call, cl_code(e), "%s failed with OpenCL error %d", what, (int)e);
}

static int ocl_run(kv_rdev *b, const kv_rmsg_run *r, kv_rmsg_reply *reply)
{
    ocl_rstate *s = b->state;
    ocl_rarena *ar = find_arena(s, r->arena);
    if (!ar || (r->ncalls > 0 && !(r->flags & KV_RUN_NO_LAUNCH) && !s->fn))
        return kv_reply_fail(reply, 0, KV_R_HARNESS_ERROR, "run before map or load");
    uint32_t nt = r->num_tensors < KV_MAX_TENSORS ? r->num_tensors : KV_MAX_TENSORS;
    kv_fail err = {0};
    ocl_rbuf **used = kv_calloc((size_t)r->ncalls * nt + 1, sizeof *used);
    int rc = 0;
    /* In: every tensor of every call, the poisoned outputs too, so the
     * device starts from what the judge wrote. */
    for (uint32_t i = 0; i < r->ncalls && rc == 0; i++) {
        kv_launch_args a;
        kv_rrun_args(r, ar->base, i, &a);
        for (uint32_t t = 0; t < nt && rc == 0; t++) {
            uint64_t off = (uint64_t)((unsigned char *)a.tensors[t] - ar->base);
            if (off > ar->bytes || r->bytes[t] > ar->bytes - off) {
                rc = kv_reply_fail(reply, i, KV_R_HARNESS_ERROR, "a tensor past its arena");
                break;
            }
            ocl_rbuf *rb = device_buf(s, r->arena, off, r->bytes[t], &err);
            if (!rb) {
                rc = kv_reply_fail(reply, i, err.code, "%s", kv_fail_detail(&err));
                kv_fail_clear(&err);
                break;
            }
            used[(size_t)i * nt + t] = rb;
            if (r->flags & KV_RUN_DOWNLOAD_ONLY) continue;
            cl_int e = r->bytes[t] ? clEnqueueWriteBuffer(s->c.queue, rb->sub, CL_FALSE, 0,
                                                          r->bytes[t], a.tensors[t], 0, NULL, NULL)
                                   : CL_SUCCESS;
            if (e != CL_SUCCESS) {
                rc = fail_cl(reply, i, e, "clEnqueueWriteBuffer");
            }
        }
    }
    int launch = !(r->flags & (KV_RUN_NO_LAUNCH | KV_RUN_DOWNLOAD_ONLY));
    for (uint32_t i = 0; i < r->ncalls && rc == 0 && launch; i++) {
        kv_launch_args a;
        memset(&a, 0, sizeof a);
        a.abi_version = KV_TASK_ABI_VERSION;
        a.num_tensors = nt;
        for (uint32_t t = 0; t < nt; t++)
            a.tensors[t] = used[(size_t)i * nt + t]->sub;
        a.num_syms = r->num_syms < KV_MAX_SYMS ? r->num_syms : KV_MAX_SYMS;
        for (uint32_t k = 0; k < a.num_syms; k++)
            a.syms[k] = r->syms[k];
        a.stream = s->c.queue;
        a.context = s->c.ctx;
        a.device = s->c.device;
        a.cl_kernel = ocl_kernel_by_name;
        a.harness = s->mod;
        int lr = s->fn(&a);
        if (lr != 0) {
            rc = kv_reply_fail(reply, i, KV_R_LAUNCH_FAILED, "kv_launch returned %d", lr);
        }
    }
    /* Out: the outputs back into the staging memory, and the inputs too, so
     * that the judge sees an input the candidate wrote. */
    for (uint32_t i = 0; i < r->ncalls && rc == 0; i++)
        for (uint32_t t = 0; t < nt && rc == 0; t++) {
            if (!r->bytes[t]) continue;
            kv_launch_args a;
            kv_rrun_args(r, ar->base, i, &a);
            cl_int e = clEnqueueReadBuffer(s->c.queue, used[(size_t)i * nt + t]->sub, CL_FALSE, 0,
                                           r->bytes[t], a.tensors[t], 0, NULL, NULL);
            if (e != CL_SUCCESS) {
                rc = fail_cl(reply, i, e, "clEnqueueReadBuffer");
            }
        }
    cl_int e = clFinish(s->c.queue);
    if (rc == 0 && e != CL_SUCCESS) {
        rc = fail_cl(reply, r->ncalls ? r->ncalls - 1 : 0, e, "clFinish after the kernel");
    }
    for (size_t k = 0; k < (size_t)r->ncalls * nt && rc == 0; k++) {
        int ok = canary_ok(s, used[k]);
        /* A damaged canary names its tensor (by index: the judge knows names). */
        if (ok != 1)
            rc = ok < 0
                     ? kv_reply_fail(reply, (uint32_t)(k % nt), KV_R_OPENCL_ERROR,
                                     "reading canaries")
                     : kv_reply_fail(reply, (uint32_t)(k % nt), KV_R_OUT_OF_BOUNDS_WRITE,
                                     "bytes next to the tensor were overwritten (canary damaged)");
    }
    free(used);
    return rc;
}

kv_rdev *kv_rdev_opencl_new(void)
{
    kv_rdev *b = kv_calloc(1, sizeof *b);
    b->open = ocl_ropen;
    b->map = ocl_map;
    b->unmap = ocl_unmap;
    b->load = ocl_load;
    b->run = ocl_run;
    return b;
}
