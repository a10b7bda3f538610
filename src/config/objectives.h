/* Objectives beside speed (issue 22): the config's `objectives` names what
 * a run weighs, each maximised or minimised, and a program's value of each
 * comes from its metrics:
 *
 *   speedup      max  metrics.speedup (a kernel task's weighted geometric
 *                     mean), else combined_score
 *   energy       min  the geometric mean of SCENARIO_energy_uj (energy per
 *                     call; evaluator.energy)
 *   error        min  the largest SCENARIO_tol_ratio: the share of the
 *                     task's tolerance the program's error uses (never
 *                     above 1: a program outside it is rejected)
 *   score        max  combined_score
 *   max:METRIC, min:METRIC   any numeric metric
 *
 * A program is on the Pareto front of a set when no other program of the
 * set is at least as good on every objective and better on one. Programs
 * lacking a value of an objective are not on any front. */
#ifndef KV_CONFIG_OBJECTIVES_H
#define KV_CONFIG_OBJECTIVES_H

#include <jansson.h>
#include <stddef.h>

typedef enum {
    KV_OBJ_METRIC,  /* a metric by name */
    KV_OBJ_SPEEDUP, /* speedup, else combined_score */
    KV_OBJ_ENERGY,  /* geometric mean of *_energy_uj */
    KV_OBJ_ERROR,   /* largest *_tol_ratio */
} kv_objective_kind;

typedef struct kv_objective {
    char *name; /* as the config says it ("energy", "max:fitness") */
    kv_objective_kind kind;
    char *metric; /* KV_OBJ_METRIC's metric */
    int maximise;
} kv_objective;

/* Parses the config's N specs into *OUT (malloc'd; free with
 * kv_objectives_free). 0, or -1 with *ERR naming the bad one. */
int kv_objectives_parse(char *const *specs, size_t n, kv_objective **out, char **err);
void kv_objectives_free(kv_objective *o, size_t n);

/* 1 when a program with METRICS was measured on every scenario, 0 when
 * the screen stopped it after a few (metrics.screened_out: its speedup is
 * an estimate against its parent, its errors and energies those of the
 * scenarios it ran). Only whole measurements enter a front or a best on
 * an objective; the others stay in the store, marked. */
int kv_objectives_whole(const json_t *metrics);

/* O's value for a program with METRICS into *V: 0, or -1 when it has none. */
int kv_objective_value(const kv_objective *o, const json_t *metrics, double *v);

/* 1 when A (N values, O's objectives) dominates B: at least as good on
 * every objective, better on one. */
int kv_objectives_dominate(const kv_objective *o, size_t n, const double *a, const double *b);

/* The indices, among COUNT programs whose values are VALS[i * N + k] (NAN:
 * absent), of those on the Pareto front, into FRONT (room for COUNT), in
 * ascending order; returns how many. */
size_t kv_pareto_front(const kv_objective *o, size_t n, const double *vals, size_t count,
                       size_t *front);

#endif
