/* Tests of eval/eval_output's messages: an evaluator's output that cannot
 * be read is named for what is wrong with it (over the cap, not UTF-8, a
 * NUL byte), not as "not JSON"; output that reads well is unaffected, and
 * so are numbers beyond a double's range (1e999). */
#include "eval/eval_output.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Parses LEN bytes of TEXT with DROPPED more cut at CAP; returns the outcome
 * and the reason in *REASON (malloc'd or NULL). */
static int parse(const char *text, size_t len, size_t dropped, size_t cap, char **reason)
{
    json_t *m = NULL, *a = NULL;
    int rc = kv_eval_parse_output_full(text, len, dropped, cap, &m, &a, reason);
    json_decref(m);
    json_decref(a);
    return rc;
}

static void good_output_is_read_whatever_the_cap(void **state)
{
    (void)state;
    const char *t = "{\"metrics\": {\"combined_score\": 2}}";
    char *why = NULL;
    assert_int_equal(parse(t, strlen(t), 0, 4 << 20, &why), KV_EVAL_OUTPUT_OK);
    assert_null(why);
    /* Cut, but the JSON came first and whole: still read. */
    assert_int_equal(parse(t, strlen(t), 1000, 4 << 20, &why), KV_EVAL_OUTPUT_OK);
    assert_null(why);
}

static void output_cut_at_the_cap_says_over_the_cap(void **state)
{
    (void)state;
    const char *t = "{\"metrics\": {\"combined_score\": 2}, \"artifacts\": {\"log\": \"xxxx";
    char *why = NULL;
    assert_int_equal(parse(t, strlen(t), (size_t)3 << 20, (size_t)4 << 20, &why),
                     KV_EVAL_OUTPUT_BAD);
    assert_non_null(strstr(why, "over the 4 MiB cap"));
    assert_null(strstr(why, "not JSON"));
    free(why);
}

static void invalid_utf8_in_a_string_is_named_with_its_byte_and_offset(void **state)
{
    (void)state;
    const char *t = "{\"metrics\": {\"combined_score\": 1}, \"artifacts\": {\"log\": \"caf\xe9\"}}";
    char *why = NULL;
    assert_int_equal(parse(t, strlen(t), 0, 4 << 20, &why), KV_EVAL_OUTPUT_BAD);
    size_t at = (size_t)(strchr(t, '\xe9') - t);
    char want[64];
    snprintf(want, sizeof want, "not valid UTF-8 (byte 0xe9 at offset %zu)", at);
    assert_non_null(strstr(why, want));
    free(why);
}

static void a_nul_byte_is_named(void **state)
{
    (void)state;
    const char t[] = "{\"metrics\": {\"combined_score\": 1}\0}";
    char *why = NULL;
    assert_int_equal(parse(t, sizeof t - 1, 0, 4 << 20, &why), KV_EVAL_OUTPUT_BAD);
    assert_non_null(strstr(why, "NUL byte at offset 33"));
    free(why);
}

static void plain_garbage_is_still_not_json(void **state)
{
    (void)state;
    const char *t = "Traceback (most recent call last):\n  oops\n";
    char *why = NULL;
    assert_int_equal(parse(t, strlen(t), 0, 4 << 20, &why), KV_EVAL_OUTPUT_BAD);
    assert_non_null(strstr(why, "not JSON"));
    free(why);
}

/* 1e999 is JSON (any magnitude is), beyond a double: read as a non-finite
 * value (null), like Python's Infinity, never as "not JSON". */
static void numbers_beyond_a_double_read_as_null(void **state)
{
    (void)state;
    const char *t = "{\"metrics\": {\"combined_score\": 1e999, \"low\": -2.5E+400, "
                    "\"tiny\": 1e-999, \"ok\": 1.5e3, \"text\": \"1e999\"}}";
    json_t *m = NULL, *a = NULL;
    char *why = NULL;
    assert_int_equal(kv_eval_parse_output_full(t, strlen(t), 0, 4 << 20, &m, &a, &why),
                     KV_EVAL_OUTPUT_OK);
    assert_null(why);
    assert_true(json_is_null(json_object_get(m, "combined_score")));
    assert_true(json_is_null(json_object_get(m, "low")));
    assert_true(json_is_number(json_object_get(m, "tiny")));
    assert_true(json_number_value(json_object_get(m, "ok")) == 1500.0);
    assert_string_equal(json_string_value(json_object_get(m, "text")), "1e999");
    json_decref(m);
    json_decref(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_output_is_read_whatever_the_cap),
        cmocka_unit_test(output_cut_at_the_cap_says_over_the_cap),
        cmocka_unit_test(invalid_utf8_in_a_string_is_named_with_its_byte_and_offset),
        cmocka_unit_test(a_nul_byte_is_named),
        cmocka_unit_test(plain_garbage_is_still_not_json),
        cmocka_unit_test(numbers_beyond_a_double_read_as_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
