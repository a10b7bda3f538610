/* Run-time loading of the CUDA driver API and NVML (see cuda_api.h). */
#include "backend/cuda/cuda_api.h"
#include "util/buf.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#define LOAD(field, name)                                                                          \
    do {                                                                                           \
        void *sym = dlsym(cu->lib, name);                                                          \
        if (!sym) {                                                                                \
            *err = kv_asprintf("no CUDA device: libcuda.so.1 lacks %s", name);                     \
            return -1;                                                                             \
        }                                                                                          \
        memcpy(&cu->field, &sym, sizeof sym);                                                      \
    } while (0)

int kv_cu_load(kv_cu *cu, char **err)
{
    memset(cu, 0, sizeof *cu);
    cu->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu->lib) {
        *err = kv_asprintf("no CUDA device: cannot load the CUDA driver (libcuda.so.1): %s",
                           dlerror());
        return -1;
    }
    LOAD(Init, "cuInit");
    LOAD(DeviceGetCount, "cuDeviceGetCount");
    LOAD(DeviceGet, "cuDeviceGet");
    LOAD(DeviceGetName, "cuDeviceGetName");
    LOAD(DeviceGetAttribute, "cuDeviceGetAttribute");
    LOAD(DeviceGetPCIBusId, "cuDeviceGetPCIBusId");
    LOAD(DeviceTotalMem, "cuDeviceTotalMem_v2");
    LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(CtxSetCurrent, "cuCtxSetCurrent");
    LOAD(CtxSynchronize, "cuCtxSynchronize");
    LOAD(StreamCreate, "cuStreamCreate");
    LOAD(StreamSynchronize, "cuStreamSynchronize");
    LOAD(MemAlloc, "cuMemAlloc_v2");
    LOAD(MemFree, "cuMemFree_v2");
    LOAD(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    LOAD(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    LOAD(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    LOAD(MemsetD8Async, "cuMemsetD8Async");
    LOAD(MemsetD16Async, "cuMemsetD16Async");
    LOAD(MemsetD32Async, "cuMemsetD32Async");
    LOAD(IpcGetMemHandle, "cuIpcGetMemHandle");
    LOAD(IpcOpenMemHandle, "cuIpcOpenMemHandle_v2");
    LOAD(IpcCloseMemHandle, "cuIpcCloseMemHandle");
    LOAD(EventCreate, "cuEventCreate");
    LOAD(EventRecord, "cuEventRecord");
    LOAD(EventSynchronize, "cuEventSynchronize");
    LOAD(EventElapsedTime, "cuEventElapsedTime");
    LOAD(GetErrorName, "cuGetErrorName");
    LOAD(StreamBeginCapture, "cuStreamBeginCapture_v2");
    LOAD(StreamEndCapture, "cuStreamEndCapture");
    LOAD(GraphInstantiate, "cuGraphInstantiateWithFlags");
    LOAD(GraphLaunch, "cuGraphLaunch");
    LOAD(GraphExecDestroy, "cuGraphExecDestroy");
    LOAD(GraphDestroy, "cuGraphDestroy");
    LOAD(DriverGetVersion, "cuDriverGetVersion");
    void *uuid = dlsym(cu->lib, "cuDeviceGetUuid"), *uuid2 = dlsym(cu->lib, "cuDeviceGetUuid_v2");
    memcpy(&cu->DeviceGetUuid, &uuid, sizeof uuid);
    memcpy(&cu->DeviceGetUuid_v2, &uuid2, sizeof uuid2);
    return 0;
}

const char *kv_cu_error_name(const kv_cu *cu, CUresult rc)
{
    const char *name = NULL;
    if (cu->GetErrorName && cu->GetErrorName(rc, &name) == 0 && name) return name;
    return "CUDA_ERROR_UNKNOWN";
}

kv_reason kv_cu_error_code(const kv_cu *cu, CUresult rc)
{
    const char *n = kv_cu_error_name(cu, rc);
    static const struct {
        const char *name;
        kv_reason code;
    } map[] = {
        {"CUDA_ERROR_ILLEGAL_ADDRESS", KV_R_ILLEGAL_ADDRESS},
        {"CUDA_ERROR_MISALIGNED_ADDRESS", KV_R_MISALIGNED_ADDRESS},
        {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", KV_R_OUT_OF_RESOURCES},
        {"CUDA_ERROR_OUT_OF_MEMORY", KV_R_OUT_OF_MEMORY},
        {"CUDA_ERROR_ILLEGAL_INSTRUCTION", KV_R_ILLEGAL_INSTRUCTION},
        {"CUDA_ERROR_LAUNCH_TIMEOUT", KV_R_LAUNCH_TIMEOUT},
        {"CUDA_ERROR_LAUNCH_FAILED", KV_R_LAUNCH_FAILED},
        {"CUDA_ERROR_HARDWARE_STACK_ERROR", KV_R_HARDWARE_STACK_ERROR},
        {"CUDA_ERROR_INVALID_PC", KV_R_INVALID_PC},
        {"CUDA_ERROR_ASSERT", KV_R_DEVICE_ASSERT},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(n, map[i].name) == 0) return map[i].code;
    return KV_R_CUDA_ERROR;
}

/* ---- NVML ---- */

/* nvmlEventData_t, as nvml.h lays it out. */
typedef struct nvml_event {
    void *device;
    unsigned long long type, data;
    unsigned gpu_instance, compute_instance;
} nvml_event;

enum {
    NVML_EVENT_DOUBLE_BIT_ECC = 0x2,
    NVML_EVENT_XID = 0x8,
    NVML_MEMORY_ERROR_UNCORRECTED = 1,
    NVML_VOLATILE_ECC = 0,
};

typedef struct nvml {
    void *lib;
    void *dev;
    int (*GetTemperature)(void *, int, unsigned *);
    int (*GetClockInfo)(void *, int, unsigned *);
    int (*GetPowerUsage)(void *, unsigned *);
    int (*GetTotalEnergyConsumption)(void *, unsigned long long *);
    /* Device errors (kv_nvml_watch, kv_nvml_errors, kv_nvml_needs_reset). */
    int (*EventSetCreate)(void **);
    int (*RegisterEvents)(void *, unsigned long long, void *);
    int (*EventSetWait)(void *, nvml_event *, unsigned);
    int (*GetTotalEccErrors)(void *, int, int, unsigned long long *);
    int (*GetRemappedRows)(void *, unsigned *, unsigned *, unsigned *, unsigned *);
    int (*GetRetiredPagesPending)(void *, int *);
    void *events;            /* the event set, when registered */
    int ecc_known;           /* ECC0 was read */
    unsigned long long ecc0; /* uncorrected ECC errors (volatile) at the watch's start */
} nvml;

void *kv_nvml_open(const char *bus)
{
    static nvml n;
    if (n.dev) return &n;
    n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n.lib) return NULL;
    int (*init)(void) = NULL;
    int (*by_bus)(const char *, void **) = NULL;
    int (*by_index)(unsigned, void **) = NULL;
    void *s;
    if ((s = dlsym(n.lib, "nvmlInit_v2"))) memcpy(&init, &s, sizeof s);
    if ((s = dlsym(n.lib, "nvmlDeviceGetHandleByPciBusId_v2"))) memcpy(&by_bus, &s, sizeof s);
    if ((s = dlsym(n.lib, "nvmlDeviceGetHandleByIndex_v2"))) memcpy(&by_index, &s, sizeof s);
#define NVML_SYM(field, name)                                                                      \
    if ((s = dlsym(n.lib, name))) memcpy(&n.field, &s, sizeof s)
    NVML_SYM(GetTemperature, "nvmlDeviceGetTemperature");
    NVML_SYM(GetClockInfo, "nvmlDeviceGetClockInfo");
    NVML_SYM(GetPowerUsage, "nvmlDeviceGetPowerUsage");
    NVML_SYM(GetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption");
    NVML_SYM(EventSetCreate, "nvmlEventSetCreate");
    NVML_SYM(RegisterEvents, "nvmlDeviceRegisterEvents");
    NVML_SYM(EventSetWait, "nvmlEventSetWait_v2");
    NVML_SYM(GetTotalEccErrors, "nvmlDeviceGetTotalEccErrors");
    NVML_SYM(GetRemappedRows, "nvmlDeviceGetRemappedRows");
    NVML_SYM(GetRetiredPagesPending, "nvmlDeviceGetRetiredPagesPendingStatus");
#undef NVML_SYM
    if (!init || init() != 0) return NULL;
    void *dev = NULL;
    if (bus && by_bus && by_bus(bus, &dev) == 0 && dev)
        n.dev = dev;
    else if (by_index && by_index(0, &dev) == 0 && dev)
        n.dev = dev;
    return n.dev ? &n : NULL;
}

json_t *kv_nvml_read(void *h)
{
    nvml *n = h;
    if (!n || !n->dev) return NULL;
    json_t *o = json_object();
    unsigned v = 0;
    unsigned long long e = 0;
    if (n->GetTemperature && n->GetTemperature(n->dev, 0, &v) == 0)
        json_object_set_new(o, "temperature_c", json_integer(v));
    if (n->GetClockInfo && n->GetClockInfo(n->dev, 1, &v) == 0)
        json_object_set_new(o, "sm_clock_mhz", json_integer(v));
    if (n->GetPowerUsage && n->GetPowerUsage(n->dev, &v) == 0)
        json_object_set_new(o, "power_w", json_real(v / 1000.0));
    if (n->GetTotalEnergyConsumption && n->GetTotalEnergyConsumption(n->dev, &e) == 0)
        json_object_set_new(o, "energy_j", json_real((double)e / 1000.0));
    return o;
}

int kv_nvml_energy(void *h, double *j)
{
    nvml *n = h;
    unsigned long long mj = 0;
    if (!n || !n->dev || !n->GetTotalEnergyConsumption ||
        n->GetTotalEnergyConsumption(n->dev, &mj) != 0)
        return -1;
    *j = (double)mj / 1000.0;
    return 0;
}

void kv_nvml_watch(void *h)
{
    nvml *n = h;
    if (!n || !n->dev) return;
    unsigned long long ecc = 0;
    if (n->GetTotalEccErrors &&
        n->GetTotalEccErrors(n->dev, NVML_MEMORY_ERROR_UNCORRECTED, NVML_VOLATILE_ECC, &ecc) == 0) {
        n->ecc0 = ecc;
        n->ecc_known = 1;
    }
    /* Not every device or user may listen (NOT_SUPPORTED, NO_PERMISSION):
     * then only the ECC count and the reset state speak. */
    void *set = NULL;
    if (!n->events && n->EventSetCreate && n->RegisterEvents && n->EventSetWait &&
        n->EventSetCreate(&set) == 0 &&
        n->RegisterEvents(n->dev, NVML_EVENT_XID | NVML_EVENT_DOUBLE_BIT_ECC, set) == 0)
        n->events = set;
}

json_t *kv_nvml_errors(void *h)
{
    nvml *n = h;
    if (!n || !n->dev) return NULL;
    json_t *out = json_array();
    nvml_event e;
    /* A bounded drain: a storm of events must not hold the judge. */
    for (int i = 0; n->events && i < 32; i++) {
        memset(&e, 0, sizeof e);
        if (n->EventSetWait(n->events, &e, 0) != 0) break;
        if (e.type & NVML_EVENT_XID)
            json_array_append_new(out, json_sprintf("Xid %llu", e.data));
        else if (e.type & NVML_EVENT_DOUBLE_BIT_ECC)
            json_array_append_new(out, json_string("a double-bit ECC error"));
    }
    unsigned long long ecc = 0;
    if (n->ecc_known &&
        n->GetTotalEccErrors(n->dev, NVML_MEMORY_ERROR_UNCORRECTED, NVML_VOLATILE_ECC, &ecc) == 0 &&
        ecc > n->ecc0) {
        json_array_append_new(out, json_sprintf("%llu uncorrected ECC errors", ecc - n->ecc0));
        n->ecc0 = ecc;
    }
    if (json_array_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

char *kv_nvml_needs_reset(void *h)
{
    nvml *n = h;
    if (!n || !n->dev) return NULL;
    unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
    if (n->GetRemappedRows &&
        n->GetRemappedRows(n->dev, &corrected, &uncorrected, &pending, &failed) == 0) {
        if (failed) return kv_strdup("NVML: a row remapping failed (the memory needs service)");
        if (pending) return kv_strdup("NVML: a row remapping is pending (the GPU needs a reset)");
    }
    int retire = 0;
    if (n->GetRetiredPagesPending && n->GetRetiredPagesPending(n->dev, &retire) == 0 && retire)
        return kv_strdup("NVML: pages are pending retirement (the GPU needs a reset)");
    return NULL;
}

const char *kv_nvml_driver_version(void)
{
    static char version[96];
    if (version[0]) return version;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return NULL;
    int (*init)(void) = NULL;
    int (*get)(char *, unsigned) = NULL;
    void *s;
    if ((s = dlsym(lib, "nvmlInit_v2"))) memcpy(&init, &s, sizeof s);
    if ((s = dlsym(lib, "nvmlSystemGetDriverVersion"))) memcpy(&get, &s, sizeof s);
    if (!init || !get || init() != 0 || get(version, sizeof version) != 0) version[0] = '\0';
    return version[0] ? version : NULL;
}
