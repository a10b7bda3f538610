/* One evaluation of a kernel candidate as one typed document: everything the
 * kernel worker needs (task, scenario set, backend, device, stage, every
 * limit, the parent to screen against), built once by the evaluation
 * pipeline from the config (src/eval/job_build.c) or by `kevolve eval` from
 * its command line, and handed to the worker whole as one JSON file. The
 * worker reads nothing else: no environment variable, no re-parsed command
 * line. It lives in util because both sides use it and may not see each
 * other (src/eval writes it, src/kernel reads it).
 *
 * The document (every key optional but task and candidate):
 *   {"version": 1, "task": "gqa_attention_small", "backend": "opencl",
 *    "device": 0, "candidate": "/run/work/12.cl", "scenarios": ["decode"],
 *    "stage": 0, "quick": true, "compile_only": false, "cpu_reference": false,
 *    "fresh_baseline": false, "energy": false, "arch": "sm_90a", "cache_dir": "...",
 *    "run_dir": "/run", "seed": 0, "ceiling_gbps": 0,
 *    "limits": {"total_s": 900, "call_s": 0, "device_wait_s": 600,
 *               "baseline_max_age_s": 900},
 *    "screen": {"keep": 0, "parent": {"combined_score": 3.1,
 *                                     "speedup": {"decode_b1": 2.9, ...}}},
 *    "slot_fd": 3}
 *
 * Time: limits.total_s is the evaluation's one budget (compile, judge and
 * runner together); waiting for the device is not in it. call_s bounds one
 * call of the candidate inside it (0: the judge's default, 10 s, quick 5 s).
 * device_wait_s bounds the wait for a device that another process holds. */
#ifndef KV_UTIL_EVAL_JOB_H
#define KV_UTIL_EVAL_JOB_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define KV_JOB_VERSION 1

/* The folder of RUN_DIR where the judge keeps its verdicts by compiled
 * artifact (kernel/artifact.h); a run replaced with --force removes it. */
#define KV_RUN_VERDICTS_DIR "artifacts"

typedef struct kv_job_limits {
    double total_s;            /* the whole evaluation; default 900 */
    double call_s;             /* one call of the candidate; 0: the judge's default */
    double device_wait_s;      /* a device held by another process; default 600 */
    double baseline_max_age_s; /* a kept baseline older than this is timed again; 900 */
} kv_job_limits;

typedef struct kv_job {
    const char *task;      /* built-in task name */
    const char *backend;   /* "cpu", "opencl", "cuda"; "auto" or NULL: by the candidate's suffix */
    int device;            /* the backend's device (its own numbering); default 0 */
    const char *candidate; /* path of the candidate source */
    /* Scenarios to time (names, or tags such as "decode"); none: every one
     * of the task. Held-out shapes are always checked. */
    const char *const *scenarios;
    size_t n_scenarios;
    int stage;             /* 0: everything; 1: correctness only; 2: correctness and timing; 3:
                              compute-sanitizer memcheck (where the backend has it) */
    int quick;             /* fewer trials and repetitions */
    int compile_only;      /* compile and hash, judge nothing */
    int cpu_reference;     /* the task's CPU reference even where it has a device one */
    int fresh_baseline;    /* time the baseline now, whatever is kept */
    int energy;            /* each timed scenario's energy per call (a device counter) */
    const char *arch;      /* "sm_90a"; NULL: the device's */
    const char *cache_dir; /* compiled code; NULL: the default cache */
    const char *run_dir;   /* the run's folder (kept baseline, verdicts by artifact), or NULL */
    uint64_t seed;         /* inputs; 0: fresh from the system's random source */
    double ceiling_gbps;   /* > 0: the device's bandwidth ceiling (tests) */
    kv_job_limits limits;  /* see above */
    double screen_keep;    /* the least fraction of the parent's speed to go on; 0: the task's */
    const json_t *parent;  /* {"combined_score", "speedup": {scenario: x}}, or NULL: no screen */
    /* The descriptor of the evaluator's device-slot channel in the worker
     * (kv_slot_*), or -1: the job takes its own device. */
    int slot_fd;
    /* The descriptor of a channel to the device's long-lived judge
     * (kernel/judge_server.h), or -1: the job's own judge. */
    int judge_fd;
    /* Not in the document: the kevolve binary the runners re-execute
     * (tests run the harness from other programs); NULL: this one. */
    const char *self_exe;
    /* The parsed document the strings point into (kv_job_from_json), or NULL. */
    json_t *doc;
    char **owned; /* arrays made by the parser */
} kv_job;

/* Defaults: no strings, device 0, budgets as above, slot_fd -1. */
void kv_job_init(kv_job *j);
/* Frees what kv_job_from_json made; J is then as after kv_job_init. */
void kv_job_clear(kv_job *j);

/* The document of J (new reference). */
json_t *kv_job_to_json(const kv_job *j);
/* Reads DOC (a reference is taken: the strings point into it) into J.
 * Returns 0, or -1 with *ERR naming the key ("job: limits.total_s: not a
 * number"); unknown keys are errors, so a newer writer is refused. */
int kv_job_from_json(json_t *doc, kv_job *j, char **err);
/* The same from the file PATH. */
int kv_job_read(const char *path, kv_job *j, char **err);
/* Writes J's document to PATH. Returns 0 or -1 with *ERR. */
int kv_job_write(const kv_job *j, const char *path, char **err);

#endif
