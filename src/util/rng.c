/* Seeded pseudo-random numbers: xoshiro256** seeded through splitmix64. */
#include "util/rng.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* The ziggurat of Marsaglia and Tsang (2000), 256 layers, in the 64-bit
 * form numpy uses: 8 bits pick the layer, 1 the sign, 52 the magnitude.
 * Layer 0 is the base strip with the tail beyond ZIG_R; layer i > 0 spans
 * x up to zig_w[i] * 2^52. The tables are built once, on first use. */
#define ZIG_N 256
#define ZIG_R 3.6541528853610088
#define ZIG_V 4.92867323399e-3 /* the area of every layer */
static uint64_t zig_k[ZIG_N];  /* accept at once when the magnitude is below */
static double zig_w[ZIG_N];    /* magnitude to x */
static double zig_f[ZIG_N];    /* the density at each layer's edge */
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;
static atomic_int zig_ready;

static void zig_setup(void)
{
    const double m = 0x1.0p52;
    double dn = ZIG_R, tn = dn, q = ZIG_V / exp(-0.5 * dn * dn);
    zig_k[0] = (uint64_t)(dn / q * m);
    zig_k[1] = 0;
    zig_w[0] = q / m;
    zig_w[ZIG_N - 1] = dn / m;
    zig_f[0] = 1.0;
    zig_f[ZIG_N - 1] = exp(-0.5 * dn * dn);
    for (int i = ZIG_N - 2; i >= 1; i--) {
        dn = sqrt(-2.0 * log(ZIG_V / dn + exp(-0.5 * dn * dn)));
        zig_k[i + 1] = (uint64_t)(dn / tn * m);
        tn = dn;
        zig_f[i] = exp(-0.5 * dn * dn);
        zig_w[i] = dn / m;
    }
    atomic_store_explicit(&zig_ready, 1, memory_order_release);
}

void kv_rng_ziggurat_init(void)
{
    pthread_once(&zig_once, zig_setup);
}

double kv_rng_normal_ziggurat(kv_rng *r)
{
    if (!atomic_load_explicit(&zig_ready, memory_order_acquire)) kv_rng_ziggurat_init();
    for (;;) {
        uint64_t u = kv_rng_next(r);
        int layer = (int)(u & 0xff);
        int negative = (int)((u >> 8) & 1);
        uint64_t mag = (u >> 9) & 0x000fffffffffffffull;
        double x = (double)mag * zig_w[layer];
        if (mag < zig_k[layer]) return negative ? -x : x; /* about 99% of draws */
        if (layer == 0) { /* the tail beyond ZIG_R (Marsaglia 1964) */
            for (;;) {
                double xx = -log1p(-kv_rng_uniform(r)) / ZIG_R;
                double yy = -log1p(-kv_rng_uniform(r));
                if (yy + yy > xx * xx) return negative ? -(ZIG_R + xx) : ZIG_R + xx;
            }
        }
        double y = zig_f[layer] + (zig_f[layer - 1] - zig_f[layer]) * kv_rng_uniform(r);
        if (y < exp(-0.5 * x * x)) return negative ? -x : x;
    }
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
