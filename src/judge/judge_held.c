/* Held-out shapes drawn before the device is held (see judge_held.h).
 *
 * Their CPU reference is seconds of host work on the big tasks' shapes (a
 * chunk of 200 rows on 3000 keys), which the device lock need not cover.
 * So where the device is not the host's CPU, every trial is drawn and the
 * reference computed while the judge prepares, before it waits for the
 * device. A trial is its inputs' images, drawn on the host (the CPU's
 * reference must read exactly the device's inputs, and a host's logarithm
 * and cosine, in the normal's draw, are not promised to round as the
 * device's do), with the CPU's reference. Where
 * the shapes are checked in place (a device reference), the images are
 * written into the arena and every check runs there, as a scenario's, and
 * the CPU's reference is the first trial's only: the device reference
 * must match it. Nothing here is the candidate's: its code is loaded only
 * once the device is held, and these buffers live in the judge's memory. */
#include "judge/judge_held.h"
#include "judge/judge_shape.h"
#include "judge/worker.h"
#include "util/buf.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static void prepare_all(judge_trial *j);

/* The drawing runs in a thread of the lowest priority (its reference's
 * threads inherit it): it overlaps another child's timed blocks, whose
 * judge must not wait for a core behind it. */
static void *prepare_thread(void *arg)
{
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    prepare_all(arg);
    return NULL;
}

void kv_judge_held_prepare(judge_trial *j)
{
    pthread_t th;
    if (pthread_create(&th, NULL, prepare_thread, j) != 0) {
        prepare_all(j); /* no thread: at this thread's priority */
        return;
    }
    pthread_join(th, NULL);
}

/* Draws the trials of held-out shape SH into P: every trial's inputs'
 * images and the CPU reference of its first REFS trials. */
static void prepare_shape(judge_trial *j, const kv_shape *sh, held_prep *p, int refs)
{
    const kv_task *t = j->task;
    shape_data d;
    kv_shape_data_init(&d, t, sh, 1);
    p->trials = kv_judge_trials(j, &d);
    p->t = kv_calloc((size_t)p->trials, sizeof *p->t);
    for (int trial = 0; trial < p->trials; trial++) {
        kv_judge_draw_inputs(j, &d, (kv_dist)(trial % KV_DIST_COUNT));
        int ref = trial < refs;
        if (ref) kv_judge_reference_cpu(j, sh->syms, d.val, d.val, d.scale);
        /* The trial keeps what was drawn; D gets fresh buffers. */
        for (int i = 0; i < t->num_tensors; i++) {
            held_trial *h = &p->t[trial];
            if (t->tensors[i].role == KV_IN) {
                h->img[i] = d.img[i];
                d.img[i] = kv_malloc(d.bytes[i] + 8);
            } else if (ref) {
                h->val[i] = d.val[i];
                d.val[i] = kv_malloc((d.count[i] + 1) * sizeof(double));
                if (d.scale[i]) {
                    h->scale[i] = d.scale[i];
                    d.scale[i] = kv_malloc((d.count[i] + 1) * sizeof(double));
                }
            }
        }
    }
    kv_shape_data_free(&d, t);
}

/* Checked in place with a device reference, a held-out shape needs the
 * CPU's reference of its first trial only (the device's must match it);
 * on the host, every trial's. */
static void prepare_all(judge_trial *j)
{
    const kv_task *t = j->task;
    if (t->num_held_out <= 0) return;
    j->held = kv_calloc((size_t)t->num_held_out, sizeof *j->held);
    int in_place = kv_judge_held_in_place(j);
    for (int s = 0; s < t->num_held_out; s++) {
        kv_worker_phase("drawing held-out shape %s", t->held_out[s].name);
        held_prep *p = &j->held[s];
        prepare_shape(j, &t->held_out[s], p, in_place ? 1 : INT32_MAX);
        p->in_place = in_place;
    }
}

held_prep *kv_judge_held_draw(judge_trial *j, const kv_shape *sh)
{
    const kv_task *t = j->task;
    if (!j->held) j->held = kv_calloc((size_t)t->num_held_out + 1, sizeof *j->held);
    held_prep *p = &j->held[sh - t->held_out];
    prepare_shape(j, sh, p, 0);
    p->in_place = 1;
    return p;
}

static void swap_ptr(void **a, void **b)
{
    void *x = *a;
    *a = *b;
    *b = x;
}

void kv_judge_held_take(judge_trial *j, shape_data *d, held_trial *h)
{
    const kv_task *t = j->task;
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role == KV_IN) {
            swap_ptr(&d->img[i], &h->img[i]);
        } else {
            swap_ptr((void **)&d->val[i], (void **)&h->val[i]);
            swap_ptr((void **)&d->scale[i], (void **)&h->scale[i]);
        }
    }
}

void kv_judge_held_free(judge_trial *j, held_prep *p)
{
    for (int k = 0; k < p->trials; k++)
        for (int i = 0; i < j->task->num_tensors; i++) {
            free(p->t[k].img[i]);
            free(p->t[k].val[i]);
            free(p->t[k].scale[i]);
        }
    free(p->t);
    p->t = NULL;
    p->trials = 0;
}

void kv_judge_held_free_all(judge_trial *j)
{
    for (int k = 0; j->held && k < j->task->num_held_out; k++)
        kv_judge_held_free(j, &j->held[k]);
    free(j->held);
    j->held = NULL;
}
