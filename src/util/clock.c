/* The monotonic clock, and the wall clock's UTC stamp. */
#include "util/clock.h"

#include <time.h>

double kv_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void kv_sleep_s(double s)
{
    if (!(s > 0)) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

void kv_utc_stamp(char out[KV_UTC_STAMP_SIZE])
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, KV_UTC_STAMP_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
