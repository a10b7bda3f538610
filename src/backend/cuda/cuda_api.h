/* The slice of the CUDA driver API and NVML the harness uses, declared here
 * and loaded at run time with dlopen (libcuda.so.1, libnvidia-ml.so.1), so
 * kevolve builds and runs on machines without CUDA. */
#ifndef KV_BACKENDS_CUDA_API_H
#define KV_BACKENDS_CUDA_API_H

#include "runner/reason.h"

#include <jansson.h>
#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;
typedef struct CUipcMemHandle {
    char reserved[64];
} CUipcMemHandle;

typedef struct kv_cu {
    void *lib;
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*MemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*IpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*IpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned);
    CUresult (*IpcCloseMemHandle)(CUdeviceptr);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, void **);
    CUresult (*GraphInstantiate)(void **, void *, unsigned long long);
    CUresult (*GraphLaunch)(void *, CUstream);
    CUresult (*GraphExecDestroy)(void *);
    CUresult (*GraphDestroy)(void *);
    CUresult (*DriverGetVersion)(int *);
    /* Optional (NULL when the driver lacks them): the device's UUID, and the
     * MIG-aware one (a MIG instance's own where v1 gives its GPU's). */
    CUresult (*DeviceGetUuid)(unsigned char *, CUdevice);
    CUresult (*DeviceGetUuid_v2)(unsigned char *, CUdevice);
} kv_cu;

/* Loads libcuda.so.1 into CU. Returns 0, or -1 with *ERR. */
int kv_cu_load(kv_cu *cu, char **err);
/* "CUDA_ERROR_ILLEGAL_ADDRESS" style name of RC. */
const char *kv_cu_error_name(const kv_cu *cu, CUresult rc);
/* The harness's code for RC: KV_R_ILLEGAL_ADDRESS, KV_R_MISALIGNED_ADDRESS,
 * KV_R_OUT_OF_RESOURCES, KV_R_OUT_OF_MEMORY, KV_R_ILLEGAL_INSTRUCTION,
 * KV_R_LAUNCH_TIMEOUT, KV_R_LAUNCH_FAILED, ..., else KV_R_CUDA_ERROR. */
kv_reason kv_cu_error_code(const kv_cu *cu, CUresult rc);

/* NVML, when present: opens the device with PCI bus id BUS (NULL: index 0).
 * Returns an opaque handle or NULL. */
void *kv_nvml_open(const char *bus);
/* {"temperature_c","sm_clock_mhz","power_w","energy_j"} now, or NULL. */
json_t *kv_nvml_read(void *h);
/* H's device's energy counter in joules into *J: 0, or -1 (none). */
int kv_nvml_energy(void *h, double *j);
/* Starts watching H's device for errors: registers for NVML's Xid and
 * double-bit ECC events where the driver lets this process, and notes the
 * uncorrected ECC count. */
void kv_nvml_watch(void *h);
/* The device errors since kv_nvml_watch (or the previous call), as a new
 * array of strings ("Xid 79", "2 uncorrected ECC errors"), or NULL. */
json_t *kv_nvml_errors(void *h);
/* Why H's device needs a reset or service before more work (a pending or
 * failed row remapping, pages pending retirement), malloc'd; NULL when
 * NVML sees none or cannot tell. */
char *kv_nvml_needs_reset(void *h);
/* The display driver's version as NVML reports it ("580.95.05"), or NULL
 * (no NVML). Static. */
const char *kv_nvml_driver_version(void);

#endif
