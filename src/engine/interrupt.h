/* SIGINT/SIGTERM handling for a run: the first signal asks the controller to
 * stop producing children and to store the work in flight; the second asks
 * it to stop at once. The handler only counts; the loop acts. */
#ifndef KV_ENGINE_INTERRUPT_H
#define KV_ENGINE_INTERRUPT_H

/* Installs the handlers (and ignores SIGPIPE). */
void kv_interrupt_install(void);
/* Number of signals received since install. */
int kv_interrupt_count(void);
/* Forgets received signals (tests). */
void kv_interrupt_reset(void);

#endif
