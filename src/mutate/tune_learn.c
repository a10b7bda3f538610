/* What the tune mutator learns from a lineage's earlier tune children: how
 * much each axis is worth drawing (see tune.h).
 *
 * Each child of the lineage says, for the axes its summary names, whether
 * the move mattered. It did not when the compiled artifact is the parent's
 * (the kernel harness hashes it): every axis it moved is then charged one
 * inert move (a move of several axes that compiled to the same artifact
 * says so of each). Nor when the score moved by less than
 * KV_TUNE_SAME_SCORE: each of its k axes is charged 1/k of an inert move
 * (two moves may have cancelled out). It did
 * when the score moved or the child failed: each of its k axes gets 1/k of
 * a move that mattered (the outcome cannot be pinned on one of them). An
 * axis's value is
 *
 *     (1 + mattered) / (1 + moves),  at least KV_TUNE_MIN_WEIGHT,
 *
 * 1 without history or while its moves matter, falling towards the floor
 * as inert moves pile up. Whether a move helped is not rewarded here: the
 * parent already holds the value that helped, and a switch that helped has
 * only the way back left to move. Children of nearer ancestors count more
 * (each generation up weighs DECAY times less): an axis that mattered on
 * the naive kernel may be dead in the descendant that switched to another
 * structure.
 *
 * The program's own record says one more thing: when it was made by a tune
 * move that beat its parent, each axis of that move gets the direction it
 * went along its list of values (its trend), and the draw (tune.c) often
 * takes one more step the same way: the pattern move of a direct search,
 * which climbs long lists of values (a tile size, a vector width) in a few
 * children instead of waiting for each step to be drawn again. Once a child
 * has taken those steps the pattern is spent (it would be the same child). */
#include "mutate/tune.h"
#include "mutate/tune_internal.h"
#include "util/buf.h"
#include "util/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DECAY 0.8

void kv_tune_weights_free(kv_tune_weights *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n; i++)
        free(w->axis[i].name);
    free(w->axis);
    w->axis = NULL;
    w->n = 0;
}

double kv_tune_weight(const kv_tune_weights *w, const char *name)
{
    if (!w) return 1.0;
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->axis[i].name, name) == 0) return w->axis[i].value;
    return 1.0;
}

/* Index in W of the axis whose name starts ENTRY (followed by a space), the
 * longest such name; -1 when none. */
static long entry_axis(const kv_tune_weights *w, const char *entry, size_t len)
{
    long best = -1;
    size_t best_len = 0;
    for (size_t i = 0; i < w->n; i++) {
        size_t nl = strlen(w->axis[i].name);
        if (nl < len && nl > best_len && memcmp(entry, w->axis[i].name, nl) == 0 &&
            entry[nl] == ' ') {
            best = (long)i;
            best_len = nl;
        }
    }
    return best;
}

/* The axes of W a tune SUMMARY names, into AXES (up to MAX, -1 for an axis
 * W does not know), and where each entry starts in SUMMARY and how long it
 * is (ENTRY, LEN: may be NULL). Returns how many the summary lists. */
static size_t summary_axes(const kv_tune_weights *w, const char *summary, long *axes,
                           const char **entry, size_t *len, size_t max)
{
    if (!summary || !kv_starts_with(summary, "tune: ")) return 0;
    const char *e = summary + strlen("tune: ");
    size_t n = 0;
    while (*e && n < max) {
        const char *end = strstr(e, "; ");
        size_t l = end ? (size_t)(end - e) : strlen(e);
        if (entry) entry[n] = e;
        if (len) len[n] = l;
        axes[n++] = entry_axis(w, e, l);
        if (!end) break;
        e = end + 2;
    }
    return n;
}

/* Which way the move ENTRY (LEN bytes, "NAME OLD -> NEW (line N)") took
 * parameter P along its list of values: +1 up, -1 down, 0 unknown. */
static int entry_direction(const tune_param *p, const char *entry, size_t len)
{
    size_t nl = strlen(p->name);
    const char *old = entry + nl + 1, *end = entry + len;
    const char *arrow = strstr(old, " -> ");
    if (!arrow || arrow >= end) return 0;
    const char *nw = arrow + 4, *line = strstr(nw, " (line ");
    if (!line || line > end) line = end;
    long from = -1, to = -1;
    for (size_t k = 0; k < p->nchoice; k++) {
        if (from < 0 && tune_same_value(old, (size_t)(arrow - old), p->choice[k])) from = (long)k;
        if (to < 0 && tune_same_value(nw, (size_t)(line - nw), p->choice[k])) to = (long)k;
    }
    return from < 0 || to < 0 || from == to ? 0 : to > from ? 1 : -1;
}

/* What child O says: 0 nothing usable, 1 the same artifact, 4 the same
 * score, 2 mattered, 3 improved. */
static int outcome(const kv_tune_obs *o)
{
    if (o->artifact && o->parent_artifact && strcmp(o->artifact, o->parent_artifact) == 0) return 1;
    if (o->status == KV_STATUS_FAILED || o->status == KV_STATUS_TIMEOUT) return 2;
    if (o->status != KV_STATUS_OK && !(o->status == KV_STATUS_DUPLICATE && o->artifact)) return 0;
    if (!isfinite(o->fitness) || !isfinite(o->parent_fitness)) return 0;
    if (o->parent_fitness <= 0) return o->fitness > 0 ? 3 : 0;
    double rel = o->fitness / o->parent_fitness - 1.0;
    if (fabs(rel) <= KV_TUNE_SAME_SCORE) return 4;
    return rel > 0 ? 3 : 2;
}

int kv_tune_learn(const char *src, int64_t self, const kv_tune_obs *obs, size_t n,
                  kv_tune_weights *out, char **err)
{
    out->axis = NULL;
    out->n = 0;
    tune_set s;
    if (tune_parse(src, &s, err) != 0) return -1;
    out->axis = kv_calloc(s.n ? s.n : 1, sizeof *out->axis);
    for (size_t i = 0; i < s.n; i++) {
        int seen = 0;
        for (size_t k = 0; k < out->n; k++)
            seen |= strcmp(out->axis[k].name, s.p[i].name) == 0;
        if (!seen) out->axis[out->n++].name = kv_strdup(s.p[i].name);
    }
    for (size_t j = 0; j < n; j++) {
        int what = outcome(&obs[j]);
        if (what == 0) continue;
        long axes[16];
        const char *entry[16];
        size_t len[16];
        size_t k = summary_axes(out, obs[j].summary, axes, entry, len, 16);
        if (self > 0 && obs[j].id == self && what == 3) /* SRC itself: a move that paid */
            for (size_t a = 0; a < k; a++)
                for (size_t i = 0; axes[a] >= 0 && i < s.n; i++)
                    if (strcmp(s.p[i].name, out->axis[axes[a]].name) == 0) {
                        out->axis[axes[a]].trend = entry_direction(&s.p[i], entry[a], len[a]);
                        break;
                    }
        double age = pow(DECAY, obs[j].depth > 0 ? obs[j].depth : 0);
        for (size_t a = 0; a < k; a++) {
            if (axes[a] < 0) continue;
            kv_tune_axis *x = &out->axis[axes[a]];
            if (what == 1 || what == 4) {
                double share = what == 1 ? age : age / (double)k;
                x->moves += share;
                x->inert += share;
            } else {
                x->moves += age / (double)k;
                x->mattered += age / (double)k;
                if (what == 3) x->improved += age / (double)k;
            }
        }
    }
    /* A pattern move is the same child each time: once a child of SRC has
     * taken every trending axis one step on (and nothing else), the
     * pattern is spent. */
    for (size_t j = 0; self > 0 && j < n; j++) {
        if (obs[j].depth != 0) continue;
        long axes[16];
        const char *entry[16];
        size_t len[16];
        size_t k = summary_axes(out, obs[j].summary, axes, entry, len, 16), same = 0, trends = 0;
        for (size_t i = 0; i < out->n; i++)
            trends += out->axis[i].trend != 0;
        for (size_t a = 0; a < k; a++)
            for (size_t i = 0; axes[a] >= 0 && i < s.n; i++)
                if (strcmp(s.p[i].name, out->axis[axes[a]].name) == 0) {
                    int t = out->axis[axes[a]].trend;
                    same += t != 0 && entry_direction(&s.p[i], entry[a], len[a]) == t;
                    break;
                }
        if (k > 0 && same == k && trends > 0) {
            for (size_t i = 0; i < out->n; i++)
                out->axis[i].trend = 0;
            break;
        }
    }
    for (size_t i = 0; i < out->n; i++) {
        kv_tune_axis *x = &out->axis[i];
        x->value = (1.0 + x->mattered) / (1.0 + x->moves);
        if (x->value < KV_TUNE_MIN_WEIGHT) x->value = KV_TUNE_MIN_WEIGHT;
    }
    tune_set_free(&s);
    return 0;
}

int kv_mutate_tune_lineage(kv_store *store, const kv_program *parent, kv_rng *rng, kv_mutation *out,
                           char **err)
{
    out->source = NULL;
    out->summary = NULL;
    *err = NULL;
    if (!parent || !parent->source) {
        *err = kv_strdup("tune: no parent program");
        return -1;
    }
    kv_tune_obs *obs = NULL;
    size_t n = 0;
    if (store && parent->id > 0 && kv_store_tune_history(store, parent->id, &obs, &n) != 0) {
        kv_warn("tune: cannot read the lineage's history (%s); every axis weighs the same",
                kv_store_errmsg(store));
        n = 0;
    }
    kv_tune_weights w;
    int rc = kv_tune_learn(parent->source, parent->id, obs, n, &w, err);
    kv_tune_obs_free(obs, n);
    if (rc != 0) return -1;
    if (n > 0) { /* what was learnt, for a DEBUG log */
        kv_buf b = KV_BUF_INIT;
        for (size_t i = 0; i < w.n; i++)
            if (w.axis[i].moves > 0)
                kv_buf_printf(&b, " %s %.2f (%.1f moves, %.1f inert%s)", w.axis[i].name,
                              w.axis[i].value, w.axis[i].moves, w.axis[i].inert,
                              w.axis[i].trend > 0   ? ", paid going up"
                              : w.axis[i].trend < 0 ? ", paid going down"
                                                    : "");
        kv_debug("tune: parent #%lld, %zu tune children on its lineage:%s", (long long)parent->id,
                 n, b.data ? b.data : " no axis moved");
        kv_buf_free(&b);
    }
    rc = kv_mutate_tune_weighted(parent->source, &w, rng, out, err);
    kv_tune_weights_free(&w);
    return rc;
}
