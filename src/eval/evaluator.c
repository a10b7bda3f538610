/* The evaluation pipeline (see evaluator.h): a FIFO queue of programs, up to
 * parallel_evaluations of them running at once as sandboxed kv_proc
 * children, each job a small state machine over cascade stages and retries.
 * kv_evaluator_poll sleeps in one poll(2) over the pipes and exit
 * descriptors of every running child, so the controller never spins, and
 * hands back results in the order they finish. */
#include "eval/evaluator.h"
#include "eval/device_judges.h"
#include "eval/launcher.h"
#include "util/clock.h"
#include "eval/eval_output.h"
#include "eval/pyeval.h"
#include "eval/slots.h"
#include "util/eval_job.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/slot_channel.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Bytes of stdout and stderr kept as artifacts (their tails). */
#define KV_EVAL_TAIL_BYTES 4096
/* Output captured per stream of one run. */
#define KV_EVAL_MAX_OUTPUT ((size_t)4 << 20)
/* How often to wake when a child has no exit descriptor (no pidfd). */
#define KV_EVAL_SLICE_MS 20

typedef struct job {
    int64_t ticket;
    char *program_path;
    char *parent_metrics_path; /* KEVOLVE_PARENT_METRICS, or NULL */
    json_t *parent_screen;     /* a kernel job's parent: {"combined_score", "speedup"}, or NULL */
    char *job_path;            /* a kernel job's document, or NULL */
    int slot_sock;             /* our end of a kernel job's device-slot channel, or -1 */
    int judge_end; /* the judge's end of a kernel job's channel to it, until the job's device is
                      known, or -1 */
    kv_scenario_results rows; /* a kernel job's rows per scenario, from its last run */
    int stage;                /* 1-based stage now running */
    int attempt;              /* runs of the current stage so far */
    int first_attempts;       /* runs of stage 1 */
    int lost;                 /* runs the launcher lost (Slurm), started again */
    int moved;                /* runs moved off a device that failed its check */
    char *step_name;          /* its current run's name under a launcher (Slurm), or NULL */
    int device;               /* the device its current run was bound to or handed (slots), or -1 */
    kv_proc *proc;            /* NULL while queued */
    double started;           /* monotonic seconds, when it first started */
    json_t *metrics;          /* merged over stages */
    json_t *artifacts;        /* merged over stages */
    json_t *stages;           /* one record per stage run */
    struct job *next;         /* queue link */
} job;

/* How the messages name J: the controller's tickets are 0, -1, -2, ...
 * for the initial programs and the iteration for a child. */
static const char *job_name(const job *j, char *buf, size_t cap)
{
    if (j->ticket <= 0)
        snprintf(buf, cap, "initial program %lld", (long long)(1 - j->ticket));
    else
        snprintf(buf, cap, "iteration %lld", (long long)j->ticket);
    return buf;
}

struct kv_evaluator {
    double timeout;
    int max_retries;
    int cascade;
    int py_stages; /* an OpenEvolve module's stage count (pyeval), 0 otherwise */
    kv_pyeval *py; /* set when the evaluator is an OpenEvolve Python module */
    double *thresholds;
    size_t n_thresholds;
    size_t parallel;
    int enable_artifacts;
    size_t max_artifact;
    long memory_limit_mb;

    char **command; /* argv prefix, NULL-terminated */
    size_t n_command;
    char **launch; /* the launcher's words before it (srun ...), or NULL (launcher.h) */
    size_t n_launch;
    int launch_retries; /* runs a launcher lost that are started again */
    /* A built-in kernel task: every child is the job JSON (util/eval_job.h)
     * run by `WORKER eval --job FILE`, its device from SLOTS. */
    json_t *job;
    kv_slots *slots;
    /* The devices' long-lived judges (device_judges.h), with SLOTS alone;
     * NULL when KEVOLVE_JUDGE_SERVER is 0 (each job its own judge). */
    kv_device_judges *judges;
    char *backend;         /* the backend of SLOTS' devices, for their health checks */
    json_t *device_events; /* devices taken out of rotation since the caller last looked */
    char *work_dir;
    char *config_json_path; /* NULL when no sections */
    char *run_dir;          /* KEVOLVE_RUN_DIR, or NULL */

    job *queue_head, *queue_tail;
    size_t n_queued;
    job **running;
    size_t n_running;
    kv_eval_result *done; /* FIFO of finished results */
    size_t n_done, cap_done;
    int64_t private_ticket; /* for kv_evaluator_run_one */
};

static int keep_programs(void)
{
    const char *v = getenv("KEVOLVE_KEEP_PROGRAMS");
    return v && *v;
}

void kv_eval_result_clear(kv_eval_result *r)
{
    if (!r) return;
    free(r->reason);
    free(r->reason_code);
    json_decref(r->metrics);
    json_decref(r->artifacts);
    json_decref(r->stages);
    kv_scenario_results_clear(&r->scenarios);
    memset(r, 0, sizeof *r);
}

/* ---- setup ------------------------------------------------------------ */

static void free_command(char **cmd)
{
    for (char **c = cmd; c && *c; c++)
        free(*c);
    free(cmd);
}

/* The argv prefix that runs COMMAND, or NULL with *err. */
static char **resolve_command(const char *command, size_t *n, char **err)
{
    char **cmd = kv_calloc(3, sizeof(char *));
    if (kv_is_file(command)) {
        char *abs = kv_path_absolute(command);
        if (!abs) {
            *err = kv_asprintf("evaluator '%s': %s", command, strerror(errno));
            free(cmd);
            return NULL;
        }
        if (access(abs, X_OK) == 0) {
            cmd[0] = abs;
        } else if (kv_ends_with(abs, ".py")) {
            cmd[0] = kv_strdup("python3");
            cmd[1] = abs;
        } else if (kv_ends_with(abs, ".sh")) {
            cmd[0] = kv_strdup("sh");
            cmd[1] = abs;
        } else {
            *err = kv_asprintf("evaluator '%s' is not executable (make it executable, or name it "
                               "*.py or *.sh)",
                               command);
            free(abs);
            free(cmd);
            return NULL;
        }
        *n = cmd[1] ? 2 : 1;
        return cmd;
    }
    if (strpbrk(command, " \t")) { /* "python3 -u eval.py": split on blanks */
        free(cmd);
        size_t cap = 4, k = 0;
        cmd = kv_calloc(cap, sizeof(char *));
        for (const char *p = command; *p;) {
            p += strspn(p, " \t");
            size_t len = strcspn(p, " \t");
            if (!len) break;
            if (k + 1 >= cap) {
                cap *= 2;
                cmd = kv_realloc(cmd, cap * sizeof(char *));
            }
            cmd[k++] = kv_strndup(p, len);
            p += len;
        }
        cmd[k] = NULL;
        *n = k;
        return cmd;
    }
    *err = kv_asprintf("evaluator '%s': No such file", command);
    free(cmd);
    return NULL;
}

/* The settings every evaluator takes from CFG: timeout, retries, cascade
 * thresholds, parallelism, artifacts, memory; WORK_DIR absolute. */
static kv_evaluator *evaluator_alloc(const kv_evaluator_config *cfg, const char *work_dir,
                                     int cascade)
{
    kv_evaluator *ev = kv_calloc(1, sizeof *ev);
    ev->work_dir = kv_path_absolute(work_dir);
    if (!ev->work_dir) ev->work_dir = kv_strdup(work_dir);
    ev->timeout = cfg->timeout;
    ev->max_retries = cfg->max_retries > 0 ? cfg->max_retries : 0;
    ev->cascade = cascade;
    if (ev->cascade && cfg->n_cascade_thresholds) {
        ev->n_thresholds = cfg->n_cascade_thresholds;
        ev->thresholds = kv_calloc(ev->n_thresholds, sizeof(double));
        memcpy(ev->thresholds, cfg->cascade_thresholds, ev->n_thresholds * sizeof(double));
    }
    ev->parallel = cfg->parallel_evaluations > 0 ? (size_t)cfg->parallel_evaluations : 1;
    ev->enable_artifacts = cfg->enable_artifacts;
    ev->max_artifact = cfg->max_artifact_storage > 0 ? (size_t)cfg->max_artifact_storage : 0;
    ev->memory_limit_mb = cfg->memory_limit_mb;
    ev->running = kv_calloc(ev->parallel, sizeof(job *));
    ev->launch = kv_launcher_prefix(cfg, &ev->n_launch);
    ev->launch_retries = cfg->slurm_retries > 0 ? cfg->slurm_retries : 0;
    return ev;
}

kv_evaluator *kv_evaluator_new(const kv_evaluator_config *cfg, const char *command,
                               const char *work_dir, const json_t *sections, char **err)
{
    *err = NULL;
    if (!cfg || !command || !*command || !work_dir || !*work_dir) {
        *err = kv_strdup("evaluator: a configuration, a command and a work directory are needed");
        return NULL;
    }
    if (cfg->cascade_evaluation && cfg->n_cascade_thresholds && !cfg->cascade_thresholds) {
        *err = kv_strdup("evaluator: cascade thresholds missing");
        return NULL;
    }
    size_t n_command = 0;
    kv_pyeval *py = NULL;
    char **cmd = kv_pyeval_wants(command, cfg->python_module)
                     ? kv_calloc(1, sizeof(char *)) /* filled from py below */
                     : resolve_command(command, &n_command, err);
    if (!cmd) return NULL;
    if (kv_mkdir_p(work_dir, 0755) != 0) {
        *err = kv_asprintf("evaluator: cannot create work directory '%s': %s", work_dir,
                           strerror(errno));
        free_command(cmd);
        return NULL;
    }
    if (!cmd[0]) { /* an OpenEvolve module: its runner's command (see pyeval.h) */
        free(cmd);
        if (!(py = kv_pyeval_new(cfg, command, work_dir, err))) return NULL;
        char *const *pa = kv_pyeval_argv(py, &n_command);
        cmd = kv_calloc(n_command + 1, sizeof(char *));
        for (size_t i = 0; i < n_command; i++)
            cmd[i] = kv_strdup(pa[i]);
    }
    int py_stages = py ? kv_pyeval_stages(py) : 0;
    kv_evaluator *ev =
        evaluator_alloc(cfg, work_dir, py ? py_stages > 0 : cfg->cascade_evaluation == 1);
    ev->command = cmd;
    ev->n_command = n_command;
    ev->py = py;
    ev->py_stages = py_stages;

    if (sections) {
        ev->config_json_path = kv_path_join(ev->work_dir, "kevolve_config.json");
        char *text = json_dumps(sections, JSON_INDENT(2) | JSON_ENCODE_ANY);
        int rc = text ? kv_write_file(ev->config_json_path, text, strlen(text)) : -1;
        int e = errno;
        free(text);
        if (rc != 0) {
            *err =
                kv_asprintf("evaluator: cannot write '%s': %s", ev->config_json_path, strerror(e));
            kv_evaluator_free(ev);
            return NULL;
        }
    }
    return ev;
}

kv_evaluator *kv_evaluator_new_task(const kv_evaluator_config *cfg, const kv_job *tmpl,
                                    const char *worker, const int *devices, size_t n_devices,
                                    const char *work_dir, char **err)
{
    *err = NULL;
    if (!cfg || !tmpl || !worker || !n_devices || !work_dir || !*work_dir) {
        *err = kv_strdup("evaluator: a job, the worker binary, a device and a work directory are "
                         "needed");
        return NULL;
    }
    if (kv_mkdir_p(work_dir, 0755) != 0) {
        *err = kv_asprintf("evaluator: cannot create work directory '%s': %s", work_dir,
                           strerror(errno));
        return NULL;
    }
    kv_evaluator *ev = evaluator_alloc(cfg, work_dir, cfg->cascade_evaluation == 1);
    ev->command = kv_calloc(4, sizeof(char *));
    ev->command[0] = kv_strdup(worker);
    ev->command[1] = kv_strdup("eval");
    ev->command[2] = kv_strdup("--job");
    ev->n_command = 3;
    ev->job = kv_job_to_json(tmpl);
    /* Under a launcher that places evaluations on other machines, each
     * one's device is the scheduler's to give: no slots here. */
    if (!ev->launch) ev->slots = kv_slots_new(devices, n_devices);
    if (ev->slots) ev->judges = kv_device_judges_new(worker);
    return ev;
}

/* ---- jobs --------------------------------------------------------------- */

static void job_free(job *j)
{
    if (!j) return;
    kv_proc_free(j->proc);
    if (j->slot_sock >= 0) close(j->slot_sock);
    if (j->judge_end >= 0) close(j->judge_end);
    if (j->job_path && !keep_programs()) unlink(j->job_path);
    free(j->job_path);
    free(j->step_name);
    json_decref(j->parent_screen);
    kv_scenario_results_clear(&j->rows);
    if (j->program_path && !keep_programs()) unlink(j->program_path);
    if (j->parent_metrics_path && !keep_programs()) unlink(j->parent_metrics_path);
    free(j->program_path);
    free(j->parent_metrics_path);
    json_decref(j->metrics);
    json_decref(j->artifacts);
    json_decref(j->stages);
    free(j);
}

/* The text of an artifact cut to the storage limit (at a character boundary). */
static json_t *limit_artifact(const kv_evaluator *ev, json_t *v)
{
    if (!ev->max_artifact) return json_incref(v);
    const char *text;
    size_t len;
    char *dumped = NULL;
    if (json_is_string(v)) {
        text = json_string_value(v);
        len = json_string_length(v);
    } else {
        dumped = kv_json_dumps(v);
        text = dumped;
        len = strlen(dumped);
    }
    json_t *out;
    if (len <= ev->max_artifact) {
        out = json_incref(v);
    } else {
        size_t n = ev->max_artifact;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
            n--;
        char *cut = kv_eval_clean_text(text, n);
        out = json_string(cut);
        free(cut);
    }
    free(dumped);
    return out;
}

/* Last KV_EVAL_TAIL_BYTES of TEXT as a clean string (NULL when empty), with
 * a note when the capture dropped bytes. */
static json_t *tail_of(const char *text, size_t len, size_t dropped)
{
    if (len == 0) return NULL;
    size_t start = len > KV_EVAL_TAIL_BYTES ? len - KV_EVAL_TAIL_BYTES : 0;
    while (start < len && ((unsigned char)text[start] & 0xC0) == 0x80)
        start++;
    char *clean = kv_eval_clean_text(text + start, len - start);
    json_t *s;
    if (dropped) {
        char *with = kv_asprintf("%s\n[... %zu more bytes were not captured]", clean, dropped);
        s = json_string(with);
        free(with);
    } else {
        s = json_string(clean);
    }
    free(clean);
    return s;
}

/* The last non-empty line of stderr, shortened: the likeliest explanation of a crash. */
static char *last_line(const char *text)
{
    size_t end = strlen(text);
    while (end && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' '))
        end--;
    size_t start = end;
    while (start && text[start - 1] != '\n')
        start--;
    if (end - start <= 200) return kv_eval_clean_text(text + start, end - start);
    /* A long line keeps its head, which says what happened (a list of
     * names or a path may follow), and its last words. */
    size_t head = start + 150, tail = end - 45;
    while (head > start && ((unsigned char)text[head] & 0xC0) == 0x80)
        head--;
    while (tail < end && ((unsigned char)text[tail] & 0xC0) == 0x80)
        tail++;
    char *a = kv_eval_clean_text(text + start, head - start);
    char *b = kv_eval_clean_text(text + tail, end - tail);
    char *line = kv_asprintf("%s ... %s", a, b);
    free(a);
    free(b);
    return line;
}

/* Records the run of the current stage in j->stages. */
static void record_stage(job *j, const char *status, const json_t *metrics, double seconds,
                         const char *reason)
{
    json_t *rec = json_object();
    json_object_set_new(rec, "stage", json_integer(j->stage));
    json_object_set_new(rec, "status", json_string(status));
    json_object_set_new(rec, "metrics", metrics ? json_deep_copy(metrics) : json_object());
    json_object_set_new(rec, "seconds", json_real(seconds));
    json_object_set_new(rec, "attempts", json_integer(j->attempt));
    if (reason) {
        char *clean = kv_eval_clean_text(reason, strlen(reason));
        json_object_set_new(rec, "reason", json_string(clean));
        free(clean);
    }
    json_array_append_new(j->stages, rec);
}

static int n_stages(const kv_evaluator *ev)
{
    if (ev->py_stages) return ev->py_stages;
    return ev->cascade ? (int)ev->n_thresholds + 1 : 1;
}

/* Moves a finished job into the results, with STATUS, REASON (copied;
 * prefixed by the stage in a cascade) and its short CODE (copied), and
 * frees it. */
static void finish_job(kv_evaluator *ev, job *j, kv_status status, const char *reason,
                       const char *code)
{
    kv_eval_result r = {0};
    r.ticket = j->ticket;
    r.status = status;
    if (status != KV_STATUS_OK) {
        const char *why = reason ? reason : "evaluation failed";
        r.reason = n_stages(ev) > 1 ? kv_asprintf("stage %d: %s", j->stage, why) : kv_strdup(why);
        r.reason_code = kv_strdup(code ? code : "evaluation_failed");
    }
    r.metrics = json_incref(j->metrics);
    r.stages = json_incref(j->stages);
    if (status == KV_STATUS_OK) { /* the rows of its last run */
        r.scenarios = j->rows;
        memset(&j->rows, 0, sizeof j->rows);
    }
    r.artifacts = json_object();
    if (ev->enable_artifacts) {
        const char *key;
        json_t *v;
        json_object_foreach(j->artifacts, key, v)
        {
            json_object_set_new(r.artifacts, key, limit_artifact(ev, v));
        }
    }
    r.seconds = j->started > 0 ? kv_now_s() - j->started : 0;
    r.attempts = j->first_attempts;
    if (ev->n_done == ev->cap_done) {
        ev->cap_done = ev->cap_done ? 2 * ev->cap_done : 8;
        ev->done = kv_realloc(ev->done, ev->cap_done * sizeof *ev->done);
    }
    ev->done[ev->n_done++] = r;
    if (status != KV_STATUS_OK)
        kv_debug("evaluation %lld: %s: %s", (long long)j->ticket, kv_status_name(status), r.reason);
    job_free(j);
}

/* A kernel job's document for J's current stage, written beside its
 * program: the run's template with what is J's own. Returns 0, or -1 with
 * *ERR. */
static int write_job(kv_evaluator *ev, job *j, char **err)
{
    json_t *doc = json_deep_copy(ev->job);
    json_object_set_new(doc, "candidate", json_string(j->program_path));
    json_object_set_new(doc, "stage", json_integer(ev->cascade ? j->stage : 0));
    if (ev->run_dir) json_object_set_new(doc, "run_dir", json_string(ev->run_dir));
    if (j->parent_screen)
        json_object_set(json_object_get(doc, "screen"), "parent", j->parent_screen);
    if (ev->slots) json_object_set_new(doc, "slot_fd", json_integer(3));
    if (ev->judges) json_object_set_new(doc, "judge_fd", json_integer(4));
    if (!j->job_path) j->job_path = kv_asprintf("%s.job.json", j->program_path);
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(doc);
    int rc = text ? kv_write_file(j->job_path, text, strlen(text)) : -1;
    if (rc != 0) *err = kv_asprintf("cannot write the job %s: %s", j->job_path, strerror(errno));
    free(text);
    return rc;
}

/* Starts the current stage of J. Returns 0, or -1 when it could not start
 * (the job is then finished as FAILED and freed). */
static int start_run(kv_evaluator *ev, job *j)
{
    char stage[24];
    snprintf(stage, sizeof stage, "%d", j->stage);
    char *argv[16 + 4];
    size_t k = 0;
    char **cmd = ev->command;
    char **argvp = argv;
    if (ev->n_launch + ev->n_command + 7 > sizeof argv / sizeof *argv)
        argvp = kv_calloc(ev->n_launch + ev->n_command + 7, sizeof(char *));
    char *step_opt = NULL;
    for (size_t i = 0; i < ev->n_launch; i++)
        argvp[k++] = ev->launch[i];
    if (ev->launch) { /* a name of its own, to cancel the step by */
        free(j->step_name);
        j->step_name = kv_asprintf("kevolve-eval-%d-%lld-%d", (int)getpid(), (long long)j->ticket,
                                   j->attempt + j->lost + 1);
        argvp[k++] = step_opt = kv_asprintf("--job-name=%s", j->step_name);
        argvp[k++] = "--";
    }
    for (size_t i = 0; i < ev->n_command; i++)
        argvp[k++] = cmd[i];
    char *err = NULL;
    int chan[2] = {-1, -1}, jchan[2] = {-1, -1};
    if (ev->job) {
        /* The job document carries everything, the stage included; the
         * device comes over the slot channel, the worker's descriptor 3;
         * the device's judge, over descriptor 4. */
        if (write_job(ev, j, &err) != 0 ||
            (ev->slots && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) != 0) ||
            (ev->judges && kv_device_judges_channel(jchan) != 0)) {
            if (!err) err = kv_asprintf("cannot make a device-slot channel: %s", strerror(errno));
            for (int i = 0; i < 2; i++) {
                if (chan[i] >= 0) close(chan[i]);
                if (jchan[i] >= 0) close(jchan[i]);
            }
            if (argvp != argv) free(argvp);
            free(step_opt);
            j->attempt++;
            if (j->stage == 1) j->first_attempts++;
            record_stage(j, "failed", NULL, 0, err);
            finish_job(ev, j, KV_STATUS_FAILED, err, KV_REASON_SPAWN_FAILED);
            free(err);
            return -1;
        }
        argvp[k++] = j->job_path;
    } else {
        argvp[k++] = j->program_path;
        if (ev->cascade) {
            argvp[k++] = "--stage";
            argvp[k++] = stage;
        }
    }
    argvp[k] = NULL;

    char *env[6] = {NULL};
    size_t e = 0;
    if (!ev->job) { /* an external evaluator's interface */
        env[e++] = kv_asprintf("KEVOLVE_PROGRAM=%s", j->program_path);
        env[e++] = kv_asprintf("KEVOLVE_STAGE=%d", j->stage);
        if (ev->config_json_path)
            env[e++] = kv_asprintf("KEVOLVE_CONFIG_JSON=%s", ev->config_json_path);
        if (ev->run_dir) env[e++] = kv_asprintf("KEVOLVE_RUN_DIR=%s", ev->run_dir);
        if (j->parent_metrics_path)
            env[e++] = kv_asprintf("KEVOLVE_PARENT_METRICS=%s", j->parent_metrics_path);
    }

    int fds[2] = {chan[1], jchan[1]};
    kv_proc_spec spec = {
        .argv = argvp,
        .extra_env = env,
        .timeout_s = ev->timeout,
        .memory_limit_mb = ev->memory_limit_mb,
        .cpu_limit_s = ev->timeout > 0 ? (long)ceil(ev->timeout) + 5 : 0,
        .max_output = KV_EVAL_MAX_OUTPUT,
        .fds = chan[1] >= 0 ? fds : NULL,
        .n_fds = chan[1] < 0    ? 0
                 : jchan[1] < 0 ? 1
                                : 2,
    };
    j->proc = kv_proc_start(&spec, &err);
    if (jchan[1] >= 0) close(jchan[1]);
    if (j->judge_end >= 0) close(j->judge_end);
    j->judge_end = jchan[0];
    for (size_t i = 0; i < e; i++)
        free(env[i]);
    if (argvp != argv) free(argvp);
    free(step_opt);
    if (chan[1] >= 0) close(chan[1]);
    j->slot_sock = chan[0];
    j->attempt++;
    if (j->stage == 1) j->first_attempts++;
    if (!j->proc) {
        record_stage(j, "failed", NULL, 0, err);
        finish_job(ev, j, KV_STATUS_FAILED, err, KV_REASON_SPAWN_FAILED);
        free(err);
        return -1;
    }
    return 0;
}

/* ---- device slots ----------------------------------------------------------- */

/* J's worker prepares on DEVICE: its judge channel goes to the device's
 * judge (or is closed: the worker then judges the job itself). */
static void hand_to_judge(kv_evaluator *ev, job *j, int device)
{
    if (j->judge_end < 0) return;
    (void)kv_device_judges_hand(ev->judges, device, j->judge_end);
    j->judge_end = -1;
}

/* The running job of TICKET, or NULL. */
static job *running_job(kv_evaluator *ev, int64_t ticket)
{
    for (size_t i = 0; i < ev->n_running; i++)
        if (ev->running[i]->ticket == ticket) return ev->running[i];
    return NULL;
}

/* Hands free devices to the jobs waiting for one. */
static void grant_slots(kv_evaluator *ev)
{
    int64_t ticket;
    int device;
    while (ev->slots && kv_slots_grant(ev->slots, &ticket, &device)) {
        job *j = running_job(ev, ticket);
        if (!j || j->slot_sock < 0 || kv_slot_answer(j->slot_sock, KV_SLOT_GRANT, device) != 0)
            kv_slots_release(ev->slots, ticket); /* gone meanwhile: the next one */
        else
            j->device = device;
    }
}

/* J's process ended or is being stopped: its device and its channel go. */
static void drop_slot(kv_evaluator *ev, job *j)
{
    if (j->slot_sock >= 0) close(j->slot_sock);
    j->slot_sock = -1;
    if (!ev->slots) return;
    kv_slots_release(ev->slots, j->ticket);
    grant_slots(ev);
}

/* Reads what J's worker said on its slot channel: a bind (answered at
 * once), an ask (its clock stops while it waits), a hold (its clock goes
 * on), a free. */
static void serve_slot(kv_evaluator *ev, job *j)
{
    char msg;
    ssize_t n;
    while (j->slot_sock >= 0 && (n = recv(j->slot_sock, &msg, 1, MSG_DONTWAIT)) == 1) {
        if ((msg == KV_SLOT_ASK || msg == KV_SLOT_BIND) && kv_slots_in_rotation(ev->slots) == 0) {
            /* No device left: the channel closes, and the worker says so. */
            close(j->slot_sock);
            j->slot_sock = -1;
        } else if (msg == KV_SLOT_ASK) {
            kv_proc_pause_clock(j->proc);
            kv_slots_ask(ev->slots, j->ticket);
            grant_slots(ev);
        } else if (msg == KV_SLOT_BIND) {
            int d = kv_slots_bind(ev->slots, j->ticket);
            if (kv_slot_answer(j->slot_sock, KV_SLOT_BOUND, d) != 0)
                kv_slots_release(ev->slots, j->ticket);
            else
                j->device = d; /* a fault while it prepares there is that device's */
            hand_to_judge(ev, j, d);
        } else if (msg == KV_SLOT_HOLD) {
            kv_proc_resume_clock(j->proc);
        } else if (msg == KV_SLOT_FREE) {
            if (kv_slots_release(ev->slots, j->ticket)) grant_slots(ev);
        }
    }
}

/* Starts queued jobs while slots are free. */
static void start_queued(kv_evaluator *ev)
{
    while (ev->queue_head && ev->n_running < ev->parallel) {
        job *j = ev->queue_head;
        ev->queue_head = j->next;
        if (!ev->queue_head) ev->queue_tail = NULL;
        ev->n_queued--;
        j->next = NULL;
        j->started = kv_now_s();
        if (start_run(ev, j) == 0) ev->running[ev->n_running++] = j;
    }
}

/* Folds the outputs of J's finished run into its artifacts. */
static void keep_output(kv_evaluator *ev, job *j, json_t *evaluator_artifacts)
{
    if (!ev->enable_artifacts) return;
    if (evaluator_artifacts) json_object_update(j->artifacts, evaluator_artifacts);
    json_t *out = tail_of(kv_proc_stdout(j->proc), kv_proc_stdout_len(j->proc),
                          kv_proc_stdout_dropped(j->proc));
    json_t *err = tail_of(kv_proc_stderr(j->proc), kv_proc_stderr_len(j->proc),
                          kv_proc_stderr_dropped(j->proc));
    if (out)
        json_object_set_new(j->artifacts, "stdout", out);
    else
        json_object_del(j->artifacts, "stdout");
    if (err)
        json_object_set_new(j->artifacts, "stderr", err);
    else
        json_object_del(j->artifacts, "stderr");
}

/* Retries J's stage after a crash when attempts remain (RETRY) and are
 * left; else finishes it with CODE. Returns 1 when J is still running. */
static int crash(kv_evaluator *ev, job *j, const char *reason, const char *code, double seconds,
                 int retry)
{
    char name[48];
    kv_proc_free(j->proc);
    j->proc = NULL;
    if (retry && j->attempt <= ev->max_retries) {
        kv_warn("%s: stage %d attempt %d failed (%s); retrying", job_name(j, name, sizeof name),
                j->stage, j->attempt, reason);
        return start_run(ev, j) == 0;
    }
    record_stage(j, "failed", NULL, seconds, reason);
    finish_job(ev, j, KV_STATUS_FAILED, reason, code);
    return 0;
}

/* Candidate verdicts that can leave a device broken (a sticky fault of its
 * context, a hung or reset device): the device is checked before more work. */
static int faults_device(const char *code)
{
    static const char *const codes[] = {
        "illegal_address",      "misaligned_address", "illegal_instruction", "launch_failed",
        "hardware_stack_error", "invalid_pc",         "launch_timeout",      "timeout"};
    for (size_t i = 0; code && i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(code, codes[i]) == 0) return 1;
    return 0;
}

/* Checks the device J's run was handed (`WORKER devices --check N`); when
 * it does not work, takes it out of rotation and notes why for the caller
 * (kv_evaluator_take_device_events). Returns 1 when it went out. */
static int check_device(kv_evaluator *ev, const job *j)
{
    if (!ev->slots || !ev->backend || j->device < 0) return 0;
    char dev[16];
    snprintf(dev, sizeof dev, "%d", j->device);
    char *argv[] = {ev->command[0], "devices",   "--check", dev,
                    "--backend",    ev->backend, "--json",  NULL};
    kv_proc_spec spec = {.argv = argv, .timeout_s = 90, .max_output = 1 << 16};
    char *err = NULL;
    kv_proc *p = kv_proc_run(&spec, &err);
    int ok = p && kv_proc_how(p) == KV_PROC_EXITED && kv_proc_exit_code(p) == 0;
    if (!ok) {
        char *line = p ? last_line(kv_proc_stdout(p)) : kv_strdup(err ? err : "cannot check it");
        /* {"backend", "device", "works", "why"}: the why; a check that
         * printed no such line (it died) is said by its last line. */
        json_t *o = p ? kv_json_loads(line) : NULL;
        const char *said = json_string_value(json_object_get(o, "why"));
        char *why = kv_strdup(said ? said : line);
        if (o) json_decref(o);
        free(line);
        size_t left = kv_slots_take_out(ev->slots, j->device);
        kv_warn("%s device %d taken out of rotation (%zu left): %s", ev->backend, j->device, left,
                why);
        if (!ev->device_events) ev->device_events = json_array();
        json_array_append_new(ev->device_events,
                              json_pack("{s:s,s:i,s:s,s:I,s:i}", "backend", ev->backend, "device",
                                        j->device, "reason", why, "after_ticket",
                                        (json_int_t)j->ticket, "left", (int)left));
        free(why);
    }
    free(err);
    kv_proc_free(p);
    return !ok;
}

/* Ends J's run (its output kept, its device given back) and starts it
 * again without counting it as an attempt: the run was lost to the
 * launcher or to a device, not to the candidate. Returns 1 when J runs. */
static int rerun_uncounted(kv_evaluator *ev, job *j)
{
    keep_output(ev, j, NULL);
    kv_proc_free(j->proc);
    j->proc = NULL;
    drop_slot(ev, j);
    j->device = -1;
    j->attempt--;
    if (j->stage == 1) j->first_attempts--;
    return start_run(ev, j) == 0;
}

/* Ends J's run for good after a loss it may not retry (its output and
 * ARTIFACTS kept, its device given back) and finishes it failed with
 * REASON and CODE. */
static void finish_no_rerun(kv_evaluator *ev, job *j, json_t *artifacts, double seconds,
                            const char *reason, const char *code)
{
    keep_output(ev, j, artifacts);
    kv_proc_free(j->proc);
    j->proc = NULL;
    drop_slot(ev, j);
    record_stage(j, "failed", NULL, seconds, reason);
    finish_job(ev, j, KV_STATUS_FAILED, reason, code);
}

/* The device errors the judge saw during J's run (ARTIFACTS' device_errors:
 * NVML's Xid events, uncorrected ECC errors): the device is checked before
 * more work. When it fails the check, the verdict is not trusted: the
 * evaluation moves to another device once, uncounted; a second device
 * failing after it, or none left, makes it the candidate's failure
 * (device_fault), so that a kernel that breaks devices cannot take out
 * every one. Returns -1 when J goes on as it was, else what rerun_uncounted
 * gives or 0 (J finished). */
static int after_device_errors(kv_evaluator *ev, job *j, json_t *artifacts, double seconds)
{
    char name[48];
    json_t *errors = json_object_get(artifacts, "device_errors");
    kv_buf what = KV_BUF_INIT;
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e) kv_buf_printf(
        &what, "%s%s", i ? ", " : "", json_string_value(e) ? json_string_value(e) : "?");
    kv_warn("%s: %s device %d reported %s; checking it", job_name(j, name, sizeof name),
            ev->backend ? ev->backend : "its", j->device, what.data ? what.data : "errors");
    int out = check_device(ev, j);
    if (!out) {
        kv_buf_free(&what);
        return -1;
    }
    if (j->moved++ < 1 && kv_slots_in_rotation(ev->slots) > 0) {
        kv_warn("%s: starting it again on another device", job_name(j, name, sizeof name));
        kv_buf_free(&what);
        json_object_set_new(j->artifacts, "moved_from_device",
                            json_pack("{s:i,s:O}", "device", j->device, "errors", errors));
        return rerun_uncounted(ev, j);
    }
    char *reason = kv_asprintf("the device reported %s during this evaluation and failed its check "
                               "after it (%s)",
                               what.data ? what.data : "errors",
                               j->moved > 1 ? "on a second device too" : "no other device is left");
    kv_buf_free(&what);
    finish_no_rerun(ev, j, artifacts, seconds, reason, KV_REASON_DEVICE_FAULT);
    free(reason);
    return 0;
}

/* Under a launcher, cancels J's step after kevolve stopped its srun (a
 * timeout, an interrupt): the step itself may run on otherwise. */
static void cancel_step(const kv_evaluator *ev, const job *j)
{
    if (ev->launch && j->step_name) {
        const char *name = j->step_name;
        kv_launcher_cancel(&name, 1);
    }
}

/* J's run was lost by the launcher (LINE says how, up to its end): started
 * again while tries remain, without counting as an attempt of its own;
 * else finished as the launcher's failure. Returns 1 when J is running. */
static int lost_run(kv_evaluator *ev, job *j, const char *line, double seconds)
{
    char name[48];
    char *what = kv_strndup(line, strcspn(line, "\n"));
    if (j->lost++ < ev->launch_retries) {
        kv_warn("%s: the launcher lost its run (%s); starting it again (%d of %d)",
                job_name(j, name, sizeof name), what, j->lost, ev->launch_retries);
        free(what);
        return rerun_uncounted(ev, j);
    }
    char *reason = kv_asprintf("the launcher lost the run %d times (last: %s): not a verdict on "
                               "the candidate",
                               j->lost, what);
    free(what);
    finish_no_rerun(ev, j, NULL, seconds, reason, KV_REASON_LAUNCHER_LOST);
    free(reason);
    return 0;
}

/* Why a run whose output parsed must still count as a failure, or NULL:
 * the kernel harness rejected the candidate (artifacts.verdict "rejected":
 * its artifacts.reason is the code, "timeout" making it a TIMEOUT), the
 * fitness is not a finite number (a combined_score that is NaN, infinite,
 * null or not a number), or there is no fitness at all (no finite numeric
 * metric). Sets *CODE (static or pointing into ARTIFACTS) and *STATUS;
 * returns the long reason (malloc'd). */
static char *verdict_failure(const json_t *metrics, const json_t *artifacts, const char **code,
                             kv_status *status)
{
    *status = KV_STATUS_FAILED;
    const char *verdict = json_string_value(json_object_get(artifacts, "verdict"));
    if (verdict && strcmp(verdict, "rejected") == 0) {
        const char *why = json_string_value(json_object_get(artifacts, "reason"));
        const char *detail = json_string_value(json_object_get(artifacts, "reason_detail"));
        *code = why && *why ? why : KV_REASON_REJECTED;
        if (strcmp(*code, "timeout") == 0) *status = KV_STATUS_TIMEOUT;
        return detail && *detail ? kv_asprintf("rejected by the harness: %s: %s", *code, detail)
                                 : kv_asprintf("rejected by the harness: %s", *code);
    }
    json_t *cs = json_object_get(metrics, "combined_score");
    if (cs && !(json_is_number(cs) && isfinite(json_number_value(cs)))) {
        *code = KV_REASON_NON_FINITE_FITNESS;
        return kv_strdup(json_is_null(cs) ? "combined_score is not a finite number (NaN, Infinity, "
                                            "null, or beyond a double's range such as 1e999)"
                                          : "combined_score is not a number");
    }
    if (isnan(kv_eval_score(metrics))) {
        *code = KV_REASON_NO_FITNESS;
        return kv_strdup("the evaluator reported no fitness (no combined_score and no finite "
                         "numeric metric)");
    }
    return NULL;
}

/* The reason code an evaluator that reported an "error" gives in
 * ARTIFACTS.reason (as the kernel harness does): a short word such as
 * compile_error or "crash: SIGSEGV"; else evaluator_error. Static or
 * pointing into ARTIFACTS. */
static const char *error_code(const json_t *artifacts)
{
    const char *code = json_string_value(json_object_get(artifacts, "reason"));
    size_t n = code ? strlen(code) : 0;
    int ok = n > 0 && n <= 40 && isalpha((unsigned char)code[0]);
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)code[i]) || strchr("_.:-", code[i]) ||
             (code[i] == ' ' && i > 0 && code[i - 1] == ':');
    return ok ? code : KV_REASON_EVALUATOR_ERROR;
}

/* Advances J after its run ended. Returns 1 when J is still running (next
 * stage or retry), 0 when it has been finished and freed. */
static int on_run_end(kv_evaluator *ev, job *j)
{
    char name[48];
    kv_proc *p = j->proc;
    double seconds = kv_proc_seconds(p);
    kv_proc_end how = kv_proc_how(p);

    if (how == KV_PROC_TIMED_OUT || how == KV_PROC_KILLED) {
        keep_output(ev, j, NULL);
        cancel_step(ev, j);
        const char *why = kv_proc_describe(p);
        int timed_out = how == KV_PROC_TIMED_OUT;
        record_stage(j, timed_out ? "timeout" : "failed", NULL, seconds, why);
        char *reason = kv_strdup(why);
        finish_job(ev, j, timed_out ? KV_STATUS_TIMEOUT : KV_STATUS_FAILED, reason,
                   timed_out ? KV_REASON_TIMEOUT : KV_REASON_KILLED);
        free(reason);
        return 0;
    }
    /* Even a run that exited 0 is lost when Slurm ended its step from
     * outside: a task of it was killed and the evaluator answered on. */
    const char *lost_line = NULL;
    int exited_ok = how == KV_PROC_EXITED && kv_proc_exit_code(p) == 0;
    if (ev->launch && kv_launcher_lost_run(kv_proc_stderr(p), exited_ok, &lost_line))
        return lost_run(ev, j, lost_line, seconds);
    /* A harness failure on a device that then fails its check was the
     * device's, not the candidate's: the run goes to another device, once
     * (after that its retries count, so that it cannot break them all). */
    if (!exited_ok && check_device(ev, j) && kv_slots_in_rotation(ev->slots) > 0 &&
        j->moved++ < 1) {
        kv_warn("%s: its device failed; starting it on another", job_name(j, name, sizeof name));
        return rerun_uncounted(ev, j);
    }
    if (!exited_ok) {
        keep_output(ev, j, NULL);
        char *line = last_line(kv_proc_stderr(p));
        char *reason = *line ? kv_asprintf("evaluator %s: %s", kv_proc_describe(p), line)
                             : kv_asprintf("evaluator %s", kv_proc_describe(p));
        free(line);
        int running = crash(ev, j, reason, KV_REASON_EVALUATOR_CRASH, seconds, 1);
        free(reason);
        return running;
    }

    json_t *metrics = NULL, *artifacts = NULL;
    char *reason = NULL;
    int rc = kv_eval_parse_output_full(kv_proc_stdout(p), kv_proc_stdout_len(p),
                                       kv_proc_stdout_dropped(p), KV_EVAL_MAX_OUTPUT, &metrics,
                                       &artifacts, &reason);
    if (rc != KV_EVAL_OUTPUT_BAD && json_array_size(json_object_get(artifacts, "device_errors"))) {
        int running = after_device_errors(ev, j, artifacts, seconds);
        if (running >= 0) {
            json_decref(metrics);
            json_decref(artifacts);
            free(reason);
            return running;
        }
    }
    keep_output(ev, j, artifacts);
    /* A kernel job's rows, whatever artifacts are kept; none for a verdict
     * repeated from an earlier program's (a duplicate's). */
    kv_scenario_results_clear(&j->rows);
    if (ev->job && rc == KV_EVAL_OUTPUT_OK && !json_object_get(artifacts, "duplicate_of_artifact"))
        kv_eval_scenario_rows(artifacts, metrics, &j->rows);
    if (rc == KV_EVAL_OUTPUT_BAD) {
        /* The evaluator ran to its end (exit 0): what it printed is its
         * answer, and running it again prints the same, so no retry. */
        int running = crash(ev, j, reason, KV_REASON_BAD_OUTPUT, seconds, 0);
        free(reason);
        return running;
    }
    json_object_update(j->metrics, metrics);
    if (rc == KV_EVAL_OUTPUT_ERROR) {
        record_stage(j, "failed", metrics, seconds, reason);
        finish_job(ev, j, KV_STATUS_FAILED, reason, error_code(artifacts));
        json_decref(metrics);
        json_decref(artifacts);
        free(reason);
        return 0;
    }
    const char *code = NULL;
    kv_status failed_as = KV_STATUS_FAILED;
    char *why = verdict_failure(metrics, artifacts, &code, &failed_as);
    if (why) {
        /* A verdict, not a crash: no retry, the cascade stops here. A
         * fault that can break the device has it checked first. */
        if (faults_device(code)) check_device(ev, j);
        record_stage(j, failed_as == KV_STATUS_TIMEOUT ? "timeout" : "failed", metrics, seconds,
                     why);
        finish_job(ev, j, failed_as, why, code);
        free(why);
        json_decref(metrics);
        json_decref(artifacts);
        return 0;
    }
    record_stage(j, "ok", metrics, seconds, NULL);
    double score = kv_eval_score(metrics);
    json_decref(metrics);
    json_decref(artifacts);

    kv_proc_free(j->proc);
    j->proc = NULL;
    if (j->stage < n_stages(ev) && score >= ev->thresholds[j->stage - 1]) {
        j->stage++;
        j->attempt = 0;
        return start_run(ev, j) == 0;
    }
    finish_job(ev, j, KV_STATUS_OK, NULL, NULL);
    return 0;
}

/* Sleeps in one poll(2) over every running child's descriptors, at most
 * WAIT_MS (negative: until something happens). Returns 0, or -1 when a
 * signal interrupted the sleep. */
static int wait_for_activity(kv_evaluator *ev, int wait_ms)
{
    struct pollfd *pf = kv_calloc(4 * ev->n_running + 1, sizeof *pf);
    nfds_t n = 0;
    for (size_t i = 0; i < ev->n_running; i++) {
        kv_proc *p = ev->running[i]->proc;
        if (ev->running[i]->slot_sock >= 0)
            pf[n++] = (struct pollfd){.fd = ev->running[i]->slot_sock, .events = POLLIN};
        int fds[2];
        int k = kv_proc_fds(p, fds);
        for (int f = 0; f < k; f++)
            pf[n++] = (struct pollfd){.fd = fds[f], .events = POLLIN};
        int xfd = kv_proc_exit_fd(p);
        if (xfd >= 0)
            pf[n++] = (struct pollfd){.fd = xfd, .events = POLLIN};
        else if (wait_ms < 0 || wait_ms > KV_EVAL_SLICE_MS)
            wait_ms = KV_EVAL_SLICE_MS;
        int left = kv_proc_ms_to_deadline(p);
        if (left >= 0 && (wait_ms < 0 || left < wait_ms)) wait_ms = left;
    }
    int rc = 0;
    if (wait_ms != 0 && poll(pf, n, wait_ms) < 0) {
        if (errno == EINTR) {
            rc = -1;
        } else if (errno != EAGAIN) {
            kv_warn("evaluator: poll failed: %s", strerror(errno));
            struct timespec ts = {0, KV_EVAL_SLICE_MS * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    free(pf);
    return rc;
}

/* Reads every running child's output and advances those that ended. */
static void advance(kv_evaluator *ev)
{
    for (size_t i = 0; i < ev->n_running; i++)
        serve_slot(ev, ev->running[i]);
    kv_device_judges_drain(ev->judges); /* what they print, kept moving */
    for (size_t i = 0; i < ev->n_running;) {
        job *j = ev->running[i];
        int ended = kv_proc_poll(j->proc, 0);
        if (ended) drop_slot(ev, j);
        if (ended && !on_run_end(ev, j)) {
            ev->running[i] = ev->running[--ev->n_running]; /* finished: drop it */
            continue;
        }
        i++;
    }
    start_queued(ev);
}

/* Waits up to TIMEOUT_MS (negative: no limit) until a result (of TICKET
 * when ONLY_TICKET) is ready. Returns 1 when there is one, 0 when nothing is
 * left to wait for, the time is up, or (when INTERRUPTIBLE) a signal came. */
static int wait_result(kv_evaluator *ev, int timeout_ms, int64_t ticket, int only_ticket,
                       int interruptible)
{
    double deadline = timeout_ms >= 0 ? kv_now_s() + timeout_ms / 1000.0 : 0;
    for (;;) {
        start_queued(ev);
        advance(ev);
        for (size_t i = 0; i < ev->n_done; i++)
            if (!only_ticket || ev->done[i].ticket == ticket) return 1;
        if (ev->n_running == 0) return 0;
        int wait = -1;
        if (timeout_ms >= 0) {
            double left = deadline - kv_now_s();
            if (left <= 0) return 0;
            wait = (int)(left * 1000.0) + 1;
        }
        if (wait_for_activity(ev, wait) != 0 && interruptible) {
            advance(ev);
            for (size_t i = 0; i < ev->n_done; i++)
                if (!only_ticket || ev->done[i].ticket == ticket) return 1;
            return 0;
        }
    }
}

/* Moves the first result (of TICKET when ONLY_TICKET) into OUT. Returns 1 or 0. */
static int take_done(kv_evaluator *ev, int64_t ticket, int only_ticket, kv_eval_result *out)
{
    for (size_t i = 0; i < ev->n_done; i++) {
        if (only_ticket && ev->done[i].ticket != ticket) continue;
        *out = ev->done[i];
        memmove(ev->done + i, ev->done + i + 1, (ev->n_done - i - 1) * sizeof *ev->done);
        ev->n_done--;
        return 1;
    }
    return 0;
}

/* ---- public API ----------------------------------------------------------- */

/* Queues SOURCE as ticket TICKET in file NAME of the work dir, with the
 * parent's metrics PARENT (may be NULL) written beside it. */
static int submit_named(kv_evaluator *ev, int64_t ticket, const char *name, const char *source,
                        const json_t *parent, const json_t *screen)
{
    for (job *q = ev->queue_head; q; q = q->next)
        if (q->ticket == ticket) {
            kv_error("evaluator: ticket %lld is already queued", (long long)ticket);
            return -1;
        }
    for (size_t i = 0; i < ev->n_running; i++)
        if (ev->running[i]->ticket == ticket) {
            kv_error("evaluator: ticket %lld is already running", (long long)ticket);
            return -1;
        }
    char *path = kv_path_join(ev->work_dir, name);
    if (kv_write_file(path, source ? source : "", source ? strlen(source) : 0) != 0) {
        kv_error("evaluator: cannot write program '%s': %s", path, strerror(errno));
        free(path);
        return -1;
    }
    char *parent_path = NULL;
    if (parent) {
        char *parent_name = kv_asprintf("%s.parent_metrics.json", name);
        parent_path = kv_path_join(ev->work_dir, parent_name);
        free(parent_name);
        char *text = json_dumps(parent, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        int rc = text ? kv_write_file(parent_path, text, strlen(text)) : -1;
        free(text);
        if (rc != 0) {
            kv_error("evaluator: cannot write '%s': %s", parent_path, strerror(errno));
            if (!keep_programs()) unlink(path);
            free(parent_path);
            free(path);
            return -1;
        }
    }
    job *j = kv_calloc(1, sizeof *j);
    j->ticket = ticket;
    j->program_path = path;
    j->parent_metrics_path = parent_path;
    j->parent_screen = screen ? json_incref((json_t *)screen) : NULL;
    j->slot_sock = -1;
    j->judge_end = -1;
    j->device = -1;
    j->stage = 1;
    j->metrics = json_object();
    j->artifacts = json_object();
    j->stages = json_array();
    if (ev->queue_tail)
        ev->queue_tail->next = j;
    else
        ev->queue_head = j;
    ev->queue_tail = j;
    ev->n_queued++;
    start_queued(ev);
    return 0;
}

int kv_evaluator_submit(kv_evaluator *ev, int64_t ticket, const char *source, const char *suffix)
{
    return kv_evaluator_submit_child(ev, ticket, source, suffix, NULL, NULL);
}

int kv_evaluator_submit_child(kv_evaluator *ev, int64_t ticket, const char *source,
                              const char *suffix, const json_t *parent_metrics,
                              const json_t *parent_screen)
{
    char *name = kv_asprintf("%lld%s", (long long)ticket, suffix ? suffix : "");
    /* A kernel job screens against the parent's rows; an external
     * evaluator reads its metrics. */
    int rc = submit_named(ev, ticket, name, source, ev->job ? NULL : parent_metrics,
                          ev->job ? parent_screen : NULL);
    free(name);
    return rc;
}

void kv_evaluator_set_run_dir(kv_evaluator *ev, const char *run_dir)
{
    free(ev->run_dir);
    ev->run_dir = run_dir ? kv_path_absolute(run_dir) : NULL;
    if (run_dir && !ev->run_dir) ev->run_dir = kv_strdup(run_dir);
}

int kv_evaluator_poll(kv_evaluator *ev, int timeout_ms, kv_eval_result *out)
{
    memset(out, 0, sizeof *out);
    if (!wait_result(ev, timeout_ms, 0, 0, 1)) return 0;
    return take_done(ev, 0, 0, out);
}

size_t kv_evaluator_pending(const kv_evaluator *ev)
{
    return ev->n_queued + ev->n_running;
}

void kv_evaluator_set_backend(kv_evaluator *ev, const char *backend)
{
    free(ev->backend);
    ev->backend = backend ? kv_strdup(backend) : NULL;
}

json_t *kv_evaluator_take_device_events(kv_evaluator *ev)
{
    json_t *e = ev ? ev->device_events : NULL;
    if (ev) ev->device_events = NULL;
    return e;
}

void kv_evaluator_cancel_all(kv_evaluator *ev)
{
    if (!ev) return;
    const char **steps = kv_calloc(ev->n_running + 1, sizeof *steps);
    size_t n_steps = 0;
    for (size_t i = 0; i < ev->n_running; i++) {
        job *j = ev->running[i];
        drop_slot(ev, j);
        kv_proc_free(j->proc); /* kills the group */
        j->proc = NULL;
        if (ev->launch && j->step_name) steps[n_steps++] = j->step_name;
    }
    kv_launcher_cancel(steps, n_steps); /* their steps, all at once */
    free(steps);
    for (size_t i = 0; i < ev->n_running; i++)
        job_free(ev->running[i]);
    ev->n_running = 0;
    while (ev->queue_head) {
        job *j = ev->queue_head;
        ev->queue_head = j->next;
        job_free(j);
    }
    ev->queue_tail = NULL;
    ev->n_queued = 0;
}

int kv_evaluator_run_one(kv_evaluator *ev, const char *source, const char *suffix,
                         kv_eval_result *out)
{
    memset(out, 0, sizeof *out);
    /* Private tickets are negative, so they never meet the caller's. */
    int64_t ticket = --ev->private_ticket;
    char *name = kv_asprintf("eval%lld%s", (long long)-ticket, suffix ? suffix : "");
    int rc = submit_named(ev, ticket, name, source, NULL, NULL);
    free(name);
    if (rc != 0) return -1;
    if (!wait_result(ev, -1, ticket, 1, 0)) return -1;
    return take_done(ev, ticket, 1, out) ? 0 : -1;
}

void kv_evaluator_free(kv_evaluator *ev)
{
    if (!ev) return;
    kv_evaluator_cancel_all(ev);
    kv_device_judges_free(ev->judges);
    kv_launcher_free(ev->launch);
    for (size_t i = 0; i < ev->n_done; i++)
        kv_eval_result_clear(&ev->done[i]);
    free(ev->done);
    if (ev->config_json_path && !keep_programs()) unlink(ev->config_json_path);
    free(ev->config_json_path);
    free(ev->run_dir);
    free(ev->running);
    free(ev->thresholds);
    free_command(ev->command);
    json_decref(ev->job);
    kv_slots_free(ev->slots);
    free(ev->backend);
    json_decref(ev->device_events);
    kv_pyeval_free(ev->py);
    free(ev->work_dir);
    free(ev);
}
