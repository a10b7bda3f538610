/* Reading compute-sanitizer's memcheck report (the judge's stage 3). */
#ifndef KV_JUDGE_MEMCHECK_LOG_H
#define KV_JUDGE_MEMCHECK_LOG_H

/* The first error memcheck reported in LOG, the runner's output under the
 * tool (from its first line on, at most 300 bytes; malloc'd), or NULL when it reported
 * none: an invalid access, a hit error, or an error summary above 0. */
char *kv_memcheck_first_error(const char *log);

#endif
