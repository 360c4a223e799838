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
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/grpc_health.h"
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
    assert_int_equal(health_server_start(&h, listening_socket(&port)), 0);
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

    health_server_stop(&h); /* nothing listens there now */
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
