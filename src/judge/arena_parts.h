/* Parts of one allocation (the judge's slab, judge_arena.c): where each
 * part in use lies, in order of offset, and first-fit placement. */
#ifndef KV_JUDGE_ARENA_PARTS_H
#define KV_JUDGE_ARENA_PARTS_H

#include <stddef.h>

#define KV_PARTS_MAX 8 /* parts in use at once */

typedef struct kv_parts {
    size_t total; /* the allocation's bytes */
    int n;
    size_t off[KV_PARTS_MAX], len[KV_PARTS_MAX];
} kv_parts;

/* Places LEN bytes at the lowest offset where they fit between the parts
 * in use: 0 and *AT, or -1 when none fits (or KV_PARTS_MAX are in use). */
int kv_parts_take(kv_parts *p, size_t len, size_t *at);
/* Gives back the part at AT; nothing when no part starts there. */
void kv_parts_give(kv_parts *p, size_t at);
/* Gives back every part: the allocation is whole again. */
void kv_parts_reset(kv_parts *p);

#endif
