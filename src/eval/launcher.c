/* Launchers (see launcher.h). */
#include "eval/launcher.h"
#include "util/buf.h"
#include "util/proc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kv_launcher_is_slurm(const kv_evaluator_config *cfg)
{
    return cfg->launcher && strcmp(cfg->launcher, "slurm") == 0;
}

/* Appends WORD (taken) to the NULL-terminated *V of *N words. */
static void push(char ***v, size_t *n, char *word)
{
    *v = kv_realloc(*v, (*n + 2) * sizeof **v);
    (*v)[(*n)++] = word;
    (*v)[*n] = NULL;
}

char **kv_launcher_prefix(const kv_evaluator_config *cfg, size_t *n)
{
    *n = 0;
    if (!kv_launcher_is_slurm(cfg)) return NULL;
    char **v = NULL;
    push(&v, n, kv_strdup(cfg->srun && *cfg->srun ? cfg->srun : "srun"));
    /* One task on one node; a step of the allocation kevolve runs in takes
     * only what it asks for, so that steps run side by side (--exact). */
    push(&v, n, kv_strdup("--ntasks=1"));
    push(&v, n, kv_strdup("--nodes=1"));
    if (getenv("SLURM_JOB_ID")) push(&v, n, kv_strdup("--exact"));
    push(&v, n, kv_strdup("--kill-on-bad-exit=1"));
    /* Slurm's limit is kevolve's budget and its device wait, and a minute:
     * kevolve's own timeout ends a run first and says so. */
    double secs = cfg->slurm_time > 0 ? cfg->slurm_time : cfg->timeout + cfg->device_wait + 60;
    push(&v, n, kv_asprintf("--time=%ld", (long)ceil(secs / 60.0)));
    if (cfg->slurm_partition && *cfg->slurm_partition)
        push(&v, n, kv_asprintf("--partition=%s", cfg->slurm_partition));
    if (cfg->slurm_account && *cfg->slurm_account)
        push(&v, n, kv_asprintf("--account=%s", cfg->slurm_account));
    if (cfg->slurm_gres && *cfg->slurm_gres) push(&v, n, kv_asprintf("--gres=%s", cfg->slurm_gres));
    for (size_t i = 0; i < cfg->n_slurm_args; i++)
        push(&v, n, kv_strdup(cfg->slurm_args[i]));
    return v;
}

void kv_launcher_cancel(const char *const *names, size_t n)
{
    if (!n) return;
    /* The steps by name (inside an allocation a step has no job of its
     * own), then the jobs of those names (a run outside one). */
    char *list[] = {"squeue", "--noheader", "--steps", "--format=%i %j", NULL};
    kv_proc_spec spec = {.argv = list, .timeout_s = 30, .max_output = 1 << 20};
    char *err = NULL;
    kv_proc *p = kv_proc_run(&spec, &err);
    free(err);
    char **argv = kv_calloc(2 * n + 4, sizeof(char *));
    size_t k = 0;
    argv[k++] = kv_strdup("scancel");
    for (const char *line = p ? kv_proc_stdout(p) : ""; line && *line;) {
        size_t len = strcspn(line, "\n");
        char id[64] = "", name[256] = "";
        char *one = kv_strndup(line, len);
        if (sscanf(one, "%63s %255s", id, name) == 2)
            for (size_t i = 0; i < n && k < 2 * n + 2; i++)
                if (strcmp(name, names[i]) == 0) argv[k++] = kv_strdup(id);
        free(one);
        line += len + (line[len] == '\n');
    }
    kv_proc_free(p);
    for (size_t i = 0; i < n; i++) {
        kv_proc_spec one = {.argv =
                                (char *[]){"scancel", "--quiet", "--name", (char *)names[i], NULL},
                            .timeout_s = 30};
        kv_proc_free(kv_proc_run(&one, &err));
        free(err);
        err = NULL;
    }
    if (k > 1) {
        kv_proc_spec s = {.argv = argv, .timeout_s = 30};
        kv_proc_free(kv_proc_run(&s, &err));
        free(err);
    }
    for (size_t i = 0; i < k; i++)
        free(argv[i]);
    free(argv);
}

void kv_launcher_free(char **prefix)
{
    for (char **p = prefix; p && *p; p++)
        free(*p);
    free(prefix);
}

int kv_launcher_lost_run(const char *text, int exited_ok, const char **why)
{
    /* What srun and slurmstepd say when the run, not the program, ended.
     * The step was ended from outside while it ran: its node went, it was
     * preempted or cancelled by someone else. */
    static const char *const cut[] = {"DUE TO PREEMPTION", "DUE TO NODE FAILURE", "Node failure",
                                      "NODE_FAIL", "CANCELLED AT"};
    /* The step never ran; srun prints some of these while it retries, before
     * a step that then runs, so they count only when the run failed. */
    static const char *const not_run[] = {
        "Unable to create step",  "Unable to allocate resources",
        "Job step creation",      "Communication connection failure",
        "Task launch for StepId", "Unable to confirm allocation"};
    /* A time limit is kevolve's own budget, and "task 0: Exited with exit
     * code N" is the evaluation's own end. */
    *why = NULL;
    /* srun's own word that the step was ended from outside: slurmstepd's
     * line, relayed with the task's output, can be lost when the task dies
     * first; then this line alone says so, unless the end was the step's
     * time limit. */
    const char *aborted = NULL;
    for (const char *line = text; line && *line;) {
        size_t len = strcspn(line, "\n");
        char *one = kv_strndup(line, len);
        int slurms = strncmp(one, "srun: ", 6) == 0 || strncmp(one, "slurmstepd", 10) == 0;
        int lost_here = 0;
        if (slurms && !strstr(one, "DUE TO TIME LIMIT")) {
            for (size_t k = 0; k < sizeof cut / sizeof cut[0] && !lost_here; k++)
                lost_here = strstr(one, cut[k]) != NULL;
            for (size_t k = 0; !exited_ok && k < sizeof not_run / sizeof not_run[0] && !lost_here;
                 k++)
                lost_here = strstr(one, not_run[k]) != NULL;
        }
        if (!aborted && strncmp(one, "srun: Job step aborted", 22) == 0) aborted = line;
        free(one);
        if (lost_here) {
            *why = line;
            return 1;
        }
        line += len + (line[len] == '\n');
    }
    if (aborted && !strstr(text, "DUE TO TIME LIMIT")) {
        *why = aborted;
        return 1;
    }
    return 0;
}
