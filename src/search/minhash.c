/* Bottom-k MinHash over token 3-grams: one hash function, keep the k smallest
 * distinct shingle hashes. The Jaccard estimate is the fraction of the k
 * smallest hashes of the union that both sketches hold (Broder 1997). Cost:
 * O(length) to build (most shingles are rejected by one comparison), O(k) to
 * compare. */
#include "search/minhash.h"

#include <string.h>

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static int is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c >= 0x80;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Adds H to the sorted bottom-k set S unless it is already there or too large. */
static void sketch_add(kv_minhash *s, uint64_t h)
{
    if (s->n == KV_MINHASH_K && h >= s->h[KV_MINHASH_K - 1]) return;
    unsigned lo = 0, hi = s->n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (s->h[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->n && s->h[lo] == h) return;
    unsigned keep = s->n < KV_MINHASH_K ? s->n : KV_MINHASH_K - 1;
    memmove(&s->h[lo + 1], &s->h[lo], (keep - lo) * sizeof s->h[0]);
    s->h[lo] = h;
    if (s->n < KV_MINHASH_K) s->n++;
}

void kv_minhash_compute(const char *source, kv_minhash *out)
{
    out->n = 0;
    const unsigned char *p = (const unsigned char *)(source ? source : "");
    uint64_t t[3] = {0, 0, 0};
    size_t ntok = 0;
    while (*p) {
        if (is_space(*p)) {
            p++;
            continue;
        }
        uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over the token */
        if (is_word(*p)) {
            while (*p && is_word(*p)) {
                h = (h ^ *p++) * 0x100000001b3ULL;
            }
        } else {
            h = (h ^ *p++) * 0x100000001b3ULL;
        }
        t[0] = t[1];
        t[1] = t[2];
        t[2] = h;
        ntok++;
        if (ntok >= 3) sketch_add(out, mix64(mix64(mix64(t[0]) ^ t[1]) ^ t[2]));
    }
    if (ntok > 0 && ntok < 3) {
        uint64_t h = 0;
        for (size_t i = 3 - ntok; i < 3; i++)
            h = mix64(h ^ t[i]);
        sketch_add(out, h);
    }
}

double kv_minhash_jaccard(const kv_minhash *a, const kv_minhash *b)
{
    if (a->n == 0 && b->n == 0) return 1.0;
    if (a->n == 0 || b->n == 0) return 0.0;
    unsigned i = 0, j = 0, taken = 0, both = 0;
    while (taken < KV_MINHASH_K && (i < a->n || j < b->n)) {
        if (j >= b->n || (i < a->n && a->h[i] < b->h[j])) {
            i++;
        } else if (i >= a->n || b->h[j] < a->h[i]) {
            j++;
        } else {
            both++;
            i++;
            j++;
        }
        taken++;
    }
    return (double)both / (double)taken;
}
