/* Content hashing with FNV-1a. */
#include "util/hash.h"

#include <ctype.h>
#include <stdio.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

uint64_t kv_hash64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
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
