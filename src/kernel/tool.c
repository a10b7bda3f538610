/* Running external tools with a time limit (see tool.h). */
#include "kernel/tool.h"
#include "util/clock.h"
#include "util/buf.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int kv_tool_run(char *const *argv, double timeout_s, char **output)
{
    kv_buf out = KV_BUF_INIT;
    int fds[2];
    if (pipe(fds) != 0) {
        *output = kv_asprintf("pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        *output = kv_asprintf("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    double deadline = kv_now_s() + timeout_s;
    int timed_out = 0;
    char chunk[4096];
    for (;;) {
        double left = deadline - kv_now_s();
        if (left <= 0) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        ssize_t n = read(fds[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (out.len < (8u << 20)) kv_buf_append(&out, chunk, (size_t)n);
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    *output = kv_buf_steal(&out);
    if (timed_out) return -2;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    int code = WEXITSTATUS(status);
    return code == 127 && strstr(*output, "cannot run ") ? -1 : code;
}

char *kv_tool_which(const char *program)
{
    if (!program || !*program) return NULL;
    if (strchr(program, '/')) return access(program, X_OK) == 0 ? kv_strdup(program) : NULL;
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *cand = kv_asprintf("%.*s/%s", (int)len, len ? p : ".", program);
        if (access(cand, X_OK) == 0) return cand;
        free(cand);
        if (!end) break;
        p = end + 1;
    }
    return NULL;
}
