/* The task registry: the built-in kernel tasks (tasks/<name>/<name>.c) and
 * the text of the files embedded into the library (baseline kernels, the
 * public task header). */
#ifndef KV_JUDGE_TASKS_H
#define KV_JUDGE_TASKS_H

#include <kevolve/task.h>

#include <stddef.h>

/* The task named NAME, or NULL. */
const kv_task *kv_task_find(const char *name);
/* The Ith task (NULL past the end). */
const kv_task *kv_task_at(size_t i);
/* Text of the embedded file NAME ("softmax/cpu/baseline.c",
 * "include/kevolve/task.h"), or NULL. The memory is static. */
const char *kv_embedded_text(const char *name);
/* Name of the Ith embedded file (NULL past the end). */
const char *kv_embedded_name(size_t i);

/* Elements of tensor T of TASK at the shape SYMS. */
size_t kv_tensor_count(const kv_task *task, int t, const int64_t *syms);

#endif
