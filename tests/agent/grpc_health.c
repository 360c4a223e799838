/*
 * grpc_health.c - a gRPC health server for tests over libnghttp2's server API (plaintext
 * HTTP/2, prior knowledge): grpc_health.h says what it answers. Test code only.
 */
#include "grpc_health.h"

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct hs_conn {
    struct health_server *h;
    int fd;
};

static ssize_t conn_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *arg)
{
    (void)s, (void)flags;
    struct hs_conn *c = arg;
    ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
    return n < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : n;
}

static int conn_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                       size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                       void *arg)
{
    (void)s, (void)frame, (void)flags;
    struct hs_conn *c = arg;
    if (namelen == 5 && memcmp(name, ":path", 5) == 0)
        snprintf(c->h->path, sizeof(c->h->path), "%.*s", (int)valuelen, (const char *)value);
    return 0;
}

static int conn_data(nghttp2_session *s, uint8_t flags, int32_t stream, const uint8_t *data,
                     size_t len, void *arg)
{
    (void)s, (void)flags, (void)stream;
    struct hs_conn *c = arg;
    if (c->h->body_len + len <= sizeof(c->h->body)) {
        memcpy(c->h->body + c->h->body_len, data, len);
        c->h->body_len += len;
    }
    return 0;
}

static ssize_t conn_read(nghttp2_session *s, int32_t stream, uint8_t *buf, size_t len,
                         uint32_t *data_flags, nghttp2_data_source *src, void *arg)
{
    (void)src;
    struct hs_conn *c = arg;
    struct health_server *h = c->h;
    size_t n = h->out_len - h->out_sent;
    if (n > len)
        n = len;
    memcpy(buf, h->out + h->out_sent, n);
    h->out_sent += n;
    if (h->out_sent == h->out_len) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv trailer[] = {{(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, 0}};
        nghttp2_submit_trailer(s, stream, trailer, 1);
    }
    return (ssize_t)n;
}

/* A trailers-only answer: the status in the one HEADERS frame. */
static void answer_status(nghttp2_session *s, int32_t stream, const char *status,
                          const char *message)
{
    nghttp2_nv hdrs[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
        {(uint8_t *)"grpc-status", (uint8_t *)status, 11, strlen(status), 0},
        {(uint8_t *)"grpc-message", (uint8_t *)message, 12, strlen(message), 0},
    };
    nghttp2_submit_response(s, stream, hdrs, 4, NULL);
}

static int conn_frame(nghttp2_session *s, const nghttp2_frame *frame, void *arg)
{
    struct hs_conn *c = arg;
    struct health_server *h = c->h;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
        (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA))
        return 0;
    /* the request: a 5-byte prefix, then HealthCheckRequest {1: service} */
    h->service[0] = 0;
    if (h->body_len >= 7 && h->body[5] == 0x0a && h->body[6] < sizeof(h->service) &&
        h->body_len >= 7u + h->body[6])
        snprintf(h->service, sizeof(h->service), "%.*s", h->body[6], (const char *)h->body + 7);
    h->body_len = 0;
    h->calls++;
    int status = strcmp(h->service, "") == 0 || strcmp(h->service, "ok") == 0 ? 1
                 : strcmp(h->service, "down") == 0                            ? 2
                 : strcmp(h->service, "slow") == 0                            ? 1
                                                                              : -1;
    if (strcmp(h->service, "slow") == 0)
        nanosleep(&(struct timespec){1, 500000000}, NULL);
    if (strcmp(h->service, "unimpl") == 0) {
        answer_status(s, frame->hd.stream_id, "12", "unknown service grpc.health.v1.Health");
        return 0;
    }
    if (status < 0) {
        answer_status(s, frame->hd.stream_id, "5", "unknown service");
        return 0;
    }
    unsigned char msg[] = {0, 0, 0, 0, 2, 0x08, (unsigned char)status};
    memcpy(h->out, msg, sizeof(msg));
    h->out_len = sizeof(msg);
    h->out_sent = 0;
    nghttp2_nv hdrs[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
    };
    nghttp2_data_provider provider = {.read_callback = conn_read};
    nghttp2_submit_response(s, frame->hd.stream_id, hdrs, 2, &provider);
    return 0;
}

static void serve_conn(struct health_server *h, int fd)
{
    struct hs_conn c = {h, fd};
    nghttp2_session_callbacks *cbs;
    nghttp2_session *s;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, conn_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, conn_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, conn_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, conn_frame);
    nghttp2_session_server_new(&s, cbs, &c);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
    unsigned char in[4096];
    while (!atomic_load(&h->stop) && nghttp2_session_send(s) == 0 &&
           (nghttp2_session_want_read(s) || nghttp2_session_want_write(s))) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = recv(fd, in, sizeof(in), 0);
        if (n <= 0 || nghttp2_session_mem_recv(s, in, (size_t)n) < 0)
            break;
    }
    nghttp2_session_del(s);
    close(fd);
}

static void *health_main(void *arg)
{
    struct health_server *h = arg;
    while (!atomic_load(&h->stop)) {
        struct pollfd p = {h->fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        int fd = accept(h->fd, NULL, NULL);
        if (fd >= 0)
            serve_conn(h, fd);
    }
    return NULL;
}

int health_server_start(struct health_server *h, int fd)
{
    h->fd = fd;
    atomic_store(&h->stop, false);
    return pthread_create(&h->thread, NULL, health_main, h);
}

void health_server_stop(struct health_server *h)
{
    atomic_store(&h->stop, true);
    pthread_join(h->thread, NULL);
    close(h->fd);
}
