/* The runner's sandbox (src/runner/sandbox.h), applied in a forked child as
 * the runner applies it to itself: files written only in its scratch
 * folder and to /dev's character devices, never a disk, and, when it is
 * given nodes of /dev to shut (another GPU's), not those. */
#include "runner/sandbox.h"
#include "util/buf.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the child could open for writing, one bit each. */
enum {
    CAN_NULL = 1,
    CAN_FULL = 2,
    CAN_SCRATCH = 4,
    CAN_OUTSIDE = 8,
    CAN_DISK = 16,
    SANDBOX_FAILED = 64
};

/* A block device this process may open for writing (a root's disk, loop
 * device or zram), or NULL. */
static const char *writable_disk(void)
{
    static const char *const disks[] = {"/dev/loop0",   "/dev/vda",   "/dev/sda",
                                        "/dev/nvme0n1", "/dev/zram0", NULL};
    for (int i = 0; disks[i]; i++)
        if (access(disks[i], W_OK) == 0) return disks[i];
    return NULL;
}

static int can_write(const char *path, int create)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

/* Applies the sandbox in a child with SHUT and reports what it could then
 * open: a bit set of CAN_*. */
static int probe(const char *scratch, const char *outside, const char *const *shut)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const char *what = NULL;
        char *err = NULL;
        if (kv_sandbox_apply(scratch, NULL, shut, &what, &err) != 0) _exit(SANDBOX_FAILED);
        char *in = kv_asprintf("%s/written", scratch), *out = kv_asprintf("%s/written", outside);
        const char *disk = writable_disk();
        int bits = can_write("/dev/null", 0) * CAN_NULL | can_write("/dev/full", 0) * CAN_FULL |
                   can_write(in, 1) * CAN_SCRATCH | can_write(out, 1) * CAN_OUTSIDE |
                   (disk && can_write(disk, 0)) * CAN_DISK;
        _exit(bits);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* The runner's scratch folder and a folder outside it, made for each test. */
typedef struct folders {
    char *scratch, *outside;
} folders;

static char *temp_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    /* mkdtemp's template: it replaces the Xs. */
    char *t = kv_asprintf("%s/kv-sandbox-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(t));
    return t;
}

static int make_folders(void **state)
{
    folders *f = kv_calloc(1, sizeof *f);
    f->scratch = temp_dir();
    f->outside = temp_dir();
    *state = f;
    return 0;
}

static int remove_folders(void **state)
{
    folders *f = *state;
    kv_remove_tree(f->scratch);
    kv_remove_tree(f->outside);
    free(f->scratch);
    free(f->outside);
    free(f);
    return 0;
}

static void skip_without_landlock(void)
{
    if (kv_landlock_abi() <= 0 || access("/dev/full", W_OK) != 0) {
        print_message("no Landlock on this kernel (or no /dev/full): nothing to test\n");
        skip();
    }
}

static void writes_only_in_scratch_and_dev_s_character_devices(void **state)
{
    folders *f = *state;
    skip_without_landlock();
    /* A disk this process could write (root's) is one the candidate's may
     * not: it holds every file of the judge's. */
    if (writable_disk()) print_message("a disk the runner must not write: %s\n", writable_disk());
    int bits = probe(f->scratch, f->outside, NULL);
    assert_int_equal(bits, CAN_NULL | CAN_FULL | CAN_SCRATCH);
}

static void a_shut_node_cannot_be_opened_for_writing(void **state)
{
    folders *f = *state;
    skip_without_landlock();
    static const char *const shut[] = {"/dev/full", NULL};
    int bits = probe(f->scratch, f->outside, shut);
    assert_int_equal(bits, CAN_NULL | CAN_SCRATCH);
    static const char *const none[] = {NULL};
    assert_int_equal(probe(f->scratch, f->outside, none), CAN_NULL | CAN_FULL | CAN_SCRATCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(writes_only_in_scratch_and_dev_s_character_devices,
                                        make_folders, remove_folders),
        cmocka_unit_test_setup_teardown(a_shut_node_cannot_be_opened_for_writing, make_folders,
                                        remove_folders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
