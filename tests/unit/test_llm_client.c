/* The LLM client under injected faults: every fault a real endpoint shows
 * (rate limits, server errors, slow, cut-off, non-JSON, empty replies, reset
 * connections, a bad key) ends in a success after retries or in a clear
 * final error, and is counted in the result. Runs against
 * tests/tools/fake_llm_server.py on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "llm/client.h"
#include "test_llm_server.h"
#include "util/log.h"

/* Submits one request for MODEL to a client on LLM and polls it to the end. */
static void run_one(const kv_llm_config *llm, const kv_model_config *model, kv_llm_result *res)
{
    char *err = NULL;
    kv_llm_client *c = kv_llm_client_new(llm, 7, &err);
    assert_non_null(c);
    kv_llm_request req = {model, "You are a test.", "Say hello.", 42};
    assert_int_equal(kv_llm_submit(c, &req, &err), 0);
    int rc = 0;
    for (int i = 0; i < 200 && rc == 0; i++)
        rc = kv_llm_poll(c, 100, res, &err);
    assert_int_equal(rc, 1);
    assert_int_equal(res->ticket, 42);
    assert_int_equal(kv_llm_pending(c), 0);
    kv_llm_client_free(c);
}

/* Runs SCRIPT once with the default test settings (timeout TIMEOUT s). */
static void run_script(const char *script, const char *extra, double timeout, kv_llm_result *res,
                       fake_server *s)
{
    assert_int_equal(fake_server_start(s, script, extra), 0);
    kv_llm_config llm = test_llm(s->api_base);
    llm.timeout = timeout;
    kv_model_config m = test_model("gpt-test");
    run_one(&llm, &m, res);
}

/* A fault followed by a good reply: one retry, the fault counted. */
static void expect_recovered(const char *fault_step, const char *extra, double timeout,
                             const char *error_text)
{
    char *script = kv_asprintf("[%s, {\"reply\": \"hello\"}]", fault_step);
    fake_server s;
    kv_llm_result res;
    run_script(script, extra, timeout, &res, &s);
    if (!res.ok) fprintf(stderr, "error: %s\n", res.error);
    assert_true(res.ok);
    assert_string_equal(res.content, "hello");
    assert_int_equal(res.attempts, 2);
    assert_int_equal(res.n_errors, 1);
    assert_non_null(res.errors);
    if (!strstr(res.errors, error_text)) fprintf(stderr, "errors: %s\n", res.errors);
    assert_non_null(strstr(res.errors, error_text));
    json_t *reqs = fake_server_requests(&s);
    assert_int_equal(json_array_size(reqs), 2);
    json_decref(reqs);
    kv_llm_result_free(&res);
    fake_server_stop(&s);
    free(script);
}

static void rate_limit_429_waits_retry_after_then_succeeds(void **state)
{
    (void)state;
    fake_server s;
    kv_llm_result res;
    run_script("[{\"status\": 429, \"headers\": {\"Retry-After\": \"1\"}, "
               "\"body\": {\"error\": {\"message\": \"slow down\"}}}, {\"reply\": \"hello\"}]",
               NULL, 5, &res, &s);
    assert_true(res.ok);
    assert_int_equal(res.attempts, 2);
    assert_int_equal(res.n_errors, 1);
    assert_non_null(strstr(res.errors, "HTTP 429"));
    assert_non_null(strstr(res.errors, "slow down"));
    /* retry_delay is 0.01 s: only Retry-After explains a wait of ~1 s. */
    assert_true(res.latency_s >= 0.95);
    kv_llm_result_free(&res);
    fake_server_stop(&s);
}

static void retry_after_is_capped(void **state)
{
    (void)state;
    fake_server s;
    assert_int_equal(fake_server_start(&s,
                                       "[{\"status\": 503, \"headers\": {\"Retry-After\": "
                                       "\"3600\"}, \"body\": \"busy\"}, {\"reply\": \"hi\"}]",
                                       NULL),
                     0);
    kv_llm_config llm = test_llm(s.api_base);
    kv_model_config m = test_model("gpt-test");
    char *err = NULL;
    kv_llm_client *c = kv_llm_client_new(&llm, 1, &err);
    kv_llm_client_set_retry_caps(c, 0.2, 1);
    kv_llm_request req = {&m, NULL, "x", 1};
    assert_int_equal(kv_llm_submit(c, &req, &err), 0);
    kv_llm_result res;
    int rc = 0;
    for (int i = 0; i < 50 && rc == 0; i++)
        rc = kv_llm_poll(c, 100, &res, &err);
    assert_int_equal(rc, 1);
    assert_true(res.ok);
    assert_int_equal(res.attempts, 2);
    assert_true(res.latency_s >= 0.19 && res.latency_s < 3);
    kv_llm_result_free(&res);
    kv_llm_client_free(c);
    fake_server_stop(&s);
}

static void server_error_500_is_retried_then_succeeds(void **state)
{
    (void)state;
    expect_recovered("{\"status\": 500, \"body\": {\"error\": {\"message\": \"internal\"}}}", NULL,
                     5, "HTTP 500: internal");
}

static void unavailable_503_is_retried_then_succeeds(void **state)
{
    (void)state;
    expect_recovered("{\"status\": 503, \"body\": \"overloaded\"}", NULL, 5,
                     "HTTP 503: overloaded");
}

static void slow_reply_past_timeout_is_retried_then_succeeds(void **state)
{
    (void)state;
    expect_recovered("{\"action\": \"slow\", \"delay\": 2}", NULL, 0.4, "timed out");
}

static void truncated_json_is_retried_then_succeeds(void **state)
{
    (void)state;
    expect_recovered("{\"action\": \"truncated\"}", NULL, 5, "invalid JSON reply");
}

static void non_json_reply_is_retried_then_succeeds(void **state)
{
    (void)state;
    expect_recovered("{\"action\": \"non_json\"}", NULL, 5, "invalid JSON reply");
}

static void empty_choices_are_retried_then_succeed(void **state)
{
    (void)state;
    expect_recovered("{\"action\": \"empty_choices\"}", NULL, 5, "no choices");
}

static void connection_reset_is_retried_then_succeeds(void **state)
{
    (void)state;
    expect_recovered("{\"action\": \"reset\"}", "--no-keepalive", 5, "connection error");
}

static void persistent_503_ends_in_error_naming_model_and_endpoint(void **state)
{
    (void)state;
    fake_server s;
    assert_int_equal(fake_server_start(&s, "[{\"status\": 503, \"body\": \"down\"}]", NULL), 0);
    kv_llm_config llm = test_llm(s.api_base);
    llm.retries = 2;
    kv_model_config m = test_model("gpt-test");
    kv_llm_result res;
    run_one(&llm, &m, &res);
    assert_false(res.ok);
    assert_null(res.content);
    assert_int_equal(res.attempts, 3);
    assert_int_equal(res.n_errors, 3);
    assert_int_equal(res.http_status, 503);
    assert_non_null(strstr(res.error, "gpt-test"));
    assert_non_null(strstr(res.error, s.api_base));
    assert_non_null(strstr(res.error, "gave up after 3 attempts"));
    kv_llm_result_free(&res);
    fake_server_stop(&s);
}

static void unauthorized_401_is_not_retried_and_never_shows_the_key(void **state)
{
    (void)state;
    static const char key[] = "sk-test-SECRET0123456789abcdef";
    char log_path[] = "/tmp/kv_llm_log_XXXXXX";
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    close(fd);
    kv_log_level old = kv_log_get_level();
    kv_log_set_level(KV_LOG_DEBUG);
    kv_log_set_quiet(1);
    assert_int_equal(kv_log_open_file(log_path), 0);

    fake_server s;
    /* The server echoes the key back, as some real endpoints do. */
    assert_int_equal(fake_server_start(&s,
                                       "[{\"status\": 401, \"body\": {\"error\": {\"message\": "
                                       "\"Incorrect API key provided: $AUTH\"}}}]",
                                       NULL),
                     0);
    kv_llm_config llm = test_llm(s.api_base);
    kv_model_config m = test_model("gpt-test");
    m.api_key = (char *)key;
    kv_llm_result res;
    run_one(&llm, &m, &res);
    kv_log_open_file(NULL);
    kv_log_set_quiet(0);
    kv_log_set_level(old);

    assert_false(res.ok);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(res.http_status, 401);
    assert_non_null(strstr(res.error, "gpt-test"));
    assert_non_null(strstr(res.error, s.api_base));
    assert_non_null(strstr(res.error, "401"));
    assert_non_null(strstr(res.error, "not retried"));
    assert_non_null(strstr(res.error, "provided: Bearer ***")); /* echoed, then redacted */
    assert_null(strstr(res.error, "SECRET"));
    assert_null(strstr(res.errors, "SECRET"));

    json_t *reqs = fake_server_requests(&s);
    assert_int_equal(json_array_size(reqs), 1);
    json_t *r0 = json_array_get(reqs, 0);
    assert_true(json_is_true(json_object_get(r0, "has_authorization")));
    assert_string_equal(json_string_value(json_object_get(r0, "auth_scheme")), "Bearer");
    json_decref(reqs);
    char *rec = fake_server_record_text(&s);
    assert_null(strstr(rec, "SECRET"));
    free(rec);
    char *log = kv_read_file(log_path, NULL);
    assert_non_null(log);
    assert_non_null(strstr(log, "HTTP 401")); /* the failure was logged... */
    assert_null(strstr(log, "SECRET"));       /* ...without the key */
    free(log);
    unlink(log_path);
    kv_llm_result_free(&res);
    fake_server_stop(&s);
}

static void key_comes_from_environment_when_config_has_none(void **state)
{
    (void)state;
    fake_server s;
    assert_int_equal(fake_server_start(&s, "[{\"reply\": \"hi\"}]", NULL), 0);
    setenv("OPENAI_API_KEY", "sk-env-0123456789", 1);
    kv_llm_config llm = test_llm(s.api_base);
    kv_model_config m = test_model("gpt-test");
    kv_llm_result res;
    run_one(&llm, &m, &res);
    unsetenv("OPENAI_API_KEY");
    assert_true(res.ok);
    json_t *reqs = fake_server_requests(&s);
    assert_true(json_is_true(json_object_get(json_array_get(reqs, 0), "has_authorization")));
    json_decref(reqs);
    kv_llm_result_free(&res);
    fake_server_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rate_limit_429_waits_retry_after_then_succeeds),
        cmocka_unit_test(retry_after_is_capped),
        cmocka_unit_test(server_error_500_is_retried_then_succeeds),
        cmocka_unit_test(unavailable_503_is_retried_then_succeeds),
        cmocka_unit_test(slow_reply_past_timeout_is_retried_then_succeeds),
        cmocka_unit_test(truncated_json_is_retried_then_succeeds),
        cmocka_unit_test(non_json_reply_is_retried_then_succeeds),
        cmocka_unit_test(empty_choices_are_retried_then_succeed),
        cmocka_unit_test(connection_reset_is_retried_then_succeeds),
        cmocka_unit_test(persistent_503_ends_in_error_naming_model_and_endpoint),
        cmocka_unit_test(unauthorized_401_is_not_retried_and_never_shows_the_key),
        cmocka_unit_test(key_comes_from_environment_when_config_has_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
