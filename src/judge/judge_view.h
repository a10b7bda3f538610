/* The task as the judge works on it (judge_view.c): an in-out tensor
 * becomes an output, and a hidden copy of its values as drawn an input. */
#ifndef KV_JUDGE_JUDGE_VIEW_H
#define KV_JUDGE_JUDGE_VIEW_H

#include "judge/judge_trial.h"

/* Makes J's TASK the view of OWN (see judge_trial.h); fails as a harness
 * error when OWN's in-out or index tensors break kevolve/task.h's rules. */
KV_MUST_CHECK int kv_judge_view_task(judge_trial *j, const kv_task *own);
/* Frees what the view made (the names of the copies). */
void kv_judge_view_free(judge_trial *j);

#endif
