/* A worker's judge (see judge.h): a long-lived judge's path with one
 * child, on a device state of its own (judge_child.h). */
#include "judge/judge.h"
#include "judge/judge_child.h"

void kv_judge_main(void *ctx)
{
    judge_device dev;
    kv_judge_device_init(&dev, 0);
    kv_judge_child child = {.ctx = ctx};
    kv_judge_child_run(&dev, &child);
    /* The child exits right after: its device's context goes with it, and
     * the worker, which reads until the child's end, waits for no close. */
}
