/* The device's telemetry around each timed scenario, read beside the
 * judge's work (judge_tele.c): each read in a thread of its own, joined
 * once the device is let go. */
#ifndef KV_JUDGE_JUDGE_TELE_H
#define KV_JUDGE_JUDGE_TELE_H

#include "backend/backend.h"

#include <jansson.h>

typedef struct tele_read tele_read;

/* The reads started, in order, not yet joined. */
typedef struct judge_tele {
    tele_read **r;
    int n, cap;
} judge_tele;

/* Starts the read of B's telemetry before the first timed scenario (none
 * when one was started). */
void kv_judge_tele_begin(judge_tele *tl, kv_jdev *b);
/* Starts the read of B's telemetry after SUMMARY's blocks, in a thread of
 * its own. */
void kv_judge_tele_after(judge_tele *tl, kv_jdev *b, json_t *summary);
/* Joins every read started: each SUMMARY gets "telemetry": {"before" (the
 * read before it), "after"}. */
void kv_judge_tele_finish(judge_tele *tl);

#endif
