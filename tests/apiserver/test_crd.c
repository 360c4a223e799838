/*
 * test_crd.c - tests for lib/apiserver/crd.c over real HTTP against a
 * server on a fresh SQLite store: a CustomResourceDefinition is named and
 * established and its resources served (CRUD, Table columns, status and
 * scale subresources, a second version, 415 for strategic merge, 406 for
 * protobuf); a kind another definition of the group accepted is a
 * KindConflict; deleting a definition deletes its objects, waits for their
 * own finalizers, then removes the definition and stops serving it; a Go
 * pattern (prometheus-operator's) is accepted and checked; a group of 63
 * bytes is served with its apiVersion whole. A
 * reader thread lists discovery and the resources throughout (labelled
 * `concurrency`, so it also runs under ThreadSanitizer).
 *
 * Waits poll the server with a deadline; nothing asserts on time.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-crd-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

#define CRDS "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#define CTS  "/apis/stable.example.com/v1/namespaces/default/crontabs"

#define OPEN_SCHEMA                                                                                \
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","                                        \
    "\"x-kubernetes-preserve-unknown-fields\":true}}"

static const char crontab_crd[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"crontabs.stable.example.com\"},"
    "\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"crontabs\",\"kind\":\"CronTab\",\"shortNames\":[\"ct\"]},"
    "\"versions\":[{\"name\":\"v1beta1\",\"served\":true,\"storage\":false," OPEN_SCHEMA "},"
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"properties\":{\"cronSpec\":{\"type\":\"string\"},"
    "\"replicas\":{\"type\":\"integer\",\"default\":1}}},"
    "\"status\":{\"type\":\"object\",\"properties\":{\"replicas\":{\"type\":\"integer\"},"
    "\"selector\":{\"type\":\"string\"}}}}}},"
    "\"subresources\":{\"status\":{},\"scale\":{\"specReplicasPath\":\".spec.replicas\","
    "\"statusReplicasPath\":\".status.replicas\",\"labelSelectorPath\":\".status.selector\"}},"
    "\"additionalPrinterColumns\":[{\"name\":\"Spec\",\"type\":\"string\","
    "\"jsonPath\":\".spec.cronSpec\"}]}]}}";

static void pause_briefly(void)
{
    struct timespec t = {0, 20 * 1000 * 1000};
    nanosleep(&t, NULL);
}

/* Polls GET path until its status is want (deadline 20 s); fails the test otherwise. */
static void await_status(const char *path, long want)
{
    for (int i = 0; i < 1000; i++) {
        if (status_of("GET", path, NULL) == want)
            return;
        pause_briefly();
    }
    fail_msg("GET %s never answered %ld", path, want);
}

/* The status of condition type of definition name, or "" (a static buffer). */
static const char *condition(const char *name, const char *type, const char *member)
{
    static char out[128];
    char path[256];
    snprintf(path, sizeof(path), CRDS "/%s", name);
    json_t *crd = call("GET", path, NULL, 200);
    out[0] = '\0';
    size_t i;
    json_t *c;
    json_array_foreach(at(crd, "status.conditions"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
            snprintf(out, sizeof(out), "%s", json_string_value(json_object_get(c, member)));
    }
    json_decref(crd);
    return out;
}

static void await_condition(const char *name, const char *type, const char *member,
                            const char *want)
{
    for (int i = 0; i < 1000; i++) {
        if (strcmp(condition(name, type, member), want) == 0)
            return;
        pause_briefly();
    }
    fail_msg("%s: condition %s.%s never became %s", name, type, member, want);
}

/* Lists discovery and the custom resources until told to stop. */
static atomic_bool reader_stop;

static void *reader(void *arg)
{
    (void)arg;
    while (!atomic_load(&reader_stop)) {
        status_of("GET", "/apis", NULL);
        status_of("GET", "/apis/stable.example.com/v1", NULL);
        status_of("GET", CTS, NULL);
    }
    return NULL;
}

static void test_definition_is_established_and_served(void **state)
{
    (void)state;
    pthread_t t;
    atomic_store(&reader_stop, false);
    assert_int_equal(pthread_create(&t, NULL, reader, NULL), 0);

    json_t *crd = call("POST", CRDS, crontab_crd, 201);
    assert_string_equal(str(crd, "spec.names.singular"), "crontab"); /* defaulted */
    assert_string_equal(str(crd, "spec.names.listKind"), "CronTabList");
    assert_string_equal(json_string_value(json_array_get(at(crd, "status.storedVersions"), 0)),
                        "v1");
    json_decref(crd);
    await_condition("crontabs.stable.example.com", "Established", "status", "True");
    assert_string_equal(condition("crontabs.stable.example.com", "NamesAccepted", "reason"),
                        "NoConflicts");
    await_status(CTS, 200);

    /* discovery: both versions, v1 preferred */
    json_t *groups = call("GET", "/apis", NULL, 200);
    size_t i;
    json_t *g, *group = NULL;
    json_array_foreach(json_object_get(groups, "groups"), i, g)
    {
        if (strcmp(json_string_value(json_object_get(g, "name")), "stable.example.com") == 0)
            group = g;
    }
    assert_non_null(group);
    assert_string_equal(str(group, "preferredVersion.version"), "v1");
    assert_int_equal(json_array_size(json_object_get(group, "versions")), 2);
    json_decref(groups);

    /*
     * create through v1beta1 (whose schema keeps every field): stored in the
     * storage version's apiVersion, read back through v1 (conversion None)
     * with v1's defaults applied on read, as Kubernetes applies them
     */
    json_t *ct = call("POST", "/apis/stable.example.com/v1beta1/namespaces/default/crontabs",
                      "{\"apiVersion\":\"stable.example.com/v1beta1\",\"kind\":\"CronTab\","
                      "\"metadata\":{\"name\":\"b\"},\"spec\":{\"cronSpec\":\"x\",\"free\":1}}",
                      201);
    assert_string_equal(str(ct, "apiVersion"), "stable.example.com/v1beta1");
    json_decref(ct);
    ct = call("GET", CTS "/b", NULL, 200);
    assert_string_equal(str(ct, "apiVersion"), "stable.example.com/v1"); /* conversion None */
    assert_int_equal(num(ct, "spec.free"), 1);
    assert_int_equal(num(ct, "spec.replicas"), 1);
    json_decref(ct);
    ct = call("GET", "/apis/stable.example.com/v1beta1/namespaces/default/crontabs/b", NULL, 200);
    assert_null(at(ct, "spec.replicas")); /* v1beta1's schema has no defaults */
    json_decref(ct);
    ct = call("POST", CTS,
              "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
              "\"metadata\":{\"name\":\"a\"},\"spec\":{\"cronSpec\":\"* * * * *\"}}",
              201);
    json_decref(ct);
    ct = call("GET", CTS "/a", NULL, 200); /* through v1: v1's default */
    assert_int_equal(num(ct, "spec.replicas"), 1);
    json_decref(ct);
    json_t *list = call("GET", CTS, NULL, 200);
    assert_string_equal(str(list, "kind"), "CronTabList");
    assert_int_equal(json_array_size(json_object_get(list, "items")), 2);
    json_decref(list);

    /* a Table with the printer columns */
    static const char *const table[] = {"Accept: application/json;as=Table;v=v1;g=meta.k8s.io",
                                        NULL};
    json_t *tbl = call_h("GET", CTS, NULL, table, 200);
    json_t *cols = json_object_get(tbl, "columnDefinitions");
    assert_int_equal(json_array_size(cols), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cols, 1), "name")),
                        "Spec");
    json_t *row = json_object_get(json_array_get(json_object_get(tbl, "rows"), 0), "cells");
    assert_string_equal(json_string_value(json_array_get(row, 0)), "a");
    assert_string_equal(json_string_value(json_array_get(row, 1)), "* * * * *");
    json_decref(tbl);

    /* status and scale */
    json_decref(call_h("PATCH", CTS "/a", "{\"status\":{\"replicas\":9}}", merge_type, 200));
    ct = call("GET", CTS "/a", NULL, 200);
    assert_null(at(ct, "status.replicas")); /* the main resource ignores status */
    json_decref(ct);
    json_decref(call_h("PATCH", CTS "/a/status",
                       "{\"status\":{\"replicas\":2,\"selector\":\"app=a\"}}", merge_type, 200));
    json_t *scale = call_h("PATCH", CTS "/a/scale", "{\"spec\":{\"replicas\":5}}", merge_type, 200);
    assert_string_equal(str(scale, "kind"), "Scale");
    assert_int_equal(num(scale, "spec.replicas"), 5);
    assert_int_equal(num(scale, "status.replicas"), 2);
    assert_string_equal(str(scale, "status.selector"), "app=a");
    json_decref(scale);
    ct = call("GET", CTS "/a", NULL, 200);
    assert_int_equal(num(ct, "spec.replicas"), 5);
    json_decref(ct);

    /* what custom resources refuse */
    expect_status_h(
        "PATCH", CTS "/a", "{\"spec\":{}}", strategic_type, 415, "UnsupportedMediaType",
        "accepted media types include: application/json-patch+json, application/merge-patch+json");
    static const char *const proto[] = {"Accept: application/vnd.kubernetes.protobuf", NULL};
    assert_int_equal(status_of("GET", "/apis/stable.example.com/v1/crontabs", NULL), 200);
    struct response r;
    http_call(server, "GET", CTS "/a", NULL, proto, &r);
    assert_int_equal(r.status, 406);
    response_release(&r);

    atomic_store(&reader_stop, true);
    pthread_join(t, NULL);
}

static void test_a_kind_in_use_is_a_conflict(void **state)
{
    (void)state;
    json_decref(call("POST", CRDS,
                     "{\"metadata\":{\"name\":\"crontabs2.stable.example.com\"},"
                     "\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Cluster\","
                     "\"names\":{\"plural\":\"crontabs2\",\"kind\":\"CronTab\"},"
                     "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true," OPEN_SCHEMA
                     "}]}}",
                     201));
    await_condition("crontabs2.stable.example.com", "NamesAccepted", "reason", "KindConflict");
    assert_string_equal(condition("crontabs2.stable.example.com", "NamesAccepted", "message"),
                        "\"CronTab\" is already in use");
    assert_string_equal(condition("crontabs2.stable.example.com", "Established", "status"),
                        "False");
    assert_int_equal(status_of("GET", "/apis/stable.example.com/v1/crontabs2", NULL), 404);
    json_decref(call("DELETE", CRDS "/crontabs2.stable.example.com", NULL, 200));
    await_status(CRDS "/crontabs2.stable.example.com", 404);
}

static void test_deleting_the_definition_deletes_its_objects(void **state)
{
    (void)state;
    /* one object that waits for its own finalizer, in another namespace */
    json_decref(call("POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"other\"}}", 201));
    json_decref(call("POST", "/apis/stable.example.com/v1/namespaces/other/crontabs",
                     "{\"metadata\":{\"name\":\"held\",\"finalizers\":[\"example.com/hold\"]},"
                     "\"spec\":{\"cronSpec\":\"x\"}}",
                     201));
    json_t *crd = call("DELETE", CRDS "/crontabs.stable.example.com", NULL, 200);
    assert_non_null(at(crd, "metadata.deletionTimestamp"));
    assert_string_equal(json_string_value(json_array_get(at(crd, "metadata.finalizers"), 0)),
                        "customresourcecleanup.apiextensions.k8s.io");
    json_decref(crd);
    await_status(CTS "/a", 404);
    await_status(CTS "/b", 404);
    await_condition("crontabs.stable.example.com", "Terminating", "reason",
                    "InstanceDeletionInProgress");
    /* held: marked, still there, and so is the definition */
    json_t *held = NULL;
    for (int i = 0; i < 1000 && !at(held, "metadata.deletionTimestamp"); i++) {
        json_decref(held);
        pause_briefly();
        held = call("GET", "/apis/stable.example.com/v1/namespaces/other/crontabs/held", NULL, 200);
    }
    assert_non_null(at(held, "metadata.deletionTimestamp"));
    json_decref(held);
    assert_int_equal(status_of("GET", CRDS "/crontabs.stable.example.com", NULL), 200);
    /* no creates while the definition is terminating (once the server has seen it go) */
    static const char late[] = "{\"metadata\":{\"name\":\"late\"},\"spec\":{\"cronSpec\":\"x\"}}";
    for (int i = 0; i < 1000 && status_of("POST", CTS, late) != 405; i++)
        pause_briefly();
    expect_status_h("POST", CTS, late, NULL, 405, "MethodNotAllowed",
                    "create not allowed while custom resource definition is terminating");
    /* its finalizer done, the object goes, then the definition, then its resources */
    json_decref(call_h("PATCH", "/apis/stable.example.com/v1/namespaces/other/crontabs/held",
                       "{\"metadata\":{\"finalizers\":null}}", merge_type, 200));
    await_status(CRDS "/crontabs.stable.example.com", 404);
    await_status("/apis/stable.example.com/v1", 404);
    assert_int_equal(status_of("GET", CTS, NULL), 404);
}

/*
 * prometheus-operator's definitions (prometheuses, prometheusagents, thanosrulers)
 * carry the Go pattern ^[0-9a-zA-Z-.]+$: the definition is accepted and its
 * resources are validated against it; a pattern Go refuses is refused with Go's
 * parser message.
 */
#define PROMS "/apis/monitoring.example.com/v1/namespaces/default/prometheuses"

static void test_a_go_pattern_is_accepted_and_checked(void **state)
{
    (void)state;
    json_decref(
        call("POST", CRDS,
             "{\"metadata\":{\"name\":\"prometheuses.monitoring.example.com\"},"
             "\"spec\":{\"group\":\"monitoring.example.com\",\"scope\":\"Namespaced\","
             "\"names\":{\"plural\":\"prometheuses\",\"kind\":\"Prometheus\"},"
             "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
             "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
             "\"spec\":{\"type\":\"object\",\"properties\":{\"serviceName\":{\"type\":\"string\","
             "\"pattern\":\"^[0-9a-zA-Z-.]+$\"}}}}}}}]}}",
             201));
    await_condition("prometheuses.monitoring.example.com", "Established", "status", "True");
    await_status(PROMS, 200);
    json_decref(call("POST", PROMS,
                     "{\"metadata\":{\"name\":\"k8s\"},\"spec\":{\"serviceName\":"
                     "\"prometheus-operated.monitoring\"}}",
                     201));
    expect_status_h("POST", PROMS,
                    "{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"serviceName\":\"a_b\"}}", NULL,
                    422, "Invalid",
                    "spec.serviceName: Invalid value: \"a_b\": spec.serviceName in body should "
                    "match '^[0-9a-zA-Z-.]+$'");
    expect_status_h(
        "POST", CRDS,
        "{\"metadata\":{\"name\":\"badpatterns.monitoring.example.com\"},"
        "\"spec\":{\"group\":\"monitoring.example.com\",\"scope\":\"Namespaced\","
        "\"names\":{\"plural\":\"badpatterns\",\"kind\":\"BadPattern\"},"
        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
        "\"spec\":{\"type\":\"string\",\"pattern\":\"a(b\"}}}}}]}}",
        NULL, 422, "Invalid",
        "pattern: Invalid value: \"a(b\": must be a valid regular expression, but isn't: "
        "error parsing regexp: missing closing ): `a(b`");
    json_decref(call("DELETE", CRDS "/prometheuses.monitoring.example.com", NULL, 200));
    await_status(CRDS "/prometheuses.monitoring.example.com", 404);
}

/*
 * The longest group ckube routes (63 bytes, docs/limits.md) with a version
 * of 8: an apiVersion past 64 bytes is written whole on objects, compared
 * whole on a create and hashed whole in discovery.
 */
#define LONG_GROUP "abcdefghijklmnopqrstuvwxyz.abcdefghijklmnopqrstuvwxyz.example.c"
#define LONGS      "/apis/" LONG_GROUP "/v1alpha1/namespaces/default/things"

static void test_a_long_group_is_served_whole(void **state)
{
    (void)state;
    json_decref(call(
        "POST", CRDS,
        "{\"metadata\":{\"name\":\"things." LONG_GROUP "\"},"
        "\"spec\":{\"group\":\"" LONG_GROUP "\",\"scope\":\"Namespaced\","
        "\"names\":{\"plural\":\"things\",\"kind\":\"Thing\"},"
        "\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":true," OPEN_SCHEMA "}]}}",
        201));
    await_condition("things." LONG_GROUP, "Established", "status", "True");
    await_status(LONGS, 200);
    json_t *thing = call("POST", LONGS,
                         "{\"apiVersion\":\"" LONG_GROUP "/v1alpha1\",\"kind\":\"Thing\","
                         "\"metadata\":{\"name\":\"t1\"}}",
                         201);
    assert_string_equal(str(thing, "apiVersion"), LONG_GROUP "/v1alpha1");
    json_decref(thing);
    thing = call("GET", LONGS "/t1", NULL, 200);
    assert_string_equal(str(thing, "apiVersion"), LONG_GROUP "/v1alpha1");
    json_decref(thing);
    json_t *resources = call("GET", "/apis/" LONG_GROUP "/v1alpha1", NULL, 200);
    json_t *things = json_array_get(json_object_get(resources, "resources"), 0);
    assert_string_equal(json_string_value(json_object_get(things, "name")), "things");
    assert_non_null(json_string_value(json_object_get(things, "storageVersionHash")));
    json_decref(resources);
    json_decref(call("DELETE", CRDS "/things." LONG_GROUP, NULL, 200));
    await_status(CRDS "/things." LONG_GROUP, 404);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_definition_is_established_and_served),
        cmocka_unit_test(test_a_kind_in_use_is_a_conflict),
        cmocka_unit_test(test_deleting_the_definition_deletes_its_objects),
        cmocka_unit_test(test_a_go_pattern_is_accepted_and_checked),
        cmocka_unit_test(test_a_long_group_is_served_whole),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
