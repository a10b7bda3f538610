/* Tests of eval/evaluator: external evaluators run sandboxed, several at
 * once, with retries after crashes (never after timeouts), cascade gating,
 * no secrets in their environment, and their output read strictly enough
 * that a broken or NaN result never counts as good. The evaluators are
 * scripts in tests/data/evaluators/. */
#include "eval/eval_output.h"
#include "eval/evaluator.h"
#include "util/buf.h"
#include "util/fs.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- fixtures and helpers ----------------------------------------------- */

/* cmocka 1.1 has no assert_double_equal. */
#define assert_near(a, b, eps) check_near((a), (b), (eps), __FILE__, __LINE__)
static void check_near(double a, double b, double eps, const char *file, int line)
{
    if (!(fabs(a - b) <= eps)) fail_msg("%s:%d: %.17g != %.17g", file, line, a, b);
}

typedef struct fixture {
    char dir[64]; /* a fresh temporary directory */
    char *work;   /* dir/work: the evaluator's work dir */
} fixture;

static int setup(void **state)
{
    fixture *f = kv_calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/kv_test_eval_XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    f->work = kv_path_join(f->dir, "work");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kv_remove_tree(f->dir);
    free(f->work);
    free(f);
    return 0;
}

/* Absolute path of tests/data/evaluators/NAME (malloc'd). */
static char *script(const char *name)
{
    const char *src = getenv("KV_SOURCE_DIR");
    char *root;
    if (src && *src) {
        root = kv_strdup(src);
    } else { /* __FILE__ is .../tests/unit/test_evaluator.c */
        root = kv_strdup(__FILE__);
        char *cut = strstr(root, "tests/unit/");
        if (cut) *cut = '\0';
        if (!*root) {
            free(root);
            root = kv_strdup(".");
        }
    }
    char *path = kv_asprintf("%s/tests/data/evaluators/%s", root, name);
    free(root);
    return path;
}

static kv_evaluator_config config(void)
{
    return (kv_evaluator_config){
        .timeout = 10,
        .max_retries = 0,
        .parallel_evaluations = 1,
        .enable_artifacts = 1,
        .max_artifact_storage = 102400,
    };
}

static kv_evaluator *evaluator(fixture *f, const kv_evaluator_config *cfg, const char *name,
                               const json_t *sections)
{
    char *path = script(name);
    char *err = NULL;
    kv_evaluator *ev = kv_evaluator_new(cfg, path, f->work, sections, &err);
    if (!ev) fail_msg("kv_evaluator_new(%s): %s", path, err);
    free(path);
    return ev;
}

/* Evaluates SOURCE once with evaluator NAME under CFG. */
static kv_eval_result evaluate(fixture *f, const kv_evaluator_config *cfg, const char *name,
                               const char *source)
{
    kv_evaluator *ev = evaluator(f, cfg, name, NULL);
    kv_eval_result r;
    assert_int_equal(kv_evaluator_run_one(ev, source, ".txt", &r), 0);
    kv_evaluator_free(ev);
    return r;
}

static double metric(const kv_eval_result *r, const char *name)
{
    json_t *v = json_object_get(r->metrics, name);
    if (!json_is_number(v)) fail_msg("metric %s is not a number", name);
    return json_number_value(v);
}

static const char *artifact(const kv_eval_result *r, const char *name)
{
    json_t *v = json_object_get(r->artifacts, name);
    if (!json_is_string(v)) fail_msg("artifact %s is not a string", name);
    return json_string_value(v);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int group_is_gone(pid_t pgid)
{
    return kill(-pgid, 0) == -1 && errno == ESRCH;
}

/* ---- results of single evaluations -------------------------------------- */

static void good_evaluator_reports_metrics_read_from_the_program(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    kv_eval_result r = evaluate(f, &cfg, "good.sh", "int x = 1; // VALUE=0.42\n");
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_null(r.reason);
    assert_near(metric(&r, "combined_score"), 0.42, 1e-12);
    assert_near(metric(&r, "value"), 0.42, 1e-12);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(json_array_size(r.stages), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(r.stages, 0), "status")),
                        "ok");
    assert_non_null(strstr(artifact(&r, "stderr"), "evaluating "));
    assert_non_null(strstr(artifact(&r, "stdout"), "combined_score"));
    assert_true(r.seconds > 0 && r.seconds < 5);
    kv_eval_result_clear(&r);
}

static void evaluator_artifacts_are_kept_and_cut_to_the_storage_limit(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.max_artifact_storage = 1000;
    kv_eval_result r = evaluate(f, &cfg, "artifacts.py", "program");
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_string_equal(artifact(&r, "note"), "hello");
    assert_int_equal(strlen(artifact(&r, "big")), 1000);
    json_t *table = json_object_get(r.artifacts, "table");
    assert_true(json_is_object(table));
    assert_int_equal(json_array_size(json_object_get(table, "a")), 2);
    assert_non_null(strstr(artifact(&r, "stderr"), "warning: this is only a test"));
    kv_eval_result_clear(&r);
}

static void artifacts_are_dropped_when_disabled(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.enable_artifacts = 0;
    kv_eval_result r = evaluate(f, &cfg, "artifacts.py", "program");
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_int_equal(json_object_size(r.artifacts), 0);
    kv_eval_result_clear(&r);
}

static void stdout_and_stderr_tails_are_bounded(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    kv_eval_result r = evaluate(f, &cfg, "noisy.sh", "program");
    assert_int_equal(r.status, KV_STATUS_OK);
    const char *err = artifact(&r, "stderr");
    assert_true(strlen(err) <= 4096);
    assert_true(kv_ends_with(err, "line 1999 of noise noise noise\n"));
    kv_eval_result_clear(&r);
}

static void non_json_output_fails_with_an_excerpt_and_keeps_the_text(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.max_retries = 1;
    kv_eval_result r = evaluate(f, &cfg, "not_json.sh", "program");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason, "evaluator output is not JSON: Traceback (most recent call "
                                  "last): this is not JSON");
    assert_int_equal(r.attempts, 1); /* exit 0: the same output again, so no retry */
    assert_non_null(strstr(artifact(&r, "stdout"), "this is not JSON"));
    kv_eval_result_clear(&r);
}

static void output_over_the_cap_fails_once_without_retries(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.max_retries = 2;
    kv_eval_result r = evaluate(f, &cfg, "huge.sh", "program");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason_code, "bad_output");
    assert_non_null(strstr(r.reason, "over the 4 MiB cap"));
    assert_int_equal(r.attempts, 1);
    kv_eval_result_clear(&r);
}

static void a_score_of_1e999_is_a_non_finite_fitness_not_bad_json(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.max_retries = 2;
    kv_eval_result r = evaluate(f, &cfg, "overflow.sh", "program");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason_code, "non_finite_fitness");
    assert_non_null(strstr(r.reason, "1e999"));
    assert_int_equal(r.attempts, 1);
    assert_near(metric(&r, "time_ms"), 3, 0);
    kv_eval_result_clear(&r);
}

static void partial_json_output_fails(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    kv_eval_result r = evaluate(f, &cfg, "partial_json.sh", "program");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_true(kv_starts_with(r.reason, "evaluator output is not JSON: {\"metrics\""));
    kv_eval_result_clear(&r);
}

static void crash_is_retried_until_it_succeeds(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.max_retries = 2;
    char *source = kv_asprintf("MARKER=%s/marker\n", f->dir);
    kv_eval_result r = evaluate(f, &cfg, "flaky.sh", source);
    free(source);
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_int_equal(r.attempts, 2);
    assert_near(metric(&r, "combined_score"), 0.75, 1e-12);
    kv_eval_result_clear(&r);
}

static void crash_after_all_retries_fails_with_exit_status_and_stderr(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.max_retries = 2;
    kv_eval_result r = evaluate(f, &cfg, "crash.sh", "program");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_int_equal(r.attempts, 3);
    assert_string_equal(r.reason, "evaluator exit 3: boom: the kernel exploded");
    assert_non_null(strstr(artifact(&r, "stderr"), "some noise"));
    kv_eval_result_clear(&r);
}

/* A long last line keeps its head (what went wrong) and its last words. */
static void long_error_line_keeps_its_head(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    kv_eval_result r = evaluate(f, &cfg, "long_error.sh", "program");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    if (!kv_starts_with(r.reason, "evaluator exit 2: unknown task 'qwen3_decode_oo' (known: "))
        fail_msg("the reason lost its head: %s", r.reason);
    assert_non_null(strstr(r.reason, " ... "));
    assert_true(kv_ends_with(r.reason, "the last one)"));
    assert_true(strlen(r.reason) < 260);
    kv_eval_result_clear(&r);
}

static void evaluator_reported_error_fails_without_retry(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.max_retries = 2;
    kv_eval_result r = evaluate(f, &cfg, "error.sh", "program");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason, "kernel did not compile");
    assert_int_equal(r.attempts, 1);
    assert_near(metric(&r, "max_error"), 0.5, 0);
    kv_eval_result_clear(&r);
}

/* The protocol of external evaluators: "error" says the program failed and
 * why, artifacts.reason its reason code (a short word), else evaluator_error. */
static void reported_error_takes_its_reason_code_from_the_artifacts(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    static const char *const cases[][2] = {{"compile_error", "compile_error"},
                                           {"crash: SIGSEGV", "crash: SIGSEGV"},
                                           {"it went wrong somewhere", "evaluator_error"},
                                           {"", "evaluator_error"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kv_eval_result r = evaluate(f, &cfg, "error_code.sh", cases[i][0]);
        assert_int_equal(r.status, KV_STATUS_FAILED);
        assert_string_equal(r.reason, "the program failed");
        assert_string_equal(r.reason_code, cases[i][1]);
        kv_eval_result_clear(&r);
    }
}

static void hung_evaluator_times_out_once_and_leaves_no_survivors(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.timeout = 0.5;
    cfg.max_retries = 3;
    char *pidfile = kv_path_join(f->dir, "pids");
    char *source = kv_asprintf("PIDFILE=%s\n", pidfile);
    double t0 = now_s();
    kv_eval_result r = evaluate(f, &cfg, "hang.sh", source);
    double took = now_s() - t0;
    free(source);
    assert_int_equal(r.status, KV_STATUS_TIMEOUT);
    assert_string_equal(r.reason, "timed out after 0.5 s");
    assert_int_equal(r.attempts, 1); /* a timeout is never retried */
    assert_true(took < 3.0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(r.stages, 0), "status")),
                        "timeout");

    char *pids = kv_read_file(pidfile, NULL);
    assert_non_null(pids);
    long leader = 0, child = 0;
    assert_int_equal(sscanf(pids, "%ld %ld", &leader, &child), 2);
    assert_true(group_is_gone((pid_t)leader));
    assert_true(kill((pid_t)child, 0) == -1 && errno == ESRCH);
    free(pids);
    free(pidfile);
    kv_eval_result_clear(&r);
}

static void exec_failure_is_reported_clearly(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.max_retries = 2;
    char *err = NULL;
    kv_evaluator *ev =
        kv_evaluator_new(&cfg, "kv-no-such-interpreter eval.py", f->work, NULL, &err);
    assert_non_null(ev);
    kv_eval_result r;
    assert_int_equal(kv_evaluator_run_one(ev, "program", ".txt", &r), 0);
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason, "cannot run 'kv-no-such-interpreter': No such file or directory");
    assert_int_equal(r.attempts, 1);
    kv_eval_result_clear(&r);
    kv_evaluator_free(ev);
}

static void missing_or_unrunnable_evaluator_is_refused_at_creation(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    char *err = NULL;
    assert_null(kv_evaluator_new(&cfg, "/nonexistent/evaluator.py", f->work, NULL, &err));
    assert_non_null(strstr(err, "/nonexistent/evaluator.py"));
    free(err);

    char *plain = kv_path_join(f->dir, "evaluator.txt");
    assert_int_equal(kv_write_file(plain, "x", 1), 0);
    assert_null(kv_evaluator_new(&cfg, plain, f->work, NULL, &err));
    assert_non_null(strstr(err, "is not executable"));
    free(err);
    free(plain);
}

/* ---- cascades ------------------------------------------------------------- */

static kv_evaluator_config cascade_config(double *threshold)
{
    kv_evaluator_config cfg = config();
    cfg.cascade_evaluation = 1;
    cfg.cascade_thresholds = threshold;
    cfg.n_cascade_thresholds = 1;
    return cfg;
}

static void cascade_stops_after_a_stage_below_its_threshold(void **state)
{
    fixture *f = *state;
    double threshold = 0.5;
    kv_evaluator_config cfg = cascade_config(&threshold);
    kv_eval_result r = evaluate(f, &cfg, "cascade.sh", "VALUE=0.2\n");
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_int_equal(json_array_size(r.stages), 1);
    assert_near(metric(&r, "combined_score"), 0.2, 1e-12);
    assert_near(metric(&r, "seen_stage"), 1, 0);
    assert_null(json_object_get(r.metrics, "stage2"));
    kv_eval_result_clear(&r);
}

static void cascade_runs_the_next_stage_above_its_threshold_and_merges_metrics(void **state)
{
    fixture *f = *state;
    double threshold = 0.5;
    kv_evaluator_config cfg = cascade_config(&threshold);
    kv_eval_result r = evaluate(f, &cfg, "cascade.sh", "VALUE=0.9\n");
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_int_equal(json_array_size(r.stages), 2);
    assert_near(metric(&r, "stage1"), 1, 0);
    assert_near(metric(&r, "stage2"), 2, 0);
    assert_near(metric(&r, "combined_score"), 1.9, 1e-12); /* stage 2 overrides */
    assert_near(metric(&r, "seen_stage"), 2, 0);
    json_t *s1 = json_array_get(r.stages, 0);
    assert_int_equal(json_integer_value(json_object_get(s1, "stage")), 1);
    assert_near(
        json_number_value(json_object_get(json_object_get(s1, "metrics"), "combined_score")), 0.9,
        1e-12);
    kv_eval_result_clear(&r);
}

static void cascade_stage_failure_ends_the_evaluation_naming_the_stage(void **state)
{
    fixture *f = *state;
    double threshold = 0.5;
    kv_evaluator_config cfg = cascade_config(&threshold);
    kv_eval_result r = evaluate(f, &cfg, "cascade.sh", "VALUE=0.9 FAIL2\n");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason, "stage 2: evaluator exit 3: stage two exploded");
    assert_int_equal(json_array_size(r.stages), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(r.stages, 1), "status")),
                        "failed");
    assert_near(metric(&r, "stage1"), 1, 0);
    kv_eval_result_clear(&r);
}

static void nan_metrics_are_not_numeric_and_never_pass_a_gate(void **state)
{
    fixture *f = *state;
    double threshold = -1e300;
    kv_evaluator_config cfg = cascade_config(&threshold);
    kv_eval_result r = evaluate(f, &cfg, "nan.py", "program"); /* executable: run directly */
    /* A NaN combined_score is a failure with its own code, not a score. */
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason_code, KV_REASON_NON_FINITE_FITNESS);
    assert_int_equal(json_array_size(r.stages), 1); /* NaN combined_score: no stage 2 */
    assert_true(json_is_null(json_object_get(r.metrics, "combined_score")));
    assert_true(json_is_null(json_object_get(r.metrics, "speed")));
    assert_true(json_is_null(json_object_get(r.metrics, "slowness")));
    assert_near(metric(&r, "ok"), 2.0, 0);
    assert_string_equal(json_string_value(json_object_get(r.metrics, "label")),
                        "NaN and Infinity stay text here");
    assert_true(isnan(kv_eval_score(r.metrics)));
    kv_eval_result_clear(&r);
}

/* Evaluates with verdict.sh, which prints OUTPUT (the program's text). */
static kv_eval_result judged(fixture *f, const char *output)
{
    kv_evaluator_config cfg = config();
    return evaluate(f, &cfg, "verdict.sh", output);
}

static void harness_rejection_fails_with_the_harness_reason_as_code(void **state)
{
    fixture *f = *state;
    kv_eval_result r = judged(f, "{\"metrics\": {\"combined_score\": 0, \"correct\": 0},"
                                 " \"artifacts\": {\"verdict\": \"rejected\", \"reason\":"
                                 " \"wrong_result\", \"reason_detail\": \"out[3] is 2\"}}");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason_code, "wrong_result");
    assert_non_null(strstr(r.reason, "wrong_result: out[3] is 2"));
    assert_string_equal(artifact(&r, "reason_detail"), "out[3] is 2"); /* artifacts kept */
    assert_near(metric(&r, "correct"), 0, 0);
    kv_eval_result_clear(&r);

    r = judged(f, "{\"metrics\": {\"combined_score\": 0}, \"artifacts\": {\"verdict\":"
                  " \"rejected\", \"reason\": \"timeout\"}}");
    assert_int_equal(r.status, KV_STATUS_TIMEOUT); /* the harness's watchdog fired */
    assert_string_equal(r.reason_code, "timeout");
    kv_eval_result_clear(&r);

    r = judged(f, "{\"metrics\": {\"combined_score\": 1.5}, \"artifacts\": {\"verdict\":"
                  " \"correct\"}}");
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_null(r.reason_code);
    kv_eval_result_clear(&r);
}

static void missing_or_non_finite_fitness_fails_with_its_code(void **state)
{
    fixture *f = *state;
    static const char *const non_finite[] = {
        "{\"metrics\": {\"combined_score\": Infinity, \"time\": 2}}",
        "{\"metrics\": {\"combined_score\": -Infinity}}",
        "{\"metrics\": {\"combined_score\": null, \"time\": 2}}",
        "{\"metrics\": {\"combined_score\": \"fast\", \"time\": 2}}",
    };
    for (size_t i = 0; i < sizeof non_finite / sizeof *non_finite; i++) {
        kv_eval_result r = judged(f, non_finite[i]);
        assert_int_equal(r.status, KV_STATUS_FAILED);
        assert_string_equal(r.reason_code, KV_REASON_NON_FINITE_FITNESS);
        kv_eval_result_clear(&r);
    }
    kv_eval_result r = judged(f, "{\"metrics\": {\"label\": \"no numbers\"}}");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason_code, KV_REASON_NO_FITNESS);
    kv_eval_result_clear(&r);
}

static void each_failure_has_its_reason_code(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *script, *program, *code;
        kv_status status;
    } cases[] = {
        {"crash.sh", "program", KV_REASON_EVALUATOR_CRASH, KV_STATUS_FAILED},
        {"error.sh", "program", KV_REASON_EVALUATOR_ERROR, KV_STATUS_FAILED},
        {"not_json.sh", "program", KV_REASON_BAD_OUTPUT, KV_STATUS_FAILED},
        {"sleepy.sh", "SLEEP=5", KV_REASON_TIMEOUT, KV_STATUS_TIMEOUT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        kv_evaluator_config cfg = config();
        cfg.timeout = 0.5;
        kv_eval_result r = evaluate(f, &cfg, cases[i].script, cases[i].program);
        assert_int_equal(r.status, cases[i].status);
        if (!r.reason_code || strcmp(r.reason_code, cases[i].code) != 0)
            fail_msg("%s: code %s, expected %s", cases[i].script, r.reason_code, cases[i].code);
        kv_eval_result_clear(&r);
    }
}

static void child_evaluations_get_the_run_dir_and_parent_metrics(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    kv_evaluator *ev = evaluator(f, &cfg, "env.py", NULL);
    kv_evaluator_set_run_dir(ev, f->dir);
    json_t *parent = json_pack("{s:f, s:i}", "combined_score", 2.5, "correct", 1);
    assert_int_equal(kv_evaluator_submit_child(ev, 7, "child", ".py", parent, NULL), 0);
    assert_int_equal(kv_evaluator_submit_child(ev, 8, "initial", ".py", NULL, NULL), 0);
    for (int got = 0; got < 2;) {
        kv_eval_result r;
        if (kv_evaluator_poll(ev, 5000, &r) != 1) continue;
        got++;
        assert_int_equal(r.status, KV_STATUS_OK);
        json_t *env = json_object_get(r.artifacts, "env");
        assert_string_equal(json_string_value(json_object_get(env, "KEVOLVE_RUN_DIR")), f->dir);
        const char *pm = json_string_value(json_object_get(env, "KEVOLVE_PARENT_METRICS"));
        if (r.ticket == 8) {
            assert_null(pm); /* no parent: absent */
        } else {
            assert_non_null(pm);
            json_t *m = json_object_get(r.artifacts, "parent_metrics");
            assert_true(json_equal(m, parent));
        }
        kv_eval_result_clear(&r);
    }
    kv_evaluator_free(ev);
    json_decref(parent);
}

/* ---- many at once ------------------------------------------------------- */

static void parallel_evaluations_run_at_once_and_finish_out_of_order(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.parallel_evaluations = 4;
    kv_evaluator *ev = evaluator(f, &cfg, "sleepy.sh", NULL);
    const char *sleeps[] = {"SLEEP=1.0", "SLEEP=0.9", "SLEEP=0.8", "SLEEP=0.1"};
    double t0 = now_s();
    for (int i = 0; i < 4; i++)
        assert_int_equal(kv_evaluator_submit(ev, i + 1, sleeps[i], ".txt"), 0);
    assert_int_equal(kv_evaluator_pending(ev), 4);
    int64_t order[4];
    for (int i = 0; i < 4; i++) {
        kv_eval_result r;
        assert_int_equal(kv_evaluator_poll(ev, 5000, &r), 1);
        assert_int_equal(r.status, KV_STATUS_OK);
        order[i] = r.ticket;
        kv_eval_result_clear(&r);
    }
    double took = now_s() - t0;
    assert_true(took < 3.0); /* four 1-second jobs side by side, not one after another */
    assert_int_equal(order[0], 4);
    assert_int_equal(kv_evaluator_pending(ev), 0);
    kv_eval_result r;
    assert_int_equal(kv_evaluator_poll(ev, 10, &r), 0); /* nothing left */
    kv_evaluator_free(ev);
}

static void queue_beyond_the_slots_runs_in_submission_order(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    kv_evaluator *ev = evaluator(f, &cfg, "good.sh", NULL);
    for (int i = 0; i < 3; i++) {
        char *src = kv_asprintf("VALUE=%d", i);
        assert_int_equal(kv_evaluator_submit(ev, 10 + i, src, ".txt"), 0);
        free(src);
    }
    assert_int_equal(kv_evaluator_pending(ev), 3);
    assert_int_equal(kv_evaluator_submit(ev, 11, "again", ".txt"), -1); /* ticket in use */
    for (int i = 0; i < 3; i++) {
        kv_eval_result r;
        assert_int_equal(kv_evaluator_poll(ev, 5000, &r), 1);
        assert_int_equal(r.ticket, 10 + i);
        assert_near(metric(&r, "value"), i, 0);
        assert_int_equal(kv_evaluator_pending(ev), (size_t)(2 - i));
        kv_eval_result_clear(&r);
    }
    kv_evaluator_free(ev);
}

static void cancel_all_kills_running_evaluations_and_drops_the_queue(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    cfg.timeout = 30;
    kv_evaluator *ev = evaluator(f, &cfg, "hang.sh", NULL);
    char *pidfile = kv_path_join(f->dir, "pids");
    char *source = kv_asprintf("PIDFILE=%s\n", pidfile);
    assert_int_equal(kv_evaluator_submit(ev, 1, source, ".txt"), 0);
    assert_int_equal(kv_evaluator_submit(ev, 2, source, ".txt"), 0);
    free(source);
    kv_eval_result r;
    for (int i = 0; i < 100 && !kv_is_file(pidfile); i++)
        assert_int_equal(kv_evaluator_poll(ev, 50, &r), 0);
    char *pids = kv_read_file(pidfile, NULL);
    assert_non_null(pids);
    long leader = 0;
    assert_int_equal(sscanf(pids, "%ld", &leader), 1);
    free(pids);
    kv_evaluator_cancel_all(ev);
    assert_int_equal(kv_evaluator_pending(ev), 0);
    assert_true(group_is_gone((pid_t)leader));
    assert_int_equal(kv_evaluator_poll(ev, 10, &r), 0);
    kv_evaluator_free(ev);
    free(pidfile);
}

static void on_alarm(int sig)
{
    (void)sig;
}

static void poll_returns_early_when_a_signal_arrives(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    kv_evaluator *ev = evaluator(f, &cfg, "sleepy.sh", NULL);
    assert_int_equal(kv_evaluator_submit(ev, 1, "SLEEP=2", ".txt"), 0);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: a SIGINT handler that sets a flag */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old);
    struct itimerval it = {.it_value = {0, 200000}};
    setitimer(ITIMER_REAL, &it, NULL);
    double t0 = now_s();
    kv_eval_result r;
    assert_int_equal(kv_evaluator_poll(ev, 10000, &r), 0);
    assert_true(now_s() - t0 < 1.5); /* back well before the evaluation ends */
    assert_int_equal(kv_evaluator_pending(ev), 1);
    sigaction(SIGALRM, &old, NULL);
    kv_evaluator_cancel_all(ev);
    assert_int_equal(kv_evaluator_pending(ev), 0);
    kv_evaluator_free(ev);
}

/* ---- environment and files ------------------------------------------------ */

static void environment_has_no_api_keys(void **state)
{
    fixture *f = *state;
    setenv("OPENAI_API_KEY", "secret", 1);
    setenv("MY_SERVICE_TOKEN", "x", 1);
    kv_evaluator_config cfg = config();
    json_t *sections = json_pack("{s:{s:i}}", "algotune", "n", 3);
    kv_evaluator *ev = evaluator(f, &cfg, "env.py", sections);
    kv_eval_result r;
    assert_int_equal(kv_evaluator_run_one(ev, "program", ".py", &r), 0);
    kv_evaluator_free(ev);
    unsetenv("OPENAI_API_KEY");
    unsetenv("MY_SERVICE_TOKEN");

    assert_int_equal(r.status, KV_STATUS_OK);
    json_t *env = json_object_get(r.artifacts, "env");
    assert_true(json_is_object(env));
    assert_null(json_object_get(env, "OPENAI_API_KEY"));
    assert_null(json_object_get(env, "MY_SERVICE_TOKEN"));
    assert_non_null(json_object_get(env, "PATH"));
    assert_string_equal(json_string_value(json_object_get(env, "KEVOLVE_STAGE")), "1");
    const char *program = json_string_value(json_object_get(env, "KEVOLVE_PROGRAM"));
    assert_non_null(program);
    assert_true(kv_ends_with(program, ".py"));
    json_t *argv = json_object_get(r.artifacts, "argv");
    assert_int_equal(json_array_size(argv), 1); /* no --stage without a cascade */
    assert_string_equal(json_string_value(json_array_get(argv, 0)), program);
    assert_non_null(json_object_get(env, "KEVOLVE_CONFIG_JSON"));
    assert_true(json_equal(json_object_get(r.artifacts, "config"), sections));
    json_decref(sections);
    kv_eval_result_clear(&r);
}

static void program_files_are_removed_unless_asked_to_keep_them(void **state)
{
    fixture *f = *state;
    kv_evaluator_config cfg = config();
    kv_evaluator *ev = evaluator(f, &cfg, "good.sh", NULL);
    char *path = kv_path_join(f->work, "7.cu");
    kv_eval_result r;
    assert_int_equal(kv_evaluator_submit(ev, 7, "VALUE=1", ".cu"), 0);
    assert_true(kv_is_file(path));
    assert_int_equal(kv_evaluator_poll(ev, 5000, &r), 1);
    kv_eval_result_clear(&r);
    assert_false(kv_is_file(path));

    setenv("KEVOLVE_KEEP_PROGRAMS", "1", 1);
    assert_int_equal(kv_evaluator_submit(ev, 7, "VALUE=1", ".cu"), 0);
    assert_int_equal(kv_evaluator_poll(ev, 5000, &r), 1);
    kv_eval_result_clear(&r);
    unsetenv("KEVOLVE_KEEP_PROGRAMS");
    assert_true(kv_is_file(path));
    kv_evaluator_free(ev);
    free(path);
}

/* ---- output parsing ------------------------------------------------------- */

static void bare_metrics_output_is_accepted(void **state)
{
    fixture *f = *state;
    json_t *m = NULL, *a = NULL;
    char *reason = NULL;
    assert_int_equal(
        kv_eval_parse_output("{\"combined_score\": 0.5, \"accuracy\": 0.9}\n", &m, &a, &reason), 0);
    assert_near(json_number_value(json_object_get(m, "accuracy")), 0.9, 0);
    assert_int_equal(json_object_size(a), 0);
    json_decref(m);
    json_decref(a);

    kv_evaluator_config cfg = config();
    kv_eval_result r = evaluate(f, &cfg, "sleepy.sh", "SLEEP=0");
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_near(metric(&r, "combined_score"), 0, 0);
    kv_eval_result_clear(&r);
}

static void progress_lines_before_the_result_are_tolerated(void **state)
{
    (void)state;
    json_t *m = NULL, *a = NULL;
    char *reason = NULL;
    const char *text = "compiling...\n{not json either}\n{\"metrics\": {\"x\": 1},\n"
                       " \"artifacts\": {\"log\": \"ok\"}}\n";
    assert_int_equal(kv_eval_parse_output(text, &m, &a, &reason), 0);
    assert_int_equal(json_integer_value(json_object_get(m, "x")), 1);
    assert_string_equal(json_string_value(json_object_get(a, "log")), "ok");
    json_decref(m);
    json_decref(a);
}

static void output_that_is_not_an_object_or_has_bad_metrics_is_rejected(void **state)
{
    (void)state;
    json_t *m = NULL, *a = NULL;
    char *reason = NULL;
    assert_int_equal(kv_eval_parse_output("[1, 2]", &m, &a, &reason), -1);
    assert_string_equal(reason, "evaluator output is not a JSON object: [1, 2]");
    assert_null(m);
    free(reason);
    assert_int_equal(kv_eval_parse_output("{\"metrics\": 3}", &m, &a, &reason), -1);
    assert_non_null(strstr(reason, "\"metrics\" is not an object"));
    free(reason);
    assert_int_equal(kv_eval_parse_output("", &m, &a, &reason), -1);
    assert_string_equal(reason, "evaluator output is not JSON: (empty)");
    free(reason);
}

static void numeric_error_is_a_metric_but_text_error_is_a_failure(void **state)
{
    (void)state;
    json_t *m = NULL, *a = NULL;
    char *reason = NULL;
    assert_int_equal(
        kv_eval_parse_output("{\"error\": 1e-6, \"combined_score\": 2}", &m, &a, &reason), 0);
    assert_near(kv_eval_score(m), 2, 0);
    json_decref(m);
    json_decref(a);
    assert_int_equal(
        kv_eval_parse_output_ex("{\"metrics\": {\"error\": \"out of memory\"}}", &m, &a, &reason),
        KV_EVAL_OUTPUT_ERROR);
    assert_string_equal(reason, "out of memory");
    free(reason);
    json_decref(m);
    json_decref(a);
}

static void score_is_combined_score_else_mean_of_finite_numbers(void **state)
{
    (void)state;
    json_t *m = NULL, *a = NULL;
    char *reason = NULL;
    assert_int_equal(kv_eval_parse_output("{\"a\": 1, \"b\": 3, \"c\": NaN, \"d\": \"text\", "
                                          "\"e\": Infinity, \"f\": true}",
                                          &m, &a, &reason),
                     0);
    assert_near(kv_eval_score(m), 2.0, 0);
    json_decref(m);
    json_decref(a);
    assert_int_equal(
        kv_eval_parse_output("{\"combined_score\": -Infinity, \"a\": 5}", &m, &a, &reason), 0);
    assert_true(isnan(kv_eval_score(m)));
    json_decref(m);
    json_decref(a);
    assert_int_equal(kv_eval_parse_output("{\"note\": \"none\"}", &m, &a, &reason), 0);
    assert_true(isnan(kv_eval_score(m)));
    json_decref(m);
    json_decref(a);
}

int main(void)
{
    unsetenv("KEVOLVE_KEEP_PROGRAMS");
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(good_evaluator_reports_metrics_read_from_the_program),
        T(evaluator_artifacts_are_kept_and_cut_to_the_storage_limit),
        T(artifacts_are_dropped_when_disabled),
        T(stdout_and_stderr_tails_are_bounded),
        T(non_json_output_fails_with_an_excerpt_and_keeps_the_text),
        T(partial_json_output_fails),
        T(output_over_the_cap_fails_once_without_retries),
        T(a_score_of_1e999_is_a_non_finite_fitness_not_bad_json),
        T(crash_is_retried_until_it_succeeds),
        T(crash_after_all_retries_fails_with_exit_status_and_stderr),
        T(long_error_line_keeps_its_head),
        T(evaluator_reported_error_fails_without_retry),
        T(reported_error_takes_its_reason_code_from_the_artifacts),
        T(hung_evaluator_times_out_once_and_leaves_no_survivors),
        T(exec_failure_is_reported_clearly),
        T(missing_or_unrunnable_evaluator_is_refused_at_creation),
        T(cascade_stops_after_a_stage_below_its_threshold),
        T(cascade_runs_the_next_stage_above_its_threshold_and_merges_metrics),
        T(cascade_stage_failure_ends_the_evaluation_naming_the_stage),
        T(nan_metrics_are_not_numeric_and_never_pass_a_gate),
        T(parallel_evaluations_run_at_once_and_finish_out_of_order),
        T(queue_beyond_the_slots_runs_in_submission_order),
        T(cancel_all_kills_running_evaluations_and_drops_the_queue),
        T(poll_returns_early_when_a_signal_arrives),
        T(environment_has_no_api_keys),
        T(harness_rejection_fails_with_the_harness_reason_as_code),
        T(missing_or_non_finite_fitness_fails_with_its_code),
        T(each_failure_has_its_reason_code),
        T(child_evaluations_get_the_run_dir_and_parent_metrics),
        T(program_files_are_removed_unless_asked_to_keep_them),
        T(bare_metrics_output_is_accepted),
        T(progress_lines_before_the_result_are_tolerated),
        T(output_that_is_not_an_object_or_has_bad_metrics_is_rejected),
        T(numeric_error_is_a_metric_but_text_error_is_a_failure),
        T(score_is_combined_score_else_mean_of_finite_numbers),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
