/* The runner: the process that holds the candidate's code (`kevolve
 * __runner`, started by the judge through runner_client.h). It opens its
 * own device context, applies the sandbox, says hello, and then only maps
 * the arenas it is given, loads the candidate once and runs blocks of calls
 * on command, answering each step when it ends. It holds no reference, no
 * checker, no clock the judge believes, no lock and no channel whose
 * content is trusted. A crash is reported on the way down (a fault inside a
 * guard page as out of bounds, naming nothing the candidate could steer). */
#ifndef KV_RUNNER_RUNNER_H
#define KV_RUNNER_RUNNER_H

#include "runner/rdev.h"

#include <stddef.h>

/* The runner's half of the backend NAME for its device INDEX, or NULL
 * with *ERR (the table's: backend/backend.h's kv_backend_rdev). */
typedef kv_rdev *(*kv_rdev_open_fn)(const char *name, int index, char **err);

/* `kevolve __runner --backend B --lib SO [--device-src FILE] --scratch DIR`
 * with the socket to the judge at descriptor 3; OPEN_RDEV gives it the
 * backend's half. Returns the exit status. */
int kv_runner_main(int argc, char **argv, kv_rdev_open_fn open_rdev);

/* Registers [LO, LO+LEN) as guarding TENSOR; a fault inside it is
 * reported as out of bounds (READ_ONLY 0: a page after the tensor) or as a
 * write into an input (READ_ONLY 1: the input itself). */
void kv_runner_guard_add(const void *lo, size_t len, unsigned tensor, int read_only);

#endif
