/* The two halves every backend (cpu, opencl, cuda) implements.
 *
 * The judge's half (kv_jdev) runs in the judge, which never loads candidate
 * code: it opens the device for its own use, makes arenas (the memory a
 * shape's tensors live in), moves bytes in and out of them, fills and
 * checks them, and hands each arena to the runner (a memfd on cpu and
 * opencl, a CUDA IPC handle on cuda). The runner's half (kv_rdev) runs in
 * the runner: it opens its own device context, maps the arenas it is
 * given, loads the candidate and launches blocks of calls on them.
 *
 * Functions that can fail return 0 or -1 with *ERR set to "code: detail",
 * where code names the failure ("illegal_address", "out_of_memory",
 * "launch_failed", ...). */
#ifndef KV_KERNEL_BACKEND_H
#define KV_KERNEL_BACKEND_H

#include "kernel/rproto.h"
#include "util/clock.h"

#include <kevolve/task.h>

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* An arena on the judge's side. */
typedef struct kv_arena {
    uint32_t id;
    size_t bytes;
    unsigned char *host;   /* cpu, opencl: the judge's mapping of the shared memory */
    uint64_t dptr;         /* cuda: the address in the judge's context */
    int fd;                /* cpu, opencl: the memfd handed to the runner; else -1 */
    unsigned char ipc[64]; /* cuda: the IPC handle handed to the runner */
} kv_arena;

typedef struct kv_jdev kv_jdev;
struct kv_jdev {
    kv_backend_kind kind;
    const char *name;
    void *state;
    /* Device facts, filled by open: the bandwidth used for roofline
     * fractions, the fastest any kernel could plausibly reach (the floor
     * uses it), and the size of the last-level cache to outsize. */
    double bandwidth_gbps;
    double ceiling_gbps;
    size_t cache_bytes;
    json_t *device; /* {"name":..., ...} */
    /* Layout of tensors in an arena: data aligned to ALIGN with at least
     * MARGIN canary bytes before and after; PAGE_GUARDS: the end of each
     * tensor's data (rounded up to ALIGN) meets a page boundary and the page
     * after it is a guard page in the runner. */
    size_t align, margin;
    int page_guards;
    /* On the device (cuda): the judge writes a block's inputs inside the
     * timed window (gen_normal), because data already on the device could
     * be worked on by the candidate before the clock starts. */
    int device_inputs;
    /* cuda: the shared object of the judge's helper kernels, set before open. */
    const char *helpers;

    int (*open)(kv_jdev *b, char **err);
    void (*close)(kv_jdev *b);
    /* A new arena of BYTES, every byte CANARY. */
    int (*arena_new)(kv_jdev *b, size_t bytes, unsigned char canary, kv_arena *out, char **err);
    void (*arena_free)(kv_jdev *b, kv_arena *a);
    int (*write)(kv_jdev *b, kv_arena *a, size_t off, const void *src, size_t n, char **err);
    int (*read)(kv_jdev *b, kv_arena *a, size_t off, void *dst, size_t n, char **err);
    /* Writes COUNT copies of the ESIZE-byte PATTERN (1, 2, 4 or 8) at OFF. */
    int (*fill)(kv_jdev *b, kv_arena *a, size_t off, size_t count, const void *pattern,
                size_t esize, char **err);
    /* Waits for everything the judge queued. */
    int (*sync)(kv_jdev *b, char **err);
    /* Evicts the caches (writes a buffer larger than the cache); may be NULL. */
    int (*flush)(kv_jdev *b, char **err);
    /* Extra readings for the benchmark record (NVML), or NULL. */
    json_t *(*telemetry)(kv_jdev *b);
    /* The address of OFF in A as the judge's own code sees it (host or
     * device pointer). */
    void *(*ptr)(kv_jdev *b, kv_arena *a, size_t off);
    /* Runs FN (a kv_launch of the task's own code, such as its device
     * reference) in the judge on A's tensors, to the end (cuda; else NULL). */
    int (*launch_local)(kv_jdev *b, kv_launch_fn fn, kv_launch_args *a, char **err);
    /* Device helpers (cuda; NULL elsewhere, where the judge has the memory
     * in hand). gen_normal: COUNT elements of DT at OFF from N(0,1), a pure
     * function of (SEED, index). count_poison: elements equal to PATTERN
     * (the first at *FIRST). count_changed: elements that differ from what
     * gen_normal(SEED) wrote. */
    int (*gen_normal)(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, size_t count, uint64_t seed,
                      char **err);
    int (*count_poison)(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, size_t count,
                        const void *pattern, size_t *n, size_t *first, char **err);
    int (*count_changed)(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, size_t count,
                         uint64_t seed, size_t *n, char **err);
};

/* The judge's half of KIND, ready for open, or NULL with *ERR when it is
 * not built into this binary. Free with kv_jdev_free (closes it). */
kv_jdev *kv_jdev_new(kv_backend_kind kind, char **err);
void kv_jdev_free(kv_jdev *b);
kv_jdev *kv_jdev_cpu_new(void);
kv_jdev *kv_jdev_opencl_new(void); /* NULL when not built */
kv_jdev *kv_jdev_cuda_new(void);

/* ---- the runner's half ---- */

typedef struct kv_rdev kv_rdev;
struct kv_rdev {
    kv_backend_kind kind;
    void *state;
    int (*open)(kv_rdev *b, char **err);
    /* Maps the arena M describes (FD: its memfd on cpu and opencl). */
    int (*map)(kv_rdev *b, const kv_rmsg_map *m, int fd, char **err);
    void (*unmap)(kv_rdev *b, uint32_t arena);
    /* Loads the candidate: the shared object LIB (and, on opencl, the device
     * code DEVICE_SRC). *LOG: a build log (malloc'd) or NULL. */
    int (*load)(kv_rdev *b, const char *lib, const char *device_src, char **log, char **err);
    /* Runs the block R; on failure fills REPLY's code, detail and call. */
    int (*run)(kv_rdev *b, const kv_rmsg_run *r, kv_rmsg_reply *reply);
};

kv_rdev *kv_rdev_new(kv_backend_kind kind, char **err);
kv_rdev *kv_rdev_cpu_new(void);
kv_rdev *kv_rdev_opencl_new(void);
kv_rdev *kv_rdev_cuda_new(void);

/* The harness's name for a CUDA runtime error a kv_launch returned (task.h
 * asks CUDA candidates to return cudaGetLastError()), or NULL. */
const char *kv_cuda_runtime_error_code(int rc);

#endif
