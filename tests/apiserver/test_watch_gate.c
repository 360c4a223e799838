/*
 * test_watch_gate.c - the WatchList feature gate on the server: with it on,
 * a watch may ask for sendInitialEvents and gets the initial events ending in
 * the initial-events-end bookmark; with it off, the same request is 422
 * Invalid with Kubernetes' ListOptions Status. Both states are set
 * explicitly, never taken from the default.
 */
#include "cktest.h"

#include "httptest.h"

#define INITIAL_EVENTS_WATCH                                                                       \
    "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true"                               \
    "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"

/* A server whose gate has WatchList set to value; *ret_gates is freed after the server. */
static struct ck_apiserver *start_with_watch_list(bool value, char *dir,
                                                  struct ck_fg_gate **ret_gates)
{
    char store[256];
    struct ck_err err = {0};
    struct ck_fg_err fgerr = {0};
    assert_int_equal(test_store_dir(dir, store, sizeof(store)), 0);
    assert_int_equal(ck_apiserver_feature_gate_new(NULL, ret_gates, &err), 0);
    assert_int_equal(ck_fg_set(*ret_gates, value ? "WatchList=true" : "WatchList=false", &fgerr),
                     0);
    ck_fg_close(*ret_gates);
    struct ck_apiserver_config config = {.disable_admission_plugins = "ServiceAccount",
                                         .listen = "127.0.0.1:0",
                                         .store_url = store,
                                         .feature_gates = *ret_gates};
    struct ck_apiserver *server = NULL;
    assert_int_equal(ck_apiserver_start(&config, &server, &err), 0);
    return server;
}

static void test_gate_on_serves_initial_events(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-test-watch-gate-XXXXXX";
    struct ck_fg_gate *gates = NULL;
    struct ck_apiserver *server = start_with_watch_list(true, dir, &gates);
    struct response r;
    http_call(server, "POST", "/api/v1/namespaces/default/pods",
              "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"containers\":[{\"name\":\"c\","
              "\"image\":\"x\"}]}}",
              NULL, &r);
    assert_int_equal(r.status, 201);
    response_release(&r);
    http_call(server, "GET", INITIAL_EVENTS_WATCH, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "{\"type\":\"ADDED\""));
    assert_non_null(strstr(r.body, "\"k8s.io/initial-events-end\":\"true\""));
    response_release(&r);
    test_server_stop(server, dir);
    ck_fg_gate_free(gates);
}

static void test_gate_off_refuses_send_initial_events(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-test-watch-gate-XXXXXX";
    struct ck_fg_gate *gates = NULL;
    struct ck_apiserver *server = start_with_watch_list(false, dir, &gates);
    struct response r;
    http_call(server, "GET", INITIAL_EVENTS_WATCH, NULL, NULL, &r);
    assert_int_equal(r.status, 422);
    json_error_t jerr;
    json_t *status = json_loads(r.body, 0, &jerr);
    assert_non_null(status);
    assert_string_equal(json_string_value(json_object_get(status, "message")),
                        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: "
                        "sendInitialEvents is forbidden for watch unless the WatchList feature "
                        "gate is enabled");
    json_t *details = json_object_get(status, "details");
    assert_string_equal(json_string_value(json_object_get(details, "group")), "meta.k8s.io");
    assert_string_equal(json_string_value(json_object_get(details, "kind")), "ListOptions");
    json_t *cause = json_array_get(json_object_get(details, "causes"), 0);
    assert_string_equal(json_string_value(json_object_get(cause, "reason")), "FieldValueForbidden");
    assert_string_equal(json_string_value(json_object_get(cause, "field")), "sendInitialEvents");
    json_decref(status);
    response_release(&r);
    /* a plain watch does not depend on the gate */
    http_call(server, "GET", "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1", NULL, NULL,
              &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    test_server_stop(server, dir);
    ck_fg_gate_free(gates);
}

static void test_match_without_send_initial_events_is_invalid_either_way(void **state)
{
    (void)state;
    for (int on = 0; on < 2; on++) {
        char dir[] = "/tmp/ckube-test-watch-gate-XXXXXX";
        struct ck_fg_gate *gates = NULL;
        struct ck_apiserver *server = start_with_watch_list(on, dir, &gates);
        struct response r;
        http_call(server, "GET", "/api/v1/pods?watch=1&resourceVersionMatch=Exact", NULL, NULL, &r);
        assert_int_equal(r.status, 422);
        assert_non_null(strstr(r.body, "resourceVersionMatch is forbidden for watch unless "
                                       "sendInitialEvents is provided"));
        assert_non_null(strstr(r.body, "Unsupported value: \\\"Exact\\\""));
        response_release(&r);
        test_server_stop(server, dir);
        ck_fg_gate_free(gates);
    }
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_on_serves_initial_events),
        cmocka_unit_test(test_gate_off_refuses_send_initial_events),
        cmocka_unit_test(test_match_without_send_initial_events_is_invalid_either_way),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return failed;
}
