/* EVOLVE-BLOCK regions: the only parts of a program a mutator may change.
 * A block opens on a line containing EVOLVE-BLOCK-START and closes on a line
 * containing EVOLVE-BLOCK-END, whatever the comment syntax (//, #, --, / * * /).
 * The marker lines themselves are fixed. A program with no markers is
 * mutable as a whole. */
#ifndef KV_MUTATE_BLOCKS_H
#define KV_MUTATE_BLOCKS_H

#include <stddef.h>

typedef struct kv_block {
    size_t start; /* byte offset of the first byte after the START marker's line */
    size_t end;   /* byte offset of the first byte of the END marker's line */
} kv_block;

typedef struct kv_blocks {
    kv_block *blocks; /* malloc'd; NULL when n == 0 */
    size_t n;
    int whole_file; /* 1 when the source has no markers: everything is mutable */
} kv_blocks;

/* Finds the blocks of SRC. Returns 0, or -1 with a malloc'd reason in *err
 * (unbalanced or nested markers: "line 12: EVOLVE-BLOCK-END without START"). */
int kv_blocks_find(const char *src, kv_blocks *out, char **err);
void kv_blocks_free(kv_blocks *b);

/* Checks that CHILD differs from PARENT only inside PARENT's blocks: the text
 * outside (markers included) must be identical, block for block. Returns 0
 * when it does, 1 when it does not with a malloc'd reason in *reason ("text
 * outside EVOLVE-BLOCKs changed near line 3: ..."), -1 when PARENT itself is
 * malformed (reason set). */
int kv_blocks_check_child(const char *parent, const char *child, char **reason);

/* Line ranges (1-based, inclusive) of the mutable lines of SRC, as an array
 * of pairs: ranges[2*i], ranges[2*i+1]. Returns the count of ranges, or -1. */
int kv_blocks_line_ranges(const char *src, int **ranges);

#endif
