/*
 * portforward.c - `kubectl port-forward` on the node agent: one forwarded connection to a
 * port of a pod, as the kubelet's /portForward endpoint serves it (pkg/kubelet/server and
 * pkg/kubelet/cri/streaming/portforward).
 *
 * The API server (lib/apiserver/portforward.c) holds kubectl's SPDY streams and opens,
 * for each connection kubectl forwards, two HTTP requests served here by libmicrohttpd:
 *
 *   GET  /portForward/{namespace}/{pod}?port=N&session=ID
 *        connects to the port; the answer is records (ckube/internal/exec_stream.h): 1
 *        the port's bytes, 3 an error text (the runtime's, when it fails after the
 *        answer began). A failure known before (no such pod, nothing listening) is a
 *        non-200 answer whose body is the text for kubectl's error stream, in the
 *        kubelet's words ("error forwarding port N to pod P, uid U: ...").
 *   POST /portForwardInput/ID
 *        the upload is the bytes for the port; its end is the end of kubectl's half.
 *
 * Where the port is depends on the runtime (ops->port_forward_url): the process runtime's
 * pods share the host's network, so the agent connects to 127.0.0.1:N itself and the end
 * of the upload is a shutdown(SHUT_WR); a CRI runtime forwards inside the pod's sandbox
 * through its streaming server (the URL its PortForward call answers), which cri_stream.c
 * speaks as a WebSocket client (channels 0 data and 1 error for the one port).
 *
 * Threading: libmicrohttpd runs a thread per connection: the GET's reader and the POST's
 * upload run on different threads and share the session by reference (the table, the
 * output, the input).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ckube/internal/exec_stream.h"
#include "ckube/internal/util.h"
#include "internal.h"

struct pf_session {
    char id[CK_EXEC_SESSION_ID_MAX + 1];
    int fd;                     /* the process runtime's connection to the port, or -1 */
    struct ck__cri_stream *cri; /* a CRI runtime's stream, or NULL */
    atomic_bool ended;
    int refs; /* the table (until session_end), the output, the input; sessions_lock */
};

struct pf_input {
    struct ck__agent_req req; /* first: logserver.c's request_done calls req.done */
    struct pf_session *s;
    bool clean_end; /* the upload came to its end */
};

static pthread_mutex_t sessions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ck__strmap sessions; /* id -> struct pf_session */

static void session_release(struct pf_session *s)
{
    pthread_mutex_lock(&sessions_lock);
    bool last = --s->refs == 0;
    pthread_mutex_unlock(&sessions_lock);
    if (!last)
        return;
    if (s->fd >= 0)
        close(s->fd);
    ck__cri_stream_free(s->cri);
    free(s);
}

/* Takes the session out of the table (its id is found no more) and ends the connection. */
static void session_end(struct pf_session *s)
{
    if (atomic_exchange(&s->ended, true))
        return;
    pthread_mutex_lock(&sessions_lock);
    ck__strmap_remove(&sessions, s->id);
    pthread_mutex_unlock(&sessions_lock);
    if (s->cri)
        ck__cri_stream_shutdown(s->cri);
    else
        shutdown(s->fd, SHUT_RDWR);
    session_release(s); /* the table's */
}

static struct pf_session *session_find(const char *id)
{
    pthread_mutex_lock(&sessions_lock);
    struct ck__strmap_entry *e = ck__strmap_find(&sessions, id);
    struct pf_session *s = e ? e->value : NULL;
    if (s)
        s->refs++;
    pthread_mutex_unlock(&sessions_lock);
    return s;
}

/* ---- the output: the GET's answer ---- */

static ssize_t read_output(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct pf_session *s = cls;
    if (max <= CK_EXEC_FRAME_HEADER)
        return 0;
    if (s->cri) {
        ssize_t n = ck__cri_stream_read(s->cri, buf, max);
        return n >= 0 ? n : MHD_CONTENT_READER_END_OF_STREAM;
    }
    struct pollfd p = {s->fd, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0)
        return 0; /* let the server notice a closed connection */
    size_t room = max - CK_EXEC_FRAME_HEADER;
    if (room > CK_EXEC_FRAME_MAX)
        room = CK_EXEC_FRAME_MAX;
    ssize_t n = recv(s->fd, buf + CK_EXEC_FRAME_HEADER, room, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (n <= 0)
        return MHD_CONTENT_READER_END_OF_STREAM; /* the port closed (or reset) it */
    ck__exec_frame_header((unsigned char *)buf, CK_EXEC_STDOUT, (size_t)n);
    return CK_EXEC_FRAME_HEADER + n;
}

static void output_done(void *cls)
{
    struct pf_session *s = cls;
    session_end(s);
    session_release(s); /* the output's */
}

/* Connects to 127.0.0.1:port: the socket, or -1 with errno. */
static int connect_local(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* The runtime's streaming URL with the port as its query asks for it. */
static char *with_port(const char *url, int port)
{
    char *out = NULL;
    if (asprintf(&out, "%s%cport=%d", url, strchr(url, '?') ? '&' : '?', port) < 0)
        return NULL;
    return out;
}

enum MHD_Result ck__agent_port_forward_start(struct ck_agent *a, struct MHD_Connection *conn,
                                             const char *url)
{
    char ns[254], pod[254], uid[64] = "", msg[1400], why[700];
    if (sscanf(url, "/portForward/%253[^/]/%253[^/]", ns, pod) != 2)
        return ck__agent_answer(conn, MHD_HTTP_NOT_FOUND, "not found\n");
    const char *id = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "session");
    const char *port_text = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "port");
    char *end = NULL;
    long port = port_text ? strtol(port_text, &end, 10) : 0;
    if (!id || !*id || strlen(id) > CK_EXEC_SESSION_ID_MAX)
        return ck__agent_answer(conn, MHD_HTTP_BAD_REQUEST, "a session id is required\n");
    if (!port_text || !*port_text || *end || port < 1 || port > 65535)
        return ck__agent_answer(conn, MHD_HTTP_BAD_REQUEST, "a port from 1 to 65535 is required\n");
    struct pf_session *s = calloc(1, sizeof(*s));
    if (!s)
        return ck__agent_answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    snprintf(s->id, sizeof(s->id), "%s", id);
    s->fd = -1;
    char *stream_url = NULL;
    struct ck_err err = {0};
    int r =
        ck__agent_pod_port_forward_url(a, ns, pod, (int)port, uid, sizeof(uid), &stream_url, &err);
    if (r == CK_ENOENT) { /* the kubelet's words (server.go getPortForward) */
        free(s);
        return ck__agent_answer(conn, MHD_HTTP_NOT_FOUND, "pod does not exist");
    }
    why[0] = '\0';
    if (r == CK_EINVAL) { /* the host's network */
        if ((s->fd = connect_local((int)port)) < 0)
            snprintf(why, sizeof(why), "failed to connect to localhost:%ld: %s", port,
                     strerror(errno));
    } else if (r < 0) {
        snprintf(why, sizeof(why), "%s", err.msg[0] ? err.msg : "the runtime refused");
    } else {
        char *full = with_port(stream_url, (int)port);
        if (!full)
            snprintf(why, sizeof(why), "out of memory");
        else if (ck__cri_stream_open_port_forward(full, &s->cri, msg, sizeof(msg)) < 0)
            snprintf(why, sizeof(why), "%.600s", msg);
        free(full);
    }
    free(stream_url);
    if (why[0]) {
        free(s);
        snprintf(msg, sizeof(msg), "error forwarding port %ld to pod %s, uid %s: %s", port, pod,
                 uid, why);
        return ck__agent_answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
    }
    s->refs = 2; /* the table, the output */
    bool created = false;
    pthread_mutex_lock(&sessions_lock);
    struct ck__strmap_entry *e = ck__strmap_put(&sessions, s->id, s, &created);
    pthread_mutex_unlock(&sessions_lock);
    if (!e || !created) {
        s->refs = 1;
        session_release(s);
        return ck__agent_answer(conn, e ? MHD_HTTP_CONFLICT : MHD_HTTP_INTERNAL_SERVER_ERROR,
                                e ? "the session exists\n" : "out of memory\n");
    }
    CK_LOGS(2, "Port forward started", "pod", pod, "port", port_text, "runtime",
            s->cri ? "cri" : "process");
    return ck__agent_answer_stream(conn, "application/octet-stream", 64 * 1024, read_output, s,
                                   output_done);
}

/* ---- the input: the POST's upload ---- */

/* Writes all of data to the port, giving up when the session ended. */
static void write_input(struct pf_session *s, const unsigned char *data, size_t n)
{
    if (s->cri) {
        for (size_t off = 0; off < n; off += CK_EXEC_FRAME_MAX) {
            size_t k = n - off < CK_EXEC_FRAME_MAX ? n - off : CK_EXEC_FRAME_MAX;
            ck__cri_stream_input(s->cri, CK_EXEC_STDIN, data + off, k);
        }
        return;
    }
    while (n > 0 && !atomic_load(&s->ended)) {
        ssize_t w = send(s->fd, data, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = {s->fd, POLLOUT, 0};
            poll(&p, 1, 200);
            continue;
        }
        if (w <= 0)
            return; /* the port's side closed */
        data += w;
        n -= (size_t)w;
    }
}

static void input_done(struct ck__agent_req *req)
{
    struct pf_input *in = (struct pf_input *)req;
    if (!in->clean_end) /* the API server went away mid-upload */
        session_end(in->s);
    session_release(in->s);
    free(in);
}

enum MHD_Result ck__agent_port_forward_input(struct MHD_Connection *conn, const char *url,
                                             const char *upload, size_t *upload_size, void **req)
{
    struct pf_input *in = *req;
    if (!in) {
        struct pf_session *s = session_find(url + strlen("/portForwardInput/"));
        if (!s)
            return ck__agent_answer(conn, MHD_HTTP_NOT_FOUND, "no such session\n");
        if (!(in = calloc(1, sizeof(*in)))) {
            session_release(s);
            return ck__agent_answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
        }
        in->req.done = input_done;
        in->s = s;
        *req = in;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        write_input(in->s, (const unsigned char *)upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    /* kubectl's half ended: so does ours towards the port */
    in->clean_end = true;
    if (in->s->cri)
        ck__cri_stream_input(in->s->cri, CK_EXEC_CLOSE, (const unsigned char *)"\0", 1);
    else
        shutdown(in->s->fd, SHUT_WR);
    return ck__agent_answer(conn, MHD_HTTP_OK, "");
}
