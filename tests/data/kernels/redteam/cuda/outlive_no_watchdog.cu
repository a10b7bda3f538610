// Red team, class PROCESSES THAT OUTLIVE THE EVALUATION (issue 11), cuda, task gqa_attention_decode.
//
// It switches the old in-process watchdog off (every signal it can block
// blocked, SIGALRM and the termination signals ignored, the interval timers
// disarmed) and hangs: a spinning kernel on the harness's stream that never
// ends on its own, and the host spinning (two minutes at most).
//
// The judge must say: rejected (timeout), within the kernel timeout and its
// slack; the GPU is free for the next evaluation.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>

#include <signal.h>
#include <sys/time.h>
#include <time.h>

__global__ void forever(volatile int *flag)
{
    while (*flag == 0) {
    }
}

extern "C" int kv_launch(const kv_launch_args *a)
{
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
    int *flag = NULL;
    if (cudaMalloc(&flag, sizeof *flag) == cudaSuccess) {
        cudaMemsetAsync(flag, 0, sizeof *flag, (cudaStream_t)a->stream);
        forever<<<1, 1, 0, (cudaStream_t)a->stream>>>(flag);
    }
    volatile double v = 1;
    time_t end = time(NULL) + 120;
    while (time(NULL) < end)
        v = v * 1.0000001 + 1e-9;
    return 1;
}
