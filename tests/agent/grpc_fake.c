/*
 * grpc_fake.c - a gRPC server for tests over libnghttp2's server API: grpc_fake.h says
 * what it does. Each stream keeps its request's path and bytes until the request ends
 * (END_STREAM), when the handler says the answer; the answer's bytes go out through a
 * data provider, then the trailers. One thread polls the listening socket and every
 * connection. Test code only.
 */
#include "grpc_fake.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

struct fake_stream {
    struct fake_stream *next; /* the connection's other open streams */
    char path[128];
    unsigned char *in; /* the request's bytes */
    size_t in_len;
    struct grpc_fake_answer a;
    unsigned char prefix[5]; /* MESSAGE: the message's prefix, sent before body */
    size_t out_sent;         /* of prefix + body */
};

struct fake_conn {
    int fd;
    nghttp2_session *session;
    struct grpc_fake *f;
    struct fake_stream *streams; /* open ones: nghttp2_session_del() closes none */
};

struct grpc_fake {
    int fd;
    grpc_fake_fn fn;
    void *arg;
    atomic_bool stop;
    atomic_int open, accepted;
    pthread_t thread;
    struct fake_conn conns[GRPC_FAKE_MAX_CONNS];
};

static ssize_t conn_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *arg)
{
    (void)s, (void)flags;
    struct fake_conn *c = arg;
    ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return NGHTTP2_ERR_WOULDBLOCK;
    return n < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : n;
}

static int conn_begin(nghttp2_session *s, const nghttp2_frame *frame, void *arg)
{
    struct fake_conn *c = arg;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct fake_stream *st = calloc(1, sizeof(*st));
    if (!st)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->next = c->streams;
    c->streams = st;
    nghttp2_session_set_stream_user_data(s, frame->hd.stream_id, st);
    return 0;
}

static int conn_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                       size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                       void *arg)
{
    (void)flags, (void)arg;
    struct fake_stream *st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
    if (st && namelen == 5 && memcmp(name, ":path", 5) == 0)
        snprintf(st->path, sizeof(st->path), "%.*s", (int)valuelen, (const char *)value);
    return 0;
}

static int conn_data(nghttp2_session *s, uint8_t flags, int32_t stream, const uint8_t *data,
                     size_t len, void *arg)
{
    (void)flags, (void)arg;
    struct fake_stream *st = nghttp2_session_get_stream_user_data(s, stream);
    if (!st)
        return 0;
    unsigned char *in = realloc(st->in, st->in_len + len);
    if (!in)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    memcpy(in + st->in_len, data, len);
    st->in = in;
    st->in_len += len;
    return 0;
}

static void stream_free(struct fake_conn *c, struct fake_stream *st)
{
    for (struct fake_stream **pp = &c->streams; *pp; pp = &(*pp)->next)
        if (*pp == st) {
            *pp = st->next;
            break;
        }
    free(st->in);
    free(st->a.body);
    free(st);
}

static int conn_close(nghttp2_session *s, int32_t stream, uint32_t code, void *arg)
{
    (void)code;
    struct fake_stream *st = nghttp2_session_get_stream_user_data(s, stream);
    if (st) {
        stream_free(arg, st);
        nghttp2_session_set_stream_user_data(s, stream, NULL);
    }
    return 0;
}

static void submit_trailer(nghttp2_session *s, int32_t stream, const struct grpc_fake_answer *a)
{
    char status[16];
    snprintf(status, sizeof(status), "%d", a->kind == GRPC_FAKE_RAW ? 0 : a->status);
    nghttp2_nv trailer[] = {
        {(uint8_t *)"grpc-status", (uint8_t *)status, 11, strlen(status), 0},
        {(uint8_t *)"grpc-message", (uint8_t *)a->message, 12, strlen(a->message), 0},
    };
    nghttp2_submit_trailer(s, stream, trailer, a->message[0] ? 2 : 1);
}

static ssize_t conn_read(nghttp2_session *s, int32_t stream, uint8_t *buf, size_t len,
                         uint32_t *data_flags, nghttp2_data_source *src, void *arg)
{
    (void)src, (void)arg;
    struct fake_stream *st = nghttp2_session_get_stream_user_data(s, stream);
    if (!st) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return 0;
    }
    size_t plen = st->a.kind == GRPC_FAKE_MESSAGE ? sizeof(st->prefix) : 0;
    size_t total = plen + st->a.len, n = 0;
    while (n < len && st->out_sent < total) {
        buf[n++] = st->out_sent < plen ? st->prefix[st->out_sent] : st->a.body[st->out_sent - plen];
        st->out_sent++;
    }
    if (st->out_sent == total) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        submit_trailer(s, stream, &st->a);
    }
    return (ssize_t)n;
}

/* The request's one message, or its raw bytes. */
static void request_message(const struct fake_stream *st, const unsigned char **ret, size_t *len)
{
    const unsigned char *p = st->in;
    size_t n =
        st->in_len >= 5 ? (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4] : 0;
    if (st->in_len >= 5 && p[0] == 0 && n == st->in_len - 5) {
        *ret = n ? p + 5 : (const unsigned char *)"";
        *len = n;
    } else {
        *ret = p ? p : (const unsigned char *)"";
        *len = st->in_len;
    }
}

static void answer(nghttp2_session *s, struct grpc_fake *f, int32_t stream, struct fake_stream *st)
{
    const unsigned char *msg;
    size_t len;
    request_message(st, &msg, &len);
    st->a = (struct grpc_fake_answer){.kind = GRPC_FAKE_MESSAGE};
    f->fn(f->arg, st->path, msg, len, &st->a);
    char status[16];
    snprintf(status, sizeof(status), "%d", st->a.status);
    nghttp2_nv hdrs[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
        {(uint8_t *)"grpc-status", (uint8_t *)status, 11, strlen(status), 0},
        {(uint8_t *)"grpc-message", (uint8_t *)st->a.message, 12, strlen(st->a.message), 0},
    };
    nghttp2_data_provider provider = {.read_callback = conn_read};
    switch (st->a.kind) {
    case GRPC_FAKE_SILENT:
        break;
    case GRPC_FAKE_RESET:
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, stream, NGHTTP2_INTERNAL_ERROR);
        break;
    case GRPC_FAKE_STATUS:
        nghttp2_submit_response(s, stream, hdrs, st->a.message[0] ? 4 : 3, NULL);
        break;
    default:
        st->prefix[0] = 0;
        st->prefix[1] = (unsigned char)(st->a.len >> 24);
        st->prefix[2] = (unsigned char)(st->a.len >> 16);
        st->prefix[3] = (unsigned char)(st->a.len >> 8);
        st->prefix[4] = (unsigned char)st->a.len;
        nghttp2_submit_response(s, stream, hdrs, 2, &provider);
    }
}

static int conn_frame(nghttp2_session *s, const nghttp2_frame *frame, void *arg)
{
    struct fake_conn *c = arg;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
        (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA))
        return 0;
    struct fake_stream *st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
    if (st)
        answer(s, c->f, frame->hd.stream_id, st);
    return 0;
}

static bool conn_open(struct grpc_fake *f, struct fake_conn *c, int fd)
{
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0)
        return false;
    nghttp2_session_callbacks_set_send_callback(cbs, conn_send);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, conn_begin);
    nghttp2_session_callbacks_set_on_header_callback(cbs, conn_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, conn_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, conn_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, conn_close);
    c->fd = fd;
    c->f = f;
    c->streams = NULL;
    int r = nghttp2_session_server_new(&c->session, cbs, c);
    nghttp2_session_callbacks_del(cbs);
    if (r != 0)
        return false;
    nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, NULL, 0);
    atomic_fetch_add(&f->open, 1);
    return true;
}

static void conn_end(struct grpc_fake *f, struct fake_conn *c)
{
    nghttp2_session_del(c->session);
    while (c->streams)
        stream_free(c, c->streams);
    close(c->fd);
    c->session = NULL;
    c->fd = -1;
    atomic_fetch_sub(&f->open, 1);
}

/* Takes what came on c; false when the connection is over. */
static bool conn_turn(struct fake_conn *c, short revents)
{
    unsigned char in[16384];
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = recv(c->fd, in, sizeof(in), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return true;
        if (n <= 0 || nghttp2_session_mem_recv(c->session, in, (size_t)n) < 0)
            return false;
    }
    return nghttp2_session_send(c->session) == 0 &&
           (nghttp2_session_want_read(c->session) || nghttp2_session_want_write(c->session));
}

static void *fake_main(void *arg)
{
    struct grpc_fake *f = arg;
    while (!atomic_load(&f->stop)) {
        struct pollfd p[GRPC_FAKE_MAX_CONNS + 1] = {{.fd = f->fd, .events = POLLIN}};
        for (int i = 0; i < GRPC_FAKE_MAX_CONNS; i++) {
            p[i + 1] = (struct pollfd){.fd = f->conns[i].fd, .events = POLLIN};
            if (f->conns[i].session && nghttp2_session_want_write(f->conns[i].session))
                p[i + 1].events |= POLLOUT;
        }
        if (poll(p, GRPC_FAKE_MAX_CONNS + 1, 100) <= 0)
            continue;
        for (int i = 0; i < GRPC_FAKE_MAX_CONNS; i++)
            if (f->conns[i].session && p[i + 1].revents &&
                !conn_turn(&f->conns[i], p[i + 1].revents))
                conn_end(f, &f->conns[i]);
        if (!(p[0].revents & POLLIN))
            continue;
        int fd = accept(f->fd, NULL, NULL);
        if (fd < 0)
            continue;
        atomic_fetch_add(&f->accepted, 1);
        int slot = 0;
        while (slot < GRPC_FAKE_MAX_CONNS && f->conns[slot].session)
            slot++;
        if (slot == GRPC_FAKE_MAX_CONNS || !conn_open(f, &f->conns[slot], fd)) {
            close(fd);
            continue;
        }
        if (!conn_turn(&f->conns[slot], 0)) /* our SETTINGS */
            conn_end(f, &f->conns[slot]);
    }
    for (int i = 0; i < GRPC_FAKE_MAX_CONNS; i++)
        if (f->conns[i].session)
            conn_end(f, &f->conns[i]);
    return NULL;
}

int grpc_fake_start(int fd, grpc_fake_fn fn, void *arg, struct grpc_fake **ret)
{
    struct grpc_fake *f = calloc(1, sizeof(*f));
    if (!f)
        return ENOMEM;
    f->fd = fd;
    f->fn = fn;
    f->arg = arg;
    for (int i = 0; i < GRPC_FAKE_MAX_CONNS; i++)
        f->conns[i].fd = -1;
    int r = pthread_create(&f->thread, NULL, fake_main, f);
    if (r != 0) {
        free(f);
        return r;
    }
    *ret = f;
    return 0;
}

void grpc_fake_stop(struct grpc_fake *f)
{
    if (!f)
        return;
    atomic_store(&f->stop, true);
    pthread_join(f->thread, NULL);
    close(f->fd);
    free(f);
}

int grpc_fake_open_conns(struct grpc_fake *f)
{
    return atomic_load(&f->open);
}

int grpc_fake_accepted(struct grpc_fake *f)
{
    return atomic_load(&f->accepted);
}
