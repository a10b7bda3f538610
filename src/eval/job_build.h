/* The evaluation job of a kernel-task run, built once from the config
 * (util/eval_job.h says what a job holds), and the devices it runs on. The
 * evaluator copies the template for every child, adding what is the
 * child's own: its file, its parent, its stage, its device-slot channel.
 * docs/evaluation.md follows a setting from the config to the device. */
#ifndef KV_EVAL_JOB_BUILD_H
#define KV_EVAL_JOB_BUILD_H

#include "config/config.h"
#include "eval/evaluator.h"
#include "util/eval_job.h"

#include <jansson.h>

/* Fills OUT (after kv_job_init) from CFG: task, backend, scenarios, quick,
 * screen_keep (screening off: no parent is ever set), limits (timeout,
 * kernel_timeout, device_wait, baseline_max_age) and CACHE_DIR (borrowed,
 * may be NULL). Strings point into CFG, which must outlive OUT. */
void kv_eval_job_template(const kv_config *cfg, const char *cache_dir, kv_job *out);

/* The devices the worker binary WORKER sees for BACKEND ("auto": the one
 * SUFFIX names), by running `WORKER devices --json` where CFG's launcher
 * runs evaluations (under Slurm, a step's view): {"backend": NAME,
 * "devices": [{"index", "name", ...}, ...]} (new reference), or NULL with
 * *ERR ("no CUDA device: ..."). */
json_t *kv_eval_devices(const kv_evaluator_config *cfg, const char *worker, const char *backend,
                        const char *suffix, char **err);

/* The device indices of a run: CFG's evaluator.devices, or with auto every
 * device of LISTED (kv_eval_devices's answer). Writes them to *DEVICES
 * (malloc'd) and returns how many, or -1 with *ERR (a listed index the
 * machine lacks, no device at all). */
int kv_eval_device_slots(const kv_config *cfg, const json_t *listed, int **devices, char **err);

/* The evaluator of a kernel-task run: the job template of CFG, the devices
 * the worker binary WORKER sees (*DEVICES, new reference: what the run's
 * manifest records), the slots of evaluator.devices among them. NULL with
 * *ERR when the backend has no device or a listed device is missing. */
kv_evaluator *kv_eval_task_evaluator(const kv_config *cfg, const char *worker, const char *work_dir,
                                     json_t **devices, char **err);

#endif
