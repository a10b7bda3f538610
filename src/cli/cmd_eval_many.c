/* `kevolve eval ... A B C`: several candidates judged one after another the
 * way a run judges its children: through the evaluator, so that the
 * device's long-lived judge (kernel/judge_server.h) serves them all and
 * what it keeps from the first serves the next. One JSON line per
 * candidate on stdout, in order. */
#include "cli/cli.h"
#include "eval/evaluator.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

#include <kevolve/kevolve.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file suffix a backend's evaluator expects of a candidate. */
static const char *suffix_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && !strchr(dot, '/') ? dot : ".c";
}

int kv_cli_eval_many(const kv_job *tmpl, char *const *cands, int n)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = '\0';
    char tmp[] = "/tmp/kevolve-eval-XXXXXX";
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "kevolve eval: cannot make a work folder in /tmp\n");
        return KV_EXIT_FAILURE;
    }
    kv_evaluator_config cfg = {.timeout = tmpl->limits.total_s,
                               .parallel_evaluations = 1,
                               .enable_artifacts = 1,
                               .max_artifact_storage = 1 << 20,
                               .cascade_evaluation = 0};
    char *err = NULL;
    int device = tmpl->device;
    kv_evaluator *ev = kv_evaluator_new_task(&cfg, tmpl, self, &device, 1, tmp, &err);
    if (!ev) {
        fprintf(stderr, "kevolve eval: %s\n", err);
        free(err);
        kv_remove_tree(tmp);
        return KV_EXIT_FAILURE;
    }
    if (tmpl->run_dir) kv_evaluator_set_run_dir(ev, tmpl->run_dir);
    if (tmpl->backend && strcmp(tmpl->backend, "auto") != 0)
        kv_evaluator_set_backend(ev, tmpl->backend);
    int rc = KV_EXIT_OK;
    for (int i = 0; i < n; i++) {
        char *why = NULL, *src = kv_read_source(cands[i], &why);
        kv_eval_result r;
        if (!src || kv_evaluator_run_one(ev, src, suffix_of(cands[i]), &r) != 0) {
            if (why)
                fprintf(stderr, "kevolve eval: %s\n", why);
            else
                fprintf(stderr, "kevolve eval: cannot queue %s\n", cands[i]);
            free(why);
            free(src);
            rc = KV_EXIT_FAILURE;
            continue;
        }
        free(src);
        json_t *line = json_pack("{s:s,s:s,s:s?,s:s?,s:O,s:O}", "candidate", cands[i], "status",
                                 kv_status_name(r.status), "reason_code", r.reason_code, "reason",
                                 r.reason, "metrics", r.metrics, "artifacts", r.artifacts);
        char *text = kv_json_dumps(line);
        printf("%s\n", text);
        fflush(stdout);
        free(text);
        json_decref(line);
        kv_eval_result_clear(&r);
    }
    kv_evaluator_free(ev);
    kv_remove_tree(tmp);
    return rc;
}
