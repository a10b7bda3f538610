/* Was the device idle when the runner replied? The judge copies the
 * outputs aside right after a reply and times that copy from the reply
 * (judge_time.c, judge_check_in_place.c). On a backend whose runner replies
 * only once its device context is idle (KV_CAP_IDLE_REPLY), a copy that
 * runs at once shows that nothing of the candidate's was still working on
 * the device: the copies are the outputs as the reply left them, and every
 * check of an output reads them. A copy that waited (another context's
 * work ahead of it: a straggler the candidate left running, or another
 * process) says nothing, and the judge then waits its settle and looks
 * again, as on every other backend. */
#ifndef KV_JUDGE_REPLY_PROBE_H
#define KV_JUDGE_REPLY_PROBE_H

#include <stddef.h>

/* The most a copy of BYTES may take from the reply for the device to count
 * as idle: a fixed allowance for the device's switch to the judge's
 * context and the judge's own launch and wait, three
 * times the copy-and-wait the calibration measured (COPY_S), and the bytes
 * read and written at the calibrated PER_BYTE_S (0: not calibrated). */
double kv_reply_probe_limit(double copy_s, double per_byte_s, size_t bytes);

/* 1 when a copy of BYTES that was done WAITED_S after the reply shows an
 * idle device (see kv_reply_probe_limit). */
int kv_reply_was_idle(double waited_s, double copy_s, double per_byte_s, size_t bytes);

#endif
