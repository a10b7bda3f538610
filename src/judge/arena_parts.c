/* First-fit parts of one allocation (see arena_parts.h). */
#include "judge/arena_parts.h"

#include <string.h>

int kv_parts_take(kv_parts *p, size_t len, size_t *at)
{
    if (p->n == KV_PARTS_MAX || len == 0) return -1;
    size_t end = 0; /* where the gap before part k starts */
    int k = 0;
    for (; k < p->n && p->off[k] - end < len; k++)
        end = p->off[k] + p->len[k];
    if (end > p->total || p->total - end < len) return -1;
    memmove(&p->off[k + 1], &p->off[k], (size_t)(p->n - k) * sizeof p->off[0]);
    memmove(&p->len[k + 1], &p->len[k], (size_t)(p->n - k) * sizeof p->len[0]);
    p->off[k] = end;
    p->len[k] = len;
    p->n++;
    *at = end;
    return 0;
}

void kv_parts_give(kv_parts *p, size_t at)
{
    for (int k = 0; k < p->n; k++) {
        if (p->off[k] != at) continue;
        memmove(&p->off[k], &p->off[k + 1], (size_t)(p->n - k - 1) * sizeof p->off[0]);
        memmove(&p->len[k], &p->len[k + 1], (size_t)(p->n - k - 1) * sizeof p->len[0]);
        p->n--;
        return;
    }
}

void kv_parts_reset(kv_parts *p)
{
    p->n = 0;
}
