/* Growable byte buffers and small string helpers. A kv_buf always keeps a
 * terminating NUL after its data, so buf.data can be used as a C string. */
#ifndef KV_UTIL_BUF_H
#define KV_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct kv_buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
} kv_buf;

#define KV_BUF_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Appends; each returns 0, or -1 when out of memory (the buffer is unchanged). */
int kv_buf_append(kv_buf *b, const void *data, size_t len);
int kv_buf_puts(kv_buf *b, const char *s);
int kv_buf_putc(kv_buf *b, char c);
int kv_buf_printf(kv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int kv_buf_vprintf(kv_buf *b, const char *fmt, va_list ap);
/* Empties the buffer, keeping its memory. */
void kv_buf_clear(kv_buf *b);
/* Returns the data ("" when empty) and hands its ownership to the caller; the buffer is reset. */
char *kv_buf_steal(kv_buf *b);
void kv_buf_free(kv_buf *b);

/* strdup that aborts on out-of-memory (NULL in, NULL out). */
char *kv_strdup(const char *s);
char *kv_strndup(const char *s, size_t n);
/* malloc'd printf; aborts on out-of-memory. */
char *kv_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Allocation wrappers that abort with a message when memory runs out. */
void *kv_malloc(size_t n);
void *kv_calloc(size_t n, size_t size);
void *kv_realloc(void *p, size_t n);

/* 1 when S starts (ends) with the given text. */
/* S (N bytes) as valid UTF-8 for JSON and terminals (malloc'd): every
 * well-formed sequence kept as it is, every other byte written as the four
 * characters \xNN (a Latin-1 byte, a stray continuation byte, an overlong
 * or surrogate sequence, a NUL). JSON libraries refuse invalid UTF-8
 * (jansson's json_string returns NULL): a compiler's message quoting a
 * Latin-1 source would be lost, not shown. */
char *kv_utf8_escaped(const char *s, size_t n);

int kv_starts_with(const char *s, const char *prefix);
int kv_ends_with(const char *s, const char *suffix);
/* Levenshtein distance between two strings, capped at MAX (returns MAX when larger). */
size_t kv_edit_distance(const char *a, const char *b, size_t max);

#endif
