/* One child's trial: what the judge holds while it judges one candidate
 * (its runner, the device's lock, the telemetry reads, the profile, the
 * verdict), made when the child's turn comes and freed when it ends
 * (judge_child.c). It reaches the device's state (judge_device.h) through
 * DEV; a long-lived judge's own state (its clients, the count of children
 * it served) is judge_server.c's alone.
 *
 * The steps below fail by returning KV_JUDGE_FAILED with the trial's
 * verdict set (judge_verdict.h). A failure stops the runner in use at once,
 * so that nothing of the candidate's runs while the trial unwinds: its
 * callers then only give back what they took. Private to the judge's
 * files: judge_arena.c, judge_shape.c, judge_check.c,
 * judge_check_in_place.c, judge_held.c, judge_time.c, judge_view.c and
 * judge_child.c, each of which includes the headers of the steps it
 * calls and none of the steps above it. */
#ifndef KV_JUDGE_JUDGE_TRIAL_H
#define KV_JUDGE_JUDGE_TRIAL_H

#include "backend/backend.h"
#include "backend/check.h"
#include "judge/judge.h"
#include "judge/judge_device.h"
#include "judge/judge_tele.h"
#include "judge/judge_verdict.h"
#include "judge/runner_client.h"
#include "util/rng.h"

#include <jansson.h>

#define KV_CANARY 0xc3

typedef struct settings {
    int trials, held_trials;
    int min_blocks;                /* timed blocks per scenario, at least */
    double block_s;                /* a timed block's target length */
    double min_time_s, max_time_s; /* timing per scenario */
    double settle_s, kernel_timeout_s;
    size_t budget_bytes;     /* input sets of one scenario, at most */
    int checks_per_scenario; /* timed calls checked in full per scenario (expected) */
} settings;

/* Where the judge's seconds go, summed over every shape: reported with the
 * result so that a slow evaluation says which step to cut. */
enum prof_step {
    PROF_ALLOC,     /* arenas, mapping them into the runner */
    PROF_FILL,      /* drawing the inputs */
    PROF_UPLOAD,    /* copying inputs and poison to the device */
    PROF_REFERENCE, /* the double-precision reference */
    PROF_RUN,       /* correctness calls */
    PROF_CHECK,     /* read-backs and comparisons */
    PROF_TIMED,     /* timed blocks */
    PROF_BASELINE,  /* timing the baseline (when it was not kept) */
    PROF_ENERGY,    /* the energy windows (evaluator.energy) */
    PROF_PREPARE,   /* before the device is held: contexts, the candidate's process */
    PROF_CALIBRATE, /* the clock's fixed costs, against each runner (and again, never higher) */
    PROF_LOAD,      /* loading the candidate's (or the baseline's) code in its runner */
    PROF_MEASURE,   /* on taking the device: its bandwidth, the kept baseline's validity */
    PROF_STOP,      /* stopping the runner before letting go */
    PROF_RECORD,    /* the runner recording a timed block's calls into a graph */
    PROF_TELEMETRY, /* the device's clock, temperature and power read around each timing */
    PROF_COUNT
};

/* PROF_CHECK of the in-place path, by step (judge_check_in_place.c), the
 * timed blocks' checks and input writes by step (judge_time.c), and the
 * arenas' costs by step (judge_arena.c). */
enum check_step {
    CHECK_KEEP,      /* the outputs copied aside, unwritten ones counted */
    CHECK_SETTLE,    /* the pause, then the outputs compared with the copy */
    CHECK_QUIET,     /* no thread or process of the runner's left running */
    CHECK_TOLERANCE, /* the outputs against the reference */
    CHECK_INPUTS,    /* the inputs generated again and compared */
    CHECK_CANARIES,  /* the bytes around each tensor */
    CHECK_RUNS,      /* the two runs against each other, the previous trial's answer */
    BLOCK_WRITE,     /* a timed block's inputs written (inside its window) */
    BLOCK_WRITTEN,   /* after it: every output written, the last kept aside */
    BLOCK_INPUTS,    /* every input as drawn */
    BLOCK_LATE,      /* what is left of the settle, the late-change look */
    BLOCK_CANARIES,  /* the bytes around each tensor */
    BLOCK_FULL,      /* one call checked in full, its reference included */
    ALLOC_DEVICE,    /* shared arenas: the device's allocation, every byte a canary */
    ALLOC_MAP,       /* shared arenas: the runner's mapping of them */
    ALLOC_PART,      /* shared arenas as parts of the slab: canaries, the runner told */
    ALLOC_RELEASE,   /* shared arenas: unmapped from the runner and freed */
    ALLOC_OWN,       /* the judge's own arenas (copies, references): made and freed */
    CHECK_STEPS
};

/* Late looks at a reply's outputs: done at once (the copies showed an idle
 * device, KV_CAP_IDLE_REPLY), or after the settle; the first looks' waits
 * from the reply to the copies done. */
typedef struct late_looks {
    long at_once, settled;
    float wait_us[1024];
    int n_waits;
} late_looks;

/* Host-side images of one shape's tensors, for the correctness trials
 * (judge_shape.c). */
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
    double max_abs, max_rel, rel_l2, max_ratio; /* worst errors over trials */
} shape_data;

typedef struct held_prep held_prep;

typedef struct judge_trial {
    judge_device *dev;
    kv_verdict v;
    double prof[PROF_COUNT];
    double prof_check[CHECK_STEPS];
    /* The task as the judge works on it: the task's own, or (with in-out
     * tensors) VIEW, where each KV_INOUT tensor is an output and its hidden
     * copy (TWIN[i]) an input appended after the task's tensors
     * (judge_view.c). */
    const kv_task *task;
    const kv_task *own;       /* the task as written: its reference */
    kv_task view;             /* TASK when the task has in-out tensors */
    int twin[KV_MAX_TENSORS]; /* in-out tensor i's hidden copy, or -1 */
    int visible;              /* tensors the candidate is given: the task's */
    const kv_job *job;
    const kv_judge_ctx *ctx;
    kv_jdev *b;       /* the device's judge half (DEV's, once open) */
    kv_launch_fn ref; /* the task's device reference (DEV's), or NULL */
    kv_runner *rn;    /* the runner in use (candidate or baseline) */
    kv_runner *cand;  /* the candidate's runner, started, until it is in use */
    const char *who;  /* "candidate" or "baseline": the runner in use */
    judge_tele tele;  /* telemetry reads started, not yet joined */
    int lock;         /* the device's lock while the device is held, else -1 */
    double held_at;   /* when the device was taken */
    int base_threads; /* the runner's threads before any call */
    double idle_cpu;  /* its CPU seconds when its last step ended */
    settings s;
    calib c; /* the clock's calibration in use (the device's kept one, maybe lowered) */
    kv_rng rng;
    json_t *extra;     /* sent with a failure: build log, isolation */
    double grace_s;    /* extra time for the next block (opencl: the driver's first build) */
    int trusted;       /* timing the task's own baseline: no need to check it in full */
    int recalibrated;  /* the clock measured again after the code was loaded (never higher) */
    held_prep *held;   /* per held-out shape, drawn before the hold (NULL: drawn during it) */
    double replied_at; /* when the runner's last reply came */
    late_looks looks;
    json_t *fresh_baseline; /* timed here, not yet kept (a reference of its own) */
    /* The arenas this child made that are not parts of the slab, freed with
     * it whatever cut it short. */
    kv_arena *live;
    int n_live, cap_live;
} judge_trial;

/* 1 when the judge's backend has capabilities CAPS (KV_CAP_*). */
static inline int kv_judge_can(const judge_trial *j, unsigned caps)
{
    return kv_backend_has(j->b->backend, caps);
}

/* How input I of a shape with SYMS is drawn: the trial's DIST, or for an
 * index tensor KV_DIST_INDEX with its bound put in *FORCED. */
static inline int kv_judge_dist(const judge_trial *j, int i, const int64_t *syms, int dist,
                                uint64_t *forced)
{
    int s = j->task->tensors[i].index_of;
    if (s <= 0) return dist;
    *forced = (uint64_t)syms[s - 1];
    return KV_DIST_INDEX;
}

/* ---- failing the child (judge_trial.c) ---- */

/* Sets the verdict to CODE and a formatted detail (unless set: the first
 * failure stands) and stops the runner in use, keeping what it printed.
 * Under memcheck a call's failure becomes memcheck's error where the tool
 * reported one; the task's own baseline failing is a harness error.
 * Returns KV_JUDGE_FAILED. */
KV_MUST_CHECK int kv_judge_fail(judge_trial *j, kv_reason code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a CODE with a variable part ARG (a crash's signal or exit
 * status). */
KV_MUST_CHECK int kv_judge_fail_arg(judge_trial *j, kv_reason code, int arg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fails with ERR's code and its detail prefixed with CONTEXT (NULL: none);
 * clears ERR. */
KV_MUST_CHECK int kv_judge_fail_err(judge_trial *j, kv_fail *err, const char *context);
/* Fails for shape D with CODE (value errors on a held-out shape become
 * wrong_on_held_out_shape). */
KV_MUST_CHECK int kv_judge_fail_shape(judge_trial *j, const shape_data *d, kv_reason code,
                                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Fails with the runner's failure F (its report, its death, a deadline). */
KV_MUST_CHECK int kv_judge_fail_runner(judge_trial *j, const kv_rfail *f, const char *context);
/* 1 once the child has failed. */
static inline int kv_judge_failed(const judge_trial *j)
{
    return kv_verdict_is_set(&j->v);
}

/* Stops the runner in use, keeping the tail of what it printed in the
 * failure's artifacts; nothing when there is none. */
void kv_judge_runner_stop(judge_trial *j);

/* Adds the time since *T0 to step STEP and moves *T0 to now. */
void kv_judge_lap(judge_trial *j, enum prof_step step, double *t0);
/* Adds the seconds since *T0 to STEP of the check's profile; *T0 = now. */
void kv_judge_check_lap(judge_trial *j, enum check_step step, double *t0);
/* "prefill (rows=4096 cols=256)" into BUF. */
const char *kv_judge_shape_label(const kv_task *t, const kv_shape *sh, char *buf, size_t cap);
/* Row-major coordinates of flat index IDX of tensor TI as "[r, c]". */
const char *kv_judge_coords(const kv_task *t, int ti, const int64_t *syms, size_t idx, char *buf,
                            size_t cap);

/* ---- the runner's steps, failing the candidate on its failures ---- */

/* Notes the runner's CPU seconds now (J->idle_cpu) where the backend's
 * idle check between timed blocks reads them (no device inputs): on cuda
 * the read (a file of /proc) would only delay the look at the outputs. */
static inline void kv_judge_note_idle_cpu(judge_trial *j)
{
    if (!kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) j->idle_cpu = kv_runner_cpu_seconds(j->rn);
}

/* Runs block M under the judge's deadline; *SECS (may be NULL): the
 * judge's seconds. */
KV_MUST_CHECK int kv_judge_run_block(judge_trial *j, const kv_rmsg_run *m, const char *context,
                                     double *secs);
/* Fails (async_work_outside_harness_stream) when the runner has threads or
 * processes left running after a step; CONTEXT says after what, D the
 * shape (NULL: none). */
KV_MUST_CHECK int kv_judge_check_quiet(judge_trial *j, const shape_data *d, const char *context);
/* 1 when the copies the judge made of a reply's outputs, done now, show
 * the device was idle at the reply (reply_probe.h): the late look then
 * needs no settle. BYTES: what was copied. Counts the look either way. */
int kv_judge_look_at_once(judge_trial *j, size_t bytes);

#endif
