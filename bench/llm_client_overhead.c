/* Benchmark: the LLM client's own CPU cost per call. Starts
 * tests/tools/fake_llm_server.py on loopback (its CPU is another process's
 * and is not counted), pushes CALLS requests through the client with a given
 * number in flight, and reports the process's user+sys CPU time (getrusage)
 * divided by the calls, next to the wall time.
 *
 *   llm_client_overhead [calls (default 2000)] [prompt bytes (default 8000)] */
#include "llm/client.h"
#include "util/buf.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Starts the fake server; returns its pid and port in *port, or -1. */
static pid_t start_server(int *port)
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        char *argv[] = {"python3", KV_SOURCE_DIR "/tests/tools/fake_llm_server.py", "--idle", "30",
                        NULL};
        execvp("python3", argv);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    if (!f || fscanf(f, "%d", port) != 1) return -1;
    fclose(f);
    return pid;
}

/* Runs CALLS requests with IN_FLIGHT at once. Returns 0, or -1. */
static int run(const char *api_base, int calls, int in_flight, const char *prompt)
{
    kv_llm_config llm;
    memset(&llm, 0, sizeof llm);
    llm.api_base = (char *)api_base;
    llm.api_key = "sk-bench-not-a-real-key-000000";
    llm.temperature = 0.7;
    llm.top_p = 0.95;
    llm.max_tokens = 4096;
    llm.timeout = 30;
    llm.retries = 0;
    llm.max_concurrency = in_flight;
    kv_model_config m;
    memset(&m, 0, sizeof m);
    m.name = "bench-model";
    m.temperature = m.top_p = m.retry_delay = NAN;
    m.retries = -1;
    m.is_reasoning = -1;
    char *err = NULL;
    kv_llm_client *c = kv_llm_client_new(&llm, 1, &err);
    if (!c) return -1;
    int submitted = 0, done = 0, failed = 0;
    double c0 = cpu_s(), w0 = wall_s();
    while (done < calls) {
        while (submitted < calls && kv_llm_pending(c) < in_flight) {
            kv_llm_request req = {&m, "system", prompt, (uint64_t)submitted};
            if (kv_llm_submit(c, &req, &err) != 0) return -1;
            submitted++;
        }
        kv_llm_result r;
        int rc = kv_llm_poll(c, 100, &r, &err);
        if (rc < 0) return -1;
        if (rc == 1) {
            failed += !r.ok;
            done++;
            kv_llm_result_free(&r);
        }
    }
    double cpu = cpu_s() - c0, wall = wall_s() - w0;
    printf("| %6d | %9d | %7.2f | %8.0f | %12.1f | %6d |\n", calls, in_flight, wall, calls / wall,
           cpu / calls * 1e6, failed);
    kv_llm_client_free(c);
    return failed ? -1 : 0;
}

int main(int argc, char **argv)
{
    int calls = argc > 1 ? atoi(argv[1]) : 2000;
    int bytes = argc > 2 ? atoi(argv[2]) : 8000;
    int port = 0;
    pid_t pid = start_server(&port);
    if (pid < 0) {
        fprintf(stderr, "cannot start the fake server\n");
        return 1;
    }
    char *api_base = kv_asprintf("http://127.0.0.1:%d/v1", port);
    char *prompt = kv_malloc((size_t)bytes + 1);
    for (int i = 0; i < bytes; i++)
        prompt[i] = (char)('a' + i % 26);
    prompt[bytes] = '\0';
    printf("LLM client CPU per call (user+sys of this process), prompt %d bytes\n\n", bytes);
    printf("|  calls | in flight |  wall s |  calls/s | CPU us/call | failed |\n");
    printf("|-------:|----------:|--------:|---------:|------------:|-------:|\n");
    int rc = run(api_base, calls / 4, 1, prompt);
    if (rc == 0) rc = run(api_base, calls, 64, prompt);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    free(prompt);
    free(api_base);
    return rc == 0 ? 0 : 1;
}
