/*
 * grpc.c - unary gRPC calls over HTTP/2 without TLS (h2c, prior knowledge),
 * for the etcd backend: one nghttp2 client session on one socket per
 * connection, one call at a time on it.
 *
 * A call is a POST of one length-prefixed message (flag byte 0, 4-byte
 * big-endian length) with `content-type: application/grpc` and `te:
 * trailers`; its outcome is the grpc-status trailer, or header when the
 * answer has no body. libcurl would do as well, but Debian 12's 7.88 cannot
 * reuse a prior-knowledge HTTP/2 connection (its second request on one fails
 * with "Error in the HTTP2 framing layer"; fixed in curl 8.0), and a new
 * connection per call costs a handshake and leaves a socket in TIME_WAIT.
 *
 * The socket is non-blocking; a call polls it until its stream closes or its
 * deadline passes. Any transport failure marks the connection dead, and the
 * caller drops it. Not thread-safe: one thread uses a connection at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct ck__grpc_conn {
    int fd;
    nghttp2_session *session;
    char authority[256];
    bool dead;
    /* the call in flight */
    int32_t stream;
    bool closed;
    uint32_t close_code;
    long http_status;
    struct ck__grpc_answer *answer;
    const unsigned char *body;
    size_t body_len, body_sent;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static ssize_t send_cb(nghttp2_session *session, const uint8_t *data, size_t length, int flags,
                       void *arg)
{
    (void)session;
    (void)flags;
    struct ck__grpc_conn *c = arg;
    ssize_t n = send(c->fd, data, length, MSG_NOSIGNAL);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
                   ? NGHTTP2_ERR_WOULDBLOCK
                   : NGHTTP2_ERR_CALLBACK_FAILURE;
    return n;
}

static int header_cb(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *arg)
{
    (void)session;
    (void)flags;
    struct ck__grpc_conn *c = arg;
    if (frame->hd.stream_id != c->stream || !c->answer)
        return 0;
    struct ck__grpc_answer *a = c->answer;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        c->http_status = strtol((const char *)value, NULL, 10);
    } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
        a->status_seen = true;
        a->status = (int)strtol((const char *)value, NULL, 10);
    } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
        /* percent-encoded (gRPC over HTTP/2) */
        size_t o = 0;
        for (size_t i = 0; i < valuelen && o + 1 < sizeof(a->message); i++) {
            unsigned hi, lo;
            if (value[i] == '%' && i + 2 < valuelen &&
                sscanf((const char *)value + i + 1, "%1x%1x", &hi, &lo) == 2) {
                a->message[o++] = (char)(hi << 4 | lo);
                i += 2;
            } else {
                a->message[o++] = (char)value[i];
            }
        }
        a->message[o] = '\0';
    }
    return 0;
}

static int data_cb(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                   size_t len, void *arg)
{
    (void)session;
    (void)flags;
    struct ck__grpc_conn *c = arg;
    if (stream_id != c->stream || !c->answer)
        return 0;
    return ck__buf_add(&c->answer->body, data, len) < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int close_cb(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *arg)
{
    (void)session;
    struct ck__grpc_conn *c = arg;
    if (stream_id == c->stream) {
        c->closed = true;
        c->close_code = error_code;
    }
    return 0;
}

static int frame_cb(nghttp2_session *session, const nghttp2_frame *frame, void *arg)
{
    (void)session;
    struct ck__grpc_conn *c = arg;
    if (frame->hd.type == NGHTTP2_GOAWAY)
        c->dead = true; /* the call in flight may still finish; no call after it */
    return 0;
}

static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *arg)
{
    (void)session;
    (void)stream_id;
    (void)source;
    struct ck__grpc_conn *c = arg;
    size_t n = c->body_len - c->body_sent;
    if (n > length)
        n = length;
    memcpy(buf, c->body + c->body_sent, n);
    c->body_sent += n;
    if (c->body_sent == c->body_len)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* A TCP connection to host:port within timeout_ms; -1 with why set. */
static int dial(const char *endpoint, int timeout_ms, char *why, size_t why_len)
{
    char host[256];
    const char *colon = strrchr(endpoint, ':');
    if (!colon || (size_t)(colon - endpoint) >= sizeof(host)) {
        snprintf(why, why_len, "bad endpoint");
        return -1;
    }
    snprintf(host, sizeof(host), "%.*s", (int)(colon - endpoint), endpoint);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(host, colon + 1, &hints, &res);
    if (g != 0) {
        snprintf(why, why_len, "%s", gai_strerror(g));
        return -1;
    }
    int fd = -1;
    snprintf(why, why_len, "no address");
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (r < 0 && errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            if (poll(&p, 1, timeout_ms) == 1 &&
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
                r = 0;
            else
                errno = soerr ? soerr : ETIMEDOUT;
        }
        if (r < 0) {
            snprintf(why, why_len, "%s", strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return fd;
}

int ck__grpc_connect(const char *endpoint, int timeout_ms, struct ck__grpc_conn **ret, char *why,
                     size_t why_len)
{
    struct ck__grpc_conn *c = calloc(1, sizeof(*c));
    nghttp2_session_callbacks *cbs = NULL;
    if (!c || nghttp2_session_callbacks_new(&cbs) != 0) {
        free(c);
        snprintf(why, why_len, "out of memory");
        return CK_ENOMEM;
    }
    snprintf(c->authority, sizeof(c->authority), "%s", endpoint);
    c->fd = dial(endpoint, timeout_ms, why, why_len);
    if (c->fd < 0) {
        nghttp2_session_callbacks_del(cbs);
        free(c);
        return CK_EIO;
    }
    nghttp2_session_callbacks_set_send_callback(cbs, send_cb);
    nghttp2_session_callbacks_set_on_header_callback(cbs, header_cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, data_cb);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, close_cb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, frame_cb);
    int r = nghttp2_session_client_new(&c->session, cbs, c);
    nghttp2_session_callbacks_del(cbs);
    /* Large answers (a range of many keys) flow without waiting on window updates. */
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 16u << 20}};
    if (r != 0 || nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 1) != 0 ||
        nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, 64 << 20) != 0) {
        ck__grpc_close(c);
        snprintf(why, why_len, "out of memory");
        return CK_ENOMEM;
    }
    *ret = c;
    return 0;
}

void ck__grpc_close(struct ck__grpc_conn *c)
{
    if (!c)
        return;
    if (c->session)
        nghttp2_session_del(c->session);
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

bool ck__grpc_usable(struct ck__grpc_conn *c)
{
    /* Idle, a connection has nothing to read but etcd's GOAWAY, PING or end. */
    unsigned char in[4096];
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    while (!c->dead && poll(&p, 1, 0) == 1) {
        ssize_t n = recv(c->fd, in, sizeof(in), 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n <= 0 || nghttp2_session_mem_recv(c->session, in, (size_t)n) < 0)
            c->dead = true;
    }
    return !c->dead;
}

/* Sends and receives until the call's stream closes; false on a transport failure. */
static bool pump(struct ck__grpc_conn *c, int64_t deadline, char *why, size_t why_len)
{
    unsigned char in[16384];
    while (!c->closed) {
        if (nghttp2_session_send(c->session) != 0) {
            snprintf(why, why_len, "send failed");
            return false;
        }
        if (c->closed)
            break;
        if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session)) {
            snprintf(why, why_len, "connection closed by etcd");
            return false;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            snprintf(why, why_len, "timed out");
            return false;
        }
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (nghttp2_session_want_write(c->session))
            p.events |= POLLOUT;
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            snprintf(why, why_len, pr == 0 ? "timed out" : "poll failed");
            return false;
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = recv(c->fd, in, sizeof(in), 0);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n <= 0) {
                snprintf(why, why_len, "%s",
                         n == 0 ? "connection closed by etcd" : strerror(errno));
                return false;
            }
            if (nghttp2_session_mem_recv(c->session, in, (size_t)n) < 0) {
                snprintf(why, why_len, "%s",
                         c->answer && c->answer->body.err ? "answer too large" : "bad HTTP/2");
                return false;
            }
        }
    }
    return true;
}

int ck__grpc_call(struct ck__grpc_conn *c, const char *path, const void *msg, size_t msg_len,
                  int timeout_ms, struct ck__grpc_answer *answer, char *why, size_t why_len)
{
    unsigned char *body = malloc(msg_len + 5);
    if (!body) {
        snprintf(why, why_len, "out of memory");
        return CK_ENOMEM;
    }
    body[0] = 0;
    for (int i = 0; i < 4; i++)
        body[1 + i] = (unsigned char)((uint64_t)msg_len >> (8 * (3 - i)));
    if (msg_len)
        memcpy(body + 5, msg, msg_len);
#define NV(n, v)                                                                                   \
    {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NO_COPY_NAME}
    nghttp2_nv hdrs[] = {NV(":method", "POST"),
                         NV(":scheme", "http"),
                         NV(":path", path),
                         NV(":authority", c->authority),
                         NV("content-type", "application/grpc"),
                         NV("te", "trailers")};
#undef NV
    nghttp2_data_provider provider = {.read_callback = read_body};
    c->body = body;
    c->body_len = msg_len + 5;
    c->body_sent = 0;
    c->closed = false;
    c->close_code = 0;
    c->http_status = 0;
    c->answer = answer;
    c->stream = nghttp2_submit_request(c->session, NULL, hdrs, sizeof(hdrs) / sizeof(hdrs[0]),
                                       &provider, NULL);
    int r = 0;
    if (c->stream < 0) {
        snprintf(why, why_len, "%s", nghttp2_strerror(c->stream));
        r = CK_EIO;
    } else if (!pump(c, now_ms() + timeout_ms, why, why_len)) {
        r = CK_EIO;
    } else if (c->close_code != NGHTTP2_NO_ERROR) {
        snprintf(why, why_len, "stream reset (HTTP/2 error %u)", c->close_code);
        r = CK_EIO;
    } else if (c->http_status != 200) {
        snprintf(why, why_len, "HTTP status %ld", c->http_status);
        r = CK_EIO;
    }
    if (r < 0)
        c->dead = true;
    c->answer = NULL;
    c->body = NULL;
    c->stream = 0;
    free(body);
    return r;
}
