/* A device that fails, for tests: linked into kevolve_faults only (never
 * kevolve), it replaces kv_device_fault (src/judge/device_check.c), so
 * that the judge's opening of the device and the health check fail as a
 * broken device's would. Set by the environment:
 *
 * (a comma-separated list of)
 *   KV_FAULT_DEVICE=BACKEND:N      device N of BACKEND fails ("opencl:1")
 *   KV_FAULT_DEVICE=BACKEND:N:xid  device N works, but after each evaluation
 *                                  on it the judge reports an Xid, and its
 *                                  check finds it needing a reset
 *   KV_FAULT_ENERGY=WATTS:STEP     every device has an energy counter that
 *                                  moves every STEP seconds by WATTS * STEP
 *                                  joules, as NVML's does (in steps)
 */
#include "judge/device_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 1 when KV_FAULT_DEVICE (a comma-separated list) names device INDEX of
 * BACKEND with the fault KIND ("" or "xid"). */
static int has_fault(const char *backend, int index, const char *kind)
{
    const char *spec = getenv("KV_FAULT_DEVICE");
    size_t n = backend ? strlen(backend) : 0, k = strlen(kind);
    for (const char *at = spec; at && n; at = strchr(at, ','), at = at ? at + 1 : NULL) {
        if (strncmp(at, backend, n) != 0 || at[n] != ':') continue;
        char *end = NULL;
        long dev = strtol(at + n + 1, &end, 10);
        if (end == at + n + 1 || dev != index) continue;
        if (k == 0 ? (*end == '\0' || *end == ',')
                   : (*end == ':' && strncmp(end + 1, kind, k) == 0 &&
                      (end[1 + k] == '\0' || end[1 + k] == ',')))
            return 1;
    }
    return 0;
}

const char *kv_device_fault(const char *backend, int index)
{
    return has_fault(backend, index, "") ? "an injected fault (KV_FAULT_DEVICE)" : NULL;
}

int kv_energy_fault(const char *backend, int index, double *j)
{
    (void)backend;
    (void)index;
    const char *spec = getenv("KV_FAULT_ENERGY");
    char *end = NULL;
    double watts = spec ? strtod(spec, &end) : 0, step = end && *end == ':' ? atof(end + 1) : 0;
    if (!(watts > 0 && step > 0)) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    *j = floor(now / step) * step * watts;
    return 0;
}

const char *kv_device_error_fault(const char *backend, int index)
{
    return has_fault(backend, index, "xid") ? "Xid 79 (injected by KV_FAULT_DEVICE)" : NULL;
}
