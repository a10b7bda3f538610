/* What a candidate compiled to, as one hash, and the verdicts judged for it
 * in a run: a child whose compiled code equals an evaluated program's
 * (a tune axis its code never reads, a change to a comment or to dead code)
 * takes that program's verdict at the cost of a compile.
 *
 * The hash covers what runs: on cpu and opencl the loaded sections of the
 * shared object (not its symbol table or build id, which name the
 * temporary source file), on opencl also the device code as the
 * preprocessor leaves it (what the driver builds), on cuda the host's loaded
 * sections with, for the fat binary, the sections of each cubin in it but
 * their debug information (whose line tables name the source file and its
 * size and time). */
#ifndef KV_KERNEL_ARTIFACT_H
#define KV_KERNEL_ARTIFACT_H

#include "kernel/compile.h"

#include <jansson.h>

/* The artifact hash of C (16 hex digits, malloc'd), or NULL with *ERR. */
char *kv_artifact_hash(const kv_backend *backend, const kv_compiled *c, char **err);

/* The verdict kept for artifact HASH under KEY (task, backend, mode,
 * scenario set) in the run's folder RUN_DIR, or NULL when there is none or
 * no run (RUN_DIR NULL). */
json_t *kv_artifact_verdict_load(const char *run_dir, const char *key, const char *hash);
/* Keeps VERDICT for HASH under KEY in the run RUN_DIR (nothing without one). */
void kv_artifact_verdict_save(const char *run_dir, const char *key, const char *hash,
                              const json_t *verdict);

#endif
