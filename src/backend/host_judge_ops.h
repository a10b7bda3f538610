/* The judge's in-place helpers (kv_jdev's gen, check, compare, ...) for a
 * backend whose arenas the judge holds mapped in its own memory (cpu): the
 * same definitions as the cuda helpers' (judge_ops.h), run on the host. */
#ifndef KV_BACKENDS_HOST_JUDGE_OPS_H
#define KV_BACKENDS_HOST_JUDGE_OPS_H

#include "backend/backend.h"

/* Sets B's in-place helpers to the host's. */
void kv_host_judge_ops(kv_jdev *b);

#endif
