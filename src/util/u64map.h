/* An open-addressing hash map from 64-bit keys to 64-bit values (key 0 is
 * reserved). Used for code-hash lookups that must stay O(1) at 100,000s of
 * programs. */
#ifndef KV_UTIL_U64MAP_H
#define KV_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct kv_u64map {
    uint64_t *keys;
    int64_t *values;
    size_t cap; /* power of two, or 0 */
    size_t len;
} kv_u64map;

#define KV_U64MAP_INIT                                                                             \
    {                                                                                              \
        NULL, NULL, 0, 0                                                                           \
    }

/* Sets KEY (non-zero) to VALUE, replacing any earlier value. */
void kv_u64map_put(kv_u64map *m, uint64_t key, int64_t value);
/* 1 and *value when present, else 0. VALUE may be NULL. */
int kv_u64map_get(const kv_u64map *m, uint64_t key, int64_t *value);
void kv_u64map_free(kv_u64map *m);

#endif
