/* Device health checks (see device_check.h). */
#include "judge/device_check.h"
#include "backend/backend.h"
#include "judge/judge_verdict.h"
#include "judge/worker.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

__attribute__((weak)) const char *kv_device_fault(const char *backend, int index)
{
    (void)backend;
    (void)index;
    return NULL;
}

__attribute__((weak)) int kv_energy_fault(const char *backend, int index, double *j)
{
    (void)backend;
    (void)index;
    (void)j;
    return -1;
}

__attribute__((weak)) const char *kv_device_error_fault(const char *backend, int index)
{
    (void)backend;
    (void)index;
    return NULL;
}

typedef struct check_ctx {
    const kv_backend *b;
    int index;
} check_ctx;

/* Opens D, round-trips a pattern through an arena, and asks whether it
 * needs a reset or reported errors; why not fit into V. */
static int check_jdev(const check_ctx *c, kv_jdev *d, kv_verdict *v)
{
    kv_fail err = {0};
    if (d->open(d, &err) != 0) {
        int rc = kv_verdict_set(v, KV_R_NO_DEVICE, "opening it: %s", kv_fail_detail(&err));
        kv_fail_clear(&err);
        return rc;
    }
    enum { BYTES = 1 << 20 };
    unsigned char *out = malloc(BYTES), *back = malloc(BYTES);
    kv_arena a = {0};
    int rc = 0;
    if (!out || !back) rc = kv_verdict_set(v, KV_R_HARNESS_ERROR, "out of host memory");
    for (size_t i = 0; rc == 0 && i < BYTES; i++)
        out[i] = (unsigned char)(i * 131u + 7u);
    if (rc == 0 &&
        (d->arena_new(d, BYTES, 0xc3, &a, &err) != 0 || d->write(d, &a, 0, out, BYTES, &err) != 0 ||
         d->sync(d, &err) != 0 || d->read(d, &a, 0, back, BYTES, &err) != 0))
        rc = kv_verdict_set(v, KV_R_NO_DEVICE, "a 1 MiB round trip: %s",
                            err.detail ? err.detail : "failed");
    if (rc == 0 && memcmp(out, back, BYTES) != 0)
        rc = kv_verdict_set(v, KV_R_NO_DEVICE, "a 1 MiB round trip came back changed");
    /* A device that works but needs a reset (a pending row remapping) or
     * reports errors while checked is not fit for more work either. */
    const char *injected = rc == 0 ? kv_device_error_fault(c->b->name, c->index) : NULL;
    char *reset = rc == 0 && d->needs_reset ? d->needs_reset(d) : NULL;
    if (injected || reset) rc = kv_verdict_set(v, KV_R_NO_DEVICE, "%s", reset ? reset : injected);
    json_t *errors = rc == 0 && d->device_errors ? d->device_errors(d) : NULL;
    if (errors)
        rc = kv_verdict_set(v, KV_R_NO_DEVICE, "it reported %s while checked",
                            json_string_value(json_array_get(errors, 0)));
    if (errors) json_decref(errors);
    free(reset);
    kv_fail_clear(&err);
    if (rc == 0) d->arena_free(d, &a);
    free(out);
    free(back);
    return rc;
}

/* Worker entry: checks the device CTX names; its result, or why it is not
 * fit. */
static void check_main(void *arg)
{
    const check_ctx *c = arg;
    kv_verdict v = {0};
    char *err = NULL;
    const char *fault = kv_device_fault(c->b->name, c->index);
    kv_jdev *d = fault ? NULL : kv_jdev_new(c->b, c->index, &err);
    int rc = fault ? kv_verdict_set(&v, KV_R_NO_DEVICE, "%s", fault)
             : !d  ? kv_verdict_set(&v, KV_R_NOT_BUILT, "%s", err)
                   : check_jdev(c, d, &v);
    free(err);
    if (rc != 0) {
        /* The child ends here: a device that failed is not closed. */
        kv_worker_failure(v.code, v.arg, NULL, "%s", v.detail);
        kv_verdict_clear(&v);
        return;
    }
    kv_jdev_free(d);
    json_t *res = json_pack("{s:b}", "ok", 1);
    kv_worker_result(res);
    json_decref(res);
}

int kv_kernel_check_device(const char *backend, int index, char **err)
{
    const kv_backend *b = kv_backend_find(backend);
    if (!b) {
        *err = kv_asprintf("unknown backend '%s' (%s)", backend ? backend : "", kv_backend_names());
        return -1;
    }
    check_ctx c = {.b = b, .index = index};
    kv_worker_outcome w;
    if (kv_worker_run(check_main, &c, 60, &w, err) != 0) return -1;
    int rc = 0;
    if (!w.result) {
        *err = w.fail_detail ? kv_strdup(w.fail_detail)
               : w.timed_out ? kv_strdup("the check did not end within 60 s")
                             : kv_asprintf("the check died (%s %d)",
                                           w.signal ? kv_worker_signal_name(w.signal) : "exit",
                                           w.signal ? 0 : w.exit_code);
        rc = -1;
    }
    kv_worker_outcome_clear(&w);
    return rc;
}
