/* Content hashing: a fast 64-bit hash of bytes (FNV-1a over 8-byte words,
 * then mixed), and a hash of source code that ignores
 * differences in whitespace (used to recognise duplicate programs). */
#ifndef KV_UTIL_HASH_H
#define KV_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t kv_hash64(const void *data, size_t len);
/* Hash of S with every run of whitespace treated as one space and leading
 * and trailing whitespace ignored: "a  b\n" and "a b" hash alike. */
uint64_t kv_hash_code(const char *s);
/* 16 lowercase hex digits into out[17]. */
void kv_hash_hex(uint64_t h, char out[17]);

#endif
