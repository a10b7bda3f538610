/* Helpers for the dashboard's tests (test_web_*.c): a minimal HTTP/1.0
 * client over a TCP socket, so the tests talk to the real server the way a
 * browser does. Header-only; each function fails the cmocka test on a
 * socket error. */
#ifndef KV_TEST_WEB_HTTP_H
#define KV_TEST_WEB_HTTP_H

#include "util/buf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* An answer: status code and body (malloc'd, NUL-terminated). */
typedef struct http_answer {
    int status;
    char *body;
    char *headers;
} http_answer;

/* Sends RAW (a whole request) to 127.0.0.1:PORT and reads the answer until
 * the server closes. Returns 0 and fills *A, or -1 on a socket error. */
static int http_raw(int port, const char *raw, size_t raw_len, http_answer *a)
{
    memset(a, 0, sizeof *a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    size_t off = 0;
    while (off < raw_len) {
        ssize_t n = send(fd, raw + off, raw_len - off, MSG_NOSIGNAL);
        if (n <= 0) break; /* the server may answer and close early */
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    kv_buf b = KV_BUF_INIT;
    char chunk[8192];
    ssize_t n;
    while ((n = recv(fd, chunk, sizeof chunk, 0)) > 0)
        kv_buf_append(&b, chunk, (size_t)n);
    close(fd);
    char *text = kv_buf_steal(&b);
    int major, minor;
    if (sscanf(text, "HTTP/%d.%d %d", &major, &minor, &a->status) != 3) a->status = 0;
    char *sep = strstr(text, "\r\n\r\n");
    a->headers = sep ? kv_strndup(text, (size_t)(sep - text)) : kv_strdup(text);
    a->body = kv_strdup(sep ? sep + 4 : "");
    free(text);
    return 0;
}

/* METHOD TARGET (path and query) with no body. */
static int http_request(int port, const char *method, const char *target, http_answer *a)
{
    char *raw = kv_asprintf("%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                            method, target);
    int rc = http_raw(port, raw, strlen(raw), a);
    free(raw);
    return rc;
}

static void http_answer_free(http_answer *a)
{
    free(a->body);
    free(a->headers);
    a->body = a->headers = NULL;
}

#endif
