/* The runner's system-call filter (see sandbox.h): the calls that make an
 * object which outlives the process and which Landlock does not cover.
 * Each answers EPERM, as a kernel without the feature would, so a library
 * that merely probes for one goes on. A call of another architecture (the
 * 32-bit entry of an x86-64 kernel) kills the process: libseccomp's
 * default for a foreign architecture. */
#include "runner/sandbox.h"
#include "util/buf.h"

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

/* By what the call would leave behind: a key in the kernel's key store
 * (keyrings outlive every process of their user); System V shared memory,
 * semaphores and message queues, and POSIX message queues (they live until
 * removed); extended attributes, modes, owners and times of files the
 * runner may open but not write (metadata Landlock leaves alone: a note on
 * any readable file, read back by the next child). */
static const char *const denied[] = {
    "add_key", "keyctl", "request_key", "shmget", "shmat", "shmctl", "semget", "semop",
    "semtimedop", "semctl", "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink",
    "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr", "setxattr", "lsetxattr",
    "fsetxattr", "setxattrat", "removexattr", "lremovexattr", "fremovexattr", "removexattrat",
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime",
    "utimes", "futimesat", "utimensat",
    /* io_uring runs such operations (setxattr among them) past this filter. */
    "io_uring_setup", "io_uring_enter", "io_uring_register", NULL};

/* Calls newer than this libseccomp may know by name, by their number (the
 * same on every architecture since Linux 5.1): fchmodat2, setxattrat,
 * removexattrat, file_setattr. */
static const int denied_numbers[] = {452, 463, 466, 469};

int kv_sandbox_filter(int *n_denied, char **err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        *err = kv_strdup("seccomp_init failed");
        return -1;
    }
    int n = 0, rc = 0;
    for (const char *const *name = denied; *name && rc == 0; name++) {
        int nr = seccomp_syscall_resolve_name(*name);
        if (nr < 0) continue; /* not a call of this architecture */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
        if (rc != 0) *err = kv_asprintf("seccomp_rule_add(%s): %s", *name, strerror(-rc));
        n++;
    }
    for (size_t k = 0; rc == 0 && k < sizeof denied_numbers / sizeof *denied_numbers; k++) {
        /* Known by name above: the rule is there already. */
        char *known = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, denied_numbers[k]);
        free(known);
        if (known) continue;
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied_numbers[k], 0);
        if (rc != 0)
            *err = kv_asprintf("seccomp_rule_add(%d): %s", denied_numbers[k], strerror(-rc));
        n++;
    }
    if (rc == 0 && (rc = seccomp_load(ctx)) != 0)
        *err = kv_asprintf("seccomp_load: %s", strerror(-rc));
    seccomp_release(ctx);
    *n_denied = n;
    return rc == 0 ? 0 : -1;
}
