/* Benchmark: the parent's own CPU cost of one child process through
 * kv_proc_run (start, poll loop, reap). Holds BALLAST_MB of touched heap to
 * look like the controller (~17 MiB RSS) and, between spawns, writes one
 * byte of every ballast page, as a working parent does: that is where the
 * copy-on-write cost of fork() shows. Reports the process's user and sys
 * CPU (getrusage(RUSAGE_SELF), children excluded), minor page faults and
 * wall time per spawn.
 *
 *   proc_spawn [spawns (default 2000)] [ballast MiB (default 17)] [program (default /bin/true)] */
#include "util/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int spawns = argc > 1 ? atoi(argv[1]) : 2000;
    long ballast_mb = argc > 2 ? atol(argv[2]) : 17;
    char *program = argc > 3 ? argv[3] : "/bin/true";
    if (spawns <= 0 || ballast_mb < 0) {
        fprintf(stderr, "usage: proc_spawn [spawns] [ballast MiB] [program]\n");
        return 2;
    }
    size_t size = (size_t)ballast_mb << 20;
    long page = sysconf(_SC_PAGESIZE);
    char *ballast = size ? malloc(size) : NULL;
    if (size && !ballast) {
        fprintf(stderr, "proc_spawn: out of memory\n");
        return 1;
    }
    if (size) memset(ballast, 1, size);

    char *args[] = {program, NULL};
    kv_proc_spec spec = {.argv = args, .timeout_s = 60, .memory_limit_mb = 4096, .cpu_limit_s = 60};
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double w0 = wall_s();
    for (int i = 0; i < spawns; i++) {
        char *err = NULL;
        kv_proc *p = kv_proc_run(&spec, &err);
        if (!p) {
            fprintf(stderr, "proc_spawn: %s\n", err);
            free(err);
            return 1;
        }
        if (kv_proc_how(p) != KV_PROC_EXITED) {
            fprintf(stderr, "proc_spawn: child %s\n", kv_proc_describe(p));
            kv_proc_free(p);
            return 1;
        }
        kv_proc_free(p);
        for (size_t off = 0; off < size; off += (size_t)page)
            ballast[off]++;
    }
    double w1 = wall_s();
    getrusage(RUSAGE_SELF, &r1);
    double user = tv_s(r1.ru_utime) - tv_s(r0.ru_utime);
    double sys = tv_s(r1.ru_stime) - tv_s(r0.ru_stime);
    printf("spawns %d, ballast %ld MiB: parent CPU per spawn %.3f ms (user %.3f, sys %.3f), "
           "minor faults per spawn %.1f, wall per spawn %.3f ms\n",
           spawns, ballast_mb, (user + sys) * 1e3 / spawns, user * 1e3 / spawns, sys * 1e3 / spawns,
           (double)(r1.ru_minflt - r0.ru_minflt) / spawns, (w1 - w0) * 1e3 / spawns);
    free(ballast);
    return 0;
}
