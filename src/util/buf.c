/* Growable byte buffers, checked allocation and small string helpers. */
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(void)
{
    fputs("kevolve: fatal: out of memory\n", stderr);
    abort();
}

void *kv_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory();
    return p;
}

void *kv_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) out_of_memory();
    return p;
}

void *kv_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory();
    return q;
}

static int reserve(kv_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

int kv_buf_append(kv_buf *b, const void *data, size_t len)
{
    if (reserve(b, len) != 0) return -1;
    if (len) memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int kv_buf_puts(kv_buf *b, const char *s)
{
    return kv_buf_append(b, s, strlen(s));
}

int kv_buf_putc(kv_buf *b, char c)
{
    return kv_buf_append(b, &c, 1);
}

int kv_buf_vprintf(kv_buf *b, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0 || reserve(b, (size_t)n) != 0) return -1;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int kv_buf_printf(kv_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = kv_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void kv_buf_clear(kv_buf *b)
{
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

char *kv_buf_steal(kv_buf *b)
{
    char *p = b->data ? b->data : kv_strdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

void kv_buf_free(kv_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *kv_strdup(const char *s)
{
    if (!s) return NULL;
    return kv_strndup(s, strlen(s));
}

char *kv_strndup(const char *s, size_t n)
{
    if (!s) return NULL;
    char *p = kv_malloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *kv_asprintf(const char *fmt, ...)
{
    kv_buf b = KV_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    if (kv_buf_vprintf(&b, fmt, ap) != 0) out_of_memory();
    va_end(ap);
    return kv_buf_steal(&b);
}

int kv_starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int kv_ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

size_t kv_edit_distance(const char *a, const char *b, size_t max)
{
    size_t la = strlen(a), lb = strlen(b);
    if ((la > lb ? la - lb : lb - la) >= max) return max;
    size_t *row = kv_malloc((lb + 1) * sizeof *row);
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0], best = i;
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = diag + (a[i - 1] != b[j - 1]);
            size_t v = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = cost < v ? cost : v;
            diag = up;
            if (row[j] < best) best = row[j];
        }
        if (best >= max) {
            free(row);
            return max;
        }
    }
    size_t d = row[lb];
    free(row);
    return d < max ? d : max;
}

/* The length of the well-formed UTF-8 sequence at P (N bytes left), or 0:
 * RFC 3629's table (no overlongs, no surrogates, nothing past U+10FFFF). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c >= 0x01 && c <= 0x7F) return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if (p[k] < 0x80 || p[k] > 0xBF) return 0;
    return len;
}

char *kv_utf8_escaped(const char *s, size_t n)
{
    kv_buf b = KV_BUF_INIT;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len(p + i, n - i);
        if (len) {
            kv_buf_append(&b, p + i, len);
            i += len;
        } else {
            kv_buf_printf(&b, "\\x%02X", p[i]);
            i++;
        }
    }
    return kv_buf_steal(&b);
}
