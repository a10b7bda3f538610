/* SIGINT/SIGTERM counting for graceful, then immediate, stops. */
#include "engine/interrupt.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t g_count;

static void on_signal(int sig)
{
    (void)sig;
    if (g_count < 100) g_count++;
}

void kv_interrupt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int kv_interrupt_count(void)
{
    return (int)g_count;
}

void kv_interrupt_reset(void)
{
    g_count = 0;
}
