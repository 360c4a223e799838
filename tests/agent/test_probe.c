/*
 * test_probe.c - tests for lib/agent/probe.c: exec probes (exit 0, non-zero, the
 * environment and directory, a timeout), tcpSocket against a listening and a closed
 * port, httpGet against a local libmicrohttpd server (200 succeeds, 500 fails, a named
 * port), grpc against a gRPC health server of the test's own (libnghttp2's server API,
 * on loopback: SERVING, NOT_SERVING, an unknown service, a server without the health
 * service, an answer later than the timeout, a closed port), and the thresholds on a
 * fake clock (initialDelaySeconds, periodSeconds, successThreshold, failureThreshold).
 */
#include "cktest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ckube/agent.h"

static json_t *probe(const char *text)
{
    json_t *p = json_loads(text, 0, NULL);
    assert_non_null(p);
    return p;
}

static bool run(const char *text, const struct ck_probe_target *t, char *msg)
{
    json_t *p = probe(text);
    bool ok = ck_probe_run(p, t, msg, 256);
    json_decref(p);
    return ok;
}

static void test_exec(void **state)
{
    (void)state;
    char *envp[] = {"PATH=/usr/bin:/bin", "WANT=yes", NULL};
    struct ck_probe_target t = {envp, "/tmp", "127.0.0.1", NULL, NULL, NULL};
    char msg[256];
    assert_true(run("{\"exec\": {\"command\": [\"true\"]}}", &t, msg));
    assert_false(run("{\"exec\": {\"command\": [\"sh\", \"-c\", \"exit 4\"]}}", &t, msg));
    assert_non_null(strstr(msg, "4"));
    assert_true(run("{\"exec\": {\"command\": [\"sh\", \"-c\", \"test $WANT = yes && test "
                    "$(pwd) = /tmp\"]}}",
                    &t, msg));
    assert_false(
        run("{\"exec\": {\"command\": [\"sleep\", \"5\"]}, \"timeoutSeconds\": 1}", &t, msg));
    assert_non_null(strstr(msg, "timed out"));
    assert_false(run("{\"exec\": {\"command\": [\"/nonexistent/probe\"]}}", &t, msg));
}

static int listening_socket(int *ret_port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 4), 0);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    *ret_port = ntohs(sa.sin_port);
    return fd;
}

static void test_tcp(void **state)
{
    (void)state;
    int port;
    int fd = listening_socket(&port);
    struct ck_probe_target t = {NULL, NULL, "127.0.0.1", NULL, NULL, NULL};
    char text[128], msg[256];
    snprintf(text, sizeof(text), "{\"tcpSocket\": {\"port\": %d}}", port);
    assert_true(run(text, &t, msg));
    close(fd); /* now nothing listens there */
    assert_false(run(text, &t, msg));
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **req)
{
    (void)cls, (void)method, (void)version, (void)upload, (void)upload_size, (void)req;
    unsigned status = strcmp(url, "/healthz") == 0 ? 200 : 500;
    const char *agent = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "User-Agent");
    if (!agent || strncmp(agent, "kube-probe/", 11) != 0)
        status = 400;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static void test_http(void **state)
{
    (void)state;
    int port;
    int fd = listening_socket(&port);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer,
                                            NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_END);
    assert_non_null(d);
    json_t *ports = json_pack("[{s:s, s:i}]", "name", "http", "containerPort", port);
    struct ck_probe_target t = {NULL, NULL, "127.0.0.1", ports, NULL, NULL};
    char text[160], msg[256];
    snprintf(text, sizeof(text), "{\"httpGet\": {\"path\": \"/healthz\", \"port\": %d}}", port);
    assert_true(run(text, &t, msg));
    assert_true(run("{\"httpGet\": {\"path\": \"/healthz\", \"port\": \"http\"}}", &t, msg));
    snprintf(text, sizeof(text), "{\"httpGet\": {\"path\": \"/broken\", \"port\": %d}}", port);
    assert_false(run(text, &t, msg));
    assert_non_null(strstr(msg, "500"));
    MHD_stop_daemon(d);
    close(fd);
    json_decref(ports);
}

/*
 * A gRPC health server (grpc.health.v1.Health/Check) for the grpc probe, one connection
 * at a time on a thread: service "" or "ok" is SERVING, "down" NOT_SERVING, "unimpl"
 * answers Unimplemented (a server without the health service), "slow" answers after
 * 1.5 s, any other NotFound "unknown service" as grpc-go's health server does. Each
 * call's path and service are recorded for the test to check.
 */
struct health_server {
    int fd;
    atomic_bool stop;
    pthread_t thread;
    char path[128], service[64]; /* the last call's */
    int calls;
    /* the call in flight */
    unsigned char body[256];
    size_t body_len;
    unsigned char out[16];
    size_t out_len, out_sent;
};

struct hs_conn {
    struct health_server *h;
    int fd;
};

static ssize_t conn_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *arg)
{
    (void)s, (void)flags;
    struct hs_conn *c = arg;
    ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
    return n < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : n;
}

static int conn_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                       size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                       void *arg)
{
    (void)s, (void)frame, (void)flags;
    struct hs_conn *c = arg;
    if (namelen == 5 && memcmp(name, ":path", 5) == 0)
        snprintf(c->h->path, sizeof(c->h->path), "%.*s", (int)valuelen, (const char *)value);
    return 0;
}

static int conn_data(nghttp2_session *s, uint8_t flags, int32_t stream, const uint8_t *data,
                     size_t len, void *arg)
{
    (void)s, (void)flags, (void)stream;
    struct hs_conn *c = arg;
    if (c->h->body_len + len <= sizeof(c->h->body)) {
        memcpy(c->h->body + c->h->body_len, data, len);
        c->h->body_len += len;
    }
    return 0;
}

static ssize_t conn_read(nghttp2_session *s, int32_t stream, uint8_t *buf, size_t len,
                         uint32_t *data_flags, nghttp2_data_source *src, void *arg)
{
    (void)src;
    struct hs_conn *c = arg;
    struct health_server *h = c->h;
    size_t n = h->out_len - h->out_sent;
    if (n > len)
        n = len;
    memcpy(buf, h->out + h->out_sent, n);
    h->out_sent += n;
    if (h->out_sent == h->out_len) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv trailer[] = {{(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, 0}};
        nghttp2_submit_trailer(s, stream, trailer, 1);
    }
    return (ssize_t)n;
}

/* A trailers-only answer: the status in the one HEADERS frame. */
static void answer_status(nghttp2_session *s, int32_t stream, const char *status,
                          const char *message)
{
    nghttp2_nv hdrs[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
        {(uint8_t *)"grpc-status", (uint8_t *)status, 11, strlen(status), 0},
        {(uint8_t *)"grpc-message", (uint8_t *)message, 12, strlen(message), 0},
    };
    nghttp2_submit_response(s, stream, hdrs, 4, NULL);
}

static int conn_frame(nghttp2_session *s, const nghttp2_frame *frame, void *arg)
{
    struct hs_conn *c = arg;
    struct health_server *h = c->h;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
        (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA))
        return 0;
    /* the request: a 5-byte prefix, then HealthCheckRequest {1: service} */
    h->service[0] = 0;
    if (h->body_len >= 7 && h->body[5] == 0x0a && h->body[6] < sizeof(h->service) &&
        h->body_len >= 7u + h->body[6])
        snprintf(h->service, sizeof(h->service), "%.*s", h->body[6], (const char *)h->body + 7);
    h->body_len = 0;
    h->calls++;
    int status = strcmp(h->service, "") == 0 || strcmp(h->service, "ok") == 0 ? 1
                 : strcmp(h->service, "down") == 0                            ? 2
                 : strcmp(h->service, "slow") == 0                            ? 1
                                                                              : -1;
    if (strcmp(h->service, "slow") == 0)
        nanosleep(&(struct timespec){1, 500000000}, NULL);
    if (strcmp(h->service, "unimpl") == 0) {
        answer_status(s, frame->hd.stream_id, "12", "unknown service grpc.health.v1.Health");
        return 0;
    }
    if (status < 0) {
        answer_status(s, frame->hd.stream_id, "5", "unknown service");
        return 0;
    }
    unsigned char msg[] = {0, 0, 0, 0, 2, 0x08, (unsigned char)status};
    memcpy(h->out, msg, sizeof(msg));
    h->out_len = sizeof(msg);
    h->out_sent = 0;
    nghttp2_nv hdrs[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
    };
    nghttp2_data_provider provider = {.read_callback = conn_read};
    nghttp2_submit_response(s, frame->hd.stream_id, hdrs, 2, &provider);
    return 0;
}

static void serve_conn(struct health_server *h, int fd)
{
    struct hs_conn c = {h, fd};
    nghttp2_session_callbacks *cbs;
    nghttp2_session *s;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, conn_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, conn_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, conn_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, conn_frame);
    nghttp2_session_server_new(&s, cbs, &c);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
    unsigned char in[4096];
    while (!atomic_load(&h->stop) && nghttp2_session_send(s) == 0 &&
           (nghttp2_session_want_read(s) || nghttp2_session_want_write(s))) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = recv(fd, in, sizeof(in), 0);
        if (n <= 0 || nghttp2_session_mem_recv(s, in, (size_t)n) < 0)
            break;
    }
    nghttp2_session_del(s);
    close(fd);
}

static void *health_main(void *arg)
{
    struct health_server *h = arg;
    while (!atomic_load(&h->stop)) {
        struct pollfd p = {h->fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        int fd = accept(h->fd, NULL, NULL);
        if (fd >= 0)
            serve_conn(h, fd);
    }
    return NULL;
}

static bool grpc_run(int port, const char *service, char *msg)
{
    char text[160];
    snprintf(text, sizeof(text), "{\"grpc\": {\"port\": %d, \"service\": \"%s\"}}", port, service);
    struct ck_probe_target t = {NULL, NULL, "127.0.0.1", NULL, NULL, NULL};
    return run(text, &t, msg);
}

static void test_grpc(void **state)
{
    (void)state;
    struct health_server h = {0};
    int port;
    h.fd = listening_socket(&port);
    assert_int_equal(pthread_create(&h.thread, NULL, health_main, &h), 0);
    char msg[256];

    assert_true(grpc_run(port, "", msg));
    assert_string_equal(h.path, "/grpc.health.v1.Health/Check");
    assert_string_equal(h.service, "");
    assert_true(grpc_run(port, "ok", msg));
    assert_string_equal(h.service, "ok");
    assert_false(grpc_run(port, "down", msg));
    assert_string_equal(msg, "service unhealthy (responded with \"NOT_SERVING\")");
    assert_false(grpc_run(port, "nope", msg));
    assert_string_equal(msg,
                        "error: health rpc probe failed: rpc error: code = NotFound desc = unknown "
                        "service");
    assert_false(grpc_run(port, "unimpl", msg));
    assert_string_equal(msg, "error: this server does not implement the grpc health protocol "
                             "(grpc.health.v1.Health): unknown service grpc.health.v1.Health");
    assert_false(grpc_run(port, "slow", msg));
    assert_string_equal(msg, "timeout: health rpc did not complete within 1s");
    assert_int_equal(h.calls, 6);
    /* an IPv6 pod address goes in brackets, and is dialled (nothing listens at port 1) */
    assert_false(run("{\"grpc\": {\"port\": 1}}",
                     &(struct ck_probe_target){NULL, NULL, "::1", NULL, NULL, NULL}, msg));
    const char *v6 = "error: failed to connect service at \"[::1]:1\": ";
    assert_memory_equal(msg, v6, strlen(v6));
    const char *why = msg + strlen(v6);
    assert_true(
        strcmp(why, strerror(ECONNREFUSED)) == 0 || strcmp(why, strerror(EADDRNOTAVAIL)) == 0 ||
        strcmp(why, strerror(ENETUNREACH)) == 0 || strcmp(why, strerror(EAFNOSUPPORT)) == 0);

    atomic_store(&h.stop, true);
    pthread_join(h.thread, NULL);
    close(h.fd); /* nothing listens there now */
    assert_false(grpc_run(port, "", msg));
    char want[128];
    snprintf(want, sizeof(want), "error: failed to connect service at \"127.0.0.1:%d\": ", port);
    assert_memory_equal(msg, want, strlen(want));
    assert_false(run("{\"grpc\": {\"port\": \"grpc\"}}",
                     &(struct ck_probe_target){NULL, NULL, "127.0.0.1", NULL, NULL, NULL}, msg));
}

static void test_thresholds_on_a_fake_clock(void **state)
{
    (void)state;
    json_t *p = probe("{\"exec\": {\"command\": [\"true\"]}, \"initialDelaySeconds\": 5,"
                      " \"periodSeconds\": 2, \"successThreshold\": 2, \"failureThreshold\": 3}");
    struct ck_probe_state s;
    int64_t t0 = 100 * CK_SEC;
    ck_probe_state_init(&s, p, t0, false);
    assert_int_equal(s.next_at, t0 + 5 * CK_SEC);
    assert_int_equal(ck_probe_state_due(&s, s.next_at, true), 0); /* one success of two */
    assert_int_equal(s.next_at, t0 + 7 * CK_SEC);
    assert_int_equal(ck_probe_state_due(&s, s.next_at, true), 1);
    assert_true(s.result);
    assert_int_equal(ck_probe_state_due(&s, s.next_at, false), 0);
    assert_int_equal(ck_probe_state_due(&s, s.next_at, false), 0);
    assert_true(s.result);
    assert_int_equal(ck_probe_state_due(&s, s.next_at, false), -1); /* the third failure */
    assert_false(s.result);
    assert_int_equal(ck_probe_state_due(&s, s.next_at, true), 0); /* a success resets */
    json_decref(p);
    /* defaults: period 10 s, one success, three failures */
    p = probe("{\"exec\": {\"command\": [\"true\"]}}");
    ck_probe_state_init(&s, p, 0, false);
    assert_int_equal(s.next_at, 0);
    assert_int_equal(ck_probe_state_due(&s, 0, true), 1);
    assert_int_equal(s.next_at, 10 * CK_SEC);
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec),
        cmocka_unit_test(test_tcp),
        cmocka_unit_test(test_http),
        cmocka_unit_test(test_grpc),
        cmocka_unit_test(test_thresholds_on_a_fake_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
