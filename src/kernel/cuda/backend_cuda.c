/* The cuda backend: the driver API (loaded at run time) on the device's
 * primary context, which the candidate's nvcc-built launcher (CUDA runtime)
 * shares. Candidates launch on the harness's stream; buffers carry 64 KiB
 * canary margins; data moves asynchronously on that stream only, so work a
 * candidate leaves on another stream shows up as late writes. A launch is
 * timed with events on the stream and a device-wide synchronisation, or
 * by replaying a captured CUDA graph ten times (use_graph). Without a
 * driver or a device, open fails with "no CUDA device: ...". */
#include "kernel/backend.h"
#include "kernel/cuda/cuda_api.h"
#include "util/buf.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MARGIN (64u * 1024u)
#define CANARY 0xc3
#define GRAPH_REPLAYS 10

enum {
    ATTR_CLOCK_RATE = 13,
    ATTR_SM_COUNT = 16,
    ATTR_MEMORY_CLOCK_RATE = 36,
    ATTR_BUS_WIDTH = 37,
    ATTR_L2_CACHE_SIZE = 38,
    ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76,
};

typedef struct cu_state {
    kv_cu cu;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUevent e0, e1;
    CUdeviceptr flush_buf;
    size_t flush_bytes;
    void *nvml;
} cu_state;

static char *cu_err(cu_state *s, CUresult rc, const char *what)
{
    return kv_asprintf("%s: %s failed: %s", kv_cu_error_code(&s->cu, rc), what,
                       kv_cu_error_name(&s->cu, rc));
}

#define CHECK(call, what)                                                                          \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != 0) {                                                                            \
            *err = cu_err(s, rc_, what);                                                           \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* Device-to-device copy bandwidth (read plus write), GB/s, best of three. */
static double measure_copy(cu_state *s)
{
    size_t n = 256u << 20;
    CUdeviceptr a = 0, b = 0;
    double best = 0;
    if (s->cu.MemAlloc(&a, n) == 0 && s->cu.MemAlloc(&b, n) == 0) {
        s->cu.MemsetD8Async(a, 0, n, s->stream);
        for (int i = 0; i < 4; i++) {
            float ms = 0;
            s->cu.EventRecord(s->e0, s->stream);
            s->cu.MemcpyDtoDAsync(b, a, n, s->stream);
            s->cu.EventRecord(s->e1, s->stream);
            s->cu.EventSynchronize(s->e1);
            if (i > 0 && s->cu.EventElapsedTime(&ms, s->e0, s->e1) == 0 && ms > 0) {
                double g = 2.0 * (double)n / (ms * 1e-3) / 1e9;
                if (g > best) best = g;
            }
        }
    }
    if (a) s->cu.MemFree(a);
    if (b) s->cu.MemFree(b);
    return best;
}

static int cuda_open(kv_backend *b, char **err)
{
    cu_state *s = kv_calloc(1, sizeof *s);
    b->state = s;
    if (kv_cu_load(&s->cu, err) != 0) return -1;
    CUresult rc = s->cu.Init(0);
    int count = 0;
    if (rc == 0) rc = s->cu.DeviceGetCount(&count);
    if (rc != 0 || count == 0) {
        *err = kv_asprintf("no CUDA device: cuInit/cuDeviceGetCount: %s, %d devices",
                           rc ? kv_cu_error_name(&s->cu, rc) : "ok", count);
        return -1;
    }
    const char *want = getenv("KEVOLVE_CUDA_DEVICE");
    int index = want ? atoi(want) : 0;
    CHECK(s->cu.DeviceGet(&s->dev, index), "cuDeviceGet");
    CHECK(s->cu.DevicePrimaryCtxRetain(&s->ctx, s->dev), "cuDevicePrimaryCtxRetain");
    CHECK(s->cu.CtxSetCurrent(s->ctx), "cuCtxSetCurrent");
    CHECK(s->cu.StreamCreate(&s->stream, 0), "cuStreamCreate");
    CHECK(s->cu.EventCreate(&s->e0, 0), "cuEventCreate");
    CHECK(s->cu.EventCreate(&s->e1, 0), "cuEventCreate");
    char name[256] = "", bus[64] = "";
    int major = 0, minor = 0, sms = 0, memclk = 0, width = 0, l2 = 0, clk = 0;
    size_t mem = 0;
    s->cu.DeviceGetName(name, sizeof name, s->dev);
    s->cu.DeviceGetPCIBusId(bus, sizeof bus, s->dev);
    s->cu.DeviceTotalMem(&mem, s->dev);
    s->cu.DeviceGetAttribute(&major, ATTR_CC_MAJOR, s->dev);
    s->cu.DeviceGetAttribute(&minor, ATTR_CC_MINOR, s->dev);
    s->cu.DeviceGetAttribute(&sms, ATTR_SM_COUNT, s->dev);
    s->cu.DeviceGetAttribute(&memclk, ATTR_MEMORY_CLOCK_RATE, s->dev);
    s->cu.DeviceGetAttribute(&width, ATTR_BUS_WIDTH, s->dev);
    s->cu.DeviceGetAttribute(&l2, ATTR_L2_CACHE_SIZE, s->dev);
    s->cu.DeviceGetAttribute(&clk, ATTR_CLOCK_RATE, s->dev);
    /* Architecture-specific targets (sm_90a) unlock wgmma and TMA on Hopper
     * and Blackwell; earlier GPUs take the plain target. */
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d%s", major, minor, major >= 9 ? "a" : "");
    double theory = 2.0 * (double)memclk * 1e3 * (double)width / 8.0 / 1e9;
    double copy = measure_copy(s);
    b->cache_bytes = l2 > 0 ? (size_t)l2 : (50u << 20);
    b->bandwidth_gbps = theory > 0 ? theory : (copy > 0 ? copy : 1000.0);
    b->ceiling_gbps = b->bandwidth_gbps > copy ? b->bandwidth_gbps : copy;
    s->flush_bytes = 2 * b->cache_bytes;
    if (s->cu.MemAlloc(&s->flush_buf, s->flush_bytes) != 0) s->flush_buf = 0;
    s->nvml = kv_nvml_open(bus);
    b->device = json_pack("{s:s,s:s,s:s,s:i,s:I,s:I,s:i,s:f,s:f,s:i}", "name", name, "arch", arch,
                          "pci_bus", bus, "sm_count", sms, "memory_bytes", (json_int_t)mem,
                          "l2_bytes", (json_int_t)l2, "sm_clock_khz", clk, "theoretical_gbps",
                          theory, "copy_gbps", copy, "nvml", s->nvml != NULL);
    return 0;
}

static void cuda_close(kv_backend *b)
{
    cu_state *s = b->state;
    if (!s) return;
    /* The process ends right after; the driver frees the context. */
    free(s);
    b->state = NULL;
}

static int cuda_load(kv_backend *b, const kv_compiled *c, kv_module **out, char **build_log,
                     char **err)
{
    cu_state *s = b->state;
    *build_log = NULL;
    s->cu.CtxSetCurrent(s->ctx);
    void *so = dlopen(c->lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        *err = kv_asprintf("load_error: %s", dlerror());
        return -1;
    }
    kv_launch_fn fn = (kv_launch_fn)(uintptr_t)dlsym(so, "kv_launch");
    if (!fn) {
        *err = kv_strdup("missing_entry: the candidate does not export extern \"C\" kv_launch");
        return -1;
    }
    kv_module *m = kv_calloc(1, sizeof *m);
    m->so = so;
    m->fn = fn;
    *out = m;
    return 0;
}

static void cuda_unload(kv_backend *b, kv_module *m)
{
    (void)b;
    free(m); /* never dlclose a library holding a CUDA runtime */
}

static int cuda_alloc(kv_backend *b, size_t bytes, const char *name, kv_dbuf *out, char **err)
{
    cu_state *s = b->state;
    size_t data = (bytes + 255) & ~(size_t)255;
    size_t total = MARGIN + (data ? data : 256) + MARGIN;
    CUdeviceptr p = 0;
    CHECK(s->cu.MemAlloc(&p, total), "cuMemAlloc");
    CHECK(s->cu.MemsetD8Async(p, CANARY, total, s->stream), "cuMemsetD8");
    CHECK(s->cu.StreamSynchronize(s->stream), "cuStreamSynchronize");
    size_t *tot = kv_malloc(sizeof *tot);
    *tot = total;
    out->handle = (void *)(uintptr_t)(p + MARGIN);
    out->bytes = bytes;
    out->priv = tot;
    out->name = name;
    return 0;
}

static void cuda_release(kv_backend *b, kv_dbuf *buf)
{
    cu_state *s = b->state;
    if (!buf->priv) return;
    s->cu.MemFree((CUdeviceptr)(uintptr_t)buf->handle - MARGIN);
    free(buf->priv);
    memset(buf, 0, sizeof *buf);
}

static int cuda_write(kv_backend *b, kv_dbuf *buf, const void *src, char **err)
{
    cu_state *s = b->state;
    if (buf->bytes == 0) return 0;
    CHECK(s->cu.MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)buf->handle, src, buf->bytes, s->stream),
          "cuMemcpyHtoD");
    CHECK(s->cu.StreamSynchronize(s->stream), "cuStreamSynchronize");
    return 0;
}

static int cuda_read(kv_backend *b, kv_dbuf *buf, void *dst, char **err)
{
    cu_state *s = b->state;
    if (buf->bytes == 0) return 0;
    CHECK(s->cu.MemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)buf->handle, buf->bytes, s->stream),
          "cuMemcpyDtoH");
    CHECK(s->cu.StreamSynchronize(s->stream), "cuStreamSynchronize");
    return 0;
}

static int cuda_canary_ok(kv_backend *b, kv_dbuf *buf, char **err)
{
    cu_state *s = b->state;
    size_t total = *(size_t *)buf->priv;
    CUdeviceptr base = (CUdeviceptr)(uintptr_t)buf->handle - MARGIN;
    /* Only the margins travel: the data between them can be gigabytes. */
    size_t after = total - MARGIN - buf->bytes;
    unsigned char *m = kv_malloc(MARGIN + after);
    CUresult rc = s->cu.MemcpyDtoHAsync(m, base, MARGIN, s->stream);
    if (rc == 0)
        rc = s->cu.MemcpyDtoHAsync(m + MARGIN, base + MARGIN + buf->bytes, after, s->stream);
    if (rc == 0) rc = s->cu.StreamSynchronize(s->stream);
    if (rc != 0) {
        free(m);
        *err = cu_err(s, rc, "reading canaries");
        return -1;
    }
    int ok = 1;
    for (size_t i = 0; i < MARGIN + after && ok; i++)
        ok = m[i] == CANARY;
    free(m);
    return ok;
}

/* The harness's name for a CUDA runtime error that kv_launch returned (task.h
 * asks CUDA candidates to return cudaGetLastError()), or NULL. */
static const char *runtime_error_code(int rc)
{
    switch (rc) {
    case 2:
        return "out_of_memory"; /* cudaErrorMemoryAllocation */
    case 9:
        return "invalid_configuration"; /* cudaErrorInvalidConfiguration */
    case 700:
        return "illegal_address"; /* cudaErrorIllegalAddress */
    case 701:
        return "out_of_resources"; /* cudaErrorLaunchOutOfResources */
    case 702:
        return "launch_timeout"; /* cudaErrorLaunchTimeout */
    case 716:
        return "misaligned_address"; /* cudaErrorMisalignedAddress */
    default:
        return NULL;
    }
}

static int cuda_launch(kv_backend *b, kv_module *m, kv_launch_args *a, char **err)
{
    cu_state *s = b->state;
    a->stream = s->stream;
    a->context = s->ctx;
    a->device = NULL;
    a->cl_kernel = NULL;
    int rc = m->fn(a);
    if (rc != 0) {
        const char *code = runtime_error_code(rc);
        *err = code ? kv_asprintf("%s: kv_launch returned CUDA runtime error %d", code, rc)
                    : kv_asprintf("launch_failed: kv_launch returned %d", rc);
        return -1;
    }
    return 0;
}

static int cuda_sync_stream(kv_backend *b, char **err)
{
    cu_state *s = b->state;
    CHECK(s->cu.StreamSynchronize(s->stream), "the kernel (stream synchronisation)");
    return 0;
}

static int cuda_sync_device(kv_backend *b, char **err)
{
    cu_state *s = b->state;
    CHECK(s->cu.CtxSynchronize(), "the kernel (device synchronisation)");
    return 0;
}

/* Times GRAPH_REPLAYS replays of a graph captured from one launch; returns
 * 1 when capture is not possible (the caller times plainly). */
static int time_graph(kv_backend *b, kv_module *m, kv_launch_args *a, double *us, char **err)
{
    cu_state *s = b->state;
    if (s->cu.StreamBeginCapture(s->stream, 1 /* thread-local */) != 0) return 1;
    char *lerr = NULL;
    int lrc = cuda_launch(b, m, a, &lerr);
    void *graph = NULL, *exec = NULL;
    CUresult rc = s->cu.StreamEndCapture(s->stream, &graph);
    if (lrc != 0) {
        *err = lerr;
        if (graph) s->cu.GraphDestroy(graph);
        return -1;
    }
    if (rc != 0 || !graph || s->cu.GraphInstantiate(&exec, graph, 0) != 0) {
        if (graph) s->cu.GraphDestroy(graph);
        s->cu.CtxSynchronize(); /* clears a failed capture's state */
        return 1;
    }
    CHECK(s->cu.EventRecord(s->e0, s->stream), "cuEventRecord");
    for (int i = 0; i < GRAPH_REPLAYS; i++)
        CHECK(s->cu.GraphLaunch(exec, s->stream), "cuGraphLaunch");
    CHECK(s->cu.EventRecord(s->e1, s->stream), "cuEventRecord");
    CHECK(s->cu.CtxSynchronize(), "the kernel (device synchronisation)");
    float ms = 0;
    CHECK(s->cu.EventElapsedTime(&ms, s->e0, s->e1), "cuEventElapsedTime");
    *us = ms * 1e3 / GRAPH_REPLAYS;
    s->cu.GraphExecDestroy(exec);
    s->cu.GraphDestroy(graph);
    return 0;
}

static int cuda_time_launch(kv_backend *b, kv_module *m, kv_launch_args *a, double *us, char **err)
{
    cu_state *s = b->state;
    if (b->use_graph) {
        int g = time_graph(b, m, a, us, err);
        if (g <= 0) return g;
    }
    CHECK(s->cu.EventRecord(s->e0, s->stream), "cuEventRecord");
    if (cuda_launch(b, m, a, err) != 0) return -1;
    CHECK(s->cu.EventRecord(s->e1, s->stream), "cuEventRecord");
    CHECK(s->cu.CtxSynchronize(), "the kernel (device synchronisation)");
    float ms = 0;
    CHECK(s->cu.EventElapsedTime(&ms, s->e0, s->e1), "cuEventElapsedTime");
    *us = ms * 1e3;
    return 0;
}

static int cuda_flush(kv_backend *b, char **err)
{
    cu_state *s = b->state;
    if (!s->flush_buf) return 0;
    CHECK(s->cu.MemsetD8Async(s->flush_buf, 0, s->flush_bytes, s->stream), "L2 flush");
    return 0;
}

static json_t *cuda_telemetry(kv_backend *b)
{
    cu_state *s = b->state;
    return s->nvml ? kv_nvml_read(s->nvml) : NULL;
}

kv_backend *kv_backend_cuda_new(void)
{
    kv_backend *b = kv_calloc(1, sizeof *b);
    b->kind = KV_BACKEND_CUDA;
    b->name = "cuda";
    b->open = cuda_open;
    b->close = cuda_close;
    b->load = cuda_load;
    b->unload = cuda_unload;
    b->alloc = cuda_alloc;
    b->release = cuda_release;
    b->write = cuda_write;
    b->read = cuda_read;
    b->canary_ok = cuda_canary_ok;
    b->launch = cuda_launch;
    b->sync_stream = cuda_sync_stream;
    b->sync_device = cuda_sync_device;
    b->time_launch = cuda_time_launch;
    b->flush = cuda_flush;
    b->telemetry = cuda_telemetry;
    return b;
}
