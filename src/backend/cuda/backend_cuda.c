/* The cuda backend, through the driver API (loaded at run time) on the
 * device's primary context.
 *
 * The judge allocates every arena in its own context, fills and reads it on
 * its own stream, and hands the runner an IPC handle of it; the runner maps
 * the handle into its own context, where the candidate's nvcc-built launcher
 * (CUDA runtime) works on the same memory. Canary margins around each
 * tensor are the judge's to check. The judge's helper kernels (judge_kernels
 * .cu) write timed inputs and count poison and changed inputs on the device.
 * Without a driver or a device, open fails with "no CUDA device: ...". */
#include "backend/backend.h"
#include "runner/rdev.h"
#include "backend/check.h"
#include "backend/judge_ops.h"
#include "backend/cuda/cuda_api.h"
#include "backend/memfd_arena.h"
#include "util/buf.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    ATTR_CLOCK_RATE = 13,
    ATTR_SM_COUNT = 16,
    ATTR_MEMORY_CLOCK_RATE = 36,
    ATTR_BUS_WIDTH = 37,
    ATTR_L2_CACHE_SIZE = 38,
    ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76,
};

typedef int (*gen_fn)(void *, void *, int, int, unsigned long long, unsigned long long,
                      unsigned long long);
typedef int (*count_equal_fn)(void *, const void *, int, unsigned long long, unsigned long long,
                              unsigned long long, unsigned int, unsigned long long *);
typedef int (*count_changed_fn)(void *, const void *, int, int, unsigned long long,
                                unsigned long long, unsigned long long, unsigned long long *);
typedef int (*count_diff_fn)(void *, const void *, const void *, int, unsigned long long,
                             unsigned long long *);
typedef int (*compare_fn)(void *, const void *, const void *, int, const double *, const double *,
                          unsigned long long, double, double, double, unsigned long long *);
typedef int (*check_fn)(void *, const void *, int, const double *, const double *,
                        unsigned long long, unsigned int, int, double, double, double, kvj_part *,
                        int *);

typedef int (*count_spans_fn)(void *, const unsigned long long *, const unsigned long long *, int,
                              unsigned int, unsigned long long *);

typedef struct cu_state {
    kv_cu cu;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUevent e0, e1;
    CUdeviceptr flush_buf;
    size_t flush_bytes;
    double theory_gbps;   /* from the memory clock and bus width (open) */
    CUdeviceptr counters; /* two counters for the helpers' answers */
    void *nvml;
    void *helpers; /* the judge's helper kernels */
    gen_fn gen;
    count_equal_fn count_equal;
    count_changed_fn count_changed;
    count_diff_fn count_diff;
    compare_fn compare;
    check_fn check;
    count_spans_fn count_spans;
    CUdeviceptr parts; /* kvj_check's parts, KVJ_MAX_PARTS */
} cu_state;

/* Fails ERR with the harness's code for RC and what failed. */
static int cu_fail(cu_state *s, CUresult rc, const char *what, kv_fail *err)
{
    return kv_fail_set(err, kv_cu_error_code(&s->cu, rc), "%s failed: %s", what,
                       kv_cu_error_name(&s->cu, rc));
}

#define CHECK(call, what)                                                                          \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != 0) {                                                                            \
            return cu_fail(s, rc_, what, err);                                                     \
        }                                                                                          \
    } while (0)

/* Opens device INDEX and its primary context, current on this thread, with
 * a stream of its own. */
static int open_context(cu_state *s, int index, kv_fail *err)
{
    char *why = NULL;
    if (kv_cu_load(&s->cu, &why) != 0) return kv_fail_take(err, KV_R_NO_DEVICE, why);
    CUresult rc = s->cu.Init(0);
    int count = 0;
    if (rc == 0) rc = s->cu.DeviceGetCount(&count);
    if (rc != 0 || count == 0) {
        return kv_fail_set(err, KV_R_NO_DEVICE,
                           "no CUDA device: cuInit/cuDeviceGetCount: %s, %d devices",
                           rc ? kv_cu_error_name(&s->cu, rc) : "ok", count);
    }
    if (index < 0 || index >= count) {
        return kv_fail_set(err, KV_R_NO_DEVICE, "no CUDA device: no device %d (%d on this machine)",
                           index, count);
    }
    CHECK(s->cu.DeviceGet(&s->dev, index), "cuDeviceGet");
    CHECK(s->cu.DevicePrimaryCtxRetain(&s->ctx, s->dev), "cuDevicePrimaryCtxRetain");
    CHECK(s->cu.CtxSetCurrent(s->ctx), "cuCtxSetCurrent");
    CHECK(s->cu.StreamCreate(&s->stream, 0), "cuStreamCreate");
    return 0;
}

/* DEV's name in CUDA_VISIBLE_DEVICES ("GPU-8-4-4-4-12 hex") into OUT; 0, or
 * -1 when the driver cannot say or DEV is a MIG instance (where v2's UUID
 * is the instance's own and differs from v1's, its GPU's): CUDA enumerates
 * one MIG instance per process already. */
static int visible_name(const kv_cu *cu, CUdevice dev, char out[64])
{
    unsigned char u[16], u2[16];
    if (!cu->DeviceGetUuid || cu->DeviceGetUuid(u, dev) != 0) return -1;
    if (cu->DeviceGetUuid_v2 && (cu->DeviceGetUuid_v2(u2, dev) != 0 || memcmp(u, u2, 16) != 0))
        return -1;
    snprintf(out, 64, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    return 0;
}

/* ---- the judge's half ---- */

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

/* Loads the judge's helper kernels from the shared object HELPERS. */
static int load_helpers(cu_state *s, const char *helpers, kv_fail *err)
{
    s->helpers = dlopen(helpers, RTLD_NOW | RTLD_LOCAL);
    if (!s->helpers) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "cannot load the judge's kernels: %s", dlerror());
        return -1;
    }
    /* Entries by name into pointers of their types (a cast between data
     * and function pointers is not ISO C). */
    static const struct {
        const char *name;
        size_t at;
    } entries[] = {{"kvj_gen", offsetof(cu_state, gen)},
                   {"kvj_count_equal", offsetof(cu_state, count_equal)},
                   {"kvj_count_changed", offsetof(cu_state, count_changed)},
                   {"kvj_count_diff", offsetof(cu_state, count_diff)},
                   {"kvj_compare", offsetof(cu_state, compare)},
                   {"kvj_check", offsetof(cu_state, check)},
                   {"kvj_count_spans", offsetof(cu_state, count_spans)}};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *f = dlsym(s->helpers, entries[i].name);
        if (!f) {
            kv_fail_set(err, KV_R_HARNESS_ERROR, "the judge's kernels lack %s", entries[i].name);
            return -1;
        }
        memcpy((char *)s + entries[i].at, &f, sizeof f);
    }
    CHECK(s->cu.MemAlloc(&s->parts, KVJ_MAX_PARTS * sizeof(kvj_part)), "cuMemAlloc");
    CHECK(s->cu.MemAlloc(&s->counters, 2 * sizeof(unsigned long long)), "cuMemAlloc");
    return 0;
}

static int cuda_open(kv_jdev *b, kv_fail *err)
{
    cu_state *s = b->state;
    if (open_context(s, b->index, err) != 0) return -1;
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
    s->theory_gbps = theory;
    b->cache_bytes = l2 > 0 ? (size_t)l2 : (50u << 20);
    if (visible_name(&s->cu, s->dev, b->confine) != 0) b->confine[0] = '\0';
    s->flush_bytes = 2 * b->cache_bytes;
    if (s->cu.MemAlloc(&s->flush_buf, s->flush_bytes) != 0) s->flush_buf = 0;
    s->nvml = kv_nvml_open(bus);
    kv_nvml_watch(s->nvml);
    b->device = json_pack("{s:s,s:i,s:s,s:s,s:i,s:I,s:I,s:i,s:f,s:i}", "name", name, "index",
                          b->index, "arch", arch, "pci_bus", bus, "sm_count", sms, "memory_bytes",
                          (json_int_t)mem, "l2_bytes", (json_int_t)l2, "sm_clock_khz", clk,
                          "theoretical_gbps", theory, "nvml", s->nvml != NULL);
    if (b->helpers && load_helpers(s, b->helpers, err) != 0) return -1;
    return 0;
}

static int cuda_measure(kv_jdev *b, kv_fail *err)
{
    (void)err;
    cu_state *s = b->state;
    double theory = s->theory_gbps, copy = measure_copy(s);
    b->bandwidth_gbps = theory > 0 ? theory : (copy > 0 ? copy : 1000.0);
    b->ceiling_gbps = b->bandwidth_gbps > copy ? b->bandwidth_gbps : copy;
    json_object_set_new(b->device, "copy_gbps", json_real(copy));
    return 0;
}

static void cuda_close(kv_jdev *b)
{
    /* The process ends soon after; the driver frees the context. */
    free(b->state);
    b->state = NULL;
}

static int cuda_arena_new(kv_jdev *b, size_t bytes, unsigned char canary, kv_arena *out,
                          kv_fail *err)
{
    cu_state *s = b->state;
    memset(out, 0, sizeof *out);
    out->fd = -1;
    CUdeviceptr p = 0;
    CHECK(s->cu.MemAlloc(&p, bytes), "cuMemAlloc");
    out->dptr = p;
    out->bytes = bytes;
    CHECK(s->cu.MemsetD8Async(p, canary, bytes, s->stream), "cuMemsetD8");
    CUipcMemHandle h;
    CHECK(s->cu.IpcGetMemHandle(&h, p), "cuIpcGetMemHandle");
    memcpy(out->ipc, h.reserved, sizeof out->ipc);
    CHECK(s->cu.StreamSynchronize(s->stream), "cuStreamSynchronize");
    return 0;
}

static void cuda_arena_free(kv_jdev *b, kv_arena *a)
{
    cu_state *s = b->state;
    if (a->dptr) s->cu.MemFree(a->dptr);
    memset(a, 0, sizeof *a);
    a->fd = -1;
}

static int cuda_write(kv_jdev *b, kv_arena *a, size_t off, const void *src, size_t n, kv_fail *err)
{
    cu_state *s = b->state;
    if (n == 0) return 0;
    if (kv_arena_check(a, off, n, err) != 0) return -1;
    CHECK(s->cu.MemcpyHtoDAsync(a->dptr + off, src, n, s->stream), "cuMemcpyHtoD");
    CHECK(s->cu.StreamSynchronize(s->stream), "cuStreamSynchronize");
    return 0;
}

static int cuda_read(kv_jdev *b, kv_arena *a, size_t off, void *dst, size_t n, kv_fail *err)
{
    cu_state *s = b->state;
    if (n == 0) return 0;
    if (kv_arena_check(a, off, n, err) != 0) return -1;
    CHECK(s->cu.MemcpyDtoHAsync(dst, a->dptr + off, n, s->stream), "cuMemcpyDtoH");
    CHECK(s->cu.StreamSynchronize(s->stream), "cuStreamSynchronize");
    return 0;
}

static int cuda_fill(kv_jdev *b, kv_arena *a, size_t off, size_t count, const void *pattern,
                     size_t esize, kv_fail *err)
{
    cu_state *s = b->state;
    if (kv_arena_check(a, off, count * esize, err) != 0) return -1;
    CUdeviceptr p = a->dptr + off;
    if (esize == 1) {
        CHECK(s->cu.MemsetD8Async(p, *(const unsigned char *)pattern, count, s->stream),
              "cuMemsetD8");
    } else if (esize == 2) {
        uint16_t v;
        memcpy(&v, pattern, 2);
        CHECK(s->cu.MemsetD16Async(p, v, count, s->stream), "cuMemsetD16");
    } else if (esize == 4) {
        uint32_t v;
        memcpy(&v, pattern, 4);
        CHECK(s->cu.MemsetD32Async(p, v, count, s->stream), "cuMemsetD32");
    } else {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "fill of %zu-byte elements", esize);
        return -1;
    }
    return 0;
}

static int cuda_sync(kv_jdev *b, kv_fail *err)
{
    cu_state *s = b->state;
    CHECK(s->cu.StreamSynchronize(s->stream), "the judge's stream");
    return 0;
}

static void *cuda_ptr(kv_jdev *b, kv_arena *a, size_t off)
{
    (void)b;
    return (void *)(uintptr_t)(a->dptr + off);
}

static int cuda_launch_local(kv_jdev *b, kv_launch_fn fn, kv_launch_args *a, kv_fail *err)
{
    cu_state *s = b->state;
    a->stream = s->stream;
    a->context = s->ctx;
    int rc = fn(a);
    if (rc != 0) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "the task's own kernel returned %d", rc);
        return -1;
    }
    CHECK(s->cu.StreamSynchronize(s->stream), "the task's own kernel");
    return 0;
}

static int cuda_flush(kv_jdev *b, kv_fail *err)
{
    cu_state *s = b->state;
    if (!s->flush_buf) return 0;
    CHECK(s->cu.MemsetD8Async(s->flush_buf, 0, s->flush_bytes, s->stream), "L2 flush");
    return 0;
}

/* Events on the judge's stream: E0 and E1 also serve measure_copy, never
 * at the same time. */
static int cuda_mark(kv_jdev *b, int end, kv_fail *err)
{
    cu_state *s = b->state;
    CHECK(s->cu.EventRecord(end ? s->e1 : s->e0, s->stream), "cuEventRecord");
    return 0;
}

static int cuda_elapsed(kv_jdev *b, double *secs, kv_fail *err)
{
    cu_state *s = b->state;
    float ms = 0;
    CHECK(s->cu.EventElapsedTime(&ms, s->e0, s->e1), "cuEventElapsedTime");
    *secs = ms * 1e-3;
    return 0;
}

static json_t *cuda_telemetry(kv_jdev *b)
{
    cu_state *s = b->state;
    return s->nvml ? kv_nvml_read(s->nvml) : NULL;
}

static int cuda_energy(kv_jdev *b, double *joules)
{
    cu_state *s = b->state;
    return kv_nvml_energy(s->nvml, joules);
}

static json_t *cuda_device_errors(kv_jdev *b)
{
    cu_state *s = b->state;
    return kv_nvml_errors(s->nvml);
}

static char *cuda_needs_reset(kv_jdev *b)
{
    cu_state *s = b->state;
    return kv_nvml_needs_reset(s->nvml);
}

static size_t dtype_bytes(kv_dtype dt)
{
    return dt == KV_F16 || dt == KV_BF16 ? 2 : 4;
}

static int helper_rc(int rc, const char *what, kv_fail *err)
{
    if (rc == 0) return 0;
    kv_fail_set(err, KV_R_HARNESS_ERROR, "the judge's %s kernel failed with CUDA error %d", what,
                rc);
    return -1;
}

static int cuda_gen(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, int dist, size_t count,
                    uint64_t seed, uint64_t forced, kv_fail *err)
{
    cu_state *s = b->state;
    if (kv_arena_check(a, off, count * dtype_bytes(dt), err) != 0) return -1;
    return helper_rc(
        s->gen(s->stream, (void *)(uintptr_t)(a->dptr + off), (int)dt, dist, count, seed, forced),
        "input", err);
}

/* Reads the helpers' two counters after they ran. */
static int read_counters(cu_state *s, size_t *n, size_t *first, kv_fail *err)
{
    unsigned long long c[2] = {0, 0};
    CHECK(s->cu.MemcpyDtoHAsync(c, s->counters, sizeof c, s->stream), "cuMemcpyDtoH");
    CHECK(s->cu.StreamSynchronize(s->stream), "the judge's check");
    *n = (size_t)c[0];
    if (first) *first = (size_t)c[1];
    return 0;
}

static int cuda_count_poison(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, size_t count,
                             size_t sets, size_t stride, const void *pattern, size_t *n,
                             size_t *first, kv_fail *err)
{
    cu_state *s = b->state;
    size_t es = dtype_bytes(dt);
    if (sets > 1 && (stride < count * es || stride % es)) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "sets %zu bytes apart do not hold %zu elements",
                    stride, count);
        return -1;
    }
    if (sets < 1) sets = 1;
    if (kv_arena_check(a, off, (sets - 1) * stride + count * es, err) != 0) return -1;
    uint32_t pat = 0;
    memcpy(&pat, pattern, es); /* little-endian: the low bytes */
    if (helper_rc(s->count_equal(s->stream, (const void *)(uintptr_t)(a->dptr + off), (int)es,
                                 count, sets, sets > 1 ? stride / es : count, pat,
                                 (unsigned long long *)(uintptr_t)s->counters),
                  "poison", err) != 0)
        return -1;
    return read_counters(s, n, first, err);
}

static int cuda_count_changed(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, int dist,
                              size_t count, uint64_t seed, uint64_t forced, size_t *n, kv_fail *err)
{
    cu_state *s = b->state;
    if (kv_arena_check(a, off, count * dtype_bytes(dt), err) != 0) return -1;
    if (helper_rc(s->count_changed(s->stream, (const void *)(uintptr_t)(a->dptr + off), (int)dt,
                                   dist, count, seed, forced,
                                   (unsigned long long *)(uintptr_t)s->counters),
                  "input check", err) != 0)
        return -1;
    return read_counters(s, n, NULL, err);
}

static int cuda_count_diff(kv_jdev *b, kv_arena *a, size_t off, kv_arena *c, size_t coff,
                           size_t esize, size_t count, size_t *n, size_t *first, kv_fail *err)
{
    cu_state *s = b->state;
    if (kv_arena_check(a, off, count * esize, err) != 0 ||
        kv_arena_check(c, coff, count * esize, err) != 0)
        return -1;
    if (helper_rc(s->count_diff(s->stream, (const void *)(uintptr_t)(a->dptr + off),
                                (const void *)(uintptr_t)(c->dptr + coff), (int)esize, count,
                                (unsigned long long *)(uintptr_t)s->counters),
                  "output comparison", err) != 0)
        return -1;
    return read_counters(s, n, first, err);
}

static int cuda_copy(kv_jdev *b, kv_arena *a, size_t off, kv_arena *c, size_t coff, size_t bytes,
                     kv_fail *err)
{
    cu_state *s = b->state;
    if (kv_arena_check(a, off, bytes, err) != 0 || kv_arena_check(c, coff, bytes, err) != 0)
        return -1;
    CHECK(s->cu.MemcpyDtoDAsync(c->dptr + coff, a->dptr + off, bytes, s->stream),
          "cuMemcpyDtoDAsync");
    return 0;
}

static int cuda_compare(kv_jdev *b, kv_arena *a, size_t off, kv_arena *c, size_t coff, kv_dtype dt,
                        size_t count, const double *ref, const double *scale, kv_tolerance tol,
                        size_t *differ, size_t *first, kv_fail *err)
{
    cu_state *s = b->state;
    size_t bytes = count * dtype_bytes(dt);
    if (kv_arena_check(a, off, bytes, err) != 0 || kv_arena_check(c, coff, bytes, err) != 0)
        return -1;
    if (helper_rc(s->compare(s->stream, (const void *)(uintptr_t)(a->dptr + off),
                             (const void *)(uintptr_t)(c->dptr + coff), (int)dt, ref, scale, count,
                             tol.atol, tol.rtol, tol.stol,
                             (unsigned long long *)(uintptr_t)s->counters),
                  "run comparison", err) != 0)
        return -1;
    return read_counters(s, differ, first, err);
}

static int cuda_count_spans(kv_jdev *b, kv_arena *a, const size_t *off, const size_t *len, int n,
                            unsigned char byte, size_t *bad, size_t *first, kv_fail *err)
{
    cu_state *s = b->state;
    unsigned long long at[KVJ_MAX_SPANS], bytes[KVJ_MAX_SPANS];
    if (n > KVJ_MAX_SPANS) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "%d canary spans (at most %d)", n, KVJ_MAX_SPANS);
        return -1;
    }
    size_t which[KVJ_MAX_SPANS];
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!len[i]) continue;
        if (kv_arena_check(a, off[i], len[i], err) != 0) return -1;
        at[k] = a->dptr + off[i];
        bytes[k] = len[i];
        which[k++] = (size_t)i;
    }
    if (helper_rc(s->count_spans(s->stream, at, bytes, k, byte,
                                 (unsigned long long *)(uintptr_t)s->counters),
                  "canary", err) != 0)
        return -1;
    size_t span = 0;
    if (read_counters(s, bad, &span, err) != 0) return -1;
    *first = *bad && span < (size_t)k ? which[span] : 0;
    return 0;
}

static int cuda_check(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, size_t count,
                      const double *ref, const double *scale, const void *poison, kv_tolerance tol,
                      kv_check *out, kv_fail *err)
{
    cu_state *s = b->state;
    size_t es = dtype_bytes(dt);
    if (kv_arena_check(a, off, count * es, err) != 0) return -1;
    uint32_t pat = 0;
    if (poison) memcpy(&pat, poison, es); /* little-endian: the low bytes */
    int nparts = 0;
    if (helper_rc(s->check(s->stream, (const void *)(uintptr_t)(a->dptr + off), (int)dt, ref, scale,
                           count, pat, poison != NULL, tol.atol, tol.rtol, tol.stol,
                           (kvj_part *)(uintptr_t)s->parts, &nparts),
                  "output check", err) != 0)
        return -1;
    kvj_part parts[KVJ_MAX_PARTS];
    CHECK(s->cu.MemcpyDtoHAsync(parts, s->parts, (size_t)nparts * sizeof(kvj_part), s->stream),
          "cuMemcpyDtoH");
    CHECK(s->cu.StreamSynchronize(s->stream), "the judge's output check");
    kv_check_from_parts(parts, (size_t)nparts, count, out);
    return 0;
}

json_t *kv_cuda_devices(char **err)
{
    kv_cu cu;
    if (kv_cu_load(&cu, err) != 0) return NULL;
    int count = 0, version = 0;
    CUresult rc = cu.Init(0);
    if (rc == 0) rc = cu.DeviceGetCount(&count);
    if (rc != 0) {
        *err =
            kv_asprintf("no CUDA device: cuInit/cuDeviceGetCount: %s", kv_cu_error_name(&cu, rc));
        return NULL;
    }
    cu.DriverGetVersion(&version);
    char cuda[16];
    snprintf(cuda, sizeof cuda, "%d.%d", version / 1000, version % 1000 / 10);
    const char *driver = kv_nvml_driver_version();
    json_t *list = json_array();
    for (int i = 0; i < count; i++) {
        CUdevice d;
        if (cu.DeviceGet(&d, i) != 0) continue;
        char name[256] = "", bus[64] = "", arch[16];
        int major = 0, minor = 0, sms = 0;
        size_t mem = 0;
        cu.DeviceGetName(name, sizeof name, d);
        cu.DeviceGetPCIBusId(bus, sizeof bus, d);
        cu.DeviceTotalMem(&mem, d);
        cu.DeviceGetAttribute(&major, ATTR_CC_MAJOR, d);
        cu.DeviceGetAttribute(&minor, ATTR_CC_MINOR, d);
        cu.DeviceGetAttribute(&sms, ATTR_SM_COUNT, d);
        snprintf(arch, sizeof arch, "sm_%d%d%s", major, minor, major >= 9 ? "a" : "");
        json_array_append_new(list, json_pack("{s:i,s:s,s:s,s:s,s:i,s:I,s:s,s:s?}", "index", i,
                                              "name", name, "arch", arch, "pci_bus", bus,
                                              "sm_count", sms, "memory_bytes", (json_int_t)mem,
                                              "cuda_driver", cuda, "driver", driver));
    }
    return list;
}

kv_jdev *kv_jdev_cuda_new(void)
{
    kv_jdev *b = kv_calloc(1, sizeof *b);
    b->state = kv_calloc(1, sizeof(cu_state));
    b->align = 256;
    b->margin = 64u * 1024u;
    b->open = cuda_open;
    b->measure = cuda_measure;
    b->close = cuda_close;
    b->arena_new = cuda_arena_new;
    b->arena_free = cuda_arena_free;
    b->write = cuda_write;
    b->read = cuda_read;
    b->fill = cuda_fill;
    b->sync = cuda_sync;
    b->ptr = cuda_ptr;
    b->launch_local = cuda_launch_local;
    b->flush = cuda_flush;
    b->mark = cuda_mark;
    b->elapsed = cuda_elapsed;
    b->telemetry = cuda_telemetry;
    b->device_errors = cuda_device_errors;
    b->energy = cuda_energy;
    b->needs_reset = cuda_needs_reset;
    b->gen = cuda_gen;
    b->count_poison = cuda_count_poison;
    b->count_changed = cuda_count_changed;
    b->count_diff = cuda_count_diff;
    b->copy = cuda_copy;
    b->check = cuda_check;
    b->compare = cuda_compare;
    b->count_spans = cuda_count_spans;
    return b;
}

/* ---- the runner's half ---- */

typedef struct cu_rarena {
    uint32_t id;
    CUdeviceptr base;
    uint64_t bytes;
    uint32_t parent; /* a part of arena PARENT: nothing of its own to close */
} cu_rarena;

typedef struct cu_rstate {
    cu_state c;
    cu_rarena arenas[64];
    void *so;
    kv_launch_fn fn;
    /* The graph of the last captured block, and which block it is. */
    void *exec;
    uint32_t exec_arena, exec_ncalls, exec_first;
} cu_rstate;

kv_reason kv_cuda_runtime_error_code(int rc)
{
    switch (rc) {
    case 2:
        return KV_R_OUT_OF_MEMORY; /* cudaErrorMemoryAllocation */
    case 9:
        return KV_R_INVALID_CONFIGURATION; /* cudaErrorInvalidConfiguration */
    case 700:
        return KV_R_ILLEGAL_ADDRESS; /* cudaErrorIllegalAddress */
    case 701:
        return KV_R_OUT_OF_RESOURCES; /* cudaErrorLaunchOutOfResources */
    case 702:
        return KV_R_LAUNCH_TIMEOUT; /* cudaErrorLaunchTimeout */
    case 716:
        return KV_R_MISALIGNED_ADDRESS; /* cudaErrorMisalignedAddress */
    default:
        return KV_R_LAUNCH_FAILED;
    }
}

/* The minor number of the GPU named NAME ("GPU-<uuid>"), from the driver's
 * /proc/driver/nvidia/gpus/BUS/information ("GPU UUID:", "Device Minor:");
 * -1 when no entry names it. */
static int device_minor(const char *name)
{
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (!d) return -1;
    int minor = -1;
    struct dirent *e;
    while (minor < 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[512], line[256], uuid[128] = "";
        snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        int m = -1;
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, "GPU UUID: %127s", uuid) == 1) continue;
            sscanf(line, "Device Minor: %d", &m);
        }
        fclose(f);
        if (strcmp(uuid, name) == 0) minor = m;
    }
    closedir(d);
    return minor;
}

/* The /dev/nvidiaN nodes of every GPU but the one of minor OWN (malloc'd,
 * NULL-terminated). */
static char **other_gpu_nodes(int own)
{
    size_t n = 0, cap = 8;
    char **out = kv_calloc(cap, sizeof *out);
    DIR *d = opendir("/dev");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int minor, end = 0;
        if (sscanf(e->d_name, "nvidia%d%n", &minor, &end) != 1 || e->d_name[end] != '\0' ||
            minor == own)
            continue;
        if (n + 2 > cap) out = kv_realloc(out, (cap *= 2) * sizeof *out);
        out[n++] = kv_asprintf("/dev/%s", e->d_name);
        out[n] = NULL;
    }
    if (d) closedir(d);
    return out;
}

static int cuda_ropen(kv_rdev *b, kv_fail *err)
{
    cu_rstate *r = kv_calloc(1, sizeof *r);
    b->state = r;
    if (open_context(&r->c, b->index, err) != 0) return -1;
    if (!b->confined) return 0;
    /* The judge narrowed CUDA_VISIBLE_DEVICES to its own device: a process
     * that still sees another could use it (more hardware than the one
     * timed) or slow the evaluation timed there. */
    const char *want = getenv(b->visible_env);
    char name[64] = "";
    int count = 0;
    r->c.cu.DeviceGetCount(&count);
    if (count != 1 || visible_name(&r->c.cu, r->c.dev, name) != 0 || !want ||
        strcmp(name, want) != 0) {
        kv_fail_set(err, KV_R_HARNESS_ERROR,
                    "the candidate's process should see one CUDA device, "
                    "%s, and sees %d (device 0: %s)",
                    want ? want : "?", count, *name ? name : "unnamed");
        return -1;
    }
    /* A process the candidate starts could widen the variable again: the
     * other GPUs' nodes are shut to it too, where the driver says which is
     * this one's. */
    int minor = device_minor(name);
    if (minor >= 0) b->shut = other_gpu_nodes(minor);
    return 0;
}

static int cuda_map(kv_rdev *b, const kv_rmsg_map *m, int fd, kv_fail *err)
{
    cu_rstate *r = b->state;
    cu_state *s = &r->c;
    if (fd >= 0) close(fd);
    cu_rarena *slot = NULL;
    for (int i = 0; i < 64 && !slot; i++)
        if (!r->arenas[i].base) slot = &r->arenas[i];
    if (!slot) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "too many arenas");
        return -1;
    }
    if (m->parent) { /* a part of an arena mapped before: no handle to open */
        const cu_rarena *in = NULL;
        for (int i = 0; i < 64 && !in; i++)
            if (r->arenas[i].base && r->arenas[i].id == m->parent && !r->arenas[i].parent)
                in = &r->arenas[i];
        if (!in || m->offset > in->bytes || m->bytes > in->bytes - m->offset) {
            kv_fail_set(err, KV_R_HARNESS_ERROR, "a part outside the arena it names");
            return -1;
        }
        *slot = (cu_rarena){
            .id = m->arena, .base = in->base + m->offset, .bytes = m->bytes, .parent = m->parent};
        return 0;
    }
    CUipcMemHandle h;
    memcpy(h.reserved, m->ipc, sizeof h.reserved);
    CUdeviceptr p = 0;
    CHECK(s->cu.IpcOpenMemHandle(&p, h, 1 /* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS */),
          "cuIpcOpenMemHandle");
    *slot = (cu_rarena){.id = m->arena, .base = p, .bytes = m->bytes};
    return 0;
}

static void cuda_unmap(kv_rdev *b, uint32_t id)
{
    cu_rstate *r = b->state;
    /* The arena ID and the parts of it. */
    for (int i = 0; i < 64; i++) {
        cu_rarena *a = &r->arenas[i];
        if (!a->base || (a->id != id && a->parent != id)) continue;
        if (r->exec && r->exec_arena == a->id) { /* its pointers are about to go */
            r->c.cu.GraphExecDestroy(r->exec);
            r->exec = NULL;
        }
        if (!a->parent) r->c.cu.IpcCloseMemHandle(a->base);
        memset(a, 0, sizeof *a);
    }
}

static int cuda_load(kv_rdev *b, const char *lib, const char *device_src, char **log, kv_fail *err)
{
    (void)device_src;
    cu_rstate *r = b->state;
    *log = NULL;
    r->c.cu.CtxSetCurrent(r->c.ctx);
    return kv_rdev_load_entry(lib, &r->so, &r->fn,
                              "the candidate does not export extern \"C\" kv_launch", err);
}

/* What the recording thread does and finds. */
typedef struct capture_job {
    cu_rstate *r;
    const kv_rmsg_run *m;
    CUdeviceptr base;
    int failed; /* the call whose kv_launch failed, or -1 */
    CUresult begin, end;
    void *graph;
} capture_job;

static void *capture_calls(void *arg)
{
    capture_job *c = arg;
    cu_state *s = &c->r->c;
    c->failed = -1;
    c->begin = s->cu.CtxSetCurrent(s->ctx);
    if (c->begin == 0)
        c->begin = s->cu.StreamBeginCapture(s->stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */);
    if (c->begin != 0) return NULL;
    for (uint32_t i = 0; i < c->m->ncalls && c->failed < 0; i++) {
        kv_launch_args a;
        kv_rrun_args(c->m, (unsigned char *)(uintptr_t)c->base, i, &a);
        a.stream = s->stream;
        a.context = s->ctx;
        if (c->r->fn(&a) != 0) c->failed = (int)i;
    }
    c->end = s->cu.StreamEndCapture(s->stream, &c->graph);
    return NULL;
}

/* Records block M's calls into a graph on the runner's stream (nothing
 * runs) and keeps it for KV_RUN_REPLAY. The capture is its thread's own (a
 * synchronising call in kv_launch ends it), and the thread is one of its
 * own, so that what a failed recording leaves in the candidate's runtime
 * (its last error, kept per thread) is not found by the calls timed as
 * launches after it. Calls that cannot be recorded get
 * KV_R_CAPTURE_UNSUPPORTED, and nothing is kept. */
static int capture_block(cu_rstate *r, const kv_rmsg_run *m, CUdeviceptr base, kv_rmsg_reply *reply)
{
    cu_state *s = &r->c;
    if (r->exec) s->cu.GraphExecDestroy(r->exec);
    r->exec = NULL;
    capture_job c = {.r = r, .m = m, .base = base};
    pthread_t t;
    if (pthread_create(&t, NULL, capture_calls, &c) != 0)
        return kv_reply_fail(reply, 0, KV_R_CAPTURE_UNSUPPORTED,
                             "no thread to record the calls in");
    pthread_join(t, NULL);
    if (c.begin != 0)
        return kv_reply_fail(reply, 0, KV_R_CAPTURE_UNSUPPORTED, "cuStreamBeginCapture failed");
    if (c.failed < 0 && c.end == 0 && c.graph && s->cu.GraphInstantiate(&r->exec, c.graph, 0) != 0)
        r->exec = NULL;
    if (c.graph) s->cu.GraphDestroy(c.graph);
    if (!r->exec) {
        char d[160];
        snprintf(d, sizeof d, "%s",
                 c.failed >= 0 ? "kv_launch failed while its calls were recorded"
                 : c.end != 0  ? "the recording was invalidated"
                               : "the recorded graph did not instantiate");
        return kv_reply_fail(reply, c.failed >= 0 ? (uint32_t)c.failed : 0,
                             KV_R_CAPTURE_UNSUPPORTED, "%s", d);
    }
    r->exec_arena = m->arena;
    r->exec_ncalls = m->ncalls;
    r->exec_first = m->first_set;
    return 0;
}

static int cuda_run(kv_rdev *b, const kv_rmsg_run *m, kv_rmsg_reply *reply)
{
    cu_rstate *r = b->state;
    cu_state *s = &r->c;
    CUdeviceptr base = 0;
    for (int i = 0; i < 64; i++)
        if (r->arenas[i].base && r->arenas[i].id == m->arena) base = r->arenas[i].base;
    int launch = m->ncalls > 0 && !(m->flags & KV_RUN_NO_LAUNCH);
    if (!base || (launch && !r->fn))
        return kv_reply_fail(reply, 0, KV_R_HARNESS_ERROR, "run before map or load");
    if (m->flags & KV_RUN_CAPTURE) return capture_block(r, m, base, reply);
    if (m->flags & KV_RUN_REPLAY) {
        if (!r->exec || r->exec_arena != m->arena || r->exec_ncalls != m->ncalls ||
            r->exec_first != m->first_set)
            return kv_reply_fail(reply, 0, KV_R_HARNESS_ERROR,
                                 "a replay of a block never captured");
        CUresult lr = s->cu.GraphLaunch(r->exec, s->stream);
        if (lr != 0)
            return kv_reply_fail(reply, 0, kv_cu_error_code(&s->cu, lr), "the graph's launch: %s",
                                 kv_cu_error_name(&s->cu, lr));
    }
    if ((m->flags & KV_RUN_TOUCH) && !launch) {
        uint64_t at = 0;
        for (uint32_t t = 0; t < m->num_tensors && t < KV_MAX_TENSORS; t++)
            if (m->is_output[t]) {
                at = m->offset[t];
                break;
            }
        CUresult tr = s->cu.MemsetD8Async(base + at, 0, 1, s->stream);
        if (tr != 0)
            return kv_reply_fail(reply, 0, kv_cu_error_code(&s->cu, tr), "the calibration's touch");
    }
    for (uint32_t i = 0; i < m->ncalls && !(m->flags & (KV_RUN_NO_LAUNCH | KV_RUN_REPLAY)); i++) {
        kv_launch_args a;
        kv_rrun_args(m, (unsigned char *)(uintptr_t)base, i, &a);
        a.stream = s->stream;
        a.context = s->ctx;
        int rc = r->fn(&a);
        if (rc != 0) {
            const kv_reason code = kv_cuda_runtime_error_code(rc);
            return kv_reply_fail(reply, i, code, "kv_launch returned %s%d",
                                 code != KV_R_LAUNCH_FAILED ? "CUDA runtime error " : "", rc);
        }
    }
    /* Everything of this context, every stream: the block is done when the
     * device is idle, not when the launches are queued. */
    CUresult rc = s->cu.CtxSynchronize();
    if (rc != 0)
        return kv_reply_fail(reply, m->ncalls ? m->ncalls - 1 : 0, kv_cu_error_code(&s->cu, rc),
                             "the kernel (device synchronisation): %s",
                             kv_cu_error_name(&s->cu, rc));
    return 0;
}

kv_rdev *kv_rdev_cuda_new(void)
{
    kv_rdev *b = kv_calloc(1, sizeof *b);
    b->open = cuda_ropen;
    b->map = cuda_map;
    b->unmap = cuda_unmap;
    b->load = cuda_load;
    b->run = cuda_run;
    return b;
}
