/* The device's telemetry around each timed scenario, read beside the
 * judge's work (see judge_internal.h). On a GPU whose firmware answers
 * NVML, a read of its clock, temperature, power and energy takes several
 * milliseconds (about 5 ms on the H200, bench/NOTES.md): read inline after
 * every scenario, it was a tenth of a fast child's hold. Each read runs in
 * a thread of its own, started when a scenario's blocks end (the first
 * before the first scenario's), and the evaluation's end, once the device
 * is let go, joins them all: a scenario's "before" is the read before its
 * own. Only NVML is called there: no device work, nothing of the
 * candidate's, and only the thread's own JSON is made before the join. */
#include "kernel/judge_internal.h"
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
static void start_read(judge *j, json_t *summary)
{
    if (j->n_tele == j->cap_tele) {
        j->cap_tele = j->cap_tele ? 2 * j->cap_tele : 32;
        j->tele = kv_realloc(j->tele, (size_t)j->cap_tele * sizeof *j->tele);
    }
    tele_read *r = kv_calloc(1, sizeof *r);
    r->b = j->b;
    r->summary = summary ? json_incref(summary) : NULL;
    j->tele[j->n_tele++] = r;
    if (pthread_create(&r->th, NULL, read_thread, r) == 0)
        r->threaded = 1;
    else
        read_thread(r); /* no thread: read here */
}

void kv_judge_tele_begin(judge *j)
{
    if (j->b->telemetry && j->n_tele == 0) start_read(j, NULL);
}

void kv_judge_tele_after(judge *j, json_t *summary)
{
    if (j->b->telemetry) start_read(j, summary);
}

void kv_judge_tele_finish(judge *j)
{
    json_t *before = NULL;
    for (int k = 0; k < j->n_tele; k++) {
        tele_read *r = j->tele[k];
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
    free(j->tele);
    j->tele = NULL;
    j->n_tele = j->cap_tele = 0;
}
