/* What both correctness paths share (see judge_shape.h). */
#include "judge/judge_shape.h"
#include "backend/dtype.h"
#include "judge/tasks.h"
#include "util/buf.h"
#include "util/clock.h"

#include <stdlib.h>
#include <string.h>

void kv_shape_data_init(shape_data *d, const kv_task *t, const kv_shape *sh, int held)
{
    memset(d, 0, sizeof *d);
    d->shape = sh;
    d->held = held;
    for (int i = 0; i < t->num_tensors; i++) {
        d->count[i] = kv_tensor_count(t, i, sh->syms);
        d->bytes[i] = d->count[i] * kv_dtype_size(t->tensors[i].dtype);
        d->img[i] = kv_malloc(d->bytes[i] + 8);
        d->val[i] = kv_malloc((d->count[i] + 1) * sizeof(double));
        if (t->tensors[i].role == KV_OUT) {
            d->prev[i] = kv_malloc((d->count[i] + 1) * sizeof(double));
            if (t->reference_scale) {
                d->scale[i] = kv_malloc((d->count[i] + 1) * sizeof(double));
                d->prev_scale[i] = kv_malloc((d->count[i] + 1) * sizeof(double));
            }
            d->got[0][i] = kv_malloc(d->bytes[i] + 8);
            d->got[1][i] = kv_malloc(d->bytes[i] + 8);
            d->late[i] = kv_malloc(d->bytes[i] + 8);
        }
    }
}

void kv_shape_data_free(shape_data *d, const kv_task *t)
{
    for (int i = 0; i < t->num_tensors; i++) {
        free(d->img[i]);
        free(d->val[i]);
        free(d->prev[i]);
        free(d->scale[i]);
        free(d->prev_scale[i]);
        free(d->got[0][i]);
        free(d->got[1][i]);
        free(d->late[i]);
    }
    free(d->back);
}

int kv_judge_device_reference_for(const judge_trial *j, const shape_data *d)
{
    return j->ref && !d->held;
}

size_t kv_judge_reference_place(const judge_trial *j, const int64_t *syms, size_t where[][2])
{
    const kv_task *t = j->task;
    size_t total = 0;
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        size_t count = kv_tensor_count(t, i, syms);
        where[i][0] = total;
        total += (count + 32) * sizeof(double);
        where[i][1] = total;
        total += (count + 32) * sizeof(double);
    }
    return total;
}

int kv_judge_reference_arena(judge_trial *j, const int64_t *syms, kv_arena *a, const layout *l,
                             size_t set, kv_arena *out, size_t where[][2])
{
    const kv_task *t = j->task;
    kv_launch_args args;
    memset(&args, 0, sizeof args);
    args.abi_version = KV_TASK_ABI_VERSION;
    args.num_syms = (uint32_t)t->num_syms;
    for (int i = 0; i < t->num_syms; i++)
        args.syms[i] = syms[i];
    size_t total = kv_judge_reference_place(j, syms, where);
    kv_fail err = {0};
    if (out->bytes == 0 && kv_judge_own_new(j, total, out, "device reference") != 0)
        return KV_JUDGE_FAILED;
    if (out->bytes < total)
        return kv_judge_fail(j, KV_R_HARNESS_ERROR, "device reference: arena too small");
    int n = t->num_tensors;
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role == KV_OUT) {
            args.tensors[i] = j->b->ptr(j->b, out, where[i][0]);
            if (n == KV_MAX_TENSORS)
                return kv_judge_fail(j, KV_R_HARNESS_ERROR, "device reference: too many tensors");
            args.tensors[n++] = j->b->ptr(j->b, out, where[i][1]);
        } else {
            args.tensors[i] = j->b->ptr(j->b, a, l->off[i] + set * l->stride[i]);
        }
    }
    args.num_tensors = (uint32_t)n;
    if (j->b->launch_local(j->b, j->ref, &args, &err) != 0)
        return kv_judge_fail_err(j, &err, "device reference");
    return 0;
}

/* Runs the task's device reference on set SET of A; outputs' values into
 * VAL[i], their error scales into SCALE[i] (host, count doubles each). */
static int device_reference(judge_trial *j, const int64_t *syms, kv_arena *a, const layout *l,
                            size_t set, double **val, double **scale)
{
    const kv_task *t = j->task;
    kv_arena out = {0};
    size_t where[KV_MAX_TENSORS][2];
    int rc = kv_judge_reference_arena(j, syms, a, l, set, &out, where);
    kv_fail err = {0};
    for (int i = 0; i < t->num_tensors && rc == 0; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        size_t count = kv_tensor_count(t, i, syms);
        if (j->b->read(j->b, &out, where[i][0], val[i], count * sizeof(double), &err) != 0 ||
            (scale[i] &&
             j->b->read(j->b, &out, where[i][1], scale[i], count * sizeof(double), &err) != 0))
            rc = kv_judge_fail_err(j, &err, "device reference: reading back");
    }
    kv_judge_own_free(j, &out);
    return rc;
}

int kv_judge_reference(judge_trial *j, const int64_t *syms, kv_arena *a, const layout *l,
                       size_t set, double *const *in, double **val, double **scale, int device)
{
    if (device && j->ref) return device_reference(j, syms, a, l, set, val, scale);
    kv_judge_reference_cpu(j, syms, in, val, scale);
    return 0;
}

void kv_judge_reference_cpu(const judge_trial *j, const int64_t *syms, double *const *in,
                            double **val, double **scale)
{
    const kv_task *t = j->task;
    double *tt[KV_MAX_TENSORS];
    for (int i = 0; i < t->num_tensors; i++)
        tt[i] = t->tensors[i].role == KV_OUT ? val[i] : in[i];
    /* An in-out tensor's array starts as its copy's values: the task's
     * reference reads them there and writes the answer over them. */
    for (int i = 0; i < j->visible; i++)
        if (j->twin[i] >= 0)
            memcpy(val[i], in[j->twin[i]], kv_tensor_count(t, i, syms) * sizeof(double));
    if (j->own->reference_scale)
        j->own->reference_scale(syms, tt, scale);
    else
        j->own->reference(syms, tt);
}

void kv_judge_draw_inputs(judge_trial *j, shape_data *d, kv_dist dist)
{
    double t0 = kv_now_s();
    for (int i = 0; i < j->task->num_tensors; i++) {
        if (j->task->tensors[i].role != KV_IN) continue;
        uint64_t bound = 0;
        if (kv_judge_dist(j, i, d->shape->syms, dist, &bound) == KV_DIST_INDEX)
            kv_fill_index(&j->rng, d->count[i], (int64_t)bound, d->img[i], d->val[i]);
        else
            kv_fill_random(j->task->tensors[i].dtype, dist, &j->rng, d->count[i], d->img[i],
                           d->val[i]);
    }
    kv_judge_lap(j, PROF_FILL, &t0);
}

int kv_judge_poison_outputs(judge_trial *j, shape_data *d, kv_arena *a, const layout *l)
{
    double t0 = kv_now_s();
    for (int i = 0; i < j->task->num_tensors; i++) {
        const kv_tensor_spec *ts = &j->task->tensors[i];
        if (ts->role != KV_OUT) continue;
        kv_dtype_poison(ts->dtype, kv_rng_next(&j->rng), d->poison[i]);
        kv_fail err = {0};
        int w = i < j->visible ? j->twin[i] : -1;
        /* An in-out tensor starts from its copy (the host's image of it, or
         * the copy where it was drawn), a poison nowhere in it. */
        int rc = w < 0       ? j->b->fill(j->b, a, l->off[i], d->count[i], d->poison[i],
                                          kv_dtype_size(ts->dtype), &err)
                 : d->img[w] ? j->b->write(j->b, a, l->off[i], d->img[w], d->bytes[i], &err)
                             : j->b->copy(j->b, a, l->off[w], a, l->off[i], d->bytes[i], &err);
        if (rc != 0 || j->b->sync(j->b, &err) != 0)
            return kv_judge_fail_err(j, &err, "poisoning outputs");
    }
    kv_judge_lap(j, PROF_UPLOAD, &t0);
    return 0;
}

int kv_judge_run_once(judge_trial *j, shape_data *d, kv_arena *a, const layout *l)
{
    kv_rmsg_run m;
    kv_judge_block(j, a, l, d->shape->syms, 0, 1, &m);
    double t0 = kv_now_s();
    char label[160];
    kv_judge_shape_label(j->task, d->shape, label, sizeof label);
    char *ctx = kv_asprintf("%s %s", d->held ? "held-out shape" : "scenario", label);
    int rc = kv_judge_run_block(j, &m, ctx, NULL);
    free(ctx);
    kv_judge_lap(j, PROF_RUN, &t0);
    return rc;
}

int kv_judge_fail_unwritten(judge_trial *j, const shape_data *d, int i, int runno,
                            const kv_check *c)
{
    char where[64];
    if (!c->unwritten) return 0;
    return kv_judge_fail_shape(
        j, d, KV_R_STALE_OR_UNWRITTEN_OUTPUT,
        "%zu of %zu elements of %s were not written by run %d (first at "
        "%s); outputs are poisoned before every run",
        c->unwritten, c->n, j->task->tensors[i].name, runno + 1,
        kv_judge_coords(j->task, i, d->shape->syms, c->first_unwritten, where, sizeof where));
}

int kv_judge_fail_differ(judge_trial *j, const shape_data *d, int i, size_t differ, size_t first)
{
    char where[64];
    if (!differ) return 0;
    return kv_judge_fail_shape(
        j, d, KV_R_NONDETERMINISTIC,
        "the two runs on the same inputs differ beyond the tolerance "
        "in %zu of %zu elements of %s (first at %s)",
        differ, d->count[i], j->task->tensors[i].name,
        kv_judge_coords(j->task, i, d->shape->syms, first, where, sizeof where));
}

int kv_judge_values(judge_trial *j, shape_data *d, int i, const kv_check *c, int cached)
{
    const kv_task *t = j->task;
    const char *name = t->tensors[i].name;
    char where[64];
    if (c->nonfinite)
        return kv_judge_fail_shape(
            j, d, KV_R_NAN_OR_INF_OUTPUT,
            "%zu elements of %s are NaN or Inf (first bad at %s: %.6g)", c->nonfinite, name,
            kv_judge_coords(t, i, d->shape->syms, c->worst, where, sizeof where), c->worst_got);
    if (c->bad && cached)
        return kv_judge_fail_shape(j, d, KV_R_RESULT_CACHED_ACROSS_CALLS,
                                   "%s holds the previous trial's answer for new inputs: "
                                   "results are cached across calls",
                                   name);
    if (c->bad)
        return kv_judge_fail_shape(
            j, d, KV_R_WRONG_RESULT,
            "%zu of %zu elements of %s are outside the tolerance; worst at "
            "%s: got %.6g, want %.6g (allowed %.3g, max abs err %.3g, max "
            "rel err %.3g)",
            c->bad, c->n, name,
            kv_judge_coords(t, i, d->shape->syms, c->worst, where, sizeof where), c->worst_got,
            c->worst_want, c->worst_limit, c->max_abs, c->max_rel);
    if (c->max_abs > d->max_abs) d->max_abs = c->max_abs;
    if (c->max_rel > d->max_rel) d->max_rel = c->max_rel;
    if (c->rel_l2 > d->rel_l2) d->rel_l2 = c->rel_l2;
    if (c->max_ratio > d->max_ratio) d->max_ratio = c->max_ratio;
    return 0;
}

int kv_judge_trials(const judge_trial *j, const shape_data *d)
{
    const kv_shape *sh = d->shape;
    int held = d->held;
    size_t in_bytes = 0;
    for (int i = 0; i < j->task->num_tensors; i++)
        if (j->task->tensors[i].role == KV_IN) in_bytes += d->bytes[i];
    int trials = held ? j->s.held_trials : j->s.trials;
    /* Quick runs give the full set of trials to the first scenario only; the
     * others still get the in-place refill (trial 2) with outliers, and their
     * timed calls are checked on fresh normal inputs besides. */
    if (!held && j->job->quick && sh != &j->task->scenarios[0] && trials > 2) trials = 2;
    /* Big shapes (a decode over a long cache) cost a second of input drawing
     * and reference per trial: three trials still cover every distribution,
     * the in-place refill and the move to new addresses. */
    if (in_bytes > ((size_t)256 << 20) && trials > 3) trials = 3;
    return trials;
}

int kv_judge_in_place(const judge_trial *j)
{
    const kv_jdev *b = j->b;
    if (!b->gen || !b->check || !b->compare || !b->count_diff || !b->copy || !b->count_poison ||
        !b->count_changed || kv_judge_can(j, KV_CAP_STAGED))
        return 0;
    /* Inputs on a device are read by a device reference only; arenas in
     * the judge's memory (no device inputs) by the task's own. */
    return j->ref != NULL || !kv_judge_can(j, KV_CAP_DEVICE_INPUTS);
}

int kv_judge_held_in_place(const judge_trial *j)
{
    return j->ref && kv_judge_can(j, KV_CAP_DEVICE_INPUTS) && kv_judge_in_place(j);
}
