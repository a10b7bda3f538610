/* The `crossover` mutator: a child made of two parents' EVOLVE-BLOCKs.
 * The parents must share their structure: the same blocks and the same text
 * outside them (otherwise there is nothing to cross: return 1). The child
 * keeps that fixed text and, when two or more blocks differ between the
 * parents, takes each differing block from one parent or the other, at least
 * one from each. When exactly one block differs (a file without markers is
 * one block), it does a one-point crossover inside that block: the first
 * lines of A up to a cut, then the lines of B after the matching cut. A child
 * equal to either parent is never returned. */
#include "mutate/blocks.h"
#include "mutate/lines.h"
#include "mutate/mutator.h"

#include <stdlib.h>
#include <string.h>

#define CROSSOVER_ATTEMPTS 16

/* The lines of each block of one parent: block b is lines first[b] ..
 * first[b] + count[b] - 1. */
typedef struct block_lines {
    size_t *first;
    size_t *count;
} block_lines;

/* Fills BL for L (blocks are contiguous runs of lines; an empty block's
 * first line is the index of its END marker). */
static void block_lines_init(block_lines *bl, const kv_lines *l)
{
    bl->first = kv_calloc(l->nblocks, sizeof *bl->first);
    bl->count = kv_calloc(l->nblocks, sizeof *bl->count);
    size_t b = 0;
    for (size_t i = 0; i < l->n; i++) {
        int blk = l->line[i].block;
        if (blk >= 0) {
            if (bl->count[blk]++ == 0) bl->first[blk] = i;
        } else if (!l->whole_file &&
                   kv_marker_kind(l->src + l->line[i].off, l->line[i].len) == KV_MARKER_END) {
            if (bl->count[b] == 0) bl->first[b] = i;
            b++;
        }
    }
}

static void block_lines_free(block_lines *bl)
{
    free(bl->first);
    free(bl->count);
}

/* 1 when block BLK has the same lines in both parents. */
static int same_block(const kv_lines *la, const block_lines *ba, const kv_lines *lb,
                      const block_lines *bb, size_t blk)
{
    if (ba->count[blk] != bb->count[blk]) return 0;
    for (size_t k = 0; k < ba->count[blk]; k++)
        if (!kv_lines_equal(la, ba->first[blk] + k, lb, bb->first[blk] + k)) return 0;
    return 1;
}

/* Builds the child: A's fixed lines, and for each block B's lines when
 * FROM_B[blk], else A's, except that block CUT_BLK (when >= 0) takes A's
 * first CUT_A lines and B's lines from CUT_B on. Returns malloc'd text. */
static char *assemble(const kv_lines *la, const block_lines *ba, const kv_lines *lb,
                      const block_lines *bb, const int *from_b, long cut_blk, size_t cut_a,
                      size_t cut_b)
{
    kv_span *s = kv_malloc((la->n + lb->n + 1) * sizeof *s);
    size_t n = 0, blk = 0;
    for (size_t i = 0; i <= la->n; i++) {
        int end_marker =
            i < la->n && !la->whole_file &&
            kv_marker_kind(la->src + la->line[i].off, la->line[i].len) == KV_MARKER_END;
        int at_block_end = end_marker || (i == la->n && la->whole_file);
        if (at_block_end) {
            if ((long)blk == cut_blk) {
                for (size_t k = 0; k < cut_a; k++)
                    s[n++] = kv_lines_span(la, ba->first[blk] + k);
                for (size_t k = cut_b; k < bb->count[blk]; k++)
                    s[n++] = kv_lines_span(lb, bb->first[blk] + k);
            } else {
                const kv_lines *src = from_b[blk] ? lb : la;
                const block_lines *bl = from_b[blk] ? bb : ba;
                for (size_t k = 0; k < bl->count[blk]; k++)
                    s[n++] = kv_lines_span(src, bl->first[blk] + k);
            }
            blk++;
        }
        if (i < la->n && la->line[i].block < 0) s[n++] = kv_lines_span(la, i);
    }
    char *text = kv_spans_join(s, n, kv_lines_final_nl(la));
    free(s);
    return text;
}

/* "line 5", "lines 5-9" or "no lines" for COUNT lines from 0-based FIRST. */
static char *line_span_text(size_t first, size_t count)
{
    if (count == 0) return kv_strdup("no lines");
    if (count == 1) return kv_asprintf("line %zu", first + 1);
    return kv_asprintf("lines %zu-%zu", first + 1, first + count);
}

/* "block 2 from NAME" or "blocks 1,3 from NAME" for the blocks with
 * FROM_B[blk] == WANT (malloc'd). */
static char *list_blocks(const int *from_b, size_t nblocks, int want, const char *name)
{
    size_t count = 0;
    for (size_t k = 0; k < nblocks; k++)
        count += from_b[k] == want;
    char *text = kv_strdup(count == 1 ? "block " : "blocks ");
    const char *sep = "";
    for (size_t k = 0; k < nblocks; k++) {
        if (from_b[k] != want) continue;
        char *t = kv_asprintf("%s%s%zu", text, sep, k + 1);
        free(text);
        text = t;
        sep = ",";
    }
    char *t = kv_asprintf("%s from %s", text, name);
    free(text);
    return t;
}

/* Block-level crossover over the differing blocks DIFF (ND >= 2). */
static int cross_blocks(const kv_lines *la, const block_lines *ba, const kv_lines *lb,
                        const block_lines *bb, const size_t *diff, size_t nd, kv_rng *rng,
                        const char *name_a, const char *name_b, kv_mutation *out)
{
    int *from_b = kv_calloc(la->nblocks, sizeof *from_b);
    size_t nb = 0;
    for (size_t k = 0; k < nd; k++) {
        from_b[diff[k]] = (int)kv_rng_below(rng, 2);
        nb += (size_t)from_b[diff[k]];
    }
    if (nb == 0 || nb == nd) {
        size_t flip = diff[kv_rng_below(rng, nd)];
        from_b[flip] = !from_b[flip];
    }
    out->source = assemble(la, ba, lb, bb, from_b, -1, 0, 0);
    char *ta = list_blocks(from_b, la->nblocks, 0, name_a);
    char *tb = list_blocks(from_b, la->nblocks, 1, name_b);
    out->summary = kv_asprintf("crossover: %s, %s", ta, tb);
    free(ta);
    free(tb);
    free(from_b);
    return 0;
}

/* One-point crossover inside block BLK. The cut is drawn between the
 * parents' first and last differing lines (after their common prefix and
 * before their common suffix): a cut elsewhere gives back a parent, and
 * parameters declared on neighbouring lines of a long block (tune axes at
 * the top of a kernel) would almost never be mixed. Returns 0 with OUT
 * filled, or 1 when no cut makes a new child (one differing line). */
static int cross_lines(const char *a, const char *b, const kv_lines *la, const block_lines *ba,
                       const kv_lines *lb, const block_lines *bb, size_t blk, kv_rng *rng,
                       const char *name_a, const char *name_b, kv_mutation *out)
{
    size_t na = ba->count[blk], nb = bb->count[blk];
    size_t pre = 0, suf = 0;
    while (pre < na && pre < nb &&
           kv_lines_equal(la, ba->first[blk] + pre, lb, bb->first[blk] + pre))
        pre++;
    while (suf < na - pre && suf < nb - pre &&
           kv_lines_equal(la, ba->first[blk] + na - 1 - suf, lb, bb->first[blk] + nb - 1 - suf))
        suf++;
    size_t mid_a = na - pre - suf, mid_b = nb - pre - suf; /* the differing middles */
    if (mid_a < 2 && mid_b < 2) return 1;
    int *from_b = kv_calloc(la->nblocks, sizeof *from_b);
    int rc = 1;
    for (int attempt = 0; attempt < CROSSOVER_ATTEMPTS && rc == 1; attempt++) {
        /* A middle of two or more lines: a cut strictly inside it, and B's
         * at the same fraction of its middle; a middle of one line or none:
         * a cut on either side of it, and strictly inside B's middle. */
        size_t ka, kb;
        if (mid_a >= 2) {
            ka = 1 + (size_t)kv_rng_below(rng, mid_a - 1);
            kb = (ka * mid_b + mid_a / 2) / mid_a;
        } else {
            ka = (size_t)kv_rng_below(rng, mid_a + 1);
            kb = 1 + (size_t)kv_rng_below(rng, mid_b - 1);
        }
        size_t ca = pre + ka, cb = pre + kb;
        char *child = assemble(la, ba, lb, bb, from_b, (long)blk, ca, cb);
        if (strcmp(child, a) == 0 || strcmp(child, b) == 0) {
            free(child);
            continue;
        }
        char *pa = line_span_text(ba->first[blk], ca);
        char *pb = line_span_text(bb->first[blk] + cb, nb - cb);
        out->source = child;
        out->summary = kv_asprintf("crossover: block %zu cut: %s from %s, then %s from %s", blk + 1,
                                   pa, name_a, pb, name_b);
        free(pa);
        free(pb);
        rc = 0;
    }
    free(from_b);
    return rc;
}

int kv_mutate_crossover_named(const char *a, const char *b, const char *name_a, const char *name_b,
                              kv_rng *rng, kv_mutation *out, char **err)
{
    out->source = NULL;
    out->summary = NULL;
    *err = NULL;
    if (!b) {
        *err = kv_strdup("crossover needs a second parent");
        return -1;
    }
    char *reason = NULL;
    int same = kv_blocks_check_child(a, b, &reason);
    if (same != 0) {
        /* -1: A is malformed. 1: the parents differ outside their blocks. */
        if (same < 0) *err = kv_asprintf("crossover: first parent: %s", reason);
        free(reason);
        return same;
    }
    kv_lines la, lb;
    if (kv_lines_split(a, &la, err) != 0) return -1;
    if (kv_lines_split(b, &lb, err) != 0) {
        kv_lines_free(&la);
        return -1;
    }
    block_lines ba, bb;
    block_lines_init(&ba, &la);
    block_lines_init(&bb, &lb);
    size_t *diff = kv_malloc((la.nblocks + 1) * sizeof *diff), nd = 0;
    for (size_t k = 0; k < la.nblocks; k++)
        if (!same_block(&la, &ba, &lb, &bb, k)) diff[nd++] = k;
    int rc = 1;
    if (nd >= 2)
        rc = cross_blocks(&la, &ba, &lb, &bb, diff, nd, rng, name_a, name_b, out);
    else if (nd == 1)
        rc = cross_lines(a, b, &la, &ba, &lb, &bb, diff[0], rng, name_a, name_b, out);
    if (rc == 0 && kv_blocks_check_child(a, out->source, &reason) != 0) {
        *err = kv_asprintf("crossover: internal error: the child breaks the EVOLVE-BLOCK rule: %s",
                           reason);
        kv_mutation_free(out);
        rc = -1;
    }
    free(reason);
    free(diff);
    block_lines_free(&ba);
    block_lines_free(&bb);
    kv_lines_free(&la);
    kv_lines_free(&lb);
    return rc;
}

int kv_mutate_crossover(const char *a, const char *b, kv_rng *rng, kv_mutation *out, char **err)
{
    return kv_mutate_crossover_named(a, b, "A", "B", rng, out, err);
}
