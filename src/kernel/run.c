/* Inside the worker child: correctness trials and timing (see run.h).
 *
 * Each correctness trial of a shape draws fresh inputs (normal, normal with
 * outliers, small integers, in turn), uploads them, and runs the candidate
 * twice. Before each run every output is poisoned with a NaN whose payload
 * no computation produces. After each run, in order: the output must stay
 * the same once the whole device is synchronised and a moment has passed
 * (else work went on outside the harness's stream), no thread may be left
 * running (cpu), every element must be written, the inputs must be
 * unchanged, the canaries intact, the second run must agree with the first,
 * and the values must match the double-precision reference. Trial 1 refills
 * the same buffers in place (a result cached by pointer shows up as the
 * previous trial's answer); later trials use new buffers at new addresses. */
#include "kernel/run.h"
#include "kernel/backend.h"
#include "kernel/check.h"
#include "kernel/dtype.h"
#include "kernel/tasks.h"
#include "kernel/worker.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct settings {
    int trials, held_trials;
    int warmup, rounds, min_reps, max_reps;
    double min_time_s, max_time_s, settle_s, kernel_timeout_s;
    size_t budget_bytes;
} settings;

static settings settings_for(const kv_kernel_opts *o)
{
    settings s;
    if (o->quick) {
        s = (settings){.trials = 3,
                       .held_trials = 1,
                       .warmup = 1,
                       .rounds = 1,
                       .min_reps = 5,
                       .max_reps = 200,
                       .min_time_s = 0.02,
                       .max_time_s = 0.5,
                       .settle_s = 0.002,
                       .kernel_timeout_s = 5,
                       .budget_bytes = 128u << 20};
    } else {
        s = (settings){.trials = 5,
                       .held_trials = 3,
                       .warmup = 5,
                       .rounds = 2,
                       .min_reps = 50,
                       .max_reps = 5000,
                       .min_time_s = 0.3,
                       .max_time_s = 3.0,
                       .settle_s = 0.01,
                       .kernel_timeout_s = 10,
                       .budget_bytes = 1024u << 20};
    }
    if (o->kernel_timeout_s > 0) s.kernel_timeout_s = o->kernel_timeout_s;
    return s;
}

/* Where the worker's seconds go, summed over every shape: reported with the
 * result so that a slow evaluation says which host or device step to cut. */
enum prof_step {
    PROF_ALLOC,     /* host images and device buffers */
    PROF_FILL,      /* drawing the inputs */
    PROF_UPLOAD,    /* copying inputs and poison to the device */
    PROF_REFERENCE, /* the double-precision reference */
    PROF_RUN,       /* correctness launches */
    PROF_CHECK,     /* read-backs and comparisons */
    PROF_TIMED,     /* timed launches, baseline and candidate */
    PROF_COUNT
};
static const char *const prof_names[PROF_COUNT] = {"alloc", "fill",  "upload", "reference",
                                                   "run",   "check", "timed"};

/* Everything a run needs, shared by the helpers below. */
typedef struct run {
    double prof[PROF_COUNT];
    const kv_task *task;
    const kv_kernel_opts *o;
    kv_backend *b;
    kv_module *cand, *base;
    kv_module *ref; /* the task's device reference, or NULL */
    settings s;
    kv_rng rng;
    json_t *extra; /* sent with a failure: build log */
} run;

/* Adds the time since *T0 to step STEP and moves *T0 to now. */
static void prof_lap(run *r, enum prof_step step, double *t0)
{
    double now = kv_now_s();
    r->prof[step] += now - *t0;
    *t0 = now;
}

/* Sends the failure in ERR ("code: detail") and exits. */
static _Noreturn void fail_err(run *r, const char *err, const char *context)
{
    const char *colon = err ? strstr(err, ": ") : NULL;
    char code[64] = "harness_error";
    if (colon && (size_t)(colon - err) < sizeof code) {
        memcpy(code, err, (size_t)(colon - err));
        code[colon - err] = '\0';
    }
    kv_worker_fail(code, r->extra, "%s%s%s", context ? context : "", context ? ": " : "",
                   colon ? colon + 2 : (err ? err : "unknown error"));
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Host-side images of one shape's tensors. */
typedef struct shape_data {
    const kv_shape *shape;
    int held;
    size_t count[KV_MAX_TENSORS], bytes[KV_MAX_TENSORS];
    void *img[KV_MAX_TENSORS];          /* inputs: as uploaded; outputs: scratch */
    double *val[KV_MAX_TENSORS];        /* inputs: values; outputs: the reference */
    double *prev[KV_MAX_TENSORS];       /* outputs: the previous trial's reference */
    double *scale[KV_MAX_TENSORS];      /* outputs: the reference's error scales (NULL: none) */
    double *prev_scale[KV_MAX_TENSORS]; /* outputs: the previous trial's error scales */
    void *got[2][KV_MAX_TENSORS];       /* outputs of run 0 and run 1 */
    void *late[KV_MAX_TENSORS];         /* outputs read again after settling */
    void *back; /* inputs read back after a run (the largest; on first use) */
    unsigned char poison[KV_MAX_TENSORS][8];
    int have_prev;
    /* worst errors over trials */
    double max_abs, max_rel, rel_l2, max_ratio;
} shape_data;

static void shape_data_init(shape_data *d, const kv_task *t, const kv_shape *sh, int held)
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

static void shape_data_free(shape_data *d, const kv_task *t)
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

static void fill_args(const kv_task *t, const kv_shape *sh, kv_dbuf *bufs, kv_launch_args *a)
{
    memset(a, 0, sizeof *a);
    a->abi_version = KV_TASK_ABI_VERSION;
    a->num_tensors = (uint32_t)t->num_tensors;
    for (int i = 0; i < t->num_tensors; i++)
        a->tensors[i] = bufs[i].handle;
    a->num_syms = (uint32_t)t->num_syms;
    for (int i = 0; i < t->num_syms; i++)
        a->syms[i] = sh->syms[i];
}

static void alloc_set(run *r, const shape_data *d, kv_dbuf *bufs)
{
    double t0 = kv_now_s();
    for (int i = 0; i < r->task->num_tensors; i++) {
        char *err = NULL;
        if (r->b->alloc(r->b, d->bytes[i], r->task->tensors[i].name, &bufs[i], &err) != 0)
            fail_err(r, err, "allocating tensors");
    }
    prof_lap(r, PROF_ALLOC, &t0);
}

static void release_set(run *r, kv_dbuf *bufs)
{
    for (int i = 0; i < r->task->num_tensors; i++)
        if (bufs[i].priv || bufs[i].handle) r->b->release(r->b, &bufs[i]);
}

/* Draws inputs from distribution DIST with RNG into D's images, uploads
 * them to BUFS; their values as doubles go to D's val only when VALUES is
 * set (the reference needs them; an input set only timed does not). */
static void upload_inputs(run *r, shape_data *d, kv_dbuf *bufs, kv_dist dist, kv_rng *rng,
                          int values)
{
    for (int i = 0; i < r->task->num_tensors; i++) {
        if (r->task->tensors[i].role != KV_IN) continue;
        double t0 = kv_now_s();
        kv_fill_random(r->task->tensors[i].dtype, dist, rng, d->count[i], d->img[i],
                       values ? d->val[i] : NULL);
        prof_lap(r, PROF_FILL, &t0);
        char *err = NULL;
        if (r->b->write(r->b, &bufs[i], d->img[i], &err) != 0) fail_err(r, err, "uploading inputs");
        prof_lap(r, PROF_UPLOAD, &t0);
    }
}

/* 1 when the reference of shape D comes from the device: the scenarios,
 * when the task has a device reference (held-out shapes are small, and
 * their CPU reference checks the device's). */
static int device_reference_for(const run *r, const shape_data *d)
{
    return r->ref && !d->held;
}

/* Runs the task's device reference on the inputs in BUFS; the outputs'
 * values go to VAL[i] and their error scales to SCALE[i] (host, count
 * doubles each). The harness's own code: a failure is a harness error. */
static void device_reference(run *r, shape_data *d, kv_dbuf *bufs, double **val, double **scale)
{
    const kv_task *t = r->task;
    kv_dbuf out[KV_MAX_TENSORS] = {0}, sc[KV_MAX_TENSORS] = {0};
    kv_launch_args a;
    fill_args(t, d->shape, bufs, &a);
    int n = t->num_tensors;
    char *err = NULL;
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        if (r->b->alloc(r->b, d->count[i] * sizeof(double), "reference", &out[i], &err) != 0 ||
            r->b->alloc(r->b, d->count[i] * sizeof(double), "reference scale", &sc[i], &err) != 0)
            kv_worker_fail("harness_error", r->extra, "device reference: allocating: %s", err);
        a.tensors[i] = out[i].handle;
        if (n == KV_MAX_TENSORS)
            kv_worker_fail("harness_error", r->extra, "device reference: too many tensors");
        a.tensors[n++] = sc[i].handle;
    }
    a.num_tensors = (uint32_t)n;
    kv_worker_watchdog(r->s.kernel_timeout_s * 6);
    if (r->b->launch(r->b, r->ref, &a, &err) != 0 || r->b->sync_stream(r->b, &err) != 0)
        kv_worker_fail("harness_error", r->extra, "device reference on %s: %s", d->shape->name,
                       err);
    kv_worker_watchdog(0);
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        if (r->b->read(r->b, &out[i], val[i], &err) != 0 ||
            (scale[i] && r->b->read(r->b, &sc[i], scale[i], &err) != 0))
            kv_worker_fail("harness_error", r->extra, "device reference: reading back: %s", err);
        r->b->release(r->b, &out[i]);
        r->b->release(r->b, &sc[i]);
    }
}

/* The device reference must agree with the CPU's (already in D) to a
 * billionth of each element's scale: they differ only in the order of
 * double-precision sums. */
static void cross_check_reference(run *r, shape_data *d, kv_dbuf *bufs)
{
    const kv_task *t = r->task;
    double *val[KV_MAX_TENSORS] = {0}, *scale[KV_MAX_TENSORS] = {0};
    for (int i = 0; i < t->num_tensors; i++)
        if (t->tensors[i].role == KV_OUT) {
            val[i] = kv_malloc((d->count[i] + 1) * sizeof(double));
            scale[i] = kv_malloc((d->count[i] + 1) * sizeof(double));
        }
    device_reference(r, d, bufs, val, scale);
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        for (size_t k = 0; k < d->count[i]; k++) {
            double want = d->val[i][k], ws = d->scale[i] ? d->scale[i][k] : 0.0;
            double room = 1e-9 * (fabs(want) + ws) + 1e-12;
            if (!(fabs(val[i][k] - want) <= room) ||
                (d->scale[i] && !(fabs(scale[i][k] - ws) <= room)))
                kv_worker_fail("harness_error", r->extra,
                               "the task's device reference disagrees with its CPU reference on "
                               "%s, %s[%zu]: %.17g (scale %.17g) against %.17g (scale %.17g)",
                               d->shape->name, t->tensors[i].name, k, val[i][k], scale[i][k], want,
                               ws);
        }
        free(val[i]);
        free(scale[i]);
    }
}

/* The reference into D's val for the outputs, and with the task's
 * reference_scale the outputs' error scales into D's scale: from the device
 * (device_reference_for) or the CPU. CROSS_CHECK: with a device reference,
 * compare it with the CPU's on this (held-out) shape. */
static void compute_reference(run *r, shape_data *d, kv_dbuf *bufs, int cross_check)
{
    double t0 = kv_now_s();
    if (device_reference_for(r, d)) {
        device_reference(r, d, bufs, d->val, d->scale);
        prof_lap(r, PROF_REFERENCE, &t0);
        return;
    }
    double *t[KV_MAX_TENSORS];
    for (int i = 0; i < r->task->num_tensors; i++)
        t[i] = d->val[i];
    if (r->task->reference_scale)
        r->task->reference_scale(d->shape->syms, t, d->scale);
    else
        r->task->reference(d->shape->syms, t);
    if (cross_check && r->ref) cross_check_reference(r, d, bufs);
    prof_lap(r, PROF_REFERENCE, &t0);
}

/* Writes a fresh poison into every output of BUFS. */
static void poison_outputs(run *r, shape_data *d, kv_dbuf *bufs)
{
    double t0 = kv_now_s();
    for (int i = 0; i < r->task->num_tensors; i++) {
        const kv_tensor_spec *ts = &r->task->tensors[i];
        if (ts->role != KV_OUT) continue;
        kv_dtype_poison(ts->dtype, kv_rng_next(&r->rng), d->poison[i]);
        kv_dtype_fill(ts->dtype, d->img[i], d->count[i], d->poison[i]);
        char *err = NULL;
        if (r->b->write(r->b, &bufs[i], d->img[i], &err) != 0)
            fail_err(r, err, "poisoning outputs");
    }
    prof_lap(r, PROF_UPLOAD, &t0);
}

static void read_outputs(run *r, shape_data *d, kv_dbuf *bufs, void **dst)
{
    (void)d;
    for (int i = 0; i < r->task->num_tensors; i++) {
        if (r->task->tensors[i].role != KV_OUT) continue;
        char *err = NULL;
        if (r->b->read(r->b, &bufs[i], dst[i], &err) != 0) fail_err(r, err, "reading outputs");
    }
}

/* "prefill (rows=4096 cols=256)" into BUF. */
static const char *shape_label(const kv_task *t, const kv_shape *sh, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s (", sh->name);
    for (int i = 0; i < t->num_syms && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s=%lld", i ? " " : "", t->syms[i],
                              (long long)sh->syms[i]);
    if (n < cap) snprintf(buf + n, cap - n, ")");
    return buf;
}

/* Row-major coordinates of flat index IDX of tensor T as "[r, c]". */
static const char *coords(const kv_task *t, int ti, const int64_t *syms, size_t idx, char *buf,
                          size_t cap)
{
    const kv_tensor_spec *ts = &t->tensors[ti];
    int64_t c[KV_MAX_RANK];
    for (int d = ts->rank - 1; d >= 0; d--) {
        int64_t ext = syms[ts->shape[d]];
        c[d] = ext ? (int64_t)(idx % (size_t)ext) : 0;
        idx = ext ? idx / (size_t)ext : 0;
    }
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ts->rank && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)c[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

/* Fails with CODE, mapped to wrong_on_held_out_shape for value errors on
 * a held-out shape. */
static _Noreturn void fail_shape(run *r, shape_data *d, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static _Noreturn void fail_shape(run *r, shape_data *d, const char *code, const char *fmt, ...)
{
    kv_buf b = KV_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    int value_error = strcmp(code, "stale_or_unwritten_output") == 0 ||
                      strcmp(code, "wrong_result") == 0 || strcmp(code, "nan_or_inf_output") == 0 ||
                      strcmp(code, "result_cached_across_calls") == 0;
    char label[160];
    shape_label(r->task, d->shape, label, sizeof label);
    if (d->held && value_error)
        kv_worker_fail("wrong_on_held_out_shape", r->extra, "held-out shape %s: %s: %s", label,
                       code, b.data);
    kv_worker_fail(code, r->extra, "%s %s: %s", d->held ? "held-out shape" : "scenario", label,
                   b.data);
}

/* One launch of M on BUFS under the watchdog, then its stream synchronised. */
static void launch_once(run *r, kv_module *m, shape_data *d, kv_dbuf *bufs)
{
    kv_launch_args a;
    fill_args(r->task, d->shape, bufs, &a);
    char *err = NULL;
    double t0 = kv_now_s();
    kv_worker_watchdog(r->s.kernel_timeout_s);
    if (r->b->launch(r->b, m, &a, &err) != 0 || r->b->sync_stream(r->b, &err) != 0)
        fail_err(r, err, "launch");
    kv_worker_watchdog(0);
    prof_lap(r, PROF_RUN, &t0);
}

/* Checks one run's outputs (see the file comment for the order). */
static void check_run(run *r, shape_data *d, kv_dbuf *bufs, int runno, int threads_before,
                      int threads_after)
{
    const kv_task *t = r->task;
    char where[64];
    /* Work still landing after the launch returned and the stream was synced. */
    char *err = NULL;
    kv_worker_watchdog(r->s.kernel_timeout_s);
    if (r->b->sync_device(r->b, &err) != 0) fail_err(r, err, "device synchronisation");
    kv_worker_watchdog(0);
    /* An output with unwritten elements gets a longer look: work queued
     * elsewhere may still be on its way, and saying so is more useful than
     * "unwritten". */
    int unwritten = 0;
    for (int i = 0; i < t->num_tensors && !unwritten; i++)
        if (t->tensors[i].role == KV_OUT)
            for (size_t k = 0; k < d->count[i] && !unwritten; k++)
                unwritten =
                    kv_dtype_is_poison(t->tensors[i].dtype, d->got[runno][i], k, d->poison[i]);
    int looks = unwritten ? 10 : 1, changed = -1;
    for (int look = 0; look < looks && changed < 0; look++) {
        sleep_s(unwritten ? 0.02 : r->s.settle_s);
        read_outputs(r, d, bufs, d->late);
        for (int i = 0; i < t->num_tensors && changed < 0; i++)
            if (t->tensors[i].role == KV_OUT &&
                memcmp(d->late[i], d->got[runno][i], d->bytes[i]) != 0)
                changed = i;
    }
    for (int i = 0; i < t->num_tensors; i++) {
        if (i != changed) continue;
        {
            size_t diff = 0, es = kv_dtype_size(t->tensors[i].dtype);
            for (size_t k = 0; k < d->count[i]; k++)
                diff +=
                    memcmp((char *)d->late[i] + k * es, (char *)d->got[runno][i] + k * es, es) != 0;
            fail_shape(r, d, "async_work_outside_harness_stream",
                       "%zu elements of %s changed after kv_launch returned and the harness's "
                       "stream was synchronised: work ran on another stream, queue or thread",
                       diff, t->tensors[i].name);
        }
    }
    if (r->b->kind == KV_BACKEND_CPU && threads_before >= 0 && threads_after > threads_before)
        fail_shape(r, d, "async_work_outside_harness_stream",
                   "%d thread(s) started by kv_launch were still running when it returned",
                   threads_after - threads_before);
    /* One pass over each output against the reference: the unwritten count
     * now, the values further down (with none unwritten, skipping poisoned
     * elements skips none, so the figures are those of a check without it). */
    kv_check checks[KV_MAX_TENSORS];
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role == KV_OUT) {
            kv_check *c = &checks[i];
            kv_check_output(ts->dtype, d->got[runno][i], d->val[i], d->scale[i], d->count[i],
                            d->poison[i], t->tol[ts->dtype], c);
            if (c->unwritten)
                fail_shape(r, d, "stale_or_unwritten_output",
                           "%zu of %zu elements of %s were not written by run %d (first at %s); "
                           "outputs are poisoned before every run",
                           c->unwritten, c->n, ts->name, runno + 1,
                           coords(t, i, d->shape->syms, c->first_unwritten, where, sizeof where));
        }
    }
    /* Inputs unchanged: read each back and compare with what was uploaded.
     * Quick runs look after the second run only: a change made by the first
     * is still there (inputs are not rewritten between the two runs). */
    int look_inputs = !r->o->quick || runno == 1;
    if (look_inputs && !d->back) {
        size_t most = 0;
        for (int i = 0; i < t->num_tensors; i++)
            if (t->tensors[i].role == KV_IN && d->bytes[i] > most) most = d->bytes[i];
        d->back = kv_malloc(most + 8);
    }
    for (int i = 0; i < t->num_tensors && look_inputs; i++) {
        if (t->tensors[i].role != KV_IN) continue;
        void *back = d->back;
        if (r->b->read(r->b, &bufs[i], back, &err) != 0) fail_err(r, err, "reading inputs back");
        if (memcmp(back, d->img[i], d->bytes[i]) != 0) { /* checksums only for the message */
            uint64_t h0 = kv_hash64(d->img[i], d->bytes[i]), h1 = kv_hash64(back, d->bytes[i]);
            fail_shape(r, d, "input_modified",
                       "input %s changed during run %s (checksum %016llx before, %016llx after)",
                       t->tensors[i].name,
                       r->o->quick ? "1 or 2"
                       : runno     ? "2"
                                   : "1",
                       (unsigned long long)h0, (unsigned long long)h1);
        }
    }
    for (int i = 0; i < t->num_tensors; i++) {
        int ok = r->b->canary_ok(r->b, &bufs[i], &err);
        if (ok < 0) fail_err(r, err, "checking canaries");
        if (!ok)
            fail_shape(r, d, "out_of_bounds_write",
                       "bytes next to tensor %s were overwritten (canary damaged)",
                       t->tensors[i].name);
    }
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role != KV_OUT) continue;
        kv_tolerance tol = t->tol[ts->dtype];
        if (runno == 1) {
            int bitwise = 0;
            size_t first = 0;
            size_t differ = kv_compare_runs(ts->dtype, d->got[0][i], d->got[1][i], d->val[i],
                                            d->scale[i], d->count[i], tol, &bitwise, &first);
            if (differ)
                fail_shape(r, d, "nondeterministic",
                           "two runs on the same inputs disagree in %zu elements of %s beyond "
                           "the tolerance (first at %s: %.9g then %.9g)",
                           differ, ts->name,
                           coords(t, i, d->shape->syms, first, where, sizeof where),
                           kv_dtype_load(ts->dtype, d->got[0][i], first),
                           kv_dtype_load(ts->dtype, d->got[1][i], first));
        }
        kv_check c = checks[i];
        if (c.nonfinite)
            fail_shape(r, d, "nan_or_inf_output",
                       "%zu elements of %s are NaN or Inf (first bad at %s: got %g, expected %g)",
                       c.nonfinite, ts->name,
                       coords(t, i, d->shape->syms, c.worst, where, sizeof where), c.worst_got,
                       c.worst_want);
        if (c.bad) {
            if (d->have_prev) {
                kv_check pc;
                kv_check_output(ts->dtype, d->got[runno][i], d->prev[i], d->prev_scale[i],
                                d->count[i], NULL, tol, &pc);
                if (pc.bad == 0)
                    fail_shape(r, d, "result_cached_across_calls",
                               "%s holds the answer for the previous trial's inputs, not for the "
                               "new inputs written into the same buffers",
                               ts->name);
            }
            fail_shape(r, d, "wrong_result",
                       "%zu of %zu elements of %s outside tolerance (atol %g, rtol %g, stol %g); "
                       "worst at %s: got %.9g, expected %.9g, allowed error %.3g; max abs err "
                       "%.3g, max rel err %.3g, rel L2 err %.3g",
                       c.bad, c.n, ts->name, tol.atol, tol.rtol, tol.stol,
                       coords(t, i, d->shape->syms, c.worst, where, sizeof where), c.worst_got,
                       c.worst_want, c.worst_limit, c.max_abs, c.max_rel, c.rel_l2);
        }
        if (c.max_abs > d->max_abs) d->max_abs = c.max_abs;
        if (c.max_rel > d->max_rel) d->max_rel = c.max_rel;
        if (c.rel_l2 > d->rel_l2) d->rel_l2 = c.rel_l2;
        if (c.max_ratio > d->max_ratio) d->max_ratio = c.max_ratio;
    }
}

/* All correctness trials of one shape; returns its error summary. */
static json_t *check_shape(run *r, const kv_shape *sh, int held)
{
    const kv_task *t = r->task;
    shape_data d;
    double t0 = kv_now_s();
    shape_data_init(&d, t, sh, held);
    prof_lap(r, PROF_ALLOC, &t0);
    kv_dbuf bufs[KV_MAX_TENSORS] = {0};
    alloc_set(r, &d, bufs);
    int trials = held ? r->s.held_trials : r->s.trials;
    /* Quick runs give the full set of trials to the first scenario only; the
     * others still get the in-place refill (trial 2) with outliers. */
    if (!held && r->o->quick && sh != &r->task->scenarios[0] && trials > 2) trials = 2;
    /* Big shapes (a decode over a long cache) cost seconds of input drawing and
     * reference per trial: three trials still cover every distribution, the
     * in-place refill and the move to new addresses. */
    size_t in_bytes = 0;
    for (int i = 0; i < t->num_tensors; i++)
        if (t->tensors[i].role == KV_IN) in_bytes += d.bytes[i];
    if (in_bytes > ((size_t)256 << 20) && trials > 3) trials = 3;
    for (int trial = 0; trial < trials; trial++) {
        kv_dist dist = (kv_dist)(trial % KV_DIST_COUNT);
        kv_worker_phase("correctness %s %s trial %d (%s inputs)", held ? "held-out" : "scenario",
                        sh->name, trial + 1, kv_dist_name(dist));
        if (trial >= 2) { /* new addresses: allocate before releasing the old set */
            kv_dbuf fresh[KV_MAX_TENSORS] = {0};
            alloc_set(r, &d, fresh);
            release_set(r, bufs);
            memcpy(bufs, fresh, sizeof bufs);
        }
        if (trial > 0) { /* the last reference becomes the previous one */
            for (int i = 0; i < t->num_tensors; i++)
                if (t->tensors[i].role == KV_OUT) {
                    double *old = d.prev[i];
                    d.prev[i] = d.val[i];
                    d.val[i] = old;
                    old = d.prev_scale[i];
                    d.prev_scale[i] = d.scale[i];
                    d.scale[i] = old;
                }
            d.have_prev = 1;
        }
        upload_inputs(r, &d, bufs, dist, &r->rng, !device_reference_for(r, &d));
        compute_reference(r, &d, bufs, trial == 0);
        for (int runno = 0; runno < 2; runno++) {
            poison_outputs(r, &d, bufs);
            int before = kv_thread_count();
            launch_once(r, r->cand, &d, bufs);
            int after = kv_thread_count();
            t0 = kv_now_s();
            read_outputs(r, &d, bufs, d.got[runno]);
            check_run(r, &d, bufs, runno, before, after);
            prof_lap(r, PROF_CHECK, &t0);
        }
    }
    release_set(r, bufs);
    /* tol_ratio: the worst element's error over what the tolerance allows
     * it (the dashboard's error against tolerance). */
    json_t *j = json_pack("{s:s,s:f,s:f,s:f,s:f,s:i}", "name", sh->name, "max_abs_err", d.max_abs,
                          "max_rel_err", d.max_rel, "rel_l2_err", d.rel_l2, "tol_ratio",
                          d.max_ratio, "trials", trials);
    shape_data_free(&d, t);
    return j;
}

/* ---- timing ---- */

typedef struct timing_sets {
    int n;
    kv_dbuf (*bufs)[KV_MAX_TENSORS];
    unsigned char (*poison)[KV_MAX_TENSORS][8]; /* each set's poison, as last written */
    double *(*ref)[KV_MAX_TENSORS];             /* outputs' reference of the sets checked in full */
    double *(*scale)[KV_MAX_TENSORS];           /* and its error scales (NULL: none) */
    int *full; /* 1: the set has its reference and is checked in full */
    int *covered;
} timing_sets;

/* Times M on the sets in rotation until enough repetitions and time have
 * passed; appends samples (microseconds) to SAMPLES (CAP at most). With
 * MARK_COVERED (the candidate's last block) it does not stop on MAX_TIME
 * before it has run every set once, so every set's output is checked. */
static void time_block(run *r, kv_module *m, shape_data *d, timing_sets *ts, int *next,
                       double *samples, size_t *ns, size_t cap, int min_reps, double min_time,
                       double max_time, int mark_covered)
{
    double t0 = kv_now_s();
    int reps = 0;
    for (;;) {
        double el = kv_now_s() - t0;
        if (*ns >= cap) break;
        if (reps >= min_reps && el >= min_time) break;
        if (el >= max_time && reps >= 3 && (!mark_covered || reps >= ts->n)) break;
        int s = (*next)++ % ts->n;
        kv_launch_args a;
        fill_args(r->task, d->shape, ts->bufs[s], &a);
        char *err = NULL;
        if (r->b->flush && r->b->flush(r->b, &err) != 0) fail_err(r, err, "cache flush");
        kv_worker_watchdog(r->s.kernel_timeout_s);
        double us = 0;
        if (r->b->time_launch(r->b, m, &a, &us, &err) != 0) fail_err(r, err, "timed launch");
        kv_worker_watchdog(0);
        samples[(*ns)++] = us;
        if (mark_covered) ts->covered[s] = 1;
        reps++;
    }
}

/* Times scenario SH for the candidate and the baseline side by side; adds
 * the figures to SUMMARY (its correctness entry). */
static void time_shape(run *r, const kv_shape *sh, int index, json_t *summary)
{
    const kv_task *t = r->task;
    shape_data d;
    double t0 = kv_now_s();
    shape_data_init(&d, t, sh, 0);
    prof_lap(r, PROF_ALLOC, &t0);
    size_t set_bytes = 0;
    for (int i = 0; i < t->num_tensors; i++)
        set_bytes += d.bytes[i];
    if (set_bytes == 0) set_bytes = 1;
    size_t cache = r->b->cache_bytes ? r->b->cache_bytes : (32u << 20);
    size_t want = 2 * cache / set_bytes + 1;
    size_t fit = r->s.budget_bytes / set_bytes;
    size_t nsets = want < fit ? want : fit;
    if (nsets < 2) nsets = 2;
    if (nsets > 256) nsets = 256;
    if (r->o->quick && nsets > 4) nsets = 4; /* quick runs trade cold caches for speed */
    /* A set twice the cache's size leaves it cold for the next launch: quick
     * runs time such shapes on one set, drawn once. */
    if (r->o->quick && set_bytes >= 2 * cache) nsets = 1;
    timing_sets ts = {.n = (int)nsets};
    ts.bufs = kv_calloc(nsets, sizeof *ts.bufs);
    ts.poison = kv_calloc(nsets, sizeof *ts.poison);
    ts.ref = kv_calloc(nsets, sizeof *ts.ref);
    ts.scale = kv_calloc(nsets, sizeof *ts.scale);
    ts.full = kv_calloc(nsets, sizeof *ts.full);
    ts.covered = kv_calloc(nsets, sizeof *ts.covered);
    /* The last block runs every set in order, so the last three it runs are
     * the last three sets: those are checked in full after it, against the
     * reference computed here while their inputs are in hand. */
    size_t nfull = nsets < 3 ? nsets : 3;
    kv_worker_phase("timing %s: preparing %zu input sets", sh->name, nsets);
    for (size_t s = 0; s < nsets; s++) {
        alloc_set(r, &d, ts.bufs[s]);
        kv_rng rng;
        kv_rng_seed(&rng, kv_rng_next(&r->rng));
        ts.full[s] = s >= nsets - nfull;
        upload_inputs(r, &d, ts.bufs[s], KV_DIST_NORMAL, &rng,
                      ts.full[s] && !device_reference_for(r, &d));
        if (ts.full[s]) {
            compute_reference(r, &d, ts.bufs[s], 0);
            for (int i = 0; i < t->num_tensors; i++)
                if (t->tensors[i].role == KV_OUT) {
                    ts.ref[s][i] = kv_malloc((d.count[i] + 1) * sizeof(double));
                    memcpy(ts.ref[s][i], d.val[i], d.count[i] * sizeof(double));
                    if (d.scale[i]) {
                        ts.scale[s][i] = kv_malloc((d.count[i] + 1) * sizeof(double));
                        memcpy(ts.scale[s][i], d.scale[i], d.count[i] * sizeof(double));
                    }
                }
        }
        poison_outputs(r, &d, ts.bufs[s]);
        memcpy(ts.poison[s], d.poison, sizeof d.poison);
    }
    int next = 0;
    char *err = NULL;
    kv_worker_phase("timing %s: warm-up", sh->name);
    t0 = kv_now_s();
    for (int w = 0; w < r->s.warmup; w++) {
        time_block(r, r->base, &d, &ts, &next, (double[1]){0}, (size_t[1]){0}, 1, 1, 0, 0, 0);
        time_block(r, r->cand, &d, &ts, &next, (double[1]){0}, (size_t[1]){0}, 1, 1, 0, 0, 0);
    }
    /* Earlier blocks stop at max_reps samples, leaving the last block room
     * to run every set. */
    size_t cap = (size_t)r->s.max_reps + nsets + 8;
    double *cs = kv_malloc(cap * sizeof *cs), *bs = kv_malloc(cap * sizeof *bs);
    size_t ncs = 0, nbs = 0;
    json_t *tele0 = r->b->telemetry ? r->b->telemetry(r->b) : NULL;
    int R = r->s.rounds;
    for (int round = 0; round < R; round++) {
        kv_worker_phase("timing %s: baseline, round %d", sh->name, round + 1);
        size_t round_cap = round == R - 1 ? cap : (size_t)r->s.max_reps;
        time_block(r, r->base, &d, &ts, &next, bs, &nbs, round_cap, r->s.min_reps / R,
                   r->s.min_time_s / R, r->s.max_time_s / R, 0);
        if (round == R - 1) { /* the last block must write every output afresh */
            prof_lap(r, PROF_TIMED, &t0);
            for (size_t s = 0; s < nsets; s++) {
                poison_outputs(r, &d, ts.bufs[s]);
                memcpy(ts.poison[s], d.poison, sizeof d.poison);
            }
            memset(ts.covered, 0, nsets * sizeof *ts.covered);
            next = 0;
            t0 = kv_now_s(); /* poisoning counted as upload */
        }
        kv_worker_phase("timing %s: candidate, round %d", sh->name, round + 1);
        int min_reps = r->s.min_reps / R;
        if (round == R - 1 && min_reps < (int)nsets) min_reps = (int)nsets;
        time_block(r, r->cand, &d, &ts, &next, cs, &ncs, round_cap, min_reps, r->s.min_time_s / R,
                   r->s.max_time_s / R, round == R - 1);
    }
    json_t *tele1 = r->b->telemetry ? r->b->telemetry(r->b) : NULL;
    if (r->b->sync_device(r->b, &err) != 0) fail_err(r, err, "device synchronisation");
    prof_lap(r, PROF_TIMED, &t0);

    /* The timed code must be the candidate's: every set it ran in the last
     * block holds the right answer for that set's inputs. */
    kv_worker_phase("timing %s: checking outputs of the timed runs", sh->name);
    int checked = 0;
    for (int s = (int)nsets - 1; s >= 0; s--) {
        if (!ts.covered[s]) continue;
        read_outputs(r, &d, ts.bufs[s], d.got[0]);
        int full = checked < 3 && ts.full[s];
        for (int i = 0; i < t->num_tensors; i++) {
            const kv_tensor_spec *sp = &t->tensors[i];
            if (sp->role != KV_OUT) continue;
            kv_check c;
            if (full) {
                kv_check_output(sp->dtype, d.got[0][i], ts.ref[s][i], ts.scale[s][i], d.count[i],
                                ts.poison[s][i], t->tol[sp->dtype], &c);
            } else {
                memset(&c, 0, sizeof c);
                for (size_t k = 0; k < d.count[i]; k++)
                    c.unwritten += kv_dtype_is_poison(sp->dtype, d.got[0][i], k, ts.poison[s][i]);
            }
            if (c.unwritten || c.bad || c.nonfinite)
                kv_worker_fail("timed_output_wrong", r->extra,
                               "scenario %s: after the timed runs, input set %d's %s has %zu "
                               "unwritten, %zu wrong and %zu NaN/Inf elements (worst at [%zu]: "
                               "%.6g instead of %.6g): the timed code did not compute the answer",
                               sh->name, s, sp->name, c.unwritten, c.bad, c.nonfinite, c.worst,
                               c.worst_got, c.worst_want);
        }
        checked += full;
    }
    if ((size_t)checked < nfull)
        kv_worker_fail("harness_error", r->extra,
                       "scenario %s: the timed runs covered %d of the %zu input sets checked in "
                       "full after them",
                       sh->name, checked, nfull);

    prof_lap(r, PROF_CHECK, &t0);
    double med, iqr, mn, bmed, biqr, bmn;
    kv_stats(cs, ncs, &med, &iqr, &mn);
    kv_stats(bs, nbs, &bmed, &biqr, &bmn);
    kv_roofline rf = t->roofline(sh->syms);
    double floor_us = rf.bytes / (r->b->ceiling_gbps * 1e9) * 1e6;
    double ideal_us = rf.bytes / (r->b->bandwidth_gbps * 1e9) * 1e6;
    if (med < 0.5 * floor_us)
        kv_worker_fail("faster_than_roofline", r->extra,
                       "scenario %s: faster than the roofline allows: %.3f us < floor %.3f us "
                       "(%.0f bytes at %.1f GB/s, halved for slack); the output after the timed "
                       "runs was right, so this is a measurement error or work skipped in some "
                       "timed runs",
                       sh->name, med, floor_us, rf.bytes, r->b->ceiling_gbps);
    json_object_set_new(summary, "median_us", json_real(med));
    json_object_set_new(summary, "iqr_us", json_real(iqr));
    json_object_set_new(summary, "min_us", json_real(mn));
    json_object_set_new(summary, "reps", json_integer((json_int_t)ncs));
    json_object_set_new(summary, "baseline_median_us", json_real(bmed));
    json_object_set_new(summary, "baseline_iqr_us", json_real(biqr));
    json_object_set_new(summary, "speedup", json_real(bmed / med));
    json_object_set_new(summary, "roofline_us", json_real(ideal_us));
    json_object_set_new(summary, "roofline_fraction", json_real(ideal_us / med));
    json_object_set_new(summary, "bytes", json_real(rf.bytes));
    json_object_set_new(summary, "flops", json_real(rf.flops));
    json_object_set_new(summary, "input_sets", json_integer((json_int_t)nsets));
    json_object_set_new(summary, "weight", json_real(sh->weight > 0 ? sh->weight : 1.0));
    json_object_set_new(summary, "tags", json_string(sh->tags ? sh->tags : ""));
    json_object_set_new(summary, "correct", json_integer(1));
    if (tele0 || tele1) {
        json_t *tel = json_object();
        if (tele0) json_object_set_new(tel, "before", tele0);
        if (tele1) json_object_set_new(tel, "after", tele1);
        json_object_set_new(summary, "telemetry", tel);
    }
    (void)index;
    free(cs);
    free(bs);
    for (size_t s = 0; s < nsets; s++)
        release_set(r, ts.bufs[s]);
    for (size_t s = 0; s < nsets; s++)
        for (int i = 0; i < t->num_tensors; i++) {
            free(ts.ref[s][i]);
            free(ts.scale[s][i]);
        }
    free(ts.bufs);
    free(ts.poison);
    free(ts.ref);
    free(ts.scale);
    free(ts.full);
    free(ts.covered);
    shape_data_free(&d, t);
}

static kv_module *load_module(run *r, const kv_compiled *c, const char *what, json_t *logs)
{
    kv_worker_phase("loading %s", what);
    kv_module *m = NULL;
    char *err = NULL, *log = NULL;
    int rc = r->b->load(r->b, c, &m, &log, &err);
    if (log) {
        json_object_set_new(logs, what, json_string(log));
        if (!json_object_get(r->extra, "build_log") && strcmp(what, "candidate") == 0)
            json_object_set_new(r->extra, "build_log", json_string(log));
        free(log);
    }
    if (rc != 0) {
        if (strcmp(what, "candidate") != 0) { /* the task's own code: not the candidate's fault */
            char *msg = kv_asprintf("harness_error: the task's %s failed to load: %s", what, err);
            fail_err(r, msg, NULL);
        }
        fail_err(r, err, NULL);
    }
    return m;
}

void kv_run_child(void *vctx)
{
    kv_run_ctx *ctx = vctx;
    run r = {.task = ctx->task, .o = ctx->opts};
    r.s = settings_for(ctx->opts);
    kv_rng_seed(&r.rng, ctx->seed);
    r.extra = json_object();
    char *err = NULL;
    kv_worker_phase("opening the %s device", kv_backend_kind_name(ctx->kind));
    r.b = kv_backend_new(ctx->kind, &err);
    if (!r.b) kv_worker_fail("not_built", NULL, "%s", err);
    if (r.b->open(r.b, &err) != 0) kv_worker_fail("no_device", NULL, "%s", err);
    r.b->use_graph = ctx->opts->graph;
    if (ctx->opts->ceiling_gbps > 0)
        r.b->ceiling_gbps = r.b->bandwidth_gbps = ctx->opts->ceiling_gbps;
    json_t *result = json_object();
    json_object_set(result, "device", r.b->device);
    json_object_set_new(result, "bandwidth_gbps", json_real(r.b->bandwidth_gbps));
    json_object_set_new(result, "ceiling_gbps", json_real(r.b->ceiling_gbps));
    if (ctx->probe_only) {
        kv_worker_result(result);
        return;
    }
    json_t *logs = json_object();
    r.cand = load_module(&r, ctx->cand, "candidate", logs);
    if (ctx->base) r.base = load_module(&r, ctx->base, "baseline", logs);
    if (ctx->ref) r.ref = load_module(&r, ctx->ref, "reference", logs);
    json_object_set_new(result, "build_logs", logs);

    json_t *scen = json_array(), *held = json_array();
    for (int i = 0; i < r.task->num_scenarios; i++)
        json_array_append_new(scen, check_shape(&r, &r.task->scenarios[i], 0));
    for (int i = 0; i < r.task->num_held_out; i++)
        json_array_append_new(held, check_shape(&r, &r.task->held_out[i], 1));
    if (r.base)
        for (int i = 0; i < r.task->num_scenarios; i++)
            time_shape(&r, &r.task->scenarios[i], i, json_array_get(scen, (size_t)i));
    json_object_set_new(result, "scenarios", scen);
    json_object_set_new(result, "held_out", held);
    json_t *prof = json_object();
    for (int i = 0; i < PROF_COUNT; i++)
        json_object_set_new(prof, prof_names[i], json_real(r.prof[i]));
    json_object_set_new(result, "profile_seconds", prof);
    kv_worker_phase("done");
    kv_worker_result(result);
    /* The child exits right after; nothing to free that the OS will not. */
}
