/* A child's trial (see judge_trial.h): its profile, its failures, and the
 * runner's steps that fail the candidate on the runner's word. */
#include "judge/judge_trial.h"
#include "judge/memcheck_log.h"
#include "judge/reply_probe.h"
#include "judge/worker.h"
#include "util/buf.h"
#include "util/clock.h"

#include <stdlib.h>
#include <string.h>

void kv_judge_check_lap(judge_trial *j, enum check_step step, double *t0)
{
    double now = kv_now_s();
    j->prof_check[step] += now - *t0;
    *t0 = now;
}

void kv_judge_lap(judge_trial *j, enum prof_step step, double *t0)
{
    double now = kv_now_s();
    j->prof[step] += now - *t0;
    *t0 = now;
}

void kv_judge_runner_stop(judge_trial *j)
{
    if (!j->rn) return;
    char *out = kv_runner_output(j->rn, 4000);
    if (*out) json_object_set_new(j->extra, "runner_output", json_string(out));
    free(out);
    kv_runner_stop(j->rn);
    j->rn = NULL;
}

/* Under memcheck, a call that failed (a wild write ends the launch before
 * the stage's verdict) is memcheck's error when the tool reported one: its
 * line names the access. B: the failure's detail, prefixed with it. *ARG:
 * CODE's variable part, 0 once the code is memcheck's. */
static kv_reason memcheck_failure(judge_trial *j, kv_reason code, int *arg, kv_buf *b)
{
    if (!j->ctx->memcheck || !j->rn || code == KV_R_HARNESS_ERROR || code == KV_R_MEMCHECK_ERROR)
        return code;
    char *out = kv_runner_output(j->rn, 20000);
    char *line = kv_memcheck_first_error(out);
    /* Not yet said: the tool reports as the runner ends (a hung one is not
     * waited for). */
    if (!line && code != KV_R_TIMEOUT) {
        free(out);
        kv_runner_quit(j->rn, 10);
        out = kv_runner_output(j->rn, 20000);
        line = kv_memcheck_first_error(out);
    }
    if (line) {
        json_object_set_new(j->extra, "memcheck_log", json_string(out));
        char name[64];
        kv_buf m = KV_BUF_INIT;
        kv_buf_printf(&m, "%s (the run: %s: %s)", line,
                      kv_reason_format(code, *arg, name, sizeof name), b->data ? b->data : "");
        kv_buf_free(b);
        *b = m;
        code = KV_R_MEMCHECK_ERROR;
        *arg = 0;
    }
    free(line);
    free(out);
    return code;
}

/* kv_verdict_set with CODE's variable part ARG. */
static int verdict_arg(kv_verdict *v, kv_reason code, int arg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int verdict_arg(kv_verdict *v, kv_reason code, int arg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = kv_verdict_vset(v, code, arg, fmt, ap);
    va_end(ap);
    return rc;
}

/* kv_judge_fail with CODE's variable part ARG. */
static int vfail(judge_trial *j, kv_reason code, int arg, const char *fmt, va_list ap)
{
    if (kv_judge_failed(j)) return KV_JUDGE_FAILED; /* the first failure stands */
    kv_buf b = KV_BUF_INIT;
    kv_buf_vprintf(&b, fmt, ap);
    code = memcheck_failure(j, code, &arg, &b);
    /* Nothing of the candidate's runs while the trial unwinds. */
    kv_judge_runner_stop(j);
    const char *detail = b.data ? b.data : "";
    char name[64];
    /* The task's own code failing is the harness's problem, not the candidate's. */
    int rc = j->who && strcmp(j->who, "baseline") == 0 && code != KV_R_HARNESS_ERROR
                 ? kv_verdict_set(&j->v, KV_R_HARNESS_ERROR, "the task's baseline failed: %s: %s",
                                  kv_reason_format(code, arg, name, sizeof name), detail)
                 : verdict_arg(&j->v, code, arg, "%s", detail);
    kv_buf_free(&b);
    return rc;
}

int kv_judge_fail(judge_trial *j, kv_reason code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(j, code, 0, fmt, ap);
    va_end(ap);
    return rc;
}

int kv_judge_fail_arg(judge_trial *j, kv_reason code, int arg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(j, code, arg, fmt, ap);
    va_end(ap);
    return rc;
}

int kv_judge_fail_err(judge_trial *j, kv_fail *err, const char *context)
{
    int rc = kv_judge_fail_arg(j, err->code, err->arg, "%s%s%s", context ? context : "",
                               context ? ": " : "", err->detail ? err->detail : "unknown error");
    kv_fail_clear(err);
    return rc;
}

const char *kv_judge_shape_label(const kv_task *t, const kv_shape *sh, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s (", sh->name);
    for (int i = 0; i < t->num_syms && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s=%lld", i ? " " : "", t->syms[i],
                              (long long)sh->syms[i]);
    if (n < cap) snprintf(buf + n, cap - n, ")");
    return buf;
}

const char *kv_judge_coords(const kv_task *t, int ti, const int64_t *syms, size_t idx, char *buf,
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

int kv_judge_fail_shape(judge_trial *j, const shape_data *d, kv_reason code, const char *fmt, ...)
{
    kv_buf b = KV_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    int value_error = code == KV_R_STALE_OR_UNWRITTEN_OUTPUT || code == KV_R_WRONG_RESULT ||
                      code == KV_R_NAN_OR_INF_OUTPUT || code == KV_R_RESULT_CACHED_ACROSS_CALLS;
    char label[160];
    kv_judge_shape_label(j->task, d->shape, label, sizeof label);
    int rc = d->held && value_error
                 ? kv_judge_fail(j, KV_R_WRONG_ON_HELD_OUT_SHAPE, "held-out shape %s: %s: %s",
                                 label, kv_reason_name(code), b.data)
                 : kv_judge_fail(j, code, "%s %s: %s", d->held ? "held-out shape" : "scenario",
                                 label, b.data);
    kv_buf_free(&b);
    return rc;
}

int kv_judge_fail_runner(judge_trial *j, const kv_rfail *f, const char *context)
{
    /* A fault in a guarded range names its tensor by index: the judge knows
     * the names. */
    int guarded = f->code == KV_R_INPUT_MODIFIED || f->code == KV_R_OUT_OF_BOUNDS;
    int canary = f->code == KV_R_OUT_OF_BOUNDS_WRITE;
    if ((guarded || canary) && f->call < (uint32_t)j->task->num_tensors) {
        const char *name = j->task->tensors[f->call].name;
        if (canary) return kv_judge_fail(j, f->code, "%s: tensor %s: %s", context, name, f->detail);
        if (f->code == KV_R_INPUT_MODIFIED)
            return kv_judge_fail(j, f->code, "%s: input %s changed: %s", context, name, f->detail);
        return kv_judge_fail(j, f->code, "%s: %s past the end of tensor %s", context, f->detail,
                             name);
    }
    return kv_judge_fail_arg(j, f->code, f->arg, "%s: %s", context, f->detail);
}

int kv_judge_run_block(judge_trial *j, const kv_rmsg_run *m, const char *context, double *secs)
{
    double calls = m->ncalls ? (double)m->ncalls : 1.0;
    double limit = j->s.kernel_timeout_s * calls;
    if (limit > 120 + j->s.kernel_timeout_s) limit = 120 + j->s.kernel_timeout_s;
    double grace = j->grace_s;
    j->grace_s = 0;
    kv_rfail f;
    kv_fail err = {0};
    double took = 0;
    int rc = kv_runner_run(j->rn, m, limit + grace, &took, &f, &err);
    j->replied_at = kv_now_s();
    if (rc < 0) return kv_judge_fail_err(j, &err, context);
    if (rc > 0 && grace > 0 && f.code == KV_R_TIMEOUT)
        return kv_judge_fail(j, KV_R_TIMEOUT,
                             "%s: the kernel exceeded %g s (with %g s more for the driver's first "
                             "build of it) during %s",
                             context, limit, grace, kv_worker_current_phase());
    if (rc > 0) return kv_judge_fail_runner(j, &f, context);
    kv_judge_note_idle_cpu(j);
    if (secs) *secs = took;
    return 0;
}

int kv_judge_look_at_once(judge_trial *j, size_t bytes)
{
    late_looks *l = &j->looks;
    double waited = kv_now_s() - j->replied_at;
    if (l->n_waits < (int)(sizeof l->wait_us / sizeof l->wait_us[0]))
        l->wait_us[l->n_waits++] = (float)(waited * 1e6);
    int idle = kv_judge_can(j, KV_CAP_IDLE_REPLY) &&
               kv_reply_was_idle(waited, j->c.copy_s, j->c.per_byte_s, bytes);
    if (idle)
        l->at_once++;
    else
        l->settled++;
    return idle;
}

int kv_judge_check_quiet(judge_trial *j, const shape_data *d, const char *context)
{
    if (j->ctx->memcheck) return 0; /* the runner's process is compute-sanitizer's */
    int threads = kv_runner_threads(j->rn);
    int children = kv_runner_children(j->rn);
    /* A device runtime may start its own threads on first use: then only
     * processes count. */
    int extra =
        kv_judge_can(j, KV_CAP_RUNTIME_THREADS) || threads < 0 ? 0 : threads - j->base_threads;
    /* A thread that pthread_join has returned for stays listed until the
     * kernel finishes its exit, milliseconds on a loaded machine: it gets
     * 50 ms to go. Nothing is lost by waiting: the outputs were read before,
     * and the next inputs are not shared until this returns. */
    for (int i = 0; extra > 0 && children <= 0 && i < 50; i++) {
        kv_sleep_s(0.001);
        threads = kv_runner_threads(j->rn);
        extra = threads < 0 ? 0 : threads - j->base_threads;
    }
    if (extra <= 0 && children <= 0) return 0;
    const char *what = extra > 0 ? "thread(s)" : "process(es)";
    int n = extra > 0 ? extra : children;
    if (d)
        return kv_judge_fail_shape(j, d, KV_R_ASYNC_WORK_OUTSIDE_HARNESS_STREAM,
                                   "%d %s started by kv_launch were still running %s", n, what,
                                   context);
    return kv_judge_fail(j, KV_R_ASYNC_WORK_OUTSIDE_HARNESS_STREAM,
                         "%d %s started by kv_launch were still running %s", n, what, context);
}
