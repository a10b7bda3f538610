/* Internal to src/mutate: a program split into lines, each marked as fixed,
 * as an EVOLVE-BLOCK marker, or as mutable (with the index of its block).
 * The built-in mutators edit programs line by line through this view; the
 * lines point into the source text, which must outlive the view. */
#ifndef KV_MUTATE_LINES_H
#define KV_MUTATE_LINES_H

#include "util/buf.h"

#include <stddef.h>

typedef struct kv_line {
    size_t off; /* byte offset of the line's first byte in the source */
    size_t len; /* length without the '\n' */
    int has_nl; /* 1 when a '\n' follows */
    int block;  /* index of the EVOLVE-BLOCK holding it, -1 when fixed */
    int marker; /* 1 when it holds an EVOLVE-BLOCK marker */
} kv_line;

typedef struct kv_lines {
    const char *src;
    kv_line *line; /* malloc'd; NULL when n == 0 */
    size_t n;
    size_t nblocks; /* 1 for a file without markers (the whole file is block 0) */
    int whole_file;
} kv_lines;

/* Marker kinds of one line of text (not NUL-terminated). */
enum { KV_MARKER_NONE = 0, KV_MARKER_START = 1, KV_MARKER_END = 2, KV_MARKER_BOTH = 3 };
int kv_marker_kind(const char *line, size_t len);

/* Splits SRC into lines and marks them. Returns 0, or -1 with a malloc'd
 * reason in *err when the markers are malformed. */
int kv_lines_split(const char *src, kv_lines *out, char **err);
void kv_lines_free(kv_lines *l);
/* 1 when line I is empty or whitespace only. */
int kv_lines_blank(const kv_lines *l, size_t i);
/* 1 when lines I and J have the same text. */
int kv_lines_equal(const kv_lines *l, size_t i, const kv_lines *m, size_t j);
/* 1-based line number of byte offset OFF of TEXT. */
int kv_line_number(const char *text, size_t off);
/* Joins lines (text, length pairs) with '\n', ending with one when FINAL_NL.
 * Returns the malloc'd text. */
typedef struct kv_span {
    const char *p;
    size_t len;
} kv_span;
char *kv_spans_join(const kv_span *s, size_t n, int final_nl);
/* The text of line I as a span. */
kv_span kv_lines_span(const kv_lines *l, size_t i);
/* 1 when the last line of L ends with '\n' (or L has no lines). */
int kv_lines_final_nl(const kv_lines *l);

#endif
