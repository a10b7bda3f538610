/* /proc walks (see proc_tree.h). */
#include "judge/proc_tree.h"
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

/* Appends the children of every thread of PID (from the kernel's own
 * /proc/PID/task/TID/children lists) to *LIST. */
static void children_of(pid_t pid, pid_t **list, size_t *n, size_t *alloc)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return; /* gone */
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char cp[320];
        snprintf(cp, sizeof cp, "/proc/%d/task/%s/children", (int)pid, e->d_name);
        FILE *f = fopen(cp, "r");
        if (!f) continue; /* the thread ended */
        long v;
        while (fscanf(f, "%ld", &v) == 1) {
            if (*n == *alloc) {
                *alloc = *alloc ? 2 * *alloc : 64;
                *list = kv_realloc(*list, *alloc * sizeof **list);
            }
            (*list)[(*n)++] = (pid_t)v;
        }
        fclose(f);
    }
    closedir(d);
}

int kv_proc_descendants(pid_t root, pid_t *pids, int cap)
{
    char probe[64];
    snprintf(probe, sizeof probe, "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
    if (access(probe, R_OK) == 0) {
        /* Breadth-first over the kernel's child lists: as cheap as the tree. */
        pid_t *list = NULL;
        size_t n = 0, alloc = 0;
        children_of(root, &list, &n, &alloc);
        for (size_t head = 0; head < n; head++)
            children_of(list[head], &list, &n, &alloc);
        for (size_t i = 0; i < n && (int)i < cap; i++)
            pids[i] = list[i];
        free(list);
        return (int)n;
    }
    return kv_proc_descendants_scan(root, pids, cap);
}

/* The same from the parents of every process in /proc, where the kernel
 * keeps no child lists. */
int kv_proc_descendants_scan(pid_t root, pid_t *pids, int cap)
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
