/* One message on a Unix socket with a descriptor beside it (SCM_RIGHTS):
 * the judge and its runners, the evaluator and the device's judge, a
 * worker and that judge. */
#ifndef KV_UTIL_FD_PASS_H
#define KV_UTIL_FD_PASS_H

#include <stddef.h>
#include <sys/types.h>

/* Sends the LEN bytes of BUF on SOCK in one sendmsg, with FD beside them
 * when FD >= 0. FLAGS are sendmsg's (MSG_NOSIGNAL is always added).
 * Returns what sendmsg returned (EINTR retried). */
ssize_t kv_send_with_fd(int sock, const void *buf, size_t len, int fd, int flags);
/* Receives at most LEN bytes into BUF from SOCK in one recvmsg, and into
 * *FD a descriptor sent beside them (close-on-exec), else -1. Returns what
 * recvmsg returned (EINTR retried). */
ssize_t kv_recv_with_fd(int sock, void *buf, size_t len, int *fd);

#endif
