/*
 * test_framing.c - requests whose framing or size the HTTP layer must refuse,
 * answered as a Kubernetes Status in JSON with the right code (server.c
 * header_acceptable): two Content-Length headers, Transfer-Encoding with
 * Content-Length, two Transfer-Encodings or one other than chunked (request
 * smuggling through a proxy that reads the framing differently), a request
 * line or header block over the limit (414, 431). Before, duplicate
 * Content-Length was accepted and oversized headers got libmicrohttpd's HTML.
 */
#include "cktest.h"

#include "hostile/hostile.h"

static const char pod[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                          "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}";

/* Sends request raw and checks the answer's code and that it is a Status with that code. */
static void expect_status(struct ck_apiserver *server, const char *request, size_t len,
                          int want_code)
{
    int fd = raw_connect(server);
    assert_true(fd >= 0);
    assert_true(raw_send(fd, request, len));
    bool closed = false;
    char *answer = raw_read_until_close(fd, 10, &closed);
    close(fd);
    assert_non_null(answer);
    char want[32];
    snprintf(want, sizeof(want), "HTTP/1.1 %d", want_code);
    if (strncmp(answer, want, strlen(want)) != 0)
        fail_msg("want %s, got %.60s", want, answer);
    assert_true(closed); /* the connection is not reused after doubtful framing */
    assert_non_null(strstr(answer, "Content-Type: application/json"));
    json_t *status = raw_json_body(answer);
    assert_non_null(status);
    assert_string_equal(json_string_value(json_object_get(status, "kind")), "Status");
    assert_string_equal(json_string_value(json_object_get(status, "status")), "Failure");
    assert_int_equal(json_integer_value(json_object_get(status, "code")), want_code);
    json_decref(status);
    free(answer);
}

static void post_with(struct ck_apiserver *server, const char *framing, int want_code)
{
    char request[4096];
    int n = snprintf(request, sizeof(request),
                     "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: test\r\n"
                     "Content-Type: application/json\r\n%s\r\n%s",
                     framing, pod);
    expect_status(server, request, (size_t)n, want_code);
}

static void test_conflicting_framing_is_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-framing-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    char cl[64];
    snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", strlen(pod));
    char two_cl[160];
    snprintf(two_cl, sizeof(two_cl), "%s%s", cl, cl);
    post_with(server, two_cl, 400); /* even when both agree */
    char cl_and_other[160];
    snprintf(cl_and_other, sizeof(cl_and_other), "%sContent-Length: 5\r\n", cl);
    post_with(server, cl_and_other, 400);
    char te_and_cl[160];
    snprintf(te_and_cl, sizeof(te_and_cl), "Transfer-Encoding: chunked\r\n%s", cl);
    post_with(server, te_and_cl, 400);
    post_with(server, "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400);
    post_with(server, "Transfer-Encoding: gzip\r\n", 501);

    /* nothing was created by any of them */
    struct response r;
    http_call(server, "GET", "/api/v1/namespaces/default/pods/p", NULL, NULL, &r);
    assert_int_equal(r.status, 404);
    response_release(&r);
    test_server_stop(server, dir);
}

static void test_oversized_header_is_a_status(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-framing-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    size_t big = 40 * 1024; /* over the 32 KiB limit, within libmicrohttpd's pool */
    char *request = malloc(big + 256);
    assert_non_null(request);

    int n = snprintf(request, 256, "GET /readyz HTTP/1.1\r\nHost: test\r\nX-Big: ");
    memset(request + n, 'a', big);
    memcpy(request + (size_t)n + big, "\r\n\r\n", 4);
    expect_status(server, request, (size_t)n + big + 4, 431);

    n = snprintf(request, 256, "GET /api/v1/pods?labelSelector=");
    memset(request + n, 'a', big);
    int tail = snprintf(request + (size_t)n + big, 64, " HTTP/1.1\r\nHost: test\r\n\r\n");
    expect_status(server, request, (size_t)n + big + (size_t)tail, 414);
    free(request);

    struct response r; /* and the server still answers */
    http_call(server, "GET", "/readyz", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    test_server_stop(server, dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conflicting_framing_is_refused),
        cmocka_unit_test(test_oversized_header_is_a_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
