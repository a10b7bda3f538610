/* The PyTorch package of an export (kevolve export --torch): the operator's
 * C++ (torch/kevolve_TASK/op.cpp), its Python package (__init__.py: the
 * operator, the transformers attention function, the per-shape choice of
 * kernel) and the timing against the standard kernel
 * (torch/against_standard.py). Their texts are src/export/torch/, built
 * into this binary. For tasks shaped like gqa_attention: q, k, v in and o
 * out, bf16, symbols B, HQ, HKV, SQ, L, D. */
#include "export/export_internal.h"
#include "util/buf.h"
#include "util/fs.h"

#include <errno.h>
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
static int gqa_shaped(const kv_task *t)
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

int kvx_write_torch(const kvx_plan *p, const char *dir, char **err)
{
    if (!gqa_shaped(p->task)) {
        *err = kv_asprintf("--torch binds tasks shaped like gqa_attention (q, k, v, o in bf16 over "
                           "B, HQ, HKV, SQ, L, D); %s is not",
                           p->task->name);
        return -1;
    }
    if (!p->backend->torch_device) {
        *err = kv_asprintf("--torch needs a library whose entry point takes PyTorch tensors' "
                           "memory; the %s backend's takes its own buffers: export without "
                           "--torch and call DIR/lib from C",
                           p->backend->name);
        return -1;
    }
    static const struct {
        const char *from, *to;
    } files[] = {
        {"src/export/torch/op.cpp", "op.cpp"},
        {"src/export/torch/package.py", "__init__.py"},
        {"src/export/torch/against_standard.py", NULL},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const char *text = embedded(files[i].from);
        char *path = files[i].to ? kv_asprintf("%s/torch/%s/%s", dir, kvx_entry(p), files[i].to)
                                 : kv_asprintf("%s/torch/against_standard.py", dir);
        char *folder = kv_path_dirname(path);
        int rc =
            text && kv_mkdir_p(folder, 0755) == 0 && kv_write_file(path, text, strlen(text)) == 0
                ? 0
                : -1;
        if (rc != 0)
            *err = text ? kv_asprintf("cannot write %s: %s", path, strerror(errno))
                        : kv_asprintf("%s is not built into this kevolve", files[i].from);
        free(folder);
        free(path);
        if (rc != 0) return -1;
    }
    return 0;
}
