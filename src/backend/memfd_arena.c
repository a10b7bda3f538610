/* Arenas in shared memory (see memfd_arena.h). */
#define _GNU_SOURCE
#include "backend/memfd_arena.h"
#include "runner/runner.h"
#include "util/buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int kv_memfd_arena_new(size_t bytes, unsigned char canary, kv_arena *out, kv_fail *err)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    int fd = memfd_create("kevolve-arena", MFD_CLOEXEC);
    if (fd < 0) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "memfd_create: %s", strerror(errno));
        return -1;
    }
    if (ftruncate(fd, (off_t)bytes) != 0) {
        kv_fail_set(err, KV_R_OUT_OF_MEMORY, "an arena of %zu bytes: %s", bytes, strerror(errno));
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        kv_fail_set(err, KV_R_OUT_OF_MEMORY, "mapping an arena of %zu bytes: %s", bytes,
                    strerror(errno));
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

int kv_memfd_write(kv_arena *a, size_t off, const void *src, size_t n, kv_fail *err)
{
    if (off > a->bytes || n > a->bytes - off) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "write of %zu bytes at %zu past an arena of %zu", n,
                    off, a->bytes);
        return -1;
    }
    memcpy(a->host + off, src, n);
    return 0;
}

int kv_memfd_read(kv_arena *a, size_t off, void *dst, size_t n, kv_fail *err)
{
    if (off > a->bytes || n > a->bytes - off) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "read of %zu bytes at %zu past an arena of %zu", n,
                    off, a->bytes);
        return -1;
    }
    memcpy(dst, a->host + off, n);
    return 0;
}

int kv_memfd_fill(kv_arena *a, size_t off, size_t count, const void *pattern, size_t esize,
                  kv_fail *err)
{
    if (off > a->bytes || count > (a->bytes - off) / esize) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "fill past an arena");
        return -1;
    }
    unsigned char *p = a->host + off;
    for (size_t i = 0; i < count; i++)
        memcpy(p + i * esize, pattern, esize);
    return 0;
}

/* ---- the same as a judge's half: the host holds the memory ---- */

static int host_arena_new(kv_jdev *b, size_t bytes, unsigned char canary, kv_arena *out,
                          kv_fail *err)
{
    (void)b;
    return kv_memfd_arena_new(bytes, canary, out, err);
}

static void host_arena_free(kv_jdev *b, kv_arena *a)
{
    (void)b;
    kv_memfd_arena_free(a);
}

static int host_write(kv_jdev *b, kv_arena *a, size_t off, const void *src, size_t n, kv_fail *err)
{
    (void)b;
    return kv_memfd_write(a, off, src, n, err);
}

static int host_read(kv_jdev *b, kv_arena *a, size_t off, void *dst, size_t n, kv_fail *err)
{
    (void)b;
    return kv_memfd_read(a, off, dst, n, err);
}

static int host_fill(kv_jdev *b, kv_arena *a, size_t off, size_t count, const void *pattern,
                     size_t esize, kv_fail *err)
{
    (void)b;
    return kv_memfd_fill(a, off, count, pattern, esize, err);
}

static void *host_ptr(kv_jdev *b, kv_arena *a, size_t off)
{
    (void)b;
    return a->host + off;
}

static int host_sync(kv_jdev *b, kv_fail *err)
{
    (void)b;
    (void)err;
    return 0;
}

void kv_memfd_jdev_ops(kv_jdev *b)
{
    b->align = 64;
    b->margin = 64;
    b->arena_new = host_arena_new;
    b->arena_free = host_arena_free;
    b->write = host_write;
    b->read = host_read;
    b->fill = host_fill;
    b->sync = host_sync;
    b->ptr = host_ptr;
}

/* ---- the runner's side ---- */

unsigned char *kv_memfd_map_guarded(const kv_rmsg_map *m, int fd, kv_fail *err)
{
    void *p = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        kv_fail_set(err, KV_R_HARNESS_ERROR, "mapping arena %u: %s", m->arena, strerror(errno));
        return NULL;
    }
    for (uint32_t g = 0; g < m->num_guards && g < KV_RMAX_GUARDS; g++) {
        const kv_rguard *r = &m->guards[g];
        if (r->offset > m->bytes || r->length > m->bytes - r->offset) continue;
        int prot = r->prot == 1 ? PROT_READ : PROT_NONE;
        if (mprotect((unsigned char *)p + r->offset, r->length, prot) != 0) {
            kv_fail_set(err, KV_R_HARNESS_ERROR, "protecting arena %u: %s", m->arena,
                        strerror(errno));
            munmap(p, m->bytes);
            return NULL;
        }
        kv_runner_guard_add((unsigned char *)p + r->offset, r->length, r->tensor, r->prot == 1);
    }
    return p;
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
