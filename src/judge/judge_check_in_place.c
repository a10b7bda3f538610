/* The correctness trials of a scenario or a held-out shape where its data
 * lives (see judge_check_in_place.h): the same trials and the same checks, in the
 * same order, as judge_check.c's file comment says, but a scenario's inputs
 * are drawn in the arena by the backend's helpers from (distribution,
 * seed), a held-out shape's written there as drawn on the host before the
 * hold (judge_held.c), the reference is computed beside them (the task's
 * device reference, or on the host over the judge's own mapping), and
 * every check of an output runs where the output is. Only counts, the first
 * index of each finding and the worst element come back: on a GPU, no
 * tensor crosses to the host but a held-out shape's inputs, once, and its
 * first trial's device reference, which must match the CPU's.
 *
 * What the candidate could reach is unchanged: its runner maps the arena as
 * before; the judge's copies of the two runs' outputs, of a held-out
 * shape's inputs, and the references (this trial's and the previous
 * one's, for the cache check) live in arenas the runner is never given. */
#include "judge/judge_check_in_place.h"
#include "backend/dtype.h"
#include "judge/judge_shape.h"
#include "judge/tasks.h"
#include "judge/worker.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One correctness trial's reference, with the draws of its inputs. */
typedef struct trial_ref {
    uint64_t seed[KV_MAX_TENSORS], forced[KV_MAX_TENSORS];
    int idist[KV_MAX_TENSORS];
    kv_arena ref;                                        /* device reference: values, scales */
    size_t where[KV_MAX_TENSORS][2];                     /* output i's values, scales in REF */
    double *val[KV_MAX_TENSORS], *scale[KV_MAX_TENSORS]; /* host reference */
} trial_ref;

/* One scenario's trials: the arena the runner sees, the judge's own
 * copies of the outputs, and the references. */
typedef struct trial_state {
    shape_data d;
    layout l;
    kv_arena a;
    kv_arena keep; /* outputs of run 0 and run 1, judge only */
    size_t keep_off[2][KV_MAX_TENSORS];
    /* The references, this trial's (NOW) and the last (PREV): LOCAL's two
     * in turn. Every child's are its own, on inputs drawn for it alone: a
     * reference kept for later children would give them inputs an earlier
     * child had answered. */
    trial_ref local[2];
    trial_ref *now, *prev; /* NOW's seeds are the trial's draws */
    uint64_t fingerprint;  /* of every trial's draws */
    kv_dist dist;
    /* A held-out shape's trial, as drawn on the host (NULL: a scenario's,
     * drawn in the arena), and the judge's copy of its inputs. */
    const held_trial *h;
    kv_arena orig;
    size_t orig_off[KV_MAX_TENSORS];
} trial_state;

/* Output I's reference values and scales (PREV: the last trial's), as the
 * backend's helpers read them. */
static const double *ref_val(judge_trial *j, trial_state *ts, int i, int prev)
{
    trial_ref *r = prev ? ts->prev : ts->now;
    if (!j->ref) return r->val[i];
    return j->b->ptr(j->b, &r->ref, r->where[i][0]);
}

static const double *ref_scale(judge_trial *j, trial_state *ts, int i, int prev)
{
    trial_ref *r = prev ? ts->prev : ts->now;
    if (!j->ref) return r->scale[i];
    if (!j->task->reference_scale) return NULL;
    return j->b->ptr(j->b, &r->ref, r->where[i][1]);
}

/* Trial TRIAL's reference slot: LOCAL's two in turn, the last trial's kept
 * for the cache check. */
static void pick_slots(trial_state *ts, int trial)
{
    ts->now = &ts->local[trial % 2];
    ts->prev = trial > 0 ? &ts->local[(trial - 1) % 2] : NULL;
}

/* A held-out shape's trial (TS's H): its images written into the arena, and
 * into the judge's own copy that the input check compares the arena with. */
static int write_inputs(judge_trial *j, trial_state *ts)
{
    const kv_task *t = j->task;
    const held_trial *h = ts->h;
    double t0 = kv_now_s();
    kv_fail err = {0};
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_IN) continue;
        if (j->b->write(j->b, &ts->a, ts->l.off[i], h->img[i], ts->d.bytes[i], &err) != 0 ||
            j->b->write(j->b, &ts->orig, ts->orig_off[i], h->img[i], ts->d.bytes[i], &err) != 0)
            return kv_judge_fail_err(j, &err, "writing inputs");
    }
    if (j->b->sync(j->b, &err) != 0) return kv_judge_fail_err(j, &err, "writing inputs");
    kv_judge_lap(j, PROF_UPLOAD, &t0);
    return 0;
}

/* The trial's inputs, drawn in the arena. */
static int draw_inputs(judge_trial *j, trial_state *ts)
{
    const kv_task *t = j->task;
    double t0 = kv_now_s();
    kv_fail err = {0};
    trial_ref *k = ts->now;
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_IN) continue;
        size_t n = ts->d.count[i];
        k->seed[i] = kv_rng_next(&j->rng);
        k->forced[i] = n ? kv_rng_below(&j->rng, n) : 0;
        k->idist[i] = kv_judge_dist(j, i, ts->d.shape->syms, (int)ts->dist, &k->forced[i]);
        uint64_t draw[4] = {ts->fingerprint, k->seed[i], k->forced[i], (uint64_t)k->idist[i]};
        ts->fingerprint = kv_hash64(draw, sizeof draw);
        if (j->b->gen(j->b, &ts->a, ts->l.off[i], t->tensors[i].dtype, k->idist[i], n, k->seed[i],
                      k->forced[i], &err) != 0)
            return kv_judge_fail_err(j, &err, "drawing inputs");
    }
    if (j->b->sync(j->b, &err) != 0) return kv_judge_fail_err(j, &err, "drawing inputs");
    kv_judge_lap(j, PROF_FILL, &t0);
    return 0;
}

/* The device reference of a held-out shape's first trial must agree with
 * the CPU's (TS's H, computed before the hold on the same inputs) to a billionth
 * of each element's scale: they differ only in the order of
 * double-precision sums. */
static int agree_with_cpu(judge_trial *j, trial_state *ts)
{
    const kv_task *t = j->task;
    const held_trial *h = ts->h;
    const shape_data *d = &ts->d;
    kv_fail err = {0};
    int rc = 0;
    for (int i = 0; i < t->num_tensors && rc == 0; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        size_t n = d->count[i];
        if (!h->val[i])
            return kv_judge_fail(j, KV_R_HARNESS_ERROR,
                                 "held-out shape %s: no CPU reference to check the "
                                 "device's against",
                                 d->shape->name);
        double *val = kv_malloc((n + 1) * sizeof(double)), *scale = NULL;
        kv_arena *r = &ts->now->ref;
        if (j->b->read(j->b, r, ts->now->where[i][0], val, n * sizeof(double), &err) != 0)
            rc = kv_judge_fail_err(j, &err, "device reference: reading back");
        if (rc == 0 && h->scale[i]) {
            scale = kv_malloc((n + 1) * sizeof(double));
            if (j->b->read(j->b, r, ts->now->where[i][1], scale, n * sizeof(double), &err) != 0)
                rc = kv_judge_fail_err(j, &err, "device reference: reading back");
        }
        for (size_t k = 0; k < n && rc == 0; k++) {
            double want = h->val[i][k], ws = h->scale[i] ? h->scale[i][k] : 0.0;
            double room = 1e-9 * (fabs(want) + ws) + 1e-12;
            if (!(fabs(val[k] - want) <= room) || (scale && !(fabs(scale[k] - ws) <= room)))
                rc = kv_judge_fail(j, KV_R_HARNESS_ERROR,
                                   "the task's device reference disagrees with its CPU reference "
                                   "on %s, %s[%zu]: %.17g (scale %.17g) against %.17g (scale "
                                   "%.17g)",
                                   d->shape->name, t->tensors[i].name, k, val[k],
                                   scale ? scale[k] : 0, want, ws);
        }
        free(val);
        free(scale);
    }
    return rc;
}

/* The trial's reference into TS's NOW; the last trial's stays for the
 * cache check. */
static int reference(judge_trial *j, trial_state *ts, int trial)
{
    const kv_task *t = j->task;
    shape_data *d = &ts->d;
    trial_ref *k = ts->now;
    d->have_prev = trial > 0;
    double t0 = kv_now_s();
    if (j->ref) {
        if (kv_judge_reference_arena(j, d->shape->syms, &ts->a, &ts->l, 0, &k->ref, k->where) != 0)
            return KV_JUDGE_FAILED;
    } else {
        /* The inputs as the arena holds them (the judge's own mapping). */
        for (int i = 0; i < t->num_tensors; i++) {
            if (t->tensors[i].role != KV_IN) continue;
            const void *img = j->b->ptr(j->b, &ts->a, ts->l.off[i]);
            for (size_t e = 0; e < d->count[i]; e++)
                d->val[i][e] = kv_dtype_load(t->tensors[i].dtype, img, e);
        }
        kv_judge_reference_cpu(j, d->shape->syms, d->val, d->val, d->scale);
        for (int i = 0; i < t->num_tensors; i++) {
            if (t->tensors[i].role != KV_OUT) continue;
            size_t n = (d->count[i] + 1) * sizeof(double);
            if (!k->val[i]) k->val[i] = kv_malloc(n);
            memcpy(k->val[i], d->val[i], n);
            if (d->scale[i]) {
                if (!k->scale[i]) k->scale[i] = kv_malloc(n);
                memcpy(k->scale[i], d->scale[i], n);
            }
        }
    }
    kv_fail err = {0};
    if (j->b->sync(j->b, &err) != 0) return kv_judge_fail_err(j, &err, "reference");
    kv_judge_lap(j, PROF_REFERENCE, &t0);
    return 0;
}

/* Fails unless the outputs stay as run RUNNO left them once a moment has
 * passed (none where AT_ONCE: the copies showed the device idle at the
 * reply); UNWRITTEN: some were still poisoned, so look longer. */
static int check_settled(judge_trial *j, trial_state *ts, int runno, int unwritten, int at_once)
{
    const kv_task *t = j->task;
    kv_fail err = {0};
    int looks = unwritten ? 20 : 1;
    for (int look = 0; look < looks; look++) {
        if (unwritten)
            kv_sleep_s(0.02 * (look + 1)); /* up to 4 s in all */
        else if (!at_once)
            kv_sleep_s(j->s.settle_s);
        for (int i = 0; i < t->num_tensors; i++) {
            if (t->tensors[i].role != KV_OUT) continue;
            size_t changed = 0, first = 0;
            if (j->b->count_diff(j->b, &ts->a, ts->l.off[i], &ts->keep, ts->keep_off[runno][i],
                                 kv_dtype_size(t->tensors[i].dtype), ts->d.count[i], &changed,
                                 &first, &err) != 0)
                return kv_judge_fail_err(j, &err, "comparing outputs");
            if (changed)
                return kv_judge_fail_shape(
                    j, &ts->d, KV_R_ASYNC_WORK_OUTSIDE_HARNESS_STREAM,
                    "%zu elements of %s changed after kv_launch returned and the "
                    "candidate's device work was finished: work ran on another "
                    "stream, queue, thread or process",
                    changed, t->tensors[i].name);
        }
    }
    return 0;
}

/* The checks after run RUNNO, in judge_check.c's order. */
static int check_run(judge_trial *j, trial_state *ts, int runno)
{
    const kv_task *t = j->task;
    shape_data *d = &ts->d;
    kv_fail err = {0};
    double t0 = kv_now_s();
    /* The outputs as the run left them, in the judge's own arena: every
     * check of them reads these copies. */
    size_t copied = 0;
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        if (j->b->copy(j->b, &ts->a, ts->l.off[i], &ts->keep, ts->keep_off[runno][i], d->bytes[i],
                       &err) != 0)
            return kv_judge_fail_err(j, &err, "keeping outputs");
        copied += d->bytes[i];
    }
    if (j->b->sync(j->b, &err) != 0) return kv_judge_fail_err(j, &err, "keeping outputs");
    int at_once = kv_judge_look_at_once(j, copied);
    size_t unwritten = 0;
    for (int i = 0; i < t->num_tensors && !unwritten; i++) {
        size_t first = 0;
        if (t->tensors[i].role == KV_OUT &&
            j->b->count_poison(j->b, &ts->a, ts->l.off[i], t->tensors[i].dtype, d->count[i], 1, 0,
                               d->poison[i], &unwritten, &first, &err) != 0)
            return kv_judge_fail_err(j, &err, "checking outputs");
    }
    kv_judge_check_lap(j, CHECK_KEEP, &t0);
    if (check_settled(j, ts, runno, unwritten != 0, at_once) != 0) return KV_JUDGE_FAILED;
    kv_judge_check_lap(j, CHECK_SETTLE, &t0);
    if (kv_judge_check_quiet(j, d, "when kv_launch returned") != 0) return KV_JUDGE_FAILED;
    kv_judge_check_lap(j, CHECK_QUIET, &t0);
    kv_check checks[KV_MAX_TENSORS];
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *s = &t->tensors[i];
        if (s->role != KV_OUT) continue;
        kv_check *c = &checks[i];
        if (j->b->check(j->b, &ts->keep, ts->keep_off[runno][i], s->dtype, d->count[i],
                        ref_val(j, ts, i, 0), ref_scale(j, ts, i, 0), d->poison[i],
                        t->tol[s->dtype], c, &err) != 0)
            return kv_judge_fail_err(j, &err, "checking outputs");
        if (kv_judge_fail_unwritten(j, d, i, runno, c) != 0) return KV_JUDGE_FAILED;
    }
    kv_judge_check_lap(j, CHECK_TOLERANCE, &t0);
    /* Inputs unchanged: drawn again and compared where they are. Quick runs
     * look after the second run only (inputs are not rewritten between). */
    for (int i = 0; i < t->num_tensors && (!j->job->quick || runno == 1); i++) {
        if (t->tensors[i].role != KV_IN) continue;
        size_t changed = 0, first = 0;
        int rc = ts->h ? j->b->count_diff(j->b, &ts->a, ts->l.off[i], &ts->orig, ts->orig_off[i],
                                          kv_dtype_size(t->tensors[i].dtype), d->count[i], &changed,
                                          &first, &err)
                       : j->b->count_changed(j->b, &ts->a, ts->l.off[i], t->tensors[i].dtype,
                                             ts->now->idist[i], d->count[i], ts->now->seed[i],
                                             ts->now->forced[i], &changed, &err);
        if (rc != 0) return kv_judge_fail_err(j, &err, "checking inputs");
        if (changed)
            return kv_judge_fail_shape(j, d, KV_R_INPUT_MODIFIED,
                                       "input %s changed during run %s (%zu of %zu elements differ "
                                       "from what the judge wrote)",
                                       t->tensors[i].name,
                                       j->job->quick ? "1 or 2"
                                       : runno       ? "2"
                                                     : "1",
                                       changed, d->count[i]);
    }
    kv_judge_check_lap(j, CHECK_INPUTS, &t0);
    if (kv_judge_check_canaries(j, d, &ts->a, &ts->l) != 0) return KV_JUDGE_FAILED;
    kv_judge_check_lap(j, CHECK_CANARIES, &t0);
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *s = &t->tensors[i];
        if (s->role != KV_OUT) continue;
        kv_tolerance tol = t->tol[s->dtype];
        if (runno == 1) {
            size_t differ = 0, first = 0;
            if (j->b->compare(j->b, &ts->keep, ts->keep_off[0][i], &ts->keep, ts->keep_off[1][i],
                              s->dtype, d->count[i], ref_val(j, ts, i, 0), ref_scale(j, ts, i, 0),
                              tol, &differ, &first, &err) != 0)
                return kv_judge_fail_err(j, &err, "comparing runs");
            if (kv_judge_fail_differ(j, d, i, differ, first) != 0) return KV_JUDGE_FAILED;
        }
        kv_check *c = &checks[i];
        /* The previous trial's answer, returned again, is a cache. */
        int cached = 0;
        if (c->bad && !c->nonfinite && d->have_prev) {
            kv_check pc;
            if (j->b->check(j->b, &ts->keep, ts->keep_off[runno][i], s->dtype, d->count[i],
                            ref_val(j, ts, i, 1), ref_scale(j, ts, i, 1), NULL, tol, &pc,
                            &err) != 0)
                return kv_judge_fail_err(j, &err, "checking outputs");
            cached = pc.bad == 0 && pc.nonfinite == 0;
        }
        if (kv_judge_values(j, d, i, c, cached) != 0) return KV_JUDGE_FAILED;
    }
    kv_judge_check_lap(j, CHECK_RUNS, &t0);
    return 0;
}

/* D's sizes; with a host reference, its inputs' values and the outputs'
 * references; HELD: a held-out shape, DRAWN before the hold (the judge's
 * copy of its inputs). */
static int state_init(judge_trial *j, trial_state *ts, const kv_shape *sh, int held, int drawn)
{
    const kv_task *t = j->task;
    memset(ts, 0, sizeof *ts);
    shape_data *d = &ts->d;
    d->shape = sh;
    d->held = held;
    size_t keep = 0, orig = 0;
    for (int i = 0; i < t->num_tensors; i++) {
        d->count[i] = kv_tensor_count(t, i, sh->syms);
        d->bytes[i] = d->count[i] * kv_dtype_size(t->tensors[i].dtype);
        size_t padded = (d->bytes[i] + 255) / 256 * 256;
        if (t->tensors[i].role == KV_OUT)
            for (int r = 0; r < 2; r++) {
                ts->keep_off[r][i] = keep;
                keep += padded;
            }
        else if (drawn) {
            ts->orig_off[i] = orig;
            orig += padded;
        }
        if (j->ref) continue;
        d->val[i] = kv_malloc((d->count[i] + 1) * sizeof(double));
        if (t->tensors[i].role == KV_OUT && t->reference_scale)
            d->scale[i] = kv_malloc((d->count[i] + 1) * sizeof(double));
    }
    kv_judge_layout(j, sh->syms, 1, 1, &ts->l);
    if (kv_judge_own_new(j, keep, &ts->keep, "an arena for the judge's copies") != 0 ||
        (drawn && kv_judge_own_new(j, orig + 256, &ts->orig,
                                   "an arena for the judge's copy of the inputs") != 0))
        return KV_JUDGE_FAILED;
    return 0;
}

/* Frees what TS holds, whatever state_init got to. */
static int state_free(judge_trial *j, trial_state *ts)
{
    int rc = kv_judge_arena_free(j, &ts->a);
    kv_judge_own_free(j, &ts->keep);
    kv_judge_own_free(j, &ts->orig);
    for (int r = 0; r < 2; r++) {
        kv_judge_own_free(j, &ts->local[r].ref);
        for (int i = 0; i < j->task->num_tensors; i++) {
            free(ts->local[r].val[i]);
            free(ts->local[r].scale[i]);
        }
    }
    kv_shape_data_free(&ts->d, j->task);
    return rc;
}

int kv_judge_check_in_place(judge_trial *j, const kv_shape *sh, int held, held_prep *prep,
                            json_t **out)
{
    trial_state *ts = kv_calloc(1, sizeof *ts);
    double t0 = kv_now_s();
    int rc = state_init(j, ts, sh, held, prep != NULL);
    int trials = prep ? prep->trials : kv_judge_trials(j, &ts->d);
    kv_judge_lap(j, PROF_ALLOC, &t0);
    for (int trial = 0; trial < trials && rc == 0; trial++) {
        kv_worker_phase("correctness %s trial %d", sh->name, trial + 1);
        t0 = kv_now_s();
        /* Trial 1 refills the same arena in place; later ones move. */
        if (trial != 1) {
            kv_arena old = ts->a; /* the new one made first: other addresses */
            rc = kv_judge_arena_new(j, &ts->l, &ts->a);
            if (kv_judge_arena_free(j, &old) != 0) rc = KV_JUDGE_FAILED;
            if (rc != 0) break;
        }
        kv_judge_lap(j, PROF_ALLOC, &t0);
        ts->dist = (kv_dist)(trial % KV_DIST_COUNT);
        ts->h = prep ? &prep->t[trial] : NULL;
        pick_slots(ts, trial);
        rc = ts->h ? write_inputs(j, ts) : draw_inputs(j, ts);
        if (rc == 0) rc = reference(j, ts, trial);
        if (rc == 0 && ts->h && j->ref && trial == 0) {
            t0 = kv_now_s();
            rc = agree_with_cpu(j, ts);
            kv_judge_lap(j, PROF_REFERENCE, &t0);
        }
        for (int runno = 0; runno < 2 && rc == 0; runno++) {
            rc = kv_judge_poison_outputs(j, &ts->d, &ts->a, &ts->l);
            if (rc != 0) break;
            /* A driver may build a kernel for each new launch shape at its first call. */
            if (trial == 0 && runno == 0) j->grace_s = j->b->backend->first_call_grace_s;
            rc = kv_judge_run_once(j, &ts->d, &ts->a, &ts->l);
            if (rc != 0) break;
            t0 = kv_now_s();
            rc = check_run(j, ts, runno);
            kv_judge_lap(j, PROF_CHECK, &t0);
        }
    }
    const shape_data *d = &ts->d;
    if (rc == 0) {
        *out = json_pack("{s:s,s:f,s:f,s:f,s:f,s:i}", "name", sh->name, "max_abs_err", d->max_abs,
                         "max_rel_err", d->max_rel, "rel_l2_err", d->rel_l2, "tol_ratio",
                         d->max_ratio, "trials", trials);
        /* What tells one child's inputs from another's (a scenario's, drawn in
         * place: each child's own). */
        if (!ts->h) {
            char fp[17];
            kv_hash_hex(ts->fingerprint, fp);
            json_object_set_new(*out, "inputs_fingerprint", json_string(fp));
        }
    }
    if (state_free(j, ts) != 0 && rc == 0) {
        json_decref(*out);
        *out = NULL;
        rc = KV_JUDGE_FAILED;
    }
    free(ts);
    return rc;
}
