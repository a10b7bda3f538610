/* The correctness trials of one shape (judge_check.c): through the host,
 * or where the data lives (judge_check_in_place.c), as the backend and the
 * task allow. */
#ifndef KV_JUDGE_JUDGE_CHECK_H
#define KV_JUDGE_JUDGE_CHECK_H

#include "judge/judge_trial.h"

/* The correctness trials of shape SH (HELD: a held-out shape); *OUT its
 * summary ({"name", "max_abs_err", ..., "tol_ratio", "trials"}). */
KV_MUST_CHECK int kv_judge_check_shape(judge_trial *j, const kv_shape *sh, int held, json_t **out);

/* Marks in REP (one int per scenario) the representative scenario of each
 * class (a scenario's first tag): the one with the largest weight, the
 * first among equals. Returns how many are marked. */
int kv_judge_representatives(const kv_task *t, int *rep);

#endif
