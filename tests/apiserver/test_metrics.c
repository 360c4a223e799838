/*
 * test_metrics.c - /metrics: request counts by verb/resource/scope/code, the
 * duration histogram (watches excluded), stored objects per resource.
 */
#include "cktest.h"

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-metrics-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h" /* uses dir and server */

/* The value of the exposition line that starts with series (labels included). */
static double sample(const char *text, const char *series)
{
    char needle[1024];
    snprintf(needle, sizeof(needle), "\n%s ", series);
    const char *at = strstr(text, needle);
    if (!at)
        fail_msg("no sample %s in:\n%s", series, text);
    return strtod(at + strlen(needle), NULL);
}

/* One /metrics answer. */
static char *scrape_once(void)
{
    struct response r;
    http_call(server, "GET", "/metrics", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "text/plain; version=0.0.4"));
    free(r.headers);
    return r.body;
}

/*
 * /metrics once it counts `settled` (a series line with its value): a request
 * is counted when its connection thread finishes it, which may be just after
 * the client has its answer and sent the scrape to another thread.
 */
static char *scrape(const char *settled)
{
    for (int i = 0; i < 500; i++) {
        char *text = scrape_once();
        if (strstr(text, settled))
            return text;
        free(text);
        usleep(10 * 1000);
    }
    fail_msg("/metrics never showed %s", settled);
    return NULL;
}

#define POD                                                                                        \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},"                      \
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}"

#define LABELS(code, verb, resource, scope)                                                        \
    "{code=\"" code "\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"" resource      \
    "\",scope=\"" scope "\",subresource=\"\",verb=\"" verb "\",version=\"v1\"}"
#define DURATION(verb, resource, scope)                                                            \
    "{component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"" resource "\",scope=\"" scope    \
    "\",subresource=\"\",verb=\"" verb "\",version=\"v1\""

static void test_requests_are_counted_by_verb_scope_and_code(void **state)
{
    (void)state;
    char body[512];
    static const char *const names[] = {"m0", "m1", "m0"};
    static const long codes[] = {201, 201, 409};
    for (int i = 0; i < 3; i++) {
        snprintf(body, sizeof(body), POD, names[i]);
        assert_int_equal(status_of("POST", "/api/v1/namespaces/default/pods", body), codes[i]);
    }
    assert_int_equal(status_of("GET", "/api/v1/namespaces/default/pods/m0", NULL), 200);
    assert_int_equal(status_of("GET", "/api/v1/namespaces/default/pods/none", NULL), 404);
    assert_int_equal(status_of("GET", "/api/v1/pods", NULL), 200);
    assert_int_equal(status_of("GET", "/api/v1/pods?watch=1&timeoutSeconds=1", NULL), 200);

    char *text = scrape("apiserver_request_total" LABELS("200", "WATCH", "pods", "cluster") " 1\n");
    assert_int_equal(
        sample(text, "apiserver_request_total" LABELS("201", "POST", "pods", "namespace")), 2);
    assert_int_equal(
        sample(text, "apiserver_request_total" LABELS("409", "POST", "pods", "namespace")), 1);
    assert_int_equal(
        sample(text, "apiserver_request_total" LABELS("200", "GET", "pods", "resource")), 1);
    assert_int_equal(
        sample(text, "apiserver_request_total" LABELS("404", "GET", "pods", "resource")), 1);
    assert_int_equal(
        sample(text, "apiserver_request_total" LABELS("200", "LIST", "pods", "cluster")), 1);
    assert_int_equal(
        sample(text, "apiserver_request_total" LABELS("200", "WATCH", "pods", "cluster")), 1);
    /* three POSTs observed: +Inf bucket, _count, and a cumulative ladder */
    assert_int_equal(sample(text, "apiserver_request_duration_seconds_count" DURATION(
                                      "POST", "pods", "namespace") "}"),
                     3);
    assert_int_equal(sample(text, "apiserver_request_duration_seconds_bucket" DURATION(
                                      "POST", "pods", "namespace") ",le=\"+Inf\"}"),
                     3);
    assert_true(sample(text, "apiserver_request_duration_seconds_bucket" DURATION(
                                 "POST", "pods", "namespace") ",le=\"0.005\"}") <= 3);
    /* watches are long-running: counted, never timed */
    assert_null(strstr(
        text, "apiserver_request_duration_seconds_count" DURATION("WATCH", "pods", "cluster") "}"));
    /* objects in the store, per resource as Kubernetes names them */
    assert_int_equal(sample(text, "apiserver_storage_objects{resource=\"pods\"}"), 2);
    assert_true(sample(text, "apiserver_storage_objects{resource=\"namespaces\"}") >= 2);
    assert_int_equal(sample(text, "apiserver_storage_objects{resource=\"deployments.apps\"}"), 0);
    /* resources never stored are not counted: metrics.k8s.io's pods are not the pods */
    assert_null(strstr(text, "apiserver_storage_objects{resource=\"pods.metrics.k8s.io\"}"));
    assert_null(strstr(text, "apiserver_storage_objects{resource=\"tokenreviews."));
    free(text);

    /* the next scrape sees the delete */
    assert_int_equal(status_of("DELETE", "/api/v1/namespaces/default/pods/m1", NULL), 200);
    text = scrape("apiserver_request_total" LABELS("200", "DELETE", "pods", "resource") " 1\n");
    assert_int_equal(sample(text, "apiserver_storage_objects{resource=\"pods\"}"), 1);
    assert_int_equal(
        sample(text, "apiserver_request_total" LABELS("200", "DELETE", "pods", "resource")), 1);
    free(text);
}

static void test_only_get_is_allowed(void **state)
{
    (void)state;
    assert_int_equal(status_of("POST", "/metrics", "{}"), 405);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_are_counted_by_verb_scope_and_code),
        cmocka_unit_test(test_only_get_is_allowed),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
