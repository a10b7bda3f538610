/* One child judged, from its trial's start to its verdict sent
 * (judge_child.c): what a worker's judge does once (judge.c) and a
 * long-lived judge does for each child it serves (judge_server.c), on the
 * device's state it keeps. */
#ifndef KV_JUDGE_JUDGE_CHILD_H
#define KV_JUDGE_JUDGE_CHILD_H

#include "judge/judge_device.h"
#include "judge/runner_client.h"

#include <jansson.h>

typedef struct kv_judge_child {
    const kv_judge_ctx *ctx;
    kv_runner *rn;     /* its candidate's runner started ahead (taken), or NULL: started here */
    kv_fail spawn_err; /* why that runner did not start (taken); unset when it did */
    json_t *judge;     /* a long-lived judge's {"pid", "child"}, put in the result; or NULL */
    /* Called once the device was opened for this child (a long-lived judge
     * then starts the runners of the jobs waiting), with ARG; may be NULL. */
    void (*opened)(void *arg, const kv_jdev *b);
    void *arg;
} kv_judge_child;

/* How a child ended: its result sent; its failure sent and the device fit
 * for the next child; or a failure that may be the judge's own (a harness
 * error, no device, a backend not built, device errors the driver
 * reported, the device's state in doubt): the judge ends. */
typedef enum kv_child_end { KV_CHILD_PASSED, KV_CHILD_REJECTED, KV_CHILD_JUDGE_ENDS } kv_child_end;

/* Judges C's job on DEV (opened first unless it is open): prepares (its
 * runner, the held-out shapes drawn before the hold), holds the device,
 * checks and times the candidate, lets go and sends the result or the
 * failure on the worker's channel (worker.h). Whatever cut it short,
 * nothing of the child is left but what DEV keeps. */
kv_child_end kv_judge_child_run(judge_device *dev, kv_judge_child *c);

/* Starts a runner for the code C of CTX's job (its process, the device
 * opened there, its sandbox applied, none of C's code loaded) on
 * BACKEND's device, narrowed to DEVICE_CONFINE (the judge's jdev's
 * confine). NULL with *ERR. Safe in any thread. */
kv_runner *kv_judge_start_runner(const kv_backend *backend, const char *device_confine,
                                 const kv_judge_ctx *ctx, const kv_judge_code *c,
                                 const char *device_src, kv_fail *err);

#endif
