/*
 * cri_stream.c - `kubectl exec` into a container of a CRI runtime: a WebSocket client of
 * the runtime's streaming server (the URL its Exec call answered), relaying between it and
 * the API server's session records (exec.c), as the kubelet proxies its /exec to the
 * runtime's URL (pkg/kubelet/server: proxyStream).
 *
 * The streaming server (k8s.io/kubelet pkg/cri/streaming/remotecommand in containerd)
 * speaks SPDY/3.1 or WebSocket. No C library of SPDY is packaged, so this speaks
 * WebSocket with the subprotocol v4.channel.k8s.io: each binary message is a channel byte
 * (0 stdin, 1 stdout, 2 stderr, 3 the Status, 4 resize) and data, which are exactly the
 * session's records. The pieces:
 *
 *   - the connection: libcurl (CURLOPT_CONNECT_ONLY) parses the URL and connects;
 *   - the upgrade: libcurl 7.88 in Debian 12 has no WebSocket and no way to hand over the
 *     connection after a 101, so the GET with its Upgrade headers is written here, and
 *     the answer checked only for its "HTTP/1.1 101" status line and the end of its
 *     headers (ck__ws_upgrade_answer, fuzzed by fuzz/fuzz_ws_upgrade.c);
 *   - the framing: wslay, as in the API server.
 *
 * v4 has no way to end stdin (v5's close message is not served by containerd's streaming
 * server): after the end of stdin, once the command wrote nothing for a second, the
 * stream is closed with a WebSocket close, which ends the command's stdin, and the
 * session ends with a Status saying the exit code is unknown (docs/internals/agent.md).
 *
 * An attach (the URL of the runtime's Attach) is the same stream without a command: the
 * runtime ends it with a Success Status when the container's output ends, and ends an
 * attach whose stdin ended as well (containerd 1.6's ContainerIO.Attach), so closing
 * the stream after the end of stdin is reported as that Success.
 */
#define _GNU_SOURCE /* memmem */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "ckube/internal/exec_stream.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define ANSWER_MAX       8192              /* the upgrade's answer headers */
#define PENDING_MAX      (4 * 1024 * 1024) /* output records not yet taken */
#define PENDING_HIGH     (1024 * 1024)     /* no more is read from the runtime past this */
#define QUIET_NS         (1000LL * 1000 * 1000)
#define HANDSHAKE_MS     10000
#define SUBPROTOCOL      "v4.channel.k8s.io"
#define MAX_MESSAGE_SIZE (1024 * 1024)
/* what is pending when reading stops, plus one whole message and its records' headers */
_Static_assert(PENDING_HIGH + MAX_MESSAGE_SIZE + 64 * 1024 <= PENDING_MAX,
               "a message read past the high mark must fit");

struct ck__cri_stream {
    CURL *curl; /* owns the connection */
    int fd;
    wslay_event_context_ptr ws;
    pthread_mutex_t lock; /* everything below */
    unsigned char pre[ANSWER_MAX];
    size_t pre_off, pre_len; /* bytes after the upgrade's answer, before the socket's */
    unsigned char *pending;  /* output records not yet taken */
    size_t pending_off, pending_len, pending_cap;
    bool tty;
    bool attach;          /* an attach: closing after stdin's end is its normal end */
    bool status_seen;     /* the runtime's Status came */
    bool status_made;     /* ours, when it did not */
    bool ended;           /* the connection ended */
    bool shut;            /* the session ended */
    bool stdin_closed;    /* the end of stdin came */
    bool close_queued;    /* we closed to end stdin */
    int64_t last_io_ns;   /* the last output or stdin */
    int64_t stdin_end_ns; /* when the end of stdin came */
    uint64_t in_bytes;    /* stdin sent to the runtime (the log at the end) */
    uint64_t out_bytes;   /* output received from it */
    /* port-forward (ck__cri_stream_open_port_forward): channels 0 data, 1 error */
    bool port_forward;
    unsigned char port_prefix[2]; /* bytes of the port still to drop on each channel */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int ck__ws_upgrade_answer(const char *buf, size_t n, size_t *ret_len, char *msg, size_t size)
{
    const char *end = memmem(buf, n, "\r\n\r\n", 4);
    if (!end) {
        if (n < ANSWER_MAX)
            return 0;
        snprintf(msg, size, "the streaming server's answer has headers over %d bytes", ANSWER_MAX);
        return CK_EIO;
    }
    size_t line = strcspn(buf, "\r\n");
    if (line > (size_t)(end - buf))
        line = (size_t)(end - buf);
    static const char ok[] = "HTTP/1.1 101";
    if (line < sizeof(ok) - 1 || memcmp(buf, ok, sizeof(ok) - 1) != 0 ||
        (line > sizeof(ok) - 1 && buf[sizeof(ok) - 1] != ' ')) {
        snprintf(msg, size, "the streaming server refused the upgrade: %.*s",
                 (int)(line > 200 ? 200 : line), buf);
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
                *p = '?';
        return CK_EIO;
    }
    *ret_len = (size_t)(end - buf) + 4;
    return 1;
}

/* ---- wslay's callbacks (called with the lock held) ---- */

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
    (void)flags;
    struct ck__cri_stream *s = user;
    if (s->pending_len - s->pending_off >= PENDING_HIGH) {
        /* the API server takes the output more slowly than the runtime writes it: leave
           the rest in the socket (TCP pushes back on the runtime) until it is taken; one
           message more (MAX_MESSAGE_SIZE) still fits under PENDING_MAX */
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (s->pre_off < s->pre_len) {
        size_t n = s->pre_len - s->pre_off < len ? s->pre_len - s->pre_off : len;
        memcpy(buf, s->pre + s->pre_off, n);
        s->pre_off += n;
        return (ssize_t)n;
    }
    ssize_t r = recv(s->fd, buf, len, 0);
    if (r > 0)
        return r;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
    else
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    (void)flags;
    struct ck__cri_stream *s = user;
    ssize_t r = send(s->fd, data, len, MSG_NOSIGNAL);
    if (r >= 0)
        return r;
    wslay_event_set_error(ctx, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
                                   ? WSLAY_ERR_WOULDBLOCK
                                   : WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
}

static int ws_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
    (void)ctx, (void)user;
    return gnutls_rnd(GNUTLS_RND_NONCE, buf, len) == 0 ? 0 : -1;
}

/* Appends records of channel ch carrying data (split at CK_EXEC_FRAME_MAX). */
static bool pending_add(struct ck__cri_stream *s, unsigned ch, const unsigned char *data, size_t n)
{
    size_t records = n / CK_EXEC_FRAME_MAX + 1;
    size_t need = s->pending_len + n + records * CK_EXEC_FRAME_HEADER;
    if (need > PENDING_MAX)
        return false;
    if (need > s->pending_cap) {
        if (s->pending_off > 0) {
            memmove(s->pending, s->pending + s->pending_off, s->pending_len - s->pending_off);
            s->pending_len -= s->pending_off;
            need -= s->pending_off;
            s->pending_off = 0;
        }
        if (need > s->pending_cap) {
            size_t cap = need < 64 * 1024 ? 64 * 1024 : need;
            unsigned char *p = realloc(s->pending, cap);
            if (!p)
                return false;
            s->pending = p;
            s->pending_cap = cap;
        }
    }
    do {
        size_t k = n < CK_EXEC_FRAME_MAX ? n : CK_EXEC_FRAME_MAX;
        ck__exec_frame_header(s->pending + s->pending_len, ch, k);
        memcpy(s->pending + s->pending_len + CK_EXEC_FRAME_HEADER, data, k);
        s->pending_len += CK_EXEC_FRAME_HEADER + k;
        data += k;
        n -= k;
    } while (n > 0);
    return true;
}

/*
 * A message of port-forward's streaming server (pkg/cri/streaming/portforward/websocket.go):
 * channel 0 the port's bytes, channel 1 an error text, each led by the port (2 bytes,
 * little-endian), which is dropped. They become records 1 (data) and 3 (error).
 */
static void port_forward_message(struct ck__cri_stream *s,
                                 const struct wslay_event_on_msg_recv_arg *m)
{
    if (m->opcode != WSLAY_BINARY_FRAME || m->msg_length < 1 || m->msg[0] > 1)
        return;
    unsigned ch = m->msg[0];
    const unsigned char *p = m->msg + 1;
    size_t n = m->msg_length - 1;
    size_t skip = n < s->port_prefix[ch] ? n : s->port_prefix[ch];
    s->port_prefix[ch] = (unsigned char)(s->port_prefix[ch] - skip);
    if (n == skip)
        return;
    s->last_io_ns = now_ns();
    if (!pending_add(s, ch == 0 ? CK_EXEC_STDOUT : CK_EXEC_ERROR, p + skip, n - skip))
        s->ended = true; /* the API server stopped taking the output: give up */
}

static void ws_message(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *m,
                       void *user)
{
    (void)ctx;
    struct ck__cri_stream *s = user;
    if (s->port_forward) {
        port_forward_message(s, m);
        return;
    }
    if (m->opcode != WSLAY_BINARY_FRAME || m->msg_length < 1)
        return; /* close and pings are wslay's; v4 binary sends no text */
    unsigned ch = m->msg[0];
    if (ch != CK_EXEC_STDOUT && ch != CK_EXEC_STDERR && ch != CK_EXEC_ERROR)
        return;
    if (m->msg_length == 1 && ch != CK_EXEC_ERROR)
        return; /* the "connected" message */
    if (ch == CK_EXEC_ERROR)
        s->status_seen = true;
    else
        s->out_bytes += m->msg_length - 1;
    s->last_io_ns = now_ns();
    if (!pending_add(s, ch, m->msg + 1, m->msg_length - 1))
        s->ended = true; /* the API server stopped taking the output: give up */
}

/* ---- opening ---- */

/* The request's path and Host from url. 0, or CK_EINVAL with why in msg. */
static int split_url(const char *url, char **ret_host, char **ret_path, char *msg, size_t size)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL;
    int r = CK_EINVAL;
    if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        snprintf(msg, size, "the runtime's streaming URL cannot be read: %.200s", url);
        goto out;
    }
    if (strcmp(scheme, "http") != 0) {
        snprintf(msg, size,
                 "the runtime's streaming server speaks %s; this agent speaks only plain HTTP "
                 "to it (containerd's default, enable_tls_streaming off)",
                 scheme);
        goto out;
    }
    curl_url_get(u, CURLUPART_PORT, &port, 0);
    curl_url_get(u, CURLUPART_QUERY, &query, 0);
    if (asprintf(ret_host, "%s%s%s", host, port ? ":" : "", port ? port : "") < 0) {
        *ret_host = NULL;
        snprintf(msg, size, "out of memory");
        r = CK_ENOMEM;
        goto out;
    }
    if (asprintf(ret_path, "%s%s%s", path, query ? "?" : "", query ? query : "") < 0) {
        free(*ret_host);
        *ret_host = NULL;
        snprintf(msg, size, "out of memory");
        r = CK_ENOMEM;
        goto out;
    }
    r = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_url_cleanup(u);
    return r;
}

/* Sends all of buf within the handshake's time. */
static bool send_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = {fd, POLLOUT, 0};
            if (poll(&p, 1, HANDSHAKE_MS) <= 0)
                return false;
            continue;
        }
        if (w <= 0)
            return false;
        buf += w;
        n -= (size_t)w;
    }
    return true;
}

/* The upgrade: the request, then the answer's status line. 0, or CK_EIO with why. */
static int handshake(struct ck__cri_stream *s, const char *host, const char *path, char *msg,
                     size_t size)
{
    int r;
    unsigned char nonce[16];
    gnutls_datum_t raw = {nonce, sizeof(nonce)}, key = {NULL, 0};
    char *req = NULL;
    if (gnutls_rnd(GNUTLS_RND_NONCE, nonce, sizeof(nonce)) != 0 ||
        gnutls_base64_encode2(&raw, &key) != 0 ||
        asprintf(&req,
                 "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: %.*s\r\nSec-WebSocket-Version: 13\r\n"
                 "Sec-WebSocket-Protocol: " SUBPROTOCOL "\r\n\r\n",
                 path, host, (int)key.size, (const char *)key.data) < 0) {
        req = NULL;
        snprintf(msg, size, "cannot make the upgrade request");
        r = CK_ENOMEM;
        goto out;
    }
    if (!send_all(s->fd, req, strlen(req))) {
        snprintf(msg, size, "cannot send to the runtime's streaming server: %s",
                 strerror(errno ? errno : EPIPE));
        r = CK_EIO;
        goto out;
    }
    size_t have = 0, hlen = 0;
    int64_t deadline = now_ns() + (int64_t)HANDSHAKE_MS * 1000000;
    for (r = 0; r == 0;) {
        struct pollfd p = {s->fd, POLLIN, 0};
        int wait = (int)((deadline - now_ns()) / 1000000);
        if (wait <= 0 || poll(&p, 1, wait) <= 0) {
            snprintf(msg, size, "the runtime's streaming server did not answer the upgrade");
            r = CK_EIO;
            break;
        }
        ssize_t n = recv(s->fd, s->pre + have, sizeof(s->pre) - have, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0) {
            snprintf(msg, size, "the runtime's streaming server closed the connection");
            r = CK_EIO;
            break;
        }
        have += (size_t)n;
        r = ck__ws_upgrade_answer((const char *)s->pre, have, &hlen, msg, size);
    }
    if (r > 0) {
        s->pre_off = hlen; /* what follows the headers is the WebSocket's */
        s->pre_len = have;
        r = 0;
    }
out:
    gnutls_free(key.data);
    free(req);
    return r;
}

int ck__cri_stream_open(const char *url, bool tty, struct ck__cri_stream **ret, char *msg,
                        size_t size)
{
    struct ck__cri_stream *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(msg, size, "out of memory");
        return CK_ENOMEM;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->fd = -1;
    s->tty = tty;
    s->last_io_ns = now_ns();
    int r = CK_EIO;
    curl_socket_t sock = CURL_SOCKET_BAD;
    char *host = NULL, *path = NULL;
    if ((r = split_url(url, &host, &path, msg, size)) < 0)
        goto fail;
    r = CK_EIO;
    if (!(s->curl = curl_easy_init())) {
        snprintf(msg, size, "out of memory");
        r = CK_ENOMEM;
        goto fail;
    }
    curl_easy_setopt(s->curl, CURLOPT_URL, url);
    curl_easy_setopt(s->curl, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)HANDSHAKE_MS);
    CURLcode c = curl_easy_perform(s->curl);
    if (c != CURLE_OK || curl_easy_getinfo(s->curl, CURLINFO_ACTIVESOCKET, &sock) != CURLE_OK ||
        sock == CURL_SOCKET_BAD) {
        snprintf(msg, size, "cannot connect to the runtime's streaming server: %s",
                 curl_easy_strerror(c));
        goto fail;
    }
    s->fd = sock;
    fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
    if ((r = handshake(s, host, path, msg, size)) < 0)
        goto fail;
    struct wslay_event_callbacks cb = {ws_recv, ws_send, ws_genmask, NULL, NULL, NULL, ws_message};
    if (wslay_event_context_client_init(&s->ws, &cb, s) != 0) {
        snprintf(msg, size, "out of memory");
        r = CK_ENOMEM;
        goto fail;
    }
    wslay_event_config_set_max_recv_msg_length(s->ws, MAX_MESSAGE_SIZE);
    free(host);
    free(path);
    *ret = s;
    return 0;
fail:
    free(host);
    free(path);
    ck__cri_stream_free(s);
    return r;
}

int ck__cri_stream_open_port_forward(const char *url, struct ck__cri_stream **ret, char *msg,
                                     size_t size)
{
    int r = ck__cri_stream_open(url, false, ret, msg, size);
    if (r == 0) { /* nothing was read yet: the first message comes in ck__cri_stream_read */
        (*ret)->port_forward = true;
        (*ret)->port_prefix[0] = (*ret)->port_prefix[1] = 2;
    }
    return r;
}

/* ---- the output ---- */

/* Our Status, when the runtime's did not come. */
static void make_status(struct ck__cri_stream *s)
{
    const char *why =
        s->close_queued
            ? "the command's exit code is unknown: the container runtime's exec stream "
              "(" SUBPROTOCOL " over WebSocket) cannot end stdin, so it was closed to end it"
            : "the container runtime's exec stream ended without the command's exit status";
    json_t *st = s->attach && s->close_queued /* as the runtime ends an attach whose stdin ended */
                     ? json_pack("{s:{},s:s}", "metadata", "status", "Success")
                     : json_pack("{s:{},s:s,s:s,s:s}", "metadata", "status", "Failure", "message",
                                 why, "reason", "InternalError");
    char buf[512];
    size_t n = st ? json_dumpb(st, buf, sizeof(buf), JSON_COMPACT) : 0;
    json_decref(st);
    if (n > 0 && n <= sizeof(buf))
        pending_add(s, CK_EXEC_ERROR, (const unsigned char *)buf, n);
    s->status_made = true;
}

/* Sends what wslay has queued, the lock held; gives up for now on a full socket. */
static void flush(struct ck__cri_stream *s)
{
    if (wslay_event_want_write(s->ws) && wslay_event_send(s->ws) != 0)
        s->ended = true;
}

ssize_t ck__cri_stream_read(struct ck__cri_stream *s, char *buf, size_t max)
{
    for (int round = 0; round < 2; round++) {
        pthread_mutex_lock(&s->lock);
        if (s->pending_off < s->pending_len) {
            size_t n = s->pending_len - s->pending_off;
            if (n > max)
                n = max;
            memcpy(buf, s->pending + s->pending_off, n);
            s->pending_off += n;
            if (s->pending_off == s->pending_len)
                s->pending_off = s->pending_len = 0;
            pthread_mutex_unlock(&s->lock);
            return (ssize_t)n;
        }
        if (s->ended || s->shut) {
            bool again = !s->status_seen && !s->status_made && !s->shut && !s->port_forward;
            if (again)
                make_status(s);
            pthread_mutex_unlock(&s->lock);
            if (again)
                continue;
            return -1;
        }
        /* the end of stdin: close once the command has been quiet a while */
        int64_t now = now_ns();
        if (s->stdin_closed && !s->close_queued && now - s->last_io_ns >= QUIET_NS &&
            now - s->stdin_end_ns >= QUIET_NS) {
            wslay_event_queue_close(s->ws, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
            s->close_queued = true;
            flush(s);
        }
        short events = POLLIN | (wslay_event_want_write(s->ws) ? POLLOUT : 0);
        bool pre = s->pre_off < s->pre_len;
        pthread_mutex_unlock(&s->lock);
        struct pollfd p = {s->fd, events, 0};
        bool ready = pre || poll(&p, 1, 1000) > 0;
        if (!ready)
            return 0; /* let the server notice a closed connection */
        pthread_mutex_lock(&s->lock);
        if (!s->shut) {
            if (wslay_event_recv(s->ws) != 0)
                s->ended = true;
            flush(s);
            if (!wslay_event_want_read(s->ws) && !wslay_event_want_write(s->ws))
                s->ended = true; /* the close handshake is over */
        }
        pthread_mutex_unlock(&s->lock);
    }
    return 0;
}

/* ---- the input ---- */

void ck__cri_stream_input(struct ck__cri_stream *s, unsigned ch, const unsigned char *data,
                          size_t n)
{
    pthread_mutex_lock(&s->lock);
    if (ch == CK_EXEC_CLOSE) {
        if (n >= 1 && data[0] == CK_EXEC_STDIN && !s->tty && !s->stdin_closed) {
            s->stdin_closed = true;
            s->stdin_end_ns = now_ns();
        }
        pthread_mutex_unlock(&s->lock);
        return;
    }
    if ((ch != CK_EXEC_STDIN && ch != CK_EXEC_RESIZE) || s->ended || s->shut || s->close_queued ||
        n > CK_EXEC_FRAME_MAX) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    unsigned char msg[CK_EXEC_FRAME_MAX + 1];
    msg[0] = (unsigned char)ch;
    memcpy(msg + 1, data, n);
    struct wslay_event_msg m = {WSLAY_BINARY_FRAME, msg, n + 1};
    if (wslay_event_queue_msg(s->ws, &m) != 0)
        s->ended = true;
    if (ch == CK_EXEC_STDIN)
        s->in_bytes += n;
    s->last_io_ns = now_ns();
    flush(s);
    /* wait until it left, without the lock, so that the output keeps moving meanwhile */
    while (!s->ended && !s->shut && wslay_event_want_write(s->ws)) {
        pthread_mutex_unlock(&s->lock);
        struct pollfd p = {s->fd, POLLOUT, 0};
        poll(&p, 1, 200);
        pthread_mutex_lock(&s->lock);
        flush(s);
    }
    pthread_mutex_unlock(&s->lock);
}

void ck__cri_stream_set_attach(struct ck__cri_stream *s)
{
    pthread_mutex_lock(&s->lock);
    s->attach = true;
    pthread_mutex_unlock(&s->lock);
}

void ck__cri_stream_shutdown(struct ck__cri_stream *s)
{
    pthread_mutex_lock(&s->lock);
    if (!s->shut && s->fd >= 0)
        shutdown(s->fd, SHUT_RDWR); /* the runtime's server ends the stream */
    s->shut = true;
    pthread_mutex_unlock(&s->lock);
}

struct ck__cri_stream *ck__cri_stream_free(struct ck__cri_stream *s)
{
    if (!s)
        return NULL;
    if (s->ws && !s->port_forward) {
        char in[24], out[24];
        snprintf(in, sizeof(in), "%llu", (unsigned long long)s->in_bytes);
        snprintf(out, sizeof(out), "%llu", (unsigned long long)s->out_bytes);
        CK_LOGS(2, "Runtime stream closed", "kind", s->attach ? "attach" : "exec", "stdinBytes", in,
                "outputBytes", out, "runtimeStatus", s->status_seen ? "true" : "false", "by",
                s->ended ? "runtime" : "session");
    }
    if (s->ws)
        wslay_event_context_free(s->ws);
    if (s->curl)
        curl_easy_cleanup(s->curl); /* closes the socket */
    free(s->pending);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
}
