/* Progress display: iterations finished (never fewer than shown before),
 * best score, evaluations per second, failures counted by reason code. */
#include "engine/progress.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void kv_reason_tally_add(kv_reason_tally *t, const char *code)
{
    if (!code || !*code) code = "unknown";
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->codes[i], code) == 0) {
            t->counts[i]++;
            return;
        }
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 8;
        t->codes = kv_realloc(t->codes, t->cap * sizeof *t->codes);
        t->counts = kv_realloc(t->counts, t->cap * sizeof *t->counts);
    }
    t->codes[t->n] = kv_strdup(code);
    t->counts[t->n++] = 1;
}

void kv_reason_tally_free(kv_reason_tally *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->codes[i]);
    free(t->codes);
    free(t->counts);
    memset(t, 0, sizeof *t);
}

/* " (compile_error 5, wrong_result 2, +1 more)": the most frequent codes
 * (ties: first seen), into B; nothing when there are none. */
static void format_reasons(const kv_reason_tally *t, kv_buf *b)
{
    if (t->n == 0) return;
    enum { SHOWN = 3 };
    size_t order[SHOWN];
    size_t k = 0;
    for (; k < SHOWN && k < t->n; k++) {
        size_t best = t->n;
        for (size_t i = 0; i < t->n; i++) {
            int taken = 0;
            for (size_t j = 0; j < k; j++)
                taken |= order[j] == i;
            if (!taken && (best == t->n || t->counts[i] > t->counts[best])) best = i;
        }
        order[k] = best;
    }
    kv_buf_puts(b, " (");
    for (size_t j = 0; j < k; j++)
        kv_buf_printf(b, "%s%s %lld", j ? ", " : "", t->codes[order[j]],
                      (long long)t->counts[order[j]]);
    if (t->n > k) kv_buf_printf(b, ", +%zu more", t->n - k);
    kv_buf_puts(b, ")");
}

static void format_line(const kv_progress *p, const kv_progress_counts *c, char *out, size_t n)
{
    double elapsed = kv_now_s() - p->started_at;
    kv_buf reasons = KV_BUF_INIT;
    kv_buf_puts(&reasons, "");
    format_reasons(c->failures, &reasons);
    snprintf(out, n,
             "iteration %lld/%lld  best %.6g  %.1f eval/s  failed %lld%s  rejected %lld  "
             "duplicates %lld",
             (long long)c->iterations_done, (long long)c->last_iteration, c->best_fitness,
             elapsed > 0 ? (double)c->n_this_process / elapsed : 0.0, (long long)c->n_failed,
             reasons.data, (long long)c->n_rejected, (long long)c->n_duplicates);
    kv_buf_free(&reasons);
}

void kv_progress_start(kv_progress *p, int terminal)
{
    memset(p, 0, sizeof *p);
    p->terminal = terminal;
    p->started_at = kv_now_s();
}

void kv_progress_update(kv_progress *p, const kv_progress_counts *c, int final)
{
    double t = kv_now_s();
    char line[512];
    if (p->terminal) {
        if (!final && t - p->last_shown < 0.2) return;
        p->last_shown = t;
        format_line(p, c, line, sizeof line);
        fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
        fflush(stderr);
        return;
    }
    /* Plain logs: about every tenth of the run, and at the end. */
    int64_t step = c->last_iteration / 10;
    if (step < 1) step = 1;
    int64_t it = c->iterations_done;
    if ((final && it != p->last_logged) || it - p->last_logged >= step) {
        p->last_logged = it;
        format_line(p, c, line, sizeof line);
        kv_info("%s", line);
    }
}

void kv_progress_new_best(const kv_progress *p, const kv_program *best)
{
    if (p->terminal) fprintf(stderr, "\r\033[K");
    kv_info("new best: program %lld (iteration %lld, island %d, %s) fitness %.6g",
            (long long)best->id, (long long)best->iteration, best->island,
            best->mutator ? best->mutator : "?", best->fitness);
}
