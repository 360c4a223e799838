/*
 * test_watch.c - tests for lib/apiserver/watch.c over real HTTP: a watch from
 * resourceVersion N replays only what changed after N, a label selector turns
 * an object that leaves (re-enters) the selection into DELETED (ADDED) for
 * that watcher, Table watches send column definitions in the first event
 * only, bookmarks only when asked, and a bad resourceVersion or selector is a
 * Status before the stream starts. timeoutSeconds=1 ends each stream, so a
 * watch is one HTTP call here.
 *
 * The 410 ERROR event of a compacted revision needs the store to compact,
 * which the server does on its 5-minute schedule; its Status comes from the
 * builder tested in test_status.c (the watch form, without empty details).
 */
#define _GNU_SOURCE
#include "cktest.h"

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-watch-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

#define PODS "/api/v1/namespaces/default/pods"

/* The events of a watch stream: one JSON object per line; caller decrefs. */
static json_t *events_of(const char *path, const char *const *headers)
{
    struct response r;
    http_call(server, "GET", path, NULL, headers, &r);
    if (r.status != 200)
        fail_msg("GET %s: %ld: %s", path, r.status, r.body);
    json_t *events = json_array();
    char *save = NULL;
    for (char *line = strtok_r(r.body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t jerr;
        json_t *ev = json_loads(line, 0, &jerr);
        if (!ev)
            fail_msg("not a JSON line: %s", line);
        json_array_append_new(events, ev);
    }
    response_release(&r);
    return events;
}

/* "TYPE:name,TYPE:name" of events (BOOKMARK: name is ""). */
static void summary(json_t *events, char *buf, size_t size)
{
    size_t n = 0, i;
    json_t *ev;
    buf[0] = '\0';
    json_array_foreach(events, i, ev)
    {
        const char *name = str(ev, "object.metadata.name");
        n += (size_t)snprintf(buf + n, size - n, "%s%s:%s", i ? "," : "", str(ev, "type"),
                              name ? name : "");
        if (n >= size)
            break;
    }
}

static const char *pod(const char *name, const char *app, char *buf, size_t size)
{
    snprintf(buf, size,
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"%s\"}},\"spec\":"
             "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
             name, app);
    return buf;
}

static void test_from_a_revision_replays_later_changes_only(void **state)
{
    (void)state;
    char body[512], path[256], got[512];
    json_decref(call("POST", PODS, pod("before", "x", body, sizeof(body)), 201));
    json_t *list = call("GET", PODS, NULL, 200);
    const char *rv = str(list, "metadata.resourceVersion");
    snprintf(path, sizeof(path), PODS "?watch=1&timeoutSeconds=1&resourceVersion=%s", rv);
    json_decref(call("POST", PODS, pod("after", "x", body, sizeof(body)), 201));
    json_decref(call("DELETE", PODS "/after", NULL, 200));
    json_t *events = events_of(path, NULL);
    summary(events, got, sizeof(got));
    assert_string_equal(got, "ADDED:after,DELETED:after");
    /* each event carries its own resourceVersion, after the one asked for */
    long long first =
        strtoll(str(json_array_get(events, 0), "object.metadata.resourceVersion"), NULL, 10);
    assert_true(first > strtoll(rv, NULL, 10));
    json_decref(events);
    json_decref(list);

    /* without a resourceVersion: every current object first */
    events = events_of(PODS "?watch=1&timeoutSeconds=1", NULL);
    summary(events, got, sizeof(got));
    assert_string_equal(got, "ADDED:before");
    json_decref(events);
    json_decref(call("DELETE", PODS "/before", NULL, 200));
}

static void test_selector_transitions(void **state)
{
    (void)state;
    char body[512], path[256], got[512];
    json_t *list = call("GET", PODS, NULL, 200);
    snprintf(path, sizeof(path),
             PODS "?watch=1&timeoutSeconds=1&labelSelector=app%%3Dweb&resourceVersion=%s",
             str(list, "metadata.resourceVersion"));
    json_decref(list);
    json_decref(call("POST", PODS, pod("t", "web", body, sizeof(body)), 201));
    json_decref(call("POST", PODS, pod("other", "db", body, sizeof(body)), 201));
    json_decref(call_h("PATCH", PODS "/t", "{\"metadata\":{\"labels\":{\"app\":\"db\"}}}",
                       merge_type, 200));
    json_decref(call_h("PATCH", PODS "/t", "{\"metadata\":{\"labels\":{\"app\":\"web\"}}}",
                       merge_type, 200));
    json_decref(call_h("PATCH", PODS "/t", "{\"metadata\":{\"annotations\":{\"a\":\"b\"}}}",
                       merge_type, 200));
    json_decref(call("DELETE", PODS "/t", NULL, 200));
    json_decref(call("DELETE", PODS "/other", NULL, 200));
    json_t *events = events_of(path, NULL);
    summary(events, got, sizeof(got));
    assert_string_equal(got, "ADDED:t,DELETED:t,ADDED:t,MODIFIED:t,DELETED:t");
    json_decref(events);
}

static void test_table_watch_defines_columns_once(void **state)
{
    (void)state;
    static const char *const table[] = {"Accept: application/json;as=Table;v=v1;g=meta.k8s.io",
                                        NULL};
    char body[512];
    json_decref(call("POST", PODS, pod("t1", "web", body, sizeof(body)), 201));
    json_decref(call("POST", PODS, pod("t2", "web", body, sizeof(body)), 201));
    json_t *events = events_of(PODS "?watch=1&timeoutSeconds=1", table);
    assert_int_equal(json_array_size(events), 2);
    json_t *first = json_array_get(events, 0), *second = json_array_get(events, 1);
    assert_string_equal(str(first, "object.kind"), "Table");
    assert_true(json_array_size(at(first, "object.columnDefinitions")) > 0);
    assert_int_equal(json_array_size(at(second, "object.columnDefinitions")), 0);
    assert_int_equal(json_array_size(at(second, "object.rows")), 1);
    json_decref(events);
    json_decref(call("DELETE", PODS "/t1", NULL, 200));
    json_decref(call("DELETE", PODS "/t2", NULL, 200));
}

static void test_bookmarks_only_when_asked(void **state)
{
    (void)state;
    char got[256];
    /* sendInitialEvents with bookmarks ends the initial events with one */
    json_t *events = events_of(PODS "?watch=1&timeoutSeconds=1&sendInitialEvents=true"
                                    "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
                               NULL);
    summary(events, got, sizeof(got));
    assert_string_equal(got, "BOOKMARK:");
    json_t *bookmark = json_array_get(events, 0);
    assert_string_equal(str(bookmark, "object.kind"), "Pod");
    assert_non_null(str(bookmark, "object.metadata.resourceVersion"));
    json_decref(events);
    /* without allowWatchBookmarks nothing but objects */
    events = events_of(PODS "?watch=1&timeoutSeconds=1", NULL);
    assert_int_equal(json_array_size(events), 0);
    json_decref(events);
}

static void test_refusals_are_statuses(void **state)
{
    (void)state;
    expect_status("GET", PODS "?watch=1&resourceVersion=abc", NULL, 400, "BadRequest",
                  "invalid resource version");
    expect_status("GET", PODS "?watch=1&labelSelector=a%20in%20(", NULL, 400, "BadRequest", NULL);
    expect_status("GET", PODS "?watch=1&fieldSelector=spec.nothing%3Dx", NULL, 400, "BadRequest",
                  NULL);
    json_t *s = call("GET", PODS "?watch=1&resourceVersionMatch=Exact", NULL, 422);
    assert_string_equal(str(s, "reason"), "Invalid");
    assert_string_equal(str(s, "details.kind"), "ListOptions");
    assert_string_equal(str(s, "details.group"), "meta.k8s.io");
    assert_true(json_array_size(at(s, "details.causes")) >= 1);
    json_decref(s);
    /* a subresource cannot be watched */
    expect_status("GET", PODS "/p/status?watch=1", NULL, 405, "MethodNotAllowed", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_a_revision_replays_later_changes_only),
        cmocka_unit_test(test_selector_transitions),
        cmocka_unit_test(test_table_watch_defines_columns_once),
        cmocka_unit_test(test_bookmarks_only_when_asked),
        cmocka_unit_test(test_refusals_are_statuses),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
