/*
 * grpc.c - gRPC calls over HTTP/2 without TLS (h2c, prior knowledge): one
 * nghttp2 client session on one socket per connection, one call at a time on
 * it. The store's etcd backend calls etcd's API over TCP with it; the agent
 * calls a container runtime's CRI over a unix socket (unix:///path, as
 * kubelet's --container-runtime-endpoint names it). A unary call sends its
 * message and waits for the answer; a streaming call (etcd's Watch) keeps its
 * request side open for more messages and hands the answer's bytes to a
 * callback as they arrive. The messages themselves are the caller's, written
 * and read on the protobuf wire layer (protowire.c).
 *
 * A call is a POST of one length-prefixed message (flag byte 0, 4-byte
 * big-endian length) with `content-type: application/grpc` and `te:
 * trailers`; its outcome is the grpc-status trailer, or header when the
 * answer has no body. A unix socket's :authority is "localhost", as gRPC's
 * own clients send. libcurl would do as well, but Debian 12's 7.88 cannot
 * reuse a prior-knowledge HTTP/2 connection (its second request on one fails
 * with "Error in the HTTP2 framing layer"; fixed in curl 8.0), and a new
 * connection per call costs a handshake and leaves a socket in TIME_WAIT.
 *
 * The socket is non-blocking; a unary call polls it until its stream closes
 * or its deadline passes, a streaming call one turn at a time, also woken by
 * a descriptor of the caller's. Any transport failure marks the connection
 * dead, and the caller drops it. Not thread-safe: one thread uses a
 * connection at a time.
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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

struct ck__grpc_conn {
    int fd;
    nghttp2_session *session;
    char authority[256];
    bool dead;
    /* the call in flight */
    int32_t stream;
    bool closed;   /* the answer ended */
    bool finished; /* and the stream is closed both ways */
    uint32_t close_code;
    long http_status;
    struct ck__grpc_answer *answer; /* status; and the bytes, unless on_data takes them */
    ck__grpc_data_fn on_data;
    void *on_data_arg;
    struct ck__buf out; /* the request's framed messages not yet sent */
    size_t out_sent;
    bool streaming; /* the request side stays open */
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
    if (c->on_data)
        return c->on_data(c->on_data_arg, data, len) ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    return ck__buf_add(&c->answer->body, data, len) < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int close_cb(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *arg)
{
    (void)session;
    struct ck__grpc_conn *c = arg;
    if (stream_id == c->stream) {
        c->closed = c->finished = true;
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
    /* The answer's end ends the call, though a streaming call's request side
     * is still open (a gRPC server resets that half; not every one does). */
    if (frame->hd.stream_id == c->stream && frame->hd.stream_id != 0 &&
        (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        c->closed = true;
    return 0;
}

static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *arg)
{
    (void)session;
    (void)stream_id;
    (void)source;
    struct ck__grpc_conn *c = arg;
    size_t n = c->out.len - c->out_sent;
    if (n == 0 && c->streaming)
        return NGHTTP2_ERR_DEFERRED; /* resumed by ck__grpc_stream_send() */
    if (n > length)
        n = length;
    if (n)
        memcpy(buf, c->out.p + c->out_sent, n);
    c->out_sent += n;
    if (c->out_sent == c->out.len) {
        c->out.len = c->out_sent = 0;
        if (!c->streaming)
            *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return (ssize_t)n;
}

#define UNIX_SCHEME "unix://"

/* A connection to the unix socket at path; -1 with why set. */
static int dial_unix(const char *path, char *why, size_t why_len)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (path[0] != '/' || strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(why, why_len, "bad unix socket path %s", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, why_len, "%s", strerror(errno));
        return -1;
    }
    /* a unix socket connects at once or not at all (EAGAIN: its backlog is full) */
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        snprintf(why, why_len, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * A TCP connection to host:port ([host]:port for an IPv6 address), or unix:///path,
 * within timeout_ms; -1 with why set.
 */
static int dial(const char *endpoint, int timeout_ms, char *why, size_t why_len)
{
    if (strncmp(endpoint, UNIX_SCHEME, strlen(UNIX_SCHEME)) == 0)
        return dial_unix(endpoint + strlen(UNIX_SCHEME), why, why_len);
    char host[256];
    const char *colon = strrchr(endpoint, ':');
    if (!colon || (size_t)(colon - endpoint) >= sizeof(host)) {
        snprintf(why, why_len, "bad endpoint");
        return -1;
    }
    if (endpoint[0] == '[' && colon > endpoint && colon[-1] == ']') /* "[IPv6]:port" */
        snprintf(host, sizeof(host), "%.*s", (int)(colon - endpoint - 2), endpoint + 1);
    else
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
        /* a dead peer under a quiet watch: found within about a minute */
        int one = 1, idle = 30, interval = 10, count = 3;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
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
    bool unix_socket = strncmp(endpoint, UNIX_SCHEME, strlen(UNIX_SCHEME)) == 0;
    snprintf(c->authority, sizeof(c->authority), "%s", unix_socket ? "localhost" : endpoint);
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
    ck__buf_release(&c->out);
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

/*
 * One turn: sends what the session has, waits up to timeout_ms for the socket
 * (or for wake_fd, when >= 0) and takes what arrived. 1 after a turn, 0 when
 * nothing came in time, -1 on a transport failure (why set).
 */
static int turn(struct ck__grpc_conn *c, int wake_fd, int timeout_ms, char *why, size_t why_len)
{
    unsigned char in[16384];
    if (nghttp2_session_send(c->session) != 0) {
        snprintf(why, why_len, "send failed");
        return -1;
    }
    if (c->closed)
        return 1;
    if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session)) {
        snprintf(why, why_len, "connection closed by the server");
        return -1;
    }
    struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
    if (nghttp2_session_want_write(c->session))
        p[0].events |= POLLOUT;
    int pr = poll(p, wake_fd >= 0 ? 2 : 1, timeout_ms);
    if (pr < 0) {
        if (errno == EINTR)
            return 1;
        snprintf(why, why_len, "poll failed");
        return -1;
    }
    if (pr == 0)
        return 0;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = recv(c->fd, in, sizeof(in), 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 1;
        if (n <= 0) {
            snprintf(why, why_len, "%s",
                     n == 0 ? "connection closed by the server" : strerror(errno));
            return -1;
        }
        if (nghttp2_session_mem_recv(c->session, in, (size_t)n) < 0) {
            snprintf(why, why_len, "%s",
                     c->answer && c->answer->body.err ? "answer too large" : "bad HTTP/2");
            return -1;
        }
    }
    return 1;
}

/* Turns until the call's stream closes; false on a transport failure or at the deadline. */
static bool pump(struct ck__grpc_conn *c, int64_t deadline, char *why, size_t why_len)
{
    while (!c->closed) {
        int64_t left = deadline - now_ms();
        int t = left > 0 ? turn(c, -1, (int)left, why, why_len) : 0;
        if (t < 0)
            return false;
        if (t == 0 && !c->closed) {
            snprintf(why, why_len, "timed out");
            return false;
        }
    }
    return true;
}

/* Appends one length-prefixed message to what the request side sends. */
static int queue_message(struct ck__grpc_conn *c, const void *msg, size_t len)
{
    unsigned char prefix[5] = {0, (unsigned char)((uint64_t)len >> 24), (unsigned char)(len >> 16),
                               (unsigned char)(len >> 8), (unsigned char)len};
    ck__buf_add(&c->out, prefix, 5);
    return len ? ck__buf_add(&c->out, msg, len) : c->out.err;
}

/* Submits the request of a call whose first message is queued; false with why set. */
static bool start_call(struct ck__grpc_conn *c, const char *path, struct ck__grpc_answer *answer,
                       char *why, size_t why_len)
{
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
    c->closed = c->finished = false;
    c->close_code = 0;
    c->http_status = 0;
    c->answer = answer;
    c->stream = nghttp2_submit_request(c->session, NULL, hdrs, sizeof(hdrs) / sizeof(hdrs[0]),
                                       &provider, NULL);
    if (c->stream < 0) {
        snprintf(why, why_len, "%s", nghttp2_strerror(c->stream));
        c->dead = true;
        return false;
    }
    return true;
}

/* How a call's stream ended: 0, or CK_EIO with why set. */
static int ended(struct ck__grpc_conn *c, char *why, size_t why_len)
{
    if (c->close_code != NGHTTP2_NO_ERROR) {
        /* REFUSED_STREAM (also a stream past a GOAWAY's last one): not processed */
        if (c->answer)
            c->answer->refused = c->close_code == NGHTTP2_REFUSED_STREAM;
        snprintf(why, why_len, "stream reset (HTTP/2 error %u)", c->close_code);
        return CK_EIO;
    }
    if (c->http_status != 200) {
        snprintf(why, why_len, "HTTP status %ld", c->http_status);
        return CK_EIO;
    }
    return 0;
}

int ck__grpc_call(struct ck__grpc_conn *c, const char *path, const void *msg, size_t msg_len,
                  int timeout_ms, struct ck__grpc_answer *answer, char *why, size_t why_len)
{
    c->streaming = false;
    c->on_data = NULL;
    c->out.len = c->out_sent = 0;
    int r = 0;
    if (queue_message(c, msg, msg_len) < 0) {
        snprintf(why, why_len, "out of memory");
        r = CK_ENOMEM;
    } else if (!start_call(c, path, answer, why, why_len) ||
               !pump(c, now_ms() + timeout_ms, why, why_len)) {
        r = CK_EIO;
    } else {
        r = ended(c, why, why_len);
    }
    /* an answer that came before the request was all sent leaves the stream half open */
    if (r < 0 || !c->finished)
        c->dead = true;
    c->answer = NULL;
    c->stream = 0;
    c->out.len = c->out_sent = 0;
    return r;
}

int ck__grpc_stream_open(struct ck__grpc_conn *c, const char *path, const void *msg, size_t msg_len,
                         ck__grpc_data_fn fn, void *arg, struct ck__grpc_answer *answer, char *why,
                         size_t why_len)
{
    c->streaming = true;
    c->on_data = fn;
    c->on_data_arg = arg;
    c->out.len = c->out_sent = 0;
    if (queue_message(c, msg, msg_len) < 0) {
        snprintf(why, why_len, "out of memory");
        c->dead = true;
        return CK_ENOMEM;
    }
    return start_call(c, path, answer, why, why_len) ? 0 : CK_EIO;
}

int ck__grpc_stream_send(struct ck__grpc_conn *c, const void *msg, size_t msg_len)
{
    if (c->dead || c->closed || !c->streaming)
        return CK_EIO;
    if (queue_message(c, msg, msg_len) < 0)
        return CK_ENOMEM;
    nghttp2_session_resume_data(c->session, c->stream);
    return 0;
}

int ck__grpc_stream_run(struct ck__grpc_conn *c, int wake_fd, int timeout_ms, char *why,
                        size_t why_len)
{
    if (!c->closed && turn(c, wake_fd, timeout_ms, why, why_len) < 0) {
        c->dead = true;
        return CK_EIO;
    }
    if (!c->closed)
        return 1;
    c->dead = true; /* one stream a connection for streaming calls */
    return ended(c, why, why_len);
}

/* gRPC's status codes by number, as Go's codes.Code prints them. */
static const char *const GRPC_CODES[] = {
    "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
    "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
    "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
    "DataLoss", "Unauthenticated"};

const char *ck__grpc_code_name(int code, char *buf, size_t size)
{
    if (code >= 0 && (size_t)code < sizeof(GRPC_CODES) / sizeof(*GRPC_CODES))
        return GRPC_CODES[code];
    snprintf(buf, size, "Code(%d)", code); /* as Go's codes.Code.String() */
    return buf;
}

bool ck__grpc_unary_message(const struct ck__buf *body, struct ck__pb_reader *ret)
{
    if (body->len < 5 || body->p[0] != 0)
        return false;
    const unsigned char *p = (const unsigned char *)body->p;
    size_t len = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
    if (len != body->len - 5)
        return false;
    ret->p = p + 5;
    ret->end = p + body->len;
    return true;
}
