/*
 * hostile.h - what the tests of tests/hostile/ share: raw TCP connections to
 * a test server, for the requests no HTTP client library would send (two
 * Content-Length headers, a header that never ends), and a server started
 * with chosen connection bounds.
 *
 * Reading an answer here only compares its first bytes ("HTTP/1.1 400") and
 * looks for a JSON body after the blank line: enough to tell which answer
 * came, not an HTTP parser.
 */
#ifndef CKUBE_TESTS_HOSTILE_H
#define CKUBE_TESTS_HOSTILE_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "apiserver/httptest.h"

/* A server on 127.0.0.1:0 with these bounds (0: the defaults) over a fresh store in dir. */
static inline struct ck_apiserver *hostile_server_start(char *dir, unsigned max_total,
                                                        unsigned max_per_address,
                                                        unsigned header_timeout)
{
    char store[256];
    if (test_store_dir(dir, store, sizeof(store)) < 0)
        return NULL;
    struct ck_apiserver_config config = {
        .disable_admission_plugins = "ServiceAccount",
        .listen = "127.0.0.1:0",
        .store_url = store,
        .max_connections = max_total,
        .max_connections_per_address = max_per_address,
        .request_header_timeout = header_timeout,
    };
    struct ck_apiserver *server = NULL;
    struct ck_err err = {0};
    if (ck_apiserver_start(&config, &server, &err) < 0) {
        fprintf(stderr, "start: %s\n", err.msg);
        return NULL;
    }
    return server;
}

/* A TCP connection to the server from loopback address source (NULL: any), or -1. */
static inline int raw_connect_from(struct ck_apiserver *server, const char *source)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (source) {
        struct sockaddr_in from = {.sin_family = AF_INET};
        if (inet_pton(AF_INET, source, &from.sin_addr) != 1 ||
            bind(fd, (struct sockaddr *)&from, sizeof(from)) != 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(ck_apiserver_port(server))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static inline int raw_connect(struct ck_apiserver *server)
{
    return raw_connect_from(server, NULL);
}

static inline bool raw_send(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, data, len, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        data += w;
        len -= (size_t)w;
    }
    return true;
}

static inline double hostile_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Reads what the server sends until it closes the connection or `limit`
 * seconds pass. Returns the bytes (NUL-terminated, caller frees) and sets
 * *ret_closed when the server closed it (end of file or reset).
 */
static inline char *raw_read_until_close(int fd, double limit, bool *ret_closed)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = calloc(1, cap + 1);
    double until = hostile_now() + limit;
    *ret_closed = false;
    while (buf && hostile_now() < until) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = (int)((until - hostile_now()) * 1000) + 1;
        if (poll(&p, 1, ms) <= 0)
            continue;
        ssize_t n = recv(fd, buf + len, cap - len, 0);
        if (n <= 0) {
            *ret_closed = true;
            break;
        }
        len += (size_t)n;
        if (len == cap)
            break;
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* Whether the connection is closed by the server within `limit` seconds (data is dropped). */
static inline bool raw_closed_within(int fd, double limit)
{
    bool closed = false;
    free(raw_read_until_close(fd, limit, &closed));
    return closed;
}

/* The JSON body of a raw answer (after the blank line), parsed; NULL when none. */
static inline json_t *raw_json_body(const char *answer)
{
    const char *body = strstr(answer, "\r\n\r\n");
    return body ? json_loads(body + 4, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
}

#endif /* CKUBE_TESTS_HOSTILE_H */
