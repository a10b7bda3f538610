/* EVOLVE-BLOCK regions: finding them and enforcing that a child changes
 * nothing else.
 *
 * A marker is any line that contains EVOLVE-BLOCK-START or EVOLVE-BLOCK-END,
 * whatever comment syntax surrounds it (//, #, --, / * * /, ;, % ...): the
 * token alone decides, so no language is left out. Blocks may not nest, and
 * every START needs its END. The marker lines are fixed, like all text
 * outside the blocks; a file without markers is mutable as a whole (a child
 * of it may not add markers either, nor be empty).
 *
 * The child check walks the parent's fixed segments in order: segment 0
 * (up to and including the first START line) must be a prefix of the child;
 * each later segment (an END line up to and including the next START line,
 * or the END line up to the end of the file) must sit at the child's next
 * marker line. The first byte that differs gives the child line named in
 * the reason. Trailing whitespace at the very end of the file is not
 * compared, so a lost final newline is not a rejection. */
#include "mutate/blocks.h"
#include "mutate/lines.h"
#include "util/buf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char START_TOKEN[] = "EVOLVE-BLOCK-START";
static const char END_TOKEN[] = "EVOLVE-BLOCK-END";

/* 1 when NEEDLE occurs in the LEN bytes at HAY. */
static int contains(const char *hay, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, n) == 0) return 1;
    return 0;
}

/* Marker kind (KV_MARKER_*) of the LEN bytes of one line. */
int kv_marker_kind(const char *line, size_t len)
{
    int kind = KV_MARKER_NONE;
    if (contains(line, len, START_TOKEN)) kind |= KV_MARKER_START;
    if (contains(line, len, END_TOKEN)) kind |= KV_MARKER_END;
    return kind;
}

/* Length of the line starting at S (without its '\n'). */
static size_t line_len(const char *s)
{
    const char *nl = strchr(s, '\n');
    return nl ? (size_t)(nl - s) : strlen(s);
}

int kv_line_number(const char *text, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off && text[i]; i++)
        if (text[i] == '\n') line++;
    return line;
}

int kv_blocks_find(const char *src, kv_blocks *out, char **err)
{
    out->blocks = NULL;
    out->n = 0;
    out->whole_file = 0;
    if (err) *err = NULL;
    size_t cap = 0;
    int open = 0, open_line = 0, lineno = 0;
    size_t open_start = 0;
    for (size_t off = 0; src[off];) {
        lineno++;
        size_t len = line_len(src + off);
        size_t next = off + len + (src[off + len] == '\n');
        int kind = kv_marker_kind(src + off, len);
        const char *msg = NULL;
        if (kind == KV_MARKER_BOTH)
            msg = "EVOLVE-BLOCK-START and EVOLVE-BLOCK-END on one line";
        else if (kind == KV_MARKER_START && open)
            msg = "EVOLVE-BLOCK-START inside an open block (blocks cannot nest)";
        else if (kind == KV_MARKER_END && !open)
            msg = "EVOLVE-BLOCK-END without START";
        if (msg) {
            if (err) *err = kv_asprintf("line %d: %s", lineno, msg);
            kv_blocks_free(out);
            return -1;
        }
        if (kind == KV_MARKER_START) {
            open = 1;
            open_line = lineno;
            open_start = next;
        } else if (kind == KV_MARKER_END) {
            if (out->n == cap) {
                cap = cap ? cap * 2 : 4;
                out->blocks = kv_realloc(out->blocks, cap * sizeof *out->blocks);
            }
            out->blocks[out->n].start = open_start;
            out->blocks[out->n].end = off;
            out->n++;
            open = 0;
        }
        off = next;
    }
    if (open) {
        if (err) *err = kv_asprintf("line %d: EVOLVE-BLOCK-START without END", open_line);
        kv_blocks_free(out);
        return -1;
    }
    out->whole_file = out->n == 0;
    return 0;
}

void kv_blocks_free(kv_blocks *b)
{
    if (!b) return;
    free(b->blocks);
    b->blocks = NULL;
    b->n = 0;
}

/* The line of TEXT holding byte OFF, trimmed and shortened, for a reason. */
static char *excerpt(const char *text, size_t off)
{
    size_t len = strlen(text);
    if (off >= len) return kv_strdup("(end of file)");
    size_t b = off;
    while (b > 0 && text[b - 1] != '\n')
        b--;
    size_t e = b + line_len(text + b);
    while (b < e && isspace((unsigned char)text[b]))
        b++;
    while (e > b && isspace((unsigned char)text[e - 1]))
        e--;
    if (e - b > 60) {
        size_t cut = 57; /* never split a UTF-8 sequence */
        while (cut > 0 && ((unsigned char)text[b + cut] & 0xC0) == 0x80)
            cut--;
        return kv_asprintf("\"%.*s...\"", (int)cut, text + b);
    }
    return kv_asprintf("\"%.*s\"", (int)(e - b), text + b);
}

/* Marker kind of the line of TEXT holding byte OFF (none past the end). */
static int marker_at(const char *text, size_t off)
{
    if (off >= strlen(text)) return KV_MARKER_NONE;
    size_t b = off;
    while (b > 0 && text[b - 1] != '\n')
        b--;
    return kv_marker_kind(text + b, line_len(text + b));
}

/* The malloc'd reason for a difference at parent byte POFF, child byte COFF. */
static char *diff_reason(const char *parent, size_t poff, const char *child, size_t coff)
{
    char *pe = excerpt(parent, poff), *ce = excerpt(child, coff);
    int pl = kv_line_number(parent, poff), cl = kv_line_number(child, coff);
    int pm = marker_at(parent, poff), cm = marker_at(child, coff);
    char *r;
    if (pm && cm)
        r = kv_asprintf("EVOLVE-BLOCK marker changed, added or removed at line %d: %s (parent "
                        "line %d: %s)",
                        cl, ce, pl, pe);
    else if (pm && !cm)
        r = kv_asprintf("EVOLVE-BLOCK marker removed or moved at line %d: %s (parent line %d: %s)",
                        cl, ce, pl, pe);
    else if (cm && !pm)
        r = kv_asprintf("EVOLVE-BLOCK marker added at line %d: %s (parent line %d: %s)", cl, ce, pl,
                        pe);
    else
        r = kv_asprintf("text outside EVOLVE-BLOCKs changed at line %d: %s (parent line %d: %s)",
                        cl, ce, pl, pe);
    free(pe);
    free(ce);
    return r;
}

/* Offset of the first line at or after OFF (a line start) in TEXT that holds
 * a marker, or (size_t)-1 when none does. */
static size_t next_marker(const char *text, size_t off)
{
    while (text[off]) {
        size_t len = line_len(text + off);
        if (kv_marker_kind(text + off, len)) return off;
        off += len + (text[off + len] == '\n');
    }
    return (size_t)-1;
}

/* Length of S[0, LEN) without trailing whitespace. */
static size_t rtrim_len(const char *s, size_t len)
{
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        len--;
    return len;
}

/* Compares parent segment [PB, PE) with the child from CB; when LAST, the
 * child's rest must match (trailing whitespace aside). Returns 0 or 1 with a
 * reason. */
static int compare_segment(const char *parent, size_t pb, size_t pe, const char *child, size_t cb,
                           int last, char **reason)
{
    size_t clen = strlen(child);
    size_t plen_seg = pe - pb, clen_seg = clen - cb;
    if (last) {
        plen_seg = rtrim_len(parent + pb, plen_seg);
        clen_seg = rtrim_len(child + cb, clen_seg);
    }
    size_t i = 0;
    while (i < plen_seg && i < clen_seg && parent[pb + i] == child[cb + i])
        i++;
    if (i == plen_seg && (!last || i == clen_seg)) return 0;
    *reason = diff_reason(parent, pb + i, child, cb + i);
    return 1;
}

int kv_blocks_check_child(const char *parent, const char *child, char **reason)
{
    *reason = NULL;
    kv_blocks pb;
    char *err = NULL;
    if (kv_blocks_find(parent, &pb, &err) != 0) {
        *reason = kv_asprintf("parent has malformed EVOLVE-BLOCK markers: %s", err);
        free(err);
        return -1;
    }
    if (rtrim_len(child, strlen(child)) == 0) {
        kv_blocks_free(&pb);
        *reason = kv_strdup("child is empty");
        return 1;
    }
    if (pb.whole_file) {
        size_t m = next_marker(child, 0);
        if (m != (size_t)-1) {
            char *ce = excerpt(child, m);
            *reason = kv_asprintf("EVOLVE-BLOCK marker added at line %d: %s (the parent has none)",
                                  kv_line_number(child, m), ce);
            free(ce);
            return 1;
        }
        kv_blocks_free(&pb);
        return 0;
    }
    int rc = 0;
    size_t cpos = 0;
    for (size_t i = 0; i <= pb.n && rc == 0; i++) {
        size_t seg_b = i == 0 ? 0 : pb.blocks[i - 1].end;
        size_t seg_e = i == pb.n ? strlen(parent) : pb.blocks[i].start;
        if (i > 0) {
            size_t m = next_marker(child, cpos);
            if (m == (size_t)-1) {
                char *pe = excerpt(parent, seg_b);
                *reason =
                    kv_asprintf("EVOLVE-BLOCK marker removed: parent line %d (%s) has no "
                                "counterpart after line %d of the child",
                                kv_line_number(parent, seg_b), pe, kv_line_number(child, cpos));
                free(pe);
                rc = 1;
                break;
            }
            cpos = m;
        }
        rc = compare_segment(parent, seg_b, seg_e, child, cpos, i == pb.n, reason);
        cpos += seg_e - seg_b;
    }
    kv_blocks_free(&pb);
    return rc;
}

int kv_blocks_line_ranges(const char *src, int **ranges)
{
    *ranges = NULL;
    kv_lines l;
    char *err = NULL;
    if (kv_lines_split(src, &l, &err) != 0) {
        free(err);
        return -1;
    }
    int count = 0;
    size_t cap = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (l.line[i].block < 0) continue;
        if (i > 0 && l.line[i - 1].block == l.line[i].block) {
            (*ranges)[2 * count - 1] = (int)i + 1;
            continue;
        }
        if ((size_t)count == cap) {
            cap = cap ? cap * 2 : 4;
            *ranges = kv_realloc(*ranges, 2 * cap * sizeof **ranges);
        }
        (*ranges)[2 * count] = (int)i + 1;
        (*ranges)[2 * count + 1] = (int)i + 1;
        count++;
    }
    kv_lines_free(&l);
    return count;
}
