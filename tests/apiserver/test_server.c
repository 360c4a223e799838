/*
 * test_server.c - tests for lib/apiserver/server.c over real HTTP (libcurl):
 * health endpoints plain and verbose, /version, Status 404 for unknown paths,
 * 405 for writes to read-only endpoints, readyz failing once shutdown begins,
 * a single check's path giving the reason the endpoint withholds, a failing
 * check's log lines (once it has failed for a while, not once per probe),
 * the kubeconfig, the listen-address errors (in use, not loopback,
 * malformed), and more than 1,000 connections (watches) served at once.
 */
#include "cktest.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../lib/apiserver/internal.h"
#include "ckube/apiserver.h"
#include "httptest.h"

static char store_dir[] = "/tmp/ckube-test-server-XXXXXX";
static char store_url[sizeof(store_dir) + 32];

static int start_server(void **state)
{
    struct ck_apiserver_config config = {.disable_admission_plugins = "ServiceAccount",
                                         .listen = "127.0.0.1:0",
                                         .store_url = store_url};
    struct ck_apiserver *server = NULL;
    struct ck_err err = {0};
    if (ck_apiserver_start(&config, &server, &err) < 0) {
        fprintf(stderr, "start: %s\n", err.msg);
        return -1;
    }
    *state = server;
    return 0;
}

static int stop_server(void **state)
{
    ck_apiserver_free(*state);
    return 0;
}

static void test_health_endpoints_answer_ok(void **state)
{
    static const char *const paths[] = {"/healthz", "/livez", "/readyz"};
    for (size_t i = 0; i < 3; i++) {
        struct response r;
        http_call(*state, "GET", paths[i], NULL, NULL, &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ok");
        response_release(&r);
    }
}

static void test_verbose_lists_each_check(void **state)
{
    struct response r;
    http_call(*state, "GET", "/readyz?verbose", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "[+]ping ok\n[+]store ok\n[+]shutdown ok\nreadyz check passed\n");
    response_release(&r);
    http_call(*state, "GET", "/livez?verbose=1&exclude=ping", NULL, NULL, &r);
    assert_string_equal(r.body, "[+]ping excluded: ok\n[+]store ok\nlivez check passed\n");
    response_release(&r);
}

static void test_readyz_fails_after_shutdown_begins(void **state)
{
    ck_apiserver_begin_shutdown(*state);
    struct response r;
    http_call(*state, "GET", "/readyz", NULL, NULL, &r);
    assert_int_equal(r.status, 500);
    assert_non_null(strstr(r.body, "[-]shutdown failed"));
    assert_non_null(strstr(r.body, "readyz check failed"));
    response_release(&r);
    http_call(*state, "GET", "/livez", NULL, NULL, &r); /* liveness is unaffected */
    assert_int_equal(r.status, 200);
    response_release(&r);
}

static void expect_body(struct ck_apiserver *server, const char *path, long status,
                        const char *body)
{
    struct response r;
    http_call(server, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, status);
    assert_string_equal(r.body, body);
    response_release(&r);
}

static void test_a_check_of_its_own_says_why(void **state)
{
    expect_body(*state, "/readyz/shutdown", 200, "ok");
    expect_body(*state, "/livez/store", 200, "ok");
    expect_body(*state, "/healthz/ping", 200, "ok");
    ck_apiserver_begin_shutdown(*state);
    /* the public endpoint withholds the reason, as kube-apiserver's does */
    expect_body(*state, "/readyz?verbose", 500,
                "[+]ping ok\n[+]store ok\n[-]shutdown failed: reason withheld\nreadyz check "
                "failed\n");
    expect_body(*state, "/readyz/shutdown", 500,
                "internal server error: process is shutting down\n");
    expect_body(*state, "/readyz/ping", 200, "ok");
    /* a check the endpoint does not run, or no check at all, is not found */
    static const char *const missing[] = {"/livez/shutdown", "/readyz/nosuch", "/readyz/",
                                          "/readyz/shutdown/x", "/readyzz"};
    for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
        struct response r;
        http_call(*state, "GET", missing[i], NULL, NULL, &r);
        assert_int_equal(r.status, 404);
        response_release(&r);
    }
}

/* The lines written to the log since it was set to f. */
static char *log_text(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    assert_true(n >= 0);
    char *text = calloc(1, (size_t)n + 1);
    assert_non_null(text);
    rewind(f);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    return text;
}

static size_t count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void test_a_failing_check_is_logged_once_not_per_probe(void **state)
{
    struct ck_apiserver *server = *state;
    FILE *f = tmpfile();
    assert_non_null(f);
    ck_log_set_output(f);
    ck_apiserver_begin_shutdown(server);
    for (int i = 0; i < 3; i++) /* a new streak: too young to log */
        expect_body(server, "/readyz/shutdown", 500,
                    "internal server error: process is shutting down\n");
    char *text = log_text(f);
    assert_int_equal(count(text, "health check shutdown"), 0);
    free(text);
    /* the streak began long enough ago (the clock injected through its start) */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long now_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    atomic_store(&server->health[CK__HEALTH_SHUTDOWN].failing_since_ms,
                 now_ms - CK__HEALTH_LOG_AFTER_MS - 5000);
    for (int i = 0; i < 3; i++) {
        struct response r;
        http_call(server, "GET", "/readyz", NULL, NULL, &r);
        assert_int_equal(r.status, 500);
        response_release(&r);
    }
    text = log_text(f);
    /* one line for three probes: 15 s and however long the probes took */
    assert_int_equal(count(text, "health check shutdown has been failing for 1"), 1);
    assert_non_null(strstr(text, "s: process is shutting down"));
    free(text);
    ck_log_set_output(NULL);
    fclose(f);
}

static void test_streak_logs_after_a_while_then_rarely_then_recovery(void **state)
{
    (void)state;
    struct ck__health_streak s = {0};
    long long failing = -1, t = 1000000;
    assert_int_equal(ck__health_streak_note(&s, true, t, &failing), CK__HEALTH_QUIET);
    assert_int_equal(ck__health_streak_note(&s, false, t, &failing), CK__HEALTH_QUIET);
    assert_int_equal(ck__health_streak_note(&s, false, t + CK__HEALTH_LOG_AFTER_MS - 1, &failing),
                     CK__HEALTH_QUIET);
    assert_int_equal(ck__health_streak_note(&s, false, t + CK__HEALTH_LOG_AFTER_MS, &failing),
                     CK__HEALTH_FAILING);
    assert_int_equal(failing, CK__HEALTH_LOG_AFTER_MS);
    long long logged = t + CK__HEALTH_LOG_AFTER_MS;
    assert_int_equal(ck__health_streak_note(&s, false, logged + 1, &failing), CK__HEALTH_QUIET);
    assert_int_equal(
        ck__health_streak_note(&s, false, logged + CK__HEALTH_LOG_EVERY_MS - 1, &failing),
        CK__HEALTH_QUIET);
    assert_int_equal(ck__health_streak_note(&s, false, logged + CK__HEALTH_LOG_EVERY_MS, &failing),
                     CK__HEALTH_FAILING);
    assert_int_equal(failing, CK__HEALTH_LOG_AFTER_MS + CK__HEALTH_LOG_EVERY_MS);
    assert_int_equal(ck__health_streak_note(&s, true, t + 100000, &failing), CK__HEALTH_RECOVERED);
    assert_int_equal(failing, 100000);
    /* a pass ends the streak: the next failure starts a new one, and a short one is quiet */
    assert_int_equal(ck__health_streak_note(&s, true, t + 100001, &failing), CK__HEALTH_QUIET);
    assert_int_equal(ck__health_streak_note(&s, false, t + 200000, &failing), CK__HEALTH_QUIET);
    assert_int_equal(ck__health_streak_note(&s, true, t + 200001, &failing), CK__HEALTH_QUIET);
    assert_int_equal(ck__health_streak_note(&s, false, t + 300000, &failing), CK__HEALTH_QUIET);
    assert_int_equal(
        ck__health_streak_note(&s, false, t + 300000 + CK__HEALTH_LOG_AFTER_MS - 1, &failing),
        CK__HEALTH_QUIET);
}

static void test_version_reports_kubernetes_1_32(void **state)
{
    struct response r;
    http_call(*state, "GET", "/version?timeout=32s", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    json_error_t jerr;
    json_t *v = json_loads(r.body, 0, &jerr);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "major")), "1");
    assert_string_equal(json_string_value(json_object_get(v, "minor")), "32");
    assert_non_null(json_string_value(json_object_get(v, "gitVersion")));
    json_decref(v);
    response_release(&r);
}

static void expect_status(struct ck_apiserver *server, const char *method, const char *path,
                          long code, const char *reason)
{
    struct response r;
    http_call(server, method, path, NULL, NULL, &r);
    assert_int_equal(r.status, code);
    json_error_t jerr;
    json_t *s = json_loads(r.body, 0, &jerr);
    assert_non_null(s);
    assert_string_equal(json_string_value(json_object_get(s, "kind")), "Status");
    assert_string_equal(json_string_value(json_object_get(s, "apiVersion")), "v1");
    assert_string_equal(json_string_value(json_object_get(s, "status")), "Failure");
    assert_string_equal(json_string_value(json_object_get(s, "reason")), reason);
    assert_int_equal(json_integer_value(json_object_get(s, "code")), code);
    json_decref(s);
    response_release(&r);
}

static json_t *get_json(struct ck_apiserver *server, const char *path)
{
    struct response r;
    http_call(server, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    json_error_t jerr;
    json_t *v = json_loads(r.body, 0, &jerr);
    response_release(&r);
    assert_non_null(v);
    return v;
}

static void test_discovery_documents(void **state)
{
    json_t *api = get_json(*state, "/api?timeout=32s");
    assert_string_equal(json_string_value(json_object_get(api, "kind")), "APIVersions");
    char address[64];
    snprintf(address, sizeof(address), "127.0.0.1:%u", (unsigned)ck_apiserver_port(*state));
    json_t *cidr = json_array_get(json_object_get(api, "serverAddressByClientCIDRs"), 0);
    assert_string_equal(json_string_value(json_object_get(cidr, "serverAddress")), address);
    json_decref(api);

    json_t *apis = get_json(*state, "/apis");
    assert_string_equal(json_string_value(json_object_get(apis, "kind")), "APIGroupList");
    json_decref(apis);

    json_t *core = get_json(*state, "/api/v1");
    assert_string_equal(json_string_value(json_object_get(core, "groupVersion")), "v1");
    assert_true(json_array_size(json_object_get(core, "resources")) > 4);
    json_decref(core);
    json_t *apps = get_json(*state, "/apis/apps/v1");
    assert_string_equal(json_string_value(json_object_get(apps, "groupVersion")), "apps/v1");
    json_decref(apps);

    expect_status(*state, "GET", "/apis/nosuch.example.com/v1", 404, "NotFound");
    expect_status(*state, "GET", "/api/v2", 404, "NotFound");
}

static void test_unknown_path_is_a_404_status(void **state)
{
    expect_status(*state, "GET", "/api/v1/nothing-here", 404, "NotFound");
}

static void test_writes_to_health_are_405(void **state)
{
    expect_status(*state, "POST", "/healthz", 405, "MethodNotAllowed");
    expect_status(*state, "DELETE", "/version", 405, "MethodNotAllowed");
}

static void test_kubeconfig_points_at_the_bound_port(void **state)
{
    char path[] = "/tmp/ckube-test-kubeconfig-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_write_kubeconfig(*state, path, &err), 0);
    json_error_t jerr;
    json_t *cfg = json_load_file(path, 0, &jerr);
    unlink(path);
    assert_non_null(cfg);
    json_t *cluster =
        json_object_get(json_array_get(json_object_get(cfg, "clusters"), 0), "cluster");
    assert_string_equal(json_string_value(json_object_get(cluster, "server")),
                        ck_apiserver_url(*state));
    assert_string_equal(json_string_value(json_object_get(cfg, "current-context")), "ckube");
    json_decref(cfg);

    assert_int_equal(ck_apiserver_write_kubeconfig(*state, "/nonexistent-dir/kubeconfig", &err),
                     CK_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/kubeconfig"));
}

static void test_address_in_use_is_a_clear_error(void **state)
{
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)ck_apiserver_port(*state));
    struct ck_apiserver_config config = {
        .disable_admission_plugins = "ServiceAccount", .listen = addr, .store_url = store_url};
    struct ck_apiserver *second = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_start(&config, &second, &err), CK_EADDRINUSE);
    assert_null(second);
    assert_non_null(strstr(err.msg, "address already in use"));
}

static void test_bad_listen_addresses_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *addr;
        const char *says;
    } cases[] = {
        {"0.0.0.0:6443", "loopback"},
        {"10.1.2.3:6443", "loopback"},
        {":6443", "no host"},
        {"127.0.0.1", "want HOST:PORT"},
        {"127.0.0.1:99999", "bad port"},
        {"127.0.0.1:http", "bad port"},
        {"[::1:6443", "want [HOST]:PORT"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_apiserver_config config = {.disable_admission_plugins = "ServiceAccount",
                                             .listen = cases[i].addr,
                                             .store_url = store_url};
        struct ck_apiserver *server = NULL;
        struct ck_err err = {0};
        assert_int_equal(ck_apiserver_start(&config, &server, &err), CK_EINVAL);
        assert_null(server);
        if (!strstr(err.msg, cases[i].says))
            fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].addr, err.msg, cases[i].says);
    }
}

/* Connects to the server's port and sends a watch of pods; returns the socket. */
static int open_watch(struct ck_apiserver *server)
{
    const char *url = ck_apiserver_url(server);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)atoi(strrchr(url, ':') + 1))};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    static const char req[] = "GET /api/v1/namespaces/default/pods?watch=1 HTTP/1.1\r\n"
                              "Host: test\r\n\r\n";
    assert_int_equal(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(req) - 1));
    return fd;
}

/* Reads a response's head from fd (a watch answers it before any event). */
static void read_head(int fd, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    while (len + 1 < size && !strstr(buf, "\r\n\r\n")) {
        ssize_t n = recv(fd, buf + len, size - 1 - len, 0);
        assert_true(n > 0);
        len += (size_t)n;
        buf[len] = '\0';
    }
}

/*
 * Watches are connections that stay open: 1,000 watchers plus the clients that
 * write must all be served at once (kube-apiserver has no connection limit;
 * ours once stopped accepting at 1,000, so the next client waited forever).
 */
static void test_more_than_a_thousand_connections_are_served(void **state)
{
    enum { WATCHES = 1100 };
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    const rlim_t need = 2 * WATCHES + 256; /* both ends of each connection are ours */
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
        skip(); /* the hard open-file limit does not allow the test */
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rl.rlim_cur = need;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    int *fds = calloc(WATCHES, sizeof(*fds));
    assert_non_null(fds);
    char head[2048];
    for (int i = 0; i < WATCHES; i++)
        fds[i] = open_watch(*state);
    for (int i = 0; i < WATCHES; i++) {
        read_head(fds[i], head, sizeof(head));
        assert_memory_equal(head, "HTTP/1.1 200", 12);
    }
    struct response r;
    http_call(*state, "GET", "/healthz", NULL, NULL, &r); /* one more client, while all watch */
    assert_int_equal(r.status, 200);
    response_release(&r);
    for (int i = 0; i < WATCHES; i++)
        close(fds[i]);
    free(fds);
}

int main(void)
{
    if (test_store_dir(store_dir, store_url, sizeof(store_url)) < 0)
        return 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_health_endpoints_answer_ok, start_server, stop_server),
        cmocka_unit_test_setup_teardown(test_verbose_lists_each_check, start_server, stop_server),
        cmocka_unit_test_setup_teardown(test_readyz_fails_after_shutdown_begins, start_server,
                                        stop_server),
        cmocka_unit_test_setup_teardown(test_a_check_of_its_own_says_why, start_server,
                                        stop_server),
        cmocka_unit_test_setup_teardown(test_a_failing_check_is_logged_once_not_per_probe,
                                        start_server, stop_server),
        cmocka_unit_test(test_streak_logs_after_a_while_then_rarely_then_recovery),
        cmocka_unit_test_setup_teardown(test_version_reports_kubernetes_1_32, start_server,
                                        stop_server),
        cmocka_unit_test_setup_teardown(test_discovery_documents, start_server, stop_server),
        cmocka_unit_test_setup_teardown(test_unknown_path_is_a_404_status, start_server,
                                        stop_server),
        cmocka_unit_test_setup_teardown(test_writes_to_health_are_405, start_server, stop_server),
        cmocka_unit_test_setup_teardown(test_kubeconfig_points_at_the_bound_port, start_server,
                                        stop_server),
        cmocka_unit_test_setup_teardown(test_address_in_use_is_a_clear_error, start_server,
                                        stop_server),
        cmocka_unit_test(test_bad_listen_addresses_are_refused),
        cmocka_unit_test_setup_teardown(test_more_than_a_thousand_connections_are_served,
                                        start_server, stop_server),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    test_store_remove(store_dir);
    return failed;
}
