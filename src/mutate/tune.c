/* The `tune` mutator: moves parameters declared in the source (tune_parse.c
 * has the annotation syntax) to other allowed values, so a kernel's tile
 * sizes, vector widths and switches can be searched without a language
 * model.
 *
 * A move changes one axis half the time, two 30% and three 20% of the time
 * (fewer when fewer can move): axes interact (a tile size pays only with
 * online softmax on), and single steps through a valley of worse points
 * get lost in selection. Axes are drawn one after the other, in proportion
 * to their learnt weight (tune_learn.c; all equal without history), among
 * those that can move and whose condition holds in the text as moved so
 * far, so one child can switch a structure on and tune an axis of it. Each
 * axis moves mostly (70%) to a neighbouring value in its list, so the
 * search can climb, otherwise to any other value; a value that is not in
 * the list moves to any listed one. When the parent was itself made by a
 * tune move that beat its own parent, half of its children repeat that
 * move's steps once more, each axis one value further the same way (the
 * pattern move of a direct search; tune_learn.c says why). A run's tune
 * (builtin:tune) also restarts now and then: every axis drawn
 * anew, a random point of the space, so that a search stuck near its seeds
 * still samples the space as widely as a random sweep would. */
#include "mutate/mutator.h"
#include "mutate/tune.h"
#include "mutate/tune_internal.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

#define NEIGHBOUR_PROBABILITY 0.7
#define MAX_AXES_PER_MOVE 3
/* Chances of moving 1, 2 or 3 axes at once. */
static const double axes_per_move[MAX_AXES_PER_MOVE] = {0.5, 0.3, 0.2};

/* 1 when P can move: some choice differs from its current value. */
static int movable(const char *src, const tune_param *p)
{
    for (size_t k = 0; k < p->nchoice; k++)
        if (!tune_same_value(src + p->off, p->len, p->choice[k])) return 1;
    return 0;
}

/* Picks the new choice index for P (movable) with RNG. */
static size_t pick_choice(const char *src, const tune_param *p, kv_rng *rng)
{
    long cur = tune_current_index(src, p);
    if (cur >= 0 && kv_rng_uniform(rng) < NEIGHBOUR_PROBABILITY) {
        long nb[2];
        int nn = 0;
        for (long k = cur - 1; k >= 0; k--)
            if (!tune_same_value(src + p->off, p->len, p->choice[k])) {
                nb[nn++] = k;
                break;
            }
        for (long k = cur + 1; k < (long)p->nchoice; k++)
            if (!tune_same_value(src + p->off, p->len, p->choice[k])) {
                nb[nn++] = k;
                break;
            }
        if (nn > 0) return (size_t)nb[kv_rng_below(rng, (uint64_t)nn)];
    }
    size_t other = 0;
    for (size_t k = 0; k < p->nchoice; k++)
        if (!tune_same_value(src + p->off, p->len, p->choice[k])) other++;
    size_t pick = (size_t)kv_rng_below(rng, other);
    for (size_t k = 0; k < p->nchoice; k++) {
        if (tune_same_value(src + p->off, p->len, p->choice[k])) continue;
        if (pick-- == 0) return k;
    }
    return 0; /* not reached: P is movable */
}

/* Draws an axis of S to move in SRC: weighted by W among the axes not yet
 * MOVED that can move and whose condition holds. Returns its index, or -1
 * when none can. */
static long draw_axis(const char *src, const tune_set *s, const int *moved,
                      const kv_tune_weights *w, kv_rng *rng)
{
    double *weight = kv_malloc((s->n ? s->n : 1) * sizeof *weight);
    double total = 0;
    for (size_t i = 0; i < s->n; i++) {
        weight[i] = 0;
        if (moved[i] || !movable(src, &s->p[i]) || !tune_cond_holds(src, s, i)) continue;
        weight[i] = kv_tune_weight(w, s->p[i].name);
        total += weight[i];
    }
    long pick = total > 0 ? (long)kv_rng_weighted(rng, weight, s->n) : -1;
    free(weight);
    return pick;
}

/* Sets axis P of *TEXT to VAL (a new malloc'd text in *TEXT) and adds
 * "NAME OLD -> NEW (line N)" to SUMMARY, after "; " when MORE. Returns 0,
 * or -1 out of memory (*TEXT unchanged). */
static int set_axis(char **text, const tune_param *p, const char *val, int more, kv_buf *summary)
{
    const char *cur = *text;
    kv_buf b = KV_BUF_INIT;
    if (kv_buf_append(&b, cur, p->off) || kv_buf_puts(&b, val) ||
        kv_buf_puts(&b, cur + p->off + p->len) ||
        kv_buf_printf(summary, "%s%s %.*s -> %s (line %d)", more ? "; " : "", p->name, (int)p->len,
                      cur + p->off, val, p->line)) {
        kv_buf_free(&b);
        return -1;
    }
    free(*text);
    *text = kv_buf_steal(&b);
    return 0;
}

/* Trend of axis NAME in W (0 when none). */
static int trend_of(const kv_tune_weights *w, const char *name)
{
    for (size_t i = 0; w && i < w->n; i++)
        if (strcmp(w->axis[i].name, name) == 0) return w->axis[i].trend;
    return 0;
}

/* The pattern move's next step in SRC: the first axis of S not yet MOVED
 * with a trend in W, whose condition holds and whose list goes on that way.
 * Returns its index with *CHOICE the value one step along, or -1. */
static long next_trend_axis(const char *src, const tune_set *s, const int *moved,
                            const kv_tune_weights *w, size_t *choice)
{
    for (size_t i = 0; i < s->n; i++) {
        const tune_param *p = &s->p[i];
        int t = trend_of(w, p->name);
        long cur = t ? tune_current_index(src, p) : -1;
        if (moved[i] || cur < 0 || !tune_cond_holds(src, s, i)) continue;
        for (long k = cur + t; k >= 0 && k < (long)p->nchoice; k += t)
            if (!tune_same_value(src + p->off, p->len, p->choice[k])) {
                *choice = (size_t)k;
                return (long)i;
            }
    }
    return -1;
}

int kv_mutate_tune_weighted(const char *src, const kv_tune_weights *w, kv_rng *rng,
                            kv_mutation *out, char **err)
{
    out->source = NULL;
    out->summary = NULL;
    *err = NULL;
    tune_set s;
    if (tune_parse(src, &s, err) != 0) return -1;
    int *moved = kv_calloc(s.n ? s.n : 1, sizeof *moved);
    size_t want = 1 + kv_rng_weighted(rng, axes_per_move, MAX_AXES_PER_MOVE), done = 0;
    /* The pattern move: the trends of the move that made SRC, one step on. */
    int pattern = 0;
    for (size_t i = 0; w && i < w->n; i++)
        pattern |= w->axis[i].trend != 0;
    if (pattern && kv_rng_uniform(rng) < KV_TUNE_PATTERN_PROBABILITY) {
        want = s.n;
    } else {
        pattern = 0;
    }
    char *cur = kv_strdup(src);
    kv_buf summary = KV_BUF_INIT;
    int rc = kv_buf_puts(&summary, "tune: ") == 0 ? 0 : -1;
    if (rc != 0) *err = kv_strdup("tune: out of memory");
    while (rc == 0 && done < want) {
        /* Offsets move with every edit: each step parses the text as moved
         * so far (the same annotations, in the same order). */
        if (done > 0) {
            tune_set_free(&s);
            if (tune_parse(cur, &s, err) != 0) {
                rc = -1;
                break;
            }
        }
        size_t pick = 0;
        long i = pattern ? next_trend_axis(cur, &s, moved, w, &pick) : -1;
        if (pattern && i < 0) {
            if (done > 0) break;
            /* No trend can go on: an ordinary move instead. */
            pattern = 0;
            want = 1 + kv_rng_weighted(rng, axes_per_move, MAX_AXES_PER_MOVE);
        }
        if (!pattern) {
            i = draw_axis(cur, &s, moved, w, rng);
            if (i < 0) break;
            pick = pick_choice(cur, &s.p[i], rng);
        }
        if (set_axis(&cur, &s.p[i], s.p[i].choice[pick], done > 0, &summary) != 0) {
            *err = kv_strdup("tune: out of memory");
            rc = -1;
            break;
        }
        moved[i] = 1;
        done++;
    }
    tune_set_free(&s);
    free(moved);
    if (rc != 0 || done == 0) {
        free(cur);
        kv_buf_free(&summary);
        return rc != 0 ? -1 : 1;
    }
    out->source = cur;
    out->summary = kv_buf_steal(&summary);
    return 0;
}

int kv_mutate_tune_restart(const char *src, kv_rng *rng, kv_mutation *out, char **err)
{
    out->source = NULL;
    out->summary = NULL;
    *err = NULL;
    tune_set s;
    if (tune_parse(src, &s, err) != 0) return -1;
    char *cur = kv_strdup(src);
    kv_buf summary = KV_BUF_INIT;
    size_t changed = 0, n = s.n;
    int rc = kv_buf_puts(&summary, "tune restart: ");
    /* In order, each axis whose condition holds in the text drawn so far. */
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i > 0) {
            tune_set_free(&s);
            if (tune_parse(cur, &s, err) != 0) {
                rc = -1;
                break;
            }
        }
        const tune_param *p = &s.p[i];
        if (!tune_cond_holds(cur, &s, i)) continue;
        const char *val = p->choice[kv_rng_below(rng, p->nchoice)];
        if (tune_same_value(cur + p->off, p->len, val)) continue;
        rc = set_axis(&cur, p, val, changed++ > 0, &summary);
        if (rc != 0) *err = kv_strdup("tune: out of memory");
    }
    tune_set_free(&s);
    if (rc != 0 || changed == 0) {
        free(cur);
        kv_buf_free(&summary);
        return rc != 0 ? -1 : 1;
    }
    out->source = cur;
    out->summary = kv_buf_steal(&summary);
    return 0;
}

int kv_mutate_tune(const char *src, kv_rng *rng, kv_mutation *out, char **err)
{
    return kv_mutate_tune_weighted(src, NULL, rng, out, err);
}

int kv_tune_check(const char *src, char **err)
{
    tune_set s;
    *err = NULL;
    if (tune_parse(src, &s, err) != 0) return -1;
    tune_set_free(&s);
    return 0;
}

json_t *kv_tune_parameters(const char *src)
{
    tune_set s;
    char *err = NULL;
    if (tune_parse(src, &s, &err) != 0) {
        free(err);
        return NULL;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < s.n; i++) {
        const tune_param *p = &s.p[i];
        json_t *choices = json_array();
        for (size_t k = 0; k < p->nchoice; k++)
            json_array_append_new(choices, json_string(p->choice[k]));
        char *val = kv_strndup(src + p->off, p->len);
        json_t *o = json_pack("{s:s, s:i, s:s, s:o}", "name", p->name, "line", p->line, "value",
                              val, "choices", choices);
        if (p->when) {
            json_object_set_new(o, "when", json_string(p->when));
            json_object_set_new(o, "active", json_boolean(tune_cond_holds(src, &s, i)));
        }
        json_array_append_new(arr, o);
        free(val);
    }
    tune_set_free(&s);
    return arr;
}
