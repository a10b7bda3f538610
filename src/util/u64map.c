/* Open-addressing hash map with linear probing; grows at 50% load. */
#include "util/u64map.h"
#include "util/buf.h"

#include <assert.h>
#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static void grow(kv_u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = kv_calloc(cap, sizeof *keys);
    int64_t *values = kv_calloc(cap, sizeof *values);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = slot_of(m->keys[i], cap);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
}

void kv_u64map_put(kv_u64map *m, uint64_t key, int64_t value)
{
    assert(key != 0);
    if ((m->len + 1) * 2 > m->cap) grow(m);
    size_t j = slot_of(key, m->cap);
    while (m->keys[j] && m->keys[j] != key)
        j = (j + 1) & (m->cap - 1);
    if (!m->keys[j]) {
        m->keys[j] = key;
        m->len++;
    }
    m->values[j] = value;
}

int kv_u64map_get(const kv_u64map *m, uint64_t key, int64_t *value)
{
    if (!m->cap || !key) return 0;
    size_t j = slot_of(key, m->cap);
    while (m->keys[j]) {
        if (m->keys[j] == key) {
            if (value) *value = m->values[j];
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

void kv_u64map_free(kv_u64map *m)
{
    free(m->keys);
    free(m->values);
    *m = (kv_u64map)KV_U64MAP_INIT;
}
