/* The backends (cpu, opencl, cuda) as one table, and the two halves each
 * one implements.
 *
 * A backend is a row of the table (kv_backend): its name, the suffixes of
 * its candidate files, its capabilities, its toolchain, how it counts its
 * devices and the constructors of its halves. The rest of the harness asks
 * what a backend can do (kv_backend_has), never which one it is: a new
 * backend is one folder under src/backend and one row in backend.c.
 *
 * The judge's half (kv_jdev) runs in the judge, which never loads candidate
 * code: it opens the device for its own use, makes arenas (the memory a
 * shape's tensors live in), moves bytes in and out of them, fills and
 * checks them, and hands each arena to the runner (a memfd on cpu and
 * opencl, a CUDA IPC handle on cuda). The runner's half (kv_rdev) runs in
 * the runner: it opens its own device context, maps the arenas it is
 * given, loads the candidate and launches blocks of calls on them.
 *
 * The halves' functions that can fail return 0 or -1 with *ERR set
 * (runner/reason.h): its code names the failure (KV_R_ILLEGAL_ADDRESS,
 * KV_R_OUT_OF_MEMORY, KV_R_LAUNCH_FAILED, KV_R_NO_DEVICE from an open that
 * finds no device, KV_R_HARNESS_ERROR for the harness's own mistakes) and
 * its detail says what happened, without the code. The constructors and
 * the device lists fail with a message only (*ERR a string): theirs is
 * always "not built" or "no device". */
#ifndef KV_BACKENDS_BACKEND_H
#define KV_BACKENDS_BACKEND_H

#include "runner/reason.h"
#include "util/clock.h"

#include <kevolve/task.h>

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kv_jdev kv_jdev;
struct kv_check;
typedef struct kv_rdev kv_rdev;

/* What a backend can do; the judge decides by these. */
enum {
    /* The judge writes a timed block's inputs on the device inside the timed
     * window (with its own helper kernels), so no input exists before the
     * clock starts: nothing to watch between blocks, and a device's memory,
     * not the host's caches, bounds the fastest plausible time. */
    KV_CAP_DEVICE_INPUTS = 1u << 0,
    /* The device runtime starts threads of its own in the runner: only
     * processes left running count against the candidate. */
    KV_CAP_RUNTIME_THREADS = 1u << 1,
    /* The runner stages data between the judge's shared memory and a device
     * of its own inside the timed window (the transfers are calibrated, and
     * outputs are read again through the runner); its runtime's threads
     * wind down for milliseconds after a block. */
    KV_CAP_STAGED = 1u << 2,
    /* A candidate carries device code the runner's driver builds when it is
     * loaded: kept beside the shared object, hashed after the preprocessor,
     * built into a cache folder of the program's own, and its first call
     * gets time for the driver's build. */
    KV_CAP_DEVICE_CODE = 1u << 3,
    /* Code is compiled for the device's architecture, which a probe of the
     * device names (cuda: "sm_90a"). */
    KV_CAP_ARCH = 1u << 4,
    /* Stage 3 runs the runner under compute-sanitizer memcheck. */
    KV_CAP_MEMCHECK = 1u << 5,
    /* A task's device reference (kv_task.reference_cuda) runs in the judge. */
    KV_CAP_DEVICE_REFERENCE = 1u << 6,
    /* The runner records a block's calls into a graph and replays it
     * (KV_RUN_CAPTURE, KV_RUN_REPLAY): timed blocks are the graph's. */
    KV_CAP_GRAPH = 1u << 7,
    /* The runner maps a part of an arena it already holds (kv_rmsg_map's
     * PARENT): the judge shares one allocation and hands out parts of it. */
    KV_CAP_ARENA_PARTS = 1u << 8,
    /* The runner replies only once its whole device context is idle, and
     * the judge's copies run at once on an idle device: a copy made right
     * after the reply is the outputs as the reply left them (reply_probe.h),
     * and the checks need no settle to see them. */
    KV_CAP_IDLE_REPLY = 1u << 9,
    /* The runner honours KV_RUN_TOUCH: a timed window holds the device's
     * switch from the judge's context (its input writes) to the runner's,
     * and the judge calibrates it (about 0.14 ms on an H200, against blocks
     * of 1-30 ms). */
    KV_CAP_SWITCH = 1u << 10,
    /* Its device is the one PyTorch's standard attention kernels (SDPA with
     * cuDNN and flash) run on: an export can be timed against them
     * (export --against-standard). */
    KV_CAP_TORCH_STANDARD = 1u << 11,
};

/* How a backend's sources are compiled (compile.c). */
typedef enum kv_toolchain {
    KV_TOOLCHAIN_CC = 0, /* the system C compiler, into a shared object */
    KV_TOOLCHAIN_NVCC    /* nvcc, CUDA C++ into a shared object for the device's architecture */
} kv_toolchain;

typedef struct kv_backend {
    const char *name;            /* "cpu", "opencl", "cuda" */
    const char *const *suffixes; /* of its candidate files, NULL-terminated; [0] its own */
    unsigned caps;               /* KV_CAP_* */
    kv_toolchain toolchain;
    const char *const *cflags; /* extra compiler flags (before the source), NULL-terminated */
    const char *const *libs;   /* libraries to link (after it), NULL-terminated */
    const char *helpers;       /* embedded source of the judge's own kernels, or NULL */
    /* CPU the runner's process may use between timed blocks: FLOOR_S plus
     * PER_GAP of the time since its last block; and while the judge shares
     * a block's inputs: BURST_FLOOR_S plus PER_BURST of that copy's time. */
    double idle_floor_s, idle_per_gap, burst_floor_s, per_burst;
    /* The longest a call may take below the roofline's floor, as a share of
     * it, before the time is called implausible. */
    double roofline_slack;
    /* Extra seconds for the first call of a new program (a driver's build). */
    double first_call_grace_s;
    /* Bytes of the large transfer the clock's calibration times. */
    size_t calib_bytes;
    /* The PyTorch device ("cpu", "cuda") whose tensors' data pointers an
     * exported library's entry point takes, or NULL (opencl's takes
     * cl_mem buffers): what `kevolve export --torch` can bind. */
    const char *torch_device;
    /* The environment variable through which a scheduler (Slurm's gres) or
     * the user narrows the devices this process sees, renumbered from 0
     * ("CUDA_VISIBLE_DEVICES"), or NULL: its value goes into the device
     * lock's name, so that two processes' "device 0" lock the same device
     * only when it is the same one. */
    const char *visible_env;
    /* The constructors of the two halves; NULL when this binary was built
     * without the backend (NOT_BUILT says why). */
    kv_jdev *(*jdev_new)(void);
    kv_rdev *(*rdev_new)(void);
    /* The devices this machine offers, as a JSON array of objects ({"index",
     * "name", ...}; new reference), or NULL with *ERR ("no CUDA device:
     * ..."). Run it in a worker child: a driver may crash. */
    json_t *(*devices)(char **err);
    const char *not_built;
} kv_backend;

/* The backend named NAME, or NULL. */
const kv_backend *kv_backend_find(const char *name);
/* The Ith backend of the table (NULL past the end). */
const kv_backend *kv_backend_at(size_t i);
/* The backend whose suffix PATH ends with; the first of the table (cpu)
 * when none does. */
const kv_backend *kv_backend_for_path(const char *path);
/* 1 when B has every capability of CAPS. */
int kv_backend_has(const kv_backend *b, unsigned caps);
/* The names of the table's backends, "cpu, opencl, cuda" (static). */
const char *kv_backend_names(void);
/* The embedded source, among NAMES (NULL-terminated; may be NULL), that is
 * B's: the first whose suffix is one of B's; NULL when none. */
const char *kv_backend_source_for(const kv_backend *b, const char *const *names);

/* An arena on the judge's side. */
typedef struct kv_arena {
    uint32_t id;
    size_t bytes;
    unsigned char *host;   /* cpu, opencl: the judge's mapping of the shared memory */
    uint64_t dptr;         /* cuda: the address in the judge's context */
    int fd;                /* cpu, opencl: the memfd handed to the runner; else -1 */
    unsigned char ipc[64]; /* cuda: the IPC handle handed to the runner */
    uint32_t parent;       /* a part: the id of the arena it lies in, else 0 */
    size_t parent_off;     /* a part: where it starts in that arena */
} kv_arena;

/* 0 when N bytes at OFF lie inside A; else -1 with *ERR (a harness error). */
int kv_arena_check(const kv_arena *a, size_t off, size_t n, kv_fail *err);

/* For the runner halves (kv_rdev, in the runner's process). */
struct kv_rmsg_reply;
/* The candidate's shared object LIB opened into *SO and its kv_launch
 * found into *FN: 0, or -1 with *ERR (load_error with dlerror's words, or
 * missing_entry with MISSING, the backend's words for it). */
int kv_rdev_load_entry(const char *lib, void **so, kv_launch_fn *fn, const char *missing,
                       kv_fail *err);
/* REPLY failed with CODE in call CALL, the formatted detail. Returns -1. */
int kv_reply_fail(struct kv_rmsg_reply *reply, uint32_t call, kv_reason code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

struct kv_jdev {
    const kv_backend *backend;
    void *state;
    int index; /* the device to open (the backend's own numbering), set before open */
    /* Device facts: the bandwidth used for roofline fractions and the
     * fastest any kernel could plausibly reach (the floor uses it), filled
     * by measure; the size of the last-level cache to outsize, by open. */
    double bandwidth_gbps;
    double ceiling_gbps;
    size_t cache_bytes;
    json_t *device; /* {"name":..., ...} */
    /* The value of the backend's visible_env that shows a process this
     * device alone (cuda: "GPU-<uuid>"), set by open; "" where the backend
     * cannot narrow a process to one device or need not (a MIG instance,
     * which CUDA enumerates alone). The runners start with it: the host's
     * other devices are not the candidate's to use, nor to disturb. */
    char confine[64];
    /* Layout of tensors in an arena: data aligned to ALIGN with at least
     * MARGIN canary bytes before and after; PAGE_GUARDS: the end of each
     * tensor's data (rounded up to ALIGN) meets a page boundary and the page
     * after it is a guard page in the runner. */
    size_t align, margin;
    int page_guards;
    /* cuda: the shared object of the judge's helper kernels, set before open. */
    const char *helpers;

    /* Opens the device without working on it (contexts, facts, helpers):
     * the judge does this before it holds the device. */
    int (*open)(kv_jdev *b, kv_fail *err);
    /* Measures the bandwidth (device work: done once the device is held;
     * another evaluation's kernels would slow it and be slowed by it). */
    int (*measure)(kv_jdev *b, kv_fail *err);
    void (*close)(kv_jdev *b);
    /* A new arena of BYTES, every byte CANARY. */
    int (*arena_new)(kv_jdev *b, size_t bytes, unsigned char canary, kv_arena *out, kv_fail *err);
    void (*arena_free)(kv_jdev *b, kv_arena *a);
    int (*write)(kv_jdev *b, kv_arena *a, size_t off, const void *src, size_t n, kv_fail *err);
    int (*read)(kv_jdev *b, kv_arena *a, size_t off, void *dst, size_t n, kv_fail *err);
    /* Writes COUNT copies of the ESIZE-byte PATTERN (1, 2, 4 or 8) at OFF. */
    int (*fill)(kv_jdev *b, kv_arena *a, size_t off, size_t count, const void *pattern,
                size_t esize, kv_fail *err);
    /* Waits for everything the judge queued. */
    int (*sync)(kv_jdev *b, kv_fail *err);
    /* Evicts the caches (writes a buffer larger than the cache); may be NULL. */
    int (*flush)(kv_jdev *b, kv_fail *err);
    /* The device's own clock over the judge's queued work: MARK(b, 0)
     * before it, MARK(b, 1) after; once synced, ELAPSED puts the seconds
     * between the two in *SECS. Both may be NULL. */
    int (*mark)(kv_jdev *b, int end, kv_fail *err);
    int (*elapsed)(kv_jdev *b, double *secs, kv_fail *err);
    /* Extra readings for the benchmark record (NVML), or NULL. */
    json_t *(*telemetry)(kv_jdev *b);
    /* The device's energy counter in joules (cuda: NVML's total energy since
     * the driver loaded, which moves in steps), 0; -1 where there is none.
     * May be NULL. */
    int (*energy)(kv_jdev *b, double *joules);
    /* The device errors the driver reported since open or the previous
     * call (cuda: NVML's Xid events and uncorrected ECC errors), a new
     * array of strings; NULL when none or when the backend cannot tell.
     * May be NULL. */
    json_t *(*device_errors)(kv_jdev *b);
    /* Why the device needs a reset or service before more work (malloc'd),
     * or NULL. May be NULL. */
    char *(*needs_reset)(kv_jdev *b);
    /* The address of OFF in A as the judge's own code sees it (host or
     * device pointer). */
    void *(*ptr)(kv_jdev *b, kv_arena *a, size_t off);
    /* Runs FN (a kv_launch of the task's own code, such as its device
     * reference) in the judge on A's tensors, to the end (cuda; else NULL). */
    int (*launch_local)(kv_jdev *b, kv_launch_fn fn, kv_launch_args *a, kv_fail *err);
    /* In-place helpers: the judge's own work on an arena where it lives
     * (cuda: its helper kernels; cpu: the shared memory; NULL on backends
     * that stage, whose correctness trials go through the host).
     * gen: COUNT elements of DT at OFF from distribution DIST (kv_dist), a
     * pure function of (SEED, FORCED, index) (judge_ops.h).
     * count_poison: elements equal to PATTERN in SETS runs of COUNT, STRIDE
     * bytes apart (a timed block's outputs in one pass); *FIRST the first,
     * as SET * COUNT + its index in the set.
     * count_changed: elements that differ from what gen wrote.
     * count_diff: elements whose bits differ between A at OFF and C at COFF.
     * copy: BYTES from A at OFF to C at COFF.
     * check: COUNT elements of DT at OFF against REF and SCALE (pointers as
     * ptr gives them; SCALE may be NULL), POISON the unwritten pattern (NULL:
     * none), into *OUT as kv_check_output.
     * compare: as kv_compare_runs (A at OFF against C at COFF).
     * count_spans: bytes other than BYTE in the N spans of A at OFF[k], LEN[k]
     * bytes each (N <= KVJ_MAX_SPANS), *FIRST the first span holding one;
     * may be NULL (the judge reads the spans). */
    int (*gen)(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, int dist, size_t count,
               uint64_t seed, uint64_t forced, kv_fail *err);
    int (*count_poison)(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, size_t count, size_t sets,
                        size_t stride, const void *pattern, size_t *n, size_t *first, kv_fail *err);
    int (*count_changed)(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, int dist, size_t count,
                         uint64_t seed, uint64_t forced, size_t *n, kv_fail *err);
    int (*count_diff)(kv_jdev *b, kv_arena *a, size_t off, kv_arena *c, size_t coff, size_t esize,
                      size_t count, size_t *n, size_t *first, kv_fail *err);
    int (*copy)(kv_jdev *b, kv_arena *a, size_t off, kv_arena *c, size_t coff, size_t bytes,
                kv_fail *err);
    int (*check)(kv_jdev *b, kv_arena *a, size_t off, kv_dtype dt, size_t count, const double *ref,
                 const double *scale, const void *poison, kv_tolerance tol, struct kv_check *out,
                 kv_fail *err);
    int (*compare)(kv_jdev *b, kv_arena *a, size_t off, kv_arena *c, size_t coff, kv_dtype dt,
                   size_t count, const double *ref, const double *scale, kv_tolerance tol,
                   size_t *differ, size_t *first, kv_fail *err);
    int (*count_spans)(kv_jdev *b, kv_arena *a, const size_t *off, const size_t *len, int n,
                       unsigned char byte, size_t *bad, size_t *first, kv_fail *err);
};

/* The judge's half of backend B for its device INDEX, ready for open, or
 * NULL with *ERR when it is not built into this binary. Free with
 * kv_jdev_free (closes it). */
kv_jdev *kv_jdev_new(const kv_backend *b, int index, char **err);
void kv_jdev_free(kv_jdev *b);

/* ---- the runner's half (runner/rdev.h) ---- */

/* The runner's half of backend B for its device INDEX, ready for open, or
 * NULL with *ERR when it is not built into this binary. */
kv_rdev *kv_rdev_new(const kv_backend *b, int index, char **err);
/* The same by the backend's NAME: what `kevolve __runner` opens
 * (kv_runner_main's OPEN). */
kv_rdev *kv_backend_rdev(const char *name, int index, char **err);

/* The rows' constructors and device lists (each backend's own file). */
kv_jdev *kv_jdev_cpu_new(void);
kv_rdev *kv_rdev_cpu_new(void);
json_t *kv_cpu_devices(char **err);
kv_jdev *kv_jdev_opencl_new(void);
kv_rdev *kv_rdev_opencl_new(void);
json_t *kv_opencl_devices(char **err);
kv_jdev *kv_jdev_cuda_new(void);
kv_rdev *kv_rdev_cuda_new(void);
json_t *kv_cuda_devices(char **err);

/* The harness's code for a CUDA runtime error a kv_launch returned (task.h
 * asks CUDA candidates to return cudaGetLastError()); KV_R_LAUNCH_FAILED
 * for one it does not name. */
kv_reason kv_cuda_runtime_error_code(int rc);

#endif
