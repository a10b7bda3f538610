/* The PyTorch package of an export (kevolve export --torch). Their texts
 * are src/export/torch/, built into this binary.
 *
 * For tasks shaped like gqa_attention (q, k, v in and o out, bf16, symbols
 * B, HQ, HKV, SQ, L, D): the attention package, the operator's C++
 * (torch/kevolve_TASK/op.cpp), its Python package (__init__.py: the
 * operator, the transformers attention function, the per-shape choice of
 * kernel) and the timing against the standard kernel
 * (torch/against_standard.py).
 *
 * For every other task: the generic operator torch.ops.kevolve.TASK over
 * the task's own tensors (op.cpp from generic_op.cpp, spec.h written from
 * the task, __init__.py from generic.py) and the Qwen3 helpers
 * (torch/kevolve_qwen3.py), which put the rmsnorm, swiglu and rope
 * exports into a transformers Qwen3 model. */
#include "export/export_internal.h"
#include "util/buf.h"
#include "util/fs.h"
#include <stdlib.h>
#include <string.h>

struct kv_embedded_file {
    const char *name;
    const char *text;
};
extern const struct kv_embedded_file kv_export_files[]; /* kv_export_files.c (generated) */

static const char *embedded(const char *name)
{
    for (const struct kv_embedded_file *f = kv_export_files; f->name; f++)
        if (strcmp(f->name, name) == 0) return f->text;
    return NULL;
}

/* 1 when T has the shape of gqa_attention, which the operator binds. */
int kvx_gqa_shaped(const kv_task *t)
{
    static const char *const syms[] = {"B", "HQ", "HKV", "SQ", "L", "D"};
    static const char *const tensors[] = {"q", "k", "v", "o"};
    if (t->num_syms != 6 || t->num_tensors != 4) return 0;
    for (int i = 0; i < 6; i++)
        if (strcmp(t->syms[i], syms[i]) != 0) return 0;
    for (int i = 0; i < 4; i++)
        if (strcmp(t->tensors[i].name, tensors[i]) != 0 || t->tensors[i].dtype != KV_BF16 ||
            t->tensors[i].role != (i == 3 ? KV_OUT : KV_IN) || t->tensors[i].rank != 4)
            return 0;
    return 1;
}

/* Writes TEXT (NULL: the built-in file FROM's) to DIR/REL. Returns 0, or
 * -1 with *ERR. */
static int put(const char *dir, const char *rel, const char *from, const char *text, char **err)
{
    if (!text) text = embedded(from);
    if (!text) {
        *err = kv_asprintf("%s is not built into this kevolve", from);
        return -1;
    }
    return kvx_put_file(dir, rel, text, err);
}

int kvx_torch_ok(const kvx_plan *p, char **err)
{
    if (!p->backend->torch_device) {
        *err = kv_asprintf("--torch needs a library whose entry point takes PyTorch tensors' "
                           "memory; the %s backend's takes its own buffers: export without "
                           "--torch and call DIR/lib from C",
                           p->backend->name);
        return -1;
    }
    return kvx_gqa_shaped(p->task) || kvx_generic_ok(p->task, err) ? 0 : -1;
}

int kvx_write_torch(const kvx_plan *p, const char *dir, char **err)
{
    if (kvx_torch_ok(p, err) != 0) return -1;
    int gqa = kvx_gqa_shaped(p->task);
    char *pkg = kv_asprintf("torch/%s", kvx_entry(p));
    char *op = kv_path_join(pkg, "op.cpp"), *init = kv_path_join(pkg, "__init__.py");
    char *spec_rel = kv_path_join(pkg, "spec.h");
    char *spec = gqa ? NULL : kvx_spec_header(p->task);
    int rc = gqa ? put(dir, op, "src/export/torch/op.cpp", NULL, err) ||
                       put(dir, init, "src/export/torch/package.py", NULL, err) ||
                       put(dir, "torch/kevolve_build.py", "src/export/torch/build.py", NULL, err) ||
                       put(dir, "torch/against_standard.py", "src/export/torch/against_standard.py",
                           NULL, err)
                 : put(dir, op, "src/export/torch/generic_op.cpp", NULL, err) ||
                       put(dir, init, "src/export/torch/generic.py", NULL, err) ||
                       put(dir, spec_rel, NULL, spec, err) ||
                       put(dir, "torch/kevolve_build.py", "src/export/torch/build.py", NULL, err) ||
                       put(dir, "torch/kevolve_qwen3.py", "src/export/torch/qwen3.py", NULL, err);
    free(spec);
    free(spec_rel);
    free(init);
    free(op);
    free(pkg);
    return rc ? -1 : 0;
}
