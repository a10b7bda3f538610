/* The devices' long-lived judges, as the evaluator keeps them: one
 * `WORKER __judge_server` process per device (kernel/judge_server.h),
 * started when the first job is bound to that device and started again
 * when it has ended (a verdict that leaves the judge in doubt ends it).
 *
 * It owns the judges' processes and the evaluator's end of each one's
 * control channel, and nothing of any job. A job's worker gets one end of
 * a channel pair (kv_device_judges_channel) as its judge_fd; once the job
 * is bound to a device, the other end goes to that device's judge over
 * the control channel (kv_device_judges_hand). When no judge can take it,
 * that end is closed all the same, and the worker judges the job itself:
 * a judge that cannot start costs a run its speed, never its verdict. */
#ifndef KV_EVAL_DEVICE_JUDGES_H
#define KV_EVAL_DEVICE_JUDGES_H

typedef struct kv_device_judges kv_device_judges;

/* The judges of a run whose worker binary is WORKER (copied), none started
 * yet. NULL when KEVOLVE_JUDGE_SERVER is 0: no judges, each job its own. */
kv_device_judges *kv_device_judges_new(const char *worker);
/* Closes every control channel and ends every judge (their process groups
 * killed). NULL is allowed. */
void kv_device_judges_free(kv_device_judges *dj);

/* A job's channel pair to a judge, close-on-exec: PAIR[1] goes to the
 * worker, PAIR[0] to kv_device_judges_hand. Returns 0, or -1 (errno). */
int kv_device_judges_channel(int pair[2]);
/* Hands END (a job's PAIR[0]) to DEVICE's judge, starting the judge when
 * there is none or it has ended. END is closed here in every case. Returns
 * 0 when the judge has it, -1 when it could not go (DEVICE < 0, the judge
 * could not start, its control channel full or gone). */
int kv_device_judges_hand(kv_device_judges *dj, int device, int end);
/* Reads what the judges print, so that none blocks on a full pipe. */
void kv_device_judges_drain(kv_device_judges *dj);

#endif
