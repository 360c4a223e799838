/*
 * test_paths.c - request paths a hostile client sends: an encoded NUL or '/'
 * inside a segment, empty segments, names Kubernetes' path segment
 * validation refuses, NUL in the query. Each is answered before any lookup
 * (route.c ck__path_check, ck__check_name_segment): before, "x%00y" was
 * decoded into "x" and `DELETE .../pods/x%00y` deleted pod x.
 *
 * Raw requests, as a client library would clean some of these paths up.
 */
#include "cktest.h"

#include "hostile/hostile.h"

static const char pod_x[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"},"
                            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}";

/* METHOD target on a fresh connection; returns the whole answer (caller frees). */
static char *raw_request(struct ck_apiserver *server, const char *method, const char *target)
{
    int fd = raw_connect(server);
    assert_true(fd >= 0);
    char req[2048];
    int n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
                     method, target);
    assert_true(raw_send(fd, req, (size_t)n));
    bool closed = false;
    char *answer = raw_read_until_close(fd, 10, &closed);
    close(fd);
    assert_non_null(answer);
    return answer;
}

/* The answer's status code and, when want_message, its Status message. */
static void expect(struct ck_apiserver *server, const char *method, const char *target,
                   const char *want_status, const char *want_message)
{
    char *answer = raw_request(server, method, target);
    if (strncmp(answer, want_status, strlen(want_status)) != 0)
        fail_msg("%s %s: want %s, got %.40s", method, target, want_status, answer);
    json_t *status = raw_json_body(answer);
    if (want_message) {
        assert_non_null(status);
        assert_string_equal(json_string_value(json_object_get(status, "kind")), "Status");
        assert_string_equal(json_string_value(json_object_get(status, "message")), want_message);
    }
    json_decref(status);
    free(answer);
}

static void test_encoded_nul_does_not_truncate_a_name(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-paths-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    struct response r;
    http_call(server, "POST", "/api/v1/namespaces/default/pods", pod_x, NULL, &r);
    assert_int_equal(r.status, 201);
    response_release(&r);

    expect(server, "DELETE", "/api/v1/namespaces/default/pods/x%00y", "HTTP/1.1 404", NULL);
    expect(server, "GET", "/api/v1/namespaces/default/pods/x%00", "HTTP/1.1 404", NULL);
    expect(server, "GET", "/api/v1/namespaces/def%00ault/pods/x", "HTTP/1.1 404", NULL);
    expect(server, "GET", "/api/v1%00/namespaces", "HTTP/1.1 404", NULL); /* discovery */
    expect(server, "GET", "/api/v1/namespaces/default/pods/x%2Fy", "HTTP/1.1 404", NULL);
    expect(server, "GET", "/api/v1/namespaces/default/pods/x%2fstatus", "HTTP/1.1 404", NULL);

    http_call(server, "GET", "/api/v1/namespaces/default/pods/x", NULL, NULL, &r);
    assert_int_equal(r.status, 200); /* still there */
    response_release(&r);
    test_server_stop(server, dir);
}

static void test_empty_segments_are_not_found(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-paths-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    expect(server, "GET", "/api/v1/pods", "HTTP/1.1 200", NULL); /* the control */
    expect(server, "GET", "/api/v1/pods/", "HTTP/1.1 200", NULL);
    expect(server, "GET", "//api//v1/pods", "HTTP/1.1 404", NULL);
    expect(server, "GET", "/api//v1/pods", "HTTP/1.1 404", NULL);
    expect(server, "GET", "//api/v1/namespaces/default/pods", "HTTP/1.1 404", NULL);
    expect(server, "GET", "/api/v1/namespaces//pods", "HTTP/1.1 404", NULL);
    test_server_stop(server, dir);
}

static void test_names_kubernetes_refuses_are_bad_requests(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-paths-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    expect(server, "GET", "/api/v1/namespaces/default/pods/a%25b", "HTTP/1.1 400",
           "Name parameter invalid: \"a%b\": may not contain '%'");
    expect(server, "DELETE", "/api/v1/namespaces/default/pods/..", "HTTP/1.1 400",
           "Name parameter invalid: \"..\": may not be '..'");
    expect(server, "GET", "/api/v1/namespaces/default/pods/.", "HTTP/1.1 400",
           "Name parameter invalid: \".\": may not be '.'");
    expect(server, "GET", "/api/v1/namespaces/default/pods/%zz", "HTTP/1.1 400",
           "invalid URL escape in the request path");
    expect(server, "GET", "/api/v1/namespaces/default/pods/a%2", "HTTP/1.1 400", NULL);
    expect(server, "GET", "/api/v1/pods?labelSelector=a%00b", "HTTP/1.1 400",
           "invalid NUL character in the request query");
    test_server_stop(server, dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encoded_nul_does_not_truncate_a_name),
        cmocka_unit_test(test_empty_segments_are_not_found),
        cmocka_unit_test(test_names_kubernetes_refuses_are_bad_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
