/* The `gi` mutator: genetic-improvement line edits inside EVOLVE-BLOCKs.
 * One edit per child, drawn at random among
 *   delete   remove a mutable line;
 *   copy     insert a copy of a mutable line at a mutable position (before a
 *            mutable line, or at the end of a block);
 *   swap     exchange two mutable lines;
 *   replace  overwrite a mutable line with a line from anywhere in the
 *            program (marker lines excepted).
 * Marker lines are never touched or copied. Edits that change nothing
 * (deleting or copying a blank line, swapping equal lines) are skipped and
 * another is drawn, a bounded number of times. Line numbers in summaries are
 * the parent's. */
#include "mutate/blocks.h"
#include "mutate/lines.h"
#include "mutate/mutator.h"

#include <stdlib.h>
#include <string.h>

#define GI_ATTEMPTS 32

enum { GI_DELETE, GI_COPY, GI_SWAP, GI_REPLACE, GI_OPS };

typedef struct gi_ctx {
    const kv_lines *l;
    size_t *mut; /* indices of mutable lines */
    size_t nmut;
    size_t *pos; /* insertion points: insert before this line index (n = at the end) */
    size_t npos;
    size_t *src; /* non-marker lines, sources for replace */
    size_t nsrc;
} gi_ctx;

/* 1 when an insertion before line index P of L lands inside a block: before
 * a mutable line, before an END marker (the end of its block), or at the end
 * of a file without markers. */
static int insertion_point(const kv_lines *l, size_t p)
{
    if (p == l->n) return l->whole_file;
    if (l->line[p].block >= 0) return 1;
    return kv_marker_kind(l->src + l->line[p].off, l->line[p].len) == KV_MARKER_END;
}

static void ctx_init(gi_ctx *c, const kv_lines *l)
{
    memset(c, 0, sizeof *c);
    c->l = l;
    c->mut = kv_malloc((l->n + 1) * sizeof *c->mut);
    c->pos = kv_malloc((l->n + 1) * sizeof *c->pos);
    c->src = kv_malloc((l->n + 1) * sizeof *c->src);
    for (size_t i = 0; i <= l->n; i++) {
        if (i < l->n && l->line[i].block >= 0) c->mut[c->nmut++] = i;
        if (i < l->n && !l->line[i].marker) c->src[c->nsrc++] = i;
        if (insertion_point(l, i)) c->pos[c->npos++] = i;
    }
}

static void ctx_free(gi_ctx *c)
{
    free(c->mut);
    free(c->pos);
    free(c->src);
}

/* Tries one random edit. Returns 1 with *SPANS (malloc'd, *N entries) and
 * *SUMMARY set, or 0 when the drawn edit would change nothing. */
static int try_edit(const gi_ctx *c, kv_rng *rng, kv_span **spans, size_t *n, char **summary)
{
    const kv_lines *l = c->l;
    int op = (int)kv_rng_below(rng, GI_OPS);
    size_t a = c->mut[kv_rng_below(rng, c->nmut)];
    size_t b = 0, cnt = 0;
    switch (op) {
    case GI_DELETE:
        if (kv_lines_blank(l, a)) return 0;
        break;
    case GI_COPY:
        b = c->pos[kv_rng_below(rng, c->npos)];
        if (kv_lines_blank(l, a)) return 0;
        break;
    case GI_SWAP:
        b = c->mut[kv_rng_below(rng, c->nmut)];
        if (a == b || kv_lines_equal(l, a, l, b)) return 0;
        break;
    default:
        b = c->src[kv_rng_below(rng, c->nsrc)];
        if (kv_lines_blank(l, b) || kv_lines_equal(l, a, l, b)) return 0;
        break;
    }
    kv_span *s = kv_malloc((l->n + 1) * sizeof *s);
    for (size_t i = 0; i <= l->n; i++) {
        if (op == GI_COPY && i == b) s[cnt++] = kv_lines_span(l, a);
        if (i == l->n) break;
        if (op == GI_DELETE && i == a) continue;
        size_t from = i;
        if (op == GI_SWAP && i == a) from = b;
        if (op == GI_SWAP && i == b) from = a;
        if (op == GI_REPLACE && i == a) from = b;
        s[cnt++] = kv_lines_span(l, from);
    }
    *spans = s;
    *n = cnt;
    int la = (int)a + 1, lb = (int)b + 1;
    switch (op) {
    case GI_DELETE:
        *summary = kv_asprintf("gi: delete line %d", la);
        break;
    case GI_COPY:
        *summary = b == l->n ? kv_asprintf("gi: copy line %d to the end", la)
                             : kv_asprintf("gi: copy line %d before line %d", la, lb);
        break;
    case GI_SWAP:
        *summary = kv_asprintf("gi: swap lines %d and %d", la < lb ? la : lb, la < lb ? lb : la);
        break;
    default:
        *summary = kv_asprintf("gi: replace line %d with line %d", la, lb);
        break;
    }
    return 1;
}

int kv_mutate_gi(const char *src, kv_rng *rng, kv_mutation *out, char **err)
{
    out->source = NULL;
    out->summary = NULL;
    *err = NULL;
    kv_lines l;
    if (kv_lines_split(src, &l, err) != 0) return -1;
    gi_ctx c;
    ctx_init(&c, &l);
    int rc = 1;
    for (int attempt = 0; c.nmut > 0 && attempt < GI_ATTEMPTS && rc == 1; attempt++) {
        kv_span *spans;
        size_t n;
        char *summary;
        if (!try_edit(&c, rng, &spans, &n, &summary)) continue;
        char *child = kv_spans_join(spans, n, kv_lines_final_nl(&l));
        free(spans);
        char *reason = NULL;
        int check = strcmp(child, src) == 0 ? 1 : kv_blocks_check_child(src, child, &reason);
        if (check == 0) {
            out->source = child;
            out->summary = summary;
            rc = 0;
        } else if (reason && strcmp(reason, "child is empty") != 0) {
            *err = kv_asprintf("gi: internal error: %s produced a child that breaks the "
                               "EVOLVE-BLOCK rule: %s",
                               summary, reason);
            rc = -1;
        }
        if (rc != 0) {
            free(child);
            free(summary);
        }
        free(reason);
    }
    ctx_free(&c);
    kv_lines_free(&l);
    return rc;
}
