/* OpenEvolve evaluators run as they are: a Python module's evaluate() (and
 * evaluate_stage1/2/3) through kevolve's embedded runner, in a fresh
 * interpreter per evaluation or in the opt-in warm pool; dicts,
 * EvaluationResult and exceptions map to kevolve's protocol, cascade
 * functions to stages, and timeouts still kill. The evaluators are written
 * by each test into a fresh folder; they import only the standard library
 * and openevolve.evaluation_result (kevolve's stand-in when OpenEvolve is
 * not installed). */
#include "eval/evaluator.h"
#include "eval/pyeval.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[64];
    char *work;
} fixture;

static int setup(void **state)
{
    fixture *f = kv_calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/kv_test_pyeval_XXXXXX");
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

/* Writes TEXT as DIR/NAME and returns the path (malloc'd). */
static char *write_file(fixture *f, const char *name, const char *text)
{
    char *path = kv_path_join(f->dir, name);
    assert_int_equal(kv_write_file(path, text, strlen(text)), 0);
    return path;
}

static kv_evaluator_config config(void)
{
    return (kv_evaluator_config){
        .timeout = 20,
        .max_retries = 0,
        .parallel_evaluations = 1,
        .enable_artifacts = 1,
        .max_artifact_storage = 102400,
        .cascade_evaluation = -1, /* unset, as a config without the key */
        .python_module = -1,
    };
}

static kv_evaluator *new_evaluator(fixture *f, const kv_evaluator_config *cfg, const char *path)
{
    char *err = NULL;
    kv_evaluator *ev = kv_evaluator_new(cfg, path, f->work, NULL, &err);
    if (!ev) fail_msg("kv_evaluator_new(%s): %s", path, err);
    return ev;
}

static kv_eval_result run(kv_evaluator *ev, const char *program)
{
    kv_eval_result r;
    assert_int_equal(kv_evaluator_run_one(ev, program, ".py", &r), 0);
    return r;
}

static double metric(const kv_eval_result *r, const char *name)
{
    json_t *v = json_object_get(r->metrics, name);
    if (!v) fail_msg("no metric '%s' in %s", name, kv_json_dumps(r->metrics));
    return kv_json_number(v);
}

static const char *artifact(const kv_eval_result *r, const char *name)
{
    const char *s = json_string_value(json_object_get(r->artifacts, name));
    if (!s) fail_msg("no text artifact '%s'", name);
    return s;
}

/* An OpenEvolve evaluator: the program sets X; evaluate scores X / 10. */
static const char *const SCORE_MODULE =
    "from openevolve.evaluation_result import EvaluationResult\n"
    "import importlib.util, os\n"
    "IMPORTS = int(os.environ.get('KV_T', '0'))\n"
    "def load(path):\n"
    "    spec = importlib.util.spec_from_file_location('program', path)\n"
    "    m = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(m)\n"
    "    return m\n"
    "def evaluate(path):\n"
    "    m = load(path)\n"
    "    if getattr(m, 'BOOM', False):\n"
    "        raise ValueError('the program asked for it')\n"
    "    if getattr(m, 'SLEEP', 0):\n"
    "        import time; time.sleep(m.SLEEP)\n"
    "    if getattr(m, 'AS_DICT', False):\n"
    "        return {'combined_score': m.X / 10, 'pid': os.getpid()}\n"
    "    print('scored', m.X)\n"
    "    return EvaluationResult(metrics={'combined_score': m.X / 10, 'passed': True,\n"
    "                                     'pid': os.getpid()},\n"
    "                            artifacts={'note': 'x=%d' % m.X, 'blob': b'\\xff\\x00'})\n";

static void embedded_runner_is_the_source_file(void **state)
{
    (void)state;
    const char *src = getenv("KV_SOURCE_DIR");
    char *path = src ? kv_asprintf("%s/src/eval/openevolve_runner.py", src)
                     : kv_strdup("src/eval/openevolve_runner.py");
    char *text = kv_read_file(path, NULL);
    if (!text) fail_msg("cannot read %s", path);
    if (strcmp(text, kv_openevolve_runner_py) != 0)
        fail_msg(
            "src/eval/openevolve_runner_text.c is stale: run python3 src/eval/embed_runner.py");
    free(text);
    free(path);
}

static void modules_are_told_from_scripts_of_kevolves_protocol(void **state)
{
    fixture *f = *state;
    char *module = write_file(f, "mod.py", "def evaluate(program_path):\n    return {}\n");
    char *staged = write_file(f, "staged.py", "def evaluate_stage1 (p):\n    return {}\n");
    char *tried = write_file(f, "tried.py",
                             "def evaluate(p):\n    return {}\n\nif __name__ == '__main__':\n"
                             "    print(evaluate('initial_program.py'))\n");
    char *script = write_file(f, "script.py",
                              "import json, sys\ndef evaluate(p):\n    return {}\n"
                              "if __name__ == \"__main__\":\n"
                              "    print(json.dumps(evaluate(sys.argv[1])))\n");
    char *plain = write_file(f, "plain.py", "print('{}')\n");
    assert_int_equal(kv_pyeval_wants(module, -1), 1);
    assert_int_equal(kv_pyeval_wants(staged, -1), 1);
    assert_int_equal(kv_pyeval_wants(tried, -1), 1);
    assert_int_equal(kv_pyeval_wants(script, -1), 0);
    assert_int_equal(kv_pyeval_wants(plain, -1), 0);
    assert_int_equal(kv_pyeval_wants(script, 1), 1); /* python_module: true forces it */
    assert_int_equal(kv_pyeval_wants(module, 0), 0); /* python_module: false refuses it */
    free(module);
    free(staged);
    free(tried);
    free(script);
    free(plain);
}

static void evaluation_result_and_dict_map_to_metrics_and_artifacts(void **state)
{
    fixture *f = *state;
    char *path = write_file(f, "evaluator.py", SCORE_MODULE);
    kv_evaluator_config cfg = config();
    kv_evaluator *ev = new_evaluator(f, &cfg, path);
    kv_eval_result r = run(ev, "X = 7\n");
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_true(fabs(metric(&r, "combined_score") - 0.7) < 1e-12);
    assert_true(metric(&r, "passed") == 1.0); /* a bool metric is a number */
    assert_string_equal(artifact(&r, "note"), "x=7");
    assert_string_equal(artifact(&r, "blob"), "base64:/wA="); /* bytes that are not text */
    assert_non_null(strstr(artifact(&r, "stdout"), "scored 7"));
    kv_eval_result_clear(&r);
    r = run(ev, "X = 4\nAS_DICT = True\n");
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_true(fabs(metric(&r, "combined_score") - 0.4) < 1e-12);
    kv_eval_result_clear(&r);
    kv_evaluator_free(ev);
    free(path);
}

static void an_exception_is_a_failed_evaluation_with_its_traceback(void **state)
{
    fixture *f = *state;
    char *path = write_file(f, "evaluator.py", SCORE_MODULE);
    kv_evaluator_config cfg = config();
    cfg.max_retries = 2;
    kv_evaluator *ev = new_evaluator(f, &cfg, path);
    kv_eval_result r = run(ev, "X = 1\nBOOM = True\n");
    assert_int_equal(r.status, KV_STATUS_FAILED);
    assert_string_equal(r.reason, "evaluate raised ValueError: the program asked for it");
    assert_non_null(strstr(artifact(&r, "traceback"), "raise ValueError"));
    assert_int_equal(r.attempts, 1); /* a verdict, not a crash: not retried */
    kv_eval_result_clear(&r);
    kv_evaluator_free(ev);
    free(path);
}

/* A cascade as OpenEvolve runs it: stage 1 gates stage 2 by the first
 * threshold; a stage-2 exception keeps stage 1's results. */
static const char *const CASCADE_MODULE =
    "import importlib.util\n"
    "def load(path):\n"
    "    spec = importlib.util.spec_from_file_location('program', path)\n"
    "    m = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(m)\n"
    "    return m\n"
    "def evaluate(path):\n"
    "    return {'combined_score': -1.0}\n"
    "def evaluate_stage1(path):\n"
    "    return {'combined_score': load(path).X / 10, 'stage1': 1.0}\n"
    "def evaluate_stage2(path):\n"
    "    m = load(path)\n"
    "    if getattr(m, 'BOOM', False):\n"
    "        raise RuntimeError('stage two broke')\n"
    "    return {'combined_score': m.X, 'stage2': 1.0}\n"
    "def evaluate_stage3(path):\n"
    "    return {'combined_score': 100.0, 'stage3': 1.0}\n";

static void cascade_functions_map_to_stages_by_thresholds(void **state)
{
    fixture *f = *state;
    char *path = write_file(f, "evaluator.py", CASCADE_MODULE);
    kv_evaluator_config cfg = config();
    double thr[1] = {0.5}; /* one threshold: stage 3 never runs, as in OpenEvolve */
    cfg.cascade_thresholds = thr;
    cfg.n_cascade_thresholds = 1;
    kv_evaluator *ev = new_evaluator(f, &cfg, path);

    kv_eval_result r = run(ev, "X = 2\n"); /* 0.2 < 0.5: stage 1 only */
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_true(fabs(metric(&r, "combined_score") - 0.2) < 1e-12);
    assert_null(json_object_get(r.metrics, "stage2"));
    assert_int_equal(json_array_size(r.stages), 1);
    kv_eval_result_clear(&r);

    r = run(ev, "X = 8\n"); /* 0.8 passes: stage 2 overrides the score */
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_true(metric(&r, "combined_score") == 8.0);
    assert_true(metric(&r, "stage1") == 1.0 && metric(&r, "stage2") == 1.0);
    assert_null(json_object_get(r.metrics, "stage3"));
    assert_int_equal(json_array_size(r.stages), 2);
    kv_eval_result_clear(&r);

    r = run(ev, "X = 9\nBOOM = True\n"); /* stage 2 raises: stage 1 stands */
    assert_int_equal(r.status, KV_STATUS_OK);
    assert_true(fabs(metric(&r, "combined_score") - 0.9) < 1e-12);
    assert_true(metric(&r, "stage2_passed") == 0.0);
    assert_non_null(strstr(artifact(&r, "stage2_traceback"), "stage two broke"));
    kv_eval_result_clear(&r);
    kv_evaluator_free(ev);

    /* cascade_evaluation: false runs evaluate alone. */
    cfg.cascade_evaluation = 0;
    ev = new_evaluator(f, &cfg, path);
    r = run(ev, "X = 8\n");
    assert_true(metric(&r, "combined_score") == -1.0);
    kv_eval_result_clear(&r);
    kv_evaluator_free(ev);
    free(path);
}

static void a_module_without_evaluate_is_refused_at_start(void **state)
{
    fixture *f = *state;
    char *path = write_file(f, "evaluator.py", "def evaluate_stage1(p):\n    return {}\n");
    kv_evaluator_config cfg = config();
    cfg.cascade_evaluation = 0;
    char *err = NULL;
    assert_null(kv_evaluator_new(&cfg, path, f->work, NULL, &err));
    assert_non_null(strstr(err, "defines no evaluate(program_path) function"));
    free(err);
    free(path);
    path = write_file(f, "broken.py", "import no_such_module_here\ndef evaluate(p):\n  pass\n");
    err = NULL;
    assert_null(kv_evaluator_new(&cfg, path, f->work, NULL, &err));
    assert_non_null(strstr(err, "cannot be imported"));
    assert_non_null(strstr(err, "no_such_module_here"));
    free(err);
    free(path);
}

static void a_hanging_evaluate_is_killed_at_the_timeout(void **state)
{
    fixture *f = *state;
    char *path = write_file(f, "evaluator.py", SCORE_MODULE);
    kv_evaluator_config cfg = config();
    cfg.timeout = 1;
    kv_evaluator *ev = new_evaluator(f, &cfg, path);
    kv_eval_result r = run(ev, "X = 1\nSLEEP = 60\n");
    assert_int_equal(r.status, KV_STATUS_TIMEOUT);
    assert_true(r.seconds < 10);
    kv_eval_result_clear(&r);
    kv_evaluator_free(ev);
    free(path);
}

static void warm_pool_imports_once_and_kills_a_hung_worker(void **state)
{
    fixture *f = *state;
    char *path = write_file(f, "evaluator.py", SCORE_MODULE);
    kv_evaluator_config cfg = config();
    cfg.python_pool = 1;
    cfg.timeout = 5; /* room for a loaded machine; the hung evaluation sleeps 60 s */
    kv_evaluator *ev = new_evaluator(f, &cfg, path);
    kv_eval_result a = run(ev, "X = 3\n");
    kv_eval_result b = run(ev, "X = 5\n");
    assert_int_equal(a.status, KV_STATUS_OK);
    assert_int_equal(b.status, KV_STATUS_OK);
    /* One warm interpreter served both (parallel_evaluations 1). */
    assert_true(metric(&a, "pid") == metric(&b, "pid"));
    assert_true(fabs(metric(&b, "combined_score") - 0.5) < 1e-12);
    assert_non_null(strstr(artifact(&b, "stdout"), "scored 5"));
    assert_string_equal(artifact(&b, "note"), "x=5");
    kv_eval_result t = run(ev, "X = 1\nSLEEP = 60\n");
    assert_int_equal(t.status, KV_STATUS_TIMEOUT);
    /* The hung worker was killed and replaced: the next evaluation works. */
    kv_eval_result c = run(ev, "X = 6\n");
    assert_int_equal(c.status, KV_STATUS_OK);
    assert_true(metric(&c, "pid") != metric(&a, "pid"));
    kv_eval_result e = run(ev, "X = 1\nBOOM = True\n");
    assert_int_equal(e.status, KV_STATUS_FAILED);
    assert_non_null(strstr(artifact(&e, "traceback"), "the program asked for it"));
    kv_eval_result_clear(&a);
    kv_eval_result_clear(&b);
    kv_eval_result_clear(&t);
    kv_eval_result_clear(&c);
    kv_eval_result_clear(&e);
    kv_evaluator_free(ev);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(embedded_runner_is_the_source_file),
        cmocka_unit_test_setup_teardown(modules_are_told_from_scripts_of_kevolves_protocol, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(evaluation_result_and_dict_map_to_metrics_and_artifacts,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(an_exception_is_a_failed_evaluation_with_its_traceback,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(cascade_functions_map_to_stages_by_thresholds, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_module_without_evaluate_is_refused_at_start, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_hanging_evaluate_is_killed_at_the_timeout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(warm_pool_imports_once_and_kills_a_hung_worker, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
