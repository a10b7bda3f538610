/* Tests of kernel/tool: compilers and other tools run by the harness go
 * through the one spawning path, so they end within their time limit with
 * everything they started, and report their status the way compile.c and
 * eval.c read it; compute-sanitizer's report is read for its first error. */
#include "judge/memcheck_log.h"
#include "kernel/tool.h"
#include "util/buf.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static void output_of_both_streams_and_the_exit_status_come_back(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 4", NULL};
    char *out = NULL;
    assert_int_equal(kv_tool_run(argv, 10, &out), 4);
    assert_non_null(strstr(out, "to-stdout\n"));
    assert_non_null(strstr(out, "to-stderr\n"));
    free(out);
}

static void a_signal_is_128_plus_its_number(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "kill -SEGV $$", NULL};
    char *out = NULL;
    assert_int_equal(kv_tool_run(argv, 10, &out), 128 + SIGSEGV);
    free(out);
}

static void a_missing_tool_is_minus_one_with_the_reason(void **state)
{
    (void)state;
    char *argv[] = {"kv-no-such-compiler", "--version", NULL};
    char *out = NULL;
    assert_int_equal(kv_tool_run(argv, 10, &out), -1);
    assert_string_equal(out, "cannot run 'kv-no-such-compiler': No such file or directory");
    free(out);
}

static void a_hung_tool_times_out_with_what_it_started(void **state)
{
    (void)state;
    /* A compiler driver that starts a helper in its own session (as nvcc's
     * cicc or ptxas could be) and hangs: both are gone after the limit. */
    char *argv[] = {"sh", "-c",
                    "(setsid sh -c 'echo helper $$; exec sleep 1000' &); sleep 0.2; "
                    "echo started; sleep 1000",
                    NULL};
    char *out = NULL;
    assert_int_equal(kv_tool_run(argv, 1.0, &out), -2);
    const char *h = strstr(out, "helper ");
    assert_non_null(h);
    pid_t helper = (pid_t)atoi(h + strlen("helper "));
    assert_true(helper > 1);
    assert_true(kill(helper, 0) == -1 && errno == ESRCH);
    free(out);
}

static void a_tool_runs_in_its_own_group_under_a_supervisor(void **state)
{
    (void)state;
    /* Its own process group, and its parent is its supervisor, not us. */
    char *argv[] = {"sh", "-c", "cut -d' ' -f5 /proc/$$/stat; echo $PPID", NULL};
    char *out = NULL;
    assert_int_equal(kv_tool_run(argv, 10, &out), 0);
    long pgid = 0, ppid = 0;
    assert_int_equal(sscanf(out, "%ld %ld", &pgid, &ppid), 2);
    assert_int_not_equal(pgid, (long)getpgrp());
    assert_int_not_equal(ppid, (long)getpid());
    free(out);
}

/* What compute-sanitizer 13 printed for tests/data/kernels/cuda/
 * illegal_address.cu, abridged, and a clean run's end. */
static void memchecks_first_error_is_read_from_its_report(void **state)
{
    (void)state;
    const char *wild = "========= COMPUTE-SANITIZER\n"
                       "kevolve runner: ready\n"
                       "========= Invalid __global__ write of size 4 bytes\n"
                       "=========     at wild(float *)+0x70\n"
                       "=========     Address 0x7f0000000000 is out of bounds\n"
                       "========= ERROR SUMMARY: 1 error\n";
    char *line = kv_memcheck_first_error(wild);
    assert_non_null(line);
    assert_true(strncmp(line, "========= Invalid __global__ write of size 4", 44) == 0);
    free(line);
    /* A summary alone still counts; a clean run has nothing to say. */
    line = kv_memcheck_first_error("========= ERROR SUMMARY: 3 errors\n");
    assert_non_null(line);
    assert_string_equal(line, "ERROR SUMMARY: 3 errors\n");
    free(line);
    assert_null(kv_memcheck_first_error("========= COMPUTE-SANITIZER\n"
                                        "========= ERROR SUMMARY: 0 errors\n"));
    assert_null(kv_memcheck_first_error("the runner's own output, no tool\n"));
    assert_null(kv_memcheck_first_error(NULL));
    /* At most 300 bytes of a long report. */
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "========= Program hit", 21);
    line = kv_memcheck_first_error(big);
    assert_int_equal(strlen(line), 300);
    free(line);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(output_of_both_streams_and_the_exit_status_come_back),
        cmocka_unit_test(a_signal_is_128_plus_its_number),
        cmocka_unit_test(a_missing_tool_is_minus_one_with_the_reason),
        cmocka_unit_test(a_hung_tool_times_out_with_what_it_started),
        cmocka_unit_test(a_tool_runs_in_its_own_group_under_a_supervisor),
        cmocka_unit_test(memchecks_first_error_is_read_from_its_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
