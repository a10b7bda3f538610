/* Arenas: where a shape's tensors lie, their canaries, and their sharing
 * with the runner (see judge_arena.h). */
#include "judge/judge_arena.h"
#include "backend/dtype.h"
#include "judge/tasks.h"
#include "util/buf.h"
#include "util/clock.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static void add_guard(layout *l, size_t off, size_t len, uint32_t prot, int tensor)
{
    if (l->nguards < KV_RMAX_GUARDS)
        l->guards[l->nguards++] =
            (kv_rguard){.offset = off, .length = len, .prot = prot, .tensor = (uint32_t)tensor};
}

void kv_judge_layout(const judge_trial *j, const int64_t *syms, size_t nsets, int one_set_guarded,
                     layout *l)
{
    const kv_task *t = j->task;
    const kv_jdev *b = j->b;
    memset(l, 0, sizeof *l);
    l->nsets = one_set_guarded ? 1 : nsets;
    size_t ps = page_size(), cursor = 0;
    for (int i = 0; i < t->num_tensors; i++) {
        size_t bytes = kv_tensor_count(t, i, syms) * kv_dtype_size(t->tensors[i].dtype);
        size_t data = round_up(bytes ? bytes : 1, b->align);
        l->len[i] = bytes;
        l->stride[i] = data;
        size_t region_end;
        if (one_set_guarded && b->page_guards) {
            /* The data ends where a page ends (but for its rounding), and the
             * page after it faults in the runner. */
            region_end = cursor + round_up(b->margin + data, ps);
            l->off[i] = region_end - data;
            add_guard(l, region_end, ps, 0, i);
            if (t->tensors[i].role == KV_IN) {
                size_t first = l->off[i] / ps * ps;
                add_guard(l, first, region_end - first, 1, i);
            }
        } else {
            l->off[i] = round_up(cursor + b->margin, b->align);
            region_end = l->off[i] + l->nsets * data + b->margin;
        }
        size_t data_end = l->off[i] + (l->nsets - 1) * data + bytes;
        l->canary_off[i][0] = cursor;
        l->canary_len[i][0] = l->off[i] - cursor;
        l->canary_off[i][1] = data_end;
        l->canary_len[i][1] = region_end - data_end;
        cursor = region_end + (one_set_guarded && b->page_guards ? ps : 0);
    }
    l->bytes = round_up(cursor ? cursor : 1, ps);
}

size_t kv_judge_timing_sets(const judge_trial *j, const int64_t *syms)
{
    const kv_task *t = j->task;
    size_t set_bytes = 0;
    for (int i = 0; i < t->num_tensors; i++)
        set_bytes += kv_tensor_count(t, i, syms) * kv_dtype_size(t->tensors[i].dtype);
    size_t n = j->s.budget_bytes / (set_bytes ? set_bytes : 1);
    return n < 1 ? 1 : n > 1024 ? 1024 : n;
}

/* The runner's CPU for a request of the judge's own (mapping or unmapping
 * an arena: unmapping the long decode's 130 MB takes milliseconds of kernel
 * time) is not the candidate's work between calls: the idle check counts
 * from its reply. No block's inputs exist while such a request runs. */
static void forgive_request_cpu(judge_trial *j)
{
    if (j->rn) kv_judge_note_idle_cpu(j);
}

/* An arena that holds nothing. */
static void arena_clear(kv_arena *a)
{
    memset(a, 0, sizeof *a);
    a->fd = -1;
}

/* The child's own arenas (not the slab's parts) are noted, so that the
 * child's end frees any a failure cut short. */
static void note_live(judge_trial *j, const kv_arena *a)
{
    if (j->n_live == j->cap_live) {
        j->cap_live = j->cap_live ? 2 * j->cap_live : 16;
        j->live = kv_realloc(j->live, (size_t)j->cap_live * sizeof *j->live);
    }
    j->live[j->n_live++] = *a;
}

static void forget_live(judge_trial *j, const kv_arena *a)
{
    for (int i = 0; i < j->n_live; i++)
        if (j->live[i].host == a->host && j->live[i].dptr == a->dptr && j->live[i].fd == a->fd) {
            j->live[i] = j->live[--j->n_live];
            return;
        }
}

void kv_judge_free_live(judge_trial *j)
{
    for (int i = 0; i < j->n_live; i++)
        j->b->arena_free(j->b, &j->live[i]);
    free(j->live);
    j->live = NULL;
    j->n_live = j->cap_live = 0;
}

/* Maps A into the runner in use (with L's guards where given). */
static int share(judge_trial *j, const kv_arena *a, const layout *l)
{
    kv_rfail f;
    kv_fail err = {0};
    int rc = kv_runner_map(j->rn, a, l ? l->guards : NULL, l ? l->nguards : 0, 60, &f, &err);
    if (rc < 0) return kv_judge_fail_err(j, &err, "sharing tensors");
    if (rc > 0) return kv_judge_fail_runner(j, &f, "sharing tensors");
    forgive_request_cpu(j);
    return 0;
}

/* Has the runner in use, if any, forget arena ID (and a graph recorded on
 * it). An unmap that fails leaves the runner's mapping, not the judge's
 * memory. */
static void unshare(judge_trial *j, uint32_t id)
{
    kv_rfail f;
    kv_fail err = {0};
    if (j->rn) kv_runner_unmap(j->rn, id, 60, &f, &err);
    kv_fail_clear(&err);
    forgive_request_cpu(j);
}

/* On cuda (KV_CAP_ARENA_PARTS) the arenas shared with the runner are parts
 * of one device allocation, the slab, which the runner maps once: mapping
 * each arena of its own (cuIpcOpenMemHandle) and releasing it took 0.43 s
 * of a fast child's 2.35 s hold (bench/NOTES.md, 2026-12-02, commit fdfe785). Every byte of
 * a part is a canary before it is handed out, so nothing of an earlier
 * part is left in it; the judge's own arenas are never in the slab. */
static int parted(const judge_trial *j)
{
    /* Under memcheck every arena is its own allocation: an access past one
     * is then outside any allocation, which is what memcheck reports. */
    return kv_judge_can(j, KV_CAP_ARENA_PARTS) && j->rn != NULL && !j->ctx->memcheck;
}

#define PART_ALIGN ((size_t)2 << 20) /* a large page: parts never share one */

/* The bytes the runner's arenas need at most at once: the largest timing
 * layout (kv_judge_time_shape), or two correctness layouts (a trial that
 * moves its tensors holds the old arena while it makes the new), or the
 * clock's calibration, with one more correctness layout to spare. */
static size_t slab_bytes(const judge_trial *j)
{
    const kv_task *t = j->task;
    size_t timing = 2 * j->b->backend->calib_bytes, check = 0;
    for (int k = 0; k < t->num_scenarios + t->num_held_out; k++) {
        const kv_shape *sh =
            k < t->num_scenarios ? &t->scenarios[k] : &t->held_out[k - t->num_scenarios];
        layout l;
        kv_judge_layout(j, sh->syms, 1, 1, &l);
        if (l.bytes > check) check = l.bytes;
        if (k >= t->num_scenarios) continue;
        kv_judge_layout(j, sh->syms, kv_judge_timing_sets(j, sh->syms), 0, &l);
        if (l.bytes > timing) timing = l.bytes;
    }
    check = round_up(check, PART_ALIGN);
    timing = round_up(timing, PART_ALIGN);
    return (timing > 2 * check ? timing : 2 * check) + check;
}

/* A part of BYTES from the slab (made on first use), into *A, *MADE set;
 * *MADE 0 when none fits (the caller makes an arena of its own). The slab
 * counts as shared from the moment it is offered to the runner: one that
 * fails the map may have mapped it all the same, and the slab is then
 * checked when the runner stops. */
static int slab_part(judge_trial *j, size_t bytes, kv_arena *a, int *made)
{
    judge_device *dev = j->dev;
    kv_fail err = {0};
    *made = 0;
    if (dev->slab_refused) return 0;
    /* A long-lived judge's slab, kept from its last runner: mapped into this one. */
    if (dev->slab.bytes && !dev->slab_shared) {
        dev->slab_shared = 1;
        if (share(j, &dev->slab, NULL) != 0) return KV_JUDGE_FAILED;
    }
    if (!dev->slab.bytes) {
        if (j->b->arena_new(j->b, slab_bytes(j), KV_CANARY, &dev->slab, &err) != 0) {
            kv_fail_clear(&err); /* no room for it: arenas of their own, as before */
            arena_clear(&dev->slab);
            dev->slab_refused = 1;
            return 0;
        }
        dev->slab.id = ++dev->next_arena;
        dev->parts.total = dev->slab.bytes;
        dev->slab_shared = 1;
        if (share(j, &dev->slab, NULL) != 0) return KV_JUDGE_FAILED;
    }
    size_t at = 0;
    if (kv_parts_take(&dev->parts, round_up(bytes, PART_ALIGN), &at) != 0) return 0;
    *a = (kv_arena){.id = ++dev->next_arena,
                    .bytes = bytes,
                    .dptr = dev->slab.dptr + at,
                    .fd = -1,
                    .parent = dev->slab.id,
                    .parent_off = at};
    unsigned char canary = KV_CANARY;
    if (j->b->fill(j->b, a, 0, bytes, &canary, 1, &err) != 0 || j->b->sync(j->b, &err) != 0) {
        kv_parts_give(&dev->parts, at);
        arena_clear(a);
        return kv_judge_fail_err(j, &err, "a part of the tensors' arena");
    }
    *made = 1;
    return 0;
}

int kv_judge_arena_new(judge_trial *j, const layout *l, kv_arena *a)
{
    double t0 = kv_now_s();
    int made = 0;
    arena_clear(a);
    if (parted(j) && slab_part(j, l->bytes, a, &made) != 0) return KV_JUDGE_FAILED;
    if (made) {
        /* Known to the runner as a part of the slab, under its own id. */
        if (share(j, a, NULL) != 0) {
            kv_parts_give(&j->dev->parts, a->parent_off);
            arena_clear(a);
            return KV_JUDGE_FAILED;
        }
        kv_judge_check_lap(j, ALLOC_PART, &t0);
        return 0;
    }
    kv_fail err = {0};
    if (j->b->arena_new(j->b, l->bytes, KV_CANARY, a, &err) != 0) {
        arena_clear(a);
        return kv_judge_fail_err(j, &err, "allocating tensors");
    }
    note_live(j, a);
    kv_judge_check_lap(j, ALLOC_DEVICE, &t0);
    a->id = ++j->dev->next_arena;
    if (share(j, a, l) != 0) {
        forget_live(j, a);
        j->b->arena_free(j->b, a);
        arena_clear(a);
        return KV_JUDGE_FAILED;
    }
    kv_judge_check_lap(j, ALLOC_MAP, &t0);
    return 0;
}

int kv_judge_own_new(judge_trial *j, size_t bytes, kv_arena *a, const char *what)
{
    double t0 = kv_now_s();
    kv_fail err = {0};
    if (j->b->arena_new(j->b, bytes ? bytes : 64, 0, a, &err) != 0) {
        arena_clear(a);
        return kv_judge_fail_err(j, &err, what);
    }
    note_live(j, a);
    kv_judge_check_lap(j, ALLOC_OWN, &t0);
    return 0;
}

void kv_judge_own_free(judge_trial *j, kv_arena *a)
{
    double t0 = kv_now_s();
    if (a->bytes) {
        forget_live(j, a);
        j->b->arena_free(j->b, a);
        arena_clear(a);
    }
    kv_judge_check_lap(j, ALLOC_OWN, &t0);
}

int kv_judge_arena_free(judge_trial *j, kv_arena *a)
{
    if (!a->bytes) return 0;
    double t0 = kv_now_s();
    unshare(j, a->id);
    if (!a->parent) {
        forget_live(j, a);
        j->b->arena_free(j->b, a);
        arena_clear(a);
        kv_judge_check_lap(j, ALLOC_RELEASE, &t0);
        return 0;
    }
    int rc = 0;
    judge_device *dev = j->dev;
    if (a->parent == dev->slab.id) { /* not a part of a slab gone with its runner */
        /* Canaries again: outside the parts in use, every byte of the slab
         * is one (slab_scrub counts those that are not). */
        kv_fail err = {0};
        unsigned char canary = KV_CANARY;
        if (j->b->fill(j->b, a, 0, a->bytes, &canary, 1, &err) != 0)
            rc = kv_judge_fail_err(j, &err, "a part of the tensors' arena");
        kv_parts_give(&dev->parts, a->parent_off);
    }
    arena_clear(a);
    kv_judge_check_lap(j, ALLOC_PART, &t0);
    return rc;
}

/* The slab after its runner stopped: the bytes outside the parts in use
 * that are not canaries (the runner wrote where it was given nothing)
 * into *STRAY; then, where REFILL (a long-lived judge keeps it), every
 * byte a canary again, so that nothing the runner left there reaches the
 * next child. */
static int slab_scrub(judge_trial *j, int refill, size_t *stray)
{
    judge_device *dev = j->dev;
    const kv_parts *p = &dev->parts;
    size_t off[KV_PARTS_MAX + 1], len[KV_PARTS_MAX + 1], at = 0, first = 0;
    int n = 0;
    for (int i = 0; i < p->n; i++) { /* the gaps between the parts in use, in order */
        off[n] = at;
        len[n++] = p->off[i] - at;
        at = p->off[i] + p->len[i];
    }
    off[n] = at;
    len[n++] = p->total - at;
    kv_fail err = {0};
    unsigned char canary = KV_CANARY;
    if (j->b->count_spans(j->b, &dev->slab, off, len, n, KV_CANARY, stray, &first, &err) != 0 ||
        (refill && (*stray || p->n) &&
         j->b->fill(j->b, &dev->slab, 0, dev->slab.bytes, &canary, 1, &err) != 0) ||
        j->b->sync(j->b, &err) != 0)
        return kv_judge_fail_err(j, &err, "the tensors' arena after the runner");
    return 0;
}

int kv_judge_arena_drop_slab(judge_trial *j, size_t *stray)
{
    judge_device *dev = j->dev;
    double t0 = kv_now_s();
    int rc = 0;
    *stray = 0;
    if (dev->slab.bytes && dev->slab_shared && slab_scrub(j, dev->long_lived, stray) != 0) {
        dev->doubt = 1; /* what the runner left there may still be there */
        rc = KV_JUDGE_FAILED;
    }
    dev->slab_shared = 0;
    if (dev->long_lived &&
        dev->slab.bytes) { /* kept: every part free, mapped into the next runner */
        kv_parts_reset(&dev->parts);
        /* A new id: a part the stopped runner was given is no part of it. */
        dev->slab.id = ++dev->next_arena;
        kv_judge_check_lap(j, ALLOC_RELEASE, &t0);
        return rc;
    }
    if (dev->slab.bytes) j->b->arena_free(j->b, &dev->slab);
    arena_clear(&dev->slab);
    memset(&dev->parts, 0, sizeof dev->parts);
    kv_judge_check_lap(j, ALLOC_RELEASE, &t0);
    *stray = 0;
    return rc;
}

/* *INTACT 1 when the N bytes at OFF of A are all canaries. BUF: scratch. */
static int canaries_intact(judge_trial *j, kv_arena *a, size_t off, size_t n, unsigned char **buf,
                           size_t *cap, int *intact)
{
    *intact = 1;
    if (n == 0) return 0;
    if (*cap < n) {
        *buf = kv_realloc(*buf, n);
        *cap = n;
    }
    kv_fail err = {0};
    if (j->b->read(j->b, a, off, *buf, n, &err) != 0)
        return kv_judge_fail_err(j, &err, "reading canaries");
    for (size_t i = 0; i < n && *intact; i++)
        if ((*buf)[i] != KV_CANARY) *intact = 0;
    return 0;
}

/* The first tensor of A whose canaries are damaged into *HIT, or -1: every
 * span in one pass where the backend counts them where they are, else read
 * back. */
static int damaged_canaries(judge_trial *j, kv_arena *a, const layout *l, int *hit)
{
    const kv_task *t = j->task;
    *hit = -1;
    if (j->b->count_spans) {
        size_t off[2 * KV_MAX_TENSORS], len[2 * KV_MAX_TENSORS], bad = 0, first = 0;
        int n = 0;
        for (int i = 0; i < t->num_tensors; i++)
            for (int k = 0; k < 2; k++) {
                off[n] = l->canary_off[i][k];
                len[n++] = l->canary_len[i][k];
            }
        kv_fail err = {0};
        if (j->b->count_spans(j->b, a, off, len, n, KV_CANARY, &bad, &first, &err) != 0)
            return kv_judge_fail_err(j, &err, "checking canaries");
        *hit = bad ? (int)(first / 2) : -1;
        return 0;
    }
    unsigned char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (int i = 0; i < t->num_tensors && *hit < 0 && rc == 0; i++)
        for (int k = 0; k < 2 && *hit < 0 && rc == 0; k++) {
            int intact = 1;
            rc = canaries_intact(j, a, l->canary_off[i][k], l->canary_len[i][k], &buf, &cap,
                                 &intact);
            if (!intact) *hit = i;
        }
    free(buf);
    return rc;
}

int kv_judge_check_canaries(judge_trial *j, const shape_data *d, kv_arena *a, const layout *l)
{
    int i = -1;
    if (damaged_canaries(j, a, l, &i) != 0) return KV_JUDGE_FAILED;
    if (i < 0) return 0;
    const char *name = j->task->tensors[i].name;
    if (d)
        return kv_judge_fail_shape(j, d, KV_R_OUT_OF_BOUNDS_WRITE,
                                   "bytes next to tensor %s were overwritten (canary damaged)",
                                   name);
    return kv_judge_fail(j, KV_R_OUT_OF_BOUNDS_WRITE,
                         "bytes next to tensor %s were overwritten (canary damaged)", name);
}

void kv_judge_block(const judge_trial *j, const kv_arena *a, const layout *l, const int64_t *syms,
                    uint32_t first, uint32_t ncalls, kv_rmsg_run *m)
{
    const kv_task *t = j->task;
    memset(m, 0, sizeof *m);
    m->arena = a->id;
    /* The task's own tensors only: in-out tensors' copies stay the judge's. */
    m->num_tensors = (uint32_t)j->visible;
    m->num_syms = (uint32_t)t->num_syms;
    m->ncalls = ncalls;
    m->first_set = first;
    m->num_sets = (uint32_t)l->nsets;
    for (int i = 0; i < j->visible; i++) {
        m->offset[i] = l->off[i];
        m->stride[i] = l->stride[i];
        m->bytes[i] = l->len[i];
        m->is_output[i] = t->tensors[i].role == KV_OUT;
    }
    for (int i = 0; i < t->num_syms; i++)
        m->syms[i] = syms[i];
}
