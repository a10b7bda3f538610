/* Names of signals ("SIGSEGV" for 11), from a static table: safe inside a
 * signal handler (no locale, no allocation), so the crash handlers of the
 * runner and of the judge's worker use it as the rest of the code does;
 * and the one way those handlers are installed. */
#ifndef KV_UTIL_SIGNAME_H
#define KV_UTIL_SIGNAME_H

#include <signal.h>
#include <stddef.h>

/* "SIGSEGV" for SIGSEGV; UNKNOWN (may be NULL) for a signal the table
 * does not know (a real-time one). Async-signal-safe. */
const char *kv_signal_name(int sig, const char *unknown);

/* HANDLER for the signals a crash raises (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGABRT), once each (SA_RESETHAND: a second one kills), on the
 * alternate stack STACK of SIZE bytes (a stack overflow still reports). */
void kv_catch_crashes(void (*handler)(int, siginfo_t *, void *), void *stack, size_t size);

#endif
