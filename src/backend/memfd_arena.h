/* Arenas in shared memory (memfd), for the backends whose judge holds the
 * memory on the host (cpu, and opencl's staging): the judge maps them to
 * fill and read them; the runner maps the same pages. */
#ifndef KV_BACKENDS_MEMFD_ARENA_H
#define KV_BACKENDS_MEMFD_ARENA_H

#include "backend/backend.h"
#include "runner/rproto.h"

#include <stddef.h>

/* A memfd of BYTES mapped shared into this process, every byte CANARY. */
int kv_memfd_arena_new(size_t bytes, unsigned char canary, kv_arena *out, kv_fail *err);
void kv_memfd_arena_free(kv_arena *a);
int kv_memfd_write(kv_arena *a, size_t off, const void *src, size_t n, kv_fail *err);
int kv_memfd_read(kv_arena *a, size_t off, void *dst, size_t n, kv_fail *err);
int kv_memfd_fill(kv_arena *a, size_t off, size_t count, const void *pattern, size_t esize,
                  kv_fail *err);
/* Sets B's arena operations (new, free, write, read, fill, sync, ptr) and
 * layout to the memfd ones: a judge that holds its arenas on the host. */
void kv_memfd_jdev_ops(kv_jdev *b);

/* In the runner: maps the memfd FD that M describes, with M's guard pages
 * (PROT_NONE) and read-only ranges applied; the mapping or NULL with *ERR. */
unsigned char *kv_memfd_map_guarded(const kv_rmsg_map *m, int fd, kv_fail *err);

/* In the runner: the tensors of call I of block R, whose arena is mapped at
 * BASE, into A (abi version, tensors, syms; the backend adds the rest). */
void kv_rrun_args(const kv_rmsg_run *r, unsigned char *base, uint32_t i, kv_launch_args *a);

#endif
