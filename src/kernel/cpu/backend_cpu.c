/* The cpu backend: candidates are C shared objects called on host buffers.
 * Every buffer is 64-byte aligned, its end followed within 64 bytes by an
 * unmapped guard page (a read or write past it faults and is reported as
 * out of bounds), and every other byte of its pages is a canary checked
 * after each run. Time is the monotonic clock around the call. */
#include "kernel/backend.h"
#include "kernel/worker.h"
#include "util/buf.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CANARY 0xa5

typedef struct cpu_buf {
    unsigned char *map; /* whole mapping: canary page, data pages, guard page */
    size_t map_len;
    unsigned char *guard;
} cpu_buf;

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* Largest data cache of the machine, from sysfs (virtual machines often
 * report nonsense through sysconf), else sysconf; at most 64 MiB, since a
 * core reaches only its own complex's L3; 32 MiB when unknown. */
static size_t llc_bytes(void)
{
    size_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        unsigned long v = 0;
        char unit = 0;
        if (fscanf(f, "%lu%c", &v, &unit) >= 1) {
            size_t bytes = v * (unit == 'K' ? 1024u : unit == 'M' ? 1024u * 1024u : 1u);
            if (bytes > best) best = bytes;
        }
        fclose(f);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (best == 0 && l3 > 0) best = (size_t)l3;
#endif
    if (best == 0) best = 32u << 20;
    return best > (64u << 20) ? 64u << 20 : best;
}

/* Best of a few 32 MiB memcpy runs, counting bytes read plus written, GB/s. */
static double measure_memcpy_gbps(void)
{
    size_t n = 32u << 20;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) {
        free(a);
        free(b);
        return 10.0;
    }
    memset(a, 1, n);
    memset(b, 2, n);
    double best = 1e30;
    for (int i = 0; i < 3; i++) {
        double t0 = kv_now_s();
        memcpy(i % 2 ? a : b, i % 2 ? b : a, n);
        double t = kv_now_s() - t0;
        if (t < best) best = t;
    }
    volatile char sink = a[n / 2] + b[n / 3];
    (void)sink;
    free(a);
    free(b);
    return 2.0 * (double)n / best / 1e9;
}

static int cpu_open(kv_backend *b, char **err)
{
    (void)err;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    b->cache_bytes = llc_bytes();
    b->bandwidth_gbps = measure_memcpy_gbps();
    /* Threads may each stream at the single-thread rate at best. */
    b->ceiling_gbps = b->bandwidth_gbps * (double)ncpu;
    b->device =
        json_pack("{s:s,s:I,s:I,s:f}", "name", "host cpu", "cpus", (json_int_t)ncpu, "cache_bytes",
                  (json_int_t)b->cache_bytes, "memcpy_gbps", b->bandwidth_gbps);
    return 0;
}

static void cpu_close(kv_backend *b)
{
    (void)b;
}

static int cpu_load(kv_backend *b, const kv_compiled *c, kv_module **out, char **build_log,
                    char **err)
{
    (void)b;
    *build_log = NULL;
    void *so = dlopen(c->lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        *err = kv_asprintf("load_error: %s", dlerror());
        return -1;
    }
    kv_launch_fn fn = (kv_launch_fn)(uintptr_t)dlsym(so, "kv_launch");
    if (!fn) {
        *err = kv_strdup("missing_entry: the candidate does not export kv_launch");
        dlclose(so);
        return -1;
    }
    kv_module *m = kv_calloc(1, sizeof *m);
    m->so = so;
    m->fn = fn;
    *out = m;
    return 0;
}

static void cpu_unload(kv_backend *b, kv_module *m)
{
    (void)b;
    if (!m) return;
    dlclose(m->so);
    free(m);
}

static int cpu_alloc(kv_backend *b, size_t bytes, const char *name, kv_dbuf *out, char **err)
{
    (void)b;
    size_t ps = page_size();
    size_t data = (bytes + 63) & ~(size_t)63;
    if (data == 0) data = 64;
    size_t data_pages = (data + ps - 1) / ps * ps;
    size_t len = ps + data_pages + ps;
    unsigned char *map =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        *err = kv_asprintf("out_of_memory: mmap of %zu bytes: %s", len, strerror(errno));
        return -1;
    }
    unsigned char *guard = map + ps + data_pages;
    if (mprotect(guard, ps, PROT_NONE) != 0) {
        *err = kv_asprintf("harness_error: mprotect: %s", strerror(errno));
        munmap(map, len);
        return -1;
    }
    memset(map, CANARY, ps + data_pages);
    cpu_buf *cb = kv_malloc(sizeof *cb);
    cb->map = map;
    cb->map_len = len;
    cb->guard = guard;
    out->handle = guard - data;
    out->bytes = bytes;
    out->priv = cb;
    out->name = name;
    kv_worker_guard_add(guard, ps, name);
    return 0;
}

static void cpu_release(kv_backend *b, kv_dbuf *buf)
{
    (void)b;
    cpu_buf *cb = buf->priv;
    if (!cb) return;
    kv_worker_guard_remove(cb->guard);
    munmap(cb->map, cb->map_len);
    free(cb);
    memset(buf, 0, sizeof *buf);
}

static int cpu_write(kv_backend *b, kv_dbuf *buf, const void *src, char **err)
{
    (void)b;
    (void)err;
    memcpy(buf->handle, src, buf->bytes);
    return 0;
}

static int cpu_read(kv_backend *b, kv_dbuf *buf, void *dst, char **err)
{
    (void)b;
    (void)err;
    memcpy(dst, buf->handle, buf->bytes);
    return 0;
}

static int cpu_canary_ok(kv_backend *b, kv_dbuf *buf, char **err)
{
    (void)b;
    (void)err;
    cpu_buf *cb = buf->priv;
    unsigned char *data = buf->handle;
    for (unsigned char *p = cb->map; p < data; p++)
        if (*p != CANARY) return 0;
    for (unsigned char *p = data + buf->bytes; p < cb->guard; p++)
        if (*p != CANARY) return 0;
    return 1;
}

static int cpu_launch(kv_backend *b, kv_module *m, kv_launch_args *a, char **err)
{
    (void)b;
    a->stream = a->context = a->device = NULL;
    a->cl_kernel = NULL;
    int rc = m->fn(a);
    if (rc != 0) {
        *err = kv_asprintf("launch_failed: kv_launch returned %d", rc);
        return -1;
    }
    return 0;
}

static int cpu_sync(kv_backend *b, char **err)
{
    (void)b;
    (void)err;
    return 0;
}

static int cpu_time_launch(kv_backend *b, kv_module *m, kv_launch_args *a, double *us, char **err)
{
    double t0 = kv_now_s();
    int rc = cpu_launch(b, m, a, err);
    *us = (kv_now_s() - t0) * 1e6;
    return rc;
}

kv_backend *kv_backend_cpu_new(void)
{
    kv_backend *b = kv_calloc(1, sizeof *b);
    b->kind = KV_BACKEND_CPU;
    b->name = "cpu";
    b->open = cpu_open;
    b->close = cpu_close;
    b->load = cpu_load;
    b->unload = cpu_unload;
    b->alloc = cpu_alloc;
    b->release = cpu_release;
    b->write = cpu_write;
    b->read = cpu_read;
    b->canary_ok = cpu_canary_ok;
    b->launch = cpu_launch;
    b->sync_stream = cpu_sync;
    b->sync_device = cpu_sync;
    b->time_launch = cpu_time_launch;
    return b;
}
