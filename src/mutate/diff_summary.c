/* What a diff child changed, in words, for the "previous attempts" of later
 * prompts: OpenEvolve's summary format, with its two limits
 * (prompt.diff_summary_max_line_len, prompt.diff_summary_max_lines). */
#include "mutate/diff.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

/* S without leading and trailing whitespace, as a new string. */
static char *strip(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    return kv_strndup(s, n);
}

/* Appends the lines of TEXT (already stripped), each indented by two spaces,
 * cut to MAX_LEN characters ("..." ending the cut ones), at most MAX_LINES
 * of them and a count of the rest. */
static void block_lines(kv_buf *b, const char *text, int max_len, int max_lines)
{
    int shown = 0, total = 0;
    for (const char *p = text;;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
            len--;
        total++;
        if (shown < max_lines) {
            if (shown) kv_buf_putc(b, '\n');
            kv_buf_puts(b, "  ");
            if (len > (size_t)max_len) {
                kv_buf_append(b, p, (size_t)max_len - 3);
                kv_buf_puts(b, "...");
            } else {
                kv_buf_append(b, p, len);
            }
            shown++;
        }
        if (!nl) break;
        p = nl + 1;
    }
    if (total > max_lines) kv_buf_printf(b, "\n  ... (%d more lines)", total - max_lines);
}

char *kv_diff_summary(const kv_diff_block *blocks, size_t n, int max_line_len, int max_lines)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_puts(&b, "");
    if (max_line_len < 4) max_line_len = 4;
    if (max_lines < 1) max_lines = 1;
    for (size_t i = 0; i < n; i++) {
        char *s = strip(blocks[i].search), *r = strip(blocks[i].replace);
        if (i) kv_buf_putc(&b, '\n');
        if (!strchr(s, '\n') && !strchr(r, '\n')) {
            kv_buf_printf(&b, "Change %zu: '%s' to '%s'", i + 1, s, r);
        } else {
            kv_buf_printf(&b, "Change %zu: Replace:\n", i + 1);
            block_lines(&b, s, max_line_len, max_lines);
            kv_buf_puts(&b, "\nwith:\n");
            block_lines(&b, r, max_line_len, max_lines);
        }
        free(s);
        free(r);
    }
    return kv_buf_steal(&b);
}
