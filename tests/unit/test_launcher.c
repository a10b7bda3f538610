/* The Slurm launcher's words and its reading of srun's errors: srun with
 * one task on one node, a time limit from the budget (the configured one
 * when set), the partition, account, gres and extra arguments the config
 * gives; the local launcher adds nothing. A run is lost to Slurm when srun
 * or slurmstepd says the step could not start, its node failed, it was
 * preempted or cancelled from outside; not when the program exited with an
 * error of its own or ran out of its time. */
#include "eval/launcher.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int has(char **v, const char *word)
{
    for (; v && *v; v++)
        if (strcmp(*v, word) == 0) return 1;
    return 0;
}

static void slurm_words_follow_the_config(void **state)
{
    (void)state;
    unsetenv("SLURM_JOB_ID");
    kv_evaluator_config c = {.timeout = 300, .device_wait = 600, .launcher = "slurm"};
    size_t n = 0;
    char **v = kv_launcher_prefix(&c, &n);
    assert_non_null(v);
    assert_string_equal(v[0], "srun");
    assert_true(has(v, "--ntasks=1") && has(v, "--nodes=1"));
    assert_true(has(v, "--time=16")); /* 300 + 600 + 60 s, in minutes rounded up */
    assert_false(has(v, "--exact"));  /* a job of its own outside an allocation */
    kv_launcher_free(v);
    char *extra[] = {"--qos=short"};
    c.slurm_partition = "gpu";
    c.slurm_account = "proj";
    c.slurm_gres = "gpu:1";
    c.slurm_time = 90;
    c.slurm_args = extra;
    c.n_slurm_args = 1;
    c.srun = "/opt/slurm/bin/srun";
    setenv("SLURM_JOB_ID", "42", 1);
    v = kv_launcher_prefix(&c, &n);
    assert_string_equal(v[0], "/opt/slurm/bin/srun");
    assert_true(has(v, "--partition=gpu") && has(v, "--account=proj") && has(v, "--gres=gpu:1"));
    assert_true(has(v, "--time=2") && has(v, "--qos=short"));
    assert_true(has(v, "--exact")); /* a step of the allocation, beside others */
    assert_string_equal(v[n - 1], "--qos=short");
    kv_launcher_free(v);
    unsetenv("SLURM_JOB_ID");
    c.launcher = "local";
    assert_null(kv_launcher_prefix(&c, &n));
    assert_int_equal(n, 0);
}

static void lost_runs_are_told_from_the_programs_own_end(void **state)
{
    (void)state;
    const char *why = NULL;
    const char *cancelled = "working\nsrun: Job step aborted: Waiting up to 32 seconds\n"
                            "slurmstepd-node3: error: *** STEP 5.1 ON node3 CANCELLED AT "
                            "2026-12-01T18:21:50 ***\nsrun: error: node3: task 0: Terminated\n";
    assert_int_equal(kv_launcher_lost_run(cancelled, 0, &why), 1);
    assert_non_null(strstr(why, "CANCELLED AT"));
    assert_int_equal(kv_launcher_lost_run("srun: error: Unable to create step for job 7: "
                                          "Requested node configuration is not available\n",
                                          0, &why),
                     1);
    assert_int_equal(
        kv_launcher_lost_run("slurmstepd: error: *** JOB 9 ON n1 CANCELLED AT 2026-12-01T10:00:00 "
                             "DUE TO PREEMPTION ***\n",
                             0, &why),
        1);
    assert_int_equal(kv_launcher_lost_run("srun: error: Node failure on n4\n", 0, &why), 1);
    /* the program's own end */
    assert_int_equal(kv_launcher_lost_run("kevolve eval: harness_error: ...\n"
                                          "srun: error: n1: task 0: Exited with exit code 1\n",
                                          0, &why),
                     0);
    assert_null(why);
    assert_int_equal(kv_launcher_lost_run("slurmstepd: error: *** STEP 3.0 ON n1 CANCELLED AT "
                                          "2026-12-01T10:00:00 DUE TO TIME LIMIT ***\n",
                                          0, &why),
                     0);
    /* srun's own line alone, slurmstepd's lost with the killed task */
    assert_int_equal(kv_launcher_lost_run("working\nsrun: Job step aborted: Waiting up to 32 "
                                          "seconds for job step to finish.\n"
                                          "srun: error: vm: task 0: Killed\n",
                                          0, &why),
                     1);
    assert_non_null(strstr(why, "Job step aborted"));
    /* but not where the step's time limit ended it */
    assert_int_equal(kv_launcher_lost_run("srun: Job step aborted: Waiting up to 32 seconds\n"
                                          "slurmstepd: error: *** STEP 3.0 ON n1 CANCELLED AT "
                                          "2026-12-01T10:00:00 DUE TO TIME LIMIT ***\n",
                                          0, &why),
                     0);
    assert_int_equal(kv_launcher_lost_run("my log: srun: Job step aborted\n", 0, &why), 0);
    /* the candidate's own output cannot pass for Slurm's mid-line */
    assert_int_equal(kv_launcher_lost_run("my log: srun: CANCELLED AT noon\n", 0, &why), 0);
}

static void a_cut_step_is_lost_even_when_srun_exits_0(void **state)
{
    (void)state;
    const char *why = NULL;
    /* the cancel killed the evaluator's child; the evaluator answered on */
    const char *cut = "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
                      "slurmstepd-vm: error: *** STEP 50.0 ON vm CANCELLED AT "
                      "2026-12-03T05:01:53 ***\nKilled\n";
    assert_int_equal(kv_launcher_lost_run(cut, 1, &why), 1);
    assert_non_null(strstr(why, "CANCELLED AT"));
    assert_int_equal(
        kv_launcher_lost_run("srun: Job step aborted: Waiting up to 32 seconds\n", 1, &why), 1);
    assert_int_equal(kv_launcher_lost_run("slurmstepd: error: *** JOB 9 ON n1 CANCELLED AT "
                                          "2026-12-01T10:00:00 DUE TO PREEMPTION ***\n",
                                          1, &why),
                     1);
    /* srun's messages while it retries a start, before a step that ran */
    const char *retried = "srun: Job step creation temporarily disabled, retrying (Requested "
                          "nodes are busy)\nsrun: Step created for StepId=7.3\n";
    assert_int_equal(kv_launcher_lost_run(retried, 1, &why), 0);
    assert_null(why);
    assert_int_equal(kv_launcher_lost_run(retried, 0, &why), 1);
    assert_int_equal(
        kv_launcher_lost_run("srun: error: Unable to create step for job 7\n", 1, &why), 0);
    /* nor a time limit, nor the evaluation's own stderr */
    assert_int_equal(kv_launcher_lost_run("slurmstepd: error: *** STEP 3.0 ON n1 CANCELLED AT "
                                          "2026-12-01T10:00:00 DUE TO TIME LIMIT ***\n",
                                          1, &why),
                     0);
    assert_int_equal(kv_launcher_lost_run("judge: CANCELLED AT noon\n", 1, &why), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slurm_words_follow_the_config),
        cmocka_unit_test(lost_runs_are_told_from_the_programs_own_end),
        cmocka_unit_test(a_cut_step_is_lost_even_when_srun_exits_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
