/* Timing on the judge's clock (judge_time.c). */
#ifndef KV_JUDGE_JUDGE_TIME_H
#define KV_JUDGE_JUDGE_TIME_H

#include "judge/judge_trial.h"

/* Measures the runner's fixed costs before the candidate is loaded. */
KV_MUST_CHECK int kv_judge_calibrate(judge_trial *j);
/* Times scenario SH in the runner in use: fills SUMMARY with median_us,
 * iqr_us, reps, roofline figures; every timed call's output is checked as
 * the judge's rules say (the task's own baseline: only that it wrote). */
KV_MUST_CHECK int kv_judge_time_shape(judge_trial *j, const kv_shape *sh, json_t *summary);

#endif
