/* The task as the judge works on it (judge_view.h): an in-out tensor
 * becomes an output, and a hidden copy of its values as drawn becomes an
 * input after the task's own tensors. Every check of the judge then holds
 * as written for outputs and inputs: the copy is drawn, kept read-only
 * where pages can be, and checked unchanged like any input; the in-out
 * tensor is started from it before each call (kv_judge_poison_outputs,
 * judge_time.c's prepare_block) and checked like any output. The candidate
 * is given the task's tensors only (kv_judge_block). */
#include "judge/judge_view.h"
#include "util/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Why OWN's tensors break task.h's rules, or NULL. */
static const char *broken(const kv_task *own, int inout)
{
    if (inout && own->reference_cuda)
        return "in-out tensors with a device reference (not built: the device reference "
               "would need the tensors' hidden copies)";
    if (own->num_tensors + inout > KV_MAX_TENSORS)
        return "too many tensors: each in-out tensor takes a second place for its copy";
    for (int i = 0; i < own->num_tensors; i++) {
        const kv_tensor_spec *ts = &own->tensors[i];
        if (ts->index_of == 0) continue;
        if (ts->dtype != KV_I32 || ts->role != KV_IN)
            return "an index tensor (index_of) that is not an int32 input";
        if (ts->index_of < 0 || ts->index_of > own->num_syms)
            return "an index tensor whose index_of names no symbol";
        for (int k = 0; k < own->num_scenarios + own->num_held_out; k++) {
            const kv_shape *sh = k < own->num_scenarios ? &own->scenarios[k]
                                                        : &own->held_out[k - own->num_scenarios];
            int64_t bound = sh->syms[ts->index_of - 1];
            if (bound < 1 || bound > INT32_MAX)
                return "a shape where an index tensor's bound is not in [1, 2^31)";
        }
    }
    return NULL;
}

int kv_judge_view_task(judge_trial *j, const kv_task *own)
{
    j->own = j->task = own;
    j->visible = own->num_tensors;
    int inout = 0;
    for (int i = 0; i < KV_MAX_TENSORS; i++)
        j->twin[i] = -1;
    for (int i = 0; i < own->num_tensors; i++)
        inout += own->tensors[i].role == KV_INOUT;
    const char *why = broken(own, inout);
    if (why) return kv_verdict_set(&j->v, KV_R_HARNESS_ERROR, "task %s: %s", own->name, why);
    if (!inout) return 0;
    j->view = *own;
    for (int i = 0; i < own->num_tensors; i++) {
        if (own->tensors[i].role != KV_INOUT) continue;
        int w = j->view.num_tensors++;
        j->twin[i] = w;
        j->view.tensors[w] = own->tensors[i];
        j->view.tensors[w].role = KV_IN;
        j->view.tensors[w].name =
            kv_asprintf("%s (as drawn, before the call)", own->tensors[i].name);
        j->view.tensors[i].role = KV_OUT;
    }
    j->task = &j->view;
    return 0;
}

void kv_judge_view_free(judge_trial *j)
{
    if (j->task != &j->view) return;
    for (int i = 0; i < j->visible; i++)
        if (j->twin[i] >= 0) free((char *)j->view.tensors[j->twin[i]].name);
    j->task = j->own;
}
