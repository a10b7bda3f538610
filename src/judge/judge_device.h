/* What the judge keeps while it holds a device, apart from any one child:
 * the backend's judge half (its context and the judge's kernels), the
 * task's device reference, the slab of arenas the runners are handed, the
 * clock's calibration and the device's bandwidth (both taken before any
 * candidate's code was loaded).
 *
 * A worker's judge (judge.c) has one for its one child. A long-lived judge
 * (judge_server.c) has one for every child of a key, LONG_LIVED set: it
 * then keeps the calibration and the bandwidth for the next child, and the
 * slab for the next runner (every byte a canary again first). It keeps no
 * input and no reference: a later child could predict what an earlier one
 * was checked on. A child's own state is judge_trial.h's. */
#ifndef KV_JUDGE_JUDGE_DEVICE_H
#define KV_JUDGE_JUDGE_DEVICE_H

#include "judge/arena_parts.h"
#include "backend/backend.h"
#include "judge/judge.h"
#include "judge/judge_verdict.h"

#include <stdint.h>

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

typedef struct judge_device {
    int long_lived;      /* it serves child after child (judge_server.c) */
    int opened;          /* B is open and the reference loaded */
    kv_jdev *b;          /* the backend's judge half (NULL before the first open) */
    void *ref_so;        /* the task's device reference, loaded here */
    kv_launch_fn ref;    /* its entry, or NULL: the CPU's reference */
    char *helpers;       /* the shared object of the judge's kernels (its own copy) */
    uint32_t next_arena; /* the last arena id given out */
    /* KV_CAP_ARENA_PARTS: one allocation mapped into the runner in use, of
     * which each shared arena is a part (judge_arena.c). SLAB_SHARED: it is
     * mapped into that runner; SLAB_REFUSED: the device had no room for it. */
    kv_arena slab;
    kv_parts parts;
    int slab_refused, slab_shared;
    int calibrated; /* C_KEPT holds the clock's calibration (long-lived only) */
    calib c_kept;
    int measured; /* the bandwidth was measured (long-lived only) */
    /* A child drew the held-out shapes on the host before its hold (and
     * checked the device reference against the CPU's on them): the
     * later children of a long-lived judge draw them in place. */
    int held_drawn;
    /* A step of the judge's own failed while a child was unwinding (the
     * slab could not be checked or made canaries again): nothing here is
     * trusted for another child, and the judge ends. */
    int doubt;
} judge_device;

/* D as nothing opened, LONG_LIVED as given. */
void kv_judge_device_init(judge_device *d, int long_lived);
/* Opens the device of CTX for the judge unless D has it open (before the
 * hold: contexts, the judge's kernels, the task's device reference); its
 * failures go into V (no_device, not_built, harness_error). */
KV_MUST_CHECK int kv_judge_device_open(judge_device *d, const kv_judge_ctx *ctx, kv_verdict *v);
/* Frees what D holds (the slab, the reference, the device's context) and
 * leaves it as kv_judge_device_init did. */
void kv_judge_device_free(judge_device *d);

#endif
