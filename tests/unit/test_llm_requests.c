/* The LLM client's requests and accounting: the request shape per model kind
 * (reasoning models get max_completion_tokens and no sampling settings), many
 * requests in flight at once, token usage and cost, and the budget stop.
 * Runs against tests/tools/fake_llm_server.py on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "llm/client.h"
#include "test_llm_server.h"

#include <time.h>

/* Polls C until N results came, storing them by ticket into RES[0..N). */
static void collect_all(kv_llm_client *c, kv_llm_result *res, int n)
{
    char *err = NULL;
    int got = 0;
    for (int i = 0; i < 2000 && got < n; i++) {
        kv_llm_result r;
        int rc = kv_llm_poll(c, 50, &r, &err);
        assert_true(rc >= 0);
        if (rc == 1) {
            assert_true(r.ticket < (uint64_t)n);
            res[r.ticket] = r;
            got++;
        }
    }
    assert_int_equal(got, n);
}

/* The recorded request whose body names MODEL. */
static json_t *body_for_model(json_t *reqs, const char *model)
{
    size_t i;
    json_t *r;
    json_array_foreach(reqs, i, r)
    {
        json_t *body = json_object_get(r, "body");
        if (strcmp(json_string_value(json_object_get(body, "model")), model) == 0) return body;
    }
    fail_msg("no request for %s", model);
    return NULL;
}

static void reasoning_models_get_max_completion_tokens_and_no_sampling(void **state)
{
    (void)state;
    fake_server s;
    assert_int_equal(fake_server_start(&s, "[{\"reply\": \"ok\"}]", NULL), 0);
    kv_llm_config llm = test_llm(s.api_base);
    kv_model_config models[4] = {test_model("gpt-4o"), test_model("o3-mini"),
                                 test_model("openai/gpt-5"), test_model("my-thinker")};
    models[1].reasoning_effort = "high";
    models[2].has_random_seed = 1;
    models[2].random_seed = 1234;
    models[3].is_reasoning = 1;
    models[0].temperature = 0.3;
    models[0].has_random_seed = 1;
    models[0].random_seed = 99;
    char *err = NULL;
    kv_llm_client *c = kv_llm_client_new(&llm, 1, &err);
    for (int i = 0; i < 4; i++) {
        kv_llm_request req = {&models[i], "sys", "user text", (uint64_t)i};
        assert_int_equal(kv_llm_submit(c, &req, &err), 0);
    }
    kv_llm_result res[4];
    collect_all(c, res, 4);
    kv_llm_client_free(c);

    json_t *reqs = fake_server_requests(&s);
    assert_int_equal(json_array_size(reqs), 4);
    json_t *plain = body_for_model(reqs, "gpt-4o");
    assert_int_equal(json_integer_value(json_object_get(plain, "max_tokens")), 256);
    assert_null(json_object_get(plain, "max_completion_tokens"));
    assert_float_equal(json_real_value(json_object_get(plain, "temperature")), 0.3, 1e-9);
    assert_float_equal(json_real_value(json_object_get(plain, "top_p")), 0.95, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(plain, "seed")), 99);
    json_t *msgs = json_object_get(plain, "messages");
    assert_int_equal(json_array_size(msgs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "role")),
                        "system");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 1), "content")),
                        "user text");
    const char *names[3] = {"o3-mini", "openai/gpt-5", "my-thinker"};
    for (int i = 0; i < 3; i++) {
        json_t *b = body_for_model(reqs, names[i]);
        assert_int_equal(json_integer_value(json_object_get(b, "max_completion_tokens")), 256);
        assert_null(json_object_get(b, "max_tokens"));
        assert_null(json_object_get(b, "temperature"));
        assert_null(json_object_get(b, "top_p"));
    }
    assert_string_equal(
        json_string_value(json_object_get(body_for_model(reqs, "o3-mini"), "reasoning_effort")),
        "high");
    assert_int_equal(
        json_integer_value(json_object_get(body_for_model(reqs, "openai/gpt-5"), "seed")), 1234);
    /* Without a key anywhere, no Authorization header is sent. */
    assert_false(json_is_true(json_object_get(json_array_get(reqs, 0), "has_authorization")));
    json_decref(reqs);
    for (int i = 0; i < 4; i++) {
        assert_true(res[i].ok);
        kv_llm_result_free(&res[i]);
    }
    fake_server_stop(&s);
}

static void reasoning_names_are_recognised(void **state)
{
    (void)state;
    const char *yes[] = {
        "o1",    "o1-preview", "o3",           "o3-mini",        "o4-mini",
        "gpt-5", "gpt-5-nano", "gpt-oss-120b", "openai/o3-mini", "openrouter/openai/gpt-oss-20b"};
    const char *no[] = {"gpt-4o", "gpt-4.1-mini", "claude-3-opus",
                        "o10x",   "qwen3-coder",  "gemini-2.5-pro"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        assert_true(kv_llm_is_reasoning_name(yes[i]));
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        assert_false(kv_llm_is_reasoning_name(no[i]));
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sixty_four_requests_in_flight_all_complete_with_their_tickets(void **state)
{
    (void)state;
    fake_server s;
    /* Every reply takes 0.5 s: one at a time, 64 would take 32 s. */
    assert_int_equal(fake_server_start(&s, "[{\"echo\": true, \"delay\": 0.5}]", NULL), 0);
    kv_llm_config llm = test_llm(s.api_base);
    llm.max_concurrency = 64;
    kv_model_config m = test_model("gpt-test");
    char *err = NULL;
    kv_llm_client *c = kv_llm_client_new(&llm, 1, &err);
    double t0 = wall();
    for (int i = 0; i < 64; i++) {
        char user[32];
        snprintf(user, sizeof user, "request %d", i);
        kv_llm_request req = {&m, NULL, user, (uint64_t)i};
        assert_int_equal(kv_llm_submit(c, &req, &err), 0);
    }
    assert_int_equal(kv_llm_pending(c), 64);
    kv_llm_result res[64];
    collect_all(c, res, 64);
    double took = wall() - t0;
    assert_int_equal(kv_llm_pending(c), 0);
    for (int i = 0; i < 64; i++) {
        char want[40];
        snprintf(want, sizeof want, "echo:request %d", i);
        assert_true(res[i].ok);
        assert_string_equal(res[i].content, want);
        assert_int_equal(res[i].attempts, 1);
        kv_llm_result_free(&res[i]);
    }
    /* Concurrency, not speed: far below the 32 s a serial client needs. */
    assert_true(took < 12.0);
    kv_llm_client_free(c);
    fake_server_stop(&s);
}

static void concurrency_limit_queues_the_rest(void **state)
{
    (void)state;
    fake_server s;
    assert_int_equal(fake_server_start(&s, "[{\"echo\": true, \"delay\": 0.3}]", NULL), 0);
    kv_llm_config llm = test_llm(s.api_base);
    llm.max_concurrency = 2;
    kv_model_config m = test_model("gpt-test");
    char *err = NULL;
    kv_llm_client *c = kv_llm_client_new(&llm, 1, &err);
    for (int i = 0; i < 4; i++) {
        kv_llm_request req = {&m, NULL, "x", (uint64_t)i};
        assert_int_equal(kv_llm_submit(c, &req, &err), 0);
    }
    double t0 = wall();
    kv_llm_result res[4];
    collect_all(c, res, 4);
    /* Two waves of 0.3 s: at least 0.6 s. */
    assert_true(wall() - t0 >= 0.55);
    for (int i = 0; i < 4; i++)
        kv_llm_result_free(&res[i]);
    kv_llm_client_free(c);
    fake_server_stop(&s);
}

static void usage_and_cost_are_accounted_per_call(void **state)
{
    (void)state;
    fake_server s;
    assert_int_equal(fake_server_start(&s,
                                       "[{\"reply\": \"a\", \"prompt_tokens\": 1000, "
                                       "\"completion_tokens\": 500}]",
                                       NULL),
                     0);
    kv_llm_config llm = test_llm(s.api_base);
    kv_model_config m = test_model("gpt-test");
    m.price_input_per_mtok = 2.0;
    m.price_output_per_mtok = 8.0;
    char *err = NULL;
    kv_llm_client *c = kv_llm_client_new(&llm, 1, &err);
    for (int i = 0; i < 2; i++) {
        kv_llm_request req = {&m, NULL, "x", (uint64_t)i};
        assert_int_equal(kv_llm_submit(c, &req, &err), 0);
    }
    kv_llm_result res[2];
    collect_all(c, res, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(res[i].prompt_tokens, 1000);
        assert_int_equal(res[i].completion_tokens, 500);
        /* (1000 * 2 + 500 * 8) / 1e6 */
        assert_float_equal(res[i].cost_usd, 0.006, 1e-12);
        assert_string_equal(res[i].model, "gpt-test");
        assert_string_equal(res[i].response_model, "gpt-test");
        assert_true(res[i].latency_s > 0);
        kv_llm_result_free(&res[i]);
    }
    assert_float_equal(kv_llm_spent_usd(c), 0.012, 1e-12);
    assert_false(kv_llm_budget_exhausted(c)); /* no budget set */
    kv_llm_client_free(c);
    fake_server_stop(&s);
}

static void budget_stops_new_calls_once_spent(void **state)
{
    (void)state;
    fake_server s;
    assert_int_equal(fake_server_start(&s,
                                       "[{\"reply\": \"a\", \"prompt_tokens\": 1000, "
                                       "\"completion_tokens\": 500}]",
                                       NULL),
                     0);
    kv_llm_config llm = test_llm(s.api_base);
    llm.max_budget_usd = 0.01;
    llm.max_concurrency = 1;
    kv_model_config m = test_model("gpt-test");
    m.price_input_per_mtok = 2.0;
    m.price_output_per_mtok = 8.0;
    char *err = NULL;
    kv_llm_client *c = kv_llm_client_new(&llm, 1, &err);
    for (int i = 0; i < 3; i++) {
        kv_llm_request req = {&m, NULL, "x", (uint64_t)i};
        assert_int_equal(kv_llm_submit(c, &req, &err), 0);
    }
    kv_llm_result res[3];
    collect_all(c, res, 3);
    /* One at a time: the first two spend $0.012 > $0.01, the third never starts. */
    assert_true(res[0].ok);
    assert_true(res[1].ok);
    assert_false(res[2].ok);
    assert_int_equal(res[2].attempts, 0);
    assert_non_null(strstr(res[2].error, "budget"));
    assert_true(kv_llm_budget_exhausted(c));
    kv_llm_request req = {&m, NULL, "x", 9};
    assert_int_equal(kv_llm_submit(c, &req, &err), -1);
    assert_non_null(strstr(err, "budget"));
    free(err);
    json_t *reqs = fake_server_requests(&s);
    assert_int_equal(json_array_size(reqs), 2);
    json_decref(reqs);
    for (int i = 0; i < 3; i++)
        kv_llm_result_free(&res[i]);
    kv_llm_client_free(c);
    fake_server_stop(&s);
}

static void freeing_a_busy_client_drops_transfers_cleanly(void **state)
{
    (void)state;
    fake_server s;
    assert_int_equal(fake_server_start(&s, "[{\"reply\": \"a\", \"delay\": 0.5}]", NULL), 0);
    kv_llm_config llm = test_llm(s.api_base);
    llm.max_concurrency = 2;
    kv_model_config m = test_model("gpt-test");
    char *err = NULL;
    kv_llm_client *c = kv_llm_client_new(&llm, 1, &err);
    for (int i = 0; i < 4; i++) {
        kv_llm_request req = {&m, NULL, "x", (uint64_t)i};
        assert_int_equal(kv_llm_submit(c, &req, &err), 0);
    }
    kv_llm_result r;
    assert_int_equal(kv_llm_poll(c, 50, &r, &err), 0); /* two in flight, two queued */
    assert_int_equal(kv_llm_pending(c), 4);
    assert_true(kv_llm_next_timeout_ms(c) >= 0);
    kv_llm_client_free(c); /* ASan checks nothing leaks */
    fake_server_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reasoning_models_get_max_completion_tokens_and_no_sampling),
        cmocka_unit_test(reasoning_names_are_recognised),
        cmocka_unit_test(sixty_four_requests_in_flight_all_complete_with_their_tickets),
        cmocka_unit_test(concurrency_limit_queues_the_rest),
        cmocka_unit_test(usage_and_cost_are_accounted_per_call),
        cmocka_unit_test(budget_stops_new_calls_once_spent),
        cmocka_unit_test(freeing_a_busy_client_drops_transfers_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
