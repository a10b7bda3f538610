/* Holding an evaluation's device (see device_hold.h). */
#include "judge/device_hold.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slot_channel.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

int kv_device_bind(const kv_job *job, char **err)
{
    if (job->slot_fd < 0) return job->device;
    return kv_slot_bind(job->slot_fd, err);
}

/* The name of the lock of B's DEVICE as this process sees it: the host
 * (a cache folder may be shared by a cluster's nodes) and the devices a
 * scheduler left visible (each step's "device 0" may be another GPU). */
static char *lock_path(const char *cache, const kv_backend *b, int device)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    const char *vis = b->visible_env ? getenv(b->visible_env) : NULL;
    kv_buf p = KV_BUF_INIT;
    kv_buf_printf(&p, "%s/device-%s-%d", cache, b->name, device);
    if (*host) kv_buf_printf(&p, "-%s", host);
    /* A device list such as "0,1" or a UUID: kept to the characters a
     * file name takes. */
    if (vis && *vis) {
        kv_buf_printf(&p, "-visible-");
        for (const char *c = vis; *c; c++)
            kv_buf_printf(&p, "%c", isalnum((unsigned char)*c) || *c == '-' ? *c : '_');
    }
    kv_buf_printf(&p, ".lock");
    return p.data;
}

/* Takes the lock of DEVICE exclusively, waiting at most WAIT_S seconds:
 * other processes (another run, a `kevolve eval` by hand) time on the
 * device too. */
static int take_lock(const char *cache, const kv_backend *b, int device, double wait_s, char **err)
{
    char *path = lock_path(cache, b, device);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        *err = kv_asprintf("cannot open the device lock %s: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    double deadline = kv_now_s() + wait_s;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            *err = kv_asprintf("cannot lock %s: %s", path, strerror(errno));
            close(fd);
            free(path);
            return -1;
        }
        if (kv_now_s() >= deadline) {
            *err = kv_asprintf("device busy: another evaluation held %s for more than %.0f s", path,
                               wait_s);
            close(fd);
            free(path);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    free(path);
    return fd;
}

int kv_device_hold(const kv_job *job, int asked, const kv_backend *b, const char *cache, int device,
                   double *waited, double *granted, char **err)
{
    double t0 = kv_now_s();
    int fd = -1;
    *granted = t0;
    if (job->slot_fd >= 0) {
        int got = asked ? kv_slot_await(job->slot_fd, err) : kv_slot_ask(job->slot_fd, err);
        if (got < 0) goto out;
        if (got != device) {
            /* Its device left rotation while it prepared there. */
            *err = kv_asprintf("device %d was taken out of rotation while this evaluation "
                               "prepared on it (device %d offered instead)",
                               device, got);
            kv_slot_tell(job->slot_fd, KV_SLOT_FREE);
            goto out;
        }
        *granted = kv_now_s();
    }
    double wait = job->limits.device_wait_s > 0 ? job->limits.device_wait_s : 600;
    fd = take_lock(cache, b, device, wait, err);
    if (job->slot_fd >= 0) kv_slot_tell(job->slot_fd, fd >= 0 ? KV_SLOT_HOLD : KV_SLOT_FREE);
out:
    *waited = kv_now_s() - t0;
    return fd;
}

void kv_device_let_go(const kv_job *job, int lock)
{
    if (lock >= 0) close(lock);
    if (job->slot_fd >= 0) kv_slot_tell(job->slot_fd, KV_SLOT_FREE);
}
