/* The device's state, apart from any child (see judge_device.h). */
#include "judge/judge_device.h"
#include "judge/device_check.h"
#include "judge/worker.h"
#include "util/buf.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

void kv_judge_device_init(judge_device *d, int long_lived)
{
    memset(d, 0, sizeof *d);
    d->long_lived = long_lived;
    d->slab.fd = -1;
}

/* Loads the task's device reference C into D (cuda). */
static int load_reference(judge_device *d, const kv_judge_code *c, kv_verdict *v)
{
    d->ref_so = dlopen(c->lib_path, RTLD_NOW | RTLD_LOCAL);
    void *sym = d->ref_so ? dlsym(d->ref_so, "kv_launch") : NULL;
    if (!sym)
        return kv_verdict_set(v, KV_R_HARNESS_ERROR,
                              "the task's device reference does not load: %s", dlerror());
    memcpy(&d->ref, &sym, sizeof sym);
    return 0;
}

int kv_judge_device_open(judge_device *d, const kv_judge_ctx *ctx, kv_verdict *v)
{
    if (d->opened) return 0;
    char *err = NULL;
    kv_fail ferr = {0};
    kv_worker_phase("opening the %s device %d", ctx->backend->name, ctx->device);
    const char *fault = kv_device_fault(ctx->backend->name, ctx->device);
    if (fault) return kv_verdict_set(v, KV_R_NO_DEVICE, "%s", fault);
    d->b = kv_jdev_new(ctx->backend, ctx->device, &err);
    if (!d->b) {
        int rc = kv_verdict_set(v, KV_R_NOT_BUILT, "%s", err);
        free(err);
        return rc;
    }
    /* The device's own copy: a long-lived judge outlives this job's files' names. */
    d->helpers = ctx->helpers ? kv_strdup(ctx->helpers->lib_path) : NULL;
    d->b->helpers = d->helpers;
    if (d->b->open(d->b, &ferr) != 0) {
        /* A device that does not open is no device, whatever the driver's
         * error (named in the detail); the harness's own mistakes stay its. */
        kv_fail_recode(&ferr, KV_R_NO_DEVICE);
        int rc = kv_verdict_set(v, ferr.code, "%s", kv_fail_detail(&ferr));
        kv_fail_clear(&ferr);
        return rc; /* the judge ends: nothing of D is used again */
    }
    if (ctx->ref && load_reference(d, ctx->ref, v) != 0) return KV_JUDGE_FAILED;
    d->opened = 1;
    return 0;
}

void kv_judge_device_free(judge_device *d)
{
    if (d->b) {
        if (d->slab.bytes) d->b->arena_free(d->b, &d->slab);
        kv_jdev_free(d->b);
    }
    if (d->ref_so) dlclose(d->ref_so);
    free(d->helpers);
    kv_judge_device_init(d, d->long_lived);
}
