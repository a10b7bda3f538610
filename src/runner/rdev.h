/* The runner's half of a backend: what the runner drives, in its own
 * process, for the device it opens (src/backend implements it for each
 * backend: cpu/, opencl/, cuda/). The runner knows this interface and the
 * wire (rproto.h), nothing of a backend's judge half nor of the judge. */
#ifndef KV_RUNNER_RDEV_H
#define KV_RUNNER_RDEV_H

#include "runner/rproto.h"

typedef struct kv_rdev kv_rdev;

struct kv_rdev {
    const char *name;        /* the backend's */
    const char *visible_env; /* the backend's (kv_backend's), or NULL */
    void *state;
    int index; /* the device to open, set before open */
    /* Set before open: the judge narrowed visible_env to one device, and
     * open fails unless the process sees exactly that one. */
    int confined;
    /* Set by a confined open where the backend can tell: the nodes directly
     * in /dev of the host's other devices (NULL-terminated, maybe empty),
     * which the sandbox then shuts; NULL when it cannot tell. */
    char **shut;
    /* Opens the device; -1 with *ERR (KV_R_NO_DEVICE when there is none to
     * open). */
    int (*open)(kv_rdev *b, kv_fail *err);
    /* Maps the arena M describes (FD: its memfd on cpu and opencl). */
    int (*map)(kv_rdev *b, const kv_rmsg_map *m, int fd, kv_fail *err);
    void (*unmap)(kv_rdev *b, uint32_t arena);
    /* Loads the candidate: the shared object LIB (and, on opencl, the device
     * code DEVICE_SRC). *LOG: a build log (malloc'd) or NULL. */
    int (*load)(kv_rdev *b, const char *lib, const char *device_src, char **log, kv_fail *err);
    /* Runs the block R; on failure fills REPLY's code (and arg), detail and
     * call. */
    int (*run)(kv_rdev *b, const kv_rmsg_run *r, kv_rmsg_reply *reply);
};

#endif
