/* Applying a model's reply: SEARCH/REPLACE blocks or a fenced full rewrite,
 * then the checks a child must pass (see diff.h). Text is handled as lines:
 * a SEARCH text always covers whole lines of the program. */
#include "mutate/diff.h"
#include "mutate/blocks.h"
#include "util/buf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A view of one line: LEN bytes at P, without the '\n'. */
typedef struct span {
    const char *p;
    size_t len;
} span;

typedef struct span_list {
    span *v;
    size_t n, cap;
    int trailing_nl; /* 1 when the text ended with '\n' */
} span_list;

static void spans_push(span_list *l, const char *p, size_t len)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = kv_realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n].p = p;
    l->v[l->n].len = len;
    l->n++;
}

/* Splits TEXT into lines; a final '\n' sets trailing_nl instead of adding an
 * empty last line. */
static void split_lines(const char *text, span_list *out)
{
    memset(out, 0, sizeof *out);
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        if (!nl) {
            spans_push(out, p, strlen(p));
            return;
        }
        spans_push(out, p, (size_t)(nl - p));
        p = nl + 1;
    }
    out->trailing_nl = p > text;
}

/* Bounds of S without leading and trailing whitespace. */
static span trim(span s)
{
    while (s.len && isspace((unsigned char)s.p[0])) {
        s.p++;
        s.len--;
    }
    while (s.len && isspace((unsigned char)s.p[s.len - 1]))
        s.len--;
    return s;
}

static int span_eq(span a, span b)
{
    return a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

static int span_blank(span s)
{
    return trim(s).len == 0;
}

/* 1 when line S (trimmed) is at least 7 copies of C, optionally followed by
 * a space and WORD. */
static int is_marker(span s, char c, const char *word)
{
    s = trim(s);
    size_t i = 0;
    while (i < s.len && s.p[i] == c)
        i++;
    if (i < 7) return 0;
    if (!word) return i == s.len;
    while (i < s.len && s.p[i] == ' ')
        i++;
    size_t wl = strlen(word);
    return s.len - i == wl && strncmp(s.p + i, word, wl) == 0;
}

/* Joins LINES[a..b) with '\n' (no final newline), dropping trailing blank
 * lines. Malloc'd. */
static char *join_lines(const span *lines, size_t a, size_t b)
{
    while (b > a && span_blank(lines[b - 1]))
        b--;
    kv_buf out = KV_BUF_INIT;
    kv_buf_puts(&out, "");
    for (size_t i = a; i < b; i++) {
        if (i > a) kv_buf_putc(&out, '\n');
        kv_buf_append(&out, lines[i].p, lines[i].len);
    }
    return kv_buf_steal(&out);
}

void kv_diff_blocks_free(kv_diff_block *blocks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(blocks[i].search);
        free(blocks[i].replace);
    }
    free(blocks);
}

int kv_diff_parse(const char *reply, kv_diff_block **blocks, char **reason)
{
    *blocks = NULL;
    span_list l;
    split_lines(reply ? reply : "", &l);
    kv_diff_block *v = NULL;
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (!is_marker(l.v[i], '<', "SEARCH")) continue;
        size_t sep = i + 1;
        while (sep < l.n && !is_marker(l.v[sep], '=', NULL))
            sep++;
        size_t end = sep + 1;
        while (end < l.n && !is_marker(l.v[end], '>', "REPLACE"))
            end++;
        if (sep >= l.n || end >= l.n) {
            *reason = kv_asprintf("SEARCH block %zu has no %s line", n + 1,
                                  sep >= l.n ? "=======" : ">>>>>>> REPLACE");
            kv_diff_blocks_free(v, n);
            free(l.v);
            return -1;
        }
        v = kv_realloc(v, (n + 1) * sizeof *v);
        v[n].search = join_lines(l.v, i + 1, sep);
        v[n].replace = join_lines(l.v, sep + 1, end);
        n++;
        i = end;
    }
    free(l.v);
    *blocks = v;
    return (int)n;
}

/* Finds the places where NEEDLE's lines match SRC's lines (trimmed when
 * TOLERANT). Writes up to 3 start lines into AT and returns the count. */
static size_t find_matches(const span_list *src, const span *needle, size_t k, int tolerant,
                           size_t at[3])
{
    size_t count = 0;
    for (size_t i = 0; k > 0 && i + k <= src->n; i++) {
        size_t j = 0;
        for (; j < k; j++) {
            span a = src->v[i + j], b = needle[j];
            if (!(tolerant ? span_eq(trim(a), trim(b)) : span_eq(a, b))) break;
        }
        if (j == k) {
            if (count < 3) at[count] = i;
            count++;
        }
    }
    return count;
}

/* Rebuilds SRC with lines [at, at+k) replaced by the text REPLACE. */
static char *splice(const span_list *src, size_t at, size_t k, const char *replace)
{
    kv_buf out = KV_BUF_INIT;
    kv_buf_puts(&out, "");
    int first = 1;
    for (size_t i = 0; i < at; i++, first = 0) {
        if (!first) kv_buf_putc(&out, '\n');
        kv_buf_append(&out, src->v[i].p, src->v[i].len);
    }
    if (*replace) {
        if (!first) kv_buf_putc(&out, '\n');
        kv_buf_puts(&out, replace);
        first = 0;
    }
    for (size_t i = at + k; i < src->n; i++, first = 0) {
        if (!first) kv_buf_putc(&out, '\n');
        kv_buf_append(&out, src->v[i].p, src->v[i].len);
    }
    if (src->trailing_nl && out.len > 0) kv_buf_putc(&out, '\n');
    return kv_buf_steal(&out);
}

/* Applies one block to CUR. Returns a new text, or NULL with *reason. */
static char *apply_one(const char *cur, const kv_diff_block *b, size_t index, int *tolerant,
                       char **reason)
{
    span_list src, needle;
    split_lines(cur, &src);
    split_lines(b->search, &needle);
    size_t lo = 0, hi = needle.n;
    char *result = NULL;
    size_t at[3];
    size_t count = find_matches(&src, needle.v, needle.n, 0, at);
    *tolerant = 0;
    if (count == 0) {
        /* Whitespace-tolerant: blank lines at either end of SEARCH do not count. */
        while (lo < hi && span_blank(needle.v[lo]))
            lo++;
        while (hi > lo && span_blank(needle.v[hi - 1]))
            hi--;
        count = find_matches(&src, needle.v + lo, hi - lo, 1, at);
        *tolerant = 1;
    }
    if (hi == lo) {
        *reason = kv_asprintf("SEARCH block %zu is empty", index + 1);
    } else if (count == 0) {
        *reason = kv_asprintf("SEARCH block %zu not found: its lines do not appear in the "
                              "program (even ignoring indentation); copy them exactly",
                              index + 1);
    } else if (count > 1) {
        kv_buf msg = KV_BUF_INIT;
        kv_buf_printf(&msg, "SEARCH block %zu is ambiguous: it matches %zu places (lines",
                      index + 1, count);
        for (size_t i = 0; i < count && i < 3; i++)
            kv_buf_printf(&msg, "%s %zu", i ? "," : "", at[i] + 1);
        kv_buf_printf(&msg, "%s); include more lines to make it unique", count > 3 ? ", ..." : "");
        *reason = kv_buf_steal(&msg);
    } else {
        result = splice(&src, at[0], *tolerant ? hi - lo : needle.n, b->replace);
    }
    free(src.v);
    free(needle.v);
    return result;
}

int kv_diff_apply(const char *src, const kv_diff_block *blocks, size_t n, char **out,
                  int *tolerant_used, char **reason)
{
    char *cur = kv_strdup(src);
    int tolerant_count = 0;
    for (size_t i = 0; i < n; i++) {
        int tolerant = 0;
        char *next = apply_one(cur, &blocks[i], i, &tolerant, reason);
        free(cur);
        if (!next) return 1;
        cur = next;
        tolerant_count += tolerant;
    }
    if (tolerant_used) *tolerant_used = tolerant_count;
    *out = cur;
    return 0;
}

/* The canonical name of a fence's language tag (lowercase, alias folded)
 * into OUT[32]. */
static void canonical_language(const char *tag, size_t len, char out[32])
{
    size_t n = 0;
    for (size_t i = 0; i < len && n < 31; i++)
        out[n++] = (char)tolower((unsigned char)tag[i]);
    out[n] = '\0';
    static const char *const alias[][2] = {
        {"py", "python"}, {"python3", "python"}, {"c++", "cpp"},       {"cxx", "cpp"},
        {"cc", "cpp"},    {"hpp", "cpp"},        {"cu", "cuda"},       {"cl", "opencl"},
        {"h", "c"},       {"js", "javascript"},  {"ts", "typescript"}, {"rs", "rust"},
        {"sh", "bash"},   {"shell", "bash"},     {"golang", "go"},
    };
    for (size_t i = 0; i < sizeof alias / sizeof *alias; i++) {
        if (strcmp(out, alias[i][0]) == 0) {
            snprintf(out, 32, "%s", alias[i][1]);
            return;
        }
    }
}

char *kv_diff_extract_code(const char *reply, const char *language)
{
    span_list l;
    split_lines(reply ? reply : "", &l);
    char want[32] = "";
    if (language) canonical_language(language, strlen(language), want);
    const span *best_any = NULL, *best_lang = NULL;
    size_t best_any_n = 0, best_lang_n = 0, best_any_len = 0, best_lang_len = 0;
    for (size_t i = 0; i < l.n; i++) {
        span t = trim(l.v[i]);
        if (t.len < 3 || strncmp(t.p, "```", 3) != 0) continue;
        size_t ticks = 0;
        while (ticks < t.len && t.p[ticks] == '`')
            ticks++;
        span tag = trim((span){t.p + ticks, t.len - ticks});
        size_t tag_len = 0;
        while (tag_len < tag.len && !isspace((unsigned char)tag.p[tag_len]))
            tag_len++;
        size_t end = i + 1;
        for (; end < l.n; end++) {
            span e = trim(l.v[end]);
            size_t k = 0;
            while (k < e.len && e.p[k] == '`')
                k++;
            if (k >= ticks && k == e.len) break;
        }
        if (end >= l.n) break; /* an unclosed fence: a cut-off reply */
        size_t chars = 0;
        for (size_t j = i + 1; j < end; j++)
            chars += l.v[j].len + 1;
        char lang[32];
        canonical_language(tag.p, tag_len, lang);
        if (chars > best_any_len || !best_any) {
            best_any = &l.v[i + 1];
            best_any_n = end - i - 1;
            best_any_len = chars;
        }
        if (*want && strcmp(lang, want) == 0 && (chars > best_lang_len || !best_lang)) {
            best_lang = &l.v[i + 1];
            best_lang_n = end - i - 1;
            best_lang_len = chars;
        }
        i = end;
    }
    char *code = NULL;
    const span *b = best_lang ? best_lang : best_any;
    size_t bn = best_lang ? best_lang_n : best_any_n;
    if (b) {
        kv_buf out = KV_BUF_INIT;
        kv_buf_puts(&out, "");
        for (size_t j = 0; j < bn; j++) {
            kv_buf_append(&out, b[j].p, b[j].len);
            kv_buf_putc(&out, '\n');
        }
        code = kv_buf_steal(&out);
    }
    free(l.v);
    return code;
}

int kv_reply_to_child(const char *parent, const char *reply, const kv_reply_options *opt,
                      char **child, char **summary, char **reason)
{
    *child = NULL;
    *summary = NULL;
    *reason = NULL;
    char *out = NULL;
    if (opt->diff_mode) {
        kv_diff_block *blocks = NULL;
        int n = kv_diff_parse(reply, &blocks, reason);
        if (n < 0) return 1;
        if (n == 0) {
            *reason = kv_strdup("the reply has no SEARCH/REPLACE blocks (expected <<<<<<< SEARCH "
                                "... ======= ... >>>>>>> REPLACE)");
            return 1;
        }
        int tolerant = 0;
        int rc = kv_diff_apply(parent, blocks, (size_t)n, &out, &tolerant, reason);
        char *changes = rc == 0 && opt->summary_max_lines > 0
                            ? kv_diff_summary(blocks, (size_t)n, opt->summary_max_line_len,
                                              opt->summary_max_lines)
                            : NULL;
        kv_diff_blocks_free(blocks, (size_t)n);
        if (rc != 0) return 1;
        char tol[64] = "";
        if (tolerant) snprintf(tol, sizeof tol, " (%d matched ignoring whitespace)", tolerant);
        *summary = kv_asprintf("diff: %d SEARCH/REPLACE block%s%s%s%s", n, n == 1 ? "" : "s", tol,
                               changes ? "\n" : "", changes ? changes : "");
        free(changes);
    } else {
        out = kv_diff_extract_code(reply, opt->language);
        if (!out) {
            *reason = kv_strdup("the reply has no fenced code block (```lang ... ```) holding "
                                "the new program");
            return 1;
        }
        *summary = kv_strdup("full rewrite");
    }
    size_t len = strlen(out);
    int rc = 1;
    if (strcmp(out, parent) == 0) {
        *reason = kv_strdup("empty edit: the child is identical to its parent");
    } else if (opt->max_code_length > 0 && len > (size_t)opt->max_code_length) {
        *reason = kv_asprintf("the program is %zu characters, over max_code_length %d", len,
                              opt->max_code_length);
    } else {
        char *why = NULL;
        int b = kv_blocks_check_child(parent, out, &why);
        if (b == 0) {
            *child = out;
            out = NULL;
            rc = 0;
        } else {
            *reason = why ? why : kv_strdup("the child changes text outside the EVOLVE-BLOCKs");
            rc = b < 0 ? -1 : 1;
        }
    }
    free(out);
    if (rc != 0) {
        free(*summary);
        *summary = NULL;
    }
    return rc;
}
