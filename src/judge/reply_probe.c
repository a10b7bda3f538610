/* Was the device idle at the runner's reply (see reply_probe.h). */
#include "judge/reply_probe.h"

/* From the reply to the copies done, on an idle H200: 147-277 us, median
 * 165 (the GPU switching from the runner's context to the judge's; the
 * copies themselves take about 10 us; bench/NOTES.md, 2026-12-02). Work
 * left running at the reply delays the copies by its own length, so what
 * could hide under the limit (about 280 us there) is about 130 us a
 * block: a few percent of the shortest blocks, where the judge before it
 * saw none of what finished before its copy ran. */
#define PROBE_FLOOR_S 250e-6

double kv_reply_probe_limit(double copy_s, double per_byte_s, size_t bytes)
{
    double c = copy_s > 0 ? copy_s : 0, b = per_byte_s > 0 ? per_byte_s : 0;
    return PROBE_FLOOR_S + 3.0 * c + 2.0 * (double)bytes * b;
}

int kv_reply_was_idle(double waited_s, double copy_s, double per_byte_s, size_t bytes)
{
    return waited_s >= 0 && waited_s <= kv_reply_probe_limit(copy_s, per_byte_s, bytes);
}
