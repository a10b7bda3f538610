/* The runner's sandbox, applied before the candidate's code is loaded:
 * what a hostile candidate's process may no longer do.
 *
 * With Landlock (Linux 5.13+): no file may be written, created or removed
 * outside the runner's scratch folder and its program's own folder, but
 * /dev's character devices (the GPU's nodes, less another GPU's; never a
 * disk) and what is in /dev/pts, /dev/nvidia-caps and /dev/dri (not
 * /dev/shm, whose files outlive the runner);
 * no process outside the sandbox may be traced or have its memory read
 * (/proc/PID/mem); from Landlock ABI 4 no TCP bind or connect; from ABI 6
 * no signal to a process outside the sandbox and no abstract unix socket
 * outside it. Always: no new privileges (setuid binaries stay powerless),
 * every capability dropped (a root runner keeps uid 0 but loses
 * CAP_SYS_PTRACE, CAP_KILL, CAP_DAC_OVERRIDE, ...), no core dumps, and a
 * system-call filter (kv_sandbox_filter) against every object that would
 * outlive the runner and that Landlock does not cover: nothing the
 * candidate makes is there for the next child of a long-lived judge. */
#ifndef KV_RUNNER_SANDBOX_H
#define KV_RUNNER_SANDBOX_H

/* Applies the sandbox to this process, with SCRATCH and OWN_DIR (may be
 * NULL) the writable folders. SHUT (NULL-terminated, may be NULL): nodes
 * directly in /dev this process may not open for writing (another GPU's).
 * Returns 0 with *WHAT (static) naming what was applied ("landlock
 * abi 7: files, ptrace, tcp, signals; no capabilities"), or -1 with *ERR
 * when a step that must work failed. A kernel without Landlock is not an
 * error: *WHAT then says so. */
int kv_sandbox_apply(const char *scratch, const char *own_dir, const char *const *shut,
                     const char **what, char **err);

/* Loads the runner's system-call filter (sandbox_filter.c): no key in the
 * kernel's key store, no System V or POSIX IPC object, no change to a
 * file's extended attributes, mode, owner or times, no io_uring. 0 with
 * *N_DENIED the calls it refuses, or -1 with *ERR. */
int kv_sandbox_filter(int *n_denied, char **err);

/* The Landlock ABI version of this kernel, 0 without Landlock. */
int kv_landlock_abi(void);

#endif
