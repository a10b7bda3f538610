/* The device-slot channel (see slot_channel.h): one byte from the worker,
 * five (the message and the device as 4 bytes) from the evaluator. */
#include "util/slot_channel.h"
#include "util/buf.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

int kv_slot_tell(int fd, char msg)
{
    ssize_t n;
    while ((n = send(fd, &msg, 1, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    return n == 1 ? 0 : -1;
}

int kv_slot_answer(int fd, char reply, int device)
{
    unsigned char msg[5] = {(unsigned char)reply};
    int32_t d = device;
    memcpy(msg + 1, &d, sizeof d);
    return send(fd, msg, sizeof msg, MSG_NOSIGNAL) == (ssize_t)sizeof msg ? 0 : -1;
}

/* Reads the 5-byte answer REPLY on FD (its device). */
static int slot_answer(int fd, char reply, char **err)
{
    unsigned char msg[5];
    ssize_t n;
    while ((n = recv(fd, msg, sizeof msg, 0)) < 0 && errno == EINTR) {
    }
    if (n != (ssize_t)sizeof msg || msg[0] != (unsigned char)reply) {
        *err = kv_strdup(n == 0 ? "the evaluator went away while this job waited for a device"
                                : "the evaluator's answer for a device is malformed");
        return -1;
    }
    int32_t device;
    memcpy(&device, msg + 1, sizeof device);
    return device;
}

/* Sends ASK on FD and reads the 5-byte answer REPLY (its device). */
static int slot_request(int fd, char ask, char reply, char **err)
{
    if (kv_slot_tell(fd, ask) != 0) {
        *err = kv_asprintf("cannot ask the evaluator for a device: %s", strerror(errno));
        return -1;
    }
    return slot_answer(fd, reply, err);
}

int kv_slot_await(int fd, char **err)
{
    return slot_answer(fd, KV_SLOT_GRANT, err);
}

int kv_slot_ask(int fd, char **err)
{
    return slot_request(fd, KV_SLOT_ASK, KV_SLOT_GRANT, err);
}

int kv_slot_bind(int fd, char **err)
{
    return slot_request(fd, KV_SLOT_BIND, KV_SLOT_BOUND, err);
}
