/* Timing on the judge's clock (see judge_time.h).
 *
 * A scenario is timed in blocks: N calls, each on a distinct input set
 * that no earlier call has seen (fresh values every block, so a cache keyed
 * on the inputs' content never hits), every output poisoned before the
 * block. The judge's clock runs from its request to the runner's reply,
 * and the runner replies only once its whole device context is idle. On
 * cuda the block's inputs are written by the judge inside that window (data
 * on the device before the clock starts could be worked on unseen); on
 * opencl the runner moves them in and out inside it; on cpu the judge checks
 * instead that the candidate's process used no CPU between blocks. The
 * window's fixed cost, measured before the candidate's code was loaded
 * (kv_judge_calibrate), is taken off, and the rest divided by N is one
 * sample.
 *
 * After each block the judge copies the last call's outputs, and those of
 * a call drawn then with its own generator for a full check, the moment
 * the runner replies; then it checks every output was written, every input
 * is unchanged, the last output stays put once a moment has passed (at
 * once where the copies showed an idle device: reply_probe.h), nothing of
 * the candidate runs on, the canaries hold, and the drawn call's copy
 * matches the reference in full. Timed blocks draw N(0, 1) inputs; among
 * them, at places drawn per scenario, one block on each other distribution
 * of the correctness trials is run the same way and checked in full, its
 * time not counted: what is timed is checked on every distribution. */
#include "judge/judge_time.h"
#include "judge/device_check.h"
#include "backend/dtype.h"
#include "judge/judge_shape.h"
#include "judge/judge_tele.h"
#include "judge/tasks.h"
#include "judge/worker.h"
#include "util/buf.h"
#include "util/clock.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The distribution of the inputs a device draws for its timed blocks. */
#define TIMED_DIST KV_DIST_QUICK_NORMAL

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The median seconds of REPS runs of block M into *MED. */
static int median_block(judge_trial *j, const kv_rmsg_run *m, int reps, double *med)
{
    double v[32];
    if (reps > 32) reps = 32;
    for (int i = 0; i < reps; i++)
        if (kv_judge_run_block(j, m, "calibrating the judge's clock", &v[i]) != 0)
            return KV_JUDGE_FAILED;
    *med = median_of(v, (size_t)reps);
    return 0;
}

/* A calibration request on arena A of two tensors (an input, an output) of
 * BYTES each, NCALLS calls, launching nothing. */
static void null_block(const kv_arena *a, size_t bytes, uint32_t ncalls, kv_rmsg_run *m)
{
    memset(m, 0, sizeof *m);
    m->arena = a->id;
    m->num_tensors = 2;
    m->ncalls = ncalls;
    m->flags = KV_RUN_NO_LAUNCH;
    m->num_sets = 1;
    m->offset[0] = 0;
    m->offset[1] = a->bytes / 2;
    m->bytes[0] = m->bytes[1] = bytes;
    m->is_output[1] = 1;
}

/* One of the judge's own steps on arena A: BYTES written as inputs (SEED
 * their draw), the cache flushed, or BYTES copied within A (the copies a
 * reply is probed with). 0, or -1 with *ERR. */
enum own_step { STEP_GEN, STEP_FLUSH, STEP_COPY };

static int own_step_once(judge_trial *j, enum own_step step, kv_arena *a, size_t bytes,
                         uint64_t seed, kv_fail *err)
{
    switch (step) {
    case STEP_GEN:
        return j->b->gen(j->b, a, 0, KV_BF16, TIMED_DIST, bytes / 2, seed, ~0ull, err);
    case STEP_FLUSH:
        return j->b->flush ? j->b->flush(j->b, err) : 0;
    default:
        return j->b->copy(j->b, a, 0, a, bytes, bytes, err);
    }
}

/* own_step_once and the wait for it; the judge fails where either fails. */
static int own_step_done(judge_trial *j, enum own_step step, kv_arena *a, size_t bytes,
                         uint64_t seed)
{
    kv_fail err = {0};
    if (own_step_once(j, step, a, bytes, seed, &err) != 0 || j->b->sync(j->b, &err) != 0)
        return kv_judge_fail_err(j, &err, "calibrating the judge's clock");
    return 0;
}

/* The median seconds of STEP on BYTES and the wait for it, over seven
 * runs after a first one not counted (its launch loads the module), into
 * *MED. */
static int time_own_step(judge_trial *j, enum own_step step, kv_arena *a, size_t bytes, double *med)
{
    double v[8];
    for (int i = 0; i < 8; i++) {
        double t0 = kv_now_s();
        if (own_step_done(j, step, a, bytes, (uint64_t)i + 1) != 0) return KV_JUDGE_FAILED;
        v[i] = kv_now_s() - t0;
    }
    *med = median_of(v + 1, 7);
    return 0;
}

/* The device's switch from the judge's context to the runner's inside a
 * window (KV_CAP_SWITCH), as a timed block has it: the judge's writes (its
 * context the device's last), then the runner's work. A null block that
 * touches the device against one that does not, each after the judge's
 * own write of BYTES inside the window and with one more before it (so
 * neither starts with the device in the runner's context): the median
 * difference. Uncalibrated, the switch (about 0.14 ms on an H200) was
 * charged to the candidate's calls: a block of 200 calls of 5 us took
 * 0.7 us more a call (bench/NOTES.md, 2026-12-02, commit d94eae3). */
static int time_switch(judge_trial *j, kv_arena *a, size_t bytes, double *out)
{
    double v[2][8];
    kv_rmsg_run m;
    for (int i = 0; i < 8; i++)
        for (int touch = 0; touch < 2; touch++) {
            null_block(a, 0, 0, &m);
            if (touch) m.flags |= KV_RUN_TOUCH;
            if (own_step_done(j, STEP_GEN, a, bytes, (uint64_t)i + 11) != 0) return KV_JUDGE_FAILED;
            double t0 = kv_now_s();
            if (own_step_done(j, STEP_GEN, a, bytes, (uint64_t)i + 1) != 0 ||
                kv_judge_run_block(j, &m, "calibrating the judge's clock", NULL) != 0)
                return KV_JUDGE_FAILED;
            v[touch][i] = kv_now_s() - t0;
        }
    *out = fmax(0, median_of(v[1], 8) - median_of(v[0], 8));
    return 0;
}

/* The calibration in the verdict's artifacts. */
static void record_calibration(judge_trial *j)
{
    json_object_set_new(j->extra, "clock_calibration",
                        json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:b}", "round_trip_us",
                                  j->c.round_trip_s * 1e6, "transfer_us", j->c.xfer_s * 1e6,
                                  "per_mb_us", j->c.per_byte_s * 1e6 * (1 << 20), "flush_us",
                                  j->c.flush_s * 1e6, "copy_us", j->c.copy_s * 1e6, "switch_us",
                                  j->c.switch_s * 1e6, "recalibrated", j->recalibrated));
}

/* The calibration's steps on arena A (of 2 x BIG bytes). */
static int calibrate_on(judge_trial *j, kv_arena *a, size_t big, size_t small)
{
    kv_rmsg_run m;
    null_block(a, 0, 0, &m);
    if (median_block(j, &m, 15, &j->c.round_trip_s) != 0) return KV_JUDGE_FAILED;
    if (kv_judge_can(j, KV_CAP_STAGED)) {
        /* The runner moves an input and an output in and out: 4 x bytes. */
        double t_small = 0, t_big = 0, t_many = 0;
        null_block(a, small, 1, &m);
        if (median_block(j, &m, 9, &t_small) != 0) return KV_JUDGE_FAILED;
        null_block(a, big, 1, &m);
        if (median_block(j, &m, 9, &t_big) != 0) return KV_JUDGE_FAILED;
        null_block(a, small, 16, &m);
        if (median_block(j, &m, 9, &t_many) != 0) return KV_JUDGE_FAILED;
        j->c.per_byte_s = fmax(0, (t_big - t_small) / (4.0 * (double)(big - small)));
        double per_call = fmax(0, (t_many - t_small) / 15.0 - 4.0 * small * j->c.per_byte_s);
        j->c.xfer_s = per_call; /* per call, beside the bytes */
    } else if (kv_judge_can(j, KV_CAP_DEVICE_INPUTS) && j->b->gen) {
        /* The judge's in-window steps on cuda: a block's input writes in one
         * launch, and the cache's flush. */
        double t_small = 0, t_big = 0;
        if (time_own_step(j, STEP_GEN, a, small, &t_small) != 0 ||
            time_own_step(j, STEP_GEN, a, big, &t_big) != 0)
            return KV_JUDGE_FAILED;
        j->c.per_byte_s = fmax(0, (t_big - t_small) / (double)(big - small));
        j->c.xfer_s = fmax(0, t_small - small * j->c.per_byte_s); /* per launch */
        if (time_own_step(j, STEP_FLUSH, a, 0, &j->c.flush_s) != 0) return KV_JUDGE_FAILED;
        if (kv_judge_can(j, KV_CAP_SWITCH) && time_switch(j, a, small, &j->c.switch_s) != 0)
            return KV_JUDGE_FAILED;
    }
    /* The idle device's answer to the copies a reply is probed with. */
    if (kv_judge_can(j, KV_CAP_IDLE_REPLY) && j->b->copy &&
        time_own_step(j, STEP_COPY, a, small, &j->c.copy_s) != 0)
        return KV_JUDGE_FAILED;
    return 0;
}

int kv_judge_calibrate(judge_trial *j)
{
    double began = kv_now_s();
    kv_worker_phase("calibrating the judge's clock");
    memset(&j->c, 0, sizeof j->c);
    size_t big = j->b->backend->calib_bytes, small = 64u << 10;
    layout l;
    memset(&l, 0, sizeof l);
    l.bytes = 2 * big;
    l.nsets = 1;
    kv_arena a = {0};
    int rc = kv_judge_arena_new(j, &l, &a);
    if (rc == 0) rc = calibrate_on(j, &a, big, small);
    if (kv_judge_arena_free(j, &a) != 0) rc = KV_JUDGE_FAILED;
    if (rc != 0) return rc;
    record_calibration(j);
    kv_judge_lap(j, PROF_CALIBRATE, &began);
    return 0;
}

/* Measures the clock again, after the candidate's code is loaded, keeping
 * each cost at the lower of the two measures. A calibration inflated by a
 * burst of load takes more off every block than the window held (a kernel
 * then looks faster than its bytes allow); the code in the runner could
 * slow the null blocks, but a minimum never rises, so nothing it does here
 * can shorten its own times. */
static int recalibrate_down(judge_trial *j)
{
    calib before = j->c;
    if (kv_judge_calibrate(j) != 0) return KV_JUDGE_FAILED;
    j->c.round_trip_s = fmin(before.round_trip_s, j->c.round_trip_s);
    j->c.xfer_s = fmin(before.xfer_s, j->c.xfer_s);
    j->c.per_byte_s = fmin(before.per_byte_s, j->c.per_byte_s);
    j->c.flush_s = fmin(before.flush_s, j->c.flush_s);
    j->c.copy_s = fmin(before.copy_s, j->c.copy_s);
    j->c.switch_s = fmin(before.switch_s, j->c.switch_s);
    j->recalibrated = 1;
    record_calibration(j);
    return 0;
}

/* A scenario's timing state. */
typedef struct timing {
    const kv_shape *sh;
    layout l;
    kv_arena a;
    size_t nmax;         /* sets in the arena */
    size_t in_bytes;     /* one set's input bytes */
    size_t out_bytes;    /* one set's output bytes */
    int n_inputs;        /* input tensors */
    unsigned char *copy; /* cpu, opencl: the judge's copy of the block's inputs */
    size_t copy_bytes;
    double burst_cpu, burst_t0; /* the runner's CPU seconds, the time: inputs about to be shared */
    uint64_t seeds[KV_MAX_TENSORS]; /* cuda: this block's input seeds */
    unsigned char poison[KV_MAX_TENSORS][8];
    kv_arena keep;  /* the last call's outputs for the late-change look (judge only) */
    int graph;      /* timed blocks replay the runner's graph of the block's calls */
    double write_s; /* cuda: this block's input writes and flush on the device's clock; -1 */
    kv_dist dist;   /* this block's inputs: N(0, 1) when timed, any when only checked */
} timing;

/* How a device draws the inputs of TM's block: by its quick generators,
 * which cost a block's window and its input check a fraction of the full
 * ones (a block on each other distribution per scenario). */
static int device_dist(const timing *tm)
{
    switch (tm->dist) {
    case KV_DIST_OUTLIERS:
        return KV_DIST_QUICK_OUTLIERS;
    case KV_DIST_SMALL_INT:
        return KV_DIST_QUICK_SMALL_INT;
    default:
        return TIMED_DIST;
    }
}

/* 1 when the late-change look runs where the outputs are: the backend
 * copies and compares there, so no output crosses to the host (a
 * prefill's is tens of MB, read twice a block). */
static int late_look_in_place(const judge_trial *j)
{
    return j->b->copy && j->b->count_diff;
}

/* Bytes of the contiguous region holding sets 0..N-1 of tensor I. */
static size_t region(const timing *tm, int i, size_t n)
{
    return (n - 1) * tm->l.stride[i] + tm->l.len[i];
}

/* Output I of the block's N sets filled with a new poison. */
static int poison_output(judge_trial *j, timing *tm, int i, size_t n)
{
    const kv_tensor_spec *ts = &j->task->tensors[i];
    kv_fail err = {0};
    size_t es = kv_dtype_size(ts->dtype), count = tm->l.len[i] / es;
    kv_dtype_poison(ts->dtype, kv_rng_next(&j->rng), tm->poison[i]);
    if (tm->l.stride[i] == tm->l.len[i]) {
        if (j->b->fill(j->b, &tm->a, tm->l.off[i], n * count, tm->poison[i], es, &err) != 0)
            return kv_judge_fail_err(j, &err, "poisoning outputs");
        return 0;
    }
    for (size_t s = 0; s < n; s++)
        if (j->b->fill(j->b, &tm->a, tm->l.off[i] + s * tm->l.stride[i], count, tm->poison[i], es,
                       &err) != 0)
            return kv_judge_fail_err(j, &err, "poisoning outputs");
    return 0;
}

/* In-out tensors of the block's N sets start from their copies: drawn
 * from the seed the copy is drawn from (FROM_SEEDS: cuda, where the copy
 * itself is written inside the window), else copied from the copy as the
 * arena holds it. */
static int start_inout(judge_trial *j, timing *tm, size_t n, int from_seeds)
{
    const kv_task *t = j->task;
    kv_fail err = {0};
    if (j->task == j->own) return 0; /* none */
    for (int i = 0; i < j->visible; i++) {
        int w = j->twin[i];
        if (w < 0) continue;
        size_t r = region(tm, i, n), es = kv_dtype_size(t->tensors[i].dtype);
        if (r != region(tm, w, n) || tm->l.stride[i] != tm->l.stride[w])
            return kv_judge_fail(j, KV_R_HARNESS_ERROR,
                                 "an in-out tensor laid out unlike its copy");
        int rc = 0;
        if (from_seeds)
            rc = j->b->gen(j->b, &tm->a, tm->l.off[i], t->tensors[i].dtype, device_dist(tm), r / es,
                           tm->seeds[w], ~0ull, &err);
        else if (j->b->copy)
            rc = j->b->copy(j->b, &tm->a, tm->l.off[w], &tm->a, tm->l.off[i], r, &err);
        else
            memcpy(j->b->ptr(j->b, &tm->a, tm->l.off[i]), j->b->ptr(j->b, &tm->a, tm->l.off[w]), r);
        if (rc != 0) return kv_judge_fail_err(j, &err, "starting in-out tensors");
    }
    if (j->b->sync(j->b, &err) != 0) return kv_judge_fail_err(j, &err, "starting in-out tensors");
    return 0;
}

/* Everything before the clock: fresh inputs (cpu, opencl; on cuda they are
 * written inside the window), poisoned outputs. */
static int prepare_block(judge_trial *j, timing *tm, size_t n)
{
    const kv_task *t = j->task;
    kv_fail err = {0};
    double t0 = kv_now_s();
    size_t at = 0;
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        size_t count = tm->l.len[i] / kv_dtype_size(ts->dtype);
        uint64_t bound = 0;
        int index = kv_judge_dist(j, i, tm->sh->syms, KV_DIST_NORMAL, &bound) == KV_DIST_INDEX;
        if (ts->role == KV_OUT) {
            if (poison_output(j, tm, i, n) != 0) return KV_JUDGE_FAILED;
        } else if (kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) {
            tm->seeds[i] = kv_rng_next(&j->rng);
        } else {
            /* Drawn into the judge's own copy first: the candidate's process
             * sees them only in the short copy below. */
            for (size_t s = 0; s < n; s++) {
                void *dst = tm->copy + at + s * tm->l.stride[i];
                if (index)
                    kv_fill_index(&j->rng, count, (int64_t)bound, dst, NULL);
                else
                    kv_fill_random(ts->dtype, tm->dist, &j->rng, count, dst, NULL);
            }
            at += region(tm, i, n);
        }
    }
    /* The shared arena gets the block's inputs in one burst, with the
     * runner's CPU noted on both sides of it (check_idle). */
    tm->burst_cpu = kv_judge_can(j, KV_CAP_DEVICE_INPUTS) ? -1 : kv_runner_cpu_seconds(j->rn);
    tm->burst_t0 = kv_now_s();
    at = 0;
    for (int i = 0; i < t->num_tensors && !kv_judge_can(j, KV_CAP_DEVICE_INPUTS); i++) {
        if (t->tensors[i].role == KV_OUT) continue;
        size_t r = region(tm, i, n);
        memcpy(j->b->ptr(j->b, &tm->a, tm->l.off[i]), tm->copy + at, r);
        at += r;
    }
    if (start_inout(j, tm, n, kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) != 0) return KV_JUDGE_FAILED;
    if (j->b->sync(j->b, &err) != 0) return kv_judge_fail_err(j, &err, "preparing a timed block");
    kv_judge_lap(j, PROF_FILL, &t0);
    return 0;
}

/* On cuda, inside the window: the block's inputs, then a cold cache, timed
 * on the device's clock too (TM->write_s). */
static int write_inputs_on_device(judge_trial *j, timing *tm, size_t n)
{
    const kv_task *t = j->task;
    kv_fail err = {0};
    int marked = j->b->mark && j->b->elapsed && j->b->mark(j->b, 0, &err) == 0;
    kv_fail_clear(&err);
    tm->write_s = -1;
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_IN) continue;
        size_t es = kv_dtype_size(ts->dtype);
        uint64_t forced = ~0ull;
        int dist = kv_judge_dist(j, i, tm->sh->syms, device_dist(tm), &forced);
        if (j->b->gen(j->b, &tm->a, tm->l.off[i], ts->dtype, dist, region(tm, i, n) / es,
                      tm->seeds[i], forced, &err) != 0)
            return kv_judge_fail_err(j, &err, "writing a timed block's inputs");
    }
    if ((j->b->flush && j->b->flush(j->b, &err) != 0) ||
        (marked && j->b->mark(j->b, 1, &err) != 0) || j->b->sync(j->b, &err) != 0)
        return kv_judge_fail_err(j, &err, "writing a timed block's inputs");
    double secs = 0;
    if (marked && j->b->elapsed(j->b, &secs, &err) == 0) tm->write_s = secs;
    kv_fail_clear(&err);
    return 0;
}

/* The calibrated cost of a block's input writes and flush on cuda. */
static double calibrated_writes(const judge_trial *j, const timing *tm, size_t n)
{
    return j->c.per_byte_s * (double)(n * tm->in_bytes) + j->c.flush_s;
}

/* The part of a block's window that is not the candidate's: what the same
 * window costs with no call in it. On cuda the block's writes count at the
 * lower of their calibrated cost and WRITE_S, their time on the device's
 * clock (when known, >= 0): the writes dominate the window of a long
 * decode (a generator at 1-1.4 TB/s against calls that read at 4), so a
 * calibration a few percent high (another process's context torn down
 * while it ran, a clock higher in the block than in it) took more off a
 * block than its writes held, and a kernel looked up to 40% faster than it
 * is (bench/NOTES.md, 2026-12-02). A write slowed by other work (the
 * candidate's, late) is not taken off beyond its calibration: the lower of
 * the two never shortens the candidate's time. The device's switch from the
 * judge's writes to the runner's context is the window's too (time_switch). */
static double window_overhead(const judge_trial *j, const timing *tm, size_t n, double write_s)
{
    double o = j->c.round_trip_s;
    if (kv_judge_can(j, KV_CAP_STAGED)) {
        o += (double)n *
             (j->c.xfer_s + j->c.per_byte_s * 2.0 * (double)(tm->in_bytes + tm->out_bytes));
    } else if (kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) {
        double w = calibrated_writes(j, tm, n);
        o += tm->n_inputs * j->c.xfer_s + (write_s >= 0 && write_s < w ? write_s : w) +
             j->c.switch_s;
    }
    return o;
}

/* Fails unless the candidate's process stayed idle since its last step: a
 * process that computes between blocks could work on inputs outside the
 * clock. GAP: the seconds since then. */
static int check_idle(judge_trial *j, const timing *tm, double gap)
{
    if (kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) return 0; /* none exist before the window */
    if (j->trusted) return 0; /* the task's own baseline is not suspected */
    double now = kv_runner_cpu_seconds(j->rn);
    if (now < 0 || j->idle_cpu < 0) return 0;
    /* A runtime's thread pool winds down after a block: the backend says how long. */
    const kv_backend *bk = j->b->backend;
    double used = now - j->idle_cpu, allowed = bk->idle_floor_s + bk->idle_per_gap * gap;
    if (used > allowed)
        return kv_judge_fail(
            j, KV_R_ASYNC_WORK_OUTSIDE_HARNESS_STREAM,
            "scenario %s: the candidate's process used %.1f ms of CPU between timed "
            "blocks (allowed %.1f ms), while it should have been idle: work was done "
            "outside the timed calls",
            tm->sh->name, used * 1e3, allowed * 1e3);
    /* While the block's inputs were being shared, a process waiting for its
     * next request has nothing to run: the first allowance above is for a
     * thread pool winding down after the last block (ms after it), not for
     * work on inputs before the clock starts, which this one bounds to a
     * small share of a block. */
    if (tm->burst_cpu >= 0) {
        double during = now - tm->burst_cpu, burst = kv_now_s() - tm->burst_t0;
        double room = bk->burst_floor_s + bk->per_burst * burst;
        if (during > room)
            return kv_judge_fail(
                j, KV_R_ASYNC_WORK_OUTSIDE_HARNESS_STREAM,
                "scenario %s: the candidate's process used %.2f ms of CPU while the "
                "judge wrote the block's inputs (%.2f ms; allowed %.2f ms): it worked "
                "on inputs before its timed calls",
                tm->sh->name, during * 1e3, burst * 1e3, room * 1e3);
    }
    return kv_judge_check_quiet(j, NULL, "between timed blocks");
}

/* Fails when output I of set S of the block was not computed (C). */
static int fail_timed_output(judge_trial *j, const timing *tm, size_t s, int i, const kv_check *c)
{
    if (!c->unwritten && !c->bad && !c->nonfinite) return 0;
    return kv_judge_fail(j, KV_R_TIMED_OUTPUT_WRONG,
                         "scenario %s: a timed call's %s (input set %zu of its block) has %zu "
                         "unwritten, %zu wrong and %zu NaN/Inf elements (worst at [%zu]: %.6g "
                         "instead of %.6g): the timed code did not compute the answer",
                         tm->sh->name, j->task->tensors[i].name, s, c->unwritten, c->bad,
                         c->nonfinite, c->worst, c->worst_got, c->worst_want);
}

/* check_in_full with the device reference, where the block's data is:
 * nothing but the check's summary comes back. KEPT: the outputs are read
 * from the copy made at the reply (TM's keep arena, after the last set's),
 * else from the arena. */
static int check_in_full_in_place(judge_trial *j, timing *tm, size_t s, int kept)
{
    const kv_task *t = j->task;
    double t0 = kv_now_s();
    kv_arena ref = {0};
    size_t where[KV_MAX_TENSORS][2];
    int rc = kv_judge_reference_arena(j, tm->sh->syms, &tm->a, &tm->l, s, &ref, where);
    kv_judge_lap(j, PROF_REFERENCE, &t0);
    kv_fail err = {0};
    size_t at = tm->out_bytes;
    for (int i = 0; i < t->num_tensors && rc == 0; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_OUT) continue;
        kv_check c;
        kv_arena *from = kept ? &tm->keep : &tm->a;
        size_t off = kept ? at : tm->l.off[i] + s * tm->l.stride[i];
        if (j->b->check(j->b, from, off, ts->dtype, tm->l.len[i] / kv_dtype_size(ts->dtype),
                        j->b->ptr(j->b, &ref, where[i][0]),
                        t->reference_scale ? j->b->ptr(j->b, &ref, where[i][1]) : NULL,
                        tm->poison[i], t->tol[ts->dtype], &c, &err) != 0)
            rc = kv_judge_fail_err(j, &err, "checking a timed call's output");
        else
            rc = fail_timed_output(j, tm, s, i, &c);
        at += tm->l.len[i];
    }
    kv_judge_own_free(j, &ref);
    kv_judge_lap(j, PROF_CHECK, &t0);
    return rc;
}

/* The reference of set S of the block and the check of its output (KEPT:
 * as copied at the reply, keep_outputs, where the check runs in place). */
static int check_in_full(judge_trial *j, timing *tm, size_t s, int kept)
{
    const kv_task *t = j->task;
    if (j->ref && kv_judge_in_place(j))
        return check_in_full_in_place(j, tm, s, kept); /* in place: the copies are made */
    double *in[KV_MAX_TENSORS] = {0}, *val[KV_MAX_TENSORS] = {0}, *scale[KV_MAX_TENSORS] = {0};
    void *got[KV_MAX_TENSORS] = {0};
    kv_fail err = {0};
    int device = j->ref != NULL, rc = 0;
    double t0 = kv_now_s();
    for (int i = 0; i < t->num_tensors && rc == 0; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        /* A device reference reads the inputs where they are. */
        if (device && ts->role != KV_OUT) continue;
        size_t count = tm->l.len[i] / kv_dtype_size(ts->dtype);
        void *img = kv_malloc(tm->l.len[i] + 8);
        if (j->b->read(j->b, &tm->a, tm->l.off[i] + s * tm->l.stride[i], img, tm->l.len[i], &err) !=
            0) {
            free(img);
            rc = kv_judge_fail_err(j, &err, "reading a timed call's tensors");
            break;
        }
        if (ts->role == KV_OUT) {
            got[i] = img;
            val[i] = kv_malloc((count + 1) * sizeof(double));
            if (t->reference_scale) scale[i] = kv_malloc((count + 1) * sizeof(double));
        } else {
            if (!device) {
                in[i] = kv_malloc((count + 1) * sizeof(double));
                for (size_t k = 0; k < count; k++)
                    in[i][k] = kv_dtype_load(ts->dtype, img, k);
            }
            free(img);
        }
    }
    if (rc == 0)
        rc = kv_judge_reference(j, tm->sh->syms, &tm->a, &tm->l, s, in, val, scale, device);
    kv_judge_lap(j, PROF_REFERENCE, &t0);
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_OUT) {
            free(in[i]);
            continue;
        }
        size_t count = tm->l.len[i] / kv_dtype_size(ts->dtype);
        kv_check c;
        if (rc == 0) {
            kv_check_output(ts->dtype, got[i], val[i], scale[i], count, tm->poison[i],
                            t->tol[ts->dtype], &c);
            rc = fail_timed_output(j, tm, s, i, &c);
        }
        free(got[i]);
        free(val[i]);
        free(scale[i]);
    }
    kv_judge_lap(j, PROF_CHECK, &t0);
    return rc;
}

/* Where the late look runs in place: the last set's outputs copied into
 * TM's keep arena and, when FULL_SET < N, that set's after them (the call
 * checked in full is read from there), all at once after the reply.
 * *AT_ONCE 1 when the copies show the device idle at the reply
 * (kv_judge_look_at_once). */
static int keep_outputs(judge_trial *j, timing *tm, size_t n, size_t full_set, int *at_once)
{
    const kv_task *t = j->task;
    kv_fail err = {0};
    size_t at = 0, copied = 0;
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        size_t last_off = tm->l.off[i] + (n - 1) * tm->l.stride[i];
        if (j->b->copy(j->b, &tm->a, last_off, &tm->keep, at, tm->l.len[i], &err) != 0 ||
            (full_set < n && j->b->copy(j->b, &tm->a, tm->l.off[i] + full_set * tm->l.stride[i],
                                        &tm->keep, tm->out_bytes + at, tm->l.len[i], &err) != 0))
            return kv_judge_fail_err(j, &err, "keeping a timed call's output");
        copied += tm->l.len[i] * (full_set < n ? 2 : 1);
        at += tm->l.len[i];
    }
    if (j->b->sync(j->b, &err) != 0)
        return kv_judge_fail_err(j, &err, "keeping a timed call's output");
    *at_once = kv_judge_look_at_once(j, copied);
    return 0;
}

/* Every output of the block's N calls written; keeps the last set's
 * outputs for the late-change look: in TM's keep arena where the look runs
 * in place (with set FULL_SET's, keep_outputs), else in LAST (host).
 * *AT_ONCE 1 when the look needs no settle. */
static int check_written(judge_trial *j, timing *tm, size_t n, unsigned char *last, size_t full_set,
                         int *at_once)
{
    const kv_task *t = j->task;
    kv_fail err = {0};
    size_t at = 0;
    int in_place = late_look_in_place(j);
    *at_once = 0;
    if (in_place && keep_outputs(j, tm, n, full_set, at_once) != 0) return KV_JUDGE_FAILED;
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_OUT) continue;
        size_t es = kv_dtype_size(ts->dtype), count = tm->l.len[i] / es;
        /* The last call first: it is the one a lying "done" would leave unfinished. */
        size_t last_off = tm->l.off[i] + (n - 1) * tm->l.stride[i];
        if (!in_place && j->b->read(j->b, &tm->a, last_off, last + at, tm->l.len[i], &err) != 0)
            return kv_judge_fail_err(j, &err, "keeping a timed call's output");
        size_t bad = 0, first = 0, where_set = 0;
        if (j->b->count_poison) {
            /* Every set in one pass: one launch and one answer per block. */
            if (j->b->count_poison(j->b, &tm->a, tm->l.off[i], ts->dtype, count, n, tm->l.stride[i],
                                   tm->poison[i], &bad, &first, &err) != 0)
                return kv_judge_fail_err(j, &err, "checking timed outputs");
            where_set = bad ? first / count : 0;
        } else {
            const unsigned char *base = j->b->ptr(j->b, &tm->a, tm->l.off[i]);
            for (size_t s = 0; s < n && !bad; s++)
                for (size_t k = 0; k < count; k++)
                    if (kv_dtype_is_poison(ts->dtype, base + s * tm->l.stride[i], k,
                                           tm->poison[i])) {
                        bad++;
                        where_set = s;
                    }
        }
        if (bad)
            return kv_judge_fail(j, KV_R_TIMED_OUTPUT_WRONG,
                                 "scenario %s: after a timed block, the output %s of input set "
                                 "%zu was not written (poison still there): the timed code did "
                                 "not compute every answer before it said it was done",
                                 tm->sh->name, ts->name, where_set);
        at += tm->l.len[i];
    }
    return 0;
}

/* Every input of the block's N calls as the judge wrote it. */
static int check_inputs(judge_trial *j, timing *tm, size_t n)
{
    const kv_task *t = j->task;
    kv_fail err = {0};
    size_t at = 0;
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_IN) continue;
        size_t changed = 0;
        if (kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) { /* drawn on the device from seeds */
            size_t es = kv_dtype_size(ts->dtype);
            /* The whole region as written, the padding between sets too. */
            uint64_t forced = ~0ull;
            int dist = kv_judge_dist(j, i, tm->sh->syms, device_dist(tm), &forced);
            if (j->b->count_changed(j->b, &tm->a, tm->l.off[i], ts->dtype, dist,
                                    region(tm, i, n) / es, tm->seeds[i], forced, &changed,
                                    &err) != 0)
                return kv_judge_fail_err(j, &err, "checking timed inputs");
        } else {
            size_t r = region(tm, i, n);
            changed = memcmp(j->b->ptr(j->b, &tm->a, tm->l.off[i]), tm->copy + at, r) != 0;
            at += r;
        }
        if (changed)
            return kv_judge_fail(j, KV_R_INPUT_MODIFIED,
                                 "scenario %s: input %s changed during a timed block", tm->sh->name,
                                 ts->name);
    }
    return 0;
}

/* After a block of N calls: the checks of the file comment. FULL: check
 * one of its calls, drawn now, against the reference in full. */
static int check_block(judge_trial *j, timing *tm, size_t n, int full)
{
    const kv_task *t = j->task;
    double t0 = kv_now_s();
    int host_look = !late_look_in_place(j);
    unsigned char *last = host_look ? kv_malloc(tm->out_bytes + 8) : NULL,
                  *again = host_look ? kv_malloc(tm->out_bytes + 8) : NULL;
    double t1 = t0;
    /* Which call is checked in full is drawn after the block. */
    size_t full_set = full ? (size_t)kv_rng_below(&j->rng, n) : n;
    int at_once = 0;
    int rc = check_written(j, tm, n, last, j->trusted ? n : full_set, &at_once);
    kv_judge_check_lap(j, BLOCK_WRITTEN, &t1);
    double kept_at = t1;
    if (rc != 0 ||
        j->trusted) { /* the task's own baseline: written outputs are all its timing needs */
        free(last);
        free(again);
        kv_judge_lap(j, PROF_CHECK, &t0);
        return rc;
    }
    rc = check_inputs(j, tm, n);
    kv_judge_check_lap(j, BLOCK_INPUTS, &t1);
    if (rc == 0) rc = kv_judge_check_quiet(j, NULL, "after a timed block");
    /* The late look comes a settle after the outputs were kept (the input
     * checks above count toward it), or at once where the copies showed the
     * device idle at the reply. */
    double since = kv_now_s() - kept_at;
    if (rc == 0 && !at_once && since < j->s.settle_s) kv_sleep_s(j->s.settle_s - since);
    kv_fail err = {0};
    size_t at = 0, changed = 0;
    for (int i = 0; i < t->num_tensors && rc == 0; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_OUT) continue;
        size_t last_off = tm->l.off[i] + (n - 1) * tm->l.stride[i], es = kv_dtype_size(ts->dtype);
        size_t differ = 0, first = 0;
        if (!host_look) {
            if (j->b->count_diff(j->b, &tm->a, last_off, &tm->keep, at, es, tm->l.len[i] / es,
                                 &differ, &first, &err) != 0)
                rc = kv_judge_fail_err(j, &err, "comparing a timed call's output");
            changed += differ;
        } else if (j->b->read(j->b, &tm->a, last_off, again + at, tm->l.len[i], &err) != 0) {
            rc = kv_judge_fail_err(j, &err, "reading a timed call's output");
        }
        at += tm->l.len[i];
    }
    if (rc == 0 && (changed || (host_look && memcmp(last, again, tm->out_bytes) != 0)))
        rc = kv_judge_fail(j, KV_R_ASYNC_WORK_OUTSIDE_HARNESS_STREAM,
                           "scenario %s: a timed call's output changed after the block was done: "
                           "work ran on after the candidate said it had finished",
                           tm->sh->name);
    free(last);
    free(again);
    if (rc != 0) return rc;
    kv_judge_check_lap(j, BLOCK_LATE, &t1);
    if (kv_judge_check_canaries(j, NULL, &tm->a, &tm->l) != 0) return KV_JUDGE_FAILED;
    kv_judge_check_lap(j, BLOCK_CANARIES, &t1);
    kv_judge_lap(j, PROF_CHECK, &t0);
    if (full) {
        if (check_in_full(j, tm, full_set, 1) != 0) return KV_JUDGE_FAILED;
        kv_judge_check_lap(j, BLOCK_FULL, &t1);
    }
    return 0;
}

/* The seconds per call of a block of N calls that took WINDOW seconds, its
 * writes WRITE_S on the device's clock (-1: unknown). */
static double per_call(const judge_trial *j, const timing *tm, size_t n, double window,
                       double write_s)
{
    double per = (window - window_overhead(j, tm, n, write_s)) / (double)n;
    /* The clock cannot see below its own resolution: a floor of 1 ns. */
    return per > 1e-9 ? per : 1e-9;
}

/* One timed block of N calls; *PER (may be NULL) the seconds per call
 * (the judge's clock, less the window's calibrated fixed cost). */
static int timed_block(judge_trial *j, timing *tm, size_t n, double *last_reply, int full,
                       double *window_s, double *write_s, double *per)
{
    if (prepare_block(j, tm, n) != 0 || check_idle(j, tm, kv_now_s() - *last_reply) != 0)
        return KV_JUDGE_FAILED;
    kv_rmsg_run m;
    kv_judge_block(j, &tm->a, &tm->l, tm->sh->syms, 0, (uint32_t)n, &m);
    if (tm->graph) m.flags |= KV_RUN_REPLAY;
    char ctx[160];
    snprintf(ctx, sizeof ctx, "timing scenario %s", tm->sh->name);
    double t0 = kv_now_s(), tw = t0;
    if (kv_judge_can(j, KV_CAP_DEVICE_INPUTS) && write_inputs_on_device(j, tm, n) != 0)
        return KV_JUDGE_FAILED;
    kv_judge_check_lap(j, BLOCK_WRITE, &tw);
    kv_rfail f;
    kv_fail err = {0};
    double secs = 0;
    double limit = j->s.kernel_timeout_s * (double)n;
    if (limit > 120 + j->s.kernel_timeout_s) limit = 120 + j->s.kernel_timeout_s;
    int rc = kv_runner_run(j->rn, &m, limit, &secs, &f, &err);
    double window = kv_now_s() - t0;
    *last_reply = j->replied_at = kv_now_s();
    if (rc < 0) return kv_judge_fail_err(j, &err, ctx);
    if (rc > 0) return kv_judge_fail_runner(j, &f, ctx);
    kv_judge_note_idle_cpu(j);
    kv_judge_lap(j, PROF_TIMED, &t0);
    if (check_block(j, tm, n, full) != 0) return KV_JUDGE_FAILED;
    if (window_s) *window_s = window;
    if (write_s) *write_s = tm->write_s;
    if (per) *per = per_call(j, tm, n, window, tm->write_s);
    return 0;
}

/* Where the runner can (KV_CAP_GRAPH), has it record the N calls of TM's
 * blocks into a graph, which the timed blocks then replay: a call costs
 * what it costs the device, not the host's launch (about 4.5 us under the
 * device machine's sandbox), as in an application that replays a graph.
 * The candidate's host code runs at the recording, before the block's
 * inputs exist (they are written inside the window); every timed block is
 * checked as before. Calls that cannot be recorded are timed as launches,
 * and SUMMARY says why. */
static int record_graph(judge_trial *j, timing *tm, size_t n, json_t *summary)
{
    if (!kv_judge_can(j, KV_CAP_GRAPH)) return 0;
    kv_rmsg_run m;
    kv_judge_block(j, &tm->a, &tm->l, tm->sh->syms, 0, (uint32_t)n, &m);
    m.flags = KV_RUN_CAPTURE;
    kv_rfail f;
    kv_fail err = {0};
    double secs = 0;
    int rc = kv_runner_run(j->rn, &m, 60 + j->s.kernel_timeout_s, &secs, &f, &err);
    if (rc < 0) return kv_judge_fail_err(j, &err, "recording a timed block");
    if (rc > 0 && f.code != KV_R_CAPTURE_UNSUPPORTED)
        return kv_judge_fail_runner(j, &f, "recording a timed block");
    tm->graph = rc == 0;
    json_object_set_new(summary, "timing", json_string(tm->graph ? "graph" : "launches"));
    if (!tm->graph) json_object_set_new(summary, "graph_refused", json_string(f.detail));
    return 0;
}

/* The device's energy counter, in joules: 0, or -1 where there is none (a
 * test's injected counter first). */
static int read_energy(judge_trial *j, double *joules)
{
    if (kv_energy_fault(j->b->backend->name, j->b->index, joules) == 0) return 0;
    return j->b->energy ? j->b->energy(j->b, joules) : -1;
}

/* The energy window: until the counter has moved ENERGY_MOVES times over
 * at least ENERGY_S seconds, never past ENERGY_MAX_S; blocks of at least
 * ENERGY_BLOCK_S each, so that what the judge does between them (a cache
 * flush, a round trip to the runner) is a small share of the window. */
enum { ENERGY_MOVES = 8, ENERGY_MAX_BLOCKS = 1 << 14 };
#define ENERGY_S 1.0
#define ENERGY_MAX_S 6.0
#define ENERGY_BLOCK_S 0.05

/* A thread that reads the counter about every millisecond and keeps when
 * it moved: the moves' times are then known to a poll, not to a block. */
typedef struct energy_poll {
    judge_trial *j;
    pthread_mutex_t mu;
    int stop, moves; /* moves seen; the first is the window's start */
    long polls;
    double t_first, e_first, t_last, e_last;
} energy_poll;

static void *poll_energy(void *arg)
{
    energy_poll *p = arg;
    double prev = 0;
    if (read_energy(p->j, &prev) != 0) return NULL;
    for (;;) {
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
        double e = 0, now = kv_now_s();
        if (read_energy(p->j, &e) != 0) continue;
        pthread_mutex_lock(&p->mu);
        int stop = p->stop;
        p->polls++;
        if (e != prev && !stop) {
            if (p->moves++ == 0) {
                p->t_first = now;
                p->e_first = e;
            }
            p->t_last = now;
            p->e_last = e;
        }
        pthread_mutex_unlock(&p->mu);
        prev = e;
        if (stop) return NULL;
    }
}

/* The calls of blocks [T0[k], T1[k]] of CALLS each that fall between A and
 * B, each block's calls taken as spread evenly over it. */
static double calls_between(const double *t0, const double *t1, size_t nb, double calls, double a,
                            double b)
{
    double n = 0;
    for (size_t k = 0; k < nb; k++) {
        double lo = t0[k] > a ? t0[k] : a, hi = t1[k] < b ? t1[k] : b;
        if (hi > lo && t1[k] > t0[k]) n += calls * (hi - lo) / (t1[k] - t0[k]);
    }
    return n;
}

/* Energy per call of the scenario TM times (issue 22), into SUMMARY: after
 * the timed blocks, blocks of its calls run back to back on the block's N
 * input sets as they are (no input written inside the window, so the
 * judge's work is not counted; the caches flushed before each block, and a
 * block goes over the sets more than once only where they outsize the
 * cache twice, so calls read their inputs from memory as in timing) while
 * a thread watches the counter. The energy between its first
 * and last move, over the calls made between those instants, is the energy
 * per call; over the seconds, the mean power. The outputs of the last
 * block are checked as after any timed block. Calls faster here than in
 * timing (on a device whose caches are flushed) did less on inputs they
 * had seen before: refused. MEDIAN_US: the timed median. */
static int measure_energy(judge_trial *j, timing *tm, size_t n, double median_us,
                          double *last_reply, json_t *summary)
{
    double e = 0;
    if (read_energy(j, &e) != 0) return 0; /* no counter: the metric is absent */
    /* More than one round over the sets in a block only where they outsize
     * the cache twice (a cyclic read then misses it every time, as timing's
     * fresh inputs do); else each round after the first would read from
     * the cache. */
    double per_block = (double)n * median_us * 1e-6;
    size_t rounds = per_block > 0 ? (size_t)ceil(ENERGY_BLOCK_S / per_block) : 1;
    if (rounds < 1 ||
        (double)n * (double)(tm->in_bytes + tm->out_bytes) < 2.0 * (double)j->b->cache_bytes)
        rounds = 1;
    if ((double)rounds * (double)n > 1e6) rounds = (size_t)(1e6 / (double)n) + 1;
    size_t calls = rounds * n;
    kv_worker_phase("energy of %s: blocks of %zu calls", tm->sh->name, calls);
    double t0 = kv_now_s();
    for (int i = 0; i < j->task->num_tensors; i++)
        if (j->task->tensors[i].role == KV_OUT && poison_output(j, tm, i, n) != 0)
            return KV_JUDGE_FAILED;
    if (start_inout(j, tm, n, 0) != 0) return KV_JUDGE_FAILED;
    kv_rmsg_run m;
    kv_judge_block(j, &tm->a, &tm->l, tm->sh->syms, 0, (uint32_t)calls, &m);
    double limit = j->s.kernel_timeout_s * (double)calls;
    if (limit > 120 + j->s.kernel_timeout_s) limit = 120 + j->s.kernel_timeout_s;
    energy_poll p = {.j = j};
    pthread_mutex_init(&p.mu, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, poll_energy, &p) != 0) {
        pthread_mutex_destroy(&p.mu);
        return kv_judge_fail(j, KV_R_HARNESS_ERROR, "cannot start the energy counter's reader");
    }
    /* The reader holds P, on this stack, until joined: a failure in the
     * window ends the loop, and the reader is joined before it returns. */
    double *b0 = kv_malloc(ENERGY_MAX_BLOCKS * sizeof *b0),
           *b1 = kv_malloc(ENERGY_MAX_BLOCKS * sizeof *b1);
    size_t nb = 0;
    double start = kv_now_s(), busy = 0;
    int rc = 0;
    while (rc == 0) {
        pthread_mutex_lock(&p.mu);
        int enough = p.moves > ENERGY_MOVES && p.t_last - p.t_first >= ENERGY_S;
        pthread_mutex_unlock(&p.mu);
        if (enough || nb == ENERGY_MAX_BLOCKS || kv_now_s() - start >= ENERGY_MAX_S) break;
        kv_fail err = {0};
        if ((j->b->flush && j->b->flush(j->b, &err) != 0) || j->b->sync(j->b, &err) != 0) {
            rc = kv_judge_fail_err(j, &err, "the energy window");
            break;
        }
        kv_rfail f;
        double secs = 0;
        b0[nb] = kv_now_s();
        int run = kv_runner_run(j->rn, &m, limit, &secs, &f, &err);
        b1[nb] = kv_now_s();
        busy += b1[nb] - b0[nb];
        nb++;
        if (run < 0) rc = kv_judge_fail_err(j, &err, "the energy window");
        if (run > 0) rc = kv_judge_fail_runner(j, &f, "the energy window");
    }
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    pthread_mutex_unlock(&p.mu);
    pthread_join(th, NULL);
    pthread_mutex_destroy(&p.mu);
    *last_reply = j->replied_at = nb ? b1[nb - 1] : kv_now_s();
    if (rc == 0) {
        kv_judge_note_idle_cpu(j);
        kv_judge_lap(j, PROF_ENERGY, &t0);
        /* A set's in-out tensors were worked on again and again here: only a
         * task without them has a reference for the last block's calls. */
        rc = check_block(j, tm, n, j->task == j->own);
    }
    if (rc != 0) {
        free(b0);
        free(b1);
        return rc;
    }
    double nc = p.moves > 1 ? calls_between(b0, b1, nb, (double)calls, p.t_first, p.t_last) : 0;
    double window = kv_now_s() - start, poll_s = p.polls > 0 ? window / (double)p.polls : window;
    free(b0);
    free(b1);
    json_t *en = json_object();
    json_object_set_new(en, "counter_moves", json_integer(p.moves > 0 ? p.moves - 1 : 0));
    json_object_set_new(en, "window_s", json_real(window));
    json_object_set_new(en, "calls_per_block", json_integer((json_int_t)calls));
    if (p.moves < 3 || nc < 1 || p.e_last <= p.e_first) {
        json_object_set_new(en, "absent", json_string("the counter did not move often enough"));
        json_object_set_new(summary, "energy", en);
        return 0;
    }
    double secs = p.t_last - p.t_first, joules = p.e_last - p.e_first;
    double per_call_us = secs / nc * 1e6;
    /* Where the caches cannot be flushed (a CPU) a set seen before may still
     * be in them: the comparison would refuse honest kernels there. */
    if (j->b->flush && per_call_us < 0.8 * median_us) {
        json_decref(en);
        return kv_judge_fail(j, KV_R_RESULT_CACHED_ACROSS_CALLS,
                             "scenario %s: calls on input sets they had seen took %.3f us, "
                             "against %.3f us on fresh ones: they did less on inputs seen before",
                             tm->sh->name, per_call_us, median_us);
    }
    double uj = joules / nc * 1e6;
    json_object_set_new(en, "joules", json_real(joules));
    json_object_set_new(en, "calls", json_real(nc));
    json_object_set_new(en, "seconds", json_real(secs));
    json_object_set_new(en, "per_call_us", json_real(per_call_us));
    /* A move is seen up to a poll late at each end, and the calls counted
     * between the moves may be off by up to half a block at each end (a
     * block's calls are taken as spread evenly over it, and a device may
     * still be working on them when the runner replies): REL_ERR bounds
     * both. The judge's gaps between blocks are inside the window, their
     * draw counted: RUNNER_SHARE is the window's share of runner blocks. */
    json_object_set_new(en, "runner_share", json_real(busy / window));
    json_object_set_new(en, "poll_s", json_real(poll_s));
    json_object_set_new(en, "rel_err", json_real(2.0 * poll_s / secs + (double)calls / nc));
    json_object_set_new(en, "move_every_s", json_real(secs / (double)(p.moves - 1)));
    json_object_set_new(summary, "energy", en);
    json_object_set_new(summary, "energy_uj", json_real(uj));
    json_object_set_new(summary, "energy_j", json_real(uj * 1e-6)); /* the store's row */
    json_object_set_new(summary, "power_w", json_real(joules / secs));
    return 0;
}

/* The timed blocks of TM's scenario, its arenas made (TM's A holds N
 * sets): the median and the rest of SUMMARY. */
static int time_blocks(judge_trial *j, timing *tm, size_t n, double *last_reply, json_t *summary)
{
    const kv_task *t = j->task;
    const kv_shape *sh = tm->sh;
    double *samples = kv_malloc(4096 * sizeof *samples),
           *windows = kv_malloc(4096 * sizeof *windows), *writes = kv_malloc(4096 * sizeof *writes);
    size_t ns = 0, reps = 0;
    /* The device's state before the first timed scenario, read beside the
     * judge's work (judge_tele.c); a later one's is the last one's after. */
    double tt = kv_now_s();
    kv_judge_tele_begin(&j->tele, j->b);
    kv_judge_lap(j, PROF_TELEMETRY, &tt);
    /* A block of the final size first, not counted (clocks, caches, the
     * driver's first use of the arena; a recorded graph's first replay,
     * which uploads it: the candidate's code ran on this shape in its
     * correctness trials, so the recording needs no launches before it).
     * Then the timed blocks: after each, with probability P, one of its
     * calls is checked in full, and the last is checked if none was: no
     * call can know it will not be. */
    double t0 = kv_now_s();
    int rc = record_graph(j, tm, n, summary);
    kv_judge_lap(j, PROF_RECORD, &t0);
    if (rc == 0) rc = timed_block(j, tm, n, last_reply, 0, NULL, NULL, NULL);
    double p = (double)j->s.checks_per_scenario / (double)j->s.min_blocks;
    int checked = 0;
    /* Among the timed blocks, at places drawn now, one block on each other
     * distribution the correctness trials use (outliers, small integers):
     * the same calls or graph replay, its inputs written the same way, one
     * call checked in full, its time not counted (the median stays on
     * N(0, 1) inputs). Timed work is then checked work on every
     * distribution: a recording or a timed path that differs from the
     * checked launches where N(0, 1) inputs cannot show it fails here. */
    int n_other = j->trusted ? 0 : KV_DIST_COUNT - 1, other_done = 0;
    size_t other_at[KV_DIST_COUNT], ran = 0;
    for (int k = 0; k < n_other; k++)
        other_at[k] = (size_t)kv_rng_below(&j->rng, (uint64_t)j->s.min_blocks + 1);
    double start = kv_now_s();
    while (rc == 0) {
        double el = kv_now_s() - start;
        int done = ((int)ns >= j->s.min_blocks && el >= j->s.min_time_s) ||
                   (el >= j->s.max_time_s && ns >= 3) || ns == 4096;
        if (done && other_done == n_other) break;
        tm->dist = KV_DIST_NORMAL;
        for (int k = 0; k < n_other; k++)
            if (other_at[k] != (size_t)-1 && (other_at[k] <= ran || done)) {
                tm->dist = (kv_dist)(k + 1);
                other_at[k] = (size_t)-1; /* not again */
                break;
            }
        ran++;
        if (tm->dist != KV_DIST_NORMAL) {
            kv_worker_phase("checking %s: a block of %zu calls on other inputs", sh->name, n);
            rc = timed_block(j, tm, n, last_reply, 1, NULL, NULL, NULL);
            other_done++;
            continue;
        }
        kv_worker_phase("timing %s: block %zu of %zu calls", sh->name, ns + 1, n);
        int full = kv_rng_uniform(&j->rng) < p;
        double per = 0;
        rc = timed_block(j, tm, n, last_reply, full, &windows[ns], &writes[ns], &per);
        samples[ns] = per * 1e6;
        ns++;
        checked += full;
        reps += n;
    }
    tm->dist = KV_DIST_NORMAL;
    if (rc == 0 && !checked && !j->trusted) {
        double tf = kv_now_s();
        rc = check_in_full(j, tm, (size_t)kv_rng_below(&j->rng, n), 0);
        kv_judge_check_lap(j, BLOCK_FULL, &tf);
    }
    if (rc != 0) goto out;
    tt = kv_now_s();
    kv_judge_tele_after(&j->tele, j->b, summary);
    kv_judge_lap(j, PROF_TELEMETRY, &tt);
    double med, iqr, mn;
    kv_stats(samples, ns, &med, &iqr, &mn);
    kv_roofline rf = t->roofline(sh->syms);
    double floor_us = rf.bytes / (j->b->ceiling_gbps * 1e9) * 1e6;
    double ideal_us = rf.bytes / (j->b->bandwidth_gbps * 1e9) * 1e6;
    /* A plausibility check, not the defence. On a CPU the inputs the judge
     * has just written sit in its caches, well above the DRAM bandwidth that
     * sets the floor, and that bandwidth is measured on a machine that may
     * be busy: more slack there. The task's own baseline is not suspected.
     * Before a verdict, the clock is measured again (never higher) and the
     * same windows are counted with it: on a loaded machine a calibration
     * can take more off a block than the block held. */
    double slack = j->b->backend->roofline_slack;
    if (!j->trusted && med < slack * floor_us && !j->recalibrated) {
        if ((rc = recalibrate_down(j)) != 0) goto out;
        for (size_t i = 0; i < ns; i++)
            samples[i] = per_call(j, tm, n, windows[i], writes[i]) * 1e6;
        kv_stats(samples, ns, &med, &iqr, &mn);
    }
    if (kv_judge_can(j, KV_CAP_DEVICE_INPUTS) && ns > 0 && writes[0] >= 0) {
        /* The block's writes: as calibrated, as the device's clock saw them,
         * and in how many blocks the device's clock was the lower. */
        size_t lower = 0;
        double cal = calibrated_writes(j, tm, n);
        for (size_t i = 0; i < ns; i++)
            lower += writes[i] < cal;
        json_object_set_new(summary, "input_writes_us",
                            json_pack("{s:f,s:f,s:I}", "calibrated", cal * 1e6, "device_median",
                                      median_of(writes, ns) * 1e6, "device_lower_blocks",
                                      (json_int_t)lower));
    }
    if (!j->trusted && med < slack * floor_us) {
        rc = kv_judge_fail(j, KV_R_FASTER_THAN_ROOFLINE,
                           "scenario %s: faster than the roofline allows: %.3f us < %.0f%% of the "
                           "floor %.3f us (%.0f bytes at %.1f GB/s); every timed output the judge "
                           "checked was right, so this is a measurement error or work skipped in "
                           "unchecked calls",
                           sh->name, med, slack * 100, floor_us, rf.bytes, j->b->ceiling_gbps);
        goto out;
    }
    json_object_set_new(summary, "median_us", json_real(med));
    json_object_set_new(summary, "iqr_us", json_real(iqr));
    json_object_set_new(summary, "min_us", json_real(mn));
    json_object_set_new(summary, "reps", json_integer((json_int_t)reps));
    json_object_set_new(summary, "blocks", json_integer((json_int_t)ns));
    json_object_set_new(summary, "calls_per_block", json_integer((json_int_t)n));
    json_object_set_new(summary, "roofline_us", json_real(ideal_us));
    json_object_set_new(summary, "roofline_fraction", json_real(ideal_us / med));
    json_object_set_new(summary, "bytes", json_real(rf.bytes));
    json_object_set_new(summary, "flops", json_real(rf.flops));
    json_object_set_new(summary, "input_sets", json_integer((json_int_t)tm->nmax));
    json_object_set_new(summary, "weight", json_real(sh->weight > 0 ? sh->weight : 1.0));
    json_object_set_new(summary, "tags", json_string(sh->tags ? sh->tags : ""));
    json_object_set_new(summary, "correct", json_integer(1));
    if (j->job->energy && !j->trusted) rc = measure_energy(j, tm, n, med, last_reply, summary);
out:
    free(samples);
    free(windows);
    free(writes);
    return rc;
}

int kv_judge_time_shape(judge_trial *j, const kv_shape *sh, json_t *summary)
{
    const kv_task *t = j->task;
    timing tm;
    memset(&tm, 0, sizeof tm);
    tm.sh = sh;
    tm.write_s = -1;
    double t0 = kv_now_s();
    for (int i = 0; i < t->num_tensors; i++) {
        size_t b = kv_tensor_count(t, i, sh->syms) * kv_dtype_size(t->tensors[i].dtype);
        if (t->tensors[i].role == KV_OUT)
            tm.out_bytes += b;
        else {
            tm.in_bytes += b;
            tm.n_inputs++;
        }
    }
    size_t nmax = kv_judge_timing_sets(j, sh->syms);
    int rc = 0;
    /* The copies made at each reply: the last set's outputs and the one
     * checked in full (made now, not in the first block's look). */
    if (late_look_in_place(j))
        rc =
            kv_judge_own_new(j, 2 * tm.out_bytes + 64, &tm.keep, "an arena for the judge's copies");
    /* A short block first, in an arena of its own, to size the others:
     * their arena holds just the sets a block needs. */
    double last_reply = kv_now_s();
    size_t n = nmax < 4 ? nmax : 4;
    double est = 0;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        tm.nmax = n;
        kv_judge_layout(j, sh->syms, n, 0, &tm.l);
        kv_worker_phase("timing %s: %zu input sets", sh->name, n);
        if ((rc = kv_judge_arena_new(j, &tm.l, &tm.a)) != 0) break;
        if (!kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) {
            tm.copy_bytes = 0;
            for (int i = 0; i < t->num_tensors; i++)
                if (t->tensors[i].role == KV_IN) tm.copy_bytes += region(&tm, i, n);
            tm.copy = kv_realloc(tm.copy, tm.copy_bytes + 8);
        }
        kv_judge_lap(j, PROF_ALLOC, &t0);
        if (pass == 1) break;
        if ((rc = timed_block(j, &tm, n, &last_reply, 0, NULL, NULL, &est)) != 0) break;
        size_t want = (size_t)ceil(j->s.block_s / (est > 1e-7 ? est : 1e-7));
        size_t next = want < 1 ? 1 : want > nmax ? nmax : want;
        if (next == n) break; /* the sizing arena will do */
        t0 = kv_now_s();
        rc = kv_judge_arena_free(j, &tm.a);
        n = next;
    }
    if (rc == 0) rc = time_blocks(j, &tm, n, &last_reply, summary);
    t0 = kv_now_s();
    if (kv_judge_arena_free(j, &tm.a) != 0) rc = KV_JUDGE_FAILED;
    kv_judge_own_free(j, &tm.keep);
    free(tm.copy);
    kv_judge_lap(j, PROF_ALLOC, &t0);
    return rc;
}
