/*
 * test_handlers.c - the REST verbs over real HTTP against a server on a
 * fresh SQLite store: what kubectl and the Python client depend on, and the
 * errors they print (kube-api-contract sections 5-10).
 */
#define _GNU_SOURCE
#include "cktest.h"

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-handlers-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

#define POD_BODY                                                                                          \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"%s\"}}," \
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1\"}]}}"

#define RS_BODY                                                                                    \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"%s\"},"          \
    "\"spec\":{\"replicas\":%d,\"selector\":{\"matchLabels\":{\"app\":\"r\"}},"                    \
    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"r\"}},\"spec\":{\"containers\":"            \
    "[{\"name\":\"c\",\"image\":\"x:1\"}]}}}}"

static const char *str_at(const json_t *v, const char *a, const char *b)
{
    const json_t *x = json_object_get(v, a);
    return json_string_value(b ? json_object_get(x, b) : x);
}

/* A pod named name with label app=app, as JSON; caller frees. */
static char *pod_json(const char *name, const char *app)
{
    char *out = NULL;
    if (asprintf(&out, POD_BODY, name, app) < 0)
        abort();
    return out;
}

static void create_pod(const char *name, const char *app)
{
    char *body = pod_json(name, app);
    json_decref(call("POST", "/api/v1/namespaces/default/pods", body, 201));
    free(body);
}

static void test_create_sets_server_fields_and_defaults(void **state)
{
    (void)state;
    char *body = pod_json("p1", "web");
    json_t *pod =
        call("POST", "/api/v1/namespaces/default/pods?fieldManager=kubectl-create", body, 201);
    free(body);
    json_t *meta = json_object_get(pod, "metadata");
    assert_string_equal(str_at(meta, "namespace", NULL), "default");
    assert_non_null(str_at(meta, "uid", NULL));
    assert_non_null(str_at(meta, "creationTimestamp", NULL));
    assert_non_null(str_at(meta, "resourceVersion", NULL));
    assert_string_equal(str_at(pod, "status", "phase"), "Pending");
    assert_string_equal(str_at(pod, "spec", "restartPolicy"), "Always");
    assert_string_equal(str_at(pod, "spec", "dnsPolicy"), "ClusterFirst");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(pod, "spec"),
                                                        "terminationGracePeriodSeconds")),
                     30);
    /* GET serves exactly what the create answered */
    json_t *again = call("GET", "/api/v1/namespaces/default/pods/p1", NULL, 200);
    assert_true(json_equal(pod, again));
    json_decref(again);
    json_decref(pod);
    body = pod_json("p1", "web");
    expect_status("POST", "/api/v1/namespaces/default/pods", body, 409, "AlreadyExists",
                  "pods \"p1\" already exists");
    free(body);
}

static void test_generate_name(void **state)
{
    (void)state;
    json_t *pod = call("POST", "/api/v1/namespaces/default/pods",
                       "{\"metadata\":{\"generateName\":\"gen-\"},\"spec\":{\"containers\":"
                       "[{\"name\":\"c\",\"image\":\"x\"}]}}",
                       201);
    const char *name = str_at(pod, "metadata", "name");
    assert_int_equal(strlen(name), 9);
    assert_int_equal(strncmp(name, "gen-", 4), 0);
    json_decref(pod);
}

static void test_bad_requests(void **state)
{
    (void)state;
    expect_status("POST", "/api/v1/namespaces/default/pods", "{\"metadata\":", 400, "BadRequest",
                  "json parse error");
    expect_status("POST", "/api/v1/namespaces/default/pods", "{\"spec\":{\"containers\":\"no\"}}",
                  400, "BadRequest",
                  "cannot unmarshal string into Go struct field PodSpec.spec.containers");
    expect_status("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict",
                  "{\"metadata\":{\"name\":\"s\"},\"spek\":{}}", 400, "BadRequest",
                  "strict decoding error: unknown field \"spek\"");
    expect_status("POST", "/api/v1/namespaces/default/pods",
                  "{\"metadata\":{\"name\":\"x\",\"namespace\":\"other\"},\"spec\":{\"containers\":"
                  "[{\"name\":\"c\",\"image\":\"x\"}]}}",
                  400, "BadRequest", "does not match the namespace");
    expect_status("POST", "/api/v1/namespaces/default/pods", "{\"kind\":\"Node\"}", 400,
                  "BadRequest", "does not match the expected kind");
    expect_status("GET", "/api/v1/pods?labelSelector=a%20in%20b", NULL, 400, "BadRequest",
                  "unable to parse requirement");
    expect_status("GET", "/api/v1/pods?fieldSelector=spec.bogus%3Dx", NULL, 400, "BadRequest",
                  "field label not supported: spec.bogus");
}

static void test_unknown_fields_warn_by_default(void **state)
{
    (void)state;
    struct response r;
    http_call(server, "POST", "/api/v1/namespaces/default/pods",
              "{\"metadata\":{\"name\":\"warned\"},\"spec\":{\"containers\":[{\"name\":\"c\","
              "\"image\":\"x\",\"bogus\":1}]}}",
              NULL, &r);
    assert_int_equal(r.status, 201);
    assert_non_null(
        strstr(r.headers, "Warning: 299 - \"unknown field \\\"spec.containers[0].bogus\\\"\""));
    assert_null(strstr(r.body, "bogus")); /* dropped */
    response_release(&r);
}

static void test_invalid_objects_are_422_with_causes(void **state)
{
    (void)state;
    json_t *s = call("POST", "/api/v1/namespaces/default/pods",
                     "{\"metadata\":{\"name\":\"Bad_Name\"},\"spec\":{\"containers\":[]}}", 422);
    assert_string_equal(str_at(s, "reason", NULL), "Invalid");
    assert_non_null(strstr(str_at(s, "message", NULL), "Pod \"Bad_Name\" is invalid: ["));
    json_t *details = json_object_get(s, "details");
    assert_string_equal(str_at(details, "kind", NULL), "Pod");
    json_t *causes = json_object_get(details, "causes");
    assert_true(json_array_size(causes) >= 2);
    bool name = false, containers = false;
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c)
    {
        name = name || strcmp(str_at(c, "field", NULL), "metadata.name") == 0;
        containers = containers || (strcmp(str_at(c, "field", NULL), "spec.containers") == 0 &&
                                    strcmp(str_at(c, "reason", NULL), "FieldValueRequired") == 0);
    }
    assert_true(name && containers);
    json_decref(s);

    expect_status(
        "POST", "/apis/apps/v1/namespaces/default/replicasets",
        "{\"metadata\":{\"name\":\"r\"},\"spec\":{\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
        "\"template\":{\"metadata\":{\"labels\":{\"a\":\"c\"}},\"spec\":{\"containers\":"
        "[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
        422, "Invalid", "ReplicaSet.apps \"r\" is invalid");
}

static void test_namespaces_must_exist_and_be_active(void **state)
{
    (void)state;
    char *body = pod_json("p", "x");
    expect_status("POST", "/api/v1/namespaces/nowhere/pods", body, 404, "NotFound",
                  "namespaces \"nowhere\" not found");
    json_decref(call("POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"doomed\"}}", 201));
    json_t *ns = call("DELETE", "/api/v1/namespaces/doomed", NULL, 200);
    assert_string_equal(str_at(ns, "status", "phase"), "Terminating");
    assert_non_null(str_at(ns, "metadata", "deletionTimestamp"));
    json_decref(ns);
    expect_status("POST", "/api/v1/namespaces/doomed/pods", body, 403, "Forbidden",
                  "because it is being terminated");
    free(body);
}

static void test_update_conflicts_and_generation(void **state)
{
    (void)state;
    char body[1024];
    snprintf(body, sizeof(body), RS_BODY, "gen", 1);
    json_t *rs = call("POST", "/apis/apps/v1/namespaces/default/replicasets", body, 201);
    const char *rv = str_at(rs, "metadata", "resourceVersion");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(rs, "metadata"), "generation")), 1);

    /* a label change keeps the generation; the PUT carries the current resourceVersion */
    json_object_set_new(json_object_get(rs, "metadata"), "labels", json_pack("{s:s}", "x", "y"));
    char *text = json_dumps(rs, 0);
    json_t *updated = call("PUT", "/apis/apps/v1/namespaces/default/replicasets/gen", text, 200);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(updated, "metadata"), "generation")), 1);
    assert_string_not_equal(str_at(updated, "metadata", "resourceVersion"), rv);
    /* the same body again: its resourceVersion is stale now */
    expect_status(
        "PUT", "/apis/apps/v1/namespaces/default/replicasets/gen", text, 409, "Conflict",
        "Operation cannot be fulfilled on replicasets.apps \"gen\": the object has been modified");
    free(text);

    /* a spec change bumps the generation; status in a main-resource PUT is ignored */
    json_object_set_new(json_object_get(updated, "spec"), "replicas", json_integer(5));
    json_object_set_new(updated, "status", json_pack("{s:i}", "replicas", 9));
    text = json_dumps(updated, 0);
    json_t *bumped = call("PUT", "/apis/apps/v1/namespaces/default/replicasets/gen", text, 200);
    free(text);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(bumped, "metadata"), "generation")), 2);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(bumped, "status"), "replicas")), 0);

    /* the status subresource writes status only: spec changes are put back, generation stays */
    json_object_set_new(json_object_get(bumped, "spec"), "replicas", json_integer(7));
    json_object_set_new(bumped, "status",
                        json_pack("{s:i, s:i}", "replicas", 3, "readyReplicas", 2));
    text = json_dumps(bumped, 0);
    json_t *status =
        call("PUT", "/apis/apps/v1/namespaces/default/replicasets/gen/status", text, 200);
    free(text);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(status, "status"), "replicas")), 3);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(status, "spec"), "replicas")), 5);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(status, "metadata"), "generation")), 2);

    /* an unchanged PUT commits nothing: same resourceVersion back */
    text = json_dumps(status, 0);
    json_t *same = call("PUT", "/apis/apps/v1/namespaces/default/replicasets/gen", text, 200);
    free(text);
    assert_string_equal(str_at(same, "metadata", "resourceVersion"),
                        str_at(status, "metadata", "resourceVersion"));
    json_decref(same);
    json_decref(status);
    json_decref(bumped);
    json_decref(updated);
    json_decref(rs);

    /* a selector change is refused */
    snprintf(
        body, sizeof(body),
        "{\"metadata\":{\"name\":\"gen\"},\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":"
        "{\"app\":\"s\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"s\"}},\"spec\":"
        "{\"containers\":[{\"name\":\"c\",\"image\":\"x:1\"}]}}}}");
    expect_status("PUT", "/apis/apps/v1/namespaces/default/replicasets/gen", body, 422, "Invalid",
                  "field is immutable");
    expect_status("PUT", "/apis/apps/v1/namespaces/default/replicasets/missing", body, 400,
                  "BadRequest", "does not match the name");
}

static size_t item_count(json_t *list)
{
    return json_array_size(json_object_get(list, "items"));
}

static void test_list_paging_and_selectors(void **state)
{
    (void)state;
    char name[32];
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof(name), "page-%d", i);
        create_pod(name, i % 2 ? "odd" : "even");
    }
    json_t *all = call("GET", "/api/v1/namespaces/default/pods?labelSelector=app%20in%20(odd,even)",
                       NULL, 200);
    assert_string_equal(str_at(all, "kind", NULL), "PodList");
    assert_int_equal(item_count(all), 7);
    const char *list_rv = str_at(all, "metadata", "resourceVersion");

    /* pages of 3 with a selector: 4 even pods in pages of 3 then 1 */
    json_t *page =
        call("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Deven&limit=3", NULL, 200);
    assert_int_equal(item_count(page), 3);
    const char *token = str_at(page, "metadata", "continue");
    assert_non_null(token);
    char path[512];
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/default/pods?labelSelector=app%%3Deven&limit=3&continue=%s",
             token);
    json_t *rest = call("GET", path, NULL, 200);
    assert_int_equal(item_count(rest), 1);
    assert_null(str_at(rest, "metadata", "continue"));
    /* every page reads at the first page's revision */
    assert_string_equal(str_at(rest, "metadata", "resourceVersion"),
                        str_at(page, "metadata", "resourceVersion"));
    json_decref(rest);
    json_decref(page);

    json_t *by_name = call(
        "GET", "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dpage-3", NULL, 200);
    assert_int_equal(item_count(by_name), 1);
    json_decref(by_name);
    json_t *not_pending =
        call("GET", "/api/v1/pods?fieldSelector=status.phase!%3DPending", NULL, 200);
    assert_int_equal(item_count(not_pending), 0);
    json_decref(not_pending);

    /* Exact reads the past; rules for resourceVersionMatch */
    create_pod("late", "odd");
    snprintf(
        path, sizeof(path),
        "/api/v1/namespaces/default/pods?labelSelector=app%%20in%%20(odd,even)&resourceVersion=%s&resourceVersionMatch=Exact",
        list_rv);
    json_t *past = call("GET", path, NULL, 200);
    assert_int_equal(item_count(past), 7);
    json_decref(past);
    expect_status("GET", "/api/v1/pods?resourceVersionMatch=Exact", NULL, 422, "Invalid",
                  "resourceVersionMatch is forbidden unless resourceVersion is provided");
    expect_status("GET", "/api/v1/pods?resourceVersion=0&resourceVersionMatch=Exact", NULL, 422,
                  "Invalid", NULL);
    expect_status("GET", "/api/v1/pods?resourceVersion=999999", NULL, 504, "Timeout",
                  "Too large resource version");
    expect_status("GET", "/api/v1/pods?limit=1&continue=garbage", NULL, 400, "BadRequest",
                  "invalid continue token");
    json_decref(all);
}

/*
 * A list is one document around each item's served bytes (its own
 * resourceVersion spliced in), empty or not. The body is sized up front from
 * the items, so this guards that arithmetic.
 */
static void test_list_holds_every_served_item(void **state)
{
    (void)state;
    json_decref(call("POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"many\"}}", 201));
    json_t *empty = call("GET", "/api/v1/namespaces/many/pods", NULL, 200);
    assert_true(json_is_array(json_object_get(empty, "items"))); /* [], never null */
    assert_int_equal(item_count(empty), 0);
    json_decref(empty);

    enum { N = 120 };
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "many-%03d", i);
        char *body = pod_json(name, "many");
        json_decref(call("POST", "/api/v1/namespaces/many/pods", body, 201));
        free(body);
    }
    json_t *list = call("GET", "/api/v1/namespaces/many/pods", NULL, 200);
    assert_int_equal(item_count(list), N);
    json_t *items = json_object_get(list, "items");
    for (int i = 0; i < N; i += N - 1) {
        snprintf(name, sizeof(name), "many-%03d", i);
        json_t *item = json_array_get(items, (size_t)i);
        assert_string_equal(str_at(item, "metadata", "name"), name); /* in key order */
        char path[128];
        snprintf(path, sizeof(path), "/api/v1/namespaces/many/pods/%s", name);
        json_t *got = call("GET", path, NULL, 200);
        assert_true(json_equal(item, got));
        json_decref(got);
    }
    json_decref(list);
}

static void test_tables(void **state)
{
    (void)state;
    create_pod("tabled", "t");
    static const char *const accept[] = {
        "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
        NULL};
    struct response r;
    http_call(server, "GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dt", NULL, accept,
              &r);
    assert_int_equal(r.status, 200);
    /* kube-apiserver writes a Table with the bare media type: the kind is in the body */
    assert_non_null(strstr(r.headers, "Content-Type: application/json\r\n"));
    json_t *t = parse(&r);
    response_release(&r);
    assert_string_equal(str_at(t, "kind", NULL), "Table");
    assert_int_equal(json_array_size(json_object_get(t, "columnDefinitions")), 9);
    json_t *row = json_array_get(json_object_get(t, "rows"), 0);
    assert_string_equal(json_string_value(json_array_get(json_object_get(row, "cells"), 0)),
                        "tabled");
    assert_string_equal(str_at(json_object_get(row, "object"), "kind", NULL),
                        "PartialObjectMetadata");
    json_decref(t);

    static const char *const xml_only[] = {"Accept: application/xml", NULL};
    http_call(server, "GET", "/api/v1/pods", NULL, xml_only, &r);
    assert_int_equal(r.status, 406);
    response_release(&r);
    static const char *const protobuf_first[] = {
        "Accept: application/vnd.kubernetes.protobuf,application/json", NULL};
    http_call(server, "GET", "/api/v1/namespaces/default/pods/tabled", NULL, protobuf_first, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "Content-Type: application/vnd.kubernetes.protobuf"));
    assert_memory_equal(r.body, "k8s\0", 4);
    response_release(&r);
}

static void test_delete_and_delete_collection(void **state)
{
    (void)state;
    create_pod("gone", "del");
    json_t *last = call("DELETE", "/api/v1/namespaces/default/pods/gone",
                        "{\"propagationPolicy\":\"Background\"}", 200);
    assert_string_equal(str_at(last, "metadata", "name"), "gone");
    json_decref(last);
    expect_status("GET", "/api/v1/namespaces/default/pods/gone", NULL, 404, "NotFound",
                  "pods \"gone\" not found");
    expect_status("DELETE", "/api/v1/namespaces/default/pods/gone", NULL, 404, "NotFound", NULL);

    /* apps kinds answer a Success Status */
    char body[1024];
    snprintf(body, sizeof(body), RS_BODY, "del-rs", 1);
    json_t *rs = call("POST", "/apis/apps/v1/namespaces/default/replicasets", body, 201);
    char pre[256];
    snprintf(pre, sizeof(pre), "{\"preconditions\":{\"uid\":\"%s\"}}", "not-the-uid");
    expect_status("DELETE", "/apis/apps/v1/namespaces/default/replicasets/del-rs", pre, 409,
                  "Conflict", "Precondition failed: UID in precondition: not-the-uid");
    json_t *ok = call("DELETE", "/apis/apps/v1/namespaces/default/replicasets/del-rs", NULL, 200);
    assert_string_equal(str_at(ok, "status", NULL), "Success");
    assert_string_equal(str_at(ok, "details", "uid"), str_at(rs, "metadata", "uid"));
    json_decref(ok);
    json_decref(rs);

    /* dry run writes nothing */
    create_pod("dry", "del");
    json_decref(call("DELETE", "/api/v1/namespaces/default/pods/dry?dryRun=All", NULL, 200));
    json_decref(call("GET", "/api/v1/namespaces/default/pods/dry", NULL, 200));

    create_pod("coll-1", "coll");
    create_pod("coll-2", "coll");
    json_t *deleted =
        call("DELETE", "/api/v1/namespaces/default/pods?labelSelector=app%3Dcoll", NULL, 200);
    assert_int_equal(item_count(deleted), 2);
    /* a PodList of the objects as they were, each with its resourceVersion */
    assert_string_equal(str_at(deleted, "kind", NULL), "PodList");
    assert_non_null(str_at(deleted, "metadata", "resourceVersion"));
    for (size_t i = 0; i < 2; i++) {
        json_t *meta =
            json_object_get(json_array_get(json_object_get(deleted, "items"), i), "metadata");
        char want[16];
        snprintf(want, sizeof(want), "coll-%zu", i + 1);
        assert_string_equal(json_string_value(json_object_get(meta, "name")), want);
        assert_non_null(json_string_value(json_object_get(meta, "resourceVersion")));
    }
    json_decref(deleted);
    json_t *left =
        call("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dcoll", NULL, 200);
    assert_int_equal(item_count(left), 0);
    assert_true(json_is_array(json_object_get(left, "items"))); /* [] never null */
    json_decref(left);
}

static void test_finalizers_hold_deletion(void **state)
{
    (void)state;
    json_decref(call("POST", "/api/v1/namespaces/default/pods",
                     "{\"metadata\":{\"name\":\"held\",\"finalizers\":[\"example.com/hold\"]},"
                     "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
                     201));
    json_t *marked = call("DELETE", "/api/v1/namespaces/default/pods/held", NULL, 200);
    assert_non_null(str_at(marked, "metadata", "deletionTimestamp"));
    /* still readable; new finalizers refused */
    json_t *held = call("GET", "/api/v1/namespaces/default/pods/held", NULL, 200);
    json_array_append_new(json_object_get(json_object_get(held, "metadata"), "finalizers"),
                          json_string("example.com/more"));
    char *text = json_dumps(held, 0);
    expect_status("PUT", "/api/v1/namespaces/default/pods/held", text, 422, "Invalid",
                  "no new finalizers can be added if the object is being deleted");
    free(text);
    /* removing the last finalizer removes the object */
    json_object_set_new(json_object_get(held, "metadata"), "finalizers", json_array());
    text = json_dumps(held, 0);
    json_decref(call("PUT", "/api/v1/namespaces/default/pods/held", text, 200));
    free(text);
    expect_status("GET", "/api/v1/namespaces/default/pods/held", NULL, 404, "NotFound", NULL);
    json_decref(held);
    json_decref(marked);
}

static void test_methods_and_sizes(void **state)
{
    (void)state;
    expect_status("POST", "/api/v1/namespaces/default/pods/x", "{}", 405, "MethodNotAllowed",
                  "POST is not supported");
    expect_status("GET", "/api/v1/namespaces/default/pods/x/exec", NULL, 404, "NotFound", NULL);
    expect_status("GET", "/api/v1/namespaces/default/pods/x/attach", NULL, 404, "NotFound", NULL);
    struct response r;
    static const char *const protobuf[] = {"Content-Type: application/vnd.kubernetes.protobuf",
                                           NULL};
    http_call(server, "POST", "/api/v1/namespaces", "k8s\x01", protobuf, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "cannot be handled as a Namespace: provided data does not "
                                   "appear to be a protobuf message"));
    response_release(&r);
    static const char *const text[] = {"Content-Type: text/plain", NULL};
    http_call(server, "POST", "/api/v1/namespaces", "x", text, &r);
    assert_int_equal(r.status, 415);
    assert_non_null(strstr(r.body, "accepted media types include: application/json, "
                                   "application/yaml, application/vnd.kubernetes.protobuf"));
    response_release(&r);

    size_t big = 3 * 1024 * 1024 + 10;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    huge[big] = '\0';
    huge[0] = '{';
    huge[big - 1] = '}';
    http_call(server, "POST", "/api/v1/namespaces/default/pods", huge, NULL, &r);
    free(huge);
    assert_int_equal(r.status, 413);
    assert_non_null(strstr(r.body, "RequestEntityTooLarge"));
    response_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_sets_server_fields_and_defaults),
        cmocka_unit_test(test_generate_name),
        cmocka_unit_test(test_list_holds_every_served_item),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_unknown_fields_warn_by_default),
        cmocka_unit_test(test_invalid_objects_are_422_with_causes),
        cmocka_unit_test(test_namespaces_must_exist_and_be_active),
        cmocka_unit_test(test_update_conflicts_and_generation),
        cmocka_unit_test(test_list_paging_and_selectors),
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_delete_and_delete_collection),
        cmocka_unit_test(test_finalizers_hold_deletion),
        cmocka_unit_test(test_methods_and_sizes),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
