/* Registry of the built-in kernel tasks (found by the build in their
 * sources) and the embedded source files. */
#include "judge/tasks.h"

#include <string.h>

struct kv_embedded_file {
    const char *name;
    const char *text;
};
extern const struct kv_embedded_file kv_embedded_files[]; /* kv_embedded.c (generated) */

/* Every `const kv_task kv_task_NAME` of the tasks (tasks/TASK/NAME.c), in name order,
 * NULL-terminated: kv_task_list.c, written by the build (task_list.cmake). */
extern const kv_task *const kv_task_list[];

const kv_task *kv_task_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; kv_task_list[i]; i++)
        if (strcmp(kv_task_list[i]->name, name) == 0) return kv_task_list[i];
    return NULL;
}

const kv_task *kv_task_at(size_t i)
{
    for (size_t n = 0; kv_task_list[n]; n++)
        if (n == i) return kv_task_list[n];
    return NULL;
}

const char *kv_embedded_text(const char *name)
{
    for (const struct kv_embedded_file *f = kv_embedded_files; f->name; f++)
        if (strcmp(f->name, name) == 0) return f->text;
    return NULL;
}

const char *kv_embedded_name(size_t i)
{
    for (size_t n = 0; kv_embedded_files[n].name; n++)
        if (n == i) return kv_embedded_files[n].name;
    return NULL;
}

size_t kv_tensor_count(const kv_task *task, int t, const int64_t *syms)
{
    size_t n = 1;
    for (int d = 0; d < task->tensors[t].rank; d++)
        n *= (size_t)syms[task->tensors[t].shape[d]];
    return n;
}
