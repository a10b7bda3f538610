/* Compiling candidates, cached by content: the shared object of a source is
 * kept in the cache directory under a key hashed from (source, compiler and
 * its version, flags, backend, architecture), so a program compiles once no
 * matter how many workers evaluate it. Concurrent workers are safe: results
 * land by rename. Compiler output and resource usage (registers, shared
 * memory, spills from ptxas -v) are kept next to it. A candidate compiles
 * with one include directory holding <kevolve/task.h> and every task
 * header (tasks/T/B/NAME.cuh as <T/B/NAME.cuh>): helpers a task shares
 * among its seeds, outside their mutable text. */
#ifndef KV_KERNEL_COMPILE_H
#define KV_KERNEL_COMPILE_H

#include "backend/backend.h"

#include <kevolve/task.h>

#include <jansson.h>

typedef struct kv_compiled {
    char *lib_path;      /* shared object exporting kv_launch */
    char *device_source; /* KV_CAP_DEVICE_CODE: the text the runner's driver builds; else NULL */
    char *log;           /* compiler output ("" when silent), valid UTF-8: bytes that are
                          * not are shown as \xNN (the cache's KEY.log keeps them) */
    char *key;           /* cache key, 16 hex digits */
    int cached;          /* 1 when the cache already held it */
    double seconds;      /* compile time (0 when cached) */
    json_t
        *resources; /* nvcc: {"registers","shared_bytes","spill_bytes","stack_bytes"}; else NULL */
} kv_compiled;

void kv_compiled_clear(kv_compiled *c);

/* Compiles SOURCE for BACKEND (ARCH: "sm_90a" style for cuda, else
 * ignored) into CACHE_DIR (created when missing). Returns 0 and fills OUT;
 * 1 when the source does not compile (OUT->log says why); -1 when the
 * harness cannot compile at all (no compiler, unwritable cache), with *ERR. */
int kv_compile(const kv_backend *backend, const char *source, const char *cache_dir,
               const char *arch, kv_compiled *out, char **err);

/* Parses ptxas -v output into {"registers","shared_bytes","spill_bytes",
 * "stack_bytes"} (maxima over kernels), or NULL when it reports nothing. */
json_t *kv_parse_ptxas(const char *log);

/* The nvcc to use: $KEVOLVE_NVCC, $CUDA_HOME/bin/nvcc, nvcc in PATH,
 * /usr/local/cuda/bin/nvcc; NULL when none (malloc'd). */
char *kv_find_nvcc(void);

/* Compiles the harness's own embedded source NAME (a task's baseline or
 * device reference, the judge's kernels) for B into C; WHAT names it in
 * messages. Returns 0, or -1 with *ERR. */
int kv_compile_own(const kv_backend *b, const char *name, const char *what, const char *cache,
                   const char *arch, kv_compiled *c, char **err);

#endif
