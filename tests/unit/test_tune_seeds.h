/* Shared by the tests of CUDA seeds that declare tune axes
 * (test_gqa_seeds.c, test_kernel_qwen3.c): every axis sits at one of its
 * own listed values, and a seed's text with every `#define NAME V //
 * kevolve: tune ...` axis moved to its first or last value, for compiling
 * it at both ends of its space. Include after cmocka.h. */
#ifndef KV_TEST_TUNE_SEEDS_H
#define KV_TEST_TUNE_SEEDS_H

#include "mutate/mutator.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

/* Fails unless SRC (named WHAT) declares at least MIN axes, each at one of
 * its own values. */
static void assert_axes_at_listed_values(const char *what, const char *src, size_t min)
{
    json_t *params = kv_tune_parameters(src);
    if (!params || json_array_size(params) < min)
        fail_msg("%s declares fewer than %zu tune axes", what, min);
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p)
    {
        const char *value = json_string_value(json_object_get(p, "value"));
        int listed = 0;
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(p, "choices"), k, c) listed |=
            value && json_string_value(c) && strcmp(value, json_string_value(c)) == 0;
        if (!listed)
            fail_msg("%s: axis %s is at %s, not one of its values", what,
                     json_string_value(json_object_get(p, "name")), value ? value : "?");
    }
    json_decref(params);
}

/* SRC with every `#define NAME V // kevolve: tune ...` axis set to the
 * last value it lists (LAST), else the first (malloc'd). */
static char *tune_corner(const char *src, int last)
{
    json_t *params = kv_tune_parameters(src);
    assert_non_null(params);
    char *out = kv_strdup(src);
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        json_t *choices = json_object_get(p, "choices");
        size_t n = json_array_size(choices);
        const char *v = json_string_value(json_array_get(choices, last && n ? n - 1 : 0));
        char *pat = kv_asprintf("\n#define %s ", name);
        const char *at = strstr(out, pat);
        if (!at || !v) fail_msg("axis %s is not a #define with listed values", name);
        at += strlen(pat);
        size_t old = strcspn(at, " \t");
        kv_buf b = KV_BUF_INIT;
        kv_buf_printf(&b, "%.*s%s%s", (int)(at - out), out, v, at + old);
        free(out);
        out = kv_buf_steal(&b);
        free(pat);
    }
    json_decref(params);
    return out;
}

#endif
