/* The monotonic clock every timer in kevolve reads (deadlines, timeouts,
 * progress rates, kernel timing on the CPU). */
#ifndef KV_UTIL_CLOCK_H
#define KV_UTIL_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (an arbitrary origin; only differences mean anything). */
double kv_now_s(void);
/* Sleeps S seconds (a signal may end it early). */
void kv_sleep_s(double s);

#endif
