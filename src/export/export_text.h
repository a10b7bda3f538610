/* Source text made into a variant of one combined source (kevolve export):
 * several programs of a run, each a whole candidate file, must live in one
 * translation unit without their names meeting. C and OpenCL C have one
 * namespace, so each variant's file-scope names (macros, functions,
 * variables, types, tags, enum constants) get a suffix of its own; CUDA C++
 * wraps each variant in a namespace and renames its macros only. Includes
 * are lifted out to the top, once each. The scans are lexical (comments,
 * strings and character literals skipped, every branch of a conditional
 * read): a construct they miss makes a source that does not compile, which
 * the export's own check then refuses. */
#ifndef KV_EXPORT_EXPORT_TEXT_H
#define KV_EXPORT_EXPORT_TEXT_H

#include "util/buf.h"

#include <stddef.h>

/* A small set of names (linear: a program has tens of them). */
typedef struct kv_names {
    char **v;
    size_t n, cap;
} kv_names;

void kv_names_add(kv_names *s, const char *name, size_t len);
int kv_names_has(const kv_names *s, const char *name, size_t len);
void kv_names_free(kv_names *s);

/* TEXT without its #include lines outside any conditional; each one not
 * yet in INCLUDES (lines, in the order first seen) is appended there.
 * Malloc'd. */
char *kv_text_hoist_includes(const char *text, kv_buf *includes);

/* Adds to NAMES what TEXT defines at file scope: with MACROS_ONLY the
 * #define names alone, else also functions, variables, typedef names,
 * struct/union/enum tags and enum constants. FUNCTIONS (may be NULL) gets
 * the function names alone (an OpenCL host names its kernels in strings). */
void kv_text_collect(const char *text, int macros_only, kv_names *names, kv_names *functions);

/* TEXT with every identifier of NAMES (but a member after . or ->) renamed
 * NAME + SUFFIX, and every string literal whose whole content is one of
 * STRINGS (may be NULL) renamed the same way. Malloc'd. */
char *kv_text_rename(const char *text, const kv_names *names, const char *suffix,
                     const kv_names *strings);

/* Splits an OpenCL candidate at its top-level `#ifdef __OPENCL_VERSION__`
 * (or `#if defined(__OPENCL_VERSION__)`): *PREFIX the text before it (both
 * halves see it), *DEVICE the device code, *HOST the host code after
 * `#else`. Returns 0, or -1 with *ERR when the file has not that shape. */
int kv_text_split_opencl(const char *text, char **prefix, char **device, char **host, char **err);

/* TEXT as the contents of a C string literal (escaped, one line per line). */
void kv_text_c_string(kv_buf *out, const char *text);

#endif
