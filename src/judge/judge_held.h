/* Held-out shapes drawn before the device is held (judge_held.c): every
 * trial's inputs and their CPU reference, in the judge's memory, while
 * another evaluation may hold the device. */
#ifndef KV_JUDGE_JUDGE_HELD_H
#define KV_JUDGE_JUDGE_HELD_H

#include "judge/judge_trial.h"

/* One trial of a held-out shape, drawn before the device is held, in the
 * judge's memory: its inputs' images and the CPU reference's outputs (in
 * place: the first trial's only, or none). */
typedef struct held_trial {
    void *img[KV_MAX_TENSORS];     /* inputs (host path) */
    double *val[KV_MAX_TENSORS];   /* outputs: the reference (in place: trial 0's only) */
    double *scale[KV_MAX_TENSORS]; /* outputs: its error scales (NULL: none) */
} held_trial;

struct held_prep {
    int trials;
    int in_place; /* checked where the data is (the CPU's reference: trial 0's, if any) */
    held_trial *t;
};

/* Where the device is not the host's CPU: draws every trial's inputs of
 * every held-out shape and computes their CPU reference into J->held, while
 * another evaluation may hold the device (host work does not need it). */
void kv_judge_held_prepare(judge_trial *j);
/* Draws held-out shape SH's trials now (images, no reference), for the
 * in-place checks where nothing was drawn before the hold (cpu). */
held_prep *kv_judge_held_draw(judge_trial *j, const kv_shape *sh);
/* Makes trial T's inputs and reference D's (their buffers trade places). */
void kv_judge_held_take(judge_trial *j, shape_data *d, held_trial *t);
/* Frees P's trials. */
void kv_judge_held_free(judge_trial *j, held_prep *p);
/* Frees J->held, every shape's trials with it. */
void kv_judge_held_free_all(judge_trial *j);

#endif
