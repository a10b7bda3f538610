/* The way out of a run: `kevolve export RUN -o DIR` gathers, for each
 * scenario of the run's task, the fastest correct program (from the store's
 * rows per scenario) into one library:
 *
 *   DIR/kevolve_TASK.{c,cl,cu}  one source in the backend's language: every
 *                               chosen program under names of its own (the
 *                               task's in them), a dispatcher by shape and
 *                               the entry points for users (kevolve_TASK*),
 *                               the only names it exports: the rest is
 *                               hidden, so several exports link into one
 *                               program; a weak kv_launch makes the file a
 *                               candidate of the task, and nothing in it
 *                               calls that name
 *   DIR/kevolve_TASK.h          that entry point, documented
 *   DIR/include/                the headers the source includes
 *   DIR/lib/libkevolve_TASK.so  the source compiled by the check
 *   DIR/manifest.json           the files it wrote ("files": what --force
 *                               may replace); per scenario: the program, its code hash,
 *                               the run, its time and speedup, the standard
 *                               kernel's time where known, which to call;
 *                               the task's signature (symbols, tensors)
 *   DIR/torch/ (--torch)        gqa_attention tasks: a PyTorch operator and
 *                               a transformers attention function; other
 *                               tasks: the generic operator
 *                               torch.ops.kevolve.TASK over the task's
 *                               tensors (inputs in, in-out in place,
 *                               outputs returned) and kevolve_qwen3.py,
 *                               which puts the rmsnorm, swiglu and rope
 *                               exports into a transformers Qwen3
 *
 * The library is judged as a candidate of the task (every scenario and the
 * held-out shapes) before DIR is written: an export that does not pass
 * leaves nothing. */
#ifndef KV_EXPORT_EXPORT_H
#define KV_EXPORT_EXPORT_H

#include "store/store.h"

typedef struct kv_export_opts {
    const char *run;       /* the run's folder or store, as the user named it (for the manifest) */
    const char *out_dir;   /* DIR: must not exist, or be empty, or (force) hold an export */
    const char *task;      /* when set, the run's task must be it */
    const char *cache_dir; /* compiled kernels; NULL: the default cache */
    const char *arch;      /* the device architecture to compile for (NULL: the device's) */
    int quick;             /* the check in the harness's quick mode */
    int compile_only;      /* the check only compiles (a machine without the device) */
    int force;             /* replace an existing DIR */
    int torch;             /* also write DIR/torch */
    int against_standard;  /* time against PyTorch's SDPA per scenario (implies torch) */
    const char *python;    /* the interpreter with PyTorch (NULL: python3) */
    const char *self_exe;  /* the kevolve binary (NULL: this one) */
} kv_export_opts;

/* What kv_export returns when it writes nothing. */
enum {
    KV_EXPORT_REFUSED = -1, /* the run has nothing to export (empty, no kernel task, no
                             * correct program), the library fails its check, PyTorch or
                             * the GPU that --against-standard needs is missing, a file
                             * cannot be written */
    KV_EXPORT_USAGE = -2,   /* the options or the folder: an unknown --task or one whose
                             * kernels do not fit the run's, an option the run's backend or
                             * task cannot serve, a folder in the way (not empty, or with
                             * --force holding files no export wrote) */
};

/* Exports the run in STORE as O says. Returns 0, or KV_EXPORT_REFUSED or
 * KV_EXPORT_USAGE with *ERR saying why; nothing is left in O->out_dir then
 * (an earlier export there is replaced only on success). Checks that need
 * no compiler (the folder, the options, PyTorch) come first. */
int kv_export(kv_store *store, const kv_export_opts *o, char **err);

#endif
