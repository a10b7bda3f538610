/* Parsing of `kevolve: tune` annotations: where a program declares its
 * tunable parameters, their allowed values and when they mean something.
 *
 * Syntax (the README documents it for users):
 *
 *   A parameter is declared on its own line, inside mutable text (an
 *   EVOLVE-BLOCK, or anywhere in a file without blocks), by a comment that
 *   starts with `kevolve: tune` (any comment opener works: //, / *, #, --,
 *   ; or %). The value it tunes is the last literal on that line before the
 *   comment: an integer, a float, an identifier or a quoted string; `;`,
 *   `,` and closing brackets between the value and the comment are skipped
 *   (`f(x, 4);  // kevolve: tune 4 8` tunes the 4).
 *
 *     #define VEC 4  // kevolve: tune 1 2 4 8
 *     BLOCK = 64  # kevolve: tune 32 64 128 256
 *     const int TILE = 16; // kevolve: tune range 8 64 8
 *     #define SPLIT 1 / * kevolve: tune 1 2 4 8 16 * /
 *     MODE = "fast"  # kevolve: tune "fast" "exact"
 *
 *   Forms of the allowed values:
 *     kevolve: tune V1 V2 V3 ...          the listed values, in order
 *     kevolve: tune range LO HI [STEP]    integers LO, LO+STEP, ... <= HI (STEP 1)
 *     kevolve: tune pow2 LO HI            powers of two from LO to HI
 *
 *   Any form may end with a condition, `when COND`, so the parameter is
 *   drawn only where it means something:
 *     #define MMAD_KW 16  // kevolve: tune 16 32 when MMA_DECODE
 *     #define TILE_K 32   // kevolve: tune 16 32 64 when ONLINE == 1 && !SHARE_KV
 *   COND is clauses joined by `&&`, alternatives joined by `||` (`&&` binds
 *   tighter; no parentheses). A clause is NAME (its value is not 0, false,
 *   False, FALSE, None, nil or ""), !NAME, or NAME OP VALUE with OP one of
 *   == != < <= > >=; NAME is another tune parameter of the same program
 *   (its value in the parent), VALUE one of that parameter's values for ==
 *   and !=, a number for the ordering operators.
 *
 *   The parameter is named after the identifier before the value (left of
 *   `=`, or after #define), else "line N". A malformed annotation or
 *   condition is an error that names its line. */
#include "mutate/lines.h"
#include "mutate/tune_internal.h"
#include "util/buf.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHOICES 4096

static void param_free(tune_param *p)
{
    free(p->name);
    for (size_t k = 0; k < p->nchoice; k++)
        free(p->choice[k]);
    free(p->choice);
    free(p->when);
    for (size_t k = 0; k < p->nclause; k++) {
        free(p->clause[k].name);
        free(p->clause[k].value);
    }
    free(p->clause);
    memset(p, 0, sizeof *p);
}

void tune_set_free(tune_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        param_free(&s->p[i]);
    free(s->p);
    s->p = NULL;
    s->n = 0;
}

static int is_word(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Start of the comment opener that ends right before byte END of LINE
 * (whitespace skipped), or -1 when there is none. */
static long opener_before(const char *line, size_t end)
{
    while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t'))
        end--;
    static const char *const two[] = {"//", "/*", "--"};
    for (size_t i = 0; i < 3; i++) {
        if (end >= 2 && line[end - 2] == two[i][0] && line[end - 1] == two[i][1]) {
            size_t b = end - 2;
            if (two[i][0] == two[i][1])
                while (b > 0 && line[b - 1] == two[i][0])
                    b--;
            return (long)b;
        }
    }
    if (end >= 1 && strchr("#;%", line[end - 1])) {
        size_t b = end - 1;
        while (b > 0 && line[b - 1] == line[end - 1])
            b--;
        return (long)b;
    }
    return -1;
}

/* Finds `kevolve: tune` in a comment of LINE (LEN bytes). Returns the offset
 * just after "tune" and sets *OPENER to the comment's start, or -1. */
static long find_annotation(const char *line, size_t len, size_t *opener)
{
    static const char tag[] = "kevolve:";
    size_t tl = sizeof tag - 1;
    for (size_t i = 0; i + tl <= len; i++) {
        if (memcmp(line + i, tag, tl) != 0) continue;
        size_t k = i + tl;
        while (k < len && (line[k] == ' ' || line[k] == '\t'))
            k++;
        if (k + 4 > len || memcmp(line + k, "tune", 4) != 0) continue;
        if (k + 4 < len && !isspace((unsigned char)line[k + 4])) continue;
        long o = opener_before(line, i);
        if (o < 0) continue;
        *opener = (size_t)o;
        return (long)(k + 4);
    }
    return -1;
}

/* Splits the choice text [B, E) into tokens (whitespace or commas apart,
 * quoted strings kept whole), stopping at a bare `when`: *WHEN is then the
 * offset just after it, else 0. Returns the count; *TOK is malloc'd. */
static size_t tokenize(const char *s, size_t b, size_t e, char ***tok, size_t *when)
{
    size_t n = 0, cap = 0;
    *tok = NULL;
    *when = 0;
    while (b < e) {
        while (b < e && (isspace((unsigned char)s[b]) || s[b] == ','))
            b++;
        if (b >= e) break;
        size_t t = b;
        if (s[b] == '"' || s[b] == '\'') {
            char q = s[b++];
            while (b < e && s[b] != q)
                b++;
            if (b < e) b++;
        } else {
            while (b < e && !isspace((unsigned char)s[b]) && s[b] != ',')
                b++;
        }
        if (b - t == 4 && memcmp(s + t, "when", 4) == 0) {
            *when = b;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            *tok = kv_realloc(*tok, cap * sizeof **tok);
        }
        (*tok)[n++] = kv_strndup(s + t, b - t);
    }
    return n;
}

/* Parses a whole decimal integer; 0 or -1. */
static int parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

/* Expands "range LO HI [STEP]" or "pow2 LO HI" in TOK (N tokens) into P's
 * choices. Returns 0 or -1 with *err. */
static int expand_form(char **tok, size_t n, tune_param *p, char **err)
{
    int pow2 = strcmp(tok[0], "pow2") == 0;
    long lo, hi, step = 1;
    if (n < 3 || n > (pow2 ? 3u : 4u) || parse_long(tok[1], &lo) || parse_long(tok[2], &hi) ||
        (n == 4 && parse_long(tok[3], &step)) || lo > hi || step <= 0 || (pow2 && lo <= 0)) {
        *err = kv_asprintf("line %d: kevolve: tune %s: expected %s", p->line, tok[0],
                           pow2 ? "pow2 LO HI with 0 < LO <= HI"
                                : "range LO HI [STEP] with integers LO <= HI and STEP > 0");
        return -1;
    }
    size_t cap = 0;
    for (long v = pow2 ? 1 : lo; v <= hi; v = pow2 ? v * 2 : v + step) {
        if (v < lo) continue;
        if (p->nchoice == MAX_CHOICES) {
            *err = kv_asprintf("line %d: kevolve: tune %s: more than %d values", p->line, tok[0],
                               MAX_CHOICES);
            return -1;
        }
        if (p->nchoice == cap) {
            cap = cap ? cap * 2 : 16;
            p->choice = kv_realloc(p->choice, cap * sizeof *p->choice);
        }
        p->choice[p->nchoice++] = kv_asprintf("%ld", v);
        if ((pow2 && v > hi / 2) || (!pow2 && v > hi - step)) break;
    }
    return 0;
}

/* Locates the value in CODE[0, END): sets *VB and *VE; 0 or -1 when none. */
static int find_value(const char *code, size_t end, size_t *vb, size_t *ve)
{
    while (end > 0 && (isspace((unsigned char)code[end - 1]) || strchr(";,)]}", code[end - 1])))
        end--;
    if (end == 0) return -1;
    size_t b = end;
    char q = code[end - 1];
    if (q == '"' || q == '\'') {
        b = end - 1;
        while (b > 0 && code[b - 1] != q)
            b--;
        if (b == 0) return -1;
        b--;
    } else {
        for (;;) {
            while (b > 0 && (is_word(code[b - 1]) || code[b - 1] == '.'))
                b--;
            /* An exponent sign: 1e-3 */
            if (b >= 3 && (code[b - 1] == '-' || code[b - 1] == '+') &&
                (code[b - 2] == 'e' || code[b - 2] == 'E') &&
                (isdigit((unsigned char)code[b - 3]) || code[b - 3] == '.') && b < end) {
                b -= 2;
                continue;
            }
            break;
        }
        if (b == end) return -1;
        /* A unary sign: x = -1 */
        if (b > 0 && (code[b - 1] == '-' || code[b - 1] == '+') &&
            isdigit((unsigned char)code[b]) && (b == 1 || !is_word(code[b - 2])) &&
            (b == 1 || code[b - 2] != ')'))
            b--;
    }
    *vb = b;
    *ve = end;
    return 0;
}

/* The name of a value starting at VB in CODE: the identifier left of `=`, or
 * the one just before the value; NULL when there is none. */
static char *find_name(const char *code, size_t vb)
{
    size_t e = vb;
    while (e > 0 && isspace((unsigned char)code[e - 1]))
        e--;
    if (e > 0 && code[e - 1] == '=' && (e < 2 || !strchr("=!<>", code[e - 2]))) {
        e--;
        if (e > 0 && code[e - 1] == ':') e--;
        while (e > 0 && isspace((unsigned char)code[e - 1]))
            e--;
    }
    size_t b = e;
    while (b > 0 && (is_word(code[b - 1]) || code[b - 1] == '.'))
        b--;
    while (b < e && code[b] == '.')
        b++;
    if (b == e || isdigit((unsigned char)code[b])) return NULL;
    return kv_strndup(code + b, e - b);
}

/* Parses the annotation of one mutable line (number LINENO). Returns 1 with
 * *P filled, 0 when the line has none, -1 with *err when it is malformed. */
static int parse_line(const char *src, const kv_line *ln, int lineno, tune_param *p, char **err)
{
    const char *line = src + ln->off;
    size_t opener;
    long after = find_annotation(line, ln->len, &opener);
    if (after < 0) return 0;
    memset(p, 0, sizeof *p);
    p->line = lineno;
    size_t cend = ln->len;
    for (size_t i = (size_t)after; i + 1 < ln->len; i++) {
        if ((line[i] == '*' && line[i + 1] == '/') ||
            (i + 2 < ln->len && memcmp(line + i, "-->", 3) == 0)) {
            cend = i;
            break;
        }
    }
    char **tok;
    size_t when;
    size_t n = tokenize(line, (size_t)after, cend, &tok, &when);
    int rc = 1;
    if (n == 0) {
        *err = kv_asprintf("line %d: kevolve: tune: no values listed", lineno);
        rc = -1;
    } else if (strcmp(tok[0], "range") == 0 || strcmp(tok[0], "pow2") == 0) {
        if (expand_form(tok, n, p, err) != 0) rc = -1;
    } else {
        p->choice = tok;
        p->nchoice = n;
        tok = NULL;
    }
    if (tok) {
        for (size_t i = 0; i < n; i++)
            free(tok[i]);
        free(tok);
    }
    if (rc == 1 && when) {
        size_t b = when, e = cend;
        while (b < e && isspace((unsigned char)line[b]))
            b++;
        while (e > b && isspace((unsigned char)line[e - 1]))
            e--;
        if (b == e) {
            *err = kv_asprintf("line %d: kevolve: tune: `when` without a condition", lineno);
            rc = -1;
        } else {
            p->when = kv_strndup(line + b, e - b);
        }
    }
    size_t vb, ve;
    if (rc == 1 && find_value(line, opener, &vb, &ve) != 0) {
        *err = kv_asprintf("line %d: kevolve: tune: no value (a number, identifier or quoted "
                           "string) before the comment",
                           lineno);
        rc = -1;
    }
    if (rc != 1) {
        param_free(p);
        return -1;
    }
    p->off = ln->off + vb;
    p->len = ve - vb;
    p->name = find_name(line, vb);
    if (!p->name) p->name = kv_asprintf("line %d", lineno);
    return 1;
}

int tune_parse(const char *src, tune_set *out, char **err)
{
    out->p = NULL;
    out->n = 0;
    kv_lines l;
    if (kv_lines_split(src, &l, err) != 0) return -1;
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        if (l.line[i].block < 0 || l.line[i].marker) continue;
        tune_param p;
        int r = parse_line(src, &l.line[i], (int)i + 1, &p, err);
        if (r < 0) rc = -1;
        if (r != 1) continue;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 8;
            out->p = kv_realloc(out->p, cap * sizeof *out->p);
        }
        out->p[out->n++] = p;
    }
    kv_lines_free(&l);
    /* Conditions name other parameters, declared before or after them. */
    for (size_t i = 0; i < out->n && rc == 0; i++)
        if (out->p[i].when && tune_cond_parse(out, i, err) != 0) rc = -1;
    if (rc != 0) tune_set_free(out);
    return rc;
}

int tune_number(const char *text, size_t len, double *out)
{
    char *c = kv_strndup(text, len), *end;
    errno = 0;
    double v = strtod(c, &end);
    int ok = end != c && *end == '\0' && errno == 0 && isfinite(v);
    free(c);
    if (!ok) return -1;
    *out = v;
    return 0;
}

int tune_same_value(const char *a, size_t len, const char *b)
{
    if (strlen(b) == len && memcmp(a, b, len) == 0) return 1;
    double x, y;
    return tune_number(a, len, &x) == 0 && tune_number(b, strlen(b), &y) == 0 && x == y;
}

long tune_current_index(const char *src, const tune_param *p)
{
    for (size_t k = 0; k < p->nchoice; k++)
        if (tune_same_value(src + p->off, p->len, p->choice[k])) return (long)k;
    return -1;
}
