/* What the export's files share (private to src/export): the plan read
 * from a run, and the writers of the library's pieces. */
#ifndef KV_EXPORT_EXPORT_INTERNAL_H
#define KV_EXPORT_EXPORT_INTERNAL_H

#include "export/export.h"
#include "backend/backend.h"
#include "judge/tasks.h"

#include <jansson.h>
#include <stdint.h>

/* One program of the run the library carries. */
typedef struct kvx_variant {
    int64_t program_id;
    char *source;
    uint64_t code_hash;
} kvx_variant;

/* A scenario of the task and what serves it. */
typedef struct kvx_choice {
    const kv_shape *shape;
    int variant;       /* index into the plan's variants; -1: no program was timed there */
    int served;        /* the scenario whose variant the dispatcher gives it (itself when timed) */
    const json_t *row; /* the best row there (kv_store_best_per_scenario's), or NULL */
} kvx_choice;

typedef struct kvx_plan {
    const kv_task *task;
    const kv_backend *backend;
    char *device; /* where the rows were measured */
    kvx_variant *variants;
    size_t n_variants;
    kvx_choice *choices; /* one per scenario of the task, in its order */
    size_t n_choices;
    json_t *best; /* the rows (owned) */
} kvx_plan;

/* Reads from STORE what O's export takes: the task, the backend, the best
 * program per scenario and their sources. Returns 0, or KV_EXPORT_REFUSED
 * or KV_EXPORT_USAGE (a --task that does not fit) with *ERR. */
int kvx_plan_read(kv_store *store, const kv_export_opts *o, kvx_plan *p, char **err);
void kvx_plan_free(kvx_plan *p);

/* The entry point's name, "kevolve_TASK" (static). */
const char *kvx_entry(const kvx_plan *p);

/* The library's one source (malloc'd), or NULL with *ERR. */
char *kvx_source(const kvx_plan *p, char **err);
/* Its header (malloc'd). */
char *kvx_header(const kvx_plan *p);
/* The nearest-scenario rule, as the header and the manifest state it. */
extern const char kvx_rule[];

/* Writes TEXT to DIR/NAME (its folders made). Returns 0, or -1 with *ERR. */
int kvx_put_file(const char *dir, const char *name, const char *text, char **err);

/* 0 when the plan P can have a PyTorch package (its backend's entry point
 * takes PyTorch tensors' memory; the generic operator can bind its task),
 * else -1 with *ERR: asked before the library is judged. */
int kvx_torch_ok(const kvx_plan *p, char **err);
/* Writes DIR/torch (the PyTorch package): for tasks shaped like
 * gqa_attention the attention package, for the others the generic
 * operator. Returns 0, or -1 with *ERR. */
int kvx_write_torch(const kvx_plan *p, const char *dir, char **err);
/* 1 when T has the shape of gqa_attention (q, k, v in, o out, bf16). */
int kvx_gqa_shaped(const kv_task *t);

/* The task's tensors for the manifest: {"schema": the generic operator's,
 * "syms": [names], "tensors":
 * [{"name", "dtype" (f32, f16, bf16, i32), "role" (in, out, inout),
 * "shape" (indices into syms)}]} (a new reference). */
json_t *kvx_signature(const kv_task *t);
/* 1 when the generic operator can bind T (every symbol in an input's
 * shape, names that are identifiers), else 0 with *ERR. */
int kvx_generic_ok(const kv_task *t, char **err);
/* spec.h of the generic operator: the schema and the tensors (malloc'd). */
char *kvx_spec_header(const kv_task *t);

#endif
