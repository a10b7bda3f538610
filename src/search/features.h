/* Feature values and binning for the MAP-Elites grids: what a program
 * measures along each dimension, and the running min-max scaling that turns a
 * value into a bin. Fitness lives here too (kv_fitness in database.h). */
#ifndef KV_SEARCH_FEATURES_H
#define KV_SEARCH_FEATURES_H

#include "store/program.h"

#include <stddef.h>

/* Running range of one dimension over every value seen (all islands). */
typedef struct kv_feature_scale {
    double min, max;
    int seen; /* 0 until the first finite value */
} kv_feature_scale;

/* Fitness from METRICS: combined_score when numeric and finite, else the mean
 * of the finite numeric metrics whose names are not among the N_DIMS feature
 * dimensions DIMS; NAN when there are none (or METRICS is not an object). */
double kv_fitness_from(const json_t *metrics, char *const *dims, size_t n_dims);

/* Value of P along dimension DIM: "complexity" = source length in characters,
 * "score" = FITNESS, "diversity" = DIVERSITY (computed by the caller), any
 * other name = that numeric metric. NAN when missing. */
double kv_feature_value(const char *dim, const kv_program *p, double fitness, double diversity);

/* Widens S by V when V is finite, then returns V's bin in [0, BINS-1]:
 * floor((v - min) / (max - min) * bins), clamped; 0 when max == min, when V
 * is NaN or infinite, or when BINS <= 1. */
int kv_feature_bin(kv_feature_scale *s, double v, int bins);

#endif
