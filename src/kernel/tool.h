/* Running compilers and other tools from the harness (nvcc,
 * compute-sanitizer): argv, a time limit, stdout and stderr captured
 * together. Through util/proc, the one spawning path: the tool runs under a
 * supervisor that kills everything it starts when it ends, times out, or
 * when kevolve dies, and its time limit never exceeds what is left of the
 * deadline this process inherited (KEVOLVE_TIMEOUT). */
#ifndef KV_KERNEL_TOOL_H
#define KV_KERNEL_TOOL_H

/* Runs ARGV (argv[0] looked up in PATH) with stdin from /dev/null, killing
 * it and everything it started after TIMEOUT_S seconds. *OUTPUT receives
 * its stdout then its stderr (malloc'd, may be empty; 8 MiB of each at
 * most). The environment is this process's without secrets. Returns the
 * exit status (0..255), 128+signal when killed by a signal, -2 on timeout,
 * -1 when it could not be started (with the reason in *OUTPUT). */
int kv_tool_run(char *const *argv, double timeout_s, char **output);

/* Full path of PROGRAM when it is an executable in PATH (or a path itself
 * that is executable), else NULL. Malloc'd. */
char *kv_tool_which(const char *program);

#endif
