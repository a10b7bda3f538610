/* The correctness trials of a shape where its data lives
 * (judge_check_in_place.c). */
#ifndef KV_JUDGE_JUDGE_CHECK_IN_PLACE_H
#define KV_JUDGE_JUDGE_CHECK_IN_PLACE_H

#include "judge/judge_held.h"

/* kv_judge_check_shape in place: inputs drawn where they live, the
 * reference computed there, outputs compared there; only counts and the
 * worst element come back. PREP: a held-out shape's trials as drawn before
 * the hold, else NULL (a scenario, or a held-out shape drawn in place). */
KV_MUST_CHECK int kv_judge_check_in_place(judge_trial *j, const kv_shape *sh, int held,
                                          held_prep *prep, json_t **out);

#endif
