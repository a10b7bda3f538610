/* The judge's handle on a runner: it starts the process that holds the
 * candidate's code (runner.h), speaks to it step by step, bounds every step
 * with a deadline of the judge's own, and kills it with everything it
 * started when the evaluation is over or a step overruns. The runner's word
 * is taken only as "this step ended" or as a failure of the candidate. */
#ifndef KV_JUDGE_RUNNER_CLIENT_H
#define KV_JUDGE_RUNNER_CLIENT_H

#include "backend/backend.h"
#include "runner/rproto.h"

#include <sys/types.h>

typedef struct kv_runner kv_runner;

/* Why a step failed, when the failure is the candidate's. */
typedef struct kv_rfail {
    kv_reason code;   /* KV_R_TIMEOUT, KV_R_CRASH, KV_R_LAUNCH_FAILED, ... */
    int arg;          /* KV_R_CRASH: the signal; KV_R_CRASH_EXIT: the status */
    char detail[700]; /* what happened, for artifacts.reason_detail */
    uint32_t call;    /* the call of the block it happened in */
} kv_rfail;

typedef struct kv_runner_spec {
    const kv_backend *backend;
    int device;             /* the backend's device to open */
    const char *self_exe;   /* the kevolve binary (NULL: /proc/self/exe) */
    const char *lib;        /* the candidate's shared object */
    const char *device_src; /* opencl: a file with the device code; else NULL */
    const char *own_dir;    /* a folder of this code's own the runner may write (opencl: PoCL's
                               kernel cache, per program, so no program can poison another's),
                               or NULL */
    /* "NAME=VALUE": the backend's visible_env narrowed to the device (with
     * DEVICE 0 of what it shows), which the runner checks it sees alone; or
     * NULL. */
    const char *confine_env;
    const char *wrapper; /* a program the runner runs under (compute-sanitizer), or NULL */
    char *const *wrapper_args;
} kv_runner_spec;

/* Starts a runner and waits (at most TIMEOUT_S) for its hello: its device
 * open and its sandbox applied, before any candidate code is loaded, so what
 * it says about its sandbox is still the harness's own word (*ISOLATION,
 * malloc'd). Returns the runner; NULL with *ERR when it could not start or
 * open the device (KV_R_NO_DEVICE where the runner's open found none,
 * else KV_R_HARNESS_ERROR). */
kv_runner *kv_runner_start(const kv_runner_spec *spec, double timeout_s, char **isolation,
                           kv_fail *err);
/* The same in two halves, for a judge that starts a runner while it works
 * with another: the process started (NULL with *ERR), then its hello
 * waited for (NULL with *ERR: the runner is stopped and freed). */
kv_runner *kv_runner_spawn(const kv_runner_spec *spec, kv_fail *err);
kv_runner *kv_runner_greet(kv_runner *r, double timeout_s, char **isolation, kv_fail *err);

/* The steps. Each returns 0 when it ended well, 1 when it failed by the
 * candidate's doing (F filled: the runner's own report, its death, or the
 * deadline), -1 on a harness error (*ERR, KV_R_HARNESS_ERROR). */
int kv_runner_map(kv_runner *r, const kv_arena *a, const kv_rguard *guards, int nguards,
                  double timeout_s, kv_rfail *f, kv_fail *err);
int kv_runner_unmap(kv_runner *r, uint32_t arena, double timeout_s, kv_rfail *f, kv_fail *err);
/* *LOG: the build log (opencl; malloc'd, may be empty). */
int kv_runner_load(kv_runner *r, double timeout_s, char **log, kv_rfail *f, kv_fail *err);
/* Runs block M; *SECONDS: the judge's wall time from the request's send to
 * the reply's arrival. */
int kv_runner_run(kv_runner *r, const kv_rmsg_run *m, double timeout_s, double *seconds,
                  kv_rfail *f, kv_fail *err);

/* The runner's process id (what /proc/PID describes), or -1 after its end. */
pid_t kv_runner_pid(const kv_runner *r);
/* Its threads now, -1 when unknown. */
int kv_runner_threads(const kv_runner *r);
/* CPU time its threads have used, in seconds (schedstat), -1 when unknown. */
double kv_runner_cpu_seconds(const kv_runner *r);
/* Processes it has started that still run (its descendants). */
int kv_runner_children(const kv_runner *r);
/* What it printed (the tail of its stdout and stderr), malloc'd. */
char *kv_runner_output(const kv_runner *r, size_t max);

/* Asks the runner to exit and waits at most TIMEOUT_S for it (a tool it
 * runs under, such as compute-sanitizer, then writes its summary); 0 when it
 * exited, -1 when it had to be killed. */
int kv_runner_quit(kv_runner *r, double timeout_s);

/* Kills the runner and every process it started (setsid ones too), reaps
 * them, removes its scratch folder and frees R. */
void kv_runner_stop(kv_runner *r);

#endif
