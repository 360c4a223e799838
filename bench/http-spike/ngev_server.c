/*
 * ngev_server.c - the HTTP-layer spike on libnghttp2's server API and
 * libevent 2.1 with its OpenSSL bufferevents (the shape of nghttp2's own
 * libevent example server), HTTP/1.1 parsed by http-parser 2.9.4. N loop
 * threads, each with its own event_base and listener (SO_REUSEPORT).
 *
 *   ngev_server -c CERT -k KEY [-t THREADS] [-p PORT] [-n EVENTS] [-i INTERVAL_MS]
 *
 * GET /obj answers spike_obj; GET /watch keeps the response open and sends each
 * broadcast event (one chunk on HTTP/1.1, DATA on HTTP/2); GET /fire starts
 * the feeder. The feeder wakes each loop by writing its eventfd once per event;
 * the loop adds each HTTP/1.1 watch's missing events to its output buffer by
 * reference (no copy) and resumes each HTTP/2 watch's deferred data provider.
 * Back-pressure: a connection whose output holds more than OUT_HIGH bytes is
 * skipped and caught up from its write callback.
 */
#define _GNU_SOURCE
#include "spike.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define OUT_HIGH (64 * 1024)

enum route { R_NONE, R_OBJ, R_WATCH, R_FIRE };

struct conn;

/* one watch: an HTTP/1.1 connection's response or an HTTP/2 stream */
struct watch {
    struct watch *prev, *next; /* the loop's watches */
    struct conn *c;
    int32_t stream_id; /* 0 on HTTP/1.1 */
    uint64_t sent;
};

struct stream { /* an HTTP/2 stream's request */
    enum route route;
    struct watch *w;
    size_t obj_off;
};

struct conn {
    struct loop *L;
    struct bufferevent *bev;
    nghttp2_session *h2; /* NULL on HTTP/1.1 */
    http_parser hp;
    enum route route;
    struct watch *w; /* the HTTP/1.1 watch, or NULL */
    int close_after;
    int nwatch; /* HTTP/2 watches open */
};

struct loop {
    struct event_base *base;
    struct event *wake_ev;
    int efd;
    struct watch head;      /* list anchor */
    struct evbuffer *batch; /* h2_flush()'s */
};

static struct spike_opts opts;
static SSL_CTX *ssl_ctx;
static struct loop *loops;
static http_parser_settings h1_settings;
static nghttp2_session_callbacks *h2_callbacks;

static const char h1_obj_head_fmt[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n";
static char h1_obj[4096];
static size_t h1_obj_len;
static const char h1_watch_head[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
static const char h1_fire[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nfired\n";
static const char h1_404[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
static const char h1_400[] =
    "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";

static void watch_add(struct loop *L, struct watch *w)
{
    w->next = L->head.next;
    w->prev = &L->head;
    L->head.next->prev = w;
    L->head.next = w;
    w->sent = spike_published();
}

static void watch_del(struct watch *w)
{
    w->prev->next = w->next;
    w->next->prev = w->prev;
    free(w);
}

static enum route route_of(const char *p, size_t n)
{
    if (n == 4 && memcmp(p, "/obj", 4) == 0)
        return R_OBJ;
    if (n == 6 && memcmp(p, "/watch", 6) == 0)
        return R_WATCH;
    if (n == 5 && memcmp(p, "/fire", 5) == 0)
        return R_FIRE;
    return R_NONE;
}

static void conn_free(struct conn *c)
{
    if (c->h2) {
        /* nghttp2_session_del() does not call on_stream_close: drop this
         * connection's HTTP/2 watches here */
        for (struct watch *w = c->L->head.next, *next; c->nwatch > 0 && w != &c->L->head;
             w = next) {
            next = w->next;
            if (w->c == c) {
                watch_del(w);
                c->nwatch--;
            }
        }
        nghttp2_session_del(c->h2);
    }
    if (c->w)
        watch_del(c->w);
    bufferevent_free(c->bev);
    free(c);
}

/* ---- HTTP/2 ---- */

/* Everything nghttp2 has to send, as far as OUT_HIGH, added to the output at
 * once: bufferevent_openssl writes at once whatever is added to its output, so
 * adding frame by frame would cost one TLS record and one write(2) a frame. */
static int h2_flush(struct conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev), *batch = c->L->batch;
    while (evbuffer_get_length(out) + evbuffer_get_length(batch) < OUT_HIGH) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(c->h2, &data);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        evbuffer_add(batch, data, (size_t)n);
    }
    /* one chain: bufferevent_openssl makes one SSL_write(), so one record
     * and one write(2), per chain of its output */
    evbuffer_pullup(batch, -1);
    evbuffer_add_buffer(out, batch);
    if (!nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2) &&
        evbuffer_get_length(out) == 0)
        return -1;
    return 0;
}

static ssize_t obj_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                        nghttp2_data_source *src, void *arg)
{
    struct stream *st = src->ptr;
    size_t n = spike_obj_len - st->obj_off;
    (void)s, (void)id, (void)arg;
    if (n > len)
        n = len;
    memcpy(buf, spike_obj + st->obj_off, n);
    st->obj_off += n;
    if (st->obj_off == spike_obj_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static ssize_t watch_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                          nghttp2_data_source *src, void *arg)
{
    struct watch *w = ((struct stream *)src->ptr)->w;
    uint64_t end = spike_published();
    size_t n = 0;
    (void)s, (void)id, (void)flags, (void)arg;
    while (w->sent < end) {
        const struct spike_event *e = &spike_ring[w->sent % SPIKE_RING];
        if (n + e->len > len)
            break;
        memcpy(buf + n, e->data, e->len);
        n += e->len;
        w->sent++;
    }
    return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
}

static int h2_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    (void)arg;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct stream *st = calloc(1, sizeof *st);
    nghttp2_session_set_stream_user_data(s, f->hd.stream_id, st);
    return 0;
}

static int h2_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *arg)
{
    (void)flags, (void)arg;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (st && namelen == 5 && memcmp(name, ":path", 5) == 0)
        st->route = route_of((const char *)value, valuelen);
    return 0;
}

static int h2_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    struct conn *c = arg;
    if (f->hd.type != NGHTTP2_HEADERS || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    struct stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (!st)
        return 0;
    nghttp2_nv json[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"content-type", (uint8_t *)"application/json", 12, 16, NGHTTP2_NV_FLAG_NONE}};
    nghttp2_data_provider dp = {.source.ptr = st};
    switch (st->route) {
    case R_OBJ:
        dp.read_callback = obj_read;
        return nghttp2_submit_response(s, f->hd.stream_id, json, 2, &dp);
    case R_WATCH:
        st->w = calloc(1, sizeof *st->w);
        st->w->c = c;
        st->w->stream_id = f->hd.stream_id;
        watch_add(c->L, st->w);
        c->nwatch++;
        dp.read_callback = watch_read;
        return nghttp2_submit_response(s, f->hd.stream_id, json, 2, &dp);
    case R_FIRE:
        spike_feed_fire();
        return nghttp2_submit_response(s, f->hd.stream_id, json, 1, NULL);
    default: {
        nghttp2_nv nf[] = {{(uint8_t *)":status", (uint8_t *)"404", 7, 3, NGHTTP2_NV_FLAG_NONE}};
        return nghttp2_submit_response(s, f->hd.stream_id, nf, 1, NULL);
    }
    }
}

static int h2_stream_close(nghttp2_session *s, int32_t id, uint32_t err, void *arg)
{
    struct stream *st = nghttp2_session_get_stream_user_data(s, id);
    (void)err;
    if (st) {
        if (st->w) {
            watch_del(st->w);
            ((struct conn *)arg)->nwatch--;
        }
        free(st);
    }
    return 0;
}

static void h2_start(struct conn *c)
{
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};
    nghttp2_session_server_new(&c->h2, h2_callbacks, c);
    nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 1);
}

/* ---- HTTP/1.1 ---- */

static int h1_url(http_parser *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    c->route = route_of(at, n); /* the spike's clients send the path in one piece */
    return 0;
}

static int h1_done(http_parser *p)
{
    struct conn *c = p->data;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (c->w) /* a request after a watch: not spoken by the spike's clients */
        return -1;
    switch (p->method == HTTP_GET ? c->route : R_NONE) {
    case R_OBJ:
        evbuffer_add_reference(out, h1_obj, h1_obj_len, NULL, NULL);
        break;
    case R_WATCH:
        evbuffer_add_reference(out, h1_watch_head, sizeof h1_watch_head - 1, NULL, NULL);
        c->w = calloc(1, sizeof *c->w);
        c->w->c = c;
        watch_add(c->L, c->w);
        break;
    case R_FIRE:
        spike_feed_fire();
        evbuffer_add_reference(out, h1_fire, sizeof h1_fire - 1, NULL, NULL);
        break;
    default:
        evbuffer_add_reference(out, h1_404, sizeof h1_404 - 1, NULL, NULL);
        break;
    }
    if (!http_should_keep_alive(p))
        c->close_after = 1;
    return 0;
}

static void h1_catch_up(struct watch *w)
{
    struct evbuffer *out = bufferevent_get_output(w->c->bev);
    uint64_t end = spike_published();
    while (w->sent < end && evbuffer_get_length(out) < OUT_HIGH) {
        const struct spike_event *e = &spike_ring[w->sent++ % SPIKE_RING];
        evbuffer_add_reference(out, e->chunk, e->chunk_len, NULL, NULL);
    }
}

/* ---- the connection ---- */

static void on_read(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in);
    unsigned char *data = evbuffer_pullup(in, -1);
    if (c->h2) {
        if (nghttp2_session_mem_recv(c->h2, data, len) < 0 || h2_flush(c) != 0) {
            conn_free(c);
            return;
        }
    } else {
        size_t n = http_parser_execute(&c->hp, &h1_settings, (const char *)data, len);
        if (c->hp.http_errno != HPE_OK || n != len) {
            bufferevent_write(bev, h1_400, sizeof h1_400 - 1);
            c->close_after = 1;
        }
    }
    evbuffer_drain(in, len);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    (void)bev;
    if (c->h2) {
        if (h2_flush(c) != 0)
            conn_free(c);
    } else if (c->close_after) {
        conn_free(c);
    } else if (c->w) {
        h1_catch_up(c->w);
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        const unsigned char *alpn = NULL;
        unsigned int alen = 0;
        SSL_get0_alpn_selected(bufferevent_openssl_get_ssl(bev), &alpn, &alen);
        if (alen == 2 && memcmp(alpn, "h2", 2) == 0) {
            h2_start(c);
            if (h2_flush(c) != 0)
                conn_free(c);
        } else {
            http_parser_init(&c->hp, HTTP_REQUEST);
            c->hp.data = c;
        }
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        conn_free(c);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    struct loop *L = arg;
    struct conn *c = calloc(1, sizeof *c);
    int one = 1;
    (void)l, (void)sa, (void)salen;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->L = L;
    c->bev = bufferevent_openssl_socket_new(L->base, fd, SSL_new(ssl_ctx),
                                            BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct loop *L = arg;
    uint64_t n;
    (void)what;
    if (read(fd, &n, sizeof n) != sizeof n)
        return;
    /* sending frees nothing here (a watch ends only on the peer's RST_STREAM or
     * a closed connection, both seen while reading), so the list stays valid */
    for (struct watch *w = L->head.next; w != &L->head; w = w->next) {
        if (w->stream_id == 0) {
            h1_catch_up(w);
        } else {
            nghttp2_session_resume_data(w->c->h2, w->stream_id);
            h2_flush(w->c); /* a failure shows on the next read or write */
        }
    }
}

static void wake(int i)
{
    uint64_t one = 1;
    if (write(loops[i].efd, &one, sizeof one) != sizeof one)
        perror("eventfd");
}

static void *run_loop(void *arg)
{
    event_base_dispatch(((struct loop *)arg)->base);
    return NULL;
}

int main(int argc, char **argv)
{
    if (spike_parse_args(argc, argv, &opts) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    ssl_ctx = spike_tls_ctx(&opts);
    h1_obj_len = (size_t)snprintf(h1_obj, sizeof h1_obj, h1_obj_head_fmt, spike_obj_len);
    memcpy(h1_obj + h1_obj_len, spike_obj, spike_obj_len);
    h1_obj_len += spike_obj_len;
    h1_settings.on_url = h1_url;
    h1_settings.on_message_complete = h1_done;
    nghttp2_session_callbacks_new(&h2_callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(h2_callbacks, h2_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(h2_callbacks, h2_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(h2_callbacks, h2_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(h2_callbacks, h2_stream_close);

    loops = calloc((size_t)opts.threads, sizeof *loops);
    for (int i = 0; i < opts.threads; i++) {
        struct loop *L = &loops[i];
        L->base = event_base_new();
        L->head.next = L->head.prev = &L->head;
        L->batch = evbuffer_new();
        L->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        L->wake_ev = event_new(L->base, L->efd, EV_READ | EV_PERSIST, on_wake, L);
        event_add(L->wake_ev, NULL);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)opts.port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (!evconnlistener_new_bind(L->base, on_accept, L,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                         LEV_OPT_REUSEABLE_PORT,
                                     4096, (struct sockaddr *)&a, sizeof a)) {
            perror("bind");
            return 1;
        }
    }
    spike_feed_start(&opts, opts.threads, wake);
    spike_run("ngev_server", &opts, run_loop, loops, sizeof *loops);
    return 0;
}
