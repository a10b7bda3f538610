/* The correctness trials (see judge_check.h).
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
#include "judge/judge_check.h"
#include "backend/dtype.h"
#include "judge/judge_check_in_place.h"
#include "judge/judge_held.h"
#include "judge/judge_shape.h"
#include "judge/worker.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hash.h"

#include <stdlib.h>
#include <string.h>

/* Writes D's input images into A. */
static int upload_inputs(judge_trial *j, shape_data *d, kv_arena *a, const layout *l)
{
    double t0 = kv_now_s();
    for (int i = 0; i < j->task->num_tensors; i++) {
        if (j->task->tensors[i].role != KV_IN) continue;
        kv_fail err = {0};
        if (j->b->write(j->b, a, l->off[i], d->img[i], d->bytes[i], &err) != 0)
            return kv_judge_fail_err(j, &err, "uploading inputs");
    }
    kv_judge_lap(j, PROF_UPLOAD, &t0);
    return 0;
}

/* The reference into D's val (outputs) and scale, unless PREPARED (drawn
 * with the inputs before the device was held). */
static int compute_reference(judge_trial *j, shape_data *d, kv_arena *a, const layout *l,
                             int prepared)
{
    double t0 = kv_now_s();
    if (!prepared && kv_judge_reference(j, d->shape->syms, a, l, 0, d->val, d->val, d->scale,
                                        kv_judge_device_reference_for(j, d)) != 0)
        return KV_JUDGE_FAILED;
    kv_judge_lap(j, PROF_REFERENCE, &t0);
    return 0;
}

static int read_outputs(judge_trial *j, shape_data *d, kv_arena *a, const layout *l, void **dst)
{
    if (kv_judge_can(j, KV_CAP_STAGED) && dst == d->late) {
        /* The device is the runner's: it copies the outputs out again. */
        kv_rmsg_run m;
        kv_judge_block(j, a, l, d->shape->syms, 0, 1, &m);
        m.flags = KV_RUN_DOWNLOAD_ONLY;
        if (kv_judge_run_block(j, &m, "reading outputs again", NULL) != 0) return KV_JUDGE_FAILED;
    }
    for (int i = 0; i < j->task->num_tensors; i++) {
        if (j->task->tensors[i].role != KV_OUT) continue;
        kv_fail err = {0};
        if (j->b->read(j->b, a, l->off[i], dst[i], d->bytes[i], &err) != 0)
            return kv_judge_fail_err(j, &err, "reading outputs");
    }
    return 0;
}

/* Checks run RUNNO's outputs (see the file comment for the order). */
static int check_run(judge_trial *j, shape_data *d, kv_arena *a, const layout *l, int runno)
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
        if (read_outputs(j, d, a, l, d->late) != 0) return KV_JUDGE_FAILED;
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
        return kv_judge_fail_shape(j, d, KV_R_ASYNC_WORK_OUTSIDE_HARNESS_STREAM,
                                   "%zu elements of %s changed after kv_launch returned and the "
                                   "candidate's device work was finished: work ran on another "
                                   "stream, queue, thread or process",
                                   diff, t->tensors[changed].name);
    }
    if (kv_judge_check_quiet(j, d, "when kv_launch returned") != 0) return KV_JUDGE_FAILED;
    kv_check checks[KV_MAX_TENSORS];
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_OUT) continue;
        kv_check *c = &checks[i];
        kv_check_output(ts->dtype, d->got[runno][i], d->val[i], d->scale[i], d->count[i],
                        d->poison[i], t->tol[ts->dtype], c);
        if (kv_judge_fail_unwritten(j, d, i, runno, c) != 0) return KV_JUDGE_FAILED;
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
        kv_fail err = {0};
        if (j->b->read(j->b, a, l->off[i], d->back, d->bytes[i], &err) != 0)
            return kv_judge_fail_err(j, &err, "reading inputs back");
        if (memcmp(d->back, d->img[i], d->bytes[i]) != 0) { /* checksums only for the message */
            uint64_t h0 = kv_hash64(d->img[i], d->bytes[i]), h1 = kv_hash64(d->back, d->bytes[i]);
            return kv_judge_fail_shape(j, d, KV_R_INPUT_MODIFIED,
                                       "input %s changed during run %s (checksum %016llx before, "
                                       "%016llx after)",
                                       t->tensors[i].name,
                                       j->job->quick ? "1 or 2"
                                       : runno       ? "2"
                                                     : "1",
                                       (unsigned long long)h0, (unsigned long long)h1);
        }
    }
    if (kv_judge_check_canaries(j, d, a, l) != 0) return KV_JUDGE_FAILED;
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_OUT) continue;
        kv_tolerance tol = t->tol[ts->dtype];
        if (runno == 1) {
            int bitwise = 0;
            size_t first = 0;
            size_t differ = kv_compare_runs(ts->dtype, d->got[0][i], d->got[1][i], d->val[i],
                                            d->scale[i], d->count[i], tol, &bitwise, &first);
            if (kv_judge_fail_differ(j, d, i, differ, first) != 0) return KV_JUDGE_FAILED;
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
        if (kv_judge_values(j, d, i, c, cached) != 0) return KV_JUDGE_FAILED;
    }
    return 0;
}

/* The trials of shape SH through the host: its inputs drawn there (or,
 * PREP, as drawn before the hold), the outputs read back and checked there. */
static int check_on_host(judge_trial *j, const kv_shape *sh, int held, held_prep *prep,
                         json_t **out)
{
    const kv_task *t = j->task;
    shape_data d;
    double t0 = kv_now_s();
    kv_shape_data_init(&d, t, sh, held);
    /* With a device reference the inputs' values are never read on the host:
     * not drawing them as doubles saves a quarter of the fill's writes. */
    if (kv_judge_device_reference_for(j, &d))
        for (int i = 0; i < t->num_tensors; i++)
            if (t->tensors[i].role != KV_OUT) {
                free(d.val[i]);
                d.val[i] = NULL;
            }
    layout l;
    kv_judge_layout(j, sh->syms, 1, 1, &l);
    kv_arena a = {0};
    kv_judge_lap(j, PROF_ALLOC, &t0);
    int trials = prep ? prep->trials : kv_judge_trials(j, &d), rc = 0;
    for (int trial = 0; trial < trials && rc == 0; trial++) {
        kv_worker_phase("correctness %s trial %d", sh->name, trial + 1);
        t0 = kv_now_s();
        if (trial != 1) {
            kv_arena old = a; /* the new one made first: other addresses */
            rc = kv_judge_arena_new(j, &l, &a);
            if (kv_judge_arena_free(j, &old) != 0) rc = KV_JUDGE_FAILED;
            if (rc != 0) break;
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
        if (upload_inputs(j, &d, &a, &l) != 0 ||
            compute_reference(j, &d, &a, &l, prep != NULL) != 0)
            rc = KV_JUDGE_FAILED;
        for (int runno = 0; runno < 2 && rc == 0; runno++) {
            rc = kv_judge_poison_outputs(j, &d, &a, &l);
            if (rc != 0) break;
            /* A driver may build a kernel for each new launch shape at its first call. */
            if (trial == 0 && runno == 0) j->grace_s = j->b->backend->first_call_grace_s;
            rc = kv_judge_run_once(j, &d, &a, &l);
            if (rc != 0) break;
            t0 = kv_now_s();
            if (read_outputs(j, &d, &a, &l, d.got[runno]) != 0 ||
                check_run(j, &d, &a, &l, runno) != 0)
                rc = KV_JUDGE_FAILED;
            kv_judge_lap(j, PROF_CHECK, &t0);
        }
    }
    if (kv_judge_arena_free(j, &a) != 0) rc = KV_JUDGE_FAILED;
    /* tol_ratio: the worst element's error over what the tolerance allows
     * it (the dashboard's error against tolerance). */
    if (rc == 0)
        *out = json_pack("{s:s,s:f,s:f,s:f,s:f,s:i}", "name", sh->name, "max_abs_err", d.max_abs,
                         "max_rel_err", d.max_rel, "rel_l2_err", d.rel_l2, "tol_ratio", d.max_ratio,
                         "trials", trials);
    kv_shape_data_free(&d, t);
    return rc;
}

int kv_judge_check_shape(judge_trial *j, const kv_shape *sh, int held, json_t **out)
{
    const kv_task *t = j->task;
    *out = NULL;
    held_prep *prep =
        held && j->held && j->held[sh - t->held_out].t ? &j->held[sh - t->held_out] : NULL;
    /* Held-out shapes in place where nothing was drawn before the hold (a
     * device that is the host's CPU): drawn now. */
    if (held && !prep && kv_judge_in_place(j) && !kv_judge_can(j, KV_CAP_DEVICE_INPUTS))
        prep = kv_judge_held_draw(j, sh);
    /* A long-lived judge's later children: the held-out shapes drawn in
     * place as the scenarios are, fresh for each (the device reference
     * agreed with the CPU's on a child's before, drawn on the host). */
    int fresh_in_place = held && !prep && kv_judge_held_in_place(j);
    int rc = kv_judge_in_place(j) && (!held || (prep && prep->in_place) || fresh_in_place)
                 ? kv_judge_check_in_place(j, sh, held, prep, out)
                 : check_on_host(j, sh, held, prep, out);
    if (prep) kv_judge_held_free(j, prep);
    return rc;
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
