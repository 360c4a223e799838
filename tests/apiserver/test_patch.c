/*
 * test_patch.c - PATCH in its three formats, the status and scale
 * subresources, over real HTTP against a server on a fresh SQLite store
 * (kube-api-contract sections 10.3, 10.4 and 12).
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <pthread.h>

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-patch-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

static const char *const no_type[] = {"Content-Type:", NULL};

#define DEPLOY_BODY                                                                                 \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"%s\","            \
    "\"labels\":{\"app\":\"d\"}},"                                                                  \
    "\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"d\",\"tier\":\"fe\"}},"      \
    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\",\"tier\":\"fe\"}},\"spec\":"             \
    "{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}," \
    "{\"name\":\"B\",\"value\":\"2\"}]},{\"name\":\"b\",\"image\":\"y:1\"}]}}}}"

/* json_equal, with two absent values equal. */
static bool same(json_t *a, json_t *b)
{
    return (!a && !b) || json_equal(a, b);
}

static char *dump(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT);
    if (!s)
        abort();
    return s;
}

static void create_deployment(const char *name)
{
    char body[2048];
    snprintf(body, sizeof(body), DEPLOY_BODY, name);
    json_decref(call("POST", "/apis/apps/v1/namespaces/default/deployments", body, 201));
}

/* ---- status ------------------------------------------------------------- */

struct status_case {
    const char *collection; /* where to create */
    const char *path;       /* the object */
    const char *body;
    const char *status;     /* a status to write: {"status": ...} member value */
    const char *status_key; /* a key of it to read back */
    const char *spec;       /* a spec change the status write must drop */
    const char *spec_key;   /* its dotted path */
};

static const struct status_case status_cases[] = {
    {"/api/v1/namespaces/default/pods", "/api/v1/namespaces/default/pods/sp",
     "{\"metadata\":{\"name\":\"sp\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
     "{\"phase\":\"Running\",\"podIP\":\"10.0.0.9\"}", "status.podIP",
     "{\"activeDeadlineSeconds\":5}", "spec.activeDeadlineSeconds"},
    {"/api/v1/nodes", "/api/v1/nodes/sn", "{\"metadata\":{\"name\":\"sn\"}}",
     "{\"phase\":\"Running\",\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.1.1.1\"}],"
     "\"nodeInfo\":{\"machineID\":\"m\",\"systemUUID\":\"s\",\"bootID\":\"b\",\"kernelVersion\":\"k\","
     "\"osImage\":\"o\",\"containerRuntimeVersion\":\"c\",\"kubeletVersion\":\"v\","
     "\"kubeProxyVersion\":\"p\",\"operatingSystem\":\"linux\",\"architecture\":\"amd64\"}}",
     "status.phase", "{\"unschedulable\":true}", "spec.unschedulable"},
    {"/api/v1/namespaces", "/api/v1/namespaces/sns", "{\"metadata\":{\"name\":\"sns\"}}",
     "{\"phase\":\"Active\",\"conditions\":[{\"type\":\"X\",\"status\":\"True\"}]}", "status.phase",
     "{\"finalizers\":[]}", "spec.finalizers"},
    {"/apis/apps/v1/namespaces/default/deployments",
     "/apis/apps/v1/namespaces/default/deployments/sd", NULL,
     "{\"replicas\":2,\"readyReplicas\":1,\"observedGeneration\":1}", "status.readyReplicas",
     "{\"replicas\":9}", "spec.replicas"},
    {"/apis/apps/v1/namespaces/default/replicasets",
     "/apis/apps/v1/namespaces/default/replicasets/sr",
     "{\"metadata\":{\"name\":\"sr\"},\"spec\":{\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
     "\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":"
     "[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
     "{\"replicas\":3,\"readyReplicas\":2}", "status.readyReplicas", "{\"replicas\":9}",
     "spec.replicas"},
};

static void test_status_subresource_writes_only_status(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(status_cases) / sizeof(status_cases[0]); i++) {
        const struct status_case *c = &status_cases[i];
        if (c->body)
            json_decref(call("POST", c->collection, c->body, 201));
        else
            create_deployment("sd");
        char path[256];
        snprintf(path, sizeof(path), "%s/status", c->path);
        json_t *obj = call("GET", path, NULL, 200); /* the whole object */
        assert_non_null(str(obj, "metadata.uid"));
        json_t *before_spec = json_deep_copy(at(obj, c->spec_key));
        long long generation = num(obj, "metadata.generation");

        /* PUT .../status: status taken, spec change dropped, generation kept */
        json_error_t jerr;
        json_object_set_new(obj, "status", json_loads(c->status, 0, &jerr));
        json_t *spec_change = json_loads(c->spec, 0, &jerr);
        json_object_update(json_object_get(obj, "spec"), spec_change);
        json_decref(spec_change);
        char *text = dump(obj);
        json_t *put = call("PUT", path, text, 200);
        free(text);
        assert_non_null(at(put, c->status_key));
        assert_true(same(at(put, c->spec_key), before_spec));
        assert_int_equal(num(put, "metadata.generation"), generation);
        assert_string_not_equal(str(put, "metadata.resourceVersion"),
                                str(obj, "metadata.resourceVersion"));

        /* a main-resource write ignores status */
        char patch[512];
        snprintf(patch, sizeof(patch), "{\"status\":{\"%s\":null}}", c->status_key + 7);
        json_t *main = call_h("PATCH", c->path, patch, merge_type, 200);
        assert_non_null(at(main, c->status_key));

        /* PATCH .../status in each format */
        json_t *merged = call_h("PATCH", path, patch, merge_type, 200);
        assert_null(at(merged, c->status_key));
        assert_true(same(at(merged, c->spec_key), before_spec));
        assert_int_equal(num(merged, "metadata.generation"), generation);
        char ops[512];
        snprintf(ops, sizeof(ops), "[{\"op\":\"add\",\"path\":\"/status/%s\",\"value\":%s}]",
                 c->status_key + 7,
                 strcmp(c->status_key, "status.podIP") == 0   ? "\"10.0.0.7\""
                 : strcmp(c->status_key, "status.phase") == 0 ? "\"Active\""
                                                              : "4");
        json_t *jsoned = call_h("PATCH", path, ops, jsonpatch_type, 200);
        assert_non_null(at(jsoned, c->status_key));
        snprintf(patch, sizeof(patch), "{\"spec\":%s}", c->spec);
        json_t *strategic = call_h("PATCH", path, patch, strategic_type, 200);
        assert_true(same(at(strategic, c->spec_key), before_spec));
        /* nothing changed: no new revision */
        assert_string_equal(str(strategic, "metadata.resourceVersion"),
                            str(jsoned, "metadata.resourceVersion"));
        json_decref(strategic);
        json_decref(jsoned);
        json_decref(merged);
        json_decref(main);
        json_decref(put);
        json_decref(before_spec);
        json_decref(obj);
    }
}

static void test_status_writes_keep_what_kubernetes_keeps(void **state)
{
    (void)state;
    /* a Deployment's labels stay, its annotations pass without a generation bump */
    create_deployment("keep");
    json_t *d = call_h(
        "PATCH", "/apis/apps/v1/namespaces/default/deployments/keep/status",
        "{\"metadata\":{\"labels\":{\"new\":\"x\"},\"annotations\":{\"deployment.kubernetes.io/"
        "revision\":\"1\"}}}",
        merge_type, 200);
    assert_null(at(d, "metadata.labels.new"));
    assert_string_equal(json_string_value(json_object_get(at(d, "metadata.annotations"),
                                                          "deployment.kubernetes.io/revision")),
                        "1");
    assert_int_equal(num(d, "metadata.generation"), 1);
    json_decref(d);
    /* a pod's owners stay, its labels pass */
    json_decref(call("POST", "/api/v1/namespaces/default/pods",
                     "{\"metadata\":{\"name\":\"owned\"},\"spec\":{\"containers\":[{\"name\":"
                     "\"c\",\"image\":\"x\"}]}}",
                     201));
    json_t *p = call_h("PATCH", "/api/v1/namespaces/default/pods/owned/status",
                       "{\"metadata\":{\"labels\":{\"l\":\"v\"},\"ownerReferences\":[{"
                       "\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"n\",\"uid\":\"u\"}]}}",
                       merge_type, 200);
    assert_string_equal(str(p, "metadata.labels.l"), "v");
    assert_null(at(p, "metadata.ownerReferences"));
    json_decref(p);
    expect_status_h("DELETE", "/api/v1/namespaces/default/pods/owned/status", NULL, NULL, 405,
                    "MethodNotAllowed", NULL);
}

/*
 * A status merge patch is applied to the object's apiVersion, kind, metadata and
 * status alone (the write keeps the stored rest): what it says of the rest is still
 * decoded as before, refused under Strict when unknown and when of the wrong type,
 * and otherwise dropped.
 */
static void test_status_merge_patch_decodes_what_it_drops(void **state)
{
    (void)state;
    json_decref(call("POST", "/api/v1/namespaces/default/pods",
                     "{\"metadata\":{\"name\":\"view\"},\"spec\":{\"containers\":[{\"name\":"
                     "\"c\",\"image\":\"x\"}]}}",
                     201));
    const char *path = "/api/v1/namespaces/default/pods/view/status?fieldValidation=Strict";
    expect_status_h("PATCH", path, "{\"spec\":{\"bogus\":1},\"status\":{\"phase\":\"Running\"}}",
                    merge_type, 422, "Invalid", "unknown field \"spec.bogus\"");
    expect_status_h("PATCH", path, "{\"spec\":{\"containers\":\"x\"}}", merge_type, 422, "Invalid",
                    "cannot unmarshal string into Go struct field PodSpec.spec.containers");
    expect_status_h("PATCH", path, "{\"data\":{\"x\":1}}", merge_type, 422, "Invalid",
                    "unknown field \"data\"");
    json_t *p = call_h("PATCH", path,
                       "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"changed\"}]},"
                       "\"status\":{\"podIP\":\"10.1.1.1\"},\"metadata\":{\"labels\":{\"a\":"
                       "\"b\"}},\"kind\":\"Other\"}",
                       merge_type, 200);
    assert_string_equal(str(p, "kind"), "Pod");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(at(p, "spec.containers"), 0), "image")),
        "x");
    assert_string_equal(str(p, "status.podIP"), "10.1.1.1");
    assert_string_equal(str(p, "metadata.labels.a"), "b");
    json_t *got = call("GET", "/api/v1/namespaces/default/pods/view", NULL, 200);
    assert_true(json_equal(got, p));
    json_decref(got);
    json_decref(p);
}

/* ---- patch -------------------------------------------------------------- */

static void test_merge_and_json_patch(void **state)
{
    (void)state;
    create_deployment("mp");
    const char *path = "/apis/apps/v1/namespaces/default/deployments/mp";
    json_t *d = call_h("PATCH", path, "{\"metadata\":{\"labels\":{\"x\":\"1\",\"app\":null}}}",
                       merge_type, 200);
    assert_string_equal(str(d, "metadata.labels.x"), "1");
    assert_null(at(d, "metadata.labels.app"));
    assert_int_equal(num(d, "metadata.generation"), 1); /* labels are not spec */
    json_decref(d);
    /* a merge patch replaces lists whole */
    d = call_h("PATCH", path,
               "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"z\","
               "\"image\":\"z:1\"}]}}}}",
               merge_type, 200);
    assert_int_equal(json_array_size(at(d, "spec.template.spec.containers")), 1);
    assert_int_equal(num(d, "metadata.generation"), 2);
    json_decref(d);

    /* JSON patch, with test as a guard */
    d = call_h("PATCH", path,
               "[{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":2},"
               "{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":4},"
               "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"a/b\":\"c\"}}]",
               jsonpatch_type, 200);
    assert_int_equal(num(d, "spec.replicas"), 4);
    json_decref(d);
    expect_status_h("PATCH", path, "[{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":2}]",
                    jsonpatch_type, 422, "Invalid", NULL);
    expect_status_h("PATCH", path, "[{\"op\":\"replace\",\"path\":\"/spec/nothing\",\"value\":1}]",
                    jsonpatch_type, 422, "Invalid", NULL);
    expect_status_h("PATCH", path, "[{\"op\":\"remove\",\"path\":\"/metadata/annotations/zz\"}]",
                    jsonpatch_type, 422, "Invalid", NULL);
    /* what rollout undo sends: template and annotations replaced */
    d = call("GET", path, NULL, 200);
    json_t *tmpl = json_deep_copy(at(d, "spec.template"));
    json_object_set_new(json_object_get(json_object_get(tmpl, "spec"), "containers"), "x", NULL);
    json_t *ops =
        json_pack("[{s:s, s:s, s:O}, {s:s, s:s, s:{s:s}}]", "op", "replace", "path",
                  "/spec/template", "value", tmpl, "op", "replace", "path", "/metadata/annotations",
                  "value", "deployment.kubernetes.io/revision", "1");
    char *text = dump(ops);
    json_t *undone = call_h("PATCH", path, text, jsonpatch_type, 200);
    free(text);
    assert_true(json_equal(at(undone, "spec.template"), tmpl));
    assert_null(json_object_get(at(undone, "metadata.annotations"), "a/b"));
    json_decref(undone);
    json_decref(ops);
    json_decref(tmpl);
    json_decref(d);
    /* a type error in the result is refused */
    expect_status_h("PATCH", path, "{\"spec\":{\"replicas\":\"many\"}}", merge_type, 422, "Invalid",
                    "patch");
}

static void test_strategic_merge_patch(void **state)
{
    (void)state;
    create_deployment("smp");
    const char *path = "/apis/apps/v1/namespaces/default/deployments/smp";
    /* kubectl set image: containers merge by name */
    json_t *d = call_h("PATCH", path,
                       "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":["
                       "{\"name\":\"a\"},{\"name\":\"b\"}],\"containers\":[{\"image\":\"y:2\","
                       "\"name\":\"b\"}]}}}}",
                       strategic_type, 200);
    assert_string_equal(str(json_array_get(at(d, "spec.template.spec.containers"), 1), "image"),
                        "y:2");
    assert_string_equal(str(json_array_get(at(d, "spec.template.spec.containers"), 0), "image"),
                        "x:1");
    json_decref(d);
    /* kubectl apply dropping a container and an env var and switching to Recreate */
    d = call_h("PATCH", path,
               "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"rollingUpdate\":null,"
               "\"type\":\"Recreate\"},\"template\":{\"spec\":{\"$setElementOrder/containers\":"
               "[{\"name\":\"a\"}],\"containers\":[{\"$setElementOrder/env\":[{\"name\":\"A\"}],"
               "\"env\":[{\"$patch\":\"delete\",\"name\":\"B\"}],\"image\":\"x:2\",\"name\":"
               "\"a\"},{\"$patch\":\"delete\",\"name\":\"b\"}]}}}}",
               strategic_type, 200);
    json_t *containers = at(d, "spec.template.spec.containers");
    assert_int_equal(json_array_size(containers), 1);
    assert_int_equal(json_array_size(json_object_get(json_array_get(containers, 0), "env")), 1);
    assert_string_equal(str(d, "spec.strategy.type"), "Recreate");
    assert_null(at(d, "spec.strategy.rollingUpdate"));
    json_decref(d);
    /* rollout restart: a template annotation */
    d = call_h("PATCH", path,
               "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"kubectl.kubernetes.io/"
               "restartedAt\":\"2026-11-22T12:54:15Z\"}}}}}",
               strategic_type, 200);
    assert_non_null(json_object_get(at(d, "spec.template.metadata.annotations"),
                                    "kubectl.kubernetes.io/restartedAt"));
    json_decref(d);
    expect_status_h("PATCH", path,
                    "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"image\":"
                    "\"noname\"}]}}}}",
                    strategic_type, 400, "BadRequest", NULL);
}

static void test_strategic_merge_patch_of_a_kind_without_merge_keys(void **state)
{
    (void)state;
    /* an event recorder's repeat: Events have no merge keys, yet take it as in Kubernetes */
    json_decref(call_h("POST", "/api/v1/namespaces/default/events",
                       "{\"metadata\":{\"name\":\"ev.1\"},\"involvedObject\":{\"kind\":"
                       "\"Pod\",\"name\":\"p\",\"namespace\":\"default\"},\"reason\":\"R\","
                       "\"message\":\"m\",\"count\":1}",
                       NULL, 201));
    json_t *ev = call_h("PATCH", "/api/v1/namespaces/default/events/ev.1",
                        "{\"count\":2,\"message\":\"m2\"}", strategic_type, 200);
    assert_int_equal(json_integer_value(json_object_get(ev, "count")), 2);
    assert_string_equal(str(ev, "message"), "m2");
    json_decref(ev);
}

static void test_patch_preconditions_and_errors(void **state)
{
    (void)state;
    create_deployment("pre");
    const char *path = "/apis/apps/v1/namespaces/default/deployments/pre";
    json_t *d = call("GET", path, NULL, 200);
    char body[256];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"resourceVersion\":\"%s\",\"labels\":{\"v\":\"1\"}}}",
             str(d, "metadata.resourceVersion"));
    json_decref(call_h("PATCH", path, body, merge_type, 200));
    /* the same precondition is stale now */
    expect_status_h("PATCH", path, body, merge_type, 409, "Conflict",
                    "the object has been modified");
    snprintf(body, sizeof(body),
             "[{\"op\":\"replace\",\"path\":\"/metadata/resourceVersion\",\"value\":\"%s\"}]",
             str(d, "metadata.resourceVersion"));
    expect_status_h("PATCH", path, body, jsonpatch_type, 409, "Conflict", NULL);
    json_decref(d);

    expect_status_h("PATCH", "/apis/apps/v1/namespaces/default/deployments/none", "{}", merge_type,
                    404, "NotFound", "deployments.apps \"none\" not found");
    expect_status_h("PATCH", path, "{}", NULL, 415, "UnsupportedMediaType", NULL);
    static const char *const apply_type[] = {"Content-Type: application/apply-patch+yaml", NULL};
    /* server-side apply names its manager (tests/api/test_apply.c has the rest) */
    expect_status_h("PATCH", path, "{}", apply_type, 422, "Invalid",
                    "fieldManager: Required value: is required for apply patch");
    expect_status_h("PATCH", path, "{bad", merge_type, 400, "BadRequest", "error decoding patch");
    expect_status_h("PATCH", path, "{}", jsonpatch_type, 400, "BadRequest", NULL);

    /* fieldValidation: Strict refuses an unknown field, Warn drops it with a warning */
    char strict[256];
    snprintf(strict, sizeof(strict), "%s?fieldValidation=Strict", path);
    expect_status_h("PATCH", strict, "{\"spec\":{\"bogus\":1}}", merge_type, 422, "Invalid",
                    "unknown field \"spec.bogus\"");
    struct response r;
    http_call(server, "PATCH", path, "{\"spec\":{\"bogus\":1}}", merge_type, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "Warning: 299"));
    assert_null(strstr(r.body, "bogus"));
    response_release(&r);

    /* dry run answers the result and writes nothing */
    snprintf(strict, sizeof(strict), "%s?dryRun=All", path);
    d = call_h("PATCH", strict, "{\"spec\":{\"replicas\":7}}", merge_type, 200);
    assert_int_equal(num(d, "spec.replicas"), 7);
    json_decref(d);
    d = call("GET", path, NULL, 200);
    assert_int_equal(num(d, "spec.replicas"), 2);
    json_decref(d);
}

#define WRITERS 6
#define WRITES  8

static void *label_writer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < WRITES; i++) {
        char body[128];
        snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":{\"w%ld-%d\":\"x\"}}}", id, i);
        struct response r;
        http_call(server, "PATCH", "/apis/apps/v1/namespaces/default/deployments/race", body,
                  merge_type, &r);
        long status = r.status;
        response_release(&r);
        if (status != 200)
            return (void *)1;
    }
    return NULL;
}

/* Concurrent patches without preconditions all land: the registry retries on conflicts. */
static void test_concurrent_patches_retry(void **state)
{
    (void)state;
    create_deployment("race");
    pthread_t threads[WRITERS];
    for (long i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, label_writer, (void *)i), 0);
    for (int i = 0; i < WRITERS; i++) {
        void *ret = NULL;
        pthread_join(threads[i], &ret);
        assert_null(ret);
    }
    json_t *d = call("GET", "/apis/apps/v1/namespaces/default/deployments/race", NULL, 200);
    assert_int_equal(json_object_size(at(d, "metadata.labels")), 1 + WRITERS * WRITES);
    json_decref(d);
}

/* ---- scale -------------------------------------------------------------- */

static void test_scale_subresource(void **state)
{
    (void)state;
    create_deployment("sc");
    const char *path = "/apis/apps/v1/namespaces/default/deployments/sc/scale";
    json_t *s = call("GET", path, NULL, 200);
    assert_string_equal(str(s, "kind"), "Scale");
    assert_string_equal(str(s, "apiVersion"), "autoscaling/v1");
    assert_int_equal(num(s, "spec.replicas"), 2);
    assert_non_null(at(s, "status.replicas"));
    assert_int_equal(num(s, "status.replicas"), 0);
    assert_string_equal(str(s, "status.selector"), "app=d,tier=fe");
    assert_non_null(str(s, "metadata.uid"));

    /* PUT without a Content-Type, as kubectl scale --current-replicas sends it */
    json_object_set_new(json_object_get(s, "spec"), "replicas", json_integer(3));
    char *text = dump(s);
    json_t *put = call_h("PUT", path, text, no_type, 200);
    assert_int_equal(num(put, "spec.replicas"), 3);
    expect_status_h("PUT", path, text, no_type, 409, "Conflict", "the object has been modified");
    free(text);
    json_t *d = call("GET", "/apis/apps/v1/namespaces/default/deployments/sc", NULL, 200);
    assert_int_equal(num(d, "spec.replicas"), 3);
    assert_int_equal(num(d, "metadata.generation"), 2);
    assert_string_equal(str(d, "metadata.resourceVersion"), str(put, "metadata.resourceVersion"));
    json_decref(d);

    /* PATCH as kubectl scale sends it, and as the Python client does */
    json_t *p = call_h("PATCH", path, "{\"spec\":{\"replicas\":5}}", merge_type, 200);
    assert_int_equal(num(p, "spec.replicas"), 5);
    json_decref(p);
    p = call_h("PATCH", path, "{\"spec\":{\"replicas\":1}}", strategic_type, 200);
    assert_int_equal(num(p, "spec.replicas"), 1);
    json_decref(p);
    expect_status_h("PATCH", path, "{\"spec\":{\"replicas\":-1}}", merge_type, 422, "Invalid",
                    "spec.replicas");
    expect_status_h(
        "PUT", "/apis/apps/v1/namespaces/default/deployments/none/scale",
        "{\"kind\":\"Scale\",\"metadata\":{\"name\":\"none\"},\"spec\":{\"replicas\":1}}", no_type,
        404, "NotFound", NULL);
    expect_status_h("GET", "/api/v1/namespaces/default/pods/x/scale", NULL, NULL, 404, "NotFound",
                    NULL);

    /* ReplicaSets scale too */
    json_decref(call("POST", "/apis/apps/v1/namespaces/default/replicasets",
                     "{\"metadata\":{\"name\":\"rsc\"},\"spec\":{\"selector\":{\"matchLabels\":"
                     "{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},"
                     "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
                     201));
    p = call_h("PATCH", "/apis/apps/v1/namespaces/default/replicasets/rsc/scale",
               "{\"spec\":{\"replicas\":4}}", merge_type, 200);
    assert_int_equal(num(p, "spec.replicas"), 4);
    assert_string_equal(str(p, "status.selector"), "a=b");
    json_decref(p);
    json_decref(put);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_subresource_writes_only_status),
        cmocka_unit_test(test_status_writes_keep_what_kubernetes_keeps),
        cmocka_unit_test(test_status_merge_patch_decodes_what_it_drops),
        cmocka_unit_test(test_merge_and_json_patch),
        cmocka_unit_test(test_strategic_merge_patch),
        cmocka_unit_test(test_strategic_merge_patch_of_a_kind_without_merge_keys),
        cmocka_unit_test(test_patch_preconditions_and_errors),
        cmocka_unit_test(test_concurrent_patches_retry),
        cmocka_unit_test(test_scale_subresource),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
