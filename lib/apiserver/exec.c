/*
 * exec.c - pods/{name}/exec and pods/{name}/attach: `kubectl exec` and `kubectl attach`
 * (and `kubectl run -i`) relayed to the pod's node agent.
 *
 * kubectl 1.32 asks for a WebSocket (RFC 6455) with the subprotocol v5.channel.k8s.io
 * (then v4): each message is one channel byte and data (0 stdin, 1 stdout, 2 stderr,
 * 3 error: a Status, 4 resize, 255 close). The checks come first and fail with a Status
 * as kube-apiserver's (no pod 404; no host, a bad container, no command 400); then the
 * agent's session is started and only then is the connection upgraded
 * (libmicrohttpd's MHD_create_response_for_upgrade, with or without TLS), so that an
 * agent that refuses (a container that does not run) is a Status too.
 *
 * Design of the leg to the agent: both ends are HTTP libraries and nothing here speaks
 * HTTP itself. libcurl has no WebSocket in Debian 12, so the leg is two streaming
 * libcurl requests over HTTPS with the kubelet client certificate: a GET whose answer is
 * the output records (ckube/internal/exec_stream.h) and a POST whose chunked upload is
 * the input records; the upload's end ends the session on the agent. A relay thread per
 * session runs the WebSocket with wslay (framing only: the upgraded socket is ours) and
 * moves messages between it and the two requests' pipes.
 *
 * Attach is the same relay with no command: the agent's session connects to the
 * container's own stdio instead of starting a process (GET /attach/..., POST
 * /attachInput/ID), and a container that does not run is refused in the kubelet's words
 * for attach (pkg/kubelet: GetAttach, "container C not found in pod NAME_NAMESPACE").
 *
 * Authorization: `create` on pods/exec or pods/attach (authn_authz.c), as kubectl's RBAC
 * expects.
 */
#define _GNU_SOURCE /* pipe2 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "ckube/internal/exec_stream.h"
#include "internal.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct exec_relay {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int refs; /* the handler/relay, the output transfer, the input transfer */
    /* the output: GET, its body into out_pipe */
    CURL *out_curl;
    long out_status; /* the agent's HTTP status; -1: no answer */
    char err[CURL_ERROR_SIZE];
    char first[512]; /* the start of an error's body */
    size_t first_len;
    bool out_done;
    int out_w, out_r;
    /* the input: POST, its body from in_pipe */
    CURL *in_curl;
    struct curl_slist *in_headers;
    int in_r, in_w;
    char in_url[2048];
    /* the WebSocket */
    MHD_socket sock;
    int peer_fd; /* the client's own socket (under TLS, sock is a socketpair's end) */
    struct MHD_UpgradeResponseHandle *urh;
    wslay_event_context_ptr ws;
    struct ck__exec_frames frames;
    bool ws_closed;
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void relay_release(struct exec_relay *r)
{
    pthread_mutex_lock(&r->lock);
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->lock);
    if (!last)
        return;
    close_fd(&r->out_w);
    close_fd(&r->out_r);
    close_fd(&r->in_r);
    close_fd(&r->in_w);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
    free(r);
}

/* ---- the agent's answer (the output) ---- */

static size_t out_header(char *buf, size_t size, size_t n, void *arg)
{
    struct exec_relay *r = arg;
    long code = 0;
    if (size * n > 9 && strncmp(buf, "HTTP/", 5) == 0 && sscanf(buf, "%*s %ld", &code) == 1 &&
        code != 100) {
        pthread_mutex_lock(&r->lock);
        if (r->out_status == 0)
            r->out_status = code;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
    }
    return size * n;
}

static size_t out_body(char *buf, size_t size, size_t n, void *arg)
{
    struct exec_relay *r = arg;
    size_t len = size * n, done = 0;
    if (r->out_status != 200) {
        size_t room = sizeof(r->first) - 1 - r->first_len;
        size_t k = len < room ? len : room;
        memcpy(r->first + r->first_len, buf, k);
        r->first_len += k;
        return len;
    }
    while (done < len) {
        ssize_t w = write(r->out_w, buf + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0; /* the relay went away: end the transfer */
        done += (size_t)w;
    }
    return len;
}

static void *output_main(void *arg)
{
    struct exec_relay *r = arg;
    CURLcode rc = curl_easy_perform(r->out_curl);
    curl_easy_cleanup(r->out_curl);
    pthread_mutex_lock(&r->lock);
    if (r->out_status == 0 || rc != CURLE_OK)
        r->out_status = r->out_status ? r->out_status : -1;
    r->out_curl = NULL;
    r->out_done = true;
    close_fd(&r->out_w); /* the relay sees the end */
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    relay_release(r);
    return NULL;
}

/* ---- the upload (the input) ---- */

static size_t in_read(char *buf, size_t size, size_t n, void *arg)
{
    struct exec_relay *r = arg;
    for (;;) {
        ssize_t got = read(r->in_r, buf, size * n);
        if (got < 0 && errno == EINTR)
            continue;
        return got > 0 ? (size_t)got : 0; /* 0: the relay closed it, the end */
    }
}

static size_t discard(char *buf, size_t size, size_t n, void *arg)
{
    (void)buf;
    (void)arg;
    return size * n;
}

static void *input_main(void *arg)
{
    struct exec_relay *r = arg;
    curl_easy_perform(r->in_curl);
    curl_easy_cleanup(r->in_curl);
    curl_slist_free_all(r->in_headers);
    relay_release(r);
    return NULL;
}

/* ---- the WebSocket (wslay, on the upgraded socket) ---- */

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *arg)
{
    (void)flags;
    struct exec_relay *r = arg;
    ssize_t n = recv(r->sock, buf, len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n <= 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return n;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *arg)
{
    (void)flags;
    struct exec_relay *r = arg;
    ssize_t n = send(r->sock, data, len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n < 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return n;
}

/* Writes all of data into the input pipe; false when the upload is gone. */
static bool write_input(struct exec_relay *r, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(r->in_w, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* A message from kubectl: its channel byte and data become one input record. */
static void ws_message(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *m,
                       void *arg)
{
    (void)ctx;
    struct exec_relay *r = arg;
    if (m->opcode == WSLAY_CONNECTION_CLOSE)
        return; /* wslay answers it; want_read turns false */
    if ((m->opcode != WSLAY_BINARY_FRAME && m->opcode != WSLAY_TEXT_FRAME) || m->msg_length < 1)
        return;
    size_t len = m->msg_length - 1;
    for (size_t off = 0; off < len || off == 0; off += CK_EXEC_FRAME_MAX) {
        size_t k = len - off < CK_EXEC_FRAME_MAX ? len - off : CK_EXEC_FRAME_MAX;
        unsigned char h[CK_EXEC_FRAME_HEADER];
        ck__exec_frame_header(h, m->msg[0], k);
        if (!write_input(r, h, sizeof(h)) || !write_input(r, m->msg + 1 + off, k)) {
            r->ws_closed = true;
            return;
        }
        if (len == 0)
            break;
    }
}

/* Queues a message: the channel byte, then the payload. */
static void ws_queue(struct exec_relay *r, unsigned channel, const unsigned char *p, size_t n)
{
    unsigned char *msg = malloc(n + 1);
    if (!msg)
        return;
    msg[0] = (unsigned char)channel;
    memcpy(msg + 1, p, n);
    struct wslay_event_msg m = {WSLAY_BINARY_FRAME, msg, n + 1};
    wslay_event_queue_msg(r->ws, &m); /* wslay copies it */
    free(msg);
}

/* Moves the agent's output records that arrived into WebSocket messages; false at its end. */
static bool pump_output(struct exec_relay *r)
{
    unsigned char buf[16384];
    ssize_t n = read(r->out_r, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (n <= 0)
        return false;
    size_t off = 0;
    while (off < (size_t)n) {
        off += ck__exec_frames_append(&r->frames, buf + off, (size_t)n - off);
        unsigned ch;
        const unsigned char *p;
        size_t len;
        int k;
        while ((k = ck__exec_frames_next(&r->frames, &ch, &p, &len)) > 0)
            if (ch == CK_EXEC_STDOUT || ch == CK_EXEC_STDERR || ch == CK_EXEC_ERROR)
                ws_queue(r, ch, p, len);
        if (k < 0)
            return false;
    }
    return true;
}

static void *relay_main(void *arg)
{
    struct exec_relay *r = arg;
    struct wslay_event_callbacks cb = {ws_recv, ws_send, NULL, NULL, NULL, NULL, ws_message};
    fcntl(r->sock, F_SETFL, fcntl(r->sock, F_GETFL) | O_NONBLOCK);
    fcntl(r->out_r, F_SETFL, fcntl(r->out_r, F_GETFL) | O_NONBLOCK);
    bool output_open = true, close_due = false;
    int64_t closing_deadline = 0;
    if (wslay_event_context_server_init(&r->ws, &cb, r) == 0) {
        while (!r->ws_closed && (wslay_event_want_read(r->ws) || wslay_event_want_write(r->ws))) {
            /* the close frame goes once every message before it is out: wslay sends
             * control frames first and nothing after a close */
            if (close_due && !wslay_event_want_write(r->ws)) {
                close_due = false;
                wslay_event_queue_close(r->ws, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
                closing_deadline = monotonic_ns() + 10000000000LL;
            }
            bool want_out = output_open && wslay_event_get_queued_msg_count(r->ws) < 64;
            struct pollfd p[3] = {
                {r->sock,
                 (short)((wslay_event_want_read(r->ws) ? POLLIN : 0) |
                         (wslay_event_want_write(r->ws) ? POLLOUT : 0)),
                 0},
                {want_out ? r->out_r : -1, POLLIN, 0},
                /* libmicrohttpd does not pass a TLS peer's hang-up on to sock: watch it */
                {r->peer_fd, POLLRDHUP, 0},
            };
            /* after our close frame, kubectl's answer says it has read everything:
             * closing sooner could drop what is still on its way */
            if (!output_open && !close_due && !wslay_event_want_write(r->ws) &&
                (!wslay_event_want_read(r->ws) || monotonic_ns() > closing_deadline))
                break;
            if (poll(p, 3, 1000) < 0 && errno != EINTR)
                break;
            if (p[2].revents & (POLLRDHUP | POLLHUP | POLLERR))
                break; /* kubectl went away */
            if (p[0].revents & (POLLIN | POLLHUP | POLLERR) && wslay_event_recv(r->ws) != 0)
                break;
            if (p[1].revents && output_open && !pump_output(r))
                output_open = false, close_due = true; /* the session ended: say goodbye */
            if (wslay_event_want_write(r->ws) && wslay_event_send(r->ws) != 0)
                break;
        }
        wslay_event_context_free(r->ws);
    }
    /* the end of the input ends the session on the agent; the output stops */
    close_fd(&r->in_w);
    close_fd(&r->out_r);
    MHD_upgrade_action(r->urh, MHD_UPGRADE_ACTION_CLOSE);
    relay_release(r);
    return NULL;
}

static void upgraded(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra_in,
                     size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    (void)req_cls;
    (void)extra_in;
    (void)extra_in_size; /* kubectl waits for the 101 before it writes */
    struct exec_relay *r = cls;
    r->sock = sock;
    r->urh = urh;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    r->peer_fd = info ? info->connect_fd : -1;
    pthread_t t;
    if (pthread_create(&t, NULL, relay_main, r) != 0) {
        close_fd(&r->in_w);
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        relay_release(r);
        return;
    }
    pthread_detach(t);
}

/* ---- the request ---- */

struct url_builder {
    CURL *curl;
    char *url;
    size_t size;
    int n;
};

static enum MHD_Result add_command(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    struct url_builder *b = cls;
    if (strcmp(key, "command") != 0 || !value || b->n < 0 || (size_t)b->n >= b->size)
        return MHD_YES;
    char *ev = curl_easy_escape(b->curl, value, 0);
    if (!ev) {
        b->n = -1;
        return MHD_NO;
    }
    b->n += snprintf(b->url + b->n, b->size - (size_t)b->n, "command=%s&", ev);
    curl_free(ev);
    return MHD_YES;
}

static enum MHD_Result count_command(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    (void)value;
    if (strcmp(key, "command") == 0)
        ++*(int *)cls;
    return MHD_YES;
}

static bool has_container(const json_t *spec, const char *name)
{
    static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
    for (size_t l = 0; l < 3; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            const char *n = json_string_value(json_object_get(c, "name"));
            if (n && strcmp(n, name) == 0)
                return true;
        }
    }
    return false;
}

/* Whether the pod's status says the container runs. */
static bool container_running(const json_t *status, const char *name)
{
    static const char *const lists[] = {"containerStatuses", "initContainerStatuses",
                                        "ephemeralContainerStatuses"};
    for (size_t l = 0; l < 3; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(status, lists[l]), i, c)
        {
            const char *n = json_string_value(json_object_get(c, "name"));
            if (n && strcmp(n, name) == 0)
                return json_object_get(json_object_get(c, "state"), "running") != NULL;
        }
    }
    return false;
}

/* The first subprotocol kubectl offers that we speak (v5, then v4), or NULL. */
static const char *pick_protocol(const char *offered)
{
    static const char *const ours[] = {"v5.channel.k8s.io", "v4.channel.k8s.io"};
    for (size_t i = 0; offered && i < 2; i++) {
        const char *p = offered;
        size_t len = strlen(ours[i]);
        while ((p = strstr(p, ours[i]))) {
            bool start = p == offered || p[-1] == ' ' || p[-1] == ',';
            bool end = p[len] == '\0' || p[len] == ',' || p[len] == ' ';
            if (start && end)
                return ours[i];
            p += len;
        }
    }
    return NULL;
}

/* Sec-WebSocket-Accept of key (RFC 6455 4.2.2); false when it cannot be made. */
static bool accept_key(const char *key, char *out, size_t size)
{
    char text[256];
    unsigned char digest[20];
    if (strlen(key) > 128)
        return false;
    snprintf(text, sizeof(text), "%s%s", key, WS_GUID);
    if (gnutls_hash_fast(GNUTLS_DIG_SHA1, text, strlen(text), digest) < 0)
        return false;
    char *b64 = ck_base64_encode(digest, sizeof(digest));
    if (!b64 || strlen(b64) >= size) {
        free(b64);
        return false;
    }
    snprintf(out, size, "%s", b64);
    free(b64);
    return true;
}

static bool header_has(struct MHD_Connection *conn, const char *name, const char *token)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
    return v && strcasestr(v, token);
}

static struct exec_relay *relay_new(void)
{
    struct exec_relay *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->out_w = r->out_r = r->in_r = r->in_w = -1;
    r->sock = MHD_INVALID_SOCKET;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    int o[2], i[2];
    if (pipe2(o, O_CLOEXEC) < 0) {
        relay_release((r->refs = 1, r));
        return NULL;
    }
    r->out_r = o[0];
    r->out_w = o[1];
    if (pipe2(i, O_CLOEXEC) < 0) {
        relay_release((r->refs = 1, r));
        return NULL;
    }
    r->in_r = i[0];
    r->in_w = i[1];
    return r;
}

/* Serves pods/exec, or with attach pods/attach (no command: the container's own stdio). */
static enum MHD_Result serve_stream(struct ck_apiserver *ctx, struct MHD_Connection *conn,
                                    const struct ck__target *t, bool attach)
{
    struct ck_err err = {0};
    char msg[700];
    json_t *pod = ck__read_object(ctx, t->kind, t->namespace, t->name, &err);
    if (!pod)
        return err.code ? ck__fail(conn, &err) : ck__fail_no_memory(conn);
    const json_t *spec = json_object_get(pod, "spec");
    char node_name[254], container[254];
    snprintf(node_name, sizeof(node_name), "%s",
             json_string_value(json_object_get(spec, "nodeName")) ?: "");
    const char *c = ck__query(conn, "container");
    if (!c || !*c) {
        const json_t *cs = json_object_get(spec, "containers");
        if (json_array_size(cs) != 1) {
            snprintf(msg, sizeof(msg), "a container name must be specified for pod %s", t->name);
            json_decref(pod);
            return ck__fail_with(conn, "BadRequest", msg);
        }
        c = json_string_value(json_object_get(json_array_get(cs, 0), "name"));
    }
    snprintf(container, sizeof(container), "%s", c ? c : "");
    bool known = has_container(spec, container);
    bool running = container_running(json_object_get(pod, "status"), container);
    json_decref(pod);
    int commands = 0;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, count_command, &commands);
    bool in = ck__query_bool(conn, "stdin"), out = ck__query_bool(conn, "stdout"),
         errs = ck__query_bool(conn, "stderr"), tty = ck__query_bool(conn, "tty");
    if (!known)
        snprintf(msg, sizeof(msg), "container %s is not valid for pod %s", container, t->name);
    else if (!*node_name)
        snprintf(msg, sizeof(msg), "pod %s does not have a host assigned", t->name);
    else if (!running && attach) /* the agent's answer, before kubectl's SPDY fallback */
        snprintf(msg, sizeof(msg),
                 "unable to upgrade connection: container %s not found in pod %s_%s", container,
                 t->name, t->namespace);
    else if (!running)
        snprintf(msg, sizeof(msg), "unable to upgrade connection: container not found (\"%s\")",
                 container);
    else if (commands == 0 && !attach)
        snprintf(msg, sizeof(msg), "you must specify at least 1 command");
    else if (!in && !out && !errs)
        snprintf(msg, sizeof(msg), "you must specify at least 1 of stdin, stdout, stderr");
    else if (tty && errs)
        snprintf(msg, sizeof(msg), "tty and stderr cannot both be true");
    else
        msg[0] = 0;
    if (msg[0])
        return ck__fail_with(conn, "BadRequest", msg);
    const char *key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Key");
    const char *protocol =
        pick_protocol(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Protocol"));
    char accept[64];
    if (!header_has(conn, "Upgrade", "websocket") || !key) {
        snprintf(msg, sizeof(msg),
                 "Upgrade request required: pods/%s is served over WebSocket "
                 "(v5.channel.k8s.io or v4.channel.k8s.io)",
                 attach ? "attach" : "exec");
        return ck__fail_with(conn, "BadRequest", msg);
    }
    if (!protocol)
        return ck__fail_with(conn, "BadRequest",
                             "none of the offered WebSocket subprotocols is supported "
                             "(v5.channel.k8s.io, v4.channel.k8s.io)");
    if (!accept_key(key, accept, sizeof(accept)))
        return ck__fail_with(conn, "BadRequest", "invalid Sec-WebSocket-Key");
    char base[300];
    if (ck__kubelet_base_url(ctx, node_name, base, sizeof(base), msg, sizeof(msg)) < 0)
        return ck__fail_with(conn, "ServiceUnavailable", msg);

    /* the session's id and the agent's two URLs */
    unsigned char id_bytes[16];
    char id[33];
    if (gnutls_rnd(GNUTLS_RND_NONCE, id_bytes, sizeof(id_bytes)) < 0)
        return ck__fail_no_memory(conn);
    for (size_t i = 0; i < sizeof(id_bytes); i++)
        snprintf(id + 2 * i, 3, "%02x", id_bytes[i]);
    struct exec_relay *r = relay_new();
    CURL *oc = r ? curl_easy_init() : NULL;
    CURL *ic = oc ? curl_easy_init() : NULL;
    char url[8192];
    struct url_builder b = {oc, url, sizeof(url), 0};
    if (ic) {
        char *ens = curl_easy_escape(oc, t->namespace, 0), *epod = curl_easy_escape(oc, t->name, 0),
             *ectr = curl_easy_escape(oc, container, 0);
        if (ens && epod && ectr)
            b.n = snprintf(url, sizeof(url), "%s/%s/%s/%s/%s?stdin=%d&tty=%d&session=%s&", base,
                           attach ? "attach" : "exec", ens, epod, ectr, in, tty, id);
        else
            b.n = -1;
        curl_free(ens);
        curl_free(epod);
        curl_free(ectr);
        if (!attach)
            MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_command, &b);
        snprintf(r->in_url, sizeof(r->in_url), "%s/%s/%s", base,
                 attach ? "attachInput" : "execInput", id);
    }
    if (!ic || b.n <= 0 || (size_t)b.n >= sizeof(url)) {
        if (oc)
            curl_easy_cleanup(oc);
        if (ic)
            curl_easy_cleanup(ic);
        if (r)
            relay_release((r->refs = 1, r));
        return b.n < 0 || !ic ? ck__fail_no_memory(conn)
                              : ck__fail_with(conn, "BadRequest", "the command is too long");
    }
    r->out_curl = oc;
    r->in_curl = ic;
    curl_easy_setopt(oc, CURLOPT_URL, url);
    curl_easy_setopt(oc, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(oc, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(oc, CURLOPT_HEADERFUNCTION, out_header);
    curl_easy_setopt(oc, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(oc, CURLOPT_WRITEFUNCTION, out_body);
    curl_easy_setopt(oc, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(oc, CURLOPT_ERRORBUFFER, r->err);
    ck__kubelet_curl_tls(ctx, oc);
    r->refs = 2; /* this handler, then the relay; the output transfer */
    pthread_t thread;
    if (pthread_create(&thread, NULL, output_main, r) != 0) {
        curl_easy_cleanup(ic);
        curl_easy_cleanup(oc);
        r->refs = 1;
        relay_release(r);
        return ck__fail_no_memory(conn);
    }
    pthread_detach(thread);
    pthread_mutex_lock(&r->lock);
    while (r->out_status == 0)
        pthread_cond_wait(&r->cond, &r->lock);
    long status = r->out_status;
    if (status != 200) {
        while (!r->out_done)
            pthread_cond_wait(&r->cond, &r->lock);
        pthread_mutex_unlock(&r->lock);
        if (status < 0)
            snprintf(msg, sizeof(msg), "the node agent of %s cannot be reached: %s", node_name,
                     r->err[0] ? r->err : "no answer");
        else
            snprintf(msg, sizeof(msg), "unable to upgrade connection: %.*s",
                     (int)strcspn(r->first, "\n"), r->first);
        curl_easy_cleanup(ic);
        relay_release(r);
        return ck__fail_with(conn, status < 0 ? "ServiceUnavailable" : "BadRequest", msg);
    }
    pthread_mutex_unlock(&r->lock);

    /* the input: its upload ends when the relay closes in_w */
    struct curl_slist *headers = curl_slist_append(NULL, "Transfer-Encoding: chunked");
    headers = headers ? curl_slist_append(headers, "Expect:") : NULL;
    headers = headers ? curl_slist_append(headers, "Content-Type: application/octet-stream") : NULL;
    curl_easy_setopt(ic, CURLOPT_URL, r->in_url);
    curl_easy_setopt(ic, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(ic, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(ic, CURLOPT_POST, 1L);
    curl_easy_setopt(ic, CURLOPT_HTTPHEADER, headers);
    r->in_headers = headers; /* the input thread frees it */
    curl_easy_setopt(ic, CURLOPT_READFUNCTION, in_read);
    curl_easy_setopt(ic, CURLOPT_READDATA, r);
    curl_easy_setopt(ic, CURLOPT_WRITEFUNCTION, discard);
    ck__kubelet_curl_tls(ctx, ic);
    pthread_mutex_lock(&r->lock);
    r->refs++;
    pthread_mutex_unlock(&r->lock);
    if (!headers || pthread_create(&thread, NULL, input_main, r) != 0) {
        curl_slist_free_all(headers);
        curl_easy_cleanup(ic);
        relay_release(r);
        close_fd(&r->out_r); /* ends the output transfer, and the session on the agent */
        relay_release(r);
        return ck__fail_no_memory(conn);
    }
    pthread_detach(thread);

    struct MHD_Response *resp = MHD_create_response_for_upgrade(upgraded, r);
    if (!resp) {
        close_fd(&r->in_w);
        close_fd(&r->out_r);
        relay_release(r);
        return ck__fail_no_memory(conn);
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
    MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
    MHD_add_response_header(resp, "Sec-WebSocket-Protocol", protocol);
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
    MHD_destroy_response(resp);
    if (ret != MHD_YES) { /* never upgraded: the handler's reference goes */
        close_fd(&r->in_w);
        close_fd(&r->out_r);
        relay_release(r);
    }
    return ret;
}

enum MHD_Result ck__serve_pod_exec(struct ck_apiserver *ctx, struct MHD_Connection *conn,
                                   const struct ck__target *t)
{
    return serve_stream(ctx, conn, t, false);
}

enum MHD_Result ck__serve_pod_attach(struct ck_apiserver *ctx, struct MHD_Connection *conn,
                                     const struct ck__target *t)
{
    return serve_stream(ctx, conn, t, true);
}
