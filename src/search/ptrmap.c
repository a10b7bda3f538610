/* Open-addressing (linear probing) map from uint64 keys to pointers, with
 * backward-shift deletion so no tombstones pile up under churn. */
#include "search/ptrmap.h"
#include "util/buf.h"

#include <stdlib.h>

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* Index of KEY's slot, or of the empty slot where it would go. Needs cap > 0. */
static size_t find_slot(const kv_ptrmap *m, uint64_t key)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)mix64(key) & mask;
    while (m->slots[i].val && m->slots[i].key != key)
        i = (i + 1) & mask;
    return i;
}

void *kv_ptrmap_get(const kv_ptrmap *m, uint64_t key)
{
    if (m->cap == 0) return NULL;
    return m->slots[find_slot(m, key)].val;
}

/* Doubles the table (or creates it) and reinserts every entry. */
static void grow(kv_ptrmap *m)
{
    kv_ptrmap bigger = {kv_calloc(m->cap ? m->cap * 2 : 16, sizeof(kv_ptrmap_slot)),
                        m->cap ? m->cap * 2 : 16, 0};
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].val) kv_ptrmap_put(&bigger, m->slots[i].key, m->slots[i].val);
    free(m->slots);
    *m = bigger;
}

void kv_ptrmap_put(kv_ptrmap *m, uint64_t key, void *val)
{
    if ((m->n + 1) * 2 > m->cap) grow(m);
    size_t i = find_slot(m, key);
    if (!m->slots[i].val) m->n++;
    m->slots[i].key = key;
    m->slots[i].val = val;
}

void *kv_ptrmap_del(kv_ptrmap *m, uint64_t key)
{
    if (m->cap == 0) return NULL;
    size_t mask = m->cap - 1;
    size_t i = find_slot(m, key);
    void *old = m->slots[i].val;
    if (!old) return NULL;
    /* Backward-shift: move later members of the probe run into the hole
     * when their home slot does not lie cyclically in (hole, j]. */
    size_t hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->slots[j].val) break;
        size_t home = (size_t)mix64(m->slots[j].key) & mask;
        int home_in_range = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (home_in_range) continue;
        m->slots[hole] = m->slots[j];
        hole = j;
    }
    m->slots[hole].val = NULL;
    m->slots[hole].key = 0;
    m->n--;
    return old;
}

void kv_ptrmap_free(kv_ptrmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}
