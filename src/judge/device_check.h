/* Is a device fit for more work? The evaluator asks after an evaluation
 * that may have left it broken (a harness failure on it, a candidate that
 * faulted it, device errors the driver reported during it): the judge's
 * half opens it, writes a small arena, reads it back, asks whether it needs
 * a reset (NVML) and closes it, in a worker child, so that a driver that
 * crashes or hangs ends only the child. Tests make a device fail through
 * kv_device_fault and kv_device_error_fault (kevolve_faults). */
#ifndef KV_JUDGE_DEVICE_CHECK_H
#define KV_JUDGE_DEVICE_CHECK_H

/* 0 when device INDEX of BACKEND works; -1 with *ERR saying why not. */
int kv_kernel_check_device(const char *backend, int index, char **err);

/* Why device INDEX of BACKEND is to fail (a test's injected fault), or
 * NULL: always NULL in kevolve; tests/tools/fault_device.c overrides it in
 * the kevolve_faults binary. */
const char *kv_device_fault(const char *backend, int index);

/* A test's injected energy counter for device INDEX of BACKEND, in joules
 * into *J: 0, or -1 (none: always in kevolve; overridden as
 * kv_device_fault is). */
int kv_energy_fault(const char *backend, int index, double *j);

/* A device error to report for device INDEX of BACKEND after each
 * evaluation on it, and to fail its check with (a test's injected Xid), or
 * NULL: always NULL in kevolve; overridden as kv_device_fault is. */
const char *kv_device_error_fault(const char *backend, int index);

#endif
