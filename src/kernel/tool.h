/* Running compilers and other tools from the harness: argv, a time limit,
 * stdout and stderr captured together. Independent of util/proc so the
 * harness depends on nothing but the task ABI and the basic utilities. */
#ifndef KV_KERNEL_TOOL_H
#define KV_KERNEL_TOOL_H

/* Runs ARGV (argv[0] looked up in PATH) with stdin from /dev/null, killing
 * it (its process group) after TIMEOUT_S seconds. *OUTPUT receives its
 * stdout and stderr (malloc'd, may be empty). Returns the exit status (0..255),
 * 128+signal when killed by a signal, -2 on timeout, -1 when it could not be
 * started (with the reason in *OUTPUT). */
int kv_tool_run(char *const *argv, double timeout_s, char **output);

/* Full path of PROGRAM when it is an executable in PATH (or a path itself
 * that is executable), else NULL. Malloc'd. */
char *kv_tool_which(const char *program);

#endif
