/*
 * portforward.c - pods/{name}/portforward: `kubectl port-forward` relayed to the pod's
 * node agent.
 *
 * kubectl 1.32 speaks SPDY/3.1 (spdy.c) to the API server, by default tunnelled in a
 * WebSocket (subprotocol SPDY/3.1+portforward.k8s.io, the SPDY bytes cut anywhere into
 * binary messages: client-go tools/portforward/tunneling_dialer.go), else, when that
 * upgrade fails or KUBECTL_PORT_FORWARD_WEBSOCKETS=false, over a direct `Upgrade:
 * SPDY/3.1` with X-Stream-Protocol-Version portforward.k8s.io. Both are served here.
 *
 * Each local connection kubectl accepts becomes two SPDY streams carrying the headers
 * streamtype (error, data), port and requestid; as the kubelet
 * (pkg/kubelet/cri/streaming/portforward/httpstream.go) every stream is answered with
 * SYN_REPLY, and once both of a request id are there, the pair is relayed: the data
 * stream's bytes to the pod's port and back; a failure to reach the port is written as
 * text on the error stream; at the end both streams get FIN. kubectl reads the error
 * stream to its end and, when something came, reports it and drops the whole session
 * (client-go portforward.go handleConnection), as it does with the kubelet.
 *
 * The checks come first, with kube-apiserver's Statuses (pkg/registry/core/pod: no pod
 * 404, no node 400). Authorization is `create` on pods/portforward (authn_authz.c).
 *
 * The leg to the agent is one agentleg.c exchange per forwarded connection:
 *   GET  /portForward/{namespace}/{pod}?port=N&session=ID   the bytes from the port;
 *        a non-200 answer's body is the error stream's text;
 *   POST /portForwardInput/ID                               the bytes to the port.
 * Opening a leg waits for the agent: it runs on a thread per connection, which hands the
 * leg to the session's relay thread through the session's lock and a wake-up pipe.
 *
 * Threading: one relay thread per session owns the socket, the framing and the
 * connections' buffers; opener threads only fill in their connection's leg or error
 * under s->lock. The session is refcounted (relay, openers).
 */
#define _GNU_SOURCE /* pipe2, POLLRDHUP */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "ckube/internal/exec_stream.h"
#include "internal.h"
#include "req_mhd.h"

#define TUNNEL_PROTOCOL "SPDY/3.1+portforward.k8s.io"
#define PF_PROTOCOL     "portforward.k8s.io"
#define CHUNK           (32 * 1024)
#define TX_HIGH         (256 * 1024)            /* no more is read from the pod past this */
#define IN_HIGH         (1024 * 1024)           /* no more is read from kubectl past this */
#define MAX_CONNS       256                     /* forwarded connections at once per session */
#define WS_MESSAGE_MAX  (2 * CK_SPDY_FRAME_MAX) /* a tunnel's message */

enum conn_state { WAITING, OPENING, OPEN, FAILED };

struct pf_conn {
    char request_id[64];
    uint32_t error_stream, data_stream;
    int port;              /* 0: none or invalid */
    enum conn_state state; /* under s->lock: the opener writes it */
    enum conn_state seen;  /* the relay's copy, the only one it reads unlocked */
    struct ck__leg *leg;   /* OPEN: set by the opener */
    int out_r, in_w;
    char error[600];                /* FAILED: the error stream's text */
    struct ck__buf in;              /* bytes for the port not yet in the leg's pipe */
    struct ck__exec_frames *frames; /* the agent's records (ckube/internal/exec_stream.h) */
    bool client_fin;                /* kubectl ended its half of the data stream */
    bool nonblocking;               /* the leg's pipes were made so */
    struct pf_conn *next;
};

struct pf_session {
    struct ck__upgraded up; /* first: the wslay callbacks' user data */
    pthread_mutex_t lock;   /* refs, conns' state/leg/error, closed */
    int refs;
    bool closed;
    struct ck_apiserver *ctx;
    char base[300], ns_escaped[800], pod_escaped[800];
    bool websocket;
    wslay_event_context_ptr ws;
    struct ck__spdy spdy;
    struct ck__buf tx; /* SPDY bytes for kubectl */
    int wake[2];
    struct pf_conn *conns;
    size_t n_conns;
    uint32_t last_stream; /* the last stream kubectl opened */
    bool ended;           /* GOAWAY, a protocol error or the socket's end */
};

struct opener {
    struct pf_session *s;
    struct pf_conn *c;
    int port;
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void conn_free(struct pf_conn *c)
{
    ck__leg_close(c->leg);
    ck__buf_release(&c->in);
    free(c->frames);
    free(c);
}

static void session_unref(struct pf_session *s)
{
    pthread_mutex_lock(&s->lock);
    bool last = --s->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (!last)
        return;
    while (s->conns) {
        struct pf_conn *c = s->conns;
        s->conns = c->next;
        conn_free(c);
    }
    ck__spdy_release(&s->spdy);
    ck__buf_release(&s->tx);
    close_fd(&s->wake[0]);
    close_fd(&s->wake[1]);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void session_drop(void *arg)
{
    session_unref(arg);
}

/* ---- the agent's leg, per connection ---- */

static void *opener_main(void *arg)
{
    struct opener *o = arg;
    struct pf_session *s = o->s;
    struct pf_conn *c = o->c;
    char id[33], url[2048], in_url[400], msg[512];
    struct ck__leg *leg = NULL;
    long status = -1;
    int r = ck__leg_session_id(id);
    if (r == 0) {
        snprintf(url, sizeof(url), "%s/portForward/%s/%s?port=%d&session=%s", s->base,
                 s->ns_escaped, s->pod_escaped, o->port, id);
        snprintf(in_url, sizeof(in_url), "%s/portForwardInput/%s", s->base, id);
        r = ck__leg_open(s->ctx, url, &leg, &status, msg, sizeof(msg));
    } else {
        snprintf(msg, sizeof(msg), "no session id");
    }
    if (r == 0 && ck__leg_start_input(s->ctx, leg, in_url) < 0) {
        ck__leg_close(leg);
        leg = NULL;
        r = CK_ENOMEM;
        snprintf(msg, sizeof(msg), "out of memory");
    }
    pthread_mutex_lock(&s->lock);
    if (s->closed) {
        ck__leg_close(leg);
    } else if (r == 0) {
        c->leg = leg;
        c->out_r = ck__leg_out_fd(leg);
        c->in_w = ck__leg_in_fd(leg);
        c->state = OPEN;
    } else {
        /* the agent's words when it answered (the kubelet's are on its error stream) */
        if (r == CK_EINVAL)
            snprintf(c->error, sizeof(c->error), "%s", msg);
        else
            snprintf(
                c->error, sizeof(c->error),
                "error forwarding port %d to pod %.250s: the node agent cannot be reached: %.250s",
                o->port, s->pod_escaped, msg);
        c->state = FAILED;
    }
    if (!s->closed)
        (void)!write(s->wake[1], "", 1);
    pthread_mutex_unlock(&s->lock);
    free(o);
    session_unref(s);
    return NULL;
}

static void start_opener(struct pf_session *s, struct pf_conn *c)
{
    struct opener *o = malloc(sizeof(*o));
    pthread_t t;
    c->state = c->seen = OPENING; /* no opener yet: no lock needed */
    if (o) {
        *o = (struct opener){s, c, c->port};
        pthread_mutex_lock(&s->lock);
        s->refs++;
        pthread_mutex_unlock(&s->lock);
        if (pthread_create(&t, NULL, opener_main, o) == 0) {
            pthread_detach(t);
            return;
        }
        pthread_mutex_lock(&s->lock);
        s->refs--;
        pthread_mutex_unlock(&s->lock);
        free(o);
    }
    snprintf(c->error, sizeof(c->error), "error forwarding port %d: out of memory", c->port);
    c->state = c->seen = FAILED;
}

/* ---- SPDY frames from kubectl ---- */

static struct pf_conn *conn_by_stream(struct pf_session *s, uint32_t id)
{
    for (struct pf_conn *c = s->conns; c; c = c->next)
        if (c->data_stream == id || c->error_stream == id)
            return c;
    return NULL;
}

static void conn_remove(struct pf_session *s, struct pf_conn *c)
{
    for (struct pf_conn **p = &s->conns; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    s->n_conns--;
    pthread_mutex_lock(&s->lock); /* an opener may be filling it in: only OPENING ones */
    bool opening = c->state == OPENING;
    pthread_mutex_unlock(&s->lock);
    if (!opening) {
        conn_free(c);
        return;
    }
    /* its opener still fills it in: it stays listed without streams, and the relay frees
       it once the opener is done */
    c->next = s->conns;
    s->conns = c;
    s->n_conns++;
    c->data_stream = c->error_stream = 0;
}

static void syn_stream(struct pf_session *s, const struct ck__spdy_frame *f)
{
    if (f->stream <= s->last_stream || !(f->stream & 1)) {
        ck__spdy_put_rst_stream(&s->tx, f->stream, CK_SPDY_PROTOCOL_ERROR);
        return;
    }
    s->last_stream = f->stream;
    const char *type = ck__spdy_header(f, "streamtype");
    const char *port = ck__spdy_header(f, "port");
    const char *rid = ck__spdy_header(f, "requestid");
    bool is_data = type && strcmp(type, "data") == 0;
    bool is_error = type && strcmp(type, "error") == 0;
    if (!is_data && !is_error) {
        ck__spdy_put_rst_stream(&s->tx, f->stream, CK_SPDY_PROTOCOL_ERROR);
        return;
    }
    ck__spdy_put_headers(&s->spdy, &s->tx, CK_SPDY_SYN_REPLY, 0, f->stream, NULL, 0);
    char key[64];
    snprintf(key, sizeof(key), "%s", rid ? rid : "");
    struct pf_conn *c = NULL;
    for (c = s->conns; c; c = c->next)
        if (c->seen == WAITING && strcmp(c->request_id, key) == 0 &&
            !(is_data ? c->data_stream : c->error_stream))
            break;
    if (!c) {
        if (s->n_conns >= MAX_CONNS || !(c = calloc(1, sizeof(*c))) ||
            !(c->frames = calloc(1, sizeof(*c->frames)))) {
            free(c);
            ck__spdy_put_rst_stream(&s->tx, f->stream, CK_SPDY_REFUSED_STREAM);
            return;
        }
        snprintf(c->request_id, sizeof(c->request_id), "%s", key);
        c->out_r = c->in_w = -1;
        c->in.max = IN_HIGH + 2 * WS_MESSAGE_MAX; /* a message may come past IN_HIGH */
        c->next = s->conns;
        s->conns = c;
        s->n_conns++;
    }
    if (is_data)
        c->data_stream = f->stream;
    else
        c->error_stream = f->stream;
    char *end;
    long p = port ? strtol(port, &end, 10) : 0;
    if (port && *port && !*end && p > 0 && p < 65536)
        c->port = (int)p;
    if (!c->data_stream || !c->error_stream)
        return;
    if (!c->port) { /* the kubelet's words (httpstream.go) */
        snprintf(c->error, sizeof(c->error), "invalid port header: \"%.100s\"", port ? port : "");
        c->state = c->seen = FAILED; /* no opener: no lock needed */
        (void)!write(s->wake[1], "", 1);
        return;
    }
    start_opener(s, c);
}

/* Handles one frame; false ends the session. */
static bool frame_in(struct pf_session *s, const struct ck__spdy_frame *f)
{
    if (!f->control) {
        struct pf_conn *c = conn_by_stream(s, f->stream);
        if (!c || f->stream != c->data_stream)
            return true; /* the error stream carries nothing from kubectl */
        if (f->len && c->seen != FAILED && ck__buf_add(&c->in, f->data, f->len) < 0)
            return false;
        if (c->in.len > IN_HIGH)
            s->up.hold_reads = true; /* wslay reads on until told to wait */
        if (f->flags & CK_SPDY_FLAG_FIN)
            c->client_fin = true;
        return true;
    }
    switch (f->type) {
    case CK_SPDY_SYN_STREAM:
        syn_stream(s, f);
        break;
    case CK_SPDY_RST_STREAM: {
        struct pf_conn *c = conn_by_stream(s, f->stream);
        if (c && f->stream == c->data_stream)
            conn_remove(s, c); /* kubectl is done with it */
        break;
    }
    case CK_SPDY_PING:
        if (f->value & 1) /* kubectl's (odd) ones are answered with themselves */
            ck__spdy_put_ping(&s->tx, f->value);
        break;
    case CK_SPDY_GOAWAY:
        return false;
    default: /* SETTINGS, WINDOW_UPDATE, HEADERS: spdystream uses no flow control */
        break;
    }
    return true;
}

/* Frames the received bytes; false ends the session (a GOAWAY is queued on errors). */
static bool bytes_in(struct pf_session *s, const unsigned char *p, size_t n)
{
    size_t off = 0;
    do {
        size_t k = ck__spdy_feed(&s->spdy, p + off, n - off);
        off += k;
        struct ck__spdy_frame f;
        int r;
        while ((r = ck__spdy_next(&s->spdy, &f)) > 0)
            if (!frame_in(s, &f))
                return false;
        if (r < 0 || (k == 0 && off < n)) {
            ck__spdy_put_goaway(&s->tx, s->last_stream, CK_SPDY_PROTOCOL_ERROR);
            return false;
        }
    } while (off < n);
    return true;
}

/* ---- the WebSocket tunnel (wslay) ---- */

static void ws_message(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *m,
                       void *arg)
{
    (void)ctx;
    struct pf_session *s = arg;
    if (m->opcode == WSLAY_CONNECTION_CLOSE || s->ended)
        return; /* wslay answers it; want_read turns false */
    if (m->opcode != WSLAY_BINARY_FRAME || !bytes_in(s, m->msg, m->msg_length))
        s->ended = true;
}

/* ---- the relay ---- */

/*
 * Moves the agent's records into frames: the port's bytes (1) to the data stream, an
 * error text (3) to the error stream; at the end, FIN on both, as the kubelet closes them.
 */
static void pump_output(struct pf_session *s, struct pf_conn *c)
{
    unsigned char buf[CHUNK];
    ssize_t n = read(c->out_r, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    bool broken = false;
    for (size_t off = 0; n > 0 && off < (size_t)n && !broken;) {
        off += ck__exec_frames_append(c->frames, buf + off, (size_t)n - off);
        unsigned ch;
        const unsigned char *p;
        size_t len;
        int k;
        while ((k = ck__exec_frames_next(c->frames, &ch, &p, &len)) > 0)
            if (ch == CK_EXEC_STDOUT || ch == CK_EXEC_ERROR)
                ck__spdy_put_data(&s->tx, ch == CK_EXEC_STDOUT ? c->data_stream : c->error_stream,
                                  0, p, len);
        broken = k < 0;
    }
    if (n > 0 && !broken)
        return;
    ck__spdy_put_data(&s->tx, c->data_stream, CK_SPDY_FLAG_FIN, NULL, 0);
    ck__spdy_put_data(&s->tx, c->error_stream, CK_SPDY_FLAG_FIN, NULL, 0);
    conn_remove(s, c);
}

/* Writes what kubectl sent into the leg's pipe, and ends it after kubectl's FIN. */
static void pump_input(struct pf_conn *c)
{
    while (c->in.len > 0) {
        ssize_t w = write(c->in_w, c->in.p, c->in.len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        ck__buf_consume(&c->in, (size_t)w);
    }
    if (c->client_fin && c->in.len == 0)
        ck__leg_end_input(c->leg), c->in_w = -1;
}

static void fail_conn(struct pf_session *s, struct pf_conn *c)
{
    ck__spdy_put_data(&s->tx, c->error_stream, 0, c->error, strlen(c->error));
    ck__spdy_put_data(&s->tx, c->error_stream, CK_SPDY_FLAG_FIN, NULL, 0);
    ck__spdy_put_data(&s->tx, c->data_stream, CK_SPDY_FLAG_FIN, NULL, 0);
    conn_remove(s, c);
}

/* Sends what is queued for kubectl; false when the socket failed. */
static bool flush_tx(struct pf_session *s)
{
    if (s->websocket) {
        if (s->tx.len > 0) {
            struct wslay_event_msg m = {WSLAY_BINARY_FRAME, (const uint8_t *)s->tx.p, s->tx.len};
            if (wslay_event_queue_msg(s->ws, &m) != 0) /* wslay copies it */
                return false;
            ck__buf_consume(&s->tx, s->tx.len);
        }
        return !wslay_event_want_write(s->ws) || wslay_event_send(s->ws) == 0;
    }
    while (s->tx.len > 0) {
        ssize_t n = send(s->up.sock, s->tx.p, s->tx.len, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return true;
        if (n <= 0)
            return false;
        ck__buf_consume(&s->tx, (size_t)n);
    }
    return true;
}

static bool tx_pending(struct pf_session *s)
{
    return s->websocket ? wslay_event_want_write(s->ws) : s->tx.len > 0;
}

static bool tx_full(struct pf_session *s)
{
    return s->websocket ? wslay_event_get_queued_msg_count(s->ws) > 64 : s->tx.len > TX_HIGH;
}

static void relay(struct pf_session *s)
{
    struct pollfd p[3 + 2 * MAX_CONNS];
    struct pf_conn *owner[3 + 2 * MAX_CONNS];
    while (!s->ended && !s->tx.err) {
        /* connections whose opener is done */
        for (struct pf_conn *c = s->conns, *next; c; c = next) {
            next = c->next;
            pthread_mutex_lock(&s->lock);
            enum conn_state st = c->seen = c->state;
            pthread_mutex_unlock(&s->lock);
            if (st != OPENING && !c->data_stream && !c->error_stream) {
                conn_remove(s, c); /* dropped by kubectl while its leg was opening */
            } else if (st == FAILED && c->data_stream) {
                fail_conn(s, c);
            } else if (st == OPEN && !c->nonblocking) {
                fcntl(c->out_r, F_SETFL, fcntl(c->out_r, F_GETFL) | O_NONBLOCK);
                fcntl(c->in_w, F_SETFL, fcntl(c->in_w, F_GETFL) | O_NONBLOCK);
                c->nonblocking = true;
            }
        }
        if (!flush_tx(s))
            break;
        bool in_full = false;
        size_t n = 0;
        for (struct pf_conn *c = s->conns; c; c = c->next) {
            in_full = in_full || c->in.len > IN_HIGH;
            if (c->seen != OPEN || !c->data_stream || !c->nonblocking)
                continue;
            if (c->out_r >= 0 && !tx_full(s)) {
                owner[n] = c;
                p[n++] = (struct pollfd){c->out_r, POLLIN, 0};
            }
            if (c->in_w >= 0 && c->in.len > 0) {
                owner[n] = c;
                p[n++] = (struct pollfd){c->in_w, POLLOUT, 0};
            }
        }
        size_t base = n;
        s->up.hold_reads = in_full;
        bool want_read = !in_full && (!s->websocket || wslay_event_want_read(s->ws));
        if (s->websocket && !wslay_event_want_read(s->ws) && !wslay_event_want_write(s->ws))
            break; /* the WebSocket's close handshake is over */
        p[n++] = (struct pollfd){
            s->up.sock, (short)((want_read ? POLLIN : 0) | (tx_pending(s) ? POLLOUT : 0)), 0};
        p[n++] = (struct pollfd){s->wake[0], POLLIN, 0};
        /* libmicrohttpd does not pass a TLS peer's hang-up on to sock: watch it */
        p[n++] = (struct pollfd){s->up.peer_fd, POLLRDHUP, 0};
        if (poll(p, (nfds_t)n, 1000) < 0 && errno != EINTR)
            break;
        if (p[base + 2].revents & (POLLRDHUP | POLLHUP | POLLERR))
            break; /* kubectl went away */
        if (p[base + 1].revents) {
            char drain[64];
            (void)!read(s->wake[0], drain, sizeof(drain));
        }
        if (p[base].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (s->websocket) {
                if (wslay_event_recv(s->ws) != 0)
                    break;
            } else {
                unsigned char buf[CHUNK];
                ssize_t got = recv(s->up.sock, buf, sizeof(buf), 0);
                if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                    break;
                if (got > 0 && !bytes_in(s, buf, (size_t)got))
                    s->ended = true;
            }
        }
        /* the pipes; a connection may go while its turn comes: check it is still listed */
        for (size_t i = 0; i < base; i++) {
            if (!p[i].revents)
                continue;
            struct pf_conn *c = s->conns;
            while (c && c != owner[i])
                c = c->next;
            if (!c || c->seen != OPEN || !c->data_stream || !c->nonblocking)
                continue;
            if (p[i].events == POLLIN && p[i].fd == c->out_r)
                pump_output(s, c);
            else if (p[i].events == POLLOUT && p[i].fd == c->in_w)
                pump_input(c);
        }
        for (struct pf_conn *c = s->conns; c; c = c->next)
            if (c->seen == OPEN && c->nonblocking && c->in_w >= 0 && c->client_fin &&
                c->in.len == 0)
                pump_input(c);
    }
    /* a last word, when there is one to say (GOAWAY after an error) */
    if (s->tx.len > 0 || tx_pending(s))
        flush_tx(s);
}

static void *relay_main(void *arg)
{
    struct pf_session *s = arg;
    fcntl(s->up.sock, F_SETFL, fcntl(s->up.sock, F_GETFL) | O_NONBLOCK);
    struct wslay_event_callbacks cb = {ck__ws_recv, ck__ws_send, NULL,      NULL,
                                       NULL,        NULL,        ws_message};
    if (!s->websocket || wslay_event_context_server_init(&s->ws, &cb, s) == 0) {
        if (s->ws)
            wslay_event_config_set_max_recv_msg_length(s->ws, WS_MESSAGE_MAX);
        relay(s);
        if (s->ws)
            wslay_event_context_free(s->ws);
    }
    pthread_mutex_lock(&s->lock);
    s->closed = true; /* openers still running close their legs themselves */
    pthread_mutex_unlock(&s->lock);
    MHD_upgrade_action(s->up.urh, MHD_UPGRADE_ACTION_CLOSE);
    session_unref(s);
    return NULL;
}

/* ---- the request ---- */

/* Whether the comma-separated list offered holds want. */
static bool offers(const char *offered, const char *want)
{
    size_t len = strlen(want);
    for (const char *p = offered; p && (p = strstr(p, want)); p += len) {
        bool start = p == offered || p[-1] == ' ' || p[-1] == ',';
        bool end = p[len] == '\0' || p[len] == ',' || p[len] == ' ';
        if (start && end)
            return true;
    }
    return false;
}

static struct pf_session *session_new(struct ck_apiserver *ctx, const char *base, const char *ns,
                                      const char *pod, bool websocket)
{
    struct pf_session *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->refs = 1;
    s->ctx = ctx;
    s->websocket = websocket;
    s->up = (struct ck__upgraded){MHD_INVALID_SOCKET, -1, NULL, false, relay_main, session_drop};
    s->wake[0] = s->wake[1] = -1;
    s->tx.max = 64 * 1024 * 1024; /* a bound the pumps stay far below */
    snprintf(s->base, sizeof(s->base), "%s", base);
    char *ens = curl_easy_escape(NULL, ns, 0), *epod = curl_easy_escape(NULL, pod, 0);
    bool ok = ens && epod && ck__spdy_init(&s->spdy) == 0;
    if (ok) {
        snprintf(s->ns_escaped, sizeof(s->ns_escaped), "%s", ens);
        snprintf(s->pod_escaped, sizeof(s->pod_escaped), "%s", epod);
        ok = pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) == 0;
    }
    curl_free(ens);
    curl_free(epod);
    if (!ok) {
        session_unref(s);
        return NULL;
    }
    return s;
}

enum ck__res ck__serve_pod_portforward(struct ck_apiserver *ctx, struct ck__req *req,
                                       const struct ck__target *t)
{
    char msg[700], node_name[254];
    enum ck__res failed;
    json_t *pod = ck__read_pod(ctx, req, t, node_name, sizeof(node_name), &failed);
    if (!pod)
        return failed;
    json_decref(pod);
    if (!*node_name) { /* PortForwardLocation's words */
        snprintf(msg, sizeof(msg), "pod %s does not have a host assigned", t->name);
        return ck__fail_with(req, "BadRequest", msg);
    }
    const char *key = ck__req_header(req, "Sec-WebSocket-Key");
    const char *ws_protocols = ck__req_header(req, "Sec-WebSocket-Protocol");
    const char *stream_protocols = ck__req_header(req, "X-Stream-Protocol-Version");
    bool websocket = ck__header_has(req, "Upgrade", "websocket");
    bool spdy = !websocket && ck__header_has(req, "Upgrade", "SPDY/3.1");
    char accept[64];
    if (!websocket && !spdy)
        return ck__fail_with(req, "BadRequest",
                             "Upgrade request required: pods/portforward is served over "
                             "WebSocket (" TUNNEL_PROTOCOL ") or SPDY/3.1 (" PF_PROTOCOL ")");
    if (websocket && (!key || !offers(ws_protocols, TUNNEL_PROTOCOL)))
        return ck__fail_with(req, "BadRequest",
                             "none of the offered WebSocket subprotocols is supported "
                             "(" TUNNEL_PROTOCOL ")");
    if (websocket && !ck__ws_accept_key(key, accept, sizeof(accept)))
        return ck__fail_with(req, "BadRequest", "invalid Sec-WebSocket-Key");
    if (spdy && stream_protocols && !offers(stream_protocols, PF_PROTOCOL)) /* the kubelet's */
        return ck__fail_with(req, "Forbidden",
                             "unable to upgrade: unable to negotiate protocol: client supports "
                             "other protocols, server supports [" PF_PROTOCOL "]");
    char base[300];
    if (ck__kubelet_base_url(ctx, node_name, base, sizeof(base), msg, sizeof(msg)) < 0)
        return ck__fail_with(req, "ServiceUnavailable", msg);
    CK_LOGS(2, "Port forward", "pod", t->name, "namespace", t->namespace, "transport",
            websocket ? "websocket" : "spdy");
    struct pf_session *s = session_new(ctx, base, t->namespace, t->name, websocket);
    if (!s)
        return ck__fail_no_memory(req);
    struct MHD_Response *resp = MHD_create_response_for_upgrade(ck__upgraded_cb, s);
    if (!resp) {
        session_unref(s);
        return ck__fail_no_memory(req);
    }
    if (websocket) {
        MHD_add_response_header(resp, "Upgrade", "websocket");
        MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
        MHD_add_response_header(resp, "Sec-WebSocket-Protocol", TUNNEL_PROTOCOL);
    } else {
        MHD_add_response_header(resp, "Upgrade", "SPDY/3.1");
        MHD_add_response_header(resp, "X-Stream-Protocol-Version", PF_PROTOCOL);
    }
    enum ck__res ret =
        MHD_queue_response(ck__req_mhd(req), 101, resp) == MHD_YES ? CK__YES : CK__NO;
    MHD_destroy_response(resp);
    if (ret != CK__YES) /* never upgraded */
        session_unref(s);
    return ret;
}
