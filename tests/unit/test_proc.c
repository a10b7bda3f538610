/* Tests of util/proc: child processes run in their own group, end within
 * their time limit with their whole group, keep no secrets, inherit no
 * descriptors, and report their end (and failures to start) clearly. */
#include "util/buf.h"
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* Runs ARGV with SPEC's other fields as given; fails the test when it
 * cannot start. */
static kv_proc *run(kv_proc_spec spec)
{
    char *err = NULL;
    kv_proc *p = kv_proc_run(&spec, &err);
    if (!p) fail_msg("cannot start: %s", err ? err : "?");
    return p;
}

/* 1 when no process of group PGID exists any more (zombies included). */
static int group_is_gone(pid_t pgid)
{
    return kill(-pgid, 0) == -1 && errno == ESRCH;
}

static void exit_code_and_output_are_captured(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv});
    assert_int_equal(kv_proc_how(p), KV_PROC_EXITED);
    assert_int_equal(kv_proc_exit_code(p), 3);
    assert_string_equal(kv_proc_stdout(p), "out\n");
    assert_int_equal(kv_proc_stdout_len(p), 4);
    assert_string_equal(kv_proc_stderr(p), "err\n");
    assert_string_equal(kv_proc_describe(p), "exit 3");
    kv_proc_free(p);
}

static void death_by_signal_is_described_by_name(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "kill -SEGV $$", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv});
    assert_int_equal(kv_proc_how(p), KV_PROC_SIGNALED);
    assert_int_equal(kv_proc_signal(p), SIGSEGV);
    assert_int_equal(kv_proc_exit_code(p), -1);
    assert_string_equal(kv_proc_describe(p), "killed by signal SIGSEGV");
    kv_proc_free(p);
}

static void timeout_kills_whole_group_even_a_child_ignoring_sigterm(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "trap '' TERM; sleep 1000 & echo started; sleep 1000", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 0.3});
    assert_int_equal(kv_proc_how(p), KV_PROC_TIMED_OUT);
    assert_true(kv_proc_seconds(p) >= 0.29);
    assert_true(kv_proc_seconds(p) < 3.0);
    assert_string_equal(kv_proc_describe(p), "timed out after 0.3 s");
    assert_string_equal(kv_proc_stdout(p), "started\n"); /* output before the kill is kept */
    assert_true(group_is_gone(kv_proc_pid(p)));
    kv_proc_free(p);
}

static void stray_background_child_does_not_outlive_a_normal_exit(void **state)
{
    (void)state;
    /* The background sleep keeps stdout open; the run must still end at once. */
    char *argv[] = {"sh", "-c", "sleep 1000 & echo done", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 20});
    assert_int_equal(kv_proc_how(p), KV_PROC_EXITED);
    assert_int_equal(kv_proc_exit_code(p), 0);
    assert_string_equal(kv_proc_stdout(p), "done\n");
    assert_true(kv_proc_seconds(p) < 3.0);
    assert_true(group_is_gone(kv_proc_pid(p)));
    kv_proc_free(p);
}

static void kill_ends_a_running_group(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "trap '' TERM; sleep 1000 & sleep 1000", NULL};
    kv_proc_spec spec = {.argv = argv};
    char *err = NULL;
    kv_proc *p = kv_proc_start(&spec, &err);
    assert_non_null(p);
    assert_int_equal(kv_proc_poll(p, 50), 0);
    pid_t pgid = kv_proc_pid(p);
    kv_proc_kill(p);
    assert_int_equal(kv_proc_poll(p, 0), 1);
    assert_int_equal(kv_proc_how(p), KV_PROC_KILLED);
    assert_true(group_is_gone(pgid));
    kv_proc_free(p);
}

static void free_of_a_running_process_leaves_no_survivor(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "sleep 1000 & echo started; sleep 1000", NULL};
    kv_proc_spec spec = {.argv = argv};
    char *err = NULL;
    kv_proc *p = kv_proc_start(&spec, &err);
    assert_non_null(p);
    for (int i = 0; i < 200 && !strstr(kv_proc_stdout(p), "started"); i++)
        assert_int_equal(kv_proc_poll(p, 50), 0);
    assert_string_equal(kv_proc_stdout(p), "started\n"); /* the background child exists */
    pid_t pgid = kv_proc_pid(p);
    kv_proc_free(p);
    assert_true(group_is_gone(pgid));
}

static void runs_in_its_own_process_group(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "ps -o pgid= -p $$ 2>/dev/null || cut -d' ' -f5 /proc/$$/stat",
                    NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv});
    assert_int_equal(atoi(kv_proc_stdout(p)), kv_proc_pid(p));
    assert_int_not_equal(kv_proc_pid(p), getpgrp());
    kv_proc_free(p);
}

static void environment_has_no_secrets_but_keeps_the_rest(void **state)
{
    (void)state;
    setenv("OPENAI_API_KEY", "sk-secret", 1);
    setenv("MY_SERVICE_TOKEN", "tok", 1);
    setenv("DB_PASSWORD", "pw", 1);
    setenv("KEVOLVE_TEST_VISIBLE", "yes", 1);
    setenv("KV_TEST_OVERRIDDEN", "old", 1);
    char *argv[] = {"env", NULL};
    char *extra[] = {"KV_TEST_EXTRA=added", "KV_TEST_OVERRIDDEN=new", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .extra_env = extra});
    const char *out = kv_proc_stdout(p);
    assert_null(strstr(out, "OPENAI_API_KEY"));
    assert_null(strstr(out, "sk-secret"));
    assert_null(strstr(out, "MY_SERVICE_TOKEN"));
    assert_null(strstr(out, "DB_PASSWORD"));
    assert_non_null(strstr(out, "KEVOLVE_TEST_VISIBLE=yes\n"));
    assert_non_null(strstr(out, "KV_TEST_EXTRA=added\n"));
    assert_non_null(strstr(out, "KV_TEST_OVERRIDDEN=new\n"));
    assert_null(strstr(out, "KV_TEST_OVERRIDDEN=old"));
    assert_non_null(strstr(out, "PATH="));
    kv_proc_free(p);
    unsetenv("OPENAI_API_KEY");
    unsetenv("MY_SERVICE_TOKEN");
    unsetenv("DB_PASSWORD");
    unsetenv("KEVOLVE_TEST_VISIBLE");
    unsetenv("KV_TEST_OVERRIDDEN");
}

static void secret_names_are_recognised(void **state)
{
    (void)state;
    const char *secret[] = {
        "OPENAI_API_KEY",  "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY",
        "HF_TOKEN",        "GITHUB_TOKEN",      "MY_SERVICE_TOKEN",
        "DB_PASSWORD",     "SMTP_PASSWD",       "GOOGLE_APPLICATION_CREDENTIALS",
        "stripe_secret",   "SOME_API_KEY",      "KEVOLVE_LLM_API_KEY",
        "OPENAI_BASE_URL", "AWS_SESSION_TOKEN", "CLIENT_SECRET_FILE"};
    const char *plain[] = {"PATH",
                           "HOME",
                           "PWD",
                           "OLDPWD",
                           "LANG",
                           "CUDA_VISIBLE_DEVICES",
                           "KEVOLVE_CONFIG_JSON",
                           "KEVOLVE_STAGE",
                           "KEVOLVE_PROGRAM",
                           "PYTHONPATH",
                           "TMPDIR",
                           "USER"};
    for (size_t i = 0; i < sizeof secret / sizeof *secret; i++)
        if (!kv_env_is_secret(secret[i])) fail_msg("%s should be a secret", secret[i]);
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (kv_env_is_secret(plain[i])) fail_msg("%s should not be a secret", plain[i]);
}

static void no_descriptor_of_the_parent_is_inherited(void **state)
{
    (void)state;
    int leaked = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
    assert_true(leaked > 2);
    char script[128];
    snprintf(script, sizeof script, "test -e /proc/self/fd/%d && echo leaked || echo clean",
             leaked);
    char *argv[] = {"sh", "-c", script, NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv});
    assert_string_equal(kv_proc_stdout(p), "clean\n");
    kv_proc_free(p);
    close(leaked);
}

static void stdin_is_empty_so_a_reader_does_not_hang(void **state)
{
    (void)state;
    char *argv[] = {"cat", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 5});
    assert_int_equal(kv_proc_how(p), KV_PROC_EXITED);
    assert_int_equal(kv_proc_stdout_len(p), 0);
    kv_proc_free(p);
}

static void resource_limits_are_applied(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "ulimit -c; ulimit -t; ulimit -v", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .cpu_limit_s = 7, .memory_limit_mb = 512});
    assert_string_equal(kv_proc_stdout(p), "0\n7\n524288\n");
    kv_proc_free(p);
}

static void memory_limit_stops_a_greedy_child(void **state)
{
    (void)state;
    /* A 512 MiB string under a 128 MiB address-space limit cannot be made. */
    char *argv[] = {"python3", "-c", "x = 'a' * (512 << 20); print('allocated')", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .memory_limit_mb = 128});
    assert_null(strstr(kv_proc_stdout(p), "allocated"));
    assert_false(kv_proc_how(p) == KV_PROC_EXITED && kv_proc_exit_code(p) == 0);
    kv_proc_free(p);
}

static void missing_program_is_a_clear_start_error(void **state)
{
    (void)state;
    char *argv[] = {"kv-no-such-program", NULL};
    kv_proc_spec spec = {.argv = argv};
    char *err = NULL;
    assert_null(kv_proc_start(&spec, &err));
    assert_string_equal(err, "cannot run 'kv-no-such-program': No such file or directory");
    free(err);

    char *argv2[] = {"/nonexistent/dir/prog", "x", NULL};
    spec.argv = argv2;
    assert_null(kv_proc_run(&spec, &err));
    assert_string_equal(err, "cannot run '/nonexistent/dir/prog': No such file or directory");
    free(err);
}

static void failed_exec_reports_errno_from_the_child(void **state)
{
    (void)state;
    /* The file exists and is executable, but its interpreter does not:
     * only execve in the child can find out. */
    char path[] = "/tmp/kv_test_proc_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "#!/nonexistent/interpreter\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    chmod(path, 0700);
    char *argv[] = {path, NULL};
    kv_proc_spec spec = {.argv = argv};
    char *err = NULL;
    assert_null(kv_proc_start(&spec, &err));
    char *want = kv_asprintf("cannot run '%s': No such file or directory", path);
    assert_string_equal(err, want);
    free(want);
    free(err);

    /* Not executable at all. */
    chmod(path, 0600);
    assert_null(kv_proc_start(&spec, &err));
    assert_non_null(strstr(err, "Permission denied"));
    free(err);
    unlink(path);
}

static void bad_working_directory_is_a_start_error(void **state)
{
    (void)state;
    char *argv[] = {"true", NULL};
    kv_proc_spec spec = {.argv = argv, .cwd = "/nonexistent/kv/dir"};
    char *err = NULL;
    assert_null(kv_proc_start(&spec, &err));
    assert_non_null(strstr(err, "cannot enter directory '/nonexistent/kv/dir'"));
    free(err);

    spec.cwd = "/tmp";
    char *argv2[] = {"pwd", NULL};
    spec.argv = argv2;
    kv_proc *p = run(spec);
    assert_string_equal(kv_proc_stdout(p), "/tmp\n");
    kv_proc_free(p);
}

static void on_usr1(int sig)
{
    (void)sig;
}

/* The "SigXxx:" mask line of /proc/self/status in TEXT, e.g. "0000000000000000". */
static char *status_mask(const char *text, const char *field)
{
    const char *at = strstr(text, field);
    if (!at) return kv_strdup("?");
    at += strlen(field);
    while (*at == ' ' || *at == '\t')
        at++;
    return kv_strndup(at, strcspn(at, "\n"));
}

static void signals_start_at_default_unblocked_and_the_parents_mask_is_kept(void **state)
{
    (void)state;
    /* The parent handles SIGUSR1, ignores SIGINT and blocks SIGUSR2: none of
     * that may reach the evaluator, and the parent's own mask must survive
     * the start. */
    struct sigaction sa = {.sa_handler = on_usr1}, old_usr1, old_int;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old_usr1), 0);
    assert_int_equal(sigaction(SIGINT, &(struct sigaction){.sa_handler = SIG_IGN}, &old_int), 0);
    sigset_t usr2, before, after;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    assert_int_equal(sigprocmask(SIG_BLOCK, &usr2, &before), 0);

    char *argv[] = {"cat", "/proc/self/status", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv});
    assert_int_equal(sigprocmask(SIG_SETMASK, &before, &after), 0);
    sigaction(SIGUSR1, &old_usr1, NULL);
    sigaction(SIGINT, &old_int, NULL);
    assert_true(sigismember(&after, SIGUSR2));
    assert_false(sigismember(&after, SIGUSR1));

    const char *fields[] = {"SigBlk:", "SigIgn:", "SigCgt:"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        char *mask = status_mask(kv_proc_stdout(p), fields[i]);
        if (strcmp(mask, "0000000000000000") != 0) fail_msg("child %s %s", fields[i], mask);
        free(mask);
    }
    kv_proc_free(p);
}

static void script_without_interpreter_line_runs_under_sh(void **state)
{
    (void)state;
    char path[] = "/tmp/kv_test_proc_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "echo \"from sh: $1\"\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    chmod(path, 0700);
    char *argv[] = {path, "arg", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv});
    unlink(path);
    assert_string_equal(kv_proc_describe(p), "exit 0");
    assert_string_equal(kv_proc_stdout(p), "from sh: arg\n");
    kv_proc_free(p);
}

static void output_is_capped_keeping_the_head_and_counting_the_rest(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "echo HEAD; head -c 200000 /dev/zero | tr '\\0' a; echo >&2 e",
                    NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .max_output = 1000});
    assert_int_equal(kv_proc_how(p), KV_PROC_EXITED);
    assert_int_equal(kv_proc_exit_code(p), 0);
    assert_int_equal(kv_proc_stdout_len(p), 1000);
    assert_int_equal(strlen(kv_proc_stdout(p)), 1000);
    assert_true(strncmp(kv_proc_stdout(p), "HEAD\naaa", 8) == 0);
    assert_int_equal(kv_proc_stdout_dropped(p), 200005 - 1000);
    assert_string_equal(kv_proc_stderr(p), "e\n");
    assert_int_equal(kv_proc_stderr_dropped(p), 0);
    kv_proc_free(p);
}

static void large_output_on_both_streams_does_not_deadlock(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c",
                    "head -c 300000 /dev/zero; head -c 300000 /dev/zero >&2; "
                    "head -c 300000 /dev/zero",
                    NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 10});
    assert_int_equal(kv_proc_how(p), KV_PROC_EXITED);
    assert_int_equal(kv_proc_stdout_len(p), 600000);
    assert_int_equal(kv_proc_stderr_len(p), 300000);
    kv_proc_free(p);
}

static void child_closing_its_output_early_is_harmless(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "exec >&-; sleep 0.1; echo still here >&2", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 5});
    assert_int_equal(kv_proc_how(p), KV_PROC_EXITED);
    assert_int_equal(kv_proc_exit_code(p), 0);
    assert_string_equal(kv_proc_stderr(p), "still here\n");
    kv_proc_free(p);
}

static void poll_reports_running_then_the_end(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "sleep 0.2; echo late", NULL};
    kv_proc_spec spec = {.argv = argv, .timeout_s = 5};
    char *err = NULL;
    kv_proc *p = kv_proc_start(&spec, &err);
    assert_non_null(p);
    assert_int_equal(kv_proc_poll(p, 0), 0);
    assert_string_equal(kv_proc_describe(p), "running");
    int fds[2];
    assert_true(kv_proc_fds(p, fds) == 2);
    assert_true(kv_proc_ms_to_deadline(p) > 4000);
    kv_proc_wait(p);
    assert_int_equal(kv_proc_poll(p, 0), 1);
    assert_int_equal(kv_proc_fds(p, fds), 0);
    assert_int_equal(kv_proc_exit_fd(p), -1);
    assert_string_equal(kv_proc_stdout(p), "late\n");
    assert_true(kv_proc_seconds(p) >= 0.19);
    kv_proc_free(p);
}

/* 1 when process PID no longer exists (a zombie still counts as existing). */
static int process_is_gone(pid_t pid)
{
    return kill(pid, 0) == -1 && errno == ESRCH;
}

/* Waits up to SECONDS for PID to be gone; returns 1 when it is. */
static int wait_gone(pid_t pid, double seconds)
{
    for (int i = 0; i < (int)(seconds * 100); i++) {
        if (process_is_gone(pid)) return 1;
        /* It may be our zombie (we are a subreaper): reap it. */
        (void)waitpid(pid, NULL, WNOHANG);
        usleep(10000);
    }
    return process_is_gone(pid);
}

/* The first number on line LINE (0-based) of TEXT. */
static long line_number(const char *text, int line)
{
    for (int i = 0; i < line && text; i++) {
        text = strchr(text, '\n');
        if (text) text++;
    }
    return text ? strtol(text, NULL, 10) : -1;
}

/* A program that leaves a process behind that called setsid (a new
 * session, so no group kill reaches it) from a double fork (so its parent
 * is gone), prints that process's pid, then runs on for RUN_S seconds. */
static char *escaper_script(int run_s)
{
    return kv_asprintf("(setsid sh -c 'echo $$; exec sleep 1000' &); sleep 0.3; "
                       "echo ready; sleep %d",
                       run_s);
}

static void setsid_grandchild_dies_when_the_program_exits(void **state)
{
    (void)state;
    char *script = escaper_script(0);
    char *argv[] = {"sh", "-c", script, NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 20});
    assert_string_equal(kv_proc_describe(p), "exit 0");
    pid_t escaped = (pid_t)line_number(kv_proc_stdout(p), 0);
    assert_true(escaped > 1);
    assert_true(process_is_gone(escaped)); /* gone at once: the end waited for it */
    assert_true(kv_proc_seconds(p) < 10.0);
    kv_proc_free(p);
    free(script);
}

static void setsid_grandchild_dies_at_the_timeout(void **state)
{
    (void)state;
    char *script = escaper_script(1000);
    char *argv[] = {"sh", "-c", script, NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 1});
    assert_int_equal(kv_proc_how(p), KV_PROC_TIMED_OUT);
    pid_t escaped = (pid_t)line_number(kv_proc_stdout(p), 0);
    assert_true(escaped > 1);
    assert_true(process_is_gone(escaped));
    kv_proc_free(p);
    free(script);
}

static void setsid_grandchild_dies_on_kill(void **state)
{
    (void)state;
    char *script = escaper_script(1000);
    char *argv[] = {"sh", "-c", script, NULL};
    kv_proc_spec spec = {.argv = argv};
    char *err = NULL;
    kv_proc *p = kv_proc_start(&spec, &err);
    assert_non_null(p);
    for (int i = 0; i < 500 && !strstr(kv_proc_stdout(p), "ready"); i++)
        assert_int_equal(kv_proc_poll(p, 20), 0);
    pid_t escaped = (pid_t)line_number(kv_proc_stdout(p), 0);
    assert_true(escaped > 1);
    assert_false(process_is_gone(escaped));
    kv_proc_kill(p);
    assert_int_equal(kv_proc_how(p), KV_PROC_KILLED);
    assert_true(process_is_gone(escaped));
    kv_proc_free(p);
    free(script);
}

static void timeout_holds_while_the_caller_is_busy(void **state)
{
    (void)state;
    /* The supervisor keeps the time: a caller that does not poll (blocked
     * in a long write, say) does not extend the program's life. */
    char *argv[] = {"sh", "-c", "echo $$; exec sleep 1000", NULL};
    kv_proc_spec spec = {.argv = argv, .timeout_s = 0.3};
    char *err = NULL;
    kv_proc *p = kv_proc_start(&spec, &err);
    assert_non_null(p);
    pid_t pid = kv_proc_pid(p);
    assert_true(wait_gone(pid, 5.0));
    kv_proc_wait(p);
    assert_int_equal(kv_proc_how(p), KV_PROC_TIMED_OUT);
    kv_proc_free(p);
}

static void pid_is_the_programs_own(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "echo $$", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv});
    assert_int_equal(line_number(kv_proc_stdout(p), 0), kv_proc_pid(p));
    kv_proc_free(p);
}

static void extra_descriptors_arrive_at_3_and_4_and_no_other(void **state)
{
    (void)state;
    int a[2], b[2];
    assert_int_equal(pipe(a), 0);
    assert_int_equal(pipe(b), 0);
    int leaked = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
    /* ls lists the descriptors of the shell, its parent (a glob would show
     * the shell's own directory descriptor). */
    char *argv[] = {"sh", "-c", "echo three >&3; echo four >&4; ls /proc/$$/fd; true", NULL};
    int fds[] = {b[1], a[1]}; /* in this order: b at 3, a at 4 */
    kv_proc *p = run((kv_proc_spec){.argv = argv, .fds = fds, .n_fds = 2, .timeout_s = 10});
    assert_string_equal(kv_proc_describe(p), "exit 0");
    assert_string_equal(kv_proc_stdout(p), "0\n1\n2\n3\n4\n");
    close(a[1]);
    close(b[1]);
    char buf[64] = {0};
    assert_int_equal(read(b[0], buf, sizeof buf - 1), 6);
    assert_string_equal(buf, "three\n");
    memset(buf, 0, sizeof buf);
    assert_int_equal(read(a[0], buf, sizeof buf - 1), 5);
    assert_string_equal(buf, "four\n");
    /* Nothing holds the write ends any more: the program and its
     * supervisor are gone. */
    assert_int_equal(read(a[0], buf, sizeof buf), 0);
    assert_int_equal(read(b[0], buf, sizeof buf), 0);
    close(a[0]);
    close(b[0]);
    close(leaked);
    kv_proc_free(p);
}

static void too_many_extra_descriptors_is_a_start_error(void **state)
{
    (void)state;
    int fds[KV_PROC_MAX_FDS + 1] = {0};
    char *argv[] = {"true", NULL};
    kv_proc_spec spec = {.argv = argv, .fds = fds, .n_fds = KV_PROC_MAX_FDS + 1};
    char *err = NULL;
    assert_null(kv_proc_start(&spec, &err));
    assert_non_null(strstr(err, "at most 16 extra descriptors"));
    free(err);
}

/* Reads one line (a pid) from FD, waiting up to 10 s. */
static pid_t read_pid_line(int fd)
{
    char buf[32] = {0};
    size_t got = 0;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    while (got < sizeof buf - 1 && !strchr(buf, '\n') && poll(&pf, 1, 10000) > 0) {
        ssize_t n = read(fd, buf + got, 1);
        if (n <= 0) break;
        got += (size_t)n;
    }
    return (pid_t)strtol(buf, NULL, 10);
}

/* A stand-in for kevolve in a fork: starts ESCAPER with no time limit,
 * writes the program's pid and the escaped process's pid to REPORT, then
 * waits for the end of the world. */
static void stand_in_for_kevolve(int report, int use_fork)
{
    kv_proc_test_fork_supervisor(use_fork);
    char *script = escaper_script(1000);
    char *argv[] = {"sh", "-c", script, NULL};
    kv_proc_spec spec = {.argv = argv};
    char *err = NULL;
    kv_proc *p = kv_proc_start(&spec, &err);
    if (!p) _exit(3);
    for (int i = 0; i < 500 && !strstr(kv_proc_stdout(p), "ready"); i++)
        kv_proc_poll(p, 20);
    dprintf(report, "%d\n%ld\n", (int)kv_proc_pid(p), line_number(kv_proc_stdout(p), 0));
    for (;;)
        pause();
}

/* kill -9 of the process that started a program: the program and what it
 * left behind die too, within seconds. */
static void kill_9_of_the_caller_leaves_nothing_behind(int use_fork)
{
    int rep[2];
    assert_int_equal(pipe(rep), 0);
    pid_t caller = fork();
    assert_true(caller >= 0);
    if (caller == 0) {
        close(rep[0]);
        stand_in_for_kevolve(rep[1], use_fork);
    }
    close(rep[1]);
    pid_t program = read_pid_line(rep[0]);
    pid_t escaped = read_pid_line(rep[0]);
    close(rep[0]);
    assert_true(program > 1);
    assert_true(escaped > 1);
    assert_false(process_is_gone(program));
    assert_false(process_is_gone(escaped));
    kill(caller, SIGKILL);
    assert_int_equal(waitpid(caller, NULL, 0), caller);
    assert_true(wait_gone(program, 10.0));
    assert_true(wait_gone(escaped, 10.0));
    /* The orphaned supervisor came back to us (a subreaper): reap it. */
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

static void kill_9_of_the_caller_kills_the_program_and_its_escapees(void **state)
{
    (void)state;
    kill_9_of_the_caller_leaves_nothing_behind(0);
}

static void kill_9_of_the_caller_with_a_forked_supervisor(void **state)
{
    (void)state;
    kill_9_of_the_caller_leaves_nothing_behind(1);
}

static void forked_supervisor_gives_the_same_ends(void **state)
{
    (void)state;
    kv_proc_test_fork_supervisor(1);
    char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv});
    assert_string_equal(kv_proc_describe(p), "exit 3");
    assert_string_equal(kv_proc_stdout(p), "out\n");
    assert_string_equal(kv_proc_stderr(p), "err\n");
    kv_proc_free(p);

    char *script = escaper_script(1000);
    char *argv2[] = {"sh", "-c", script, NULL};
    p = run((kv_proc_spec){.argv = argv2, .timeout_s = 1});
    assert_int_equal(kv_proc_how(p), KV_PROC_TIMED_OUT);
    pid_t escaped = (pid_t)line_number(kv_proc_stdout(p), 0);
    assert_true(escaped > 1);
    assert_true(process_is_gone(escaped));
    kv_proc_free(p);
    free(script);

    char *argv3[] = {"kv-no-such-program-either", NULL};
    kv_proc_spec spec = {.argv = argv3};
    char *err = NULL;
    assert_null(kv_proc_start(&spec, &err));
    free(err);
    char path[] = "/tmp/kv_test_proc_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "#!/nonexistent/interpreter\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    chmod(path, 0700);
    char *argv4[] = {path, NULL};
    spec.argv = argv4;
    assert_null(kv_proc_start(&spec, &err));
    assert_non_null(strstr(err, "No such file or directory"));
    free(err);
    unlink(path);
    kv_proc_test_fork_supervisor(0);
}

static void a_program_that_kills_its_supervisor_still_leaves_nothing(void **state)
{
    (void)state;
    /* Hostile: it starts an escapee, then kills the supervisor watching
     * it. Its own processes come back to us, and we kill them. */
    char *argv[] = {"sh", "-c",
                    "(setsid sh -c 'echo $$; exec sleep 1000' &); sleep 0.3; "
                    "kill -9 $PPID; sleep 1000",
                    NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 30});
    assert_int_equal(kv_proc_how(p), KV_PROC_KILLED);
    assert_string_equal(kv_proc_describe(p), "killed (its supervisor was lost)");
    pid_t escaped = (pid_t)line_number(kv_proc_stdout(p), 0);
    assert_true(escaped > 1);
    assert_true(process_is_gone(escaped));
    assert_true(kv_proc_seconds(p) < 15.0);
    kv_proc_free(p);
}

static void a_time_limit_of_weeks_is_kept_without_overflow(void **state)
{
    (void)state;
    /* Three weeks in milliseconds is past INT_MAX: the waits must not wrap. */
    char *argv[] = {"sh", "-c", "echo \"$KEVOLVE_TIMEOUT\"; sleep 0.2", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 21 * 24 * 3600.0});
    assert_string_equal(kv_proc_describe(p), "exit 0");
    assert_string_equal(kv_proc_stdout(p), "1814400.000\n");
    kv_proc_free(p);
}

/* Run as "test_proc --inner SECONDS": a process that gives itself a budget
 * of SECONDS (as the kernel worker does from its job) starts a program
 * asking for 100 s, which gets what is left of that budget. */
static int inner_main(const char *seconds)
{
    kv_proc_set_budget(atof(seconds));
    char *argv[] = {"sleep", "1000", NULL};
    kv_proc_spec spec = {.argv = argv, .timeout_s = 100};
    char *err = NULL;
    kv_proc *p = kv_proc_run(&spec, &err);
    if (!p) return 3;
    printf("%s\n%.1f\n", kv_proc_describe(p), kv_proc_time_left());
    kv_proc_free(p);
    return 0;
}

static void a_deadline_is_passed_down_to_what_a_program_starts(void **state)
{
    (void)state;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    char *argv[] = {self, "--inner", "3", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 30});
    /* The inner program was stopped first, with a reserve left for the
     * inner process to report: 3 s less 10%. */
    assert_string_equal(kv_proc_describe(p), "exit 0");
    assert_non_null(strstr(kv_proc_stdout(p), "timed out after 2."));
    kv_proc_free(p);
    /* The time limit a process is started with is not its budget: only
     * what it gives itself is (the worker reads its job, not its
     * environment). */
    kv_proc_set_budget(0);
    assert_true(kv_proc_time_left() < 0);
}

static void a_stopped_clock_does_not_run_the_limit_down(void **state)
{
    (void)state;
    /* 1.2 s of sleep under a limit of 0.8 s: killed, unless the clock is
     * stopped for 0.8 s of it (waiting for a device is not the program's
     * time), which moves the limit to 1.6 s. */
    char *argv[] = {"sleep", "1.2", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 0.8});
    assert_int_equal(kv_proc_how(p), KV_PROC_TIMED_OUT);
    kv_proc_free(p);
    char *err = NULL;
    kv_proc_spec spec = {.argv = argv, .timeout_s = 0.8};
    p = kv_proc_start(&spec, &err);
    assert_non_null(p);
    kv_proc_pause_clock(p);
    assert_int_equal(kv_proc_ms_to_deadline(p), -1); /* no deadline while stopped */
    struct timespec ts = {0, 800 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kv_proc_resume_clock(p);
    kv_proc_wait(p);
    assert_string_equal(kv_proc_describe(p), "exit 0");
    kv_proc_free(p);
}

static void environment_carries_the_time_limit(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "echo \"${KEVOLVE_TIMEOUT:-none}\"", NULL};
    kv_proc *p = run((kv_proc_spec){.argv = argv, .timeout_s = 7.5});
    assert_string_equal(kv_proc_stdout(p), "7.500\n");
    kv_proc_free(p);
    setenv("KEVOLVE_TIMEOUT", "99", 1); /* set after our start: not ours, not passed on */
    p = run((kv_proc_spec){.argv = argv});
    assert_string_equal(kv_proc_stdout(p), "none\n");
    kv_proc_free(p);
    unsetenv("KEVOLVE_TIMEOUT");
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--inner") == 0) return inner_main(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exit_code_and_output_are_captured),
        cmocka_unit_test(death_by_signal_is_described_by_name),
        cmocka_unit_test(timeout_kills_whole_group_even_a_child_ignoring_sigterm),
        cmocka_unit_test(stray_background_child_does_not_outlive_a_normal_exit),
        cmocka_unit_test(kill_ends_a_running_group),
        cmocka_unit_test(free_of_a_running_process_leaves_no_survivor),
        cmocka_unit_test(runs_in_its_own_process_group),
        cmocka_unit_test(environment_has_no_secrets_but_keeps_the_rest),
        cmocka_unit_test(secret_names_are_recognised),
        cmocka_unit_test(no_descriptor_of_the_parent_is_inherited),
        cmocka_unit_test(stdin_is_empty_so_a_reader_does_not_hang),
        cmocka_unit_test(resource_limits_are_applied),
        cmocka_unit_test(memory_limit_stops_a_greedy_child),
        cmocka_unit_test(missing_program_is_a_clear_start_error),
        cmocka_unit_test(failed_exec_reports_errno_from_the_child),
        cmocka_unit_test(bad_working_directory_is_a_start_error),
        cmocka_unit_test(signals_start_at_default_unblocked_and_the_parents_mask_is_kept),
        cmocka_unit_test(script_without_interpreter_line_runs_under_sh),
        cmocka_unit_test(output_is_capped_keeping_the_head_and_counting_the_rest),
        cmocka_unit_test(large_output_on_both_streams_does_not_deadlock),
        cmocka_unit_test(child_closing_its_output_early_is_harmless),
        cmocka_unit_test(poll_reports_running_then_the_end),
        cmocka_unit_test(setsid_grandchild_dies_when_the_program_exits),
        cmocka_unit_test(setsid_grandchild_dies_at_the_timeout),
        cmocka_unit_test(setsid_grandchild_dies_on_kill),
        cmocka_unit_test(timeout_holds_while_the_caller_is_busy),
        cmocka_unit_test(pid_is_the_programs_own),
        cmocka_unit_test(extra_descriptors_arrive_at_3_and_4_and_no_other),
        cmocka_unit_test(too_many_extra_descriptors_is_a_start_error),
        cmocka_unit_test(kill_9_of_the_caller_kills_the_program_and_its_escapees),
        cmocka_unit_test(kill_9_of_the_caller_with_a_forked_supervisor),
        cmocka_unit_test(forked_supervisor_gives_the_same_ends),
        cmocka_unit_test(a_program_that_kills_its_supervisor_still_leaves_nothing),
        cmocka_unit_test(a_deadline_is_passed_down_to_what_a_program_starts),
        cmocka_unit_test(environment_carries_the_time_limit),
        cmocka_unit_test(a_stopped_clock_does_not_run_the_limit_down),
        cmocka_unit_test(a_time_limit_of_weeks_is_kept_without_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
