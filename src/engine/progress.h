/* What a run shows while it goes: a one-line progress display rewritten in
 * place on a terminal, plain log lines otherwise. It reads the run's counts
 * as the controller hands them (kv_progress_counts), never the controller. */
#ifndef KV_ENGINE_PROGRESS_H
#define KV_ENGINE_PROGRESS_H

#include "store/program.h"

#include <stddef.h>
#include <stdint.h>

/* Counts by reason code, in the order first seen. */
typedef struct kv_reason_tally {
    char **codes;
    int64_t *counts;
    size_t n, cap;
} kv_reason_tally;

/* Counts one more CODE (NULL counts as "unknown"). */
void kv_reason_tally_add(kv_reason_tally *t, const char *code);
void kv_reason_tally_free(kv_reason_tally *t);

/* What the line shows, as the controller counts it. */
typedef struct kv_progress_counts {
    int64_t iterations_done, last_iteration;
    double best_fitness;                        /* NAN until an OK program exists */
    int64_t n_this_process;                     /* evaluations of this process: the rate */
    int64_t n_failed, n_rejected, n_duplicates; /* over the whole run */
    const kv_reason_tally *failures;            /* failed children by reason code */
} kv_progress_counts;

/* The display's own state: where it writes, its clock, what it last said. */
typedef struct kv_progress {
    int terminal;      /* rewritten in place on a terminal, else log lines */
    double started_at; /* the rate's clock */
    double last_shown;
    int64_t last_logged;
} kv_progress;

/* Starts the display's clock; TERMINAL: rewrite one line in place. */
void kv_progress_start(kv_progress *p, int terminal);
/* Refreshes the display (at most a few times a second unless FINAL). */
void kv_progress_update(kv_progress *p, const kv_progress_counts *n, int final);
/* Reports a new best program. */
void kv_progress_new_best(const kv_progress *p, const kv_program *best);

#endif
