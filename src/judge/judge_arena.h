/* Arenas: where a shape's tensors lie, their canaries, and their sharing
 * with the runner in use (judge_arena.c). */
#ifndef KV_JUDGE_JUDGE_ARENA_H
#define KV_JUDGE_JUDGE_ARENA_H

#include "judge/judge_trial.h"

/* A tensor's place in an arena: set S of tensor T starts at
 * OFF[T] + S * STRIDE[T]. Every byte outside the data is a canary. */
typedef struct layout {
    size_t bytes;
    size_t nsets;
    size_t off[KV_MAX_TENSORS], stride[KV_MAX_TENSORS], len[KV_MAX_TENSORS];
    size_t canary_off[KV_MAX_TENSORS][2], canary_len[KV_MAX_TENSORS][2]; /* before, after */
    kv_rguard guards[KV_RMAX_GUARDS];
    int nguards;
} layout;

/* A layout of NSETS sets of shape SYMS. ONE_SET_GUARDED: the correctness
 * layout (one set, every tensor with margins and, on cpu, a guard page
 * after it and inputs read-only in the runner); else the timing layout
 * (each tensor's sets packed back to back, margins around them). */
void kv_judge_layout(const judge_trial *j, const int64_t *syms, size_t nsets, int one_set_guarded,
                     layout *l);
/* The input sets a timed block of shape SYMS may use at most. */
size_t kv_judge_timing_sets(const judge_trial *j, const int64_t *syms);
/* An arena for L into *A, every byte a canary, mapped into the runner: a
 * part of the slab where the backend can (KV_CAP_ARENA_PARTS), else its
 * own. On failure *A holds nothing. */
KV_MUST_CHECK int kv_judge_arena_new(judge_trial *j, const layout *l, kv_arena *a);
/* Gives A back (nothing when it holds none): a part to the slab (every
 * byte a canary again), else unmapped from the runner and freed. A is
 * empty afterwards, whatever it returns. */
KV_MUST_CHECK int kv_judge_arena_free(judge_trial *j, kv_arena *a);
/* An arena of BYTES (zeroed) only the judge sees (WHAT names it in an
 * error), and its freeing (nothing when A holds none). */
KV_MUST_CHECK int kv_judge_own_new(judge_trial *j, size_t bytes, kv_arena *a, const char *what);
void kv_judge_own_free(judge_trial *j, kv_arena *a);
/* The slab once the runner it was mapped into has stopped: *STRAY gets the
 * bytes outside the parts in use that were not canaries (the runner wrote
 * beyond what it was given); a long-lived judge keeps it for the next
 * runner (every part free, every byte a canary again, a new id), another
 * frees it (*STRAY then 0). */
KV_MUST_CHECK int kv_judge_arena_drop_slab(judge_trial *j, size_t *stray);
/* Frees the arenas of the child still live (what a failure cut short). */
void kv_judge_free_live(judge_trial *j);
/* Fails (out_of_bounds_write) when a canary of A around a tensor of L
 * changed; D names the shape (NULL: none). */
KV_MUST_CHECK int kv_judge_check_canaries(judge_trial *j, const shape_data *d, kv_arena *a,
                                          const layout *l);
/* A block request for NCALLS calls of shape SYMS on sets FIRST.. of A. */
void kv_judge_block(const judge_trial *j, const kv_arena *a, const layout *l, const int64_t *syms,
                    uint32_t first, uint32_t ncalls, kv_rmsg_run *m);

#endif
