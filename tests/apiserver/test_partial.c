/*
 * test_partial.c - PartialObjectMetadata over real HTTP, as client-go's
 * metadata client asks for it (Accept: application/json;as=PartialObjectMetadata;
 * g=meta.k8s.io;v=v1, or as=PartialObjectMetadataList for lists, with plain
 * JSON as the fallback entry): gets and writes answer one object's metadata,
 * lists (paged) a PartialObjectMetadataList, watches PartialObjectMetadata
 * events, deletes the deleted object's metadata or its Status, and a form
 * the server does not produce, with no fallback, is a 406 Status. Every answer's
 * Content-Type is the bare application/json kube-apiserver writes for a
 * converted object (the kind is in the body, not in as=/g=/v= parameters).
 */
#define _GNU_SOURCE
#include "cktest.h"

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-partial-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

#define PODS         "/api/v1/namespaces/default/pods"
#define PARTIAL      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
#define PARTIAL_LIST "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

static const char *const accept_partial[] = {"Accept: " PARTIAL ",application/json", NULL};
static const char *const accept_partial_list[] = {"Accept: " PARTIAL_LIST ",application/json",
                                                  NULL};

static const char *pod(const char *name, const char *app, char *buf, size_t size)
{
    snprintf(buf, size,
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"%s\"}},\"spec\":"
             "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
             name, app);
    return buf;
}

/* Asserts obj is the PartialObjectMetadata of an object named name: nothing but metadata. */
static void assert_partial(json_t *obj, const char *name)
{
    assert_string_equal(str(obj, "kind"), "PartialObjectMetadata");
    assert_string_equal(str(obj, "apiVersion"), "meta.k8s.io/v1");
    assert_string_equal(str(obj, "metadata.name"), name);
    assert_non_null(str(obj, "metadata.uid"));
    assert_non_null(str(obj, "metadata.resourceVersion"));
    assert_null(json_object_get(obj, "spec"));
    assert_null(json_object_get(obj, "status"));
    assert_int_equal(json_object_size(obj), 3);
}

/* Calls with headers, asserts the status code and the Content-Type; returns the body. */
static json_t *call_typed(const char *method, const char *path, const char *body,
                          const char *const *headers, long want, const char *content_type)
{
    struct response r;
    http_call(server, method, path, body, headers, &r);
    if (r.status != want)
        fail_msg("%s %s: %ld, want %ld: %s", method, path, r.status, want, r.body);
    char line[256];
    snprintf(line, sizeof(line), "Content-Type: %s\r\n", content_type);
    if (!strstr(r.headers, line))
        fail_msg("%s %s: no \"%s\" in %s", method, path, content_type, r.headers);
    json_t *v = parse(&r);
    response_release(&r);
    return v;
}

static void test_get_and_writes_answer_metadata(void **state)
{
    (void)state;
    char body[512];
    const char *type = "application/json"; /* the whole line: no parameters */
    json_t *created =
        call_typed("POST", PODS, pod("one", "get", body, sizeof(body)), accept_partial, 201, type);
    assert_partial(created, "one");
    json_decref(created);

    json_t *got = call_typed("GET", PODS "/one", NULL, accept_partial, 200, type);
    assert_partial(got, "one");
    assert_string_equal(str(got, "metadata.labels.app"), "get");
    json_decref(got);

    static const char *const patch_headers[] = {"Accept: " PARTIAL ",application/json",
                                                "Content-Type: application/merge-patch+json", NULL};
    json_t *patched = call_typed("PATCH", PODS "/one", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}",
                                 patch_headers, 200, type);
    assert_partial(patched, "one");
    assert_string_equal(str(patched, "metadata.labels.x"), "y");
    json_decref(patched);

    json_t *full = call("GET", PODS "/one", NULL, 200);
    json_object_set_new(json_object_get(full, "metadata"), "labels",
                        json_pack("{s:s}", "app", "put"));
    char *text = json_dumps(full, 0);
    json_decref(full);
    json_t *put = call_typed("PUT", PODS "/one", text, accept_partial, 200, type);
    free(text);
    assert_partial(put, "one");
    assert_string_equal(str(put, "metadata.labels.app"), "put");
    json_decref(put);

    /* plain JSON still answers the whole object */
    full = call_typed("GET", PODS "/one", NULL, NULL, 200, "application/json");
    assert_string_equal(str(full, "kind"), "Pod");
    assert_non_null(json_object_get(full, "spec"));
    json_decref(full);
    json_decref(call("DELETE", PODS "/one", NULL, 200));
}

static void test_list_pages_of_metadata(void **state)
{
    (void)state;
    char body[512];
    const char *type = "application/json";
    json_decref(call("POST", PODS, pod("pg-a", "pg", body, sizeof(body)), 201));
    json_decref(call("POST", PODS, pod("pg-b", "pg", body, sizeof(body)), 201));
    json_decref(call("POST", PODS, pod("pg-c", "pg", body, sizeof(body)), 201));

    json_t *page = call_typed("GET", PODS "?labelSelector=app%3Dpg&limit=2", NULL,
                              accept_partial_list, 200, type);
    assert_string_equal(str(page, "kind"), "PartialObjectMetadataList");
    assert_string_equal(str(page, "apiVersion"), "meta.k8s.io/v1");
    assert_non_null(str(page, "metadata.resourceVersion"));
    const char *cont = str(page, "metadata.continue");
    assert_non_null(cont);
    json_t *items = json_object_get(page, "items");
    assert_int_equal(json_array_size(items), 2);
    assert_partial(json_array_get(items, 0), "pg-a");
    assert_partial(json_array_get(items, 1), "pg-b");

    char path[1024];
    snprintf(path, sizeof(path), PODS "?labelSelector=app%%3Dpg&limit=2&continue=%s", cont);
    json_t *last = call_typed("GET", path, NULL, accept_partial_list, 200, type);
    json_decref(page);
    assert_null(str(last, "metadata.continue"));
    items = json_object_get(last, "items");
    assert_int_equal(json_array_size(items), 1);
    assert_partial(json_array_get(items, 0), "pg-c");
    json_decref(last);

    /* deletecollection answers the same form */
    json_t *gone =
        call_typed("DELETE", PODS "?labelSelector=app%3Dpg", NULL, accept_partial_list, 200, type);
    assert_string_equal(str(gone, "kind"), "PartialObjectMetadataList");
    assert_int_equal(json_array_size(json_object_get(gone, "items")), 3);
    assert_partial(json_array_get(json_object_get(gone, "items"), 2), "pg-c");
    json_decref(gone);
}

/* The events of a watch stream (one JSON object per line); caller decrefs. */
static json_t *events_of(const char *path, const char *const *headers)
{
    struct response r;
    http_call(server, "GET", path, NULL, headers, &r);
    if (r.status != 200)
        fail_msg("GET %s: %ld: %s", path, r.status, r.body);
    /* Kubernetes keeps a watch stream's type plain JSON, whatever its objects */
    assert_non_null(strstr(r.headers, "Content-Type: application/json\r\n"));
    json_t *events = json_array();
    char *save = NULL;
    for (char *line = strtok_r(r.body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *ev = json_loads(line, 0, NULL);
        if (!ev)
            fail_msg("not a JSON line: %s", line);
        json_array_append_new(events, ev);
    }
    response_release(&r);
    return events;
}

static void test_watch_sends_metadata(void **state)
{
    (void)state;
    char body[512];
    json_decref(call("POST", PODS, pod("w1", "wt", body, sizeof(body)), 201));
    json_t *events = events_of(PODS "?watch=1&timeoutSeconds=1&labelSelector=app%3Dwt"
                                    "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                                    "&allowWatchBookmarks=true",
                               accept_partial);
    assert_int_equal(json_array_size(events), 2);
    json_t *added = json_array_get(events, 0);
    assert_string_equal(str(added, "type"), "ADDED");
    assert_partial(json_object_get(added, "object"), "w1");
    json_t *bookmark = json_array_get(events, 1);
    assert_string_equal(str(bookmark, "type"), "BOOKMARK");
    assert_string_equal(str(bookmark, "object.kind"), "PartialObjectMetadata");
    assert_string_equal(str(bookmark, "object.apiVersion"), "meta.k8s.io/v1");
    const char *rv = str(bookmark, "object.metadata.resourceVersion");
    assert_non_null(rv);

    /* changes after that revision: MODIFIED and DELETED as metadata too */
    char path[256];
    snprintf(path, sizeof(path),
             PODS "?watch=1&timeoutSeconds=1&labelSelector=app%%3Dwt&resourceVersion=%s", rv);
    json_decref(call_h("PATCH", PODS "/w1", "{\"metadata\":{\"annotations\":{\"a\":\"b\"}}}",
                       merge_type, 200));
    json_decref(call("DELETE", PODS "/w1", NULL, 200));
    json_decref(events);
    events = events_of(path, accept_partial);
    assert_int_equal(json_array_size(events), 2);
    assert_string_equal(str(json_array_get(events, 0), "type"), "MODIFIED");
    assert_partial(json_object_get(json_array_get(events, 0), "object"), "w1");
    assert_string_equal(str(json_array_get(events, 1), "type"), "DELETED");
    assert_partial(json_object_get(json_array_get(events, 1), "object"), "w1");
    json_decref(events);
}

static void test_delete_answers_metadata_or_status(void **state)
{
    (void)state;
    char body[512];
    json_decref(call("POST", PODS, pod("del", "d", body, sizeof(body)), 201));
    json_t *last = call_typed("DELETE", PODS "/del", NULL, accept_partial, 200, "application/json");
    assert_partial(last, "del");
    json_decref(last);

    /* a kind whose delete answers a Status: the Status, untouched */
    json_decref(call("POST", "/apis/apps/v1/namespaces/default/replicasets",
                     "{\"metadata\":{\"name\":\"rs\"},\"spec\":{\"replicas\":0,\"selector\":"
                     "{\"matchLabels\":{\"app\":\"r\"}},\"template\":{\"metadata\":{\"labels\":"
                     "{\"app\":\"r\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
                     "\"x\"}]}}}}",
                     201));
    json_t *status = call_h("DELETE", "/apis/apps/v1/namespaces/default/replicasets/rs", NULL,
                            accept_partial, 200);
    assert_string_equal(str(status, "kind"), "Status");
    assert_string_equal(str(status, "status"), "Success");
    json_decref(status);
}

static void test_unserved_forms_are_406(void **state)
{
    (void)state;
    char body[512];
    json_decref(call("POST", PODS, pod("n", "na", body, sizeof(body)), 201));
    /* an as= kind the server does not produce, and nothing else */
    static const char *const other[] = {"Accept: application/json;as=Other;g=meta.k8s.io;v=v1",
                                        NULL};
    expect_status_h("GET", PODS "/n", NULL, other, 406, "NotAcceptable",
                    "only the following media types are accepted");
    expect_status_h("GET", PODS, NULL, other, 406, "NotAcceptable", NULL);
    expect_status_h("GET", PODS "?watch=1&timeoutSeconds=1", NULL, other, 406, "NotAcceptable",
                    NULL);
    /* ... with a fallback entry: the fallback */
    static const char *const fallback[] = {
        "Accept: application/json;as=Other;g=meta.k8s.io;v=v1, application/json", NULL};
    json_t *full = call_h("GET", PODS "/n", NULL, fallback, 200);
    assert_string_equal(str(full, "kind"), "Pod");
    json_decref(full);
    /* the wrong shape of the served form, as Kubernetes refuses it */
    static const char *const partial_only[] = {"Accept: " PARTIAL, NULL};
    static const char *const list_only[] = {"Accept: " PARTIAL_LIST, NULL};
    expect_status_h("GET", PODS, NULL, partial_only, 406, "NotAcceptable",
                    "you requested PartialObjectMetadata, but the requested object is a list "
                    "(*v1.PodList)");
    expect_status_h("GET", PODS "/n", NULL, list_only, 406, "NotAcceptable",
                    "you requested PartialObjectMetadataList, but the requested object is not a "
                    "list (*v1.Pod)");
    expect_status_h("GET", PODS "?watch=1&timeoutSeconds=1", NULL, list_only, 406, "NotAcceptable",
                    NULL);
    json_decref(call("DELETE", PODS "/n", NULL, 200));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_and_writes_answer_metadata),
        cmocka_unit_test(test_list_pages_of_metadata),
        cmocka_unit_test(test_watch_sends_metadata),
        cmocka_unit_test(test_delete_answers_metadata_or_status),
        cmocka_unit_test(test_unserved_forms_are_406),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
