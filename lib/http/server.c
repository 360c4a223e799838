/*
 * server.c - libckube-http: the event-loop HTTP/1.1 and HTTP/2 server.
 *
 * Follows what kube-apiserver's serving does with Go's net/http and
 * golang.org/x/net/http2 (staging/src/k8s.io/apiserver/pkg/server/
 * secure_serving.go: ALPN h2 and http/1.1, MaxHeaderBytes 1 MiB, 100
 * concurrent streams unless --http2-max-streams-per-connection says
 * otherwise, 256 KiB stream windows), on libevent 2.1 (one event_base a loop
 * thread, OpenSSL bufferevents for TLS), nghttp2's server sessions and
 * http-parser 2.9 for HTTP/1.1; bench/http-spike/ngev_server.c was its spike.
 *
 * Loops. Each loop thread owns an event_base, a listener on the shared port
 * (SO_REUSEPORT spreads accepts), its connections and every request on them:
 * only that thread reads or writes them. Other threads reach a loop through
 * its queue of ops (answers, stream writes, subscriptions, publications,
 * shutdown) under a mutex; the eventfd that wakes the loop is written only
 * when the queue goes from empty to not empty, so one wake-up carries every
 * op queued meanwhile. The loop runs the ops, which only change queues and
 * mark connections dirty, then flushes each dirty connection once.
 *
 * Requests. struct ck_http_req is refcounted: the loop holds a reference
 * while the request is attached to its connection, the caller one until it
 * finishes the request, and each queued op one. The loop detaches a request
 * when its stream or connection ends (dropping its queued bytes and telling
 * a streaming writer through its callback); ops for a detached request do
 * nothing. A request's strings are its own, so the last reference may be
 * dropped on any thread.
 *
 * Answers. A request's answer is a queue of buffer references plus an
 * `ending` mark. HTTP/1.1 moves them into the bufferevent's output by
 * reference (a chunk header around each on a chunked answer) while that
 * output holds less than OUT_HIGH; HTTP/2's data provider hands them to
 * DATA frames by reference (NGHTTP2_DATA_FLAG_NO_COPY) as nghttp2's flow
 * control allows, deferring when the queue is empty. `pending` counts what
 * writers queued and the loop has not yet handed to the connection: writers
 * see it, the loop ends a stream it takes past stream_max_pending (queue
 * dropped, the answer ended cleanly: kube-apiserver ends a watch that cannot
 * keep up) and calls the writable callback when it falls to half the
 * high-water mark after a write saw it above.
 *
 * Deadlines. Go's ReadHeaderTimeout and x/net/http2's preface and first
 * SETTINGS bounds are one timer a connection, made while one runs: arriving
 * bytes do not move it (the idle timeout, which they do move, cannot stop a
 * client trickling its header); at it the connection is closed unanswered.
 *
 * HTTP/1.1 serves one request at a time: the parser pauses at each complete
 * message and resumes when its answer has been handed over. Malformed input
 * is 400, an overlong target 414, overlong headers 431, a body past its cap
 * 413, each followed by closing the connection as Go's server does.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <http_parser.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ckube/http.h"
#include "ckube/internal/util.h"
#include "ckube/util.h"
#include "internal.h"

#define OUT_HIGH        (64 * 1024)  /* a connection's output, before we stop adding */
#define H2_WINDOW       (256 * 1024) /* kube-apiserver's resourceBody99Percentile */
#define LAGGING_TIMEOUT 10           /* seconds an ended lagging HTTP/1.1 stream may drain */
#define H1_IN_HIGH      (64 * 1024)  /* unread pipelined input before reading stops */
#define H2_PREFACE_MS   (10 * 1000)  /* x/net/http2's prefaceTimeout */
#define H2_SETTINGS_MS  (2 * 1000)   /* x/net/http2's firstSettingsTimeout */
static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/* ---- reference counts, of every shared object here -------------------------------- */

static void ref_get(atomic_int *refs)
{
    atomic_fetch_add_explicit(refs, 1, memory_order_relaxed);
}

/* Drops one; true when it was the last. */
static bool ref_put(atomic_int *refs)
{
    return atomic_fetch_sub_explicit(refs, 1, memory_order_acq_rel) == 1;
}

/* ---- buffers ------------------------------------------------------------------ */

struct ck_http_buf {
    atomic_int refs;
    size_t len;
    void *data; /* inline[] or taken memory */
    bool taken;
    unsigned char inline_data[];
};

struct ck_http_buf *ck_http_buf_new(const void *data, size_t len)
{
    struct ck_http_buf *b = ck__malloc(sizeof *b + len + 1);
    if (!b)
        return NULL;
    atomic_init(&b->refs, 1);
    b->len = len;
    b->data = b->inline_data;
    b->taken = false;
    if (len)
        memcpy(b->inline_data, data, len);
    b->inline_data[len] = 0;
    return b;
}

struct ck_http_buf *ck_http_buf_take(void *data, size_t len)
{
    struct ck_http_buf *b = ck__malloc(sizeof *b);
    if (!b) {
        free(data);
        return NULL;
    }
    atomic_init(&b->refs, 1);
    b->len = len;
    b->data = data;
    b->taken = true;
    return b;
}

struct ck_http_buf *ck_http_buf_ref(struct ck_http_buf *b)
{
    if (b)
        ref_get(&b->refs);
    return b;
}

struct ck_http_buf *ck_http_buf_unref(struct ck_http_buf *b)
{
    if (b && ref_put(&b->refs)) {
        if (b->taken)
            free(b->data);
        free(b);
    }
    return NULL;
}

const void *ck_http_buf_data(const struct ck_http_buf *b)
{
    return b->data;
}

size_t ck_http_buf_len(const struct ck_http_buf *b)
{
    return b->len;
}

/* evbuffer_add_reference()'s cleanup: the bytes left the output */
static void buf_release(const void *data, size_t len, void *extra)
{
    (void)data, (void)len;
    ck_http_buf_unref(extra);
}

/* ---- types ---------------------------------------------------------------------- */

enum proto { P_UNKNOWN, P_H1, P_H2 };

/* What an HTTP/2 connection's deadline waits for, before its requests' header blocks. */
enum h2_wait { H2_READY, H2_PREFACE, H2_SETTINGS };

/* what a connection's peer is: shared by its requests, which may outlive it */
struct peer {
    atomic_int refs;
    bool tls;
    char address[64];
    size_t ncerts;
    unsigned char **der;
    size_t *der_len;
};

struct piece { /* one queued buffer of an answer */
    struct piece *next;
    struct ck_http_buf *b;
    size_t off; /* HTTP/2: bytes already framed */
};

struct ck_http_req {
    atomic_int refs;
    struct loop *L;
    struct peer *peer;
    /* the request, immutable once dispatched */
    char *method, *target;
    struct ck_http_header *headers;
    size_t nheaders, cap_headers;
    size_t header_bytes;
    char *body;
    size_t body_len, body_cap;
    int version;
    int error; /* 400/413/414/431 found while reading; answered by the server */
    /* the answer, loop-owned */
    struct conn *c; /* NULL once detached */
    int32_t stream_id;
    struct ck_http_req *conn_prev, *conn_next; /* the connection's requests (HTTP/2) */
    struct piece *q_head, **q_tail;
    bool started, chunked, ending, head_only, answered;
    bool raw; /* upgraded: bytes both ways, no framing */
    ck_http_data_cb on_data;
    ck_http_stream_cb cb;
    void *cb_arg;
    struct ck_http_channel *ch;
    struct ck_http_req *sub_prev, *sub_next;
    /* shared with writers */
    atomic_size_t pending;
    atomic_bool closed;
    atomic_bool above_hw;
};

struct conn {
    struct loop *L;
    struct conn *prev, *next;             /* the loop's connections */
    struct conn *dirty_next;              /* on the loop's dirty list */
    bool dirty, dead, close_after, going; /* going: shutdown asked it to finish */
    bool busy;                            /* a request is being answered: no idle timeout */
    bool upgraded;                        /* after a 101: input goes to cur->on_data */
    bool lagging;                         /* an ended lagging stream drains: a write timeout */
    bool doomed;                          /* to be closed at its next flush */
    struct bufferevent *bev;
    enum proto proto;
    struct peer *peer;
    /* Go's ReadHeaderTimeout and http2's preface bounds: armed while not NULL; bytes do not move it
     */
    struct event *deadline;
    /* HTTP/1.1 */
    http_parser hp;
    struct evbuffer *batch;  /* what the next flush hands to the output at once */
    struct ck_http_req *cur; /* the request being read or answered */
    bool cur_done;           /* its message was read */
    bool in_header_value, url_too_long;
    /* HTTP/2 */
    nghttp2_session *h2;
    struct ck_http_req *reqs; /* its requests still attached */
    enum h2_wait h2_wait;
    int32_t h2_block; /* the stream whose header block is being read, under the deadline */
};

enum op_kind {
    OP_RESPOND,
    OP_START,
    OP_UPGRADE,
    OP_WRITE,
    OP_END,
    OP_SUBSCRIBE,
    OP_PUBLISH,
    OP_SHUTDOWN
};

struct op {
    struct op *next;
    enum op_kind kind;
    struct ck_http_req *req;
    int status;
    struct ck_http_header *headers; /* one allocation with its strings */
    size_t nheaders;
    struct ck_http_buf *buf;
    struct ck_http_channel *ch;
    ck_http_stream_cb cb;
    ck_http_data_cb data_cb;
    void *arg;
};

struct loop {
    struct ck_http_server *srv;
    int idx;
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *wake_ev, *shutdown_timer, *accept_pause;
    int efd;
    pthread_t thread;
    bool running;
    struct op *shutdown_op; /* made ahead: shutting down needs no allocation */
    pthread_mutex_t qlock;
    struct op *q_head, **q_tail;
    bool stopped;       /* under qlock: ops are dropped */
    struct conn conns;  /* list anchor */
    struct conn *dirty; /* connections to flush */
    bool self_pending;  /* ops queued by this loop's own thread, no wake-up written */
    evutil_socket_t fd;
    bool shutting;
    struct evbuffer *batch;
    /* libevent's common timeouts (one queue each, not a heap) for the deadlines */
    const struct timeval *tv_header, *tv_preface, *tv_settings;
};

struct ck_http_server {
    struct ck_http_config cfg;
    int nloops;
    struct loop *loops;
    SSL_CTX *ssl;
    uint16_t port;
    bool started, shut;
    http_parser_settings h1;
    nghttp2_session_callbacks *h2cb;
    nghttp2_option *h2opt;
};

struct ck_http_channel {
    atomic_int refs;
    struct ck_http_server *srv;
    struct ck_http_req **subs; /* a list head per loop, each touched by its loop only */
};

/* The loop the calling thread runs, if it runs one. */
static __thread struct loop *tl_loop;

static void conn_free(struct conn *c);
static void conn_mark_dirty(struct conn *c);
static void conn_deadline(struct conn *c, const struct timeval *tv);
static void conn_deadline_clear(struct conn *c);
static void conn_set_busy(struct conn *c, bool busy);
static void stream_lagging(struct ck_http_req *r);

/* ---- peers and requests ------------------------------------------------------ */

static struct peer *peer_unref(struct peer *p)
{
    if (p && ref_put(&p->refs)) {
        for (size_t i = 0; i < p->ncerts; i++)
            free(p->der[i]);
        free(p->der);
        free(p->der_len);
        free(p);
    }
    return NULL;
}

static struct ck_http_req *req_unref(struct ck_http_req *r)
{
    if (r && ref_put(&r->refs)) {
        free(r->method);
        free(r->target);
        for (size_t i = 0; i < r->nheaders; i++) {
            free((char *)r->headers[i].name);
            free((char *)r->headers[i].value);
        }
        free(r->headers);
        free(r->body);
        peer_unref(r->peer);
        free(r);
    }
    return NULL;
}

static struct ck_http_req *req_ref(struct ck_http_req *r)
{
    ref_get(&r->refs);
    return r;
}

/* A request attached to c: the loop's reference. */
static struct ck_http_req *req_new(struct conn *c)
{
    struct ck_http_req *r = ck__calloc(1, sizeof *r);
    if (!r)
        return NULL;
    atomic_init(&r->refs, 1);
    r->L = c->L;
    r->c = c;
    r->peer = c->peer;
    ref_get(&c->peer->refs);
    r->q_tail = &r->q_head;
    r->version = c->proto == P_H2 ? 2 : 1;
    return r;
}

static int str_append(char **s, size_t *len, const char *p, size_t n)
{
    char *ns = ck__realloc(*s, *len + n + 1);
    if (!ns)
        return -1;
    memcpy(ns + *len, p, n);
    *len += n;
    ns[*len] = 0;
    *s = ns;
    return 0;
}

static int req_add_header(struct ck_http_req *r, const char *name, size_t nlen, const char *value,
                          size_t vlen)
{
    if (r->nheaders == r->cap_headers) {
        size_t cap = r->cap_headers ? 2 * r->cap_headers : 16;
        struct ck_http_header *h = ck__realloc(r->headers, cap * sizeof *h);
        if (!h)
            return -1;
        r->headers = h;
        r->cap_headers = cap;
    }
    char *n = NULL, *v = NULL;
    size_t a = 0, b = 0;
    if (str_append(&n, &a, name, nlen) != 0 || str_append(&v, &b, value, vlen) != 0) {
        free(n);
        free(v);
        return -1;
    }
    r->headers[r->nheaders++] = (struct ck_http_header){n, v};
    return 0;
}

/* The headers are all in: their array shrinks to them, as the request may live as long as a watch.
 */
static void req_fit_headers(struct ck_http_req *r)
{
    if (r->nheaders == r->cap_headers)
        return;
    if (!r->nheaders) {
        free(r->headers);
        r->headers = NULL;
        r->cap_headers = 0;
        return;
    }
    struct ck_http_header *h = ck__realloc(r->headers, r->nheaders * sizeof *h);
    if (h) {
        r->headers = h;
        r->cap_headers = r->nheaders;
    }
}

/* a body chunk, or r->error = 413 past the cap */
static int req_add_body(struct ck_http_req *r, const char *p, size_t n)
{
    size_t max = r->L->srv->cfg.max_body_bytes;
    if (r->error)
        return 0;
    if (r->body_len + n > max) {
        r->error = 413;
        return 0;
    }
    if (r->body_len + n + 1 > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 4096;
        while (cap < r->body_len + n + 1)
            cap *= 2;
        char *nb = ck__realloc(r->body, cap);
        if (!nb)
            return -1;
        r->body = nb;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
    r->body[r->body_len] = 0;
    return 0;
}

static void queue_drop(struct ck_http_req *r)
{
    while (r->q_head) {
        struct piece *p = r->q_head;
        r->q_head = p->next;
        atomic_fetch_sub_explicit(&r->pending, p->b->len - p->off, memory_order_relaxed);
        ck_http_buf_unref(p->b);
        free(p);
    }
    r->q_tail = &r->q_head;
}

static void unsubscribe(struct ck_http_req *r)
{
    if (!r->ch)
        return;
    struct ck_http_req **head = &r->ch->subs[r->L->idx];
    if (r->sub_prev)
        r->sub_prev->sub_next = r->sub_next;
    else
        *head = r->sub_next;
    if (r->sub_next)
        r->sub_next->sub_prev = r->sub_prev;
    r->sub_prev = r->sub_next = NULL;
    r->ch = ck_http_channel_unref(r->ch);
}

/* The stream is over for its writer: say so once. */
static void stream_closed(struct ck_http_req *r)
{
    if (atomic_exchange(&r->closed, true))
        return;
    if (r->cb)
        r->cb(r, true, r->cb_arg);
}

/* Loop: the request leaves its connection; drops the loop's reference. */
static void req_detach(struct ck_http_req *r)
{
    struct conn *c = r->c;
    if (!c)
        return;
    if (c->proto == P_H2) {
        if (r->conn_prev)
            r->conn_prev->conn_next = r->conn_next;
        else
            c->reqs = r->conn_next;
        if (r->conn_next)
            r->conn_next->conn_prev = r->conn_prev;
        if (!c->reqs)
            conn_set_busy(c, false);
    } else if (c->cur == r) {
        c->cur = NULL;
    }
    r->c = NULL;
    unsubscribe(r);
    queue_drop(r);
    stream_closed(r);
    req_unref(r);
}

/* Loop: a buffer joins the answer's queue (pending already counts it). */
static void queue_add(struct ck_http_req *r, struct ck_http_buf *b)
{
    struct piece *p = ck__malloc(sizeof *p);
    if (!p) {
        atomic_fetch_sub_explicit(&r->pending, b->len, memory_order_relaxed);
        ck_http_buf_unref(b);
        stream_lagging(r); /* a stream missing bytes must not go on */
        return;
    }
    p->next = NULL;
    p->b = b;
    p->off = 0;
    *r->q_tail = p;
    r->q_tail = &p->next;
    if (r->c)
        conn_mark_dirty(r->c);
}

/* Loop: bytes left the queue for the connection; maybe tell the writer. */
static void pending_sub(struct ck_http_req *r, size_t n)
{
    size_t left = atomic_fetch_sub_explicit(&r->pending, n, memory_order_acq_rel) - n;
    if (left <= r->L->srv->cfg.stream_high_water / 2 && atomic_load(&r->above_hw) &&
        atomic_exchange(&r->above_hw, false) && r->cb && !atomic_load(&r->closed))
        r->cb(r, false, r->cb_arg);
}

/* ---- the answer's head ----------------------------------------------------- */

static const char *reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 206:
        return "Partial Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 308:
        return "Permanent Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "Request Entity Too Large";
    case 414:
        return "Request URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "";
    }
}

static bool body_allowed(int status)
{
    return status >= 200 && status != 204 && status != 304;
}

/*
 * HTTP/1.1: the status line and headers into the connection's output.
 * content_length: the body's length, -1 for chunks, -2 for neither (an
 * HTTP/1.0 stream, whose body ends with the connection).
 */
/*
 * HTTP/1.1's answer bytes are collected here and handed to the output in one
 * piece: libevent's OpenSSL bufferevent writes whatever is added to its
 * output at once, one TLS record (and one write(2)) each time. The output
 * itself when the batch cannot be made.
 */
static struct evbuffer *h1_batch(struct conn *c)
{
    if (!c->batch)
        c->batch = evbuffer_new();
    return c->batch ? c->batch : bufferevent_get_output(c->bev);
}

static void h1_handover(struct conn *c)
{
    if (!c->batch)
        return;
    if (evbuffer_get_length(c->batch)) {
        if (c->peer->tls) /* one chain: one record */
            evbuffer_pullup(c->batch, -1);
        evbuffer_add_buffer(bufferevent_get_output(c->bev), c->batch);
    }
    evbuffer_free(c->batch); /* made again for the next answer: a watch between events keeps none */
    c->batch = NULL;
}

static void h1_head(struct ck_http_req *r, int status, const struct ck_http_header *h, size_t n,
                    long content_length)
{
    struct evbuffer *out = h1_batch(r->c);
    bool close = r->c->close_after || r->c->going;
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", status, reason(status));
    for (size_t i = 0; i < n; i++)
        evbuffer_add_printf(out, "%s: %s\r\n", h[i].name, h[i].value);
    if (status == 101) /* the connection is the caller's byte stream now */
        close = false;
    else if (content_length >= 0 && body_allowed(status))
        evbuffer_add_printf(out, "Content-Length: %ld\r\n", content_length);
    else if (content_length == -1)
        evbuffer_add_printf(out, "Transfer-Encoding: chunked\r\n");
    if (close)
        evbuffer_add_printf(out, "Connection: close\r\n");
    evbuffer_add(out, "\r\n", 2);
}

/*
 * HTTP/2's data provider: how much of the queue the next DATA frame carries,
 * without copying it (NGHTTP2_DATA_FLAG_NO_COPY): h2_send_data() writes the
 * frame, its bytes by reference.
 */
static ssize_t h2_read_data(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
                            uint32_t *flags, nghttp2_data_source *src, void *arg)
{
    struct ck_http_req *r = src->ptr;
    size_t n = 0;
    bool all = true; /* the frame takes the whole queue */
    (void)s, (void)id, (void)buf, (void)arg;
    for (const struct piece *p = r->q_head; p; p = p->next) {
        n += p->b->len - p->off;
        if (n >= len) {
            all = n == len && !p->next;
            n = len;
            break;
        }
    }
    if (all && r->ending)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    else if (!n)
        return NGHTTP2_ERR_DEFERRED;
    if (n)
        *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    return (ssize_t)n;
}

/* Pieces smaller than this are copied into the batch: a reference costs a chain of its own. */
#define H2_REF_MIN 1024

/*
 * nghttp2's send_data_callback: one DATA frame into the loop's batch, its
 * header (and padding, which we never ask for) copied, the queue's bytes
 * referenced (pieces of H2_REF_MIN and more) or copied, then dropped from
 * the queue.
 */
static int h2_send_data(nghttp2_session *s, nghttp2_frame *f, const uint8_t *framehd, size_t len,
                        nghttp2_data_source *src, void *arg)
{
    struct ck_http_req *r = src->ptr;
    struct conn *c = arg;
    struct evbuffer *batch = c->L->batch;
    size_t padlen = f->data.padlen, left = len;
    (void)s;
    evbuffer_add(batch, framehd, 9);
    if (padlen > 0) {
        uint8_t pl = (uint8_t)(padlen - 1);
        evbuffer_add(batch, &pl, 1);
    }
    while (left && r->q_head) {
        struct piece *p = r->q_head;
        size_t take = p->b->len - p->off;
        if (take > left)
            take = left;
        const char *data = (const char *)p->b->data + p->off;
        if (take < H2_REF_MIN ||
            evbuffer_add_reference(batch, data, take, buf_release, ck_http_buf_ref(p->b)) != 0) {
            if (take >= H2_REF_MIN)
                ck_http_buf_unref(p->b); /* the reference not taken */
            if (evbuffer_add(batch, data, take) != 0)
                return NGHTTP2_ERR_CALLBACK_FAILURE; /* a frame half written */
        }
        p->off += take;
        left -= take;
        if (p->off == p->b->len) {
            r->q_head = p->next;
            if (!r->q_head)
                r->q_tail = &r->q_head;
            ck_http_buf_unref(p->b);
            free(p);
        }
    }
    if (left)
        return NGHTTP2_ERR_CALLBACK_FAILURE; /* the queue changed under nghttp2: cannot be */
    for (size_t i = 1; i < padlen; i++)
        evbuffer_add(batch, "", 1);
    pending_sub(r, len);
    /* as far as OUT_HIGH, as h2_flush goes: the rest waits in the queues, where pending sees it */
    if (evbuffer_get_length(batch) + evbuffer_get_length(bufferevent_get_output(c->bev)) >=
        OUT_HIGH)
        return NGHTTP2_ERR_PAUSE;
    return 0;
}

/* HTTP/2: the response's HEADERS, its data from the queue */
static int h2_head(struct ck_http_req *r, int status, const struct ck_http_header *h, size_t n,
                   bool has_body)
{
    nghttp2_nv *nv = ck__calloc(n + 1, sizeof *nv);
    char **lower = ck__calloc(n + 1, sizeof *lower);
    char st[8];
    int rv = -1;
    if (!nv || !lower)
        goto out;
    snprintf(st, sizeof st, "%d", status);
    nv[0] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)st, 7, strlen(st), NGHTTP2_NV_FLAG_NONE};
    size_t k = 1;
    for (size_t i = 0; i < n; i++) {
        /* connection-specific headers are not HTTP/2's */
        if (strcasecmp(h[i].name, "connection") == 0 ||
            strcasecmp(h[i].name, "transfer-encoding") == 0 ||
            strcasecmp(h[i].name, "keep-alive") == 0)
            continue;
        if (!(lower[k] = ck__strdup(h[i].name)))
            goto out;
        for (char *p = lower[k]; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        nv[k] = (nghttp2_nv){(uint8_t *)lower[k], (uint8_t *)h[i].value, strlen(lower[k]),
                             strlen(h[i].value), NGHTTP2_NV_FLAG_NONE};
        k++;
    }
    nghttp2_data_provider dp = {.source.ptr = r, .read_callback = h2_read_data};
    rv = nghttp2_submit_response(r->c->h2, r->stream_id, nv, k, has_body ? &dp : NULL);
out:
    if (lower)
        for (size_t i = 0; i <= n; i++)
            free(lower[i]);
    free(lower);
    free(nv);
    return rv;
}

/* Loop: sends the head of r's answer; whole answers also end it. */
static void answer_head(struct ck_http_req *r, int status, const struct ck_http_header *h, size_t n,
                        struct ck_http_buf *body, bool stream)
{
    struct conn *c = r->c;
    if (r->answered || !c || c->dead) {
        ck_http_buf_unref(body);
        return;
    }
    r->answered = true;
    r->started = stream;
    size_t blen = body ? body->len : 0;
    bool with_body = body_allowed(status) && !r->head_only;
    if (body && blen && with_body) {
        atomic_fetch_add_explicit(&r->pending, blen, memory_order_relaxed);
        queue_add(r, body);
    } else {
        ck_http_buf_unref(body);
    }
    if (!stream)
        r->ending = true;
    if (c->proto == P_H2) {
        if (h2_head(r, status, h, n, with_body && (stream || blen)) != 0) {
            nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, r->stream_id,
                                      NGHTTP2_INTERNAL_ERROR);
        }
    } else {
        long framing = stream ? (with_body ? -1 : 0) : (long)blen;
        if (stream && with_body && c->hp.http_minor == 0) { /* HTTP/1.0: to the close */
            c->close_after = true;
            framing = -2;
        }
        r->chunked = framing == -1;
        h1_head(r, status, h, n, framing);
        if (!with_body)
            r->ending = true;
    }
    conn_mark_dirty(c);
}

/* The server's own small answers (errors), overridable by cfg.on_error. */
static void answer_error(struct ck_http_req *r, int status)
{
    struct ck_http_server *srv = r->L->srv;
    const char *ct = "text/plain; charset=utf-8";
    struct ck_http_buf *b = NULL;
    char text[64];
    if (srv->cfg.on_error)
        b = srv->cfg.on_error(status, &ct, srv->cfg.arg);
    if (!b) {
        int n = snprintf(text, sizeof text, "%d %s", status, reason(status));
        b = ck_http_buf_new(text, (size_t)n);
    }
    struct ck_http_header h[] = {{"Content-Type", ct}};
    if (r->c && r->c->proto == P_H1)
        r->c->close_after = true;
    answer_head(r, status, h, 1, b, false);
}

/* ---- HTTP/1.1 ------------------------------------------------------------------ */

static int h1_begin(http_parser *p)
{
    struct conn *c = p->data;
    if (!(c->cur = req_new(c)))
        return -1;
    c->cur_done = false;
    c->in_header_value = false;
    c->url_too_long = false;
    return 0;
}

static int h1_url(http_parser *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    struct ck_http_req *r = c->cur;
    size_t len = r->target ? strlen(r->target) : 0;
    if (len + n > c->L->srv->cfg.max_uri_bytes) {
        r->error = 414;
        return -1;
    }
    return str_append(&r->target, &len, at, n);
}

static int h1_header_field(http_parser *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    struct ck_http_req *r = c->cur;
    r->header_bytes += n;
    if (r->header_bytes > c->L->srv->cfg.max_header_bytes) {
        r->error = 431;
        return -1;
    }
    if (!c->in_header_value && r->nheaders) { /* the name goes on */
        struct ck_http_header *h = &r->headers[r->nheaders - 1];
        size_t len = strlen(h->name);
        return str_append((char **)&h->name, &len, at, n);
    }
    c->in_header_value = false;
    return req_add_header(r, at, n, "", 0);
}

static int h1_header_value(http_parser *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    struct ck_http_req *r = c->cur;
    r->header_bytes += n;
    if (r->header_bytes > c->L->srv->cfg.max_header_bytes) {
        r->error = 431;
        return -1;
    }
    c->in_header_value = true;
    struct ck_http_header *h = &r->headers[r->nheaders - 1];
    size_t len = strlen(h->value);
    return str_append((char **)&h->value, &len, at, n);
}

static int h1_headers_done(http_parser *p)
{
    struct conn *c = p->data;
    struct ck_http_req *r = c->cur;
    const char *m = http_method_str((enum http_method)p->method);
    size_t len = 0;
    if (!r->target || str_append(&r->method, &len, m, strlen(m)) != 0)
        return -1;
    r->head_only = p->method == HTTP_HEAD;
    conn_deadline_clear(c); /* the header block came in time; the body has none */
    if (p->content_length != ULLONG_MAX && p->content_length > c->L->srv->cfg.max_body_bytes)
        r->error = 413;
    if (r->error) /* answered at once; the body is not read */
        return -1;
    /* Go's server says 100 Continue when the handler reads the body: ours reads it all */
    const char *expect = ck_http_req_header(r, "expect");
    if (expect && strcasecmp(expect, "100-continue") == 0 && p->http_minor >= 1)
        bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    return 0;
}

static int h1_body(http_parser *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    if (req_add_body(c->cur, at, n) != 0)
        return -1;
    return c->cur->error ? -1 : 0;
}

static int h1_message_done(http_parser *p)
{
    struct conn *c = p->data;
    struct ck_http_req *r = c->cur;
    c->cur_done = true;
    conn_set_busy(c, true);
    if (!http_should_keep_alive(p))
        c->close_after = true;
    http_parser_pause(p, 1);
    struct ck_http_server *srv = c->L->srv;
    if (c->going) {
        c->close_after = true;
        answer_error(r, 503);
        return 0;
    }
    req_fit_headers(r);
    srv->cfg.on_request(req_ref(r), srv->cfg.arg);
    return 0;
}

/* Parses what the input holds; answers a malformed request and closes. */
static void h1_parse(struct conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    /* the next request's first bytes start its header deadline (the idle timeout ran until now) */
    if (!c->cur && !c->deadline && evbuffer_get_length(in) > 0)
        conn_deadline(c, c->L->tv_header);
    while (!c->dead && !c->cur_done && evbuffer_get_length(in) > 0) {
        size_t len = evbuffer_get_length(in);
        const char *data = (const char *)evbuffer_pullup(in, -1);
        size_t n = http_parser_execute(&c->hp, &c->L->srv->h1, data, len);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->hp);
        evbuffer_drain(in, n);
        if (e == HPE_PAUSED)
            break;
        if (e != HPE_OK) {
            int status = 400;
            if (e == HPE_HEADER_OVERFLOW)
                status = 431;
            if (!c->cur && h1_begin(&c->hp) != 0) {
                conn_free(c);
                return;
            }
            if (c->cur->error)
                status = c->cur->error;
            c->cur_done = true;
            bufferevent_disable(c->bev, EV_READ);
            answer_error(c->cur, status);
            return;
        }
    }
    if (!c->cur_done && evbuffer_get_length(in) > H1_IN_HIGH)
        bufferevent_disable(c->bev, EV_READ);
}

/* The current answer was handed over: the next request, or the end. */
static void h1_next(struct conn *c)
{
    struct ck_http_req *r = c->cur;
    req_detach(r);
    c->cur_done = false;
    if (c->close_after || c->going) {
        c->close_after = true;
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            conn_free(c);
        return;
    }
    http_parser_pause(&c->hp, 0);
    conn_set_busy(c, false);
    bufferevent_enable(c->bev, EV_READ);
    h1_parse(c);
}

/* Moves queued pieces into the output by reference, as far as OUT_HIGH. */
static void h1_flush(struct conn *c)
{
    struct ck_http_req *r = c->cur;
    if (!r || !r->answered)
        return;
    struct evbuffer *out = h1_batch(c), *sent = bufferevent_get_output(c->bev);
    size_t moved = 0;
    while (r->q_head && evbuffer_get_length(sent) + evbuffer_get_length(out) < OUT_HIGH) {
        struct piece *p = r->q_head;
        r->q_head = p->next;
        if (r->chunked)
            evbuffer_add_printf(out, "%zx\r\n", p->b->len);
        if (evbuffer_add_reference(out, p->b->data, p->b->len, buf_release, p->b) != 0)
            ck_http_buf_unref(p->b);
        if (r->chunked)
            evbuffer_add_reference(out, "\r\n", 2, NULL, NULL);
        moved += p->b->len;
        free(p);
    }
    if (!r->q_head)
        r->q_tail = &r->q_head;
    if (moved)
        pending_sub(r, moved);
    if (c->cur != r || !r->ending || r->q_head) {
        h1_handover(c);
        return;
    }
    if (r->raw)
        c->close_after = true;
    if (r->chunked)
        evbuffer_add_reference(out, "0\r\n\r\n", 5, NULL, NULL);
    h1_handover(c);
    h1_next(c);
}

/* ---- HTTP/2 -------------------------------------------------------------------- */

static int h2_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    struct conn *c = arg;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct ck_http_req *r = req_new(c);
    if (!r)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    r->stream_id = f->hd.stream_id;
    c->h2_block = r->stream_id; /* its header block is under the deadline until it ends */
    conn_deadline(c, c->L->tv_header);
    r->conn_next = c->reqs;
    if (c->reqs)
        c->reqs->conn_prev = r;
    c->reqs = r;
    conn_set_busy(c, true);
    nghttp2_session_set_stream_user_data(s, f->hd.stream_id, r);
    return 0;
}

static int h2_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
    struct conn *c = arg;
    (void)flags;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct ck_http_req *r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    struct ck_http_server *srv = c->L->srv;
    if (!r || r->error)
        return 0;
    r->header_bytes += nlen + vlen + 32; /* RFC 7540 6.5.2's size of a header */
    if (r->header_bytes > srv->cfg.max_header_bytes) {
        r->error = 431;
        return 0;
    }
    const char *n = (const char *)name, *v = (const char *)value;
    size_t len = 0;
    if (nlen == 7 && memcmp(n, ":method", 7) == 0)
        return str_append(&r->method, &len, v, vlen) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
    if (nlen == 5 && memcmp(n, ":path", 5) == 0) {
        if (vlen > srv->cfg.max_uri_bytes) {
            r->error = 414;
            return 0;
        }
        return str_append(&r->target, &len, v, vlen) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
    }
    if (nlen == 10 && memcmp(n, ":authority", 10) == 0)
        n = "host", nlen = 4;
    else if (nlen && n[0] == ':')
        return 0; /* :scheme */
    return req_add_header(r, n, nlen, v, vlen) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int h2_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *arg)
{
    struct ck_http_req *r = nghttp2_session_get_stream_user_data(s, id);
    (void)flags, (void)arg;
    if (r && !r->answered && req_add_body(r, (const char *)data, len) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
}

/* A request's header block ended (or its stream did): its deadline is off. */
static void h2_block_done(struct conn *c, int32_t id)
{
    if (c->h2_block && c->h2_block == id) {
        c->h2_block = 0;
        conn_deadline_clear(c);
    }
}

static int h2_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    struct conn *c = arg;
    if (c->h2_wait == H2_SETTINGS) { /* the first frame, which nghttp2 made sure is SETTINGS */
        c->h2_wait = H2_READY;
        conn_deadline_clear(c);
    }
    if (f->hd.type == NGHTTP2_HEADERS)
        h2_block_done(c, f->hd.stream_id);
    if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
        !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    struct ck_http_req *r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (!r || r->answered)
        return 0;
    if (!r->error && (!r->method || !r->target))
        r->error = 400;
    if (r->error) {
        answer_error(r, r->error);
        return 0;
    }
    r->head_only = strcmp(r->method, "HEAD") == 0;
    req_fit_headers(r);
    struct ck_http_server *srv = c->L->srv;
    srv->cfg.on_request(req_ref(r), srv->cfg.arg);
    return 0;
}

static int h2_stream_close(nghttp2_session *s, int32_t id, uint32_t err, void *arg)
{
    struct ck_http_req *r = nghttp2_session_get_stream_user_data(s, id);
    (void)err;
    h2_block_done(arg, id);
    if (r) {
        nghttp2_session_set_stream_user_data(s, id, NULL);
        req_detach(r);
    }
    return 0;
}

/*
 * Collects what nghttp2 has to send into the loop's batch, as far as OUT_HIGH
 * in the output, and hands it over at once: on TLS as one chain, which
 * libevent's OpenSSL bufferevent writes as one record (one write(2)) instead
 * of one a frame. Returns -1 when the session is over and its bytes are out.
 */
static int h2_flush(struct conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev), *batch = c->L->batch;
    size_t room = evbuffer_get_length(out) < OUT_HIGH ? OUT_HIGH - evbuffer_get_length(out) : 0;
    for (;;) {
        const uint8_t *frames;
        ssize_t n =
            room > evbuffer_get_length(batch) ? nghttp2_session_mem_send(c->h2, &frames) : 0;
        if (n <= 0) {
            if (n < 0)
                return -1;
            break;
        }
        evbuffer_add(batch, frames, (size_t)n);
    }
    if (c->peer->tls && evbuffer_get_length(batch))
        evbuffer_pullup(batch, -1);
    evbuffer_add_buffer(out, batch);
    bool over = !nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2);
    return over && evbuffer_get_length(out) == 0 ? -1 : 0;
}

static int h2_start(struct conn *c)
{
    struct ck_http_server *srv = c->L->srv;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, srv->cfg.max_streams_per_connection},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)srv->cfg.max_header_bytes},
    };
    c->proto = P_H2;
    c->h2_wait = H2_PREFACE;
    conn_deadline(c, c->L->tv_preface);
    if (nghttp2_session_server_new2(&c->h2, srv->h2cb, c, srv->h2opt) != 0)
        return -1;
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 3) != 0)
        return -1;
    /* the connection's window for that many streams' windows, as kube-apiserver sizes it */
    int32_t win = (int32_t)(H2_WINDOW * (uint64_t)srv->cfg.max_streams_per_connection > INT32_MAX
                                ? INT32_MAX
                                : H2_WINDOW * srv->cfg.max_streams_per_connection);
    nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, win);
    if (c->going)
        nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, NULL, 0);
    conn_mark_dirty(c);
    return 0;
}

/* ---- connections ------------------------------------------------------------- */

static void conn_mark_dirty(struct conn *c)
{
    if (c->dirty || c->dead)
        return;
    c->dirty = true;
    c->dirty_next = c->L->dirty;
    c->L->dirty = c;
}

/*
 * A connection waiting for a request (or its TLS handshake) is closed after
 * idle_timeout_ms without a byte; one answering a request (a watch, say) is
 * not. An ended lagging stream must drain within LAGGING_TIMEOUT.
 */
static void conn_set_busy(struct conn *c, bool busy)
{
    int ms = c->L->srv->cfg.idle_timeout_ms;
    struct timeval idle = {ms / 1000, (ms % 1000) * 1000}, lag = {LAGGING_TIMEOUT, 0};
    c->busy = busy;
    bufferevent_set_timeouts(c->bev, busy ? NULL : &idle, c->lagging ? &lag : NULL);
}

static void loop_flush_dirty(struct loop *L);

/* The deadline passed: closed without an answer, as Go's server closes on a read timeout. */
static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    struct loop *L = c->L;
    (void)fd, (void)what;
    conn_free(c);
    loop_flush_dirty(L);
}

/*
 * Arms (or moves) the connection's deadline, made on demand so that a stream
 * carries none. Out of memory, the connection is closed at its next flush
 * rather than left without a bound.
 */
static void conn_deadline(struct conn *c, const struct timeval *tv)
{
    if (!c->deadline && !(c->deadline = evtimer_new(c->L->base, on_deadline, c))) {
        c->doomed = true;
        conn_mark_dirty(c);
        return;
    }
    evtimer_add(c->deadline, tv);
}

static void conn_deadline_clear(struct conn *c)
{
    if (c->deadline) {
        event_free(c->deadline);
        c->deadline = NULL;
    }
}

static void loop_maybe_exit(struct loop *L)
{
    if (L->shutting && L->conns.next == &L->conns)
        event_base_loopbreak(L->base);
}

static void conn_free(struct conn *c)
{
    struct loop *L = c->L;
    if (c->dead)
        return;
    c->dead = true;
    if (c->dirty) { /* off the dirty list */
        for (struct conn **pp = &L->dirty; *pp; pp = &(*pp)->dirty_next)
            if (*pp == c) {
                *pp = c->dirty_next;
                break;
            }
    }
    while (c->reqs)
        req_detach(c->reqs);
    if (c->cur)
        req_detach(c->cur);
    if (c->h2)
        nghttp2_session_del(c->h2);
    c->prev->next = c->next;
    c->next->prev = c->prev;
    conn_deadline_clear(c);
    bufferevent_free(c->bev);
    if (c->batch)
        evbuffer_free(c->batch);
    peer_unref(c->peer);
    free(c);
    loop_maybe_exit(L);
}

static void conn_flush(struct conn *c)
{
    if (c->doomed)
        conn_free(c);
    else if (c->proto == P_H2) {
        if (h2_flush(c) != 0)
            conn_free(c);
    } else if (c->proto == P_H1) {
        h1_flush(c);
    }
}

/* An upgraded connection's input, to its handler. */
static void upgraded_input(struct conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t len = evbuffer_get_length(in);
    struct ck_http_req *r = c->cur;
    if (!len)
        return;
    if (r && r->on_data && !r->ending)
        r->on_data(r, evbuffer_pullup(in, -1), len, r->cb_arg);
    evbuffer_drain(in, len);
}

static void conn_read(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (c->upgraded) {
        upgraded_input(c);
        return;
    }
    if (c->proto == P_UNKNOWN) { /* plain: HTTP/2 prior knowledge or HTTP/1.1 */
        size_t len = evbuffer_get_length(in);
        size_t cmp = len < sizeof h2_preface - 1 ? len : sizeof h2_preface - 1;
        const char *data = (const char *)evbuffer_pullup(in, (ssize_t)cmp);
        if (memcmp(data, h2_preface, cmp) != 0 || c->L->srv->cfg.disable_http2)
            c->proto = P_H1;
        else if (cmp < sizeof h2_preface - 1)
            return;
        else if (h2_start(c) != 0) {
            conn_free(c);
            return;
        }
    }
    if (c->proto == P_H2) {
        size_t len = evbuffer_get_length(in);
        if (c->h2_wait == H2_PREFACE && len >= sizeof h2_preface - 1) {
            c->h2_wait = H2_SETTINGS; /* nghttp2 checks the preface's bytes */
            conn_deadline(c, c->L->tv_settings);
        }
        const uint8_t *data = evbuffer_pullup(in, -1);
        ssize_t n = nghttp2_session_mem_recv(c->h2, data, len);
        if (n < 0) {
            conn_free(c);
            return;
        }
        evbuffer_drain(in, len);
        conn_mark_dirty(c);
    } else {
        h1_parse(c);
    }
}

static void conn_write(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    (void)bev;
    if (c->proto == P_H1 && !c->cur && c->close_after) {
        conn_free(c);
        return;
    }
    conn_flush(c);
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    struct conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        const unsigned char *alpn = NULL;
        unsigned int alen = 0;
        SSL_get0_alpn_selected(ssl, &alpn, &alen);
        X509 *leaf = SSL_get0_peer_certificate(ssl);
        if (leaf) {
            STACK_OF(X509) *chain = SSL_get_peer_cert_chain(ssl); /* without the leaf */
            int n = chain ? sk_X509_num(chain) : 0;
            struct peer *p = c->peer;
            p->der = ck__calloc((size_t)n + 1, sizeof *p->der);
            p->der_len = ck__calloc((size_t)n + 1, sizeof *p->der_len);
            for (int i = -1; p->der && p->der_len && i < n; i++) {
                X509 *x = i < 0 ? leaf : sk_X509_value(chain, i);
                if (i >= 0 && X509_cmp(x, leaf) == 0)
                    continue;
                unsigned char *der = NULL;
                int dl = i2d_X509(x, &der);
                if (dl <= 0)
                    break;
                p->der[p->ncerts] = der;
                p->der_len[p->ncerts++] = (size_t)dl;
            }
        }
        if (alen == 2 && memcmp(alpn, "h2", 2) == 0) {
            if (h2_start(c) != 0) {
                conn_free(c);
                return;
            }
            conn_flush(c);
        } else {
            c->proto = P_H1;
            conn_deadline(c, c->L->tv_header); /* the handshake had its own */
        }
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        conn_free(c);
}

/* libevent's callbacks: each flushes, once, the connections its work made dirty */
static void on_read(struct bufferevent *bev, void *arg)
{
    struct loop *L = ((struct conn *)arg)->L;
    conn_read(bev, arg);
    loop_flush_dirty(L);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct loop *L = ((struct conn *)arg)->L;
    conn_write(bev, arg);
    loop_flush_dirty(L);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct loop *L = ((struct conn *)arg)->L;
    conn_event(bev, what, arg);
    loop_flush_dirty(L);
}

static struct conn *conn_new(struct loop *L, struct bufferevent *bev, bool tls)
{
    struct conn *c = ck__calloc(1, sizeof *c);
    if (!c || !(c->peer = ck__calloc(1, sizeof *c->peer))) {
        free(c);
        bufferevent_free(bev);
        return NULL;
    }
    atomic_init(&c->peer->refs, 1);
    c->peer->tls = tls;
    c->L = L;
    c->bev = bev;
    c->proto = P_UNKNOWN;
    c->going = L->shutting;
    http_parser_init(&c->hp, HTTP_REQUEST);
    c->hp.data = c;
    c->next = L->conns.next;
    c->prev = &L->conns;
    L->conns.next->prev = c;
    L->conns.next = c;
    bufferevent_setcb(bev, on_read, on_write, on_event, c);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    conn_set_busy(c, false);
    conn_deadline(c, L->tv_header); /* the TLS handshake, or the first request's header */
    if (c->doomed) {
        conn_free(c);
        return NULL;
    }
    return c;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    struct loop *L = arg;
    struct ck_http_server *srv = L->srv;
    struct bufferevent *bev;
    int one = 1;
    (void)l, (void)salen;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (srv->ssl) {
        SSL *ssl = SSL_new(srv->ssl);
        if (!ssl) {
            close(fd);
            return;
        }
        bev = bufferevent_openssl_socket_new(L->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                             BEV_OPT_CLOSE_ON_FREE);
        if (bev)
            bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    } else {
        bev = bufferevent_socket_new(L->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!bev) {
        close(fd);
        return;
    }
    struct conn *c = conn_new(L, bev, srv->ssl != NULL);
    if (!c)
        return;
    char host[INET6_ADDRSTRLEN] = "";
    uint16_t port = 0;
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(c->peer->address, sizeof c->peer->address, "%s:%u", host, port);
    } else if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(c->peer->address, sizeof c->peer->address, "[%s]:%u", host, port);
    }
}

/* ---- ops: the loop's queue ------------------------------------------------- */

static void op_free(struct op *o)
{
    req_unref(o->req);
    ck_http_buf_unref(o->buf);
    ck_http_channel_unref(o->ch);
    free(o->headers);
    free(o);
}

/*
 * Queues o to L, waking L when its queue was empty; after the loop stopped,
 * drops it. From L's own thread (an answer made in the request callback) no
 * wake-up is written: the loop runs its queue before it next waits.
 */
static void op_push(struct loop *L, struct op *o)
{
    bool wake = false, drop = false, self = tl_loop == L;
    pthread_mutex_lock(&L->qlock);
    if (L->stopped) {
        drop = true;
    } else {
        wake = L->q_head == NULL;
        o->next = NULL;
        *L->q_tail = o;
        L->q_tail = &o->next;
    }
    pthread_mutex_unlock(&L->qlock);
    if (drop) {
        op_free(o);
    } else if (self) {
        L->self_pending = true;
    } else if (wake) {
        uint64_t one = 1;
        ssize_t n = write(L->efd, &one, sizeof one);
        (void)n; /* a full counter is already a wake-up */
    }
}

/* An op with a copy of the headers (one allocation: the array, then the strings). */
static struct op *op_new(enum op_kind kind, struct ck_http_req *req, const struct ck_http_header *h,
                         size_t n)
{
    struct op *o = ck__calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->kind = kind;
    o->req = req;
    if (n) {
        size_t size = n * sizeof *o->headers;
        for (size_t i = 0; i < n; i++)
            size += strlen(h[i].name) + strlen(h[i].value) + 2;
        if (!(o->headers = ck__malloc(size))) {
            free(o);
            return NULL;
        }
        char *s = (char *)(o->headers + n);
        for (size_t i = 0; i < n; i++) {
            size_t a = strlen(h[i].name) + 1, b = strlen(h[i].value) + 1;
            o->headers[i].name = memcpy(s, h[i].name, a);
            o->headers[i].value = memcpy(s + a, h[i].value, b);
            s += a + b;
        }
        o->nheaders = n;
    }
    return o;
}

/* Appends b to a started stream (the loop's side of a write or a publication). */
static void stream_append(struct ck_http_req *r, struct ck_http_buf *b)
{
    struct ck_http_server *srv = r->L->srv;
    if (!r->c || r->ending || atomic_load(&r->closed)) {
        atomic_fetch_sub_explicit(&r->pending, b->len, memory_order_relaxed);
        ck_http_buf_unref(b);
        return;
    }
    queue_add(r, b);
    if (atomic_load(&r->pending) > srv->cfg.stream_max_pending)
        stream_lagging(r);
}

/* The stream fell too far behind: its queue is dropped and its answer ended. */
static void stream_lagging(struct ck_http_req *r)
{
    struct conn *c = r->c;
    unsubscribe(r);
    queue_drop(r);
    r->ending = true;
    stream_closed(r);
    if (!c)
        return;
    if (c->proto == P_H1) {
        c->close_after = true;
        c->lagging = true;
        conn_set_busy(c, c->busy);
    } else {
        nghttp2_session_resume_data(c->h2, r->stream_id);
    }
    conn_mark_dirty(c);
}

static void loop_shutdown(struct loop *L, int timeout_ms);

static void op_run(struct loop *L, struct op *o)
{
    struct ck_http_req *r = o->req;
    switch (o->kind) {
    case OP_RESPOND:
    case OP_START:
        r->cb = o->cb;
        r->cb_arg = o->arg;
        if (r->c) {
            answer_head(r, o->status, o->headers, o->nheaders, o->buf, o->kind == OP_START);
            o->buf = NULL;
            if (r->c && r->c->proto == P_H2)
                nghttp2_session_resume_data(r->c->h2, r->stream_id);
        } else if (r->cb) { /* gone before the answer started: still told once */
            r->cb(r, true, r->cb_arg);
        }
        break;
    case OP_UPGRADE:
        r->cb = o->cb;
        r->cb_arg = o->arg;
        if (r->c && r->c->proto == P_H1 && !r->answered) {
            struct conn *c = r->c;
            r->on_data = o->data_cb;
            r->answered = r->started = r->raw = true;
            h1_head(r, 101, o->headers, o->nheaders, 0);
            c->upgraded = true;
            bufferevent_enable(c->bev, EV_READ);
            upgraded_input(c); /* what came after the request */
            conn_mark_dirty(c);
        } else if (r->c) {
            answer_error(r, 400); /* HTTP/2 has no upgrade */
        } else if (r->cb) {
            r->cb(r, true, r->cb_arg);
        }
        break;
    case OP_WRITE:
        stream_append(r, o->buf);
        o->buf = NULL;
        if (r->c && r->c->proto == P_H2)
            nghttp2_session_resume_data(r->c->h2, r->stream_id);
        break;
    case OP_END:
        if (r->c && !r->ending) {
            unsubscribe(r);
            r->ending = true;
            if (r->c->proto == P_H2)
                nghttp2_session_resume_data(r->c->h2, r->stream_id);
            conn_mark_dirty(r->c);
        }
        break;
    case OP_SUBSCRIBE:
        if (r->c && !r->ending && !r->ch && o->ch->srv == L->srv) {
            struct ck_http_req **head = &o->ch->subs[L->idx];
            r->ch = o->ch;
            o->ch = NULL;
            r->sub_prev = NULL;
            r->sub_next = *head;
            if (*head)
                (*head)->sub_prev = r;
            *head = r;
        }
        break;
    case OP_PUBLISH: {
        size_t len = o->buf->len;
        for (struct ck_http_req *s = o->ch->subs[L->idx], *next; s; s = next) {
            next = s->sub_next;
            atomic_fetch_add_explicit(&s->pending, len, memory_order_relaxed);
            stream_append(s, ck_http_buf_ref(o->buf));
            if (s->c && s->c->proto == P_H2)
                nghttp2_session_resume_data(s->c->h2, s->stream_id);
        }
        break;
    }
    case OP_SHUTDOWN:
        loop_shutdown(L, o->status);
        break;
    }
    op_free(o);
}

static void loop_run_ops(struct loop *L)
{
    pthread_mutex_lock(&L->qlock);
    struct op *o = L->q_head;
    L->q_head = NULL;
    L->q_tail = &L->q_head;
    pthread_mutex_unlock(&L->qlock);
    while (o) {
        struct op *next = o->next;
        op_run(L, o);
        o = next;
    }
}

/*
 * After each callback of libevent's: the ops this thread queued meanwhile,
 * then one flush of each connection made dirty, until neither is left (a
 * flush may call a writable callback that writes again).
 */
static void loop_flush_dirty(struct loop *L)
{
    do {
        if (L->self_pending) {
            L->self_pending = false;
            loop_run_ops(L);
        }
        while (L->dirty) {
            struct conn *c = L->dirty;
            L->dirty = c->dirty_next;
            c->dirty = false;
            conn_flush(c);
        }
    } while (L->self_pending);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct loop *L = arg;
    uint64_t n;
    (void)what;
    ssize_t rn = read(fd, &n, sizeof n);
    (void)rn;
    loop_run_ops(L);
    loop_flush_dirty(L);
}

static void on_shutdown_timer(evutil_socket_t fd, short what, void *arg)
{
    struct loop *L = arg;
    (void)fd, (void)what;
    while (L->conns.next != &L->conns)
        conn_free(L->conns.next);
    event_base_loopbreak(L->base);
}

static void loop_shutdown(struct loop *L, int timeout_ms)
{
    if (L->shutting)
        return;
    L->shutting = true;
    if (L->listener) {
        evconnlistener_free(L->listener);
        L->listener = NULL;
    }
    for (struct conn *c = L->conns.next, *next; c != &L->conns; c = next) {
        next = c->next;
        c->going = true;
        if (c->proto == P_H2) {
            nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE,
                                  nghttp2_session_get_last_proc_stream_id(c->h2), NGHTTP2_NO_ERROR,
                                  NULL, 0);
            conn_mark_dirty(c);
        } else if (!c->cur) {
            conn_free(c); /* idle */
        } else {
            c->close_after = true;
        }
    }
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    L->shutdown_timer = evtimer_new(L->base, on_shutdown_timer, L);
    if (L->shutdown_timer)
        evtimer_add(L->shutdown_timer, &tv);
    loop_maybe_exit(L);
}

/* ---- public: answers ------------------------------------------------------- */

static void push_or_drop(struct ck_http_req *req, struct op *o)
{
    if (o)
        op_push(req->L, o);
    else /* out of memory: the request is finished anyway; its client waits for its end */
        req_unref(req);
}

void ck_http_respond(struct ck_http_req *req, int status, const struct ck_http_header *headers,
                     size_t nheaders, struct ck_http_buf *body)
{
    struct op *o = op_new(OP_RESPOND, req, headers, nheaders);
    if (o) {
        o->status = status;
        o->buf = ck_http_buf_ref(body);
    }
    push_or_drop(req, o);
}

void ck_http_respond_bytes(struct ck_http_req *req, int status,
                           const struct ck_http_header *headers, size_t nheaders, const void *body,
                           size_t len)
{
    struct ck_http_buf *b = len ? ck_http_buf_new(body, len) : NULL;
    ck_http_respond(req, status, headers, nheaders, b);
    ck_http_buf_unref(b);
}

void ck_http_stream_start(struct ck_http_req *req, int status, const struct ck_http_header *headers,
                          size_t nheaders, ck_http_stream_cb cb, void *arg)
{
    struct op *o = op_new(OP_START, req_ref(req), headers, nheaders);
    if (o) {
        o->status = status;
        o->cb = cb;
        o->arg = arg;
    }
    push_or_drop(req, o);
}

void ck_http_upgrade(struct ck_http_req *req, const struct ck_http_header *headers, size_t nheaders,
                     ck_http_data_cb on_data, ck_http_stream_cb cb, void *arg)
{
    struct op *o = op_new(OP_UPGRADE, req_ref(req), headers, nheaders);
    if (o) {
        o->cb = cb;
        o->data_cb = on_data;
        o->arg = arg;
    }
    push_or_drop(req, o);
}

long ck_http_stream_write(struct ck_http_req *req, struct ck_http_buf *b)
{
    if (atomic_load(&req->closed))
        return -EPIPE;
    struct op *o = op_new(OP_WRITE, req_ref(req), NULL, 0);
    if (!o) {
        req_unref(req);
        return CK_ENOMEM;
    }
    o->buf = ck_http_buf_ref(b);
    size_t p = atomic_fetch_add_explicit(&req->pending, b->len, memory_order_acq_rel) + b->len;
    if (p > req->L->srv->cfg.stream_high_water)
        atomic_store(&req->above_hw, true);
    op_push(req->L, o);
    return (long)p;
}

bool ck_http_stream_would_block(const struct ck_http_req *req)
{
    return atomic_load(&req->pending) > req->L->srv->cfg.stream_high_water;
}

size_t ck_http_stream_pending(const struct ck_http_req *req)
{
    return atomic_load(&req->pending);
}

void ck_http_stream_end(struct ck_http_req *req)
{
    push_or_drop(req, op_new(OP_END, req, NULL, 0));
}

/* ---- public: broadcast ------------------------------------------------------ */

struct ck_http_channel *ck_http_channel_new(struct ck_http_server *srv)
{
    struct ck_http_channel *ch = ck__calloc(1, sizeof *ch);
    if (!ch || !(ch->subs = ck__calloc((size_t)srv->nloops, sizeof *ch->subs))) {
        free(ch);
        return NULL;
    }
    atomic_init(&ch->refs, 1);
    ch->srv = srv;
    return ch;
}

struct ck_http_channel *ck_http_channel_ref(struct ck_http_channel *ch)
{
    if (ch)
        ref_get(&ch->refs);
    return ch;
}

struct ck_http_channel *ck_http_channel_unref(struct ck_http_channel *ch)
{
    if (ch && ref_put(&ch->refs)) {
        free(ch->subs);
        free(ch);
    }
    return NULL;
}

void ck_http_stream_subscribe(struct ck_http_req *req, struct ck_http_channel *ch)
{
    struct op *o = op_new(OP_SUBSCRIBE, req_ref(req), NULL, 0);
    if (o)
        o->ch = ck_http_channel_ref(ch);
    push_or_drop(req, o);
}

int ck_http_channel_publish(struct ck_http_channel *ch, struct ck_http_buf *b)
{
    int rv = 0;
    for (int i = 0; i < ch->srv->nloops; i++) {
        struct op *o = op_new(OP_PUBLISH, NULL, NULL, 0);
        if (!o) {
            rv = CK_ENOMEM;
            continue;
        }
        o->ch = ck_http_channel_ref(ch);
        o->buf = ck_http_buf_ref(b);
        op_push(&ch->srv->loops[i], o);
    }
    return rv;
}

/* ---- public: requests ------------------------------------------------------- */

const char *ck_http_req_method(const struct ck_http_req *req)
{
    return req->method;
}

const char *ck_http_req_target(const struct ck_http_req *req)
{
    return req->target;
}

int ck_http_req_version(const struct ck_http_req *req)
{
    return req->version;
}

const char *ck_http_req_header(const struct ck_http_req *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    return NULL;
}

size_t ck_http_req_header_count(const struct ck_http_req *req)
{
    return req->nheaders;
}

const struct ck_http_header *ck_http_req_header_at(const struct ck_http_req *req, size_t i)
{
    return i < req->nheaders ? &req->headers[i] : NULL;
}

const void *ck_http_req_body(const struct ck_http_req *req, size_t *ret_len)
{
    *ret_len = req->body_len;
    return req->body ? req->body : "";
}

bool ck_http_req_is_tls(const struct ck_http_req *req)
{
    return req->peer->tls;
}

size_t ck_http_req_peer_cert(const struct ck_http_req *req, size_t i, const unsigned char **ret_der,
                             size_t *ret_len)
{
    const struct peer *p = req->peer;
    if (i < p->ncerts) {
        *ret_der = p->der[i];
        *ret_len = p->der_len[i];
    }
    return p->ncerts;
}

const char *ck_http_req_peer_address(const struct ck_http_req *req)
{
    return req->peer->address;
}

/* ---- public: the server ----------------------------------------------------- */

static int verify_any(int preverify_ok, X509_STORE_CTX *ctx)
{
    (void)preverify_ok, (void)ctx;
    return 1; /* asked for, verified by the caller */
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char both[] = "\x02h2\x08http/1.1", h1[] = "\x08http/1.1";
    struct ck_http_server *srv = arg;
    const unsigned char *ours = srv->cfg.disable_http2 ? h1 : both;
    unsigned int ourlen = srv->cfg.disable_http2 ? sizeof h1 - 1 : sizeof both - 1;
    unsigned char *sel;
    (void)ssl;
    if (SSL_select_next_proto(&sel, outlen, ours, ourlen, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

static int tls_setup(struct ck_http_server *srv, char *errbuf, size_t errlen)
{
    const struct ck_http_config *cfg = &srv->cfg;
    static const unsigned char sid[] = "ckube";
    srv->ssl = SSL_CTX_new(TLS_server_method());
    if (!srv->ssl)
        return CK_ENOMEM;
    SSL_CTX_set_min_proto_version(srv->ssl, TLS1_2_VERSION);
    SSL_CTX_set_options(srv->ssl, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(srv->ssl, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_id_context(srv->ssl, sid, sizeof sid - 1);
    const char *what = cfg->cert_file;
    if (SSL_CTX_use_certificate_chain_file(srv->ssl, cfg->cert_file) != 1)
        goto fail;
    what = cfg->key_file;
    if (SSL_CTX_use_PrivateKey_file(srv->ssl, cfg->key_file, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(srv->ssl) != 1)
        goto fail;
    if (cfg->client_ca_file) {
        what = cfg->client_ca_file;
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->client_ca_file);
        if (!names || SSL_CTX_load_verify_locations(srv->ssl, cfg->client_ca_file, NULL) != 1) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            goto fail;
        }
        SSL_CTX_set_client_CA_list(srv->ssl, names);
        SSL_CTX_set_verify(srv->ssl, SSL_VERIFY_PEER, NULL);
    } else {
        SSL_CTX_set_verify(srv->ssl, SSL_VERIFY_PEER, verify_any);
    }
    SSL_CTX_set_alpn_select_cb(srv->ssl, alpn_select, srv);
    return 0;
fail:
    if (errbuf) {
        char e[160];
        ERR_error_string_n(ERR_get_error(), e, sizeof e);
        snprintf(errbuf, errlen, "%s: %s", what, e);
    }
    ERR_clear_error();
    return CK_EINVAL;
}

/* What cannot fail, for every loop before any is made: freeing finds them in order. */
static void loop_prepare(struct ck_http_server *srv, struct loop *L, int idx)
{
    L->srv = srv;
    L->idx = idx;
    L->efd = -1;
    L->conns.next = L->conns.prev = &L->conns;
    L->q_tail = &L->q_head;
    pthread_mutex_init(&L->qlock, NULL);
}

static int loop_init(struct loop *L)
{
    if (!(L->base = event_base_new()) || !(L->batch = evbuffer_new()))
        return CK_ENOMEM;
    if ((L->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return CK_EIO;
    L->wake_ev = event_new(L->base, L->efd, EV_READ | EV_PERSIST, on_wake, L);
    if (!L->wake_ev || event_add(L->wake_ev, NULL) != 0)
        return CK_ENOMEM;
    if (!(L->shutdown_op = op_new(OP_SHUTDOWN, NULL, NULL, 0)))
        return CK_ENOMEM;
    int ms = L->srv->cfg.read_header_timeout_ms;
    struct timeval hdr = {ms / 1000, (ms % 1000) * 1000};
    ms = ms < H2_PREFACE_MS ? ms : H2_PREFACE_MS;
    struct timeval preface = {ms / 1000, (ms % 1000) * 1000};
    ms = ms < H2_SETTINGS_MS ? ms : H2_SETTINGS_MS;
    struct timeval settings = {ms / 1000, (ms % 1000) * 1000};
    if (!(L->tv_header = event_base_init_common_timeout(L->base, &hdr)) ||
        !(L->tv_preface = event_base_init_common_timeout(L->base, &preface)) ||
        !(L->tv_settings = event_base_init_common_timeout(L->base, &settings)))
        return CK_ENOMEM;
    return 0;
}

static void config_defaults(struct ck_http_config *c)
{
    if (!c->address)
        c->address = "127.0.0.1";
    if (!c->max_streams_per_connection)
        c->max_streams_per_connection = 100;
    if (!c->max_header_bytes)
        c->max_header_bytes = 1 << 20;
    if (!c->max_uri_bytes)
        c->max_uri_bytes = 64 << 10;
    if (!c->max_body_bytes)
        c->max_body_bytes = (3 << 20) + 1024;
    if (!c->stream_high_water)
        c->stream_high_water = 256 << 10;
    if (!c->stream_max_pending)
        c->stream_max_pending = 16 << 20;
    if (c->idle_timeout_ms <= 0)
        c->idle_timeout_ms = 90 * 1000;
    if (c->read_header_timeout_ms <= 0)
        c->read_header_timeout_ms = 32 * 1000;
}

static int server_alloc(const struct ck_http_config *cfg, int nloops,
                        struct ck_http_server **ret_srv)
{
    struct ck_http_server *srv = ck__calloc(1, sizeof *srv);
    if (!srv)
        return CK_ENOMEM;
    srv->cfg = *cfg;
    config_defaults(&srv->cfg);
    srv->nloops = nloops;
    *ret_srv = srv;
    if (!(srv->loops = ck__calloc((size_t)nloops, sizeof *srv->loops)))
        return CK_ENOMEM;
    for (int i = 0; i < nloops; i++)
        loop_prepare(srv, &srv->loops[i], i);
    for (int i = 0; i < nloops; i++) {
        int rv = loop_init(&srv->loops[i]);
        if (rv)
            return rv;
    }
    /* http-parser's limit is process-wide: the largest any server asked for (each
     * server counts its own headers against its own limit) */
    static pthread_mutex_t max_lock = PTHREAD_MUTEX_INITIALIZER;
    static size_t max_header;
    pthread_mutex_lock(&max_lock);
    if (srv->cfg.max_header_bytes > max_header) {
        max_header = srv->cfg.max_header_bytes;
        http_parser_set_max_header_size((uint32_t)max_header);
    }
    pthread_mutex_unlock(&max_lock);
    http_parser_settings *h = &srv->h1;
    h->on_message_begin = h1_begin;
    h->on_url = h1_url;
    h->on_header_field = h1_header_field;
    h->on_header_value = h1_header_value;
    h->on_headers_complete = h1_headers_done;
    h->on_body = h1_body;
    h->on_message_complete = h1_message_done;
    if (nghttp2_session_callbacks_new(&srv->h2cb) != 0 || nghttp2_option_new(&srv->h2opt) != 0)
        return CK_ENOMEM;
    nghttp2_session_callbacks_set_on_begin_headers_callback(srv->h2cb, h2_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(srv->h2cb, h2_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(srv->h2cb, h2_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(srv->h2cb, h2_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(srv->h2cb, h2_stream_close);
    nghttp2_session_callbacks_set_send_data_callback(srv->h2cb, h2_send_data);
    nghttp2_option_set_max_deflate_dynamic_table_size(srv->h2opt, 4096);
    return 0;
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    struct loop *L = arg;
    (void)fd, (void)what;
    if (L->listener)
        evconnlistener_enable(L->listener);
}

/*
 * accept() failed (out of descriptors, say): pause the listener 100 ms
 * instead of finding the same error again at once, as Go's server backs off.
 */
static void on_accept_error(struct evconnlistener *l, void *arg)
{
    struct loop *L = arg;
    struct timeval tv = {0, 100 * 1000};
    if (!L->accept_pause && !(L->accept_pause = evtimer_new(L->base, on_accept_resume, L)))
        return;
    evconnlistener_disable(l);
    evtimer_add(L->accept_pause, &tv);
}

static int loop_listen(struct loop *L, uint16_t *port, char *errbuf, size_t errlen)
{
    const struct ck_http_config *cfg = &L->srv->cfg;
    struct sockaddr_storage ss = {0};
    socklen_t sl;
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, cfg->address, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons(*port);
        sl = sizeof *in;
    } else if (inet_pton(AF_INET6, cfg->address, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(*port);
        sl = sizeof *in6;
    } else {
        if (errbuf)
            snprintf(errbuf, errlen, "invalid bind address %s", cfg->address);
        return CK_EINVAL;
    }
    L->listener = evconnlistener_new_bind(L->base, on_accept, L,
                                          LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                              LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_EXEC,
                                          4096, (struct sockaddr *)&ss, (int)sl);
    if (!L->listener) {
        int e = errno;
        if (errbuf)
            snprintf(errbuf, errlen, "listen on %s:%u: %s", cfg->address, *port, strerror(e));
        return e == EADDRINUSE ? CK_EADDRINUSE : CK_EIO;
    }
    evconnlistener_set_error_cb(L->listener, on_accept_error);
    if (*port == 0) {
        sl = sizeof ss;
        getsockname(evconnlistener_get_fd(L->listener), (struct sockaddr *)&ss, &sl);
        *port = ntohs(ss.ss_family == AF_INET ? in->sin_port : in6->sin6_port);
    }
    return 0;
}

int ck_http_server_new(const struct ck_http_config *cfg, struct ck_http_server **ret_srv,
                       char *errbuf, size_t errlen)
{
    struct ck_http_server *srv = NULL;
    int nloops = cfg->loops > 0 ? cfg->loops : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int rv;
    if (!cfg->on_request)
        return CK_EINVAL;
    if ((rv = server_alloc(cfg, nloops > 0 ? nloops : 1, &srv)) != 0)
        goto fail;
    if (cfg->cert_file && (rv = tls_setup(srv, errbuf, errlen)) != 0)
        goto fail;
    uint16_t port = cfg->port;
    for (int i = 0; i < srv->nloops; i++)
        if ((rv = loop_listen(&srv->loops[i], &port, errbuf, errlen)) != 0)
            goto fail;
    srv->port = port;
    *ret_srv = srv;
    return 0;
fail:
    ck_http_server_free(srv);
    return rv;
}

uint16_t ck_http_server_port(const struct ck_http_server *srv)
{
    return srv->port;
}

static void *loop_run(void *arg)
{
    struct loop *L = arg;
    tl_loop = L;
    event_base_dispatch(L->base);
    /* bufferevent_free() closes a socket from the loop's next round (its
     * finalizer): run the rounds the connections closed last still need */
    for (int i = 0; i < 2; i++)
        event_base_loop(L->base, EVLOOP_NONBLOCK);
    return NULL;
}

int ck_http_server_start(struct ck_http_server *srv)
{
    for (int i = 0; i < srv->nloops; i++) {
        struct loop *L = &srv->loops[i];
        if (pthread_create(&L->thread, NULL, loop_run, L) != 0)
            return CK_EIO;
        L->running = true;
    }
    srv->started = true;
    return 0;
}

/* After the loops stopped: closes what is left and drops queued ops (on this thread). */
static void loop_stop(struct loop *L)
{
    while (L->conns.next != &L->conns)
        conn_free(L->conns.next);
    pthread_mutex_lock(&L->qlock);
    L->stopped = true;
    struct op *o = L->q_head;
    L->q_head = NULL;
    L->q_tail = &L->q_head;
    pthread_mutex_unlock(&L->qlock);
    while (o) {
        struct op *next = o->next;
        op_free(o);
        o = next;
    }
}

void ck_http_server_shutdown(struct ck_http_server *srv, int timeout_ms)
{
    if (srv->shut)
        return;
    srv->shut = true;
    for (int i = 0; i < srv->nloops; i++) {
        struct loop *L = &srv->loops[i];
        if (!L->running) {
            L->shutting = true;
            continue;
        }
        struct op *o = L->shutdown_op;
        L->shutdown_op = NULL;
        o->status = timeout_ms;
        op_push(L, o);
    }
    for (int i = 0; i < srv->nloops; i++) {
        struct loop *L = &srv->loops[i];
        if (L->running)
            pthread_join(L->thread, NULL);
        L->running = false;
        loop_stop(L);
    }
}

struct ck_http_server *ck_http_server_free(struct ck_http_server *srv)
{
    if (!srv)
        return NULL;
    if (srv->loops) {
        ck_http_server_shutdown(srv, 0);
        for (int i = 0; i < srv->nloops; i++) {
            struct loop *L = &srv->loops[i];
            if (L->shutdown_op)
                op_free(L->shutdown_op);
            if (L->listener)
                evconnlistener_free(L->listener);
            if (L->shutdown_timer)
                event_free(L->shutdown_timer);
            if (L->accept_pause)
                event_free(L->accept_pause);
            if (L->wake_ev)
                event_free(L->wake_ev);
            if (L->batch)
                evbuffer_free(L->batch);
            if (L->base)
                event_base_free(L->base);
            if (L->efd >= 0)
                close(L->efd);
            pthread_mutex_destroy(&L->qlock);
        }
        free(srv->loops);
    }
    if (srv->ssl)
        SSL_CTX_free(srv->ssl);
    nghttp2_session_callbacks_del(srv->h2cb);
    nghttp2_option_del(srv->h2opt);
    free(srv);
    return NULL;
}

/* ---- the fuzz target's entry (internal.h) ----------------------------------- */

int ck__http_server_new_unbound(const struct ck_http_config *cfg, struct ck_http_server **ret_srv)
{
    struct ck_http_server *srv = NULL;
    int rv = server_alloc(cfg, 1, &srv);
    if (rv) {
        ck_http_server_free(srv);
        return rv;
    }
    *ret_srv = srv;
    return 0;
}

size_t ck__http_feed(struct ck_http_server *srv, const void *data, size_t len)
{
    struct loop *L = &srv->loops[0];
    struct bufferevent *pair[2];
    size_t answered = 0;
    if (bufferevent_pair_new(L->base, BEV_OPT_CLOSE_ON_FREE, pair) != 0)
        return 0;
    if (!conn_new(L, pair[0], false)) {
        bufferevent_free(pair[1]);
        return 0;
    }
    bufferevent_enable(pair[1], EV_READ);
    bufferevent_write(pair[1], data, len);
    /* until a round neither answers nor finds an op queued, or a bound */
    for (int i = 0; i < 256; i++) {
        event_base_loop(L->base, EVLOOP_NONBLOCK);
        struct evbuffer *in = bufferevent_get_input(pair[1]);
        size_t n = evbuffer_get_length(in);
        answered += n;
        evbuffer_drain(in, n);
        pthread_mutex_lock(&L->qlock);
        bool idle = L->q_head == NULL;
        pthread_mutex_unlock(&L->qlock);
        if (!n && idle)
            break;
    }
    bufferevent_free(pair[1]);
    while (L->conns.next != &L->conns)
        conn_free(L->conns.next);
    on_wake(L->efd, EV_READ, L); /* ops for requests now detached: dropped */
    return answered;
}
