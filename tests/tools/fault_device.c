/* A device that fails, for tests: linked into kevolve_faults only (never
 * kevolve), it replaces kv_device_fault (src/kernel/device_check.c), so
 * that the judge's opening of the device and the health check fail as a
 * broken device's would. Set by the environment:
 *
 *   KV_FAULT_DEVICE=BACKEND:N   device N of BACKEND fails ("opencl:1")
 */
#include "kernel/device_check.h"

#include <stdlib.h>
#include <string.h>

const char *kv_device_fault(const char *backend, int index)
{
    const char *spec = getenv("KV_FAULT_DEVICE");
    if (!spec || !backend) return NULL;
    size_t n = strlen(backend);
    if (strncmp(spec, backend, n) != 0 || spec[n] != ':' || atoi(spec + n + 1) != index)
        return NULL;
    return "an injected fault (KV_FAULT_DEVICE)";
}
