/* Seeded pseudo-random numbers: xoshiro256** seeded through splitmix64. */
#include "util/rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void kv_rng_seed(kv_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
    r->spare = 0;
    r->has_spare = 0; /* a seeded generator never hands out an earlier draw */
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t kv_rng_next(kv_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t kv_rng_below(kv_rng *r, uint64_t n)
{
    /* Rejection sampling keeps the draw unbiased. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = kv_rng_next(r);
    while (x >= limit);
    return x % n;
}

double kv_rng_uniform(kv_rng *r)
{
    return (double)(kv_rng_next(r) >> 11) * 0x1.0p-53;
}

double kv_rng_normal(kv_rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u, v, q;
    do {
        u = 2.0 * kv_rng_uniform(r) - 1.0;
        v = 2.0 * kv_rng_uniform(r) - 1.0;
        q = u * u + v * v;
    } while (q >= 1.0 || q == 0.0);
    double f = sqrt(-2.0 * log(q) / q);
    r->spare = v * f;
    r->has_spare = 1;
    return u * f;
}

size_t kv_rng_weighted(kv_rng *r, const double *weights, size_t n)
{
    double total = 0;
    for (size_t i = 0; i < n; i++)
        if (weights[i] > 0) total += weights[i];
    if (total <= 0) return (size_t)kv_rng_below(r, n);
    double x = kv_rng_uniform(r) * total;
    for (size_t i = 0; i < n; i++) {
        if (weights[i] <= 0) continue;
        if (x < weights[i]) return i;
        x -= weights[i];
    }
    for (size_t i = n; i-- > 0;)
        if (weights[i] > 0) return i;
    return 0;
}

void kv_rng_format(const kv_rng *r, char out[65])
{
    for (int i = 0; i < 4; i++)
        snprintf(out + 16 * i, 17, "%016llx", (unsigned long long)r->s[i]);
}

int kv_rng_parse(kv_rng *r, const char *text)
{
    if (!text || strlen(text) != 64) return -1;
    for (int i = 0; i < 4; i++) {
        char part[17];
        memcpy(part, text + 16 * i, 16);
        part[16] = '\0';
        unsigned long long v;
        if (sscanf(part, "%16llx", &v) != 1) return -1;
        r->s[i] = v;
    }
    return 0;
}
