/* A program as lines marked fixed, marker or mutable: the view the built-in
 * mutators edit through (see lines.h). */
#include "mutate/lines.h"
#include "mutate/blocks.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int kv_lines_split(const char *src, kv_lines *out, char **err)
{
    memset(out, 0, sizeof *out);
    out->src = src;
    kv_blocks b;
    if (kv_blocks_find(src, &b, err) != 0) return -1;
    size_t cap = 0, bi = 0;
    for (size_t off = 0; src[off];) {
        const char *nl = strchr(src + off, '\n');
        size_t len = nl ? (size_t)(nl - (src + off)) : strlen(src + off);
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            out->line = kv_realloc(out->line, cap * sizeof *out->line);
        }
        kv_line *ln = &out->line[out->n++];
        ln->off = off;
        ln->len = len;
        ln->has_nl = nl != NULL;
        ln->marker = kv_marker_kind(src + off, len) != KV_MARKER_NONE;
        ln->block = -1;
        if (b.whole_file) {
            ln->block = 0;
        } else {
            while (bi < b.n && b.blocks[bi].end <= off)
                bi++;
            if (bi < b.n && off >= b.blocks[bi].start && off < b.blocks[bi].end)
                ln->block = (int)bi;
        }
        off += len + (nl != NULL);
    }
    out->whole_file = b.whole_file;
    out->nblocks = b.whole_file ? 1 : b.n;
    kv_blocks_free(&b);
    return 0;
}

void kv_lines_free(kv_lines *l)
{
    if (!l) return;
    free(l->line);
    l->line = NULL;
    l->n = 0;
}

int kv_lines_blank(const kv_lines *l, size_t i)
{
    const char *p = l->src + l->line[i].off;
    for (size_t k = 0; k < l->line[i].len; k++)
        if (!isspace((unsigned char)p[k])) return 0;
    return 1;
}

int kv_lines_equal(const kv_lines *l, size_t i, const kv_lines *m, size_t j)
{
    return l->line[i].len == m->line[j].len &&
           memcmp(l->src + l->line[i].off, m->src + m->line[j].off, l->line[i].len) == 0;
}

kv_span kv_lines_span(const kv_lines *l, size_t i)
{
    kv_span s = {l->src + l->line[i].off, l->line[i].len};
    return s;
}

int kv_lines_final_nl(const kv_lines *l)
{
    return l->n == 0 || l->line[l->n - 1].has_nl;
}

char *kv_spans_join(const kv_span *s, size_t n, int final_nl)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++)
        total += s[i].len + 1;
    char *out = kv_malloc(total), *p = out;
    for (size_t i = 0; i < n; i++) {
        memcpy(p, s[i].p, s[i].len);
        p += s[i].len;
        if (i + 1 < n || final_nl) *p++ = '\n';
    }
    *p = '\0';
    return out;
}
