/* The controller's rules for children: edits outside EVOLVE-BLOCKs and
 * over-long programs are rejected with the reason stored, repeated code is
 * stored as a duplicate without evaluation, and valid children are evaluated
 * and committed with their lineage; a child whose compiled artifact was
 * judged before is a duplicate of that program, and a failed child is never
 * placed. */
#include "engine/controller.h"
#include "util/buf.h"
#include "util/fs.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[64];
    kv_config cfg;
    kv_store *store;
    kv_controller c;
    char *initial;
} fixture;

/* A controller over the tiny program, evaluated by EVALUATOR (relative to
 * tests/data/tiny), seeded with the initial program. */
static int setup_with(void **state, const char *evaluator)
{
    fixture *f = kv_calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/kv-controller-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    const char *src = getenv("KV_SOURCE_DIR");
    assert_non_null(src);
    char *tiny = kv_path_join(src, "tests/data/tiny");
    char *yaml = kv_asprintf("initial_program: initial.py\nevaluator: %s\n"
                             "max_code_length: 600\ndatabase:\n  num_islands: 2\n",
                             evaluator);
    kv_config_error err;
    assert_int_equal(kv_config_load_string(yaml, "test.yaml", tiny, &f->cfg, &err), 0);
    f->initial = kv_read_file(f->cfg.initial_program, NULL);
    assert_non_null(f->initial);
    char *db = kv_path_join(f->dir, "run.db");
    char *msg = NULL;
    assert_int_equal(kv_store_open(db, KV_STORE_CREATE, &f->store, &msg), 0);
    assert_int_equal(
        kv_controller_init(&f->c, &f->cfg, f->store, f->dir, f->cfg.evaluator_program, 1), 0);
    assert_int_equal(kv_controller_seed(&f->c, f->initial), 0);
    free(db);
    free(yaml);
    free(tiny);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, "evaluator.sh");
}

static int setup_artifacts(void **state)
{
    return setup_with(state, "../evaluators/artifact_cache.py");
}

static int setup_failing(void **state)
{
    return setup_with(state, "../evaluators/sometimes_fails.py");
}

static int teardown(void **state)
{
    fixture *f = *state;
    kv_controller_free(&f->c);
    kv_store_close(f->store);
    kv_config_free(&f->cfg);
    kv_remove_tree(f->dir);
    free(f->initial);
    free(f);
    return 0;
}

/* A child of the initial program with SOURCE, as a mutator would make it. */
static kv_program *child_with(fixture *f, const char *source, int64_t iteration)
{
    kv_program *p = kv_program_new();
    p->parent_id = 1;
    p->island = 1;
    p->generation = 1;
    p->iteration = iteration;
    p->mutator = kv_strdup("test");
    kv_program_set_source(p, source);
    (void)f;
    return p;
}

/* Replaces the first occurrence of FROM in S with TO (new string). */
static char *replace(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    assert_non_null(at);
    return kv_asprintf("%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
}

/* Runs the loop until every child offered is evaluated and stored. */
static void drain(fixture *f)
{
    f->c.last_iteration = f->c.next_iteration - 1;
    assert_int_equal(kv_controller_loop(&f->c), 0);
}

static void child_editing_outside_blocks_is_rejected_with_reason_stored(void **state)
{
    fixture *f = *state;
    char *src = replace(f->initial, "print(A, B, C)", "print(A)");
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, src, 1), f->initial, NULL), 0);
    kv_program *p = kv_store_get_program(f->store, 2);
    assert_non_null(p);
    assert_int_equal(p->status, KV_STATUS_REJECTED);
    assert_non_null(p->status_reason);
    assert_non_null(strstr(p->status_reason, "outside"));
    assert_string_equal(p->source, src); /* the rejected text is kept for the record */
    kv_program_free(p);
    free(src);
}

static void child_repeating_code_is_stored_as_duplicate_without_evaluation(void **state)
{
    fixture *f = *state;
    /* Whitespace differences do not make new code. */
    char *src = replace(f->initial, "A = 1", "A  =  1");
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, src, 1), f->initial, NULL), 0);
    kv_program *p = kv_store_get_program(f->store, 2);
    assert_int_equal(p->status, KV_STATUS_DUPLICATE);
    assert_string_equal(p->status_reason, "identical to program 1");
    assert_null(p->metrics);
    kv_program_free(p);
    free(src);
}

static void overlong_child_is_rejected(void **state)
{
    fixture *f = *state;
    kv_buf pad = KV_BUF_INIT;
    for (int i = 0; i < 700; i++)
        kv_buf_putc(&pad, 'x');
    char *line = kv_asprintf("A = 1  # %s", pad.data);
    char *src = replace(f->initial, "A = 1", line);
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, src, 1), f->initial, NULL), 0);
    kv_program *p = kv_store_get_program(f->store, 2);
    assert_int_equal(p->status, KV_STATUS_REJECTED);
    assert_non_null(strstr(p->status_reason, "max_code_length"));
    kv_program_free(p);
    free(src);
    free(line);
    kv_buf_free(&pad);
}

static void valid_child_is_evaluated_and_committed_with_lineage(void **state)
{
    fixture *f = *state;
    char *src = replace(f->initial, "A = 1", "A = 7");
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, src, 1), f->initial, NULL), 0);
    /* A second offer of the same code while the first is in flight is a duplicate. */
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, src, 2), f->initial, NULL), 0);
    drain(f);
    assert_int_equal(kv_store_count_programs(f->store, -1), 3);
    kv_program *dup = kv_store_get_program(f->store, 2);
    assert_int_equal(dup->status, KV_STATUS_DUPLICATE);
    assert_non_null(strstr(dup->status_reason, "still being evaluated"));
    kv_program *p = kv_store_get_program(f->store, 3);
    assert_int_equal(p->status, KV_STATUS_OK);
    assert_int_equal(p->parent_id, 1);
    assert_int_equal(p->island, 1);
    /* 30 - |7-7| - |8-2| - |3-5| */
    assert_true(p->fitness == 22.0);
    assert_non_null(p->features);
    kv_program_free(p);
    kv_program_free(dup);
    free(src);
}

/* The progress line counts the iterations finished, not those drawn: a
 * child in evaluation is not done until it is stored. */
static void iterations_done_count_children_stored_not_drawn(void **state)
{
    fixture *f = *state;
    assert_int_equal(kv_controller_iterations_done(&f->c), 0);
    char *src = replace(f->initial, "A = 1", "A = 7");
    f->c.next_iteration = 3; /* iterations 1 and 2 drawn, as breeding does */
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, src, 1), f->initial, NULL), 0);
    assert_int_equal(kv_controller_iterations_done(&f->c), 0); /* in evaluation */
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, src, 2), f->initial, NULL), 0);
    assert_int_equal(kv_controller_iterations_done(&f->c), 1); /* the duplicate, stored */
    drain(f);
    assert_int_equal(kv_controller_iterations_done(&f->c), 2);
    free(src);
}

static void child_with_an_artifact_judged_before_is_a_duplicate_of_its_program(void **state)
{
    fixture *f = *state;
    char *first = replace(f->initial, "A = 1", "A = 7");
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, first, 1), f->initial, NULL),
                     0);
    drain(f);
    /* Another text (a comment changed), the same artifact: the evaluator
     * repeats the first verdict with duplicate_of_artifact. */
    char *second = replace(first, "A = 7  # kevolve: tune", "A = 7  # the same: tune");
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, second, 2), f->initial, NULL),
                     0);
    drain(f);
    kv_program *p1 = kv_store_get_program(f->store, 2);
    kv_program *p2 = kv_store_get_program(f->store, 3);
    assert_int_equal(p1->status, KV_STATUS_OK);
    assert_int_equal(p2->status, KV_STATUS_DUPLICATE);
    assert_int_equal(p2->duplicate_of, p1->id);
    assert_string_equal(p2->reason_code, "same_artifact");
    assert_non_null(strstr(p2->status_reason, "program 2"));
    assert_true(isnan(p2->fitness)); /* never placed */
    assert_null(p2->features);
    assert_int_equal(kv_database_size(f->c.db), 2);
    kv_program_free(p1);
    kv_program_free(p2);
    free(first);
    free(second);
}

/* A run killed after its evaluator judged a child but before the store
 * kept it leaves the verdict in the run folder; the same child, made again
 * when the run resumes, gets that verdict repeated. With no program of that
 * artifact stored, it is the child's own verdict: the child is placed, not
 * a duplicate of nothing (which, for a seed, stopped the run at its start). */
static void child_repeating_a_verdict_the_store_never_got_is_its_own(void **state)
{
    fixture *f = *state;
    char *src = replace(f->initial, "A = 1", "A = 7");
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, src, 1), f->initial, NULL), 0);
    drain(f);
    /* Another run in a folder holding the first run's verdicts, whose store
     * has none of its children. */
    fixture *g = NULL;
    assert_int_equal(setup_artifacts((void **)&g), 0);
    char *from = kv_path_join(f->dir, "artifact_cache.json");
    char *to = kv_path_join(g->dir, "artifact_cache.json");
    size_t len = 0;
    char *cache = kv_read_file(from, &len);
    assert_non_null(cache);
    assert_int_equal(kv_write_file(to, cache, len), 0);
    assert_int_equal(kv_controller_offer_child(&g->c, child_with(g, src, 1), g->initial, NULL), 0);
    drain(g);
    kv_program *p = kv_store_get_program(g->store, 2);
    assert_non_null(p);
    assert_int_equal(p->status, KV_STATUS_OK);
    assert_true(p->duplicate_of <= 0);
    assert_true(isfinite(p->fitness));
    assert_non_null(p->features); /* placed */
    assert_non_null(json_object_get(p->artifacts, "verdict_repeated"));
    assert_null(json_object_get(p->artifacts, "duplicate_of_artifact"));
    assert_int_equal(kv_database_size(g->c.db), 2);
    /* A later child of the same artifact is a duplicate of it. */
    char *again = replace(src, "A = 7  # kevolve: tune", "A = 7  # again: tune");
    assert_int_equal(kv_controller_offer_child(&g->c, child_with(g, again, 2), g->initial, NULL),
                     0);
    drain(g);
    kv_program *d = kv_store_get_program(g->store, 3);
    assert_int_equal(d->status, KV_STATUS_DUPLICATE);
    assert_int_equal(d->duplicate_of, p->id);
    kv_program_free(d);
    kv_program_free(p);
    teardown((void **)&g);
    free(again);
    free(cache);
    free(from);
    free(to);
    free(src);
}

static void non_finite_child_is_stored_failed_and_never_placed(void **state)
{
    fixture *f = *state;
    /* sometimes_fails.py gives iteration 5 a NaN combined_score, 7 an infinite one. */
    char *better = replace(f->initial, "A = 1", "A = 7");
    char *best = replace(better, "B = 8", "B = 2");
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, better, 5), f->initial, NULL),
                     0);
    assert_int_equal(kv_controller_offer_child(&f->c, child_with(f, best, 7), f->initial, NULL), 0);
    drain(f);
    for (int64_t id = 2; id <= 3; id++) {
        kv_program *p = kv_store_get_program(f->store, id);
        assert_int_equal(p->status, KV_STATUS_FAILED);
        assert_string_equal(p->reason_code, "non_finite_fitness");
        assert_true(isnan(p->fitness));
        assert_null(p->features);
        kv_program_free(p);
    }
    assert_int_equal(kv_database_size(f->c.db), 1); /* the initial program alone */
    assert_int_equal(f->c.best_id, 1);
    assert_int_equal(f->c.n_failed, 2);
    kv_program *top = kv_store_best_program(f->store);
    assert_int_equal(top->id, 1);
    kv_program_free(top);
    free(better);
    free(best);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(child_editing_outside_blocks_is_rejected_with_reason_stored,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            child_repeating_code_is_stored_as_duplicate_without_evaluation, setup, teardown),
        cmocka_unit_test_setup_teardown(overlong_child_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(iterations_done_count_children_stored_not_drawn, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(valid_child_is_evaluated_and_committed_with_lineage, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            child_with_an_artifact_judged_before_is_a_duplicate_of_its_program, setup_artifacts,
            teardown),
        cmocka_unit_test_setup_teardown(child_repeating_a_verdict_the_store_never_got_is_its_own,
                                        setup_artifacts, teardown),
        cmocka_unit_test_setup_teardown(non_finite_child_is_stored_failed_and_never_placed,
                                        setup_failing, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
