/* Red team, class PROCESSES THAT OUTLIVE THE EVALUATION (issue 11), cpu,
 * task softmax.
 *
 * It switches the old in-process watchdog off and hangs: every signal it
 * can block is blocked, SIGALRM, SIGTERM, SIGINT, SIGHUP and SIGXCPU are
 * ignored, the interval timers are disarmed, and it spins (two minutes at
 * most, for the machine's sake).
 *
 * The judge must say: rejected (timeout), within the kernel timeout and
 * its slack, not after the whole evaluation's limit: the watchdog lives
 * outside the candidate's process. Today only the worker's total timeout
 * ends it. */
#include <kevolve/task.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

int kv_launch(const kv_launch_args *a)
{
    (void)a;
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    int ignored[] = {SIGALRM, SIGTERM, SIGINT, SIGHUP, SIGXCPU, SIGVTALRM, SIGPROF};
    for (unsigned i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        signal(ignored[i], SIG_IGN);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    setitimer(ITIMER_VIRTUAL, &off, NULL);
    setitimer(ITIMER_PROF, &off, NULL);
    volatile double v = 1;
    time_t end = time(NULL) + 120;
    while (time(NULL) < end)
        v = v * 1.0000001 + 1e-9;
    return 1;
}
