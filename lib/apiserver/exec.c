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
 * The leg to the agent is agentleg.c's: a GET whose answer is the output records
 * (ckube/internal/exec_stream.h) and a POST whose chunked upload is the input records;
 * the upload's end ends the session on the agent. A relay thread per session runs the
 * WebSocket with wslay (framing only: the upgraded socket is ours) and moves messages
 * between it and the leg's pipes.
 *
 * Attach is the same relay with no command: the agent's session connects to the
 * container's own stdio instead of starting a process (GET /attach/..., POST
 * /attachInput/ID), and a container that does not run is refused in the kubelet's words
 * for attach (pkg/kubelet: GetAttach, "container C not found in pod NAME_NAMESPACE").
 *
 * Authorization: `create` on pods/exec or pods/attach (authn_authz.c), as kubectl's RBAC
 * expects.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
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
#include "internal.h"
#include "req_mhd.h"

struct exec_relay {
    struct ck__upgraded up; /* first: the wslay callbacks' user data */
    struct ck__leg *leg;    /* the agent's session: its output in, our input out */
    int out_r, in_w;        /* the leg's */
    /* the WebSocket */
    wslay_event_context_ptr ws;
    struct ck__exec_frames frames;
    bool ws_closed;
    uint64_t in_bytes, out_bytes; /* kubectl's input, the output queued to it (the log) */
};

static void relay_free(struct exec_relay *r)
{
    ck__leg_close(r->leg); /* the end of the input ends the session on the agent */
    free(r);
}

static void relay_drop(void *arg)
{
    relay_free(arg);
}

/* ---- the WebSocket (wslay, on the upgraded socket) ---- */

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
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
    r->in_bytes += len;
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
    r->out_bytes += n;
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
    struct wslay_event_callbacks cb = {ck__ws_recv, ck__ws_send, NULL,      NULL,
                                       NULL,        NULL,        ws_message};
    fcntl(r->up.sock, F_SETFL, fcntl(r->up.sock, F_GETFL) | O_NONBLOCK);
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
                {r->up.sock,
                 (short)((wslay_event_want_read(r->ws) ? POLLIN : 0) |
                         (wslay_event_want_write(r->ws) ? POLLOUT : 0)),
                 0},
                {want_out ? r->out_r : -1, POLLIN, 0},
                /* libmicrohttpd does not pass a TLS peer's hang-up on to sock: watch it */
                {r->up.peer_fd, POLLRDHUP, 0},
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
    char in[24], out[24];
    snprintf(in, sizeof(in), "%llu", (unsigned long long)r->in_bytes);
    snprintf(out, sizeof(out), "%llu", (unsigned long long)r->out_bytes);
    CK_LOGS(2, "Stream relay ended", "inputBytes", in, "outputBytes", out, "agentOutput",
            output_open ? "open" : "ended");
    MHD_upgrade_action(r->up.urh, MHD_UPGRADE_ACTION_CLOSE);
    relay_free(r);
    return NULL;
}

/* ---- the request ---- */

struct url_builder {
    CURL *curl;
    char *url;
    size_t size;
    int n;
};

static bool add_command(void *cls, const char *key, const char *value)
{
    struct url_builder *b = cls;
    if (strcmp(key, "command") != 0 || !value || b->n < 0 || (size_t)b->n >= b->size)
        return true;
    char *ev = curl_easy_escape(b->curl, value, 0);
    if (!ev) {
        b->n = -1;
        return false;
    }
    b->n += snprintf(b->url + b->n, b->size - (size_t)b->n, "command=%s&", ev);
    curl_free(ev);
    return true;
}

static bool count_command(void *cls, const char *key, const char *value)
{
    (void)value;
    if (strcmp(key, "command") == 0)
        ++*(int *)cls;
    return true;
}

static bool has_container(const json_t *spec, const char *name)
{
    static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
    bool found = false;
    for (size_t l = 0; l < 3 && !found; l++)
        found = ck__json_find(json_object_get(spec, lists[l]), "name", name) != NULL;
    return found;
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

/* Serves pods/exec, or with attach pods/attach (no command: the container's own stdio). */
static enum ck__res serve_stream(struct ck_apiserver *ctx, struct ck__req *req,
                                 const struct ck__target *t, bool attach)
{
    char msg[700], node_name[254], container[254];
    enum ck__res failed;
    json_t *pod = ck__read_pod(ctx, req, t, node_name, sizeof(node_name), &failed);
    if (!pod)
        return failed;
    const json_t *spec = json_object_get(pod, "spec");
    const char *c = ck__query(req, "container");
    if (!c || !*c) {
        const json_t *cs = json_object_get(spec, "containers");
        if (json_array_size(cs) != 1) {
            snprintf(msg, sizeof(msg), "a container name must be specified for pod %s", t->name);
            json_decref(pod);
            return ck__fail_with(req, "BadRequest", msg);
        }
        c = json_string_value(json_object_get(json_array_get(cs, 0), "name"));
    }
    snprintf(container, sizeof(container), "%s", c ? c : "");
    bool known = has_container(spec, container);
    bool running = container_running(json_object_get(pod, "status"), container);
    json_decref(pod);
    int commands = 0;
    ck__req_queries(req, count_command, &commands);
    bool in = ck__query_bool(req, "stdin"), out = ck__query_bool(req, "stdout"),
         errs = ck__query_bool(req, "stderr"), tty = ck__query_bool(req, "tty");
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
        return ck__fail_with(req, "BadRequest", msg);
    const char *key = ck__req_header(req, "Sec-WebSocket-Key");
    const char *protocol = pick_protocol(ck__req_header(req, "Sec-WebSocket-Protocol"));
    char accept[64];
    if (!ck__header_has(req, "Upgrade", "websocket") || !key) {
        snprintf(msg, sizeof(msg),
                 "Upgrade request required: pods/%s is served over WebSocket "
                 "(v5.channel.k8s.io or v4.channel.k8s.io)",
                 attach ? "attach" : "exec");
        return ck__fail_with(req, "BadRequest", msg);
    }
    if (!protocol)
        return ck__fail_with(req, "BadRequest",
                             "none of the offered WebSocket subprotocols is supported "
                             "(v5.channel.k8s.io, v4.channel.k8s.io)");
    if (!ck__ws_accept_key(key, accept, sizeof(accept)))
        return ck__fail_with(req, "BadRequest", "invalid Sec-WebSocket-Key");
    char base[300];
    if (ck__kubelet_base_url(ctx, node_name, base, sizeof(base), msg, sizeof(msg)) < 0)
        return ck__fail_with(req, "ServiceUnavailable", msg);

    /* the session's id and the agent's two URLs */
    char id[33], url[8192], in_url[400];
    if (ck__leg_session_id(id) < 0)
        return ck__fail_no_memory(req);
    CURL *curl = curl_easy_init();
    struct url_builder b = {curl, url, sizeof(url), -1};
    if (curl) {
        char *ens = curl_easy_escape(curl, t->namespace, 0),
             *epod = curl_easy_escape(curl, t->name, 0),
             *ectr = curl_easy_escape(curl, container, 0);
        if (ens && epod && ectr)
            b.n = snprintf(url, sizeof(url), "%s/%s/%s/%s/%s?stdin=%d&tty=%d&session=%s&", base,
                           attach ? "attach" : "exec", ens, epod, ectr, in, tty, id);
        curl_free(ens);
        curl_free(epod);
        curl_free(ectr);
        if (!attach)
            ck__req_queries(req, add_command, &b);
        curl_easy_cleanup(curl);
    }
    snprintf(in_url, sizeof(in_url), "%s/%s/%s", base, attach ? "attachInput" : "execInput", id);
    if (b.n <= 0 || (size_t)b.n >= sizeof(url))
        return b.n < 0 ? ck__fail_no_memory(req)
                       : ck__fail_with(req, "BadRequest", "the command is too long");
    struct exec_relay *r = calloc(1, sizeof(*r));
    if (!r)
        return ck__fail_no_memory(req);
    r->up = (struct ck__upgraded){MHD_INVALID_SOCKET, -1, NULL, false, relay_main, relay_drop};
    long status;
    int lr = ck__leg_open(ctx, url, &r->leg, &status, msg, sizeof(msg) - 64);
    if (lr < 0) {
        free(r);
        char text[sizeof(msg)];
        snprintf(text, sizeof(text), "%s", msg);
        if (lr == CK_EINVAL) /* the agent's answer, as kube-apiserver passes the kubelet's */
            snprintf(msg, sizeof(msg), "unable to upgrade connection: %.400s", text);
        else if (lr == CK_EIO)
            snprintf(msg, sizeof(msg), "the node agent of %.200s cannot be reached: %.400s",
                     node_name, text);
        return lr == CK_ENOMEM
                   ? ck__fail_no_memory(req)
                   : ck__fail_with(req, lr == CK_EIO ? "ServiceUnavailable" : "BadRequest", msg);
    }
    r->out_r = ck__leg_out_fd(r->leg);
    r->in_w = ck__leg_in_fd(r->leg);
    if (ck__leg_start_input(ctx, r->leg, in_url) < 0) {
        relay_free(r); /* ends the output transfer, and the session on the agent */
        return ck__fail_no_memory(req);
    }

    struct MHD_Response *resp = MHD_create_response_for_upgrade(ck__upgraded_cb, r);
    if (!resp) {
        relay_free(r);
        return ck__fail_no_memory(req);
    }
    MHD_add_response_header(resp, "Upgrade", "websocket");
    MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
    MHD_add_response_header(resp, "Sec-WebSocket-Protocol", protocol);
    enum ck__res ret =
        MHD_queue_response(ck__req_mhd(req), 101, resp) == MHD_YES ? CK__YES : CK__NO;
    MHD_destroy_response(resp);
    if (ret != CK__YES) /* never upgraded: the handler's */
        relay_free(r);
    return ret;
}

enum ck__res ck__serve_pod_exec(struct ck_apiserver *ctx, struct ck__req *req,
                                const struct ck__target *t)
{
    return serve_stream(ctx, req, t, false);
}

enum ck__res ck__serve_pod_attach(struct ck_apiserver *ctx, struct ck__req *req,
                                  const struct ck__target *t)
{
    return serve_stream(ctx, req, t, true);
}
