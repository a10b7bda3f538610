/* The device's telemetry around each timed scenario, read beside the
 * judge's work (see judge_tele.h). On a GPU whose firmware answers
 * NVML, a read of its clock, temperature, power and energy takes several
 * milliseconds (about 5 ms on the H200, bench/NOTES.md): read inline after
 * every scenario, it was a tenth of a fast child's hold. Each read runs in
 * a thread of its own, started when a scenario's blocks end (the first
 * before the first scenario's), and the evaluation's end, once the device
 * is let go, joins them all: a scenario's "before" is the read before its
 * own. Only NVML is called there: no device work, nothing of the
 * candidate's, and only the thread's own JSON is made before the join. */
#include "judge/judge_tele.h"
#include "util/buf.h"

#include <pthread.h>
#include <stdlib.h>

struct tele_read {
    pthread_t th;
    int threaded;
    kv_jdev *b;
    json_t *summary; /* the scenario it follows; NULL: the first read */
    json_t *after;
};

static void *read_thread(void *arg)
{
    tele_read *r = arg;
    r->after = r->b->telemetry(r->b);
    return NULL;
}

/* Starts a read that follows SUMMARY (NULL: the first). */
static void start_read(judge_tele *tl, kv_jdev *b, json_t *summary)
{
    if (tl->n == tl->cap) {
        tl->cap = tl->cap ? 2 * tl->cap : 32;
        tl->r = kv_realloc(tl->r, (size_t)tl->cap * sizeof *tl->r);
    }
    tele_read *r = kv_calloc(1, sizeof *r);
    r->b = b;
    r->summary = summary ? json_incref(summary) : NULL;
    tl->r[tl->n++] = r;
    if (pthread_create(&r->th, NULL, read_thread, r) == 0)
        r->threaded = 1;
    else
        read_thread(r); /* no thread: read here */
}

void kv_judge_tele_begin(judge_tele *tl, kv_jdev *b)
{
    if (b->telemetry && tl->n == 0) start_read(tl, b, NULL);
}

void kv_judge_tele_after(judge_tele *tl, kv_jdev *b, json_t *summary)
{
    if (b->telemetry) start_read(tl, b, summary);
}

void kv_judge_tele_finish(judge_tele *tl)
{
    json_t *before = NULL;
    for (int k = 0; k < tl->n; k++) {
        tele_read *r = tl->r[k];
        if (r->threaded) pthread_join(r->th, NULL);
        if (r->summary && (before || r->after)) {
            json_t *tel = json_object();
            if (before) json_object_set(tel, "before", before);
            if (r->after) json_object_set(tel, "after", r->after);
            json_object_set_new(r->summary, "telemetry", tel);
        }
        json_decref(r->summary);
        json_decref(before);
        before = r->after;
        free(r);
    }
    json_decref(before);
    free(tl->r);
    tl->r = NULL;
    tl->n = tl->cap = 0;
}
