/* Test helper (header only, included by the test_llm_*.c programs): starts
 * tests/tools/fake_llm_server.py on loopback with a script, reads its port,
 * reads back the requests it recorded, and stops it. */
#ifndef KV_TEST_LLM_SERVER_H
#define KV_TEST_LLM_SERVER_H

#include "config/config.h"
#include "util/buf.h"
#include "util/fs.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fake_server {
    pid_t pid;
    int port;
    char dir[64];
    char *record_path;
    char *api_base; /* "http://127.0.0.1:PORT/v1" */
} fake_server;

/* Path of the server script: $KV_SOURCE_DIR, else next to this file. */
static inline char *fake_server_script(void)
{
    const char *src = getenv("KV_SOURCE_DIR");
    if (src && *src) return kv_asprintf("%s/tests/tools/fake_llm_server.py", src);
    char *dir = kv_path_dirname(__FILE__);
    char *p = kv_asprintf("%s/../tools/fake_llm_server.py", dir);
    free(dir);
    return p;
}

/* Starts the server with SCRIPT_JSON (a JSON text: list of steps or
 * {"steps", "mode"}); EXTRA is one more argument (e.g. "--no-keepalive") or
 * NULL. Returns 0, or -1 (message on stderr). */
static inline int fake_server_start(fake_server *s, const char *script_json, const char *extra)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/kv_llm_test_XXXXXX");
    if (!mkdtemp(s->dir)) return -1;
    char *script_path = kv_path_join(s->dir, "script.json");
    s->record_path = kv_path_join(s->dir, "record.jsonl");
    if (kv_write_file(script_path, script_json, strlen(script_json)) != 0) return -1;
    char *server = fake_server_script();
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        char *argv[] = {"python3",      server,   "--script", script_path,   "--record",
                        s->record_path, "--idle", "20",       (char *)extra, NULL};
        execvp("python3", argv);
        _exit(127);
    }
    close(fds[1]);
    free(script_path);
    free(server);
    if (pid < 0) return -1;
    s->pid = pid;
    FILE *f = fdopen(fds[0], "r");
    if (!f || fscanf(f, "%d", &s->port) != 1) {
        fprintf(stderr, "fake_llm_server.py did not print its port\n");
        if (f) fclose(f);
        return -1;
    }
    fclose(f);
    s->api_base = kv_asprintf("http://127.0.0.1:%d/v1", s->port);
    return 0;
}

/* The requests recorded so far, as a JSON array (caller decrefs). */
static inline json_t *fake_server_requests(const fake_server *s)
{
    json_t *all = json_array();
    char *text = kv_read_file(s->record_path, NULL);
    if (!text) return all;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *v = json_loads(line, 0, NULL);
        if (v) json_array_append_new(all, v);
    }
    free(text);
    return all;
}

/* The raw text of the record file ("" when none). Caller frees. */
static inline char *fake_server_record_text(const fake_server *s)
{
    char *text = kv_read_file(s->record_path, NULL);
    return text ? text : kv_strdup("");
}

static inline void fake_server_stop(fake_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
    }
    if (s->dir[0]) kv_remove_tree(s->dir);
    free(s->record_path);
    free(s->api_base);
    memset(s, 0, sizeof *s);
}

/* A model entry with every field "inherit", named NAME. */
static inline kv_model_config test_model(const char *name)
{
    kv_model_config m;
    memset(&m, 0, sizeof m);
    m.name = (char *)name;
    m.weight = 1.0;
    m.temperature = NAN;
    m.top_p = NAN;
    m.retries = -1;
    m.retry_delay = NAN;
    m.is_reasoning = -1;
    return m;
}

/* An llm section pointing at API_BASE, quick to retry. */
static inline kv_llm_config test_llm(const char *api_base)
{
    kv_llm_config l;
    memset(&l, 0, sizeof l);
    l.api_base = (char *)api_base;
    l.temperature = 0.7;
    l.top_p = 0.95;
    l.max_tokens = 256;
    l.timeout = 5;
    l.retries = 3;
    l.retry_delay = 0.01;
    l.max_concurrency = 8;
    return l;
}

#endif
