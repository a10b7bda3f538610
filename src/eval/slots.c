/* Device slots (see slots.h): a slot per device and a line of askers. */
#include "eval/slots.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

typedef struct slot {
    int device;
    int64_t holder; /* the evaluation holding it */
    int busy;
    uint64_t granted; /* when it was last handed out (the grant's number), 0: never */
    int out;          /* taken out of rotation: never handed out again */
} slot;

/* An evaluation bound to a device: it prepares there (contexts, its
 * runner) before it asks, and then waits for that device alone. */
typedef struct binding {
    int64_t ticket;
    int device;
} binding;

struct kv_slots {
    slot *slots;
    size_t n;
    binding *bound;
    size_t n_bound, cap_bound;
    int64_t *line; /* tickets waiting, oldest first */
    size_t n_line, cap_line;
    uint64_t grants; /* handed out so far */
};

kv_slots *kv_slots_new(const int *devices, size_t n)
{
    kv_slots *s = kv_calloc(1, sizeof *s);
    s->slots = kv_calloc(n ? n : 1, sizeof *s->slots);
    s->n = n;
    for (size_t i = 0; i < n; i++)
        s->slots[i].device = devices[i];
    return s;
}

void kv_slots_free(kv_slots *s)
{
    if (!s) return;
    free(s->slots);
    free(s->line);
    free(s->bound);
    free(s);
}

void kv_slots_ask(kv_slots *s, int64_t ticket)
{
    if (kv_slots_held(s, ticket) >= 0) return;
    for (size_t i = 0; i < s->n_line; i++)
        if (s->line[i] == ticket) return;
    if (s->n_line == s->cap_line) {
        s->cap_line = s->cap_line ? 2 * s->cap_line : 8;
        s->line = kv_realloc(s->line, s->cap_line * sizeof *s->line);
    }
    s->line[s->n_line++] = ticket;
}

static slot *slot_of(kv_slots *s, int device)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->slots[i].device == device) return &s->slots[i];
    return NULL;
}

int kv_slots_bound(const kv_slots *s, int64_t ticket)
{
    for (size_t i = 0; i < s->n_bound; i++)
        if (s->bound[i].ticket == ticket) return s->bound[i].device;
    return -1;
}

int kv_slots_bind(kv_slots *s, int64_t ticket)
{
    int have = kv_slots_bound(s, ticket);
    if (have >= 0) return have;
    /* The device in rotation with the fewest evaluations bound to it; of
     * those, the one that waited longest for work. */
    slot *pick = NULL;
    size_t pick_n = 0;
    for (size_t i = 0; i < s->n; i++) {
        slot *sl = &s->slots[i];
        if (sl->out) continue;
        size_t n = 0;
        for (size_t k = 0; k < s->n_bound; k++)
            n += s->bound[k].device == sl->device;
        if (!pick || n < pick_n || (n == pick_n && sl->granted < pick->granted)) {
            pick = sl;
            pick_n = n;
        }
    }
    if (!pick) return -1;
    if (s->n_bound == s->cap_bound) {
        s->cap_bound = s->cap_bound ? 2 * s->cap_bound : 8;
        s->bound = kv_realloc(s->bound, s->cap_bound * sizeof *s->bound);
    }
    s->bound[s->n_bound++] = (binding){ticket, pick->device};
    return pick->device;
}

int kv_slots_release(kv_slots *s, int64_t ticket)
{
    for (size_t i = 0; i < s->n_bound; i++)
        if (s->bound[i].ticket == ticket) {
            s->bound[i] = s->bound[--s->n_bound];
            break;
        }
    for (size_t i = 0; i < s->n_line; i++)
        if (s->line[i] == ticket) {
            memmove(s->line + i, s->line + i + 1, (s->n_line - i - 1) * sizeof *s->line);
            s->n_line--;
            break;
        }
    for (size_t i = 0; i < s->n; i++)
        if (s->slots[i].busy && s->slots[i].holder == ticket) {
            s->slots[i].busy = 0;
            return 1;
        }
    return 0;
}

int kv_slots_grant(kv_slots *s, int64_t *ticket, int *device)
{
    /* In line order; one bound to a busy device lets those after it go. */
    for (size_t li = 0; li < s->n_line; li++) {
        int want = kv_slots_bound(s, s->line[li]);
        slot *pick = NULL, *mine = want >= 0 ? slot_of(s, want) : NULL;
        if (mine && !mine->out) {
            pick = mine->busy ? NULL : mine;
        } else {
            /* Unbound (or its device out of rotation): the free device that
             * waited longest, so that every device gets work (and its own
             * baseline) early, and the work spreads evenly over them. */
            for (size_t i = 0; i < s->n; i++)
                if (!s->slots[i].busy && !s->slots[i].out &&
                    (!pick || s->slots[i].granted < pick->granted))
                    pick = &s->slots[i];
        }
        if (!pick) continue;
        pick->busy = 1;
        pick->holder = s->line[li];
        pick->granted = ++s->grants;
        *ticket = s->line[li];
        *device = pick->device;
        memmove(s->line + li, s->line + li + 1, (s->n_line - li - 1) * sizeof *s->line);
        s->n_line--;
        return 1;
    }
    return 0;
}

int kv_slots_held(const kv_slots *s, int64_t ticket)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->slots[i].busy && s->slots[i].holder == ticket) return s->slots[i].device;
    return -1;
}

size_t kv_slots_busy(const kv_slots *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->slots[i].busy;
    return n;
}

size_t kv_slots_waiting(const kv_slots *s)
{
    return s->n_line;
}

size_t kv_slots_in_rotation(const kv_slots *s)
{
    size_t left = 0;
    for (size_t i = 0; s && i < s->n; i++)
        left += !s->slots[i].out;
    return left;
}

size_t kv_slots_take_out(kv_slots *s, int device)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->slots[i].device == device) s->slots[i].out = 1;
    return kv_slots_in_rotation(s);
}
