/* The cpu backend. Arenas are memfds: the judge maps them to fill and read
 * them, the runner maps the same pages to run the candidate on them, with
 * the page after each tensor mapped PROT_NONE (an overrun faults and is
 * reported as out of bounds) and inputs read-only. Every other byte of a
 * tensor's neighbourhood is a canary the judge checks. Candidates are C
 * shared objects called with host pointers; the judge's clock is the
 * monotonic clock around a block. */
#define _GNU_SOURCE
#include "kernel/backend.h"
#include "kernel/memfd_arena.h"
#include "kernel/runner.h"
#include "util/buf.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the judge's half ---- */

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

static int cpu_open(kv_jdev *b, char **err)
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

static void cpu_close(kv_jdev *b)
{
    (void)b;
}

int kv_memfd_arena_new(size_t bytes, unsigned char canary, kv_arena *out, char **err)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    int fd = memfd_create("kevolve-arena", MFD_CLOEXEC);
    if (fd < 0) {
        *err = kv_asprintf("harness_error: memfd_create: %s", strerror(errno));
        return -1;
    }
    if (ftruncate(fd, (off_t)bytes) != 0) {
        *err = kv_asprintf("out_of_memory: an arena of %zu bytes: %s", bytes, strerror(errno));
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        *err =
            kv_asprintf("out_of_memory: mapping an arena of %zu bytes: %s", bytes, strerror(errno));
        close(fd);
        return -1;
    }
    memset(p, canary, bytes);
    out->fd = fd;
    out->host = p;
    out->bytes = bytes;
    return 0;
}

void kv_memfd_arena_free(kv_arena *a)
{
    if (a->host) munmap(a->host, a->bytes);
    if (a->fd >= 0) close(a->fd);
    memset(a, 0, sizeof *a);
    a->fd = -1;
}

int kv_memfd_write(kv_arena *a, size_t off, const void *src, size_t n, char **err)
{
    if (off > a->bytes || n > a->bytes - off) {
        *err = kv_asprintf("harness_error: write of %zu bytes at %zu past an arena of %zu", n, off,
                           a->bytes);
        return -1;
    }
    memcpy(a->host + off, src, n);
    return 0;
}

int kv_memfd_read(kv_arena *a, size_t off, void *dst, size_t n, char **err)
{
    if (off > a->bytes || n > a->bytes - off) {
        *err = kv_asprintf("harness_error: read of %zu bytes at %zu past an arena of %zu", n, off,
                           a->bytes);
        return -1;
    }
    memcpy(dst, a->host + off, n);
    return 0;
}

int kv_memfd_fill(kv_arena *a, size_t off, size_t count, const void *pattern, size_t esize,
                  char **err)
{
    if (off > a->bytes || count > (a->bytes - off) / esize) {
        *err = kv_asprintf("harness_error: fill past an arena");
        return -1;
    }
    unsigned char *p = a->host + off;
    for (size_t i = 0; i < count; i++)
        memcpy(p + i * esize, pattern, esize);
    return 0;
}

static int cpu_arena_new(kv_jdev *b, size_t bytes, unsigned char canary, kv_arena *out, char **err)
{
    (void)b;
    return kv_memfd_arena_new(bytes, canary, out, err);
}

static void cpu_arena_free(kv_jdev *b, kv_arena *a)
{
    (void)b;
    kv_memfd_arena_free(a);
}

static int cpu_write(kv_jdev *b, kv_arena *a, size_t off, const void *src, size_t n, char **err)
{
    (void)b;
    return kv_memfd_write(a, off, src, n, err);
}

static int cpu_read(kv_jdev *b, kv_arena *a, size_t off, void *dst, size_t n, char **err)
{
    (void)b;
    return kv_memfd_read(a, off, dst, n, err);
}

static int cpu_fill(kv_jdev *b, kv_arena *a, size_t off, size_t count, const void *pattern,
                    size_t esize, char **err)
{
    (void)b;
    return kv_memfd_fill(a, off, count, pattern, esize, err);
}

static void *cpu_ptr(kv_jdev *b, kv_arena *a, size_t off)
{
    (void)b;
    return a->host + off;
}

static int cpu_sync(kv_jdev *b, char **err)
{
    (void)b;
    (void)err;
    return 0;
}

kv_jdev *kv_jdev_cpu_new(void)
{
    kv_jdev *b = kv_calloc(1, sizeof *b);
    b->kind = KV_BACKEND_CPU;
    b->name = "cpu";
    b->align = 64;
    b->margin = 64;
    b->page_guards = 1;
    b->open = cpu_open;
    b->close = cpu_close;
    b->arena_new = cpu_arena_new;
    b->arena_free = cpu_arena_free;
    b->write = cpu_write;
    b->read = cpu_read;
    b->fill = cpu_fill;
    b->sync = cpu_sync;
    b->ptr = cpu_ptr;
    return b;
}

/* ---- the runner's half ---- */

typedef struct rarena {
    uint32_t id;
    unsigned char *base;
    size_t bytes;
} rarena;

typedef struct cpu_rstate {
    rarena arenas[64];
    void *so;
    kv_launch_fn fn;
} cpu_rstate;

static rarena *find_arena(cpu_rstate *s, uint32_t id)
{
    for (int i = 0; i < 64; i++)
        if (s->arenas[i].base && s->arenas[i].id == id) return &s->arenas[i];
    return NULL;
}

static int cpu_ropen(kv_rdev *b, char **err)
{
    (void)err;
    b->state = kv_calloc(1, sizeof(cpu_rstate));
    return 0;
}

unsigned char *kv_memfd_map_guarded(const kv_rmsg_map *m, int fd, char **err)
{
    void *p = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        *err = kv_asprintf("harness_error: mapping arena %u: %s", m->arena, strerror(errno));
        return NULL;
    }
    for (uint32_t g = 0; g < m->num_guards && g < KV_RMAX_GUARDS; g++) {
        const kv_rguard *r = &m->guards[g];
        if (r->offset > m->bytes || r->length > m->bytes - r->offset) continue;
        int prot = r->prot == 1 ? PROT_READ : PROT_NONE;
        if (mprotect((unsigned char *)p + r->offset, r->length, prot) != 0) {
            *err = kv_asprintf("harness_error: protecting arena %u: %s", m->arena, strerror(errno));
            munmap(p, m->bytes);
            return NULL;
        }
        kv_runner_guard_add((unsigned char *)p + r->offset, r->length, r->tensor, r->prot == 1);
    }
    return p;
}

static int cpu_map(kv_rdev *b, const kv_rmsg_map *m, int fd, char **err)
{
    cpu_rstate *s = b->state;
    rarena *slot = NULL;
    for (int i = 0; i < 64 && !slot; i++)
        if (!s->arenas[i].base) slot = &s->arenas[i];
    if (!slot || fd < 0) {
        *err = kv_strdup(fd < 0 ? "harness_error: an arena came without its descriptor"
                                : "harness_error: too many arenas");
        if (fd >= 0) close(fd);
        return -1;
    }
    unsigned char *p = kv_memfd_map_guarded(m, fd, err);
    close(fd);
    if (!p) return -1;
    slot->id = m->arena;
    slot->base = p;
    slot->bytes = m->bytes;
    return 0;
}

static void cpu_unmap(kv_rdev *b, uint32_t id)
{
    cpu_rstate *s = b->state;
    rarena *a = find_arena(s, id);
    if (!a) return;
    munmap(a->base, a->bytes);
    memset(a, 0, sizeof *a);
}

static int cpu_load(kv_rdev *b, const char *lib, const char *device_src, char **log, char **err)
{
    (void)device_src;
    cpu_rstate *s = b->state;
    *log = NULL;
    s->so = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!s->so) {
        *err = kv_asprintf("load_error: %s", dlerror());
        return -1;
    }
    s->fn = (kv_launch_fn)(uintptr_t)dlsym(s->so, "kv_launch");
    if (!s->fn) {
        *err = kv_strdup("missing_entry: the candidate does not export kv_launch");
        return -1;
    }
    return 0;
}

void kv_rrun_args(const kv_rmsg_run *r, unsigned char *base, uint32_t i, kv_launch_args *a)
{
    memset(a, 0, sizeof *a);
    a->abi_version = KV_TASK_ABI_VERSION;
    uint32_t nt = r->num_tensors < KV_MAX_TENSORS ? r->num_tensors : KV_MAX_TENSORS;
    uint32_t ns = r->num_syms < KV_MAX_SYMS ? r->num_syms : KV_MAX_SYMS;
    uint64_t set = r->num_sets ? (r->first_set + i) % r->num_sets : 0;
    a->num_tensors = nt;
    for (uint32_t t = 0; t < nt; t++)
        a->tensors[t] = base + r->offset[t] + set * r->stride[t];
    a->num_syms = ns;
    for (uint32_t k = 0; k < ns; k++)
        a->syms[k] = r->syms[k];
}

static int cpu_run(kv_rdev *b, const kv_rmsg_run *r, kv_rmsg_reply *reply)
{
    cpu_rstate *s = b->state;
    rarena *ar = find_arena(s, r->arena);
    int launch = r->ncalls > 0 && !(r->flags & KV_RUN_NO_LAUNCH);
    if (!ar || (launch && !s->fn)) {
        snprintf(reply->code, sizeof reply->code, "harness_error");
        snprintf(reply->detail, sizeof reply->detail, "run before map or load");
        return -1;
    }
    for (uint32_t i = 0; i < r->ncalls && !(r->flags & KV_RUN_NO_LAUNCH); i++) {
        kv_launch_args a;
        kv_rrun_args(r, ar->base, i, &a);
        int rc = s->fn(&a);
        if (rc != 0) {
            reply->call = i;
            snprintf(reply->code, sizeof reply->code, "launch_failed");
            snprintf(reply->detail, sizeof reply->detail, "kv_launch returned %d", rc);
            return -1;
        }
    }
    return 0;
}

kv_rdev *kv_rdev_cpu_new(void)
{
    kv_rdev *b = kv_calloc(1, sizeof *b);
    b->kind = KV_BACKEND_CPU;
    b->open = cpu_ropen;
    b->map = cpu_map;
    b->unmap = cpu_unmap;
    b->load = cpu_load;
    b->run = cpu_run;
    return b;
}
