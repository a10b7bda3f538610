/* Holding an evaluation's device. The device is known early (the
 * evaluator binds the job to one, or the job names it), so that the judge
 * opens its context and starts the candidate's runner there while another
 * evaluation still holds the device; it then waits for the device (its
 * slot from the evaluator, then the device's lock against other
 * processes) only for its device work, and lets go as soon as that is
 * done (README: the evaluation pipeline). */
#ifndef KV_JUDGE_DEVICE_HOLD_H
#define KV_JUDGE_DEVICE_HOLD_H

#include "backend/backend.h"
#include "util/eval_job.h"

/* The device JOB will use: the one the evaluator binds it to (over its
 * slot channel), else the job's own. Returns it, or -1 with *ERR. */
int kv_device_bind(const kv_job *job, char **err);

/* Waits for DEVICE of backend B: the evaluator's slot (which must be that
 * device), then the lock CACHE/device-B-N(-host).lock, at most
 * limits.device_wait_s. Sets *WAITED to the seconds it waited (not the
 * job's: the caller moves its budget by them) and *GRANTED to when the
 * evaluator's slot came (kv_now_s; when it asked for none, when it began)
 * and returns the lock's descriptor (close-on-exec), or -1 with *ERR
 * ("device busy: ..." and the like). ASKED: the slot was asked for
 * already (a long-lived judge's client asked as it handed its job over):
 * only its grant is waited for. */
int kv_device_hold(const kv_job *job, int asked, const kv_backend *b, const char *cache, int device,
                   double *waited, double *granted, char **err);

/* Lets go of the device held through LOCK (closed) and tells the
 * evaluator, which hands it to the next in line. */
void kv_device_let_go(const kv_job *job, int lock);

#endif
