/* Shared by the opencl harness tests (one cmocka program each): evaluating
 * a candidate on the softmax task, reading the verdict, and the group setup
 * that finds an OpenCL device (or says why the tests skip). Each includer
 * defines g_cache, its cache directory template, before including this. */
#ifndef KV_TEST_KERNEL_OPENCL_H
#define KV_TEST_KERNEL_OPENCL_H

#include "kernel/harness.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_have_opencl;

/* Evaluates REL (relative to the source tree) on opencl; asserts it was judged. */
static inline json_t *eval_rel(const char *rel, int stage)
{
    const char *root = getenv("KV_SOURCE_DIR");
    char *path = rel[0] == '/' ? kv_strdup(rel) : kv_asprintf("%s/%s", root ? root : ".", rel);
    kv_job o;
    kv_job_init(&o);
    o.self_exe = getenv("KV_BINARY"); /* the runners re-execute kevolve, not this test */
    o.task = "softmax";
    o.backend = "opencl";
    o.candidate = path;
    o.quick = 1;
    o.stage = stage;
    o.cache_dir = g_cache;
    o.limits.call_s = 3;
    json_t *res = NULL;
    char *err = NULL;
    if (kv_kernel_eval(&o, &res, &err) != 0) fail_msg("%s: harness failed: %s", rel, err);
    free(path);
    return res;
}

static inline const char *reason(json_t *res)
{
    const char *r = json_string_value(json_object_get(json_object_get(res, "artifacts"), "reason"));
    return r ? r : "accepted";
}

static inline const char *detail(json_t *res)
{
    const char *d =
        json_string_value(json_object_get(json_object_get(res, "artifacts"), "reason_detail"));
    return d ? d : "";
}

static int setup(void **state)
{
    (void)state;
    json_t *info = NULL;
    char *err = NULL;
    g_have_opencl = kv_kernel_devices("opencl", &info, &err) == 0;
    if (!g_have_opencl) fprintf(stderr, "SKIP: no OpenCL device: %s\n", err);
    free(err);
    if (info) json_decref(info);
    return mkdtemp(g_cache) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    kv_remove_tree(g_cache);
    return 0;
}

#endif
