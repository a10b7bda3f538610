/* The devices' long-lived judges (see device_judges.h): a table of one
 * process and one control channel per device, grown as devices come. */
#include "eval/device_judges.h"
#include "util/buf.h"
#include "util/fd_pass.h"
#include "util/proc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A device's judge: its process (NULL when it has ended or never started)
 * and our end of its control channel (-1 with it). */
typedef struct device_judge {
    int device;
    kv_proc *proc;
    int control;
} device_judge;

struct kv_device_judges {
    char *worker; /* the binary that serves as `__judge_server` */
    device_judge *judges;
    size_t n;
};

kv_device_judges *kv_device_judges_new(const char *worker)
{
    const char *js = getenv("KEVOLVE_JUDGE_SERVER");
    if (js && strcmp(js, "0") == 0) return NULL;
    kv_device_judges *dj = kv_calloc(1, sizeof *dj);
    dj->worker = kv_strdup(worker);
    return dj;
}

void kv_device_judges_free(kv_device_judges *dj)
{
    if (!dj) return;
    for (size_t i = 0; i < dj->n; i++) {
        if (dj->judges[i].control >= 0) close(dj->judges[i].control);
        kv_proc_free(dj->judges[i].proc);
    }
    free(dj->judges);
    free(dj->worker);
    free(dj);
}

int kv_device_judges_channel(int pair[2])
{
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair);
}

/* D's judge has ended: its process and channel go. */
static void forget(device_judge *d)
{
    kv_proc_free(d->proc);
    close(d->control);
    d->proc = NULL;
    d->control = -1;
}

/* DEVICE's judge, running: the one there, else one started now (the row
 * added for a new device). NULL when it cannot start. */
static device_judge *judge_of(kv_device_judges *dj, int device)
{
    device_judge *d = NULL;
    for (size_t i = 0; i < dj->n && !d; i++)
        if (dj->judges[i].device == device) d = &dj->judges[i];
    if (d && d->proc && kv_proc_poll(d->proc, 0)) forget(d);
    if (d && d->proc) return d;
    if (!d) {
        dj->judges = kv_realloc(dj->judges, (dj->n + 1) * sizeof *dj->judges);
        d = &dj->judges[dj->n++];
        *d = (device_judge){.device = device, .control = -1};
    }
    int ctl[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) != 0) return NULL;
    char *argv[] = {dj->worker, "__judge_server", NULL};
    kv_proc_spec spec = {.argv = argv, .max_output = 1 << 16, .fds = &ctl[1], .n_fds = 1};
    char *err = NULL;
    d->proc = kv_proc_start(&spec, &err);
    close(ctl[1]);
    free(err); /* none: each job judges itself, as before */
    if (!d->proc) {
        close(ctl[0]);
        return NULL;
    }
    d->control = ctl[0];
    return d;
}

int kv_device_judges_hand(kv_device_judges *dj, int device, int end)
{
    device_judge *d = dj && device >= 0 ? judge_of(dj, device) : NULL;
    ssize_t sent = d ? kv_send_with_fd(d->control, "j", 1, end, MSG_DONTWAIT) : -1;
    close(end);
    return sent == 1 ? 0 : -1;
}

void kv_device_judges_drain(kv_device_judges *dj)
{
    for (size_t i = 0; dj && i < dj->n; i++)
        if (dj->judges[i].proc) kv_proc_poll(dj->judges[i].proc, 0);
}
