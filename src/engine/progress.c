/* Progress display: iteration, best score, evaluations per second, failures. */
#include "engine/progress.h"
#include "util/clock.h"
#include "util/log.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

static void format_line(const kv_controller *c, char *out, size_t n)
{
    double elapsed = kv_now_s() - c->started_at;
    int64_t done = c->n_evaluated + c->n_failed;
    snprintf(out, n,
             "iteration %lld/%lld  best %.6g  %.1f eval/s  failed %lld  rejected %lld  "
             "duplicates %lld",
             (long long)(c->next_iteration - 1), (long long)c->last_iteration, c->best_fitness,
             elapsed > 0 ? (double)done / elapsed : 0.0, (long long)c->n_failed,
             (long long)c->n_rejected, (long long)c->n_duplicates);
}

void kv_progress_update(kv_controller *c, int final)
{
    static double last_shown;
    static int64_t last_logged_iteration;
    double t = kv_now_s();
    char line[256];
    if (c->progress) {
        if (!final && t - last_shown < 0.2) return;
        last_shown = t;
        format_line(c, line, sizeof line);
        fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
        fflush(stderr);
        return;
    }
    /* Plain logs: about every tenth of the run, and at the end. */
    int64_t step = c->last_iteration / 10;
    if (step < 1) step = 1;
    int64_t it = c->next_iteration - 1;
    if ((final && it != last_logged_iteration) || it - last_logged_iteration >= step) {
        last_logged_iteration = it;
        format_line(c, line, sizeof line);
        kv_info("%s", line);
    }
}

void kv_progress_new_best(kv_controller *c, const kv_program *p)
{
    if (c->progress) fprintf(stderr, "\r\033[K");
    kv_info("new best: program %lld (iteration %lld, island %d, %s) fitness %.6g", (long long)p->id,
            (long long)p->iteration, p->island, p->mutator ? p->mutator : "?", p->fitness);
}
