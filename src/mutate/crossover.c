/* The `crossover` mutator: a child made of two parents' EVOLVE-BLOCKs.
 * The parents must share their structure: the same blocks and the same text
 * outside them (otherwise there is nothing to cross: return 1). The child
 * keeps that fixed text and, when two or more blocks differ between the
 * parents, takes each differing block from one parent or the other, at least
 * one from each. When exactly one block differs (a file without markers is
 * one block), the parents' lines in it are aligned and the child takes each
 * part where they differ from one parent or the other (cross_lines). A
 * child equal to either parent is never returned. */
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
 * FROM_B[blk], else A's, except that block SPAN_BLK (when >= 0) is the
 * lines SPAN[0..NSPAN). Returns malloc'd text. */
static char *assemble(const kv_lines *la, const block_lines *ba, const kv_lines *lb,
                      const block_lines *bb, const int *from_b, long span_blk, const kv_span *span,
                      size_t nspan)
{
    kv_span *s = kv_malloc((la->n + lb->n + nspan + 1) * sizeof *s);
    size_t n = 0, blk = 0;
    for (size_t i = 0; i <= la->n; i++) {
        int end_marker =
            i < la->n && !la->whole_file &&
            kv_marker_kind(la->src + la->line[i].off, la->line[i].len) == KV_MARKER_END;
        int at_block_end = end_marker || (i == la->n && la->whole_file);
        if (at_block_end) {
            if ((long)blk == span_blk) {
                for (size_t k = 0; k < nspan; k++)
                    s[n++] = span[k];
            } else {
                const kv_lines *src = from_b && from_b[blk] ? lb : la;
                const block_lines *bl = from_b && from_b[blk] ? bb : ba;
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
    out->source = assemble(la, ba, lb, bb, from_b, -1, NULL, 0);
    char *ta = list_blocks(from_b, la->nblocks, 0, name_a);
    char *tb = list_blocks(from_b, la->nblocks, 1, name_b);
    out->summary = kv_asprintf("crossover: %s, %s", ta, tb);
    free(ta);
    free(tb);
    free(from_b);
    return 0;
}

/* A run of lines where the parents' block differs: A's lines A..A+NA-1
 * stand where B has B..B+NB-1 (offsets within the block). */
typedef struct hunk {
    size_t a, na, b, nb;
} hunk;

/* Cells of the alignment's table at most: two blocks of 2,000 lines. */
#define ALIGN_MAX_CELLS ((size_t)4 << 20)

/* Aligns block BLK of the parents by the longest common subsequence of
 * their lines and returns the hunks between the common lines (malloc'd
 * into *OUT), with the count of common lines in *COMMON. A middle too long
 * to align is one hunk. */
static size_t align_hunks(const kv_lines *la, const block_lines *ba, const kv_lines *lb,
                          const block_lines *bb, size_t blk, hunk **out, size_t *common)
{
    size_t na = ba->count[blk], nb = bb->count[blk], fa = ba->first[blk], fb = bb->first[blk];
    size_t pre = 0, suf = 0;
    while (pre < na && pre < nb && kv_lines_equal(la, fa + pre, lb, fb + pre))
        pre++;
    while (suf < na - pre && suf < nb - pre &&
           kv_lines_equal(la, fa + na - 1 - suf, lb, fb + nb - 1 - suf))
        suf++;
    size_t ma = na - pre - suf, mb = nb - pre - suf; /* the middles */
    hunk *h = kv_malloc((ma + mb + 1) * sizeof *h);
    size_t nh = 0;
    *common = pre + suf;
    if (ma == 0 && mb == 0) {
        *out = h;
        return 0;
    }
    if ((ma + 1) * (mb + 1) > ALIGN_MAX_CELLS || ma == 0 || mb == 0) {
        h[nh++] = (hunk){pre, ma, pre, mb};
        *out = h;
        return nh;
    }
    /* L[i][j]: the common subsequence of A's middle from i and B's from j. */
    size_t w = mb + 1;
    unsigned *L = kv_calloc((ma + 1) * w, sizeof *L);
    for (size_t i = ma; i-- > 0;)
        for (size_t j = mb; j-- > 0;)
            L[i * w + j] = kv_lines_equal(la, fa + pre + i, lb, fb + pre + j)
                               ? L[(i + 1) * w + j + 1] + 1
                               : (L[(i + 1) * w + j] > L[i * w + j + 1] ? L[(i + 1) * w + j]
                                                                        : L[i * w + j + 1]);
    *common += L[0];
    size_t i = 0, j = 0;
    int open = 0;
    while (i < ma || j < mb) {
        int match = i < ma && j < mb && kv_lines_equal(la, fa + pre + i, lb, fb + pre + j) &&
                    L[i * w + j] == L[(i + 1) * w + j + 1] + 1;
        if (match) {
            open = 0;
            i++;
            j++;
            continue;
        }
        if (!open) {
            h[nh++] = (hunk){pre + i, 0, pre + j, 0};
            open = 1;
        }
        if (j == mb || (i < ma && L[(i + 1) * w + j] >= L[i * w + j + 1])) {
            h[nh - 1].na++;
            i++;
        } else {
            h[nh - 1].nb++;
            j++;
        }
    }
    free(L);
    *out = h;
    return nh;
}

/* Block BLK with its hunks taken from A or B (FROM_B[k]), as a list of
 * spans into S (room for both blocks); returns the count. */
static size_t hunk_spans(const kv_lines *la, const block_lines *ba, const kv_lines *lb,
                         const block_lines *bb, size_t blk, const hunk *h, size_t nh,
                         const int *from_b, kv_span *s)
{
    size_t n = 0, at = 0, fa = ba->first[blk], fb = bb->first[blk];
    for (size_t k = 0; k <= nh; k++) {
        size_t upto = k < nh ? h[k].a : ba->count[blk];
        for (; at < upto; at++)
            s[n++] = kv_lines_span(la, fa + at);
        if (k == nh) break;
        if (from_b[k])
            for (size_t m = 0; m < h[k].nb; m++)
                s[n++] = kv_lines_span(lb, fb + h[k].b + m);
        else
            for (size_t m = 0; m < h[k].na; m++)
                s[n++] = kv_lines_span(la, fa + h[k].a + m);
        at = h[k].a + h[k].na;
    }
    return n;
}

/* Crossover inside block BLK, the only one that differs. The parents'
 * lines are aligned (their longest common subsequence), so that the child
 * takes whole differing parts from one parent or the other and every line
 * both share stays in its place: a cut at a mere fraction of each parent's
 * lines drops or repeats a line wherever one parent has lines the other
 * lacks, and such children of two variants of one kernel did not compile
 * (16 of 40 crossovers on an H200, bench/NOTES.md). With two differing
 * parts or more, each comes from either parent, at least one from each;
 * parents that share less than half their lines are not variants of one
 * program (nothing to cross: 1). With one part of the same length on both
 * sides (neighbouring parameters), it is cut between two of its lines.
 * Returns 0 with OUT filled, or 1 when no new child can be made. */
static int cross_lines(const char *a, const char *b, const kv_lines *la, const block_lines *ba,
                       const kv_lines *lb, const block_lines *bb, size_t blk, kv_rng *rng,
                       const char *name_a, const char *name_b, kv_mutation *out)
{
    hunk *h = NULL;
    size_t common = 0, nh = align_hunks(la, ba, lb, bb, blk, &h, &common);
    size_t longest = ba->count[blk] > bb->count[blk] ? ba->count[blk] : bb->count[blk];
    kv_span *s = kv_malloc((ba->count[blk] + bb->count[blk] + 1) * sizeof *s);
    int *from_b = kv_calloc(nh + 1, sizeof *from_b);
    int rc = 1;
    if (nh >= 2 && 2 * common >= longest) {
        for (int attempt = 0; attempt < CROSSOVER_ATTEMPTS && rc == 1; attempt++) {
            size_t nb = 0;
            for (size_t k = 0; k < nh; k++)
                nb += (size_t)(from_b[k] = (int)kv_rng_below(rng, 2));
            if (nb == 0 || nb == nh) {
                size_t flip = (size_t)kv_rng_below(rng, nh);
                from_b[flip] = !from_b[flip];
            }
            size_t ns = hunk_spans(la, ba, lb, bb, blk, h, nh, from_b, s);
            char *child = assemble(la, ba, lb, bb, NULL, (long)blk, s, ns);
            if (strcmp(child, a) == 0 || strcmp(child, b) == 0) {
                free(child);
                continue;
            }
            kv_buf ta = KV_BUF_INIT, tb = KV_BUF_INIT;
            for (size_t k = 0; k < nh; k++)
                kv_buf_printf(from_b[k] ? &tb : &ta, "%s%zu",
                              (from_b[k] ? tb.len : ta.len) ? "," : "", k + 1);
            out->source = child;
            out->summary = kv_asprintf("crossover: block %zu, %zu differing parts: %s from %s, %s "
                                       "from %s",
                                       blk + 1, nh, ta.data, name_a, tb.data, name_b);
            kv_buf_free(&ta);
            kv_buf_free(&tb);
            rc = 0;
        }
    } else if (nh == 1 && h[0].na == h[0].nb && h[0].na >= 2) {
        /* A's first K lines of the part, then B's from K on. */
        size_t k = 1 + (size_t)kv_rng_below(rng, h[0].na - 1), n = 0;
        size_t fa = ba->first[blk], fb = bb->first[blk];
        for (size_t m = 0; m < h[0].a + k; m++)
            s[n++] = kv_lines_span(la, fa + m);
        for (size_t m = h[0].b + k; m < bb->count[blk]; m++)
            s[n++] = kv_lines_span(lb, fb + m);
        char *child = assemble(la, ba, lb, bb, NULL, (long)blk, s, n);
        if (strcmp(child, a) != 0 && strcmp(child, b) != 0) {
            char *pa = line_span_text(fa, h[0].a + k);
            char *pb = line_span_text(fb + h[0].b + k, bb->count[blk] - h[0].b - k);
            out->source = child;
            out->summary = kv_asprintf("crossover: block %zu cut: %s from %s, then %s from %s",
                                       blk + 1, pa, name_a, pb, name_b);
            free(pa);
            free(pb);
            rc = 0;
        } else {
            free(child);
        }
    }
    free(from_b);
    free(s);
    free(h);
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
