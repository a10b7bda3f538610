/* A small open-addressing hash map from 64-bit keys to non-NULL pointers,
 * used by the search module for per-island cell and code-hash lookups in
 * O(1). It never owns its values. Iteration order is never used for anything
 * that must be deterministic. */
#ifndef KV_SEARCH_PTRMAP_H
#define KV_SEARCH_PTRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct kv_ptrmap_slot {
    uint64_t key;
    void *val; /* NULL: empty slot */
} kv_ptrmap_slot;

typedef struct kv_ptrmap {
    kv_ptrmap_slot *slots;
    size_t cap; /* power of two, or 0 */
    size_t n;
} kv_ptrmap;

#define KV_PTRMAP_INIT                                                                             \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* The value stored under KEY, or NULL. */
void *kv_ptrmap_get(const kv_ptrmap *m, uint64_t key);
/* Stores VAL (not NULL) under KEY, replacing any value there. Aborts when out of memory. */
void kv_ptrmap_put(kv_ptrmap *m, uint64_t key, void *val);
/* Removes KEY; returns the value it held, or NULL when absent. */
void *kv_ptrmap_del(kv_ptrmap *m, uint64_t key);
void kv_ptrmap_free(kv_ptrmap *m);

#endif
