/*
 * test_delete.c - deletion as Kubernetes does it, over real HTTP against a
 * server on a fresh SQLite store: DeleteOptions (propagation policies,
 * grace periods, preconditions, dry run), finalizers that hold an object,
 * pods' graceful deletion, namespace termination through
 * namespaces/finalize, and pods/binding (kube-api-contract 11 and 12.4).
 */
#define _GNU_SOURCE
#include "cktest.h"

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-delete-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

#define RS_PATH "/apis/apps/v1/namespaces/default/replicasets/"
#define PODS    "/api/v1/namespaces/default/pods"

static void create_rs(const char *name)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"selector\":{\"matchLabels\":{\"a\":"
             "\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":"
             "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
             name);
    json_decref(call("POST", "/apis/apps/v1/namespaces/default/replicasets", body, 201));
}

/* A pod, bound to node when not NULL, with the given finalizers (a JSON array or NULL). */
static void create_pod(const char *name, const char *node, const char *finalizers)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"%s\"%s%s},\"spec\":{%s%s%s\"containers\":[{\"name\":"
             "\"c\",\"image\":\"x\"}]}}",
             name, finalizers ? ",\"finalizers\":" : "", finalizers ? finalizers : "",
             node ? "\"nodeName\":\"" : "", node ? node : "", node ? "\"," : "");
    json_decref(call("POST", PODS, body, 201));
}

/* The object's finalizers joined with ",", "" when none. */
static const char *finalizers_of(json_t *obj, char *buf, size_t size)
{
    size_t n = 0, i;
    json_t *f;
    buf[0] = '\0';
    json_array_foreach(at(obj, "metadata.finalizers"), i, f)
    {
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? "," : "", json_string_value(f));
        if (n >= size)
            break;
    }
    return buf;
}

static void expect_gone(const char *path)
{
    expect_status("GET", path, NULL, 404, "NotFound", "not found");
}

static void test_propagation_policies_set_gc_finalizers(void **state)
{
    (void)state;
    char buf[256];
    create_rs("fg");
    json_t *rs = call("DELETE", RS_PATH "fg", "{\"propagationPolicy\":\"Foreground\"}", 200);
    assert_string_equal(finalizers_of(rs, buf, sizeof(buf)), "foregroundDeletion");
    assert_non_null(str(rs, "metadata.deletionTimestamp"));
    assert_int_equal(num(rs, "metadata.deletionGracePeriodSeconds"), 0);
    assert_int_equal(num(rs, "metadata.generation"), 2);
    json_decref(rs);
    /* still readable; a later Orphan delete swaps the finalizer, nothing else */
    rs = call("DELETE", RS_PATH "fg?propagationPolicy=Orphan", NULL, 200);
    assert_string_equal(finalizers_of(rs, buf, sizeof(buf)), "orphan");
    assert_int_equal(num(rs, "metadata.generation"), 2);
    json_decref(rs);
    /* the garbage collector's removal of the finalizer completes the deletion */
    json_decref(
        call_h("PATCH", RS_PATH "fg", "{\"metadata\":{\"finalizers\":null}}", merge_type, 200));
    expect_gone(RS_PATH "fg");

    /* Background and the default remove at once (apps kinds answer a Status) */
    create_rs("bg");
    json_t *s = call("DELETE", RS_PATH "bg", "{\"propagationPolicy\":\"Background\"}", 200);
    assert_string_equal(str(s, "status"), "Success");
    json_decref(s);
    expect_gone(RS_PATH "bg");
    create_rs("df");
    json_decref(call("DELETE", RS_PATH "df", "{}", 200));
    expect_gone(RS_PATH "df");

    /* the deprecated orphanDependents, and the errors */
    create_rs("od");
    rs = call("DELETE", RS_PATH "od", "{\"orphanDependents\":true}", 200);
    assert_string_equal(finalizers_of(rs, buf, sizeof(buf)), "orphan");
    json_decref(rs);
    expect_status("DELETE", RS_PATH "od", "{\"propagationPolicy\":\"Sideways\"}", 422, "Invalid",
                  "propagationPolicy: Unsupported value: \"Sideways\"");
    expect_status("DELETE", RS_PATH "od",
                  "{\"propagationPolicy\":\"Orphan\",\"orphanDependents\":false}", 422, "Invalid",
                  "cannot be both set");
    expect_status("DELETE", RS_PATH "od", "{\"dryRun\":[\"Some\"]}", 422, "Invalid",
                  "dryRun: Unsupported value");
    /* a Background delete of an orphaning object drops the orphan finalizer: it goes */
    json_decref(call("DELETE", RS_PATH "od", "{\"propagationPolicy\":\"Background\"}", 200));
    expect_gone(RS_PATH "od");
}

static void test_custom_finalizer_holds_until_removed(void **state)
{
    (void)state;
    char buf[256];
    create_pod("held", NULL, "[\"example.com/hold\"]");
    json_t *pod = call("DELETE", PODS "/held", NULL, 200);
    assert_non_null(str(pod, "metadata.deletionTimestamp"));
    json_decref(pod);
    /* any update but a new finalizer is accepted meanwhile */
    json_decref(call_h("PATCH", PODS "/held", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}",
                       merge_type, 200));
    expect_status_h("PATCH", PODS "/held",
                    "{\"metadata\":{\"finalizers\":[\"example.com/hold\",\"example.com/more\"]}}",
                    merge_type, 422, "Invalid",
                    "no new finalizers can be added if the object is being deleted");
    /* the deletion timestamp cannot be taken back by an update */
    pod = call_h("PATCH", PODS "/held", "{\"metadata\":{\"deletionTimestamp\":null}}", merge_type,
                 200);
    assert_non_null(str(pod, "metadata.deletionTimestamp"));
    assert_string_equal(finalizers_of(pod, buf, sizeof(buf)), "example.com/hold");
    json_decref(pod);
    /* the update that empties the list removes the object, answering its last state */
    pod = call_h("PATCH", PODS "/held", "[{\"op\":\"remove\",\"path\":\"/metadata/finalizers/0\"}]",
                 jsonpatch_type, 200);
    assert_string_equal(str(pod, "metadata.name"), "held");
    json_decref(pod);
    expect_gone(PODS "/held");
}

static void test_pod_graceful_deletion(void **state)
{
    (void)state;
    /* unbound: removed at once, whatever the grace period */
    create_pod("unbound", NULL, NULL);
    json_decref(call("DELETE", PODS "/unbound", "{\"gracePeriodSeconds\":30}", 200));
    expect_gone(PODS "/unbound");

    /* bound: terminating for its grace period, until deleted with grace 0 */
    create_pod("bound", "node-1", NULL);
    json_t *pod = call("DELETE", PODS "/bound", NULL, 200);
    assert_int_equal(num(pod, "metadata.deletionGracePeriodSeconds"), 30);
    assert_non_null(str(pod, "metadata.deletionTimestamp"));
    assert_string_not_equal(str(pod, "metadata.deletionTimestamp"),
                            str(pod, "metadata.creationTimestamp"));
    json_decref(pod);
    pod = call("DELETE", PODS "/bound", "{\"gracePeriodSeconds\":5}", 200); /* shortened */
    assert_int_equal(num(pod, "metadata.deletionGracePeriodSeconds"), 5);
    json_decref(pod);
    pod = call("DELETE", PODS "/bound?gracePeriodSeconds=20", NULL, 200); /* never lengthened */
    assert_int_equal(num(pod, "metadata.deletionGracePeriodSeconds"), 5);
    json_decref(pod);
    json_decref(call("GET", PODS "/bound", NULL, 200));
    json_decref(call("DELETE", PODS "/bound", "{\"gracePeriodSeconds\":0}", 200));
    expect_gone(PODS "/bound");

    /* a finished pod has nothing to wait for */
    create_pod("done", "node-1", NULL);
    json_decref(call_h("PATCH", PODS "/done/status", "{\"status\":{\"phase\":\"Succeeded\"}}",
                       merge_type, 200));
    json_decref(call("DELETE", PODS "/done", NULL, 200));
    expect_gone(PODS "/done");

    /* a bound pod with a finalizer, force-deleted, waits for the finalizer only */
    create_pod("both", "node-1", "[\"example.com/f\"]");
    pod = call("DELETE", PODS "/both", "{\"gracePeriodSeconds\":0}", 200);
    assert_int_equal(num(pod, "metadata.deletionGracePeriodSeconds"), 0);
    json_decref(pod);
    json_decref(
        call_h("PATCH", PODS "/both", "{\"metadata\":{\"finalizers\":[]}}", merge_type, 200));
    expect_gone(PODS "/both");

    expect_status("DELETE", PODS "/x?gracePeriodSeconds=soon", NULL, 400, "BadRequest",
                  "gracePeriodSeconds");
}

static void test_preconditions_and_dry_run(void **state)
{
    (void)state;
    create_rs("pre");
    json_t *rs = call("GET", RS_PATH "pre", NULL, 200);
    expect_status("DELETE", RS_PATH "pre", "{\"preconditions\":{\"resourceVersion\":\"1\"}}", 409,
                  "Conflict", "Precondition failed: ResourceVersion in precondition: 1");
    /* a dry run answers the would-be state and writes nothing */
    json_t *dry = call("DELETE", RS_PATH "pre",
                       "{\"propagationPolicy\":\"Foreground\",\"dryRun\":[\"All\"]}", 200);
    assert_non_null(str(dry, "metadata.deletionTimestamp"));
    json_decref(dry);
    json_t *again = call("GET", RS_PATH "pre", NULL, 200);
    assert_null(at(again, "metadata.deletionTimestamp"));
    assert_string_equal(str(again, "metadata.resourceVersion"),
                        str(rs, "metadata.resourceVersion"));
    json_decref(again);
    char body[256];
    snprintf(body, sizeof(body), "{\"preconditions\":{\"uid\":\"%s\",\"resourceVersion\":\"%s\"}}",
             str(rs, "metadata.uid"), str(rs, "metadata.resourceVersion"));
    json_decref(call("DELETE", RS_PATH "pre", body, 200));
    expect_gone(RS_PATH "pre");
    json_decref(rs);
}

static void test_namespace_termination(void **state)
{
    (void)state;
    json_decref(call("POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"term\"}}", 201));
    json_decref(call("POST", "/api/v1/namespaces/term/pods",
                     "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                     "\"image\":\"x\"}]}}",
                     201));
    json_t *ns = call("DELETE", "/api/v1/namespaces/term", NULL, 200);
    assert_string_equal(str(ns, "status.phase"), "Terminating");
    assert_string_equal(json_string_value(json_array_get(at(ns, "spec.finalizers"), 0)),
                        "kubernetes");
    json_decref(ns);
    expect_status("POST", "/api/v1/namespaces/term/pods",
                  "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                  "\"image\":\"x\"}]}}",
                  403, "Forbidden", "because it is being terminated");
    /* what is inside may still change (the namespace controller deletes it) */
    json_decref(call_h("PATCH", "/api/v1/namespaces/term/pods/p",
                       "{\"metadata\":{\"labels\":{\"l\":\"v\"}}}", merge_type, 200));
    json_decref(call("DELETE", "/api/v1/namespaces/term/pods/p", NULL, 200));
    /* a main-resource update cannot drop spec.finalizers; finalize can */
    ns = call_h("PATCH", "/api/v1/namespaces/term", "{\"spec\":{\"finalizers\":[]}}", merge_type,
                200);
    assert_int_equal(json_array_size(at(ns, "spec.finalizers")), 1);
    json_decref(ns);
    expect_status("GET", "/api/v1/namespaces/term/finalize", NULL, 405, "MethodNotAllowed", NULL);
    ns = call("PUT", "/api/v1/namespaces/term/finalize",
              "{\"metadata\":{\"name\":\"term\"},\"spec\":{\"finalizers\":[]}}", 200);
    assert_string_equal(str(ns, "metadata.name"), "term");
    json_decref(ns);
    expect_gone("/api/v1/namespaces/term");
}

static void test_binding(void **state)
{
    (void)state;
    create_pod("tobind", NULL, NULL);
    static const char binding[] = "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":"
                                  "{\"name\":\"tobind\"},\"target\":{\"apiVersion\":\"v1\","
                                  "\"kind\":\"Node\",\"name\":\"node-1\"}}";
    expect_status("POST", PODS "/tobind/binding",
                  "{\"kind\":\"Binding\",\"metadata\":{\"name\":\"tobind\"},\"target\":{}}", 422,
                  "Invalid", "target.name: Required value");
    json_t *unbound = call("GET", PODS "/tobind", NULL, 200);
    json_t *ok = call("POST", PODS "/tobind/binding", binding, 201);
    assert_string_equal(str(ok, "status"), "Success");
    json_decref(ok);
    json_t *pod = call("GET", PODS "/tobind", NULL, 200);
    assert_string_equal(str(pod, "spec.nodeName"), "node-1");
    /* written straight to storage, as kube-apiserver does: no managedFields entry */
    assert_non_null(at(unbound, "metadata.managedFields"));
    assert_true(
        json_equal(at(unbound, "metadata.managedFields"), at(pod, "metadata.managedFields")));
    json_decref(unbound);
    json_t *cond = json_array_get(at(pod, "status.conditions"), 0);
    assert_string_equal(str(cond, "type"), "PodScheduled");
    assert_string_equal(str(cond, "status"), "True");
    json_decref(pod);
    expect_status("POST", PODS "/tobind/binding", binding, 409, "Conflict",
                  "is already assigned to node \"node-1\"");
    expect_status("POST", PODS "/nobody/binding",
                  "{\"kind\":\"Binding\",\"metadata\":{\"name\":\"nobody\"},\"target\":{\"name\":"
                  "\"n\"}}",
                  404, "NotFound", "pods \"nobody\" not found");
    expect_status("GET", PODS "/tobind/binding", NULL, 405, "MethodNotAllowed", NULL);
    expect_status("GET", PODS "/tobind/log", NULL, 503, "ServiceUnavailable", "node agent");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_propagation_policies_set_gc_finalizers),
        cmocka_unit_test(test_custom_finalizer_holds_until_removed),
        cmocka_unit_test(test_pod_graceful_deletion),
        cmocka_unit_test(test_preconditions_and_dry_run),
        cmocka_unit_test(test_namespace_termination),
        cmocka_unit_test(test_binding),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
