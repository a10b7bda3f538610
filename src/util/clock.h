/* The monotonic clock every timer in kevolve reads (deadlines, timeouts,
 * progress rates, kernel timing on the CPU), and the wall clock's UTC
 * stamp that logs and the run manifest carry. */
#ifndef KV_UTIL_CLOCK_H
#define KV_UTIL_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (an arbitrary origin; only differences mean anything). */
double kv_now_s(void);
/* Sleeps S seconds (a signal may end it early). */
void kv_sleep_s(double s);

/* The time now, UTC, as "2026-12-01T15:08:54Z", into OUT. */
#define KV_UTC_STAMP_SIZE 24
void kv_utc_stamp(char out[KV_UTC_STAMP_SIZE]);

#endif
