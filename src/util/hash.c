/* Content hashing with FNV-1a. */
#include "util/hash.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

uint64_t kv_hash64(const void *data, size_t len)
{
    /* Eight bytes a step (FNV-1a on words, then a final mix): checksums of
     * gigabyte tensors must not cost seconds. */
    const unsigned char *p = data;
    uint64_t h = FNV_OFFSET ^ (uint64_t)len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * FNV_PRIME;
        h ^= h >> 29;
    }
    for (; i < len; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

uint64_t kv_hash_code(const char *s)
{
    uint64_t h = FNV_OFFSET;
    int pending_space = 0, started = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isspace(*p)) {
            pending_space = started;
            continue;
        }
        if (pending_space) {
            h ^= ' ';
            h *= FNV_PRIME;
            pending_space = 0;
        }
        started = 1;
        h ^= *p;
        h *= FNV_PRIME;
    }
    return h;
}

void kv_hash_hex(uint64_t h, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}
