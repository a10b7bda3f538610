/* The warm pool's client in C (`kevolve pyeval-client SOCKET PROGRAM
 * [--stage N]`): what `runner.py --connect` does, without starting an
 * interpreter. kevolve runs it as the evaluation's process, so the usual
 * timeout and kill apply; the pool kills the worker serving a client that
 * goes away. It sends one JSON line {"program", "stage", "env": KEVOLVE_*}
 * and relays the two-line answer: the evaluator's stdout and stderr from the
 * header, then the result line as it came. */
#include "eval/pyeval.h"
#include "util/buf.h"
#include "util/fs.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static int native_client;

void kv_pyeval_enable_native_client(void)
{
    native_client = 1;
}

int kv_pyeval_native_client(void)
{
    return native_client;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int kv_pyeval_client_main(int argc, char **argv)
{
    if (argc != 3 && !(argc == 5 && strcmp(argv[3], "--stage") == 0)) {
        fprintf(stderr, "usage: kevolve pyeval-client SOCKET PROGRAM [--stage N]\n");
        return 2;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof addr.sun_path) {
        fprintf(stderr, "pyeval-client: socket path too long: %s\n", argv[1]);
        return 2;
    }
    strcpy(addr.sun_path, argv[1]);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        fprintf(stderr, "the warm Python pool is not reachable at %s: %s\n", argv[1],
                strerror(errno));
        if (fd >= 0) close(fd);
        return 2;
    }
    char *program = kv_path_absolute(argv[2]);
    json_t *env = json_object();
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq && strncmp(*e, "KEVOLVE_", 8) == 0) {
            char *name = kv_strndup(*e, (size_t)(eq - *e));
            json_object_set_new(env, name, json_string(eq + 1));
            free(name);
        }
    }
    json_t *req = json_pack("{s:s, s:i, s:o}", "program", program ? program : argv[2], "stage",
                            argc == 5 ? atoi(argv[4]) : 0, "env", env);
    free(program);
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    kv_buf line = KV_BUF_INIT;
    kv_buf_printf(&line, "%s\n", text ? text : "{}");
    free(text);
    /* The connection stays open both ways: the pool reads a hang-up as "killed". */
    int rc = write_all(fd, line.data, line.len);
    kv_buf_free(&line);
    kv_buf reply = KV_BUF_INIT;
    char chunk[65536];
    for (ssize_t n; rc == 0 && (n = read(fd, chunk, sizeof chunk)) != 0;) {
        if (n < 0) {
            if (errno == EINTR) continue;
            rc = -1;
            break;
        }
        kv_buf_append(&reply, chunk, (size_t)n);
    }
    close(fd);
    const char *data = reply.data ? reply.data : "";
    const char *nl = strchr(data, '\n');
    json_error_t jerr;
    json_t *head = nl ? json_loadb(data, (size_t)(nl - data), 0, &jerr) : NULL;
    if (rc != 0 || !json_is_object(head)) {
        fprintf(stderr, "the warm Python pool closed the connection without a reply\n");
        json_decref(head);
        kv_buf_free(&reply);
        return 2;
    }
    const char *out = json_string_value(json_object_get(head, "stdout"));
    const char *err = json_string_value(json_object_get(head, "stderr"));
    const char *crash = json_string_value(json_object_get(head, "crash"));
    if (out) write_all(1, out, strlen(out));
    if (err) write_all(2, err, strlen(err));
    int status = 0;
    if (crash) {
        fprintf(stderr, "%s\n", crash);
        status = 1;
    } else {
        write_all(1, "\n", 1);
        write_all(1, nl + 1, strlen(nl + 1));
    }
    json_decref(head);
    kv_buf_free(&reply);
    return status;
}
