/* The wire between the judge and the runner, the process that holds the
 * candidate's code. Messages travel over a SOCK_SEQPACKET socket pair (one
 * message per send, descriptors beside them with SCM_RIGHTS), as
 * fixed-layout structs.
 *
 * Trust runs one way. The judge believes nothing the runner says except
 * that a step has ended: "done" only stops the judge's clock and lets it
 * look at the outputs itself. A failure the runner reports (a launch error,
 * a crash, a build log) can only fail the candidate, never make it pass, so
 * it is taken as the candidate's own verdict against itself. Every field
 * read from the runner is bounded and NUL-terminated by the judge. */
#ifndef KV_RUNNER_RPROTO_H
#define KV_RUNNER_RPROTO_H

#include "runner/reason.h"

#include <kevolve/task.h>

#include <stdint.h>

#define KV_RPROTO_VERSION 2
#define KV_RMSG_MAX (256u * 1024u) /* the largest message, build logs included */
#define KV_RMAX_GUARDS 64          /* protected page ranges per arena message */

typedef enum kv_rmsg_type {
    /* judge -> runner */
    KV_RMSG_MAP = 1, /* share an arena (kv_rmsg_map; an fd or an IPC handle) */
    KV_RMSG_UNMAP,   /* forget an arena (kv_rmsg_unmap) */
    KV_RMSG_LOAD,    /* load the code named at spawn (header only) */
    KV_RMSG_RUN,     /* run a block of calls (kv_rmsg_run) */
    KV_RMSG_QUIT,    /* exit (header only) */
    /* runner -> judge */
    KV_RMSG_HELLO = 100, /* device open, sandbox applied (kv_rmsg_reply) */
    KV_RMSG_REPLY,       /* the end of a step (kv_rmsg_reply) */
} kv_rmsg_type;

typedef struct kv_rmsg_hdr {
    uint32_t type;
    uint32_t version;
    uint64_t seq; /* a reply carries the seq of the request it ends */
} kv_rmsg_hdr;

/* A page range the runner maps with fewer rights: PROT_NONE (guard pages
 * after each cpu tensor, so an overrun faults) or read-only (inputs). */
typedef struct kv_rguard {
    uint64_t offset, length;
    uint32_t prot;   /* 0: none, 1: read */
    uint32_t tensor; /* the tensor it guards, named in a crash report */
} kv_rguard;

typedef struct kv_rmsg_map {
    kv_rmsg_hdr h;
    uint32_t arena;      /* the judge's id */
    uint32_t num_guards; /* cpu only */
    uint64_t bytes;
    unsigned char ipc[64]; /* cuda: the CUipcMemHandle of the allocation */
    /* Nonzero: the arena is BYTES at OFFSET of arena PARENT, already mapped
     * (a part of the judge's slab; no handle, no descriptor). */
    uint32_t parent;
    uint32_t pad;
    uint64_t offset;
    kv_rguard guards[KV_RMAX_GUARDS];
} kv_rmsg_map;

typedef struct kv_rmsg_unmap {
    kv_rmsg_hdr h;
    uint32_t arena;
    uint32_t pad;
} kv_rmsg_unmap;

/* A block: NCALLS calls of one shape, call i on input set
 * (FIRST_SET + i) % NUM_SETS of arena ARENA, whose tensor t lies at
 * OFFSET[t] + set * STRIDE[t] and holds BYTES[t] bytes. The runner launches
 * them in order on its stream or queue and answers once its whole device
 * context is idle. */
#define KV_RUN_NO_LAUNCH 1u
/* opencl: only copy the block's outputs out of the device again (no copy
 * in, no launch), for the judge to see work that landed late. */
#define KV_RUN_DOWNLOAD_ONLY 2u
/* cuda: record the block's calls into a graph (stream capture), launching
 * nothing, and keep it; a reply coded KV_R_CAPTURE_UNSUPPORTED says the
 * candidate's calls cannot be captured (the judge then times launches). */
#define KV_RUN_CAPTURE 4u
/* cuda: launch the graph kept for this very block (arena, calls, sets) and
 * answer once the context is idle: the calls without the host's launch
 * cost, as a CUDA graph in an application replays them. */
#define KV_RUN_REPLAY 8u
/* cuda, with KV_RUN_NO_LAUNCH: one device operation of the runner's own (a
 * byte written at the first output's offset) before the answer, so the
 * device switches to the runner's context as for a block's calls while
 * nothing of the candidate's runs: the judge calibrates that switch. */
#define KV_RUN_TOUCH 16u

typedef struct kv_rmsg_run {
    kv_rmsg_hdr h;
    uint32_t arena;
    uint32_t num_tensors;
    uint32_t num_syms;
    uint32_t ncalls;
    uint32_t flags; /* KV_RUN_NO_LAUNCH: move the data as for the block, launch nothing
                       (the judge calibrates the block's fixed cost with it) */
    uint32_t first_set, num_sets;
    uint64_t offset[KV_MAX_TENSORS];
    uint64_t stride[KV_MAX_TENSORS];
    uint64_t bytes[KV_MAX_TENSORS];
    uint8_t is_output[KV_MAX_TENSORS];
    int64_t syms[KV_MAX_SYMS];
} kv_rmsg_run;

/* A reply: STATUS 0 when the step ended well; otherwise CODE names the
 * failure, a kv_reason (KV_R_LAUNCH_FAILED, KV_R_ILLEGAL_ADDRESS,
 * KV_R_LOAD_ERROR, KV_R_COMPILE_ERROR, ...; one outside the enum reads as
 * a harness error), ARG its variable part (KV_R_CRASH: the signal), CALL
 * the call of the block it happened in (for a fault in a guarded range,
 * KV_R_OUT_OF_BOUNDS or KV_R_INPUT_MODIFIED, the tensor it guards). DETAIL
 * does not repeat the code. LOG: a build log (opencl), may be empty. */
typedef struct kv_rmsg_reply {
    kv_rmsg_hdr h;
    int32_t status;
    uint32_t call;
    uint32_t code; /* a kv_reason */
    int32_t arg;
    char detail[512];
    char log[64 * 1024];
} kv_rmsg_reply;

#endif
