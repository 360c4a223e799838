/*
 * h2o_server.c - the HTTP-layer spike on libh2o-evloop (h2o 2.2.5): HTTP/1.1
 * and HTTP/2 over OpenSSL with ALPN, N loop threads each with its own
 * h2o_evloop and listener (SO_REUSEPORT).
 *
 *   h2o_server -c CERT -k KEY [-t THREADS] [-p PORT] [-n EVENTS] [-i INTERVAL_MS]
 *
 * GET /obj answers spike_obj; GET /watch keeps the response open and sends each
 * broadcast event (chunked on HTTP/1.1, DATA frames on HTTP/2); GET /fire starts
 * the feeder. The feeder wakes each loop with one h2o_multithread message per
 * event; the loop sends every idle watch what it has not sent yet. A watch with
 * an h2o_send() in flight is not idle: its proceed callback (the back-pressure
 * of h2o's generators) sends the rest.
 */
#define _GNU_SOURCE
#include "spike.h"

#include <h2o.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct watch {
    h2o_generator_t gen; /* first: h2o hands it back to proceed/stop */
    h2o_linklist_t link;
    h2o_req_t *req;
    struct loop *L;
    uint64_t sent;
    int busy; /* an h2o_send() awaits proceed */
    h2o_iovec_t bufs[64];
};

struct loop {
    h2o_context_t ctx;
    h2o_accept_ctx_t accept;
    h2o_multithread_receiver_t wake;
    h2o_linklist_t watches;
    int fd;
};

static h2o_globalconf_t config;
static struct loop *loops;
static struct spike_opts opts;

static void watch_send(struct watch *w)
{
    uint64_t end = spike_published();
    size_t n = 0;
    int h1 = w->req->version < 0x200;
    while (w->sent < end && n < sizeof w->bufs / sizeof w->bufs[0]) {
        const struct spike_event *e = &spike_ring[w->sent % SPIKE_RING];
        w->bufs[n++] =
            h1 ? h2o_iovec_init(e->chunk, e->chunk_len) : h2o_iovec_init(e->data, e->len);
        w->sent++;
    }
    if (n == 0) {
        w->busy = 0;
        return;
    }
    w->busy = 1;
    h2o_send(w->req, w->bufs, n, H2O_SEND_STATE_IN_PROGRESS);
}

static void watch_proceed(h2o_generator_t *g, h2o_req_t *req)
{
    (void)req;
    watch_send((struct watch *)g);
}

static void watch_stop(h2o_generator_t *g, h2o_req_t *req)
{
    (void)req;
    h2o_linklist_unlink(&((struct watch *)g)->link);
}

static void on_wake(h2o_multithread_receiver_t *r, h2o_linklist_t *messages)
{
    struct loop *L = H2O_STRUCT_FROM_MEMBER(struct loop, wake, r);
    while (!h2o_linklist_is_empty(messages)) {
        h2o_multithread_message_t *m =
            H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
        h2o_linklist_unlink(&m->link);
        free(m);
    }
    for (h2o_linklist_t *n = L->watches.next; n != &L->watches; n = n->next) {
        struct watch *w = H2O_STRUCT_FROM_MEMBER(struct watch, link, n);
        if (!w->busy)
            watch_send(w);
    }
}

static void wake(int i)
{
    h2o_multithread_message_t *m = calloc(1, sizeof *m);
    h2o_multithread_send_message(&loops[i].wake, m);
}

static int on_obj(h2o_handler_t *self, h2o_req_t *req)
{
    static h2o_generator_t gen = {NULL, NULL};
    static h2o_iovec_t body;
    (void)self;
    body = h2o_iovec_init(spike_obj, spike_obj_len);
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = spike_obj_len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("application/json"));
    h2o_start_response(req, &gen);
    h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
    return 0;
}

static int on_watch(h2o_handler_t *self, h2o_req_t *req)
{
    struct loop *L = H2O_STRUCT_FROM_MEMBER(struct loop, ctx, req->conn->ctx);
    struct watch *w = h2o_mem_alloc_pool(&req->pool, sizeof *w);
    (void)self;
    memset(w, 0, sizeof *w);
    w->gen.proceed = watch_proceed;
    w->gen.stop = watch_stop;
    w->req = req;
    w->L = L;
    w->sent = spike_published();
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("application/json"));
    /* On HTTP/1.1 the chunks are framed here: h2o 2.2.5's chunked encoder
     * holds back an empty write, so the headers would wait for the first
     * event; naming the encoding ourselves skips that filter. */
    if (req->version < 0x200)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_TRANSFER_ENCODING, NULL,
                       H2O_STRLIT("chunked"));
    h2o_start_response(req, &w->gen);
    h2o_linklist_insert(&L->watches, &w->link);
    /* send the headers now: an empty write whose proceed makes the watch idle */
    w->busy = 1;
    h2o_send(req, NULL, 0, H2O_SEND_STATE_IN_PROGRESS);
    return 0;
}

static int on_fire(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    spike_feed_fire();
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_send_inline(req, H2O_STRLIT("fired\n"));
    return 0;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    struct loop *L = listener->data;
    h2o_socket_t *sock;
    if (err != NULL)
        return;
    while ((sock = h2o_evloop_socket_accept(listener)) != NULL)
        h2o_accept(&L->accept, sock);
}

static void route(h2o_hostconf_t *host, const char *path,
                  int (*on_req)(h2o_handler_t *, h2o_req_t *))
{
    h2o_pathconf_t *pc = h2o_config_register_path(host, path, 0);
    h2o_handler_t *h = h2o_create_handler(pc, sizeof *h);
    h->on_req = on_req;
}

static void *run_loop(void *arg)
{
    struct loop *L = arg;
    while (h2o_evloop_run(L->ctx.loop, INT32_MAX) == 0)
        ;
    return NULL;
}

int main(int argc, char **argv)
{
    if (spike_parse_args(argc, argv, &opts) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    h2o_config_init(&config);
    config.http2.idle_timeout = 3600 * 1000;
    config.http1.req_timeout = 3600 * 1000;
    h2o_hostconf_t *host =
        h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    route(host, "/obj", on_obj);
    route(host, "/watch", on_watch);
    route(host, "/fire", on_fire);
    SSL_CTX *ssl = spike_tls_ctx(&opts);
    /* h2o selects h2 / http/1.1 itself; this replaces spike.c's callback */
    h2o_ssl_register_alpn_protocols(ssl, h2o_http2_alpn_protocols);

    loops = calloc((size_t)opts.threads, sizeof *loops);
    for (int i = 0; i < opts.threads; i++) {
        struct loop *L = &loops[i];
        h2o_context_init(&L->ctx, h2o_evloop_create(), &config);
        L->accept.ctx = &L->ctx;
        L->accept.hosts = config.hosts;
        L->accept.ssl_ctx = ssl;
        h2o_linklist_init_anchor(&L->watches);
        h2o_multithread_register_receiver(L->ctx.queue, &L->wake, on_wake);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)opts.port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        L->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        spike_listen_opts(L->fd);
        if (bind(L->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(L->fd, 4096) != 0) {
            perror("bind");
            return 1;
        }
        h2o_socket_t *ls = h2o_evloop_socket_create(L->ctx.loop, L->fd, H2O_SOCKET_FLAG_DONT_READ);
        ls->data = L;
        h2o_socket_read_start(ls, on_accept);
    }
    spike_feed_start(&opts, opts.threads, wake);
    spike_run("h2o_server", &opts, run_loop, loops, sizeof *loops);
    return 0;
}
