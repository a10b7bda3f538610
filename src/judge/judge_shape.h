/* What both correctness paths share (judge_shape.c): a shape's host data,
 * the reference, the inputs' draw, the outputs' poison, one call of the
 * candidate, the findings that end a shape's trials, and which path checks
 * a shape (judge_check.c through the host, judge_check_in_place.c where the
 * data lives). */
#ifndef KV_JUDGE_JUDGE_SHAPE_H
#define KV_JUDGE_JUDGE_SHAPE_H

#include "judge/judge_arena.h"

void kv_shape_data_init(shape_data *d, const kv_task *t, const kv_shape *sh, int held);
void kv_shape_data_free(shape_data *d, const kv_task *t);

/* The reference of one set (inputs at their place in A): into VAL[i] and
 * SCALE[i] (host, per output tensor i); from the device when the task has a
 * device reference and DEVICE is set, else from the CPU on the values IN[i]
 * (inputs as doubles). */
KV_MUST_CHECK int kv_judge_reference(judge_trial *j, const int64_t *syms, kv_arena *a,
                                     const layout *l, size_t set, double *const *in, double **val,
                                     double **scale, int device);
/* The task's CPU reference on the values IN[i] into VAL[i] and SCALE[i]. */
void kv_judge_reference_cpu(const judge_trial *j, const int64_t *syms, double *const *in,
                            double **val, double **scale);
/* Where the reference of shape SYMS puts output i's values (WHERE[i][0])
 * and error scales (WHERE[i][1]) in its arena, doubles; its bytes. */
size_t kv_judge_reference_place(const judge_trial *j, const int64_t *syms, size_t where[][2]);
/* The task's device reference on set SET of A, into OUT (a judge-only
 * arena, made here when OUT->bytes is 0): output i's values at WHERE[i][0],
 * its error scales at WHERE[i][1]. */
KV_MUST_CHECK int kv_judge_reference_arena(judge_trial *j, const int64_t *syms, kv_arena *a,
                                           const layout *l, size_t set, kv_arena *out,
                                           size_t where[][2]);
/* 1 when shape D's reference comes from the device: the scenarios, when the
 * task has a device reference (held-out shapes checked through the host
 * have the CPU's, drawn before the hold). */
int kv_judge_device_reference_for(const judge_trial *j, const shape_data *d);
/* Draws inputs from DIST into D's images and values (on the host). */
void kv_judge_draw_inputs(judge_trial *j, shape_data *d, kv_dist dist);
/* Writes a fresh poison into every output of A. */
KV_MUST_CHECK int kv_judge_poison_outputs(judge_trial *j, shape_data *d, kv_arena *a,
                                          const layout *l);
/* One call of the candidate on A, to its end. */
KV_MUST_CHECK int kv_judge_run_once(judge_trial *j, shape_data *d, kv_arena *a, const layout *l);
/* The number of correctness trials D's shape gets (held-out or not, by
 * its inputs' bytes). */
int kv_judge_trials(const judge_trial *j, const shape_data *d);

/* The findings about output I of shape D that end the trials, each
 * returning 0 when there is nothing to say: C's unwritten elements after
 * run RUNNO; DIFFER elements (the first at FIRST) that differ between the
 * two runs; C's NaN or Inf, then its elements outside the tolerance
 * (CACHED: the previous trial's reference matches them, a cache).
 * kv_judge_values also folds C's errors into D's worst. */
KV_MUST_CHECK int kv_judge_fail_unwritten(judge_trial *j, const shape_data *d, int i, int runno,
                                          const kv_check *c);
KV_MUST_CHECK int kv_judge_fail_differ(judge_trial *j, const shape_data *d, int i, size_t differ,
                                       size_t first);
KV_MUST_CHECK int kv_judge_values(judge_trial *j, shape_data *d, int i, const kv_check *c,
                                  int cached);

/* 1 when the judge checks scenarios in place: its backend has the in-place
 * helpers, does not stage, and the reference can read the inputs where
 * they are (a device reference, or arenas in the judge's memory). */
int kv_judge_in_place(const judge_trial *j);
/* 1 when held-out shapes drawn before the hold are checked in place: a
 * device reference, which must match the CPU's on the first trial, and
 * device inputs. */
int kv_judge_held_in_place(const judge_trial *j);

#endif
