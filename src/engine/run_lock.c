/* The lock on a run's output folder (see run_lock.h). */
#define _GNU_SOURCE
#include "engine/run_lock.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"

#include <kevolve/kevolve.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

struct kv_run_lock {
    int fd;
};

/* Tries to lock FD exclusively without waiting: 0 taken, 1 held by another
 * process, -1 with errno when the file system cannot lock. */
static int try_lock(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_SETLK, &fl) == 0) return 0;
    if (errno == EAGAIN || errno == EACCES) return 1;
    if (errno != EINVAL) return -1;
    /* A kernel without OFD locks (before 3.15). */
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
    return errno == EWOULDBLOCK ? 1 : -1;
}

/* "pid 123 on host h, kevolve resume since 2026-12-01 10:00:00" from the
 * lock file's text, or a plainer phrase when it says nothing. */
static char *holder_text(int fd)
{
    char buf[512];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return kv_strdup("another kevolve process");
    buf[n] = '\0';
    long pid = 0;
    char host[256] = "", command[32] = "", since[64] = "";
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (sscanf(line, "pid=%ld", &pid) == 1) continue;
        if (sscanf(line, "host=%255s", host) == 1) continue;
        if (sscanf(line, "command=%31s", command) == 1) continue;
        if (strncmp(line, "since=", 6) == 0) snprintf(since, sizeof since, "%s", line + 6);
    }
    if (pid <= 0) return kv_strdup("another kevolve process");
    return kv_asprintf("kevolve %s (pid %ld on %s, since %s)", *command ? command : "run", pid,
                       *host ? host : "?", *since ? since : "?");
}

int kv_run_lock_take(const char *output_dir, const char *command, kv_run_lock **lock, char **err)
{
    *lock = NULL;
    *err = NULL;
    char *path = kv_path_join(output_dir, "run.lock");
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        *err = kv_asprintf("cannot create the run's lock %s: %s", path, strerror(errno));
        free(path);
        return KV_EXIT_IO;
    }
    int r = try_lock(fd);
    if (r == 1) {
        char *who = holder_text(fd);
        *err = kv_asprintf("%s is in use: %s is writing this run; wait for it to end or stop "
                           "it first (read-only commands such as `kevolve status` work meanwhile)",
                           output_dir, who);
        free(who);
        close(fd);
        free(path);
        return KV_EXIT_BUSY;
    }
    if (r < 0)
        kv_warn("cannot lock %s (%s): nothing stops another kevolve process from writing this "
                "run at the same time",
                path, strerror(errno));
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    char since[64];
    time_t now = time(NULL);
    struct tm tm;
    strftime(since, sizeof since, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&now, &tm));
    char *text = kv_asprintf("pid=%ld\nhost=%s\ncommand=%s\nsince=%s\n", (long)getpid(), host,
                             command, since);
    /* Who holds it, for the message of the next one; the lock does not
     * depend on it, so a failed write only makes that message vaguer. */
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, strlen(text), 0) < 0)
        kv_debug("cannot write %s: %s", path, strerror(errno));
    free(text);
    free(path);
    kv_run_lock *l = kv_calloc(1, sizeof *l);
    l->fd = fd;
    *lock = l;
    return KV_EXIT_OK;
}

void kv_run_lock_release(kv_run_lock *lock)
{
    if (!lock) return;
    close(lock->fd);
    free(lock);
}
