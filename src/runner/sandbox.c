/* The runner's sandbox (see sandbox.h). Landlock's interface is declared
 * here rather than taken from <linux/landlock.h>, whose Debian 12 copy
 * predates the network and scope rules. */
#define _GNU_SOURCE
#include "runner/sandbox.h"
#include "util/buf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_REMOVE_DIR (1ull << 4)
#define LL_FS_REMOVE_FILE (1ull << 5)
#define LL_FS_MAKE_CHAR (1ull << 6)
#define LL_FS_MAKE_DIR (1ull << 7)
#define LL_FS_MAKE_REG (1ull << 8)
#define LL_FS_MAKE_SOCK (1ull << 9)
#define LL_FS_MAKE_FIFO (1ull << 10)
#define LL_FS_MAKE_BLOCK (1ull << 11)
#define LL_FS_MAKE_SYM (1ull << 12)
#define LL_FS_REFER (1ull << 13)     /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14)  /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15) /* ABI 5 */
#define LL_NET_BIND_TCP (1ull << 0)  /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

int kv_landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    return v < 0 ? 0 : (int)v;
}

/* Grants ACCESS beneath PATH in RULESET; a missing PATH is skipped. */
static int allow_beneath(int ruleset, const char *path, uint64_t access, char **err)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0;
    if (fd < 0) {
        *err = kv_asprintf("open %s: %s", path, strerror(errno));
        return -1;
    }
    struct ll_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
    long rc = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0);
    int e = errno;
    close(fd);
    if (rc != 0) {
        *err = kv_asprintf("landlock_add_rule for %s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

static int listed(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

/* The folders of /dev whose contents a runner may write: terminals, the GPU
 * stacks' capability and render nodes. Not /dev/shm: a file there outlives
 * the runner, and the next child could read what this one wrote. */
static const char *const dev_folders[] = {"pts", "nvidia-caps", "dri", NULL};

/* Grants ACCESS to the character devices directly in /dev but SHUT's, and
 * beneath dev_folders: not to a block device (a root runner could write
 * the disk under every file the judge keeps), a plain file, a socket or a
 * pipe, nor to a link (its rule would hold for where it leads: /dev/fd is
 * /proc/self/fd). */
static int allow_dev_but(int ruleset, uint64_t access, const char *const *shut, char **err)
{
    DIR *d = opendir("/dev");
    if (!d) {
        *err = kv_asprintf("opendir /dev: %s", strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        char path[300];
        struct stat st;
        snprintf(path, sizeof path, "/dev/%s", e->d_name);
        if (listed(shut, path) || lstat(path, &st) != 0) continue;
        if (S_ISCHR(st.st_mode) || (S_ISDIR(st.st_mode) && listed(dev_folders, e->d_name)))
            rc = allow_beneath(ruleset, path, access, err);
    }
    closedir(d);
    return rc;
}

/* Landlock: writes only beneath SCRATCH and OWN_DIR and to /dev's character
 * devices (less SHUT), no ptrace out, and what ABI allows of the network and
 * scopes. Returns the ABI applied (0: none). */
static int apply_landlock(const char *scratch, const char *own_dir, const char *const *shut,
                          char **err)
{
    int abi = kv_landlock_abi();
    if (abi <= 0) return 0;
    uint64_t write = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR |
                     LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO |
                     LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
    if (abi >= 2) write |= LL_FS_REFER;
    if (abi >= 3) write |= LL_FS_TRUNCATE;
    if (abi >= 5) write |= LL_FS_IOCTL_DEV;
    struct ll_ruleset_attr attr = {.handled_access_fs = write};
    size_t size = sizeof attr.handled_access_fs;
    if (abi >= 4) {
        attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
        size = offsetof(struct ll_ruleset_attr, scoped);
    }
    if (abi >= 6) {
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
        size = sizeof attr;
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rs < 0) {
        *err = kv_asprintf("landlock_create_ruleset: %s", strerror(errno));
        return -1;
    }
    /* The GPU's device nodes are opened read-write and driven by ioctl. */
    uint64_t dev =
        LL_FS_WRITE_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0) | (abi >= 5 ? LL_FS_IOCTL_DEV : 0);
    int rc = allow_beneath(rs, scratch, write, err);
    if (rc == 0 && own_dir) rc = allow_beneath(rs, own_dir, write, err);
    if (rc == 0) rc = allow_dev_but(rs, dev, shut, err);
    if (rc == 0 && syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
        *err = kv_asprintf("landlock_restrict_self: %s", strerror(errno));
        rc = -1;
    }
    close(rs);
    return rc == 0 ? abi : -1;
}

/* Drops every capability from the bounding, permitted, effective and
 * inheritable sets (a no-op for a process that has none). */
static int drop_capabilities(void)
{
    for (int cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
    struct {
        uint32_t version;
        int pid;
    } hdr = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
    struct {
        uint32_t effective, permitted, inheritable;
    } data[2];
    memset(data, 0, sizeof data);
    return (int)syscall(SYS_capset, &hdr, data);
}

int kv_sandbox_apply(const char *scratch, const char *own_dir, const char *const *shut,
                     const char **what, char **err)
{
    static char text[200];
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        *err = kv_asprintf("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        return -1;
    }
    int abi = apply_landlock(scratch, own_dir, shut, err);
    if (abi < 0) return -1;
    int caps = drop_capabilities() == 0;
    /* Last: the filter refuses chmod and the like, which the steps above
     * do not use but a kernel's Landlock might one day. */
    int denied = 0;
    if (kv_sandbox_filter(&denied, err) != 0) return -1;
    if (abi == 0)
        snprintf(text, sizeof text,
                 "no landlock on this kernel: files, ptrace and signals are not confined%s; "
                 "seccomp: %d calls that leave objects behind",
                 caps ? "; no capabilities" : "", denied);
    else
        snprintf(text, sizeof text,
                 "landlock abi %d: files, ptrace%s%s%s; seccomp: %d calls that leave objects "
                 "behind",
                 abi, abi >= 4 ? ", tcp" : "", abi >= 6 ? ", signals" : "",
                 caps ? "; no capabilities" : "", denied);
    *what = text;
    return 0;
}
