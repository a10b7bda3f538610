/* /proc walks (see proc_tree.h). */
#include "kernel/proc_tree.h"
#include "util/buf.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* From /proc/PID/stat. The command name may hold spaces and parentheses:
 * the fields follow the last ')'. */
pid_t kv_proc_parent(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *close = strrchr(buf, ')');
    int ppid = -1;
    char state;
    if (!close || sscanf(close + 1, " %c %d", &state, &ppid) != 2) return -1;
    return (pid_t)ppid;
}

int kv_proc_descendants(pid_t root, pid_t *pids, int cap)
{
    DIR *d = opendir("/proc");
    if (!d) return 0;
    size_t n = 0, alloc = 256;
    pid_t *all = kv_malloc(alloc * sizeof *all), *par = kv_malloc(alloc * sizeof *par);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        if (*end || v <= 0) continue;
        if (n == alloc) {
            alloc *= 2;
            all = kv_realloc(all, alloc * sizeof *all);
            par = kv_realloc(par, alloc * sizeof *par);
        }
        all[n] = (pid_t)v;
        par[n] = kv_proc_parent((pid_t)v);
        n++;
    }
    closedir(d);
    /* Breadth-first from ROOT over the parent links. */
    pid_t *found = kv_malloc((n + 1) * sizeof *found);
    size_t nf = 0;
    found[nf++] = root;
    for (size_t head = 0; head < nf; head++)
        for (size_t i = 0; i < n; i++)
            if (par[i] == found[head] && all[i] != root) found[nf++] = all[i];
    int count = (int)nf - 1;
    for (int i = 0; i < count && i < cap; i++)
        pids[i] = found[i + 1];
    free(all);
    free(par);
    free(found);
    return count;
}

double kv_proc_cpu_seconds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    double total = 0;
    int any = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char p[320];
        snprintf(p, sizeof p, "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
        FILE *f = fopen(p, "r");
        unsigned long long ns = 0;
        if (f && fscanf(f, "%llu", &ns) == 1) {
            total += (double)ns * 1e-9;
            any = 1;
        }
        if (f) fclose(f);
    }
    closedir(d);
    return any ? total : -1;
}
