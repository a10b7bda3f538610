/* Lexical scans of candidate sources for the export (see export_text.h). */
#include "export/export_text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void kv_names_add(kv_names *s, const char *name, size_t len)
{
    if (!len || kv_names_has(s, name, len)) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 32;
        s->v = kv_realloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = kv_strndup(name, len);
}

int kv_names_has(const kv_names *s, const char *name, size_t len)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (strlen(s->v[i]) == len && memcmp(s->v[i], name, len) == 0) return 1;
    return 0;
}

void kv_names_free(kv_names *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ---- lexing ---------------------------------------------------------------- */

typedef enum { T_END, T_IDENT, T_NUMBER, T_STRING, T_CHAR, T_PUNCT, T_SKIP, T_PP } tok_kind;

typedef struct tok {
    tok_kind kind;
    const char *at;
    size_t len;
} tok;

static int ident_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* The end of a literal quoted by Q starting at P (after the quote). */
static const char *skip_quoted(const char *p, char q)
{
    while (*p && *p != q && *p != '\n') {
        if (*p == '\\' && p[1]) p++;
        p++;
    }
    return *p == q ? p + 1 : p;
}

/* The end of a preprocessor line starting at P (its continuations too). */
static const char *skip_pp(const char *p)
{
    while (*p && *p != '\n') {
        if (*p == '\\' && p[1] == '\n')
            p++;
        else if (p[0] == '/' && p[1] == '*') { /* a comment may span lines */
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 1 : p + strlen(p) - 1;
        }
        p++;
    }
    return p;
}

/* The next token at *P; AT_LINE_START: a '#' there starts a preprocessor
 * line. Whitespace and comments are T_SKIP. */
static tok next_tok(const char **pp, int at_line_start)
{
    const char *p = *pp;
    tok t = {T_END, p, 0};
    if (!*p) return t;
    if (isspace((unsigned char)*p)) {
        while (isspace((unsigned char)*p))
            p++;
        t.kind = T_SKIP;
    } else if (p[0] == '/' && p[1] == '/') {
        while (*p && *p != '\n')
            p++;
        t.kind = T_SKIP;
    } else if (p[0] == '/' && p[1] == '*') {
        const char *e = strstr(p + 2, "*/");
        p = e ? e + 2 : p + strlen(p);
        t.kind = T_SKIP;
    } else if (*p == '#' && at_line_start) {
        p = skip_pp(p);
        t.kind = T_PP;
    } else if (ident_start(*p)) {
        while (ident_char(*p))
            p++;
        t.kind = T_IDENT;
    } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        while (ident_char(*p) || *p == '.' || ((*p == '+' || *p == '-') && strchr("eEpP", p[-1])))
            p++;
        t.kind = T_NUMBER;
    } else if (*p == '"') {
        p = skip_quoted(p + 1, '"');
        t.kind = T_STRING;
    } else if (*p == '\'') {
        p = skip_quoted(p + 1, '\'');
        t.kind = T_CHAR;
    } else {
        p += p[0] == '-' && p[1] == '>' ? 2 : 1;
        t.kind = T_PUNCT;
    }
    t.len = (size_t)(p - t.at);
    *pp = p;
    return t;
}

/* 1 when the text before P on its line is blank (a '#' there starts a
 * directive). */
static int line_start(const char *text, const char *p)
{
    while (p > text && (p[-1] == ' ' || p[-1] == '\t'))
        p--;
    return p == text || p[-1] == '\n';
}

/* The directive of preprocessor line T ("include", "define", ...) into BUF. */
static const char *directive(const tok *t, char *buf, size_t cap)
{
    const char *p = t->at + 1;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = 0;
    while (ident_char(p[n]) && n + 1 < cap) {
        buf[n] = p[n];
        n++;
    }
    buf[n] = '\0';
    return buf;
}

/* ---- includes ------------------------------------------------------------------ */

char *kv_text_hoist_includes(const char *text, kv_buf *includes)
{
    kv_buf out = KV_BUF_INIT;
    int nest = 0;
    for (const char *p = text; *p;) {
        tok t = next_tok(&p, line_start(text, p));
        if (t.kind == T_PP) {
            char d[16];
            directive(&t, d, sizeof d);
            if (strncmp(d, "if", 2) == 0) nest++;
            if (strcmp(d, "endif") == 0 && nest > 0) nest--;
            if (strcmp(d, "include") == 0 && nest == 0) {
                char *line = kv_strndup(t.at, t.len);
                if (!includes->data || !strstr(includes->data, line))
                    kv_buf_printf(includes, "%s\n", line);
                free(line);
                continue;
            }
        }
        kv_buf_append(&out, t.at, t.len);
    }
    return kv_buf_steal(&out);
}

/* ---- names defined at file scope ------------------------------------------- */

/* Words that are never a program's own names. */
static int reserved(const char *w, size_t n)
{
    static const char *const words[] = {"auto",
                                        "break",
                                        "case",
                                        "char",
                                        "const",
                                        "continue",
                                        "default",
                                        "do",
                                        "double",
                                        "else",
                                        "enum",
                                        "extern",
                                        "float",
                                        "for",
                                        "goto",
                                        "if",
                                        "inline",
                                        "int",
                                        "long",
                                        "register",
                                        "restrict",
                                        "return",
                                        "short",
                                        "signed",
                                        "sizeof",
                                        "static",
                                        "struct",
                                        "switch",
                                        "typedef",
                                        "union",
                                        "unsigned",
                                        "void",
                                        "volatile",
                                        "while",
                                        "_Bool",
                                        "_Complex",
                                        "_Alignas",
                                        "_Alignof",
                                        "_Atomic",
                                        "_Generic",
                                        "_Noreturn",
                                        "_Static_assert",
                                        "_Thread_local",
                                        "bool",
                                        "true",
                                        "false",
                                        "template",
                                        "typename",
                                        "class",
                                        "namespace",
                                        "using",
                                        "constexpr",
                                        "operator",
                                        "new",
                                        "delete",
                                        "this",
                                        "static_assert",
                                        "alignas",
                                        "alignof",
                                        "decltype",
                                        "noexcept",
                                        "__global__",
                                        "__device__",
                                        "__host__",
                                        "__shared__",
                                        "__constant__",
                                        "__forceinline__",
                                        "__noinline__",
                                        "__restrict__",
                                        "__launch_bounds__",
                                        "__align__",
                                        "asm",
                                        "__asm__",
                                        "__attribute__",
                                        "__inline__",
                                        "__inline",
                                        "__restrict",
                                        "__extension__",
                                        "__typeof__",
                                        "typeof",
                                        "__declspec",
                                        "__kernel",
                                        "kernel",
                                        "__global",
                                        "global",
                                        "__local",
                                        "local",
                                        "__private",
                                        "private",
                                        "__read_only",
                                        "__write_only",
                                        "uint",
                                        "ushort",
                                        "uchar",
                                        "ulong",
                                        "half",
                                        "size_t",
                                        "int8_t",
                                        "int16_t",
                                        "int32_t",
                                        "int64_t",
                                        "uint8_t",
                                        "uint16_t",
                                        "uint32_t",
                                        "uint64_t",
                                        "kv_launch_args"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i]) == n && memcmp(words[i], w, n) == 0) return 1;
    return n > 10 && memcmp(w, "__builtin_", 10) == 0;
}

/* The name a #define line T defines, or NULL (length in *N). */
static const char *defined_name(const tok *t, size_t *n)
{
    char d[16];
    if (strcmp(directive(t, d, sizeof d), "define") != 0) return NULL;
    const char *p = strstr(t->at, "define") + 6;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *s = p;
    while (ident_char(*p))
        p++;
    *n = (size_t)(p - s);
    return *n ? s : NULL;
}

typedef struct scan {
    int depth, pdepth;
    const tok *prev;  /* the last significant token */
    const tok *prev2; /* the one before it */
    tok last_ident, typedef_name;
    int have_ident, have_typedef_name;
    int in_typedef, after_eq, tag_next, enum_pending, enum_depth, fn_body;
    kv_names *names, *functions;
} scan;

static int is_punct(const tok *t, char c)
{
    return t && t->kind == T_PUNCT && t->len == 1 && t->at[0] == c;
}

static void end_statement(scan *s)
{
    if (s->in_typedef && s->have_typedef_name)
        kv_names_add(s->names, s->typedef_name.at, s->typedef_name.len);
    s->in_typedef = s->after_eq = s->tag_next = s->enum_pending = 0;
    s->have_ident = s->have_typedef_name = 0;
}

/* One significant token T at file scope (or in an enum's body). */
static void scan_token(scan *s, const tok *t)
{
    if (s->enum_depth && s->depth == s->enum_depth && t->kind == T_IDENT &&
        (is_punct(s->prev, '{') || is_punct(s->prev, ','))) {
        kv_names_add(s->names, t->at, t->len); /* an enum constant */
        return;
    }
    if (s->depth > 0) {
        if (is_punct(t, '{')) s->depth++;
        if (is_punct(t, '}') && --s->depth == 0) {
            if (s->enum_depth) s->enum_depth = 0;
            if (s->fn_body) {
                s->fn_body = 0;
                end_statement(s);
            }
        }
        return;
    }
    if (t->kind == T_IDENT) {
        if (s->pdepth == 0 && s->tag_next && !reserved(t->at, t->len)) {
            kv_names_add(s->names, t->at, t->len); /* a struct, union or enum tag */
            s->tag_next = 0;
            return;
        }
        if (t->len == 7 && memcmp(t->at, "typedef", 7) == 0) s->in_typedef = 1;
        if ((t->len == 6 && !memcmp(t->at, "struct", 6)) ||
            (t->len == 5 && !memcmp(t->at, "union", 5)) ||
            (t->len == 4 && !memcmp(t->at, "enum", 4))) {
            s->tag_next = 1;
            s->enum_pending = t->len == 4;
        }
        if (reserved(t->at, t->len)) return;
        /* (*name): a function pointer declared at file scope. */
        if (s->pdepth == 1 && is_punct(s->prev, '*') && is_punct(s->prev2, '('))
            kv_names_add(s->names, t->at, t->len);
        if (s->pdepth == 0) {
            s->last_ident = *t;
            s->have_ident = 1;
            if (s->in_typedef) {
                s->typedef_name = *t;
                s->have_typedef_name = 1;
            }
        }
        return;
    }
    if (t->kind != T_PUNCT) return;
    char c = t->at[0];
    /* The token just before is a name of the program's own. */
    int named = s->have_ident && s->prev && s->prev->at == s->last_ident.at && s->pdepth == 0;
    if (c == '(') {
        if (named && !s->after_eq && !s->in_typedef) {
            kv_names_add(s->names, s->last_ident.at, s->last_ident.len); /* a function */
            if (s->functions) kv_names_add(s->functions, s->last_ident.at, s->last_ident.len);
        }
        s->pdepth++;
    } else if (c == ')') {
        if (s->pdepth > 0) s->pdepth--;
    } else if (s->pdepth > 0) {
        return;
    } else if (c == '=') {
        if (named && !s->in_typedef) kv_names_add(s->names, s->last_ident.at, s->last_ident.len);
        s->after_eq = 1;
    } else if (c == '[' || c == ',' || c == ';') {
        if (named && !s->after_eq && !s->in_typedef)
            kv_names_add(s->names, s->last_ident.at, s->last_ident.len); /* a variable */
        if (c == ',') s->after_eq = 0;
        if (c == ';') end_statement(s);
    } else if (c == '{') {
        s->depth = 1;
        if (s->enum_pending) s->enum_depth = 1;
        s->fn_body = is_punct(s->prev, ')') && !s->in_typedef;
        s->tag_next = 0;
    }
}

void kv_text_collect(const char *text, int macros_only, kv_names *names, kv_names *functions)
{
    scan s = {0};
    s.names = names;
    s.functions = functions;
    tok ring[3];
    int have = 0;
    for (const char *p = text; *p;) {
        tok t = next_tok(&p, line_start(text, p));
        if (t.kind == T_PP) {
            size_t n;
            const char *name = defined_name(&t, &n);
            if (name) kv_names_add(names, name, n);
            continue;
        }
        if (macros_only || t.kind == T_SKIP) continue;
        ring[have % 3] = t;
        s.prev = have >= 1 ? &ring[(have - 1) % 3] : NULL;
        s.prev2 = have >= 2 ? &ring[(have - 2) % 3] : NULL;
        scan_token(&s, &ring[have % 3]);
        have++;
    }
}

/* ---- renaming ------------------------------------------------------------------ */

/* Appends the identifiers of LINE (a preprocessor line) renamed: not its
 * directive's own word. */
static void rename_pp(kv_buf *out, const tok *line, const kv_names *names, const char *suffix)
{
    const char *p = line->at, *end = line->at + line->len;
    char d[16];
    directive(line, d, sizeof d);
    if (strcmp(d, "include") == 0) {
        kv_buf_append(out, line->at, line->len);
        return;
    }
    int seen_directive = 0;
    while (p < end) {
        if (ident_start(*p)) {
            const char *s = p;
            while (p < end && ident_char(*p))
                p++;
            kv_buf_append(out, s, (size_t)(p - s));
            if (seen_directive && kv_names_has(names, s, (size_t)(p - s))) kv_buf_puts(out, suffix);
            seen_directive = 1;
        } else if (*p == '"' || *p == '\'') {
            const char *s = p;
            p = skip_quoted(p + 1, *p);
            if (p > end) p = end;
            kv_buf_append(out, s, (size_t)(p - s));
        } else if (p[0] == '/' && (p[1] == '/' || p[1] == '*')) { /* a comment stays as it is */
            const char *s = p;
            const char *e = p[1] == '/' ? end : strstr(p + 2, "*/");
            p = !e || e + 2 > end ? end : p[1] == '/' ? end : e + 2;
            kv_buf_append(out, s, (size_t)(p - s));
        } else {
            kv_buf_putc(out, *p++);
        }
    }
}

char *kv_text_rename(const char *text, const kv_names *names, const char *suffix,
                     const kv_names *strings)
{
    kv_buf out = KV_BUF_INIT;
    tok prev = {T_END, NULL, 0};
    for (const char *p = text; *p;) {
        tok t = next_tok(&p, line_start(text, p));
        if (t.kind == T_PP) {
            rename_pp(&out, &t, names, suffix);
            continue;
        }
        kv_buf_append(&out, t.at, t.len);
        int member = prev.kind == T_PUNCT &&
                     ((prev.len == 1 && prev.at[0] == '.') || (prev.len == 2 && prev.at[0] == '-'));
        if (t.kind == T_IDENT && !member && kv_names_has(names, t.at, t.len))
            kv_buf_puts(&out, suffix);
        if (t.kind == T_STRING && t.len >= 2 && kv_names_has(strings, t.at + 1, t.len - 2)) {
            out.len--; /* the closing quote goes after the suffix */
            kv_buf_printf(&out, "%s\"", suffix);
        }
        if (t.kind != T_SKIP) prev = t;
    }
    return kv_buf_steal(&out);
}

/* ---- OpenCL's two halves --------------------------------------------------------- */

int kv_text_split_opencl(const char *text, char **prefix, char **device, char **host, char **err)
{
    *prefix = *device = *host = NULL;
    const char *open = NULL, *open_end = NULL, *els = NULL, *els_end = NULL, *close = NULL;
    int nest = 0;
    for (const char *p = text; *p && !close;) {
        tok t = next_tok(&p, line_start(text, p));
        if (t.kind != T_PP) continue;
        char d[16];
        directive(&t, d, sizeof d);
        int opens = strncmp(d, "if", 2) == 0;
        if (opens && nest == 0 && !open) {
            char *line = kv_strndup(t.at, t.len);
            if (strstr(line, "__OPENCL_VERSION__") && !strstr(line, "ifndef") &&
                !strchr(line, '!')) {
                open = t.at;
                open_end = p;
            }
            free(line);
        }
        if (opens) nest++;
        if (open && nest == 1 && strcmp(d, "else") == 0) {
            els = t.at;
            els_end = p;
        }
        if (strcmp(d, "endif") == 0 && nest > 0 && --nest == 0 && open) close = t.at;
    }
    if (!open || !els || !close) {
        *err = kv_strdup("an OpenCL candidate must hold its device code in `#ifdef "
                         "__OPENCL_VERSION__ ... #else` and its host code after, up to `#endif`");
        return -1;
    }
    *prefix = kv_strndup(text, (size_t)(open - text));
    *device = kv_strndup(open_end, (size_t)(els - open_end));
    *host = kv_strndup(els_end, (size_t)(close - els_end));
    return 0;
}

void kv_text_c_string(kv_buf *out, const char *text)
{
    kv_buf_puts(out, "\"");
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            kv_buf_puts(out, "\\n\"\n    \"");
        } else if (*p == '"' || *p == '\\') {
            kv_buf_putc(out, '\\');
            kv_buf_putc(out, *p);
        } else if (*p == '\t') {
            kv_buf_puts(out, "\\t");
        } else {
            kv_buf_putc(out, *p);
        }
    }
    kv_buf_puts(out, "\"");
}
