/* Running external tools with a time limit (see tool.h). */
#include "kernel/tool.h"
#include "util/buf.h"
#include "util/proc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes kept of each of a tool's streams. */
#define KV_TOOL_MAX_OUTPUT ((size_t)8 << 20)

int kv_tool_run(char *const *argv, double timeout_s, char **output)
{
    kv_proc_spec spec = {.argv = argv, .timeout_s = timeout_s, .max_output = KV_TOOL_MAX_OUTPUT};
    char *err = NULL;
    kv_proc *p = kv_proc_run(&spec, &err);
    if (!p) {
        *output = err ? err : kv_strdup("cannot start");
        return -1;
    }
    kv_buf out = KV_BUF_INIT;
    kv_buf_append(&out, kv_proc_stdout(p), kv_proc_stdout_len(p));
    kv_buf_append(&out, kv_proc_stderr(p), kv_proc_stderr_len(p));
    *output = out.data ? kv_buf_steal(&out) : kv_strdup("");
    int rc;
    switch (kv_proc_how(p)) {
    case KV_PROC_EXITED:
        rc = kv_proc_exit_code(p);
        break;
    case KV_PROC_SIGNALED:
        rc = 128 + kv_proc_signal(p);
        break;
    case KV_PROC_TIMED_OUT:
        rc = -2;
        break;
    default:
        rc = 128 + 9; /* killed by its supervisor */
        break;
    }
    kv_proc_free(p);
    return rc;
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
