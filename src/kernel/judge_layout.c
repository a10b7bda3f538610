/* Arenas: where a shape's tensors lie, their canaries, and their sharing
 * with the runner (see judge_internal.h). */
#include "kernel/judge_internal.h"
#include "kernel/dtype.h"
#include "kernel/tasks.h"
#include "kernel/worker.h"
#include "util/buf.h"

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

void kv_judge_layout(const judge *j, const int64_t *syms, size_t nsets, int one_set_guarded,
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

/* The runner's CPU for a request of the judge's own (mapping or unmapping
 * an arena: unmapping the long decode's 130 MB takes milliseconds of kernel
 * time) is not the candidate's work between calls: the idle check counts
 * from its reply. No block's inputs exist while such a request runs. */
static void forgive_request_cpu(judge *j)
{
    if (j->rn) j->idle_cpu = kv_runner_cpu_seconds(j->rn);
}

/* On cuda, arenas given back are kept for the next (a device allocation
 * and the runner's mapping of it cost milliseconds each, and an evaluation
 * makes about five a scenario); every byte is a canary again before reuse,
 * so nothing of an earlier scenario is left in it. Not where an arena's
 * mapping depends on its layout (cpu: page guards; opencl: the runner's
 * device buffers per tensor, made on first use and freed with the arena). */
static int pooled(const judge *j)
{
    return kv_judge_can(j, KV_CAP_DEVICE_INPUTS) && j->rn != NULL;
}

/* A kept arena of at least BYTES (and not four times more), into *A. */
static int from_pool(judge *j, size_t bytes, kv_arena *a)
{
    int best = -1;
    for (int i = 0; i < j->npool; i++)
        if (j->pool[i].bytes >= bytes && j->pool[i].bytes <= 4 * bytes + (64u << 20) &&
            (best < 0 || j->pool[i].bytes < j->pool[best].bytes))
            best = i;
    if (best < 0) return 0;
    *a = j->pool[best];
    j->pool[best] = j->pool[--j->npool];
    char *err = NULL;
    unsigned char canary = KV_CANARY;
    if (j->b->fill(j->b, a, 0, a->bytes, &canary, 1, &err) != 0 || j->b->sync(j->b, &err) != 0)
        kv_judge_fail_err(j, err, "reusing an arena");
    return 1;
}

void kv_judge_arena_new(judge *j, const layout *l, kv_arena *a)
{
    if (pooled(j) && from_pool(j, l->bytes, a)) return;
    char *err = NULL;
    if (j->b->arena_new(j->b, l->bytes, KV_CANARY, a, &err) != 0)
        kv_judge_fail_err(j, err, "allocating tensors");
    a->id = ++j->next_arena;
    kv_rfail f;
    int rc = kv_runner_map(j->rn, a, l->guards, l->nguards, 60, &f, &err);
    if (rc < 0) kv_judge_fail_err(j, err, "sharing tensors");
    if (rc > 0) kv_judge_fail_runner(j, &f, "sharing tensors");
    forgive_request_cpu(j);
}

/* Unmaps A from the runner (when one is in use) and frees it. */
static void arena_release(judge *j, kv_arena *a)
{
    kv_rfail f;
    char *err = NULL;
    /* An unmap that fails leaves the runner's mapping, not the judge's memory. */
    if (j->rn) kv_runner_unmap(j->rn, a->id, 60, &f, &err);
    free(err);
    j->b->arena_free(j->b, a);
    forgive_request_cpu(j);
}

void kv_judge_arena_free(judge *j, kv_arena *a)
{
    if (!a->bytes) return;
    if (pooled(j) && j->npool < KV_JUDGE_POOL) {
        j->pool[j->npool++] = *a;
        memset(a, 0, sizeof *a);
        a->fd = -1;
        return;
    }
    arena_release(j, a);
}

void kv_judge_arena_pool_drain(judge *j)
{
    /* The runner stops next: its mappings go with it. */
    while (j->npool > 0)
        j->b->arena_free(j->b, &j->pool[--j->npool]);
}

/* 1 when the N bytes at OFF of A are all canaries. BUF: scratch. */
static int canaries_intact(judge *j, kv_arena *a, size_t off, size_t n, unsigned char **buf,
                           size_t *cap)
{
    if (n == 0) return 1;
    if (*cap < n) {
        *buf = kv_realloc(*buf, n);
        *cap = n;
    }
    char *err = NULL;
    if (j->b->read(j->b, a, off, *buf, n, &err) != 0) kv_judge_fail_err(j, err, "reading canaries");
    for (size_t i = 0; i < n; i++)
        if ((*buf)[i] != KV_CANARY) return 0;
    return 1;
}

void kv_judge_check_canaries(judge *j, const shape_data *d, kv_arena *a, const layout *l)
{
    const kv_task *t = j->task;
    unsigned char *buf = NULL;
    size_t cap = 0;
    for (int i = 0; i < t->num_tensors; i++) {
        int ok = 1;
        for (int k = 0; k < 2 && ok; k++)
            ok = canaries_intact(j, a, l->canary_off[i][k], l->canary_len[i][k], &buf, &cap);
        if (ok) continue;
        free(buf);
        if (d)
            kv_judge_fail_shape(j, d, "out_of_bounds_write",
                                "bytes next to tensor %s were overwritten (canary damaged)",
                                t->tensors[i].name);
        kv_judge_fail(j, "out_of_bounds_write",
                      "bytes next to tensor %s were overwritten (canary damaged)",
                      t->tensors[i].name);
    }
    free(buf);
}

void kv_judge_block(const judge *j, const kv_arena *a, const layout *l, const int64_t *syms,
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
