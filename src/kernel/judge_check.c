/* The correctness trials (see judge_internal.h).
 *
 * Each trial of a shape draws fresh inputs (normal, normal with outliers,
 * small integers, in turn), writes them into an arena the runner shares,
 * and has the runner run the candidate twice. Before each run the judge
 * poisons every output with a NaN whose payload no computation produces.
 * After each run, in order: the output must stay the same once a moment has
 * passed (else work went on outside the call), no thread or process of the
 * candidate may be left running, every element must be written, the inputs
 * must be unchanged, the canaries intact, the second run must agree with
 * the first, and the values must match the double-precision reference.
 * Trial 1 refills the same arena in place (a result cached by address shows
 * up as the previous trial's answer); later trials get new arenas at new
 * addresses. */
#include "kernel/judge_internal.h"
#include "kernel/dtype.h"
#include "kernel/tasks.h"
#include "kernel/worker.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* 1 when shape D's reference comes from the device: the scenarios, when the
 * task has a device reference (held-out shapes checked here, not in place,
 * have the CPU's, drawn before the hold). */
static int device_reference_for(const judge *j, const shape_data *d)
{
    return j->ref && !d->held;
}

size_t kv_judge_reference_place(const judge *j, const int64_t *syms, size_t where[][2])
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

void kv_judge_reference_arena(judge *j, const int64_t *syms, kv_arena *a, const layout *l,
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
    char *err = NULL;
    if (out->bytes == 0) kv_judge_own_new(j, total, out, "device reference");
    if (out->bytes < total) kv_judge_fail(j, "harness_error", "device reference: arena too small");
    int n = t->num_tensors;
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role == KV_OUT) {
            args.tensors[i] = j->b->ptr(j->b, out, where[i][0]);
            if (n == KV_MAX_TENSORS)
                kv_judge_fail(j, "harness_error", "device reference: too many tensors");
            args.tensors[n++] = j->b->ptr(j->b, out, where[i][1]);
        } else {
            args.tensors[i] = j->b->ptr(j->b, a, l->off[i] + set * l->stride[i]);
        }
    }
    args.num_tensors = (uint32_t)n;
    if (j->b->launch_local(j->b, j->ref, &args, &err) != 0)
        kv_judge_fail_err(j, err, "device reference");
}

/* Runs the task's device reference on set SET of A; outputs' values into
 * VAL[i], their error scales into SCALE[i] (host, count doubles each). */
static void device_reference(judge *j, const int64_t *syms, kv_arena *a, const layout *l,
                             size_t set, double **val, double **scale)
{
    const kv_task *t = j->task;
    kv_arena out = {0};
    size_t where[KV_MAX_TENSORS][2];
    kv_judge_reference_arena(j, syms, a, l, set, &out, where);
    char *err = NULL;
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        size_t count = kv_tensor_count(t, i, syms);
        if (j->b->read(j->b, &out, where[i][0], val[i], count * sizeof(double), &err) != 0 ||
            (scale[i] &&
             j->b->read(j->b, &out, where[i][1], scale[i], count * sizeof(double), &err) != 0))
            kv_judge_fail_err(j, err, "device reference: reading back");
    }
    kv_judge_own_free(j, &out);
}

void kv_judge_reference(judge *j, const int64_t *syms, kv_arena *a, const layout *l, size_t set,
                        double *const *in, double **val, double **scale, int device)
{
    const kv_task *t = j->task;
    if (device && j->ref) {
        device_reference(j, syms, a, l, set, val, scale);
        return;
    }
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

void kv_judge_draw_inputs(judge *j, shape_data *d, kv_dist dist)
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

/* Writes D's input images into A. */
static void upload_inputs(judge *j, shape_data *d, kv_arena *a, const layout *l)
{
    double t0 = kv_now_s();
    for (int i = 0; i < j->task->num_tensors; i++) {
        if (j->task->tensors[i].role != KV_IN) continue;
        char *err = NULL;
        if (j->b->write(j->b, a, l->off[i], d->img[i], d->bytes[i], &err) != 0)
            kv_judge_fail_err(j, err, "uploading inputs");
    }
    kv_judge_lap(j, PROF_UPLOAD, &t0);
}

/* The reference into D's val (outputs) and scale, unless PREPARED (drawn
 * with the inputs before the device was held). */
static void compute_reference(judge *j, shape_data *d, kv_arena *a, const layout *l, int prepared)
{
    double t0 = kv_now_s();
    if (!prepared)
        kv_judge_reference(j, d->shape->syms, a, l, 0, d->val, d->val, d->scale,
                           device_reference_for(j, d));
    kv_judge_lap(j, PROF_REFERENCE, &t0);
}

void kv_judge_poison_outputs(judge *j, shape_data *d, kv_arena *a, const layout *l)
{
    double t0 = kv_now_s();
    for (int i = 0; i < j->task->num_tensors; i++) {
        const kv_tensor_spec *ts = &j->task->tensors[i];
        if (ts->role != KV_OUT) continue;
        kv_dtype_poison(ts->dtype, kv_rng_next(&j->rng), d->poison[i]);
        char *err = NULL;
        int w = i < j->visible ? j->twin[i] : -1;
        /* An in-out tensor starts from its copy (the host's image of it, or
         * the copy where it was drawn), a poison nowhere in it. */
        int rc = w < 0       ? j->b->fill(j->b, a, l->off[i], d->count[i], d->poison[i],
                                          kv_dtype_size(ts->dtype), &err)
                 : d->img[w] ? j->b->write(j->b, a, l->off[i], d->img[w], d->bytes[i], &err)
                             : j->b->copy(j->b, a, l->off[w], a, l->off[i], d->bytes[i], &err);
        if (rc != 0 || j->b->sync(j->b, &err) != 0) kv_judge_fail_err(j, err, "poisoning outputs");
    }
    kv_judge_lap(j, PROF_UPLOAD, &t0);
}

static void read_outputs(judge *j, shape_data *d, kv_arena *a, const layout *l, void **dst)
{
    if (kv_judge_can(j, KV_CAP_STAGED) && dst == d->late) {
        /* The device is the runner's: it copies the outputs out again. */
        kv_rmsg_run m;
        kv_judge_block(j, a, l, d->shape->syms, 0, 1, &m);
        m.flags = KV_RUN_DOWNLOAD_ONLY;
        kv_judge_run_block(j, &m, "reading outputs again");
    }
    for (int i = 0; i < j->task->num_tensors; i++) {
        if (j->task->tensors[i].role != KV_OUT) continue;
        char *err = NULL;
        if (j->b->read(j->b, a, l->off[i], dst[i], d->bytes[i], &err) != 0)
            kv_judge_fail_err(j, err, "reading outputs");
    }
}

void kv_judge_run_once(judge *j, shape_data *d, kv_arena *a, const layout *l)
{
    kv_rmsg_run m;
    kv_judge_block(j, a, l, d->shape->syms, 0, 1, &m);
    double t0 = kv_now_s();
    char label[160];
    kv_judge_shape_label(j->task, d->shape, label, sizeof label);
    char *ctx = kv_asprintf("%s %s", d->held ? "held-out shape" : "scenario", label);
    kv_judge_run_block(j, &m, ctx);
    free(ctx);
    kv_judge_lap(j, PROF_RUN, &t0);
}

void kv_judge_fail_unwritten(judge *j, const shape_data *d, int i, int runno, const kv_check *c)
{
    char where[64];
    if (c->unwritten)
        kv_judge_fail_shape(
            j, d, "stale_or_unwritten_output",
            "%zu of %zu elements of %s were not written by run %d (first at "
            "%s); outputs are poisoned before every run",
            c->unwritten, c->n, j->task->tensors[i].name, runno + 1,
            kv_judge_coords(j->task, i, d->shape->syms, c->first_unwritten, where, sizeof where));
}

void kv_judge_fail_differ(judge *j, const shape_data *d, int i, size_t differ, size_t first)
{
    char where[64];
    if (differ)
        kv_judge_fail_shape(
            j, d, "nondeterministic",
            "the two runs on the same inputs differ beyond the tolerance "
            "in %zu of %zu elements of %s (first at %s)",
            differ, d->count[i], j->task->tensors[i].name,
            kv_judge_coords(j->task, i, d->shape->syms, first, where, sizeof where));
}

void kv_judge_values(judge *j, shape_data *d, int i, const kv_check *c, int cached)
{
    const kv_task *t = j->task;
    const char *name = t->tensors[i].name;
    char where[64];
    if (c->nonfinite)
        kv_judge_fail_shape(
            j, d, "nan_or_inf_output", "%zu elements of %s are NaN or Inf (first bad at %s: %.6g)",
            c->nonfinite, name,
            kv_judge_coords(t, i, d->shape->syms, c->worst, where, sizeof where), c->worst_got);
    if (c->bad && cached)
        kv_judge_fail_shape(j, d, "result_cached_across_calls",
                            "%s holds the previous trial's answer for new inputs: "
                            "results are cached across calls",
                            name);
    if (c->bad)
        kv_judge_fail_shape(j, d, "wrong_result",
                            "%zu of %zu elements of %s are outside the tolerance; worst at "
                            "%s: got %.6g, want %.6g (allowed %.3g, max abs err %.3g, max "
                            "rel err %.3g)",
                            c->bad, c->n, name,
                            kv_judge_coords(t, i, d->shape->syms, c->worst, where, sizeof where),
                            c->worst_got, c->worst_want, c->worst_limit, c->max_abs, c->max_rel);
    if (c->max_abs > d->max_abs) d->max_abs = c->max_abs;
    if (c->max_rel > d->max_rel) d->max_rel = c->max_rel;
    if (c->rel_l2 > d->rel_l2) d->rel_l2 = c->rel_l2;
    if (c->max_ratio > d->max_ratio) d->max_ratio = c->max_ratio;
}

/* Checks run RUNNO's outputs (see the file comment for the order). */
static void check_run(judge *j, shape_data *d, kv_arena *a, const layout *l, int runno)
{
    const kv_task *t = j->task;
    /* An output with unwritten elements gets a longer look: work queued
     * elsewhere may still be on its way, and saying so is more useful than
     * "unwritten". */
    int unwritten = 0;
    for (int i = 0; i < t->num_tensors && !unwritten; i++)
        if (t->tensors[i].role == KV_OUT)
            for (size_t k = 0; k < d->count[i] && !unwritten; k++)
                unwritten =
                    kv_dtype_is_poison(t->tensors[i].dtype, d->got[runno][i], k, d->poison[i]);
    int looks = unwritten ? 20 : 1, changed = -1;
    for (int look = 0; look < looks && changed < 0; look++) {
        kv_sleep_s(unwritten ? 0.02 * (look + 1) : j->s.settle_s); /* up to 4 s in all */
        read_outputs(j, d, a, l, d->late);
        for (int i = 0; i < t->num_tensors && changed < 0; i++)
            if (t->tensors[i].role == KV_OUT &&
                memcmp(d->late[i], d->got[runno][i], d->bytes[i]) != 0)
                changed = i;
    }
    if (changed >= 0) {
        size_t diff = 0, es = kv_dtype_size(t->tensors[changed].dtype);
        for (size_t k = 0; k < d->count[changed]; k++)
            diff += memcmp((char *)d->late[changed] + k * es,
                           (char *)d->got[runno][changed] + k * es, es) != 0;
        kv_judge_fail_shape(j, d, "async_work_outside_harness_stream",
                            "%zu elements of %s changed after kv_launch returned and the "
                            "candidate's device work was finished: work ran on another stream, "
                            "queue, thread or process",
                            diff, t->tensors[changed].name);
    }
    kv_judge_check_quiet(j, d, "when kv_launch returned");
    kv_check checks[KV_MAX_TENSORS];
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_OUT) continue;
        kv_check *c = &checks[i];
        kv_check_output(ts->dtype, d->got[runno][i], d->val[i], d->scale[i], d->count[i],
                        d->poison[i], t->tol[ts->dtype], c);
        kv_judge_fail_unwritten(j, d, i, runno, c);
    }
    /* Inputs unchanged: read each back and compare with what was written.
     * Quick runs look after the second run only: a change made by the first
     * is still there (inputs are not rewritten between the two runs). */
    int look_inputs = !j->job->quick || runno == 1;
    if (look_inputs && !d->back) {
        size_t most = 0;
        for (int i = 0; i < t->num_tensors; i++)
            if (t->tensors[i].role == KV_IN && d->bytes[i] > most) most = d->bytes[i];
        d->back = kv_malloc(most + 8);
    }
    for (int i = 0; i < t->num_tensors && look_inputs; i++) {
        if (t->tensors[i].role != KV_IN) continue;
        char *err = NULL;
        if (j->b->read(j->b, a, l->off[i], d->back, d->bytes[i], &err) != 0)
            kv_judge_fail_err(j, err, "reading inputs back");
        if (memcmp(d->back, d->img[i], d->bytes[i]) != 0) { /* checksums only for the message */
            uint64_t h0 = kv_hash64(d->img[i], d->bytes[i]), h1 = kv_hash64(d->back, d->bytes[i]);
            kv_judge_fail_shape(j, d, "input_modified",
                                "input %s changed during run %s (checksum %016llx before, "
                                "%016llx after)",
                                t->tensors[i].name,
                                j->job->quick ? "1 or 2"
                                : runno       ? "2"
                                              : "1",
                                (unsigned long long)h0, (unsigned long long)h1);
        }
    }
    kv_judge_check_canaries(j, d, a, l);
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_OUT) continue;
        kv_tolerance tol = t->tol[ts->dtype];
        if (runno == 1) {
            int bitwise = 0;
            size_t first = 0;
            size_t differ = kv_compare_runs(ts->dtype, d->got[0][i], d->got[1][i], d->val[i],
                                            d->scale[i], d->count[i], tol, &bitwise, &first);
            kv_judge_fail_differ(j, d, i, differ, first);
        }
        kv_check *c = &checks[i];
        /* The previous trial's answer, returned again, is a cache. */
        int cached = 0;
        if (c->bad && !c->nonfinite && d->have_prev) {
            kv_check pc;
            kv_check_output(ts->dtype, d->got[runno][i], d->prev[i], d->prev_scale[i], d->count[i],
                            NULL, tol, &pc);
            cached = pc.bad == 0;
        }
        kv_judge_values(j, d, i, c, cached);
    }
}

int kv_judge_trials(const judge *j, const shape_data *d)
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

json_t *kv_judge_check_shape(judge *j, const kv_shape *sh, int held)
{
    const kv_task *t = j->task;
    held_prep *prep =
        held && j->held && j->held[sh - t->held_out].t ? &j->held[sh - t->held_out] : NULL;
    /* Held-out shapes in place where nothing was drawn before the hold (a
     * device that is the host's CPU): drawn now. */
    if (held && !prep && kv_judge_in_place(j) && !kv_judge_can(j, KV_CAP_DEVICE_INPUTS))
        prep = kv_judge_held_draw(j, sh);
    /* A long-lived judge's later children: the held-out shapes drawn in
     * place as the scenarios are, fresh for each (the device reference
     * agreed with the CPU's on its first child's). */
    int fresh_in_place = held && !prep && j->serving && kv_judge_held_in_place(j);
    if (kv_judge_in_place(j) && (!held || (prep && prep->in_place) || fresh_in_place)) {
        json_t *res = kv_judge_check_in_place(j, sh, held, prep);
        if (prep) kv_judge_held_free(j, prep);
        return res;
    }
    shape_data d;
    double t0 = kv_now_s();
    kv_shape_data_init(&d, t, sh, held);
    /* With a device reference the inputs' values are never read on the host:
     * not drawing them as doubles saves a quarter of the fill's writes. */
    if (device_reference_for(j, &d))
        for (int i = 0; i < t->num_tensors; i++)
            if (t->tensors[i].role != KV_OUT) {
                free(d.val[i]);
                d.val[i] = NULL;
            }
    layout l;
    kv_judge_layout(j, sh->syms, 1, 1, &l);
    kv_arena a = {0};
    kv_judge_lap(j, PROF_ALLOC, &t0);
    int trials = prep ? prep->trials : kv_judge_trials(j, &d);
    for (int trial = 0; trial < trials; trial++) {
        kv_worker_phase("correctness %s trial %d", sh->name, trial + 1);
        t0 = kv_now_s();
        if (trial != 1) {
            kv_arena old = a; /* the new one made first: other addresses */
            kv_judge_arena_new(j, &l, &a);
            kv_judge_arena_free(j, &old);
        }
        kv_judge_lap(j, PROF_ALLOC, &t0);
        if (trial > 0)
            for (int i = 0; i < t->num_tensors; i++)
                if (t->tensors[i].role == KV_OUT) {
                    memcpy(d.prev[i], d.val[i], d.count[i] * sizeof(double));
                    if (d.scale[i])
                        memcpy(d.prev_scale[i], d.scale[i], d.count[i] * sizeof(double));
                    d.have_prev = 1;
                }
        if (prep)
            kv_judge_held_take(j, &d, &prep->t[trial]);
        else
            kv_judge_draw_inputs(j, &d, (kv_dist)(trial % KV_DIST_COUNT));
        upload_inputs(j, &d, &a, &l);
        compute_reference(j, &d, &a, &l, prep != NULL);
        for (int runno = 0; runno < 2; runno++) {
            kv_judge_poison_outputs(j, &d, &a, &l);
            /* A driver may build a kernel for each new launch shape at its first call. */
            if (trial == 0 && runno == 0) j->grace_s = j->b->backend->first_call_grace_s;
            kv_judge_run_once(j, &d, &a, &l);
            t0 = kv_now_s();
            read_outputs(j, &d, &a, &l, d.got[runno]);
            check_run(j, &d, &a, &l, runno);
            kv_judge_lap(j, PROF_CHECK, &t0);
        }
    }
    kv_judge_arena_free(j, &a);
    /* tol_ratio: the worst element's error over what the tolerance allows
     * it (the dashboard's error against tolerance). */
    json_t *res = json_pack("{s:s,s:f,s:f,s:f,s:f,s:i}", "name", sh->name, "max_abs_err", d.max_abs,
                            "max_rel_err", d.max_rel, "rel_l2_err", d.rel_l2, "tol_ratio",
                            d.max_ratio, "trials", trials);
    kv_shape_data_free(&d, t);
    if (prep) kv_judge_held_free(j, prep);
    return res;
}

/* The class of scenario SH: its first tag ("" when none), into BUF. */
static const char *class_of(const kv_shape *sh, char *buf, size_t cap)
{
    const char *tags = sh->tags ? sh->tags : "";
    size_t n = strcspn(tags, ",");
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), tags);
    return buf;
}

int kv_judge_representatives(const kv_task *t, int *rep)
{
    int marked = 0;
    for (int i = 0; i < t->num_scenarios; i++) {
        char ci[64], cj[64];
        class_of(&t->scenarios[i], ci, sizeof ci);
        int best = i;
        for (int k = 0; k < t->num_scenarios; k++)
            if (strcmp(class_of(&t->scenarios[k], cj, sizeof cj), ci) == 0 &&
                t->scenarios[k].weight > t->scenarios[best].weight)
                best = k;
        /* The first of the class with the largest weight. */
        for (int k = 0; k < best; k++)
            if (strcmp(class_of(&t->scenarios[k], cj, sizeof cj), ci) == 0 &&
                t->scenarios[k].weight == t->scenarios[best].weight) {
                best = k;
                break;
            }
        rep[i] = best == i;
        marked += rep[i];
    }
    return marked;
}
