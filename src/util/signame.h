/* Names of signals ("SIGSEGV" for 11), from a static table: safe inside a
 * signal handler (no locale, no allocation), so the crash handlers of the
 * runner and of the judge's worker use it as the rest of the code does. */
#ifndef KV_UTIL_SIGNAME_H
#define KV_UTIL_SIGNAME_H

/* "SIGSEGV" for SIGSEGV; UNKNOWN (may be NULL) for a signal the table
 * does not know (a real-time one). Async-signal-safe. */
const char *kv_signal_name(int sig, const char *unknown);

#endif
