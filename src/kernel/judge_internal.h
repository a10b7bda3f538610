/* What the judge's files share (judge.c, judge_layout.c, judge_check.c,
 * judge_time.c): the judge's state, arena layouts and the helpers that end
 * an evaluation with a verdict. Private to src/kernel. */
#ifndef KV_KERNEL_JUDGE_INTERNAL_H
#define KV_KERNEL_JUDGE_INTERNAL_H

#include "kernel/arena_parts.h"
#include "kernel/backend.h"
#include "kernel/check.h"
#include "kernel/judge.h"
#include "kernel/runner_client.h"
#include "util/rng.h"

#include <jansson.h>
#include <stdarg.h>

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
 * arenas' costs by step (judge_layout.c). */
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

/* The fixed cost of a timed block, measured before the candidate's code was
 * loaded, so that nothing the candidate does can move it: the request and
 * reply (ROUND_TRIP_S) and, for the backends whose inputs travel inside the
 * window, a cost per byte moved (PER_BYTE_S) above a constant (XFER_S). */
typedef struct calib {
    double round_trip_s;
    double xfer_s, per_byte_s;
    double flush_s;
    double copy_s;   /* KV_CAP_IDLE_REPLY: a small copy on the judge's stream and its wait */
    double switch_s; /* KV_CAP_SWITCH: the device's switch to the runner in a window */
} calib;

/* A tensor's place in an arena: set S of tensor T starts at
 * OFF[T] + S * STRIDE[T]. Every byte outside the data is a canary. */
typedef struct layout {
    size_t bytes;
    size_t nsets;
    size_t off[KV_MAX_TENSORS], stride[KV_MAX_TENSORS], len[KV_MAX_TENSORS];
    size_t canary_off[KV_MAX_TENSORS][2], canary_len[KV_MAX_TENSORS][2]; /* before, after */
    kv_rguard guards[KV_RMAX_GUARDS];
    int nguards;
} layout;

/* One trial of a held-out shape, drawn before the device is held, in the
 * judge's memory: its inputs' images and the CPU reference's outputs (in
 * place: the first trial's only, or none). */
typedef struct held_trial {
    void *img[KV_MAX_TENSORS];     /* inputs (host path) */
    double *val[KV_MAX_TENSORS];   /* outputs: the reference (in place: trial 0's only) */
    double *scale[KV_MAX_TENSORS]; /* outputs: its error scales (NULL: none) */
} held_trial;

typedef struct held_prep {
    int trials;
    int in_place; /* checked where the data is (the CPU's reference: trial 0's, if any) */
    held_trial *t;
} held_prep;

/* Late looks at a reply's outputs: done at once (the copies showed an idle
 * device, KV_CAP_IDLE_REPLY), or after the settle; the first looks' waits
 * from the reply to the copies done. */
typedef struct late_looks {
    long at_once, settled;
    float wait_us[1024];
    int n_waits;
} late_looks;

/* One correctness trial's reference, with the draws of its inputs
 * (judge_check_in_place.c). */
typedef struct trial_ref {
    uint64_t seed[KV_MAX_TENSORS], forced[KV_MAX_TENSORS];
    int idist[KV_MAX_TENSORS];
    kv_arena ref;                                        /* device reference: values, scales */
    size_t where[KV_MAX_TENSORS][2];                     /* output i's values, scales in REF */
    double *val[KV_MAX_TENSORS], *scale[KV_MAX_TENSORS]; /* host reference */
} trial_ref;

/* A read of the device's telemetry in its own thread (judge_tele.c). */
typedef struct tele_read tele_read;

typedef struct judge {
    double prof[PROF_COUNT];
    double prof_check[CHECK_STEPS];
    /* The task as the judge works on it: the task's own, or (with in-out
     * tensors) VIEW, where each KV_INOUT tensor is an output and its hidden
     * copy (TWIN[i]) an input appended after the task's tensors. */
    const kv_task *task;
    const kv_task *own;       /* the task as written: its reference */
    kv_task view;             /* TASK when the task has in-out tensors */
    int twin[KV_MAX_TENSORS]; /* in-out tensor i's hidden copy, or -1 */
    int visible;              /* tensors the candidate is given: the task's */
    const kv_job *job;
    const kv_judge_ctx *ctx;
    kv_jdev *b;
    kv_runner *rn;    /* the runner in use (candidate or baseline) */
    tele_read **tele; /* telemetry reads started, in order, not yet joined */
    int n_tele, cap_tele;
    int lock;         /* the device's lock while the device is held, else -1 */
    double held_at;   /* when the device was taken */
    int base_threads; /* the runner's threads before any call */
    double idle_cpu;  /* its CPU seconds when its last step ended */
    void *ref_so;     /* the task's device reference, loaded here */
    kv_launch_fn ref;
    settings s;
    calib c;
    kv_rng rng;
    json_t *extra; /* sent with a failure: build log, isolation */
    uint32_t next_arena;
    /* KV_CAP_ARENA_PARTS: one allocation mapped into the runner in use, of
     * which each shared arena is a part. */
    kv_arena slab;
    kv_parts parts;
    int slab_refused;  /* the device had no room for it: arenas of their own */
    const char *who;   /* "candidate" or "baseline": the runner in use */
    double grace_s;    /* extra time for the next block (opencl: the driver's first build) */
    int trusted;       /* timing the task's own baseline: no need to check it in full */
    int recalibrated;  /* the clock measured again after the code was loaded (never higher) */
    held_prep *held;   /* per held-out shape, drawn before the hold (NULL: drawn during it) */
    double replied_at; /* when the runner's last reply came */
    late_looks looks;
    json_t *fresh_baseline; /* timed here, not yet kept (the result holds it) */
    /* A long-lived judge (judge_server.c): SERVING while it serves a
     * client; what it keeps for the next ones: the clock's calibration and
     * the device's bandwidth (taken before any candidate's code was
     * loaded), the slab (mapped again into each runner: SLAB_SHARED, every
     * byte a canary again before it is). Never an input or a reference: a
     * later child could predict what an earlier one was checked on. LIVE:
     * the job's own arenas, freed when a verdict cuts the job short. */
    int serving;
    int calibrated, measured;
    calib c_kept; /* the calibration kept (C may be lowered for one child) */
    int slab_shared;
    kv_arena *live;
    int n_live, cap_live;
    int no_unwind; /* a thread of the judge reads its stack: a verdict ends the judge */
    long served;   /* the children it served, this one included */
} judge;

/* Host-side images of one shape's tensors, for the correctness trials. */
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

/* ---- the judge's flow (judge.c), shared with a long-lived judge ---- */

/* Readies J for the job of CTX: its settings, its inputs' generator, the
 * task's view; what a long-lived judge keeps is left as it is. */
void kv_judge_begin(judge *j, const kv_judge_ctx *ctx);
/* Opens the device and loads the task's reference (before the hold). */
void kv_judge_open(judge *j);
/* Starts a runner for the code C (who: "candidate" or "baseline"); its
 * code is not loaded yet. */
kv_runner *kv_judge_spawn_runner(judge *j, const kv_compiled *c, const char *device_src,
                                 const char *who);
/* The same in two halves: the process started for CTX's job on BACKEND's
 * device (DEVICE_CONFINE: its jdev's confine) (NULL
 * with *ERR), then its hello awaited, failing the job as the above does
 * (SPAWN_ERR: the first half's error, taken). */
kv_runner *kv_judge_start_runner(const kv_backend *backend, const char *device_confine,
                                 const kv_judge_ctx *ctx, const kv_compiled *c,
                                 const char *device_src, char **err);
kv_runner *kv_judge_greet_runner(judge *j, kv_runner *rn, char *spawn_err);
/* The job's device work with the candidate's runner CAND (spawned, not
 * loaded): holds the device, checks, times, lets go and sends the result. */
void kv_judge_run(judge *j, kv_runner *cand);
/* Ends what a verdict cut short: the runner stopped, the telemetry reads
 * joined, the job's arenas freed. */
void kv_judge_abandon(judge *j);

/* 1 when the judge's backend has capabilities CAPS (KV_CAP_*). */
static inline int kv_judge_can(const judge *j, unsigned caps)
{
    return kv_backend_has(j->b->backend, caps);
}

void kv_shape_data_init(shape_data *d, const kv_task *t, const kv_shape *sh, int held);
void kv_shape_data_free(shape_data *d, const kv_task *t);

/* Makes J's TASK the view of OWN (see judge): fails as a harness error
 * when OWN's in-out or index tensors break kevolve/task.h's rules. */
void kv_judge_view_task(judge *j, const kv_task *own);

/* How input I of a shape with SYMS is drawn: the trial's DIST, or for an
 * index tensor KV_DIST_INDEX with its bound put in *FORCED. */
static inline int kv_judge_dist(const judge *j, int i, const int64_t *syms, int dist,
                                uint64_t *forced)
{
    int s = j->task->tensors[i].index_of;
    if (s <= 0) return dist;
    *forced = (uint64_t)syms[s - 1];
    return KV_DIST_INDEX;
}

/* ---- ending with a verdict (the runner is stopped first) ---- */

/* Fails with CODE and a formatted detail; never returns. */
_Noreturn void kv_judge_fail(judge *j, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fails with ERR ("code: detail"), prefixed with CONTEXT. */
_Noreturn void kv_judge_fail_err(judge *j, const char *err, const char *context);
/* Fails for shape D with CODE (value errors on a held-out shape become
 * wrong_on_held_out_shape). */
_Noreturn void kv_judge_fail_shape(judge *j, const shape_data *d, const char *code, const char *fmt,
                                   ...) __attribute__((format(printf, 4, 5)));
/* Fails with the runner's failure F (its report, its death, a deadline). */
_Noreturn void kv_judge_fail_runner(judge *j, const kv_rfail *f, const char *context);

/* Adds the time since *T0 to step STEP and moves *T0 to now. */
void kv_judge_lap(judge *j, enum prof_step step, double *t0);
/* Adds the seconds since *T0 to STEP of the check's profile; *T0 = now. */
void kv_judge_check_lap(judge *j, enum check_step step, double *t0);
/* "prefill (rows=4096 cols=256)" into BUF. */
const char *kv_judge_shape_label(const kv_task *t, const kv_shape *sh, char *buf, size_t cap);
/* Row-major coordinates of flat index IDX of tensor TI as "[r, c]". */
const char *kv_judge_coords(const kv_task *t, int ti, const int64_t *syms, size_t idx, char *buf,
                            size_t cap);

/* Notes the runner's CPU seconds now (J->idle_cpu) where the backend's
 * idle check between timed blocks reads them (no device inputs): on cuda
 * the read (a file of /proc) would only delay the look at the outputs. */
static inline void kv_judge_note_idle_cpu(judge *j)
{
    if (!kv_judge_can(j, KV_CAP_DEVICE_INPUTS)) j->idle_cpu = kv_runner_cpu_seconds(j->rn);
}

/* 1 when the copies the judge made of a reply's outputs, done now, show
 * the device was idle at the reply (reply_probe.h): the late look then
 * needs no settle. BYTES: what was copied. Counts the look either way. */
int kv_judge_look_at_once(judge *j, size_t bytes);

/* ---- arenas (judge_layout.c) ---- */

/* A layout of NSETS sets of shape SYMS. ONE_SET_GUARDED: the correctness
 * layout (one set, every tensor with margins and, on cpu, a guard page
 * after it and inputs read-only in the runner); else the timing layout
 * (each tensor's sets packed back to back, margins around them). */
void kv_judge_layout(const judge *j, const int64_t *syms, size_t nsets, int one_set_guarded,
                     layout *l);
/* The input sets a timed block of shape SYMS may use at most. */
size_t kv_judge_timing_sets(const judge *j, const int64_t *syms);
/* An arena for L, every byte a canary, mapped into the runner: a part of
 * the slab where the backend can (KV_CAP_ARENA_PARTS), else its own. */
void kv_judge_arena_new(judge *j, const layout *l, kv_arena *a);
/* Gives A back: a part to the slab, else unmapped from the runner and freed. */
void kv_judge_arena_free(judge *j, kv_arena *a);
/* An arena of BYTES (zeroed) only the judge sees, and its freeing (WHAT
 * names it in an error). */
void kv_judge_own_new(judge *j, size_t bytes, kv_arena *a, const char *what);
void kv_judge_own_free(judge *j, kv_arena *a);
/* Frees the slab once the runner it was mapped into has stopped (a
 * long-lived judge keeps it for the next runner, every part free and every
 * byte a canary again); returns the bytes outside the parts in use that
 * were not canaries (the runner wrote beyond what it was given). */
size_t kv_judge_arena_drop_slab(judge *j);
/* Frees the job's arenas still live (a verdict cut it short) and gives
 * every part back to the slab. */
void kv_judge_free_live(judge *j);
/* Fails (out_of_bounds_write) when a canary of A around a tensor of L
 * changed; D names the shape. */
void kv_judge_check_canaries(judge *j, const shape_data *d, kv_arena *a, const layout *l);
/* A block request for NCALLS calls of shape SYMS on sets FIRST.. of A. */
void kv_judge_block(const judge *j, const kv_arena *a, const layout *l, const int64_t *syms,
                    uint32_t first, uint32_t ncalls, kv_rmsg_run *m);

/* ---- the runner's steps, failing the candidate on its failures ---- */

/* Runs block M under the judge's deadline; returns the judge's seconds. */
double kv_judge_run_block(judge *j, const kv_rmsg_run *m, const char *context);
/* Fails (async_work_outside_harness_stream) when the runner has threads or
 * processes left running after a step; CONTEXT says after what. */
void kv_judge_check_quiet(judge *j, const shape_data *d, const char *context);

/* ---- correctness (judge_check.c) ---- */

/* The reference of one set (inputs at their place in A): into VAL[i] and
 * SCALE[i] (host, per output tensor i); from the device when the task has a
 * device reference and DEVICE is set, else from the CPU on the values IN[i]
 * (inputs as doubles). */
void kv_judge_reference(judge *j, const int64_t *syms, kv_arena *a, const layout *l, size_t set,
                        double *const *in, double **val, double **scale, int device);
/* Where the reference of shape SYMS puts output i's values (WHERE[i][0])
 * and error scales (WHERE[i][1]) in its arena, doubles; its bytes. */
size_t kv_judge_reference_place(const judge *j, const int64_t *syms, size_t where[][2]);
/* The task's device reference on set SET of A, into OUT (a judge-only
 * arena, made here when OUT->bytes is 0): output i's values at WHERE[i][0],
 * its error scales at WHERE[i][1]. */
void kv_judge_reference_arena(judge *j, const int64_t *syms, kv_arena *a, const layout *l,
                              size_t set, kv_arena *out, size_t where[][2]);
/* The findings about output I of shape D that end the trials, each a
 * no-op when there is nothing to say: C's unwritten elements after run
 * RUNNO; DIFFER elements (the first at FIRST) that differ between the two
 * runs; C's NaN or Inf, then its elements outside the tolerance (CACHED:
 * the previous trial's reference matches them, a cache). kv_judge_values
 * also folds C's errors into D's worst. */
void kv_judge_fail_unwritten(judge *j, const shape_data *d, int i, int runno, const kv_check *c);
void kv_judge_fail_differ(judge *j, const shape_data *d, int i, size_t differ, size_t first);
void kv_judge_values(judge *j, shape_data *d, int i, const kv_check *c, int cached);
/* Writes a fresh poison into every output of A. */
void kv_judge_poison_outputs(judge *j, shape_data *d, kv_arena *a, const layout *l);
/* One call of the candidate on A, to its end. */
void kv_judge_run_once(judge *j, shape_data *d, kv_arena *a, const layout *l);
/* The number of correctness trials D's shape gets (held-out or not, by
 * its inputs' bytes). */
int kv_judge_trials(const judge *j, const shape_data *d);
/* Draws inputs from DIST into D's images and values (on the host). */
void kv_judge_draw_inputs(judge *j, shape_data *d, kv_dist dist);
/* The correctness trials of shape SH (HELD: a held-out shape); returns its
 * summary ({"name", "max_abs_err", ..., "tol_ratio", "trials"}). */
json_t *kv_judge_check_shape(judge *j, const kv_shape *sh, int held);

/* ---- telemetry read beside the judge's work (judge_tele.c) ---- */

/* Starts the read of the device's telemetry before the first timed
 * scenario (none when one was started). */
void kv_judge_tele_begin(judge *j);
/* Starts the read of the device's telemetry after SUMMARY's blocks, in a
 * thread of its own. */
void kv_judge_tele_after(judge *j, json_t *summary);
/* Joins every read started: each SUMMARY gets "telemetry": {"before" (the
 * read before it), "after"}. */
void kv_judge_tele_finish(judge *j);

/* ---- held-out shapes drawn before the hold (judge_held.c) ---- */

/* Where the device is not the host's CPU: draws every trial's inputs of
 * every held-out shape and computes their CPU reference into J->held, while
 * another evaluation may hold the device (host work does not need it). */
void kv_judge_held_prepare(judge *j);
/* Draws held-out shape SH's trials now (images, no reference), for the
 * in-place checks where nothing was drawn before the hold (cpu). */
held_prep *kv_judge_held_draw(judge *j, const kv_shape *sh);
/* Makes trial T's inputs and reference D's (their buffers trade places). */
void kv_judge_held_take(judge *j, shape_data *d, held_trial *t);
/* Frees P's trials. */
void kv_judge_held_free(judge *j, held_prep *p);

/* ---- correctness where the data is (judge_check_in_place.c) ---- */

/* 1 when the judge checks scenarios in place: its backend has the in-place
 * helpers, does not stage, and the reference can read the inputs where
 * they are (a device reference, or arenas in the judge's memory). */
int kv_judge_in_place(const judge *j);
/* kv_judge_check_shape in place: inputs drawn where they live, the
 * reference computed there, outputs compared there; only counts and the
 * worst element come back. PREP: a held-out shape's trials as drawn before
 * the hold (kv_judge_held_in_place), else NULL (a scenario). */
json_t *kv_judge_check_in_place(judge *j, const kv_shape *sh, int held, held_prep *prep);
/* 1 when held-out shapes drawn before the hold are checked in place: a
 * device reference, which must match the CPU's on the first trial, and
 * device inputs. */
int kv_judge_held_in_place(const judge *j);

/* Marks in REP (one int per scenario) the representative scenario of each
 * class (a scenario's first tag): the one with the largest weight, the
 * first among equals. Returns how many are marked. */
int kv_judge_representatives(const kv_task *t, int *rep);

/* ---- timing (judge_time.c) ---- */

/* Measures the runner's fixed costs before the candidate is loaded. */
void kv_judge_calibrate(judge *j);
/* Times scenario SH in the runner in use: fills SUMMARY with median_us,
 * iqr_us, reps, roofline figures; with CHECK set, every timed call's
 * output is checked as the judge's rules say. */
void kv_judge_time_shape(judge *j, const kv_shape *sh, json_t *summary);

#endif
