/* The cpu backend. Arenas are memfds: the judge maps them to fill and read
 * them, the runner maps the same pages to run the candidate on them, with
 * the page after each tensor mapped PROT_NONE (an overrun faults and is
 * reported as out of bounds) and inputs read-only. Every other byte of a
 * tensor's neighbourhood is a canary the judge checks. Candidates are C
 * shared objects called with host pointers; the judge's clock is the
 * monotonic clock around a block. */
#define _GNU_SOURCE
#include "backend/backend.h"
#include "runner/rdev.h"
#include "backend/host_judge_ops.h"
#include "backend/memfd_arena.h"
#include "runner/runner.h"
#include "util/buf.h"

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

static const char *cpu_model(char *buf, size_t cap);

static int cpu_open(kv_jdev *b, kv_fail *err)
{
    if (b->index != 0) {
        kv_fail_set(err, KV_R_NO_DEVICE, "no CPU device %d: the host is device 0", b->index);
        return -1;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    b->cache_bytes = llc_bytes();
    char model[256];
    b->device = json_pack("{s:s,s:i,s:I,s:I}", "name", cpu_model(model, sizeof model), "index", 0,
                          "cpus", (json_int_t)ncpu, "cache_bytes", (json_int_t)b->cache_bytes);
    return 0;
}

static int cpu_measure(kv_jdev *b, kv_fail *err)
{
    (void)err;
    b->bandwidth_gbps = measure_memcpy_gbps();
    /* Threads may each stream at the single-thread rate at best. */
    b->ceiling_gbps =
        b->bandwidth_gbps * (double)json_integer_value(json_object_get(b->device, "cpus"));
    json_object_set_new(b->device, "memcpy_gbps", json_real(b->bandwidth_gbps));
    return 0;
}

static void cpu_close(kv_jdev *b)
{
    (void)b;
}

kv_jdev *kv_jdev_cpu_new(void)
{
    kv_jdev *b = kv_calloc(1, sizeof *b);
    kv_memfd_jdev_ops(b);
    kv_host_judge_ops(b);
    b->page_guards = 1;
    b->open = cpu_open;
    b->measure = cpu_measure;
    b->close = cpu_close;
    return b;
}

/* The model name of the host's processor, from /proc/cpuinfo, into BUF. */
static const char *cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "host cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return buf;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) continue;
        v += 1 + strspn(v + 1, " \t");
        snprintf(buf, cap, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    fclose(f);
    return buf;
}

json_t *kv_cpu_devices(char **err)
{
    (void)err;
    char model[256];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    /* The machine is one device: every core works on one candidate's calls. */
    return json_pack("[{s:i,s:s,s:I,s:I,s:I}]", "index", 0, "name", cpu_model(model, sizeof model),
                     "cpus", (json_int_t)(ncpu > 0 ? ncpu : 1), "memory_bytes",
                     (json_int_t)(pages > 0 && page > 0 ? pages * page : 0), "cache_bytes",
                     (json_int_t)llc_bytes());
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

static int cpu_ropen(kv_rdev *b, kv_fail *err)
{
    (void)err;
    b->state = kv_calloc(1, sizeof(cpu_rstate));
    return 0;
}

static int cpu_map(kv_rdev *b, const kv_rmsg_map *m, int fd, kv_fail *err)
{
    cpu_rstate *s = b->state;
    rarena *slot = NULL;
    for (int i = 0; i < 64 && !slot; i++)
        if (!s->arenas[i].base) slot = &s->arenas[i];
    if (!slot || fd < 0) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "%s",
                    fd < 0 ? "an arena came without its descriptor" : "too many arenas");
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

static int cpu_load(kv_rdev *b, const char *lib, const char *device_src, char **log, kv_fail *err)
{
    (void)device_src;
    cpu_rstate *s = b->state;
    *log = NULL;
    return kv_rdev_load_entry(lib, &s->so, &s->fn, "the candidate does not export kv_launch", err);
}

static int cpu_run(kv_rdev *b, const kv_rmsg_run *r, kv_rmsg_reply *reply)
{
    cpu_rstate *s = b->state;
    rarena *ar = find_arena(s, r->arena);
    int launch = r->ncalls > 0 && !(r->flags & KV_RUN_NO_LAUNCH);
    if (!ar || (launch && !s->fn))
        return kv_reply_fail(reply, 0, KV_R_HARNESS_ERROR, "run before map or load");
    for (uint32_t i = 0; i < r->ncalls && !(r->flags & KV_RUN_NO_LAUNCH); i++) {
        kv_launch_args a;
        kv_rrun_args(r, ar->base, i, &a);
        int rc = s->fn(&a);
        if (rc != 0)
            return kv_reply_fail(reply, i, KV_R_LAUNCH_FAILED, "kv_launch returned %d", rc);
    }
    return 0;
}

kv_rdev *kv_rdev_cpu_new(void)
{
    kv_rdev *b = kv_calloc(1, sizeof *b);
    b->open = cpu_ropen;
    b->map = cpu_map;
    b->unmap = cpu_unmap;
    b->load = cpu_load;
    b->run = cpu_run;
    return b;
}
