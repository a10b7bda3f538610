/* Seeded pseudo-random numbers (xoshiro256**, seeded by splitmix64).
 * Every random choice in kevolve draws from an explicit kv_rng so a run is
 * reproducible from its seed; there is no hidden global generator. */
#ifndef KV_UTIL_RNG_H
#define KV_UTIL_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct kv_rng {
    uint64_t s[4];
    double spare; /* the second normal of the last polar draw */
    int has_spare;
} kv_rng;

void kv_rng_seed(kv_rng *r, uint64_t seed);
uint64_t kv_rng_next(kv_rng *r);
/* Uniform in [0, n); n must be > 0. */
uint64_t kv_rng_below(kv_rng *r, uint64_t n);
/* Uniform in [0, 1). */
double kv_rng_uniform(kv_rng *r);
/* Standard normal (Marsaglia's polar method: two per draw, no trigonometry). */
double kv_rng_normal(kv_rng *r);
/* Standard normal by the ziggurat method: faster than kv_rng_normal, for
 * bulk draws (a kernel's random inputs). Its tables are built on first use;
 * kv_rng_ziggurat_init builds them ahead (any thread; later calls do
 * nothing). */
void kv_rng_ziggurat_init(void);
double kv_rng_normal_ziggurat(kv_rng *r);
/* Index drawn with probability proportional to weights[i] (>= 0); uniform when all are 0. */
size_t kv_rng_weighted(kv_rng *r, const double *weights, size_t n);
/* Serialises the state as 64 hex digits into out[65] and back; parse returns 0 or -1. */
void kv_rng_format(const kv_rng *r, char out[65]);
int kv_rng_parse(kv_rng *r, const char *text);

#endif
