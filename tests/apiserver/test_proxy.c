/*
 * test_proxy.c - tests for lib/apiserver/proxy.c and the pure parts of
 * upstream_proxy.c: the `scheme:name:port` segment (apimachinery's
 * SplitSchemeNamePort), the addresses Kubernetes will not proxy to, where a pod, a
 * service (by port name and number, ready endpoints only) and a node are reached with
 * Kubernetes' errors, which header fields pass, and a redirect's Location rewritten under
 * the proxy path.
 */
#include "cktest.h"

#include <string.h>

#include "../../lib/apiserver/internal.h"

static json_t *load(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

static void test_split_id(void **state)
{
    (void)state;
    static const struct {
        const char *id, *scheme, *name, *port;
    } good[] = {
        {"web", "", "web", ""},           {"web:8080", "", "web", "8080"},
        {"web:http", "", "web", "http"},  {"https:web:443", "https", "web", "443"},
        {"http:web:", "http", "web", ""}, {":web:80", "", "web", "80"},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct ck__proxy_id id;
        if (ck__proxy_split_id(good[i].id, &id) != 0)
            fail_msg("%s did not split", good[i].id);
        assert_string_equal(id.scheme, good[i].scheme);
        assert_string_equal(id.name, good[i].name);
        assert_string_equal(id.port, good[i].port);
    }
    static const char *const bad[] = {"", ":80", "a:b:c:d", "ftp:web:80", "https::80"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ck__proxy_id id;
        if (ck__proxy_split_id(bad[i], &id) != CK_EINVAL)
            fail_msg("%s split", bad[i]);
    }
}

static void test_addresses_allowed(void **state)
{
    (void)state;
    static const char *const yes[] = {"10.0.0.5", "192.168.1.1", "8.8.8.8", "2001:db8::1",
                                      "fd00::5"};
    static const char *const no[] = {
        "127.0.0.1", "127.1.2.3", "0.0.0.0", "169.254.0.1", "224.0.0.1", "255.255.255.255",
        "::1",       "::",        "fe80::1", "ff02::1",     "",          "web",
        "10.0.0"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        if (!ck__proxy_ip_allowed(yes[i]))
            fail_msg("%s refused", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        if (ck__proxy_ip_allowed(no[i]))
            fail_msg("%s allowed", no[i]);
    assert_false(ck__proxy_ip_allowed(NULL));
}

static void test_pod_location(void **state)
{
    (void)state;
    json_t *pod = load("{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"ports\":"
                       "[{\"containerPort\":8080},{\"containerPort\":9090}]}]},"
                       "\"status\":{\"podIPs\":[{\"ip\":\"10.1.2.3\"},{\"ip\":\"fd00::3\"}]}}");
    static const struct {
        const char *id, *url;
    } cases[] = {
        {"web", "http://10.1.2.3:8080"},
        {"web:81", "http://10.1.2.3:81"},
        {"https:web:8443", "https://10.1.2.3:8443"},
        {"http:web:", "http://10.1.2.3:8080"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck__proxy_id id;
        struct ck_err err = {0};
        char url[128];
        assert_int_equal(ck__proxy_split_id(cases[i].id, &id), 0);
        assert_int_equal(ck__proxy_pod_location(pod, &id, url, sizeof(url), &err), 0);
        assert_string_equal(url, cases[i].url);
    }
    json_decref(pod);

    /* no declared port: the address alone; IPv6 in brackets */
    struct ck__proxy_id id;
    struct ck_err err = {0};
    char url[128];
    pod = load("{\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
               "\"status\":{\"podIPs\":[{\"ip\":\"fd00::3\"}]}}");
    ck__proxy_split_id("web", &id);
    assert_int_equal(ck__proxy_pod_location(pod, &id, url, sizeof(url), &err), 0);
    assert_string_equal(url, "http://[fd00::3]");
    json_decref(pod);

    /* a pod without an address, or on the loopback: 400 address not allowed */
    static const char *const refused[] = {"{\"spec\":{},\"status\":{}}",
                                          "{\"status\":{\"podIPs\":[{\"ip\":\"127.0.0.1\"}]}}"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        pod = load(refused[i]);
        assert_int_equal(ck__proxy_pod_location(pod, &id, url, sizeof(url), &err), CK_EINVAL);
        assert_int_equal(err.http_status, 400);
        assert_string_equal(err.msg, "address not allowed");
        ck_err_release(&err);
        json_decref(pod);
    }
}

#define SERVICE                                                                                    \
    "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"ports\":[{\"name\":\"http\",\"port\":80},"       \
    "{\"name\":\"admin\",\"port\":9000}]}}"

static void test_service_location(void **state)
{
    (void)state;
    json_t *svc = load(SERVICE);
    /* another service's slice, a slice whose only endpoint is not ready, then a good one */
    json_t *slices = load(
        "[{\"metadata\":{\"labels\":{\"kubernetes.io/service-name\":\"other\"}},"
        "\"ports\":[{\"name\":\"http\",\"port\":1}],\"endpoints\":[{\"addresses\":[\"10.9.9.9\"]}]},"
        "{\"metadata\":{\"labels\":{\"kubernetes.io/service-name\":\"web\"}},"
        "\"ports\":[{\"name\":\"http\",\"port\":8080},{\"name\":\"admin\",\"port\":9090}],"
        "\"endpoints\":[{\"addresses\":[\"10.0.0.1\"],\"conditions\":{\"ready\":false}}]},"
        "{\"metadata\":{\"labels\":{\"kubernetes.io/service-name\":\"web\"}},"
        "\"ports\":[{\"name\":\"http\",\"port\":8080}],"
        "\"endpoints\":[{\"addresses\":[\"10.0.0.2\"],\"conditions\":{\"ready\":true}},"
        "{\"addresses\":[\"10.0.0.3\"]}]}]");
    static const struct {
        const char *id, *url_a, *url_b; /* either endpoint may be picked */
    } cases[] = {
        {"web:http", "http://10.0.0.2:8080", "http://10.0.0.3:8080"},
        {"web:80", "http://10.0.0.2:8080", "http://10.0.0.3:8080"},
        {"https:web:http", "https://10.0.0.2:8080", "https://10.0.0.3:8080"},
    };
    for (unsigned seed = 0; seed < 6; seed++) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            struct ck__proxy_id id;
            struct ck_err err = {0};
            char url[128];
            assert_int_equal(ck__proxy_split_id(cases[i].id, &id), 0);
            assert_int_equal(ck__proxy_service_location(svc, slices, cases[i].id, &id, seed, url,
                                                        sizeof(url), &err),
                             0);
            if (strcmp(url, cases[i].url_a) != 0 && strcmp(url, cases[i].url_b) != 0)
                fail_msg("%s (seed %u): %s", cases[i].id, seed, url);
        }
    }
    /* the errors, with Kubernetes' words */
    static const struct {
        const char *id, *msg;
    } errors[] = {
        {"web:81", "no service port 81 found for service \"web\""},
        {"web:admin", "no endpoints available for service \"web:admin\""}, /* none ready */
        {"web:9000", "no endpoints available for service \"web:9000\""},
        {"web", "no endpoints available for service \"web\""}, /* no unnamed port */
    };
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        struct ck__proxy_id id;
        struct ck_err err = {0};
        char url[128];
        assert_int_equal(ck__proxy_split_id(errors[i].id, &id), 0);
        assert_true(ck__proxy_service_location(svc, slices, errors[i].id, &id, 0, url, sizeof(url),
                                               &err) < 0);
        assert_int_equal(err.http_status, 503);
        assert_string_equal(err.msg, errors[i].msg);
        ck_err_release(&err);
    }
    json_decref(slices);
    /* no slices of the service at all */
    slices = load("[]");
    struct ck__proxy_id id;
    struct ck_err err = {0};
    char url[128];
    ck__proxy_split_id("web:http", &id);
    assert_true(
        ck__proxy_service_location(svc, slices, "web:http", &id, 0, url, sizeof(url), &err) < 0);
    assert_int_equal(err.http_status, 503);
    assert_string_equal(err.msg, "no endpoints available for service \"web\"");
    ck_err_release(&err);
    json_decref(slices);
    json_decref(svc);
}

static void test_node_location(void **state)
{
    (void)state;
    json_t *node = load("{\"status\":{\"addresses\":[{\"type\":\"Hostname\",\"address\":\"n1\"},"
                        "{\"type\":\"InternalIP\",\"address\":\"10.0.0.9\"}],"
                        "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}}}}");
    static const struct {
        const char *id, *url;
        bool kubelet;
    } cases[] = {
        {"n1", "https://10.0.0.9:10250", true},
        {"n1:10250", "https://10.0.0.9:10250", true},
        {"http:n1:10250", "https://10.0.0.9:10250", true},
        {"n1:9100", "http://10.0.0.9:9100", false},
        {"https:n1:9100", "https://10.0.0.9:9100", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck__proxy_id id;
        struct ck_err err = {0};
        char url[128];
        bool kubelet = !cases[i].kubelet;
        assert_int_equal(ck__proxy_split_id(cases[i].id, &id), 0);
        assert_int_equal(ck__proxy_node_location(node, &id, url, sizeof(url), &kubelet, &err), 0);
        assert_string_equal(url, cases[i].url);
        assert_true(kubelet == cases[i].kubelet);
    }
    json_decref(node);
    /* a node with no address yet */
    node = load("{\"status\":{}}");
    struct ck__proxy_id id;
    struct ck_err err = {0};
    char url[128];
    bool kubelet;
    ck__proxy_split_id("n1", &id);
    assert_true(ck__proxy_node_location(node, &id, url, sizeof(url), &kubelet, &err) < 0);
    assert_int_equal(err.http_status, 503);
    ck_err_release(&err);
    json_decref(node);
}

static void test_header_fields(void **state)
{
    (void)state;
    static const char *const request_kept[] = {"Accept", "Content-Type", "Cookie",
                                               "Host",   "User-Agent",   "X-Custom"};
    static const char *const request_dropped[] = {"Authorization",     "authorization",
                                                  "Impersonate-User",  "Impersonate-Extra-scopes",
                                                  "Connection",        "Upgrade",
                                                  "Transfer-Encoding", "Content-Length",
                                                  "Keep-Alive",        "Proxy-Authorization"};
    for (size_t i = 0; i < sizeof(request_kept) / sizeof(request_kept[0]); i++)
        if (!ck__upstream_forwards_request_header(request_kept[i], false) ||
            !ck__upstream_forwards_request_header(request_kept[i], true))
            fail_msg("%s dropped", request_kept[i]);
    for (size_t i = 0; i < sizeof(request_dropped) / sizeof(request_dropped[0]); i++)
        if (ck__upstream_forwards_request_header(request_dropped[i], false) ||
            ck__upstream_forwards_request_header(request_dropped[i], true))
            fail_msg("%s passed", request_dropped[i]);
    /* a client's identity headers pass to a pod, never through a front proxy */
    static const char *const identity[] = {"X-Remote-User", "x-remote-group",
                                           "X-Remote-Extra-Scopes"};
    for (size_t i = 0; i < sizeof(identity) / sizeof(identity[0]); i++) {
        assert_true(ck__upstream_forwards_request_header(identity[i], false));
        assert_false(ck__upstream_forwards_request_header(identity[i], true));
    }
    assert_true(ck__upstream_forwards_response_header("Content-Type"));
    assert_true(ck__upstream_forwards_response_header("Set-Cookie"));
    assert_false(ck__upstream_forwards_response_header("Access-Control-Allow-Origin"));
    assert_false(ck__upstream_forwards_response_header("Connection"));
    assert_false(ck__upstream_forwards_response_header("Content-Length"));
}

static void test_location_rewrite(void **state)
{
    (void)state;
    const char *prefix = "/api/v1/namespaces/default/pods/web:8080/proxy";
    static const struct {
        const char *location, *want; /* NULL: left as it is */
    } cases[] = {
        {"/login?next=/", "/api/v1/namespaces/default/pods/web:8080/proxy/login?next=/"},
        {"http://10.0.0.2:8080/a/b", "/api/v1/namespaces/default/pods/web:8080/proxy/a/b"},
        {"https://api.example:6443/x", "/api/v1/namespaces/default/pods/web:8080/proxy/x"},
        {"/api/v1/namespaces/default/pods/web:8080/proxy/already",
         "/api/v1/namespaces/default/pods/web:8080/proxy/already"},
        {"http://elsewhere.example/a", NULL},
        {"relative/page", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[512];
        int r = ck__upstream_location(cases[i].location, "10.0.0.2:8080", "api.example:6443",
                                      prefix, buf, sizeof(buf));
        if (!cases[i].want) {
            if (r == 0)
                fail_msg("%s rewritten to %s", cases[i].location, buf);
            continue;
        }
        if (r != 0)
            fail_msg("%s not rewritten", cases[i].location);
        assert_string_equal(buf, cases[i].want);
    }
}

static void test_routes(void **state)
{
    (void)state;
    static const struct {
        const char *path, *kind, *name;
        unsigned skip;
    } cases[] = {
        {"/api/v1/namespaces/default/pods/web:80/proxy", "Pod", "web:80", 7},
        {"/api/v1/namespaces/default/pods/web/proxy/", "Pod", "web", 7},
        {"/api/v1/namespaces/default/pods/web/proxy/a/b/c/d/e/f/g", "Pod", "web", 7},
        {"/api/v1/namespaces/default/services/https:web:443/proxy/x", "Service", "https:web:443",
         7},
        {"/api/v1/nodes/n1/proxy/metrics/resource", "Node", "n1", 5},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck__target t;
        if (ck__route(cases[i].path, &t) != 0)
            fail_msg("%s did not route", cases[i].path);
        assert_string_equal(t.kind->kind, cases[i].kind);
        assert_string_equal(t.name, cases[i].name);
        assert_string_equal(t.subresource, "proxy");
        assert_int_equal(t.proxy_skip, cases[i].skip);
    }
    /* only proxy takes a path after it */
    struct ck__target t;
    assert_int_equal(ck__route("/api/v1/namespaces/default/pods/web/status/x", &t), CK_ENOENT);
    assert_int_equal(ck__route("/api/v1/namespaces/default/pods/web/exec/a/b/c", &t), CK_ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_id),         cmocka_unit_test(test_addresses_allowed),
        cmocka_unit_test(test_pod_location),     cmocka_unit_test(test_service_location),
        cmocka_unit_test(test_node_location),    cmocka_unit_test(test_header_fields),
        cmocka_unit_test(test_location_rewrite), cmocka_unit_test(test_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
