/* What /proc says about a process and the processes below it: used by the
 * judge to see what the candidate's process started and how much CPU it
 * used while it should have been idle. */
#ifndef KV_JUDGE_PROC_TREE_H
#define KV_JUDGE_PROC_TREE_H

#include <sys/types.h>

/* The descendants of ROOT now (children, their children, ...), at most CAP
 * of them into PIDS (which may be NULL with CAP 0). Returns how many there
 * are (possibly more than CAP). */
int kv_proc_descendants(pid_t root, pid_t *pids, int cap);
/* The same by scanning every process's parent (what kv_proc_descendants
 * falls back to where the kernel keeps no child lists). */
int kv_proc_descendants_scan(pid_t root, pid_t *pids, int cap);

/* The parent of PID, -1 when it is gone. */
pid_t kv_proc_parent(pid_t pid);

/* CPU time PID's threads have run, in seconds (schedstat, nanosecond
 * resolution; the stat ticks where schedstat is missing), -1 when unknown. */
double kv_proc_cpu_seconds(pid_t pid);

#endif
