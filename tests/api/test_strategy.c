/*
 * test_strategy.c - tests for the strategies of lib/api/kinds/ (each kind's
 * file, podspec.c and workload.c): each kind's create and update
 * preparation, computed defaults and validation, with Kubernetes' messages.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

#define NOW 1800000000LL

static const char *str(const json_t *obj, const char *a, const char *b, const char *c)
{
    const json_t *v = json_object_get(obj, a);
    if (b)
        v = json_object_get(v, b);
    if (c)
        v = json_object_get(v, c);
    return json_string_value(v);
}

static const struct ck_kind *kind(const char *group, const char *resource)
{
    return ck_kind_lookup(group, "v1", resource);
}

/*
 * Validates obj (against old when given) as a write through sub does (NULL: the object
 * itself); asserts the errors include want (or none).
 */
static void expect_validation_by(const struct ck_kind *k, const struct ck_subresource *sub,
                                 json_t *obj, json_t *old, const char *want)
{
    struct ck_field_errors errs = {0};
    ck_meta_validate_subresource(k, sub, obj, old, &errs);
    if (!want) {
        if (errs.len) {
            char *s = ck_field_error_string(&errs.items[0]);
            fail_msg("unexpected error: %s", s);
        }
    } else {
        bool found = false;
        for (size_t i = 0; i < errs.len; i++) {
            char *s = ck_field_error_string(&errs.items[i]);
            found = found || strstr(s, want) != NULL;
            free(s);
        }
        if (!found)
            fail_msg("no error containing \"%s\" (%zu errors)", want, errs.len);
    }
    ck_field_errors_release(&errs);
}

static void expect_validation(const struct ck_kind *k, json_t *obj, json_t *old, const char *want)
{
    expect_validation_by(k, NULL, obj, old, want);
}

static void test_pod_create_resets_status_with_qos(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *qos;
    } cases[] = {
        {"{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}", "BestEffort"},
        {"{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}",
         "Burstable"},
        {"{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
         "\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}",
         "Guaranteed"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *pod = json_pack("{s:{s:s}, s:o, s:{s:s}}", "metadata", "name", "p", "spec",
                                load(cases[i].spec), "status", "phase", "Running");
        struct ck_err err = {0};
        assert_int_equal(ck_meta_prepare_create(kind("", "pods"), pod, "default", NOW, &err), 0);
        assert_string_equal(str(pod, "status", "phase", NULL), "Pending");
        assert_string_equal(str(pod, "status", "qosClass", NULL), cases[i].qos);
        json_decref(pod);
    }
}

static void test_lease_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = kind("coordination.k8s.io", "leases");
    assert_non_null(k);
    json_t *lease = load("{\"metadata\":{\"name\":\"n1\",\"namespace\":\"kube-node-lease\"},"
                         "\"spec\":{\"holderIdentity\":\"n1\",\"leaseDurationSeconds\":40}}");
    expect_validation(k, lease, NULL, NULL);
    json_object_set_new(json_object_get(lease, "spec"), "leaseDurationSeconds", json_integer(0));
    expect_validation(k, lease, NULL,
                      "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0");
    json_object_set_new(json_object_get(lease, "spec"), "leaseDurationSeconds", json_integer(40));
    json_object_set_new(json_object_get(lease, "spec"), "leaseTransitions", json_integer(-1));
    expect_validation(
        k, lease, NULL,
        "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0");
    json_decref(lease);
}

static void test_image_pull_policy_defaults(void **state)
{
    (void)state;
    json_t *pod =
        load("{\"spec\":{\"containers\":[{\"image\":\"nginx\"},{\"image\":\"nginx:latest\"},"
             "{\"image\":\"nginx:1.27\"},{\"image\":\"reg:5000/nginx\"},"
             "{\"image\":\"reg:5000/nginx:2\"},{\"image\":\"nginx@sha256:abc\"},"
             "{\"image\":\"x:1\",\"imagePullPolicy\":\"Never\"}],"
             "\"initContainers\":[{\"image\":\"busybox\"}]}}");
    ck_kind_default(kind("", "pods"), pod);
    static const char *const want[] = {"Always",       "Always",       "IfNotPresent", "Always",
                                       "IfNotPresent", "IfNotPresent", "Never"};
    json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers");
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(containers, i), "imagePullPolicy")),
            want[i]);
    json_t *init = json_object_get(json_object_get(pod, "spec"), "initContainers");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(init, 0), "imagePullPolicy")), "Always");
    json_decref(pod);

    /* templates get the same defaults, so they compare equal to the pods made from them */
    json_t *rs =
        load("{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"image\":\"nginx:1\"}]}}}}");
    ck_kind_default(kind("apps", "replicasets"), rs);
    json_t *c = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(rs, "spec"), "template"), "spec"),
            "containers"),
        0);
    assert_string_equal(json_string_value(json_object_get(c, "imagePullPolicy")), "IfNotPresent");
    json_decref(rs);
}

static void test_pod_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = kind("", "pods");
    const char *meta = "\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"}";
    char body[512];
    snprintf(body, sizeof(body),
             "{%s,\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}", meta);
    json_t *good = load(body);
    expect_validation(k, good, NULL, NULL);

    snprintf(body, sizeof(body), "{%s,\"spec\":{\"containers\":[]}}", meta);
    json_t *obj = load(body);
    expect_validation(k, obj, NULL, "spec.containers: Required value");
    json_decref(obj);
    snprintf(body, sizeof(body),
             "{%s,\"spec\":{\"initContainers\":[{\"name\":\"a\",\"image\":\"x\"}],"
             "\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}",
             meta);
    obj = load(body);
    expect_validation(k, obj, NULL, "spec.containers[0].name: Duplicate value: \"a\"");
    json_decref(obj);
    snprintf(body, sizeof(body), "{%s,\"spec\":{\"containers\":[{\"name\":\"A_b\"}]}}", meta);
    obj = load(body);
    expect_validation(k, obj, NULL, "spec.containers[0].image: Required value");
    expect_validation(k, obj, NULL, "spec.containers[0].name: Invalid value: \"A_b\"");
    json_decref(obj);

    /* a container's restartPolicy: Always on an init container (a sidecar) only */
    snprintf(body, sizeof(body),
             "{%s,\"spec\":{\"initContainers\":[{\"name\":\"s\",\"image\":\"x\","
             "\"restartPolicy\":\"Always\",\"readinessProbe\":{\"tcpSocket\":{\"port\":1}}}],"
             "\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}",
             meta);
    obj = load(body);
    expect_validation(k, obj, NULL, NULL);
    json_decref(obj);
    snprintf(body, sizeof(body),
             "{%s,\"spec\":{\"initContainers\":[{\"name\":\"s\",\"image\":\"x\","
             "\"restartPolicy\":\"Never\",\"livenessProbe\":{\"tcpSocket\":{\"port\":1}}}],"
             "\"containers\":[{\"name\":\"a\",\"image\":\"x\","
             "\"restartPolicy\":\"Always\"}]}}",
             meta);
    obj = load(body);
    expect_validation(k, obj, NULL,
                      "spec.initContainers[0].restartPolicy: Unsupported value: \"Never\": "
                      "supported values: \"Always\"");
    expect_validation(k, obj, NULL,
                      "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init "
                      "containers without restartPolicy=Always");
    expect_validation(k, obj, NULL,
                      "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init "
                      "containers");
    json_decref(obj);

    /* updates: the image may change, other spec fields may not */
    snprintf(body, sizeof(body),
             "{%s,\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\"}]}}", meta);
    obj = load(body);
    expect_validation(k, obj, good, NULL);
    json_decref(obj);
    snprintf(body, sizeof(body),
             "{%s,\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}],\"nodeName\":\"n\"}}",
             meta);
    obj = load(body);
    expect_validation(k, obj, good, "spec: Forbidden: pod updates may not change fields");
    json_decref(obj);
    json_decref(good);
}

static void test_namespace_create_and_update(void **state)
{
    (void)state;
    const struct ck_kind *k = kind("", "namespaces");
    json_t *ns =
        load("{\"metadata\":{\"name\":\"team\"},\"spec\":{\"finalizers\":[\"example.com/x\"]}}");
    struct ck_err err = {0};
    assert_int_equal(ck_meta_prepare_create(k, ns, NULL, NOW, &err), 0);
    ck_kind_default(k, ns);
    assert_string_equal(str(ns, "status", "phase", NULL), "Active");
    json_t *finalizers = json_object_get(json_object_get(ns, "spec"), "finalizers");
    assert_int_equal(json_array_size(finalizers), 2);
    assert_string_equal(json_string_value(json_array_get(finalizers, 1)), "kubernetes");
    assert_string_equal(str(ns, "metadata", "labels", "kubernetes.io/metadata.name"), "team");

    json_t *update = load("{\"metadata\":{\"name\":\"team\"},\"spec\":{\"finalizers\":[]},"
                          "\"status\":{\"phase\":\"Terminating\"}}");
    ck_meta_prepare_update(k, update, ns);
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(update, "spec"), "finalizers")),
        2); /* only /finalize changes them */
    assert_string_equal(str(update, "status", "phase", NULL), "Active");
    json_decref(update);
    json_decref(ns);
}

static const char rs_ok[] =
    "{\"metadata\":{\"name\":\"r\",\"namespace\":\"d\"},\"spec\":{\"selector\":{\"matchLabels\":"
    "{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":"
    "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}";

static void test_workload_validation(void **state)
{
    (void)state;
    const struct ck_kind *rs = kind("apps", "replicasets");
    const struct ck_kind *deploy = kind("apps", "deployments");
    json_t *good = load(rs_ok);
    expect_validation(rs, good, NULL, NULL);
    expect_validation(deploy, good, NULL, NULL);

    json_t *obj = json_deep_copy(good);
    json_object_del(json_object_get(obj, "spec"), "selector");
    expect_validation(rs, obj, NULL, "spec.selector: Required value");
    json_decref(obj);

    obj = json_deep_copy(good);
    json_object_set_new(json_object_get(obj, "spec"), "selector", json_object());
    expect_validation(rs, obj, NULL, "empty selector is invalid");
    json_decref(obj);

    obj = json_deep_copy(good);
    json_object_set_new(json_object_get(obj, "spec"), "selector",
                        json_pack("{s:{s:s}}", "matchLabels", "app", "db"));
    expect_validation(rs, obj, NULL, "`selector` does not match template `labels`");
    expect_validation(rs, obj, good, "spec.selector: Invalid value: field is immutable");
    json_decref(obj);

    obj = json_deep_copy(good);
    json_object_set_new(
        json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec"),
        "restartPolicy", json_string("Never"));
    expect_validation(deploy, obj, NULL, "spec.template.spec.restartPolicy: Unsupported value");
    json_decref(obj);

    obj = json_deep_copy(good);
    json_object_set_new(json_object_get(obj, "spec"), "strategy",
                        json_pack("{s:s, s:{}}", "type", "Recreate", "rollingUpdate"));
    expect_validation(deploy, obj, NULL,
                      "spec.strategy.rollingUpdate: Forbidden: may not be specified");
    json_decref(obj);
    json_decref(good);
}

static void test_deployment_strategy_defaults(void **state)
{
    (void)state;
    const struct ck_kind *deploy = kind("apps", "deployments");
    json_t *d = load("{\"spec\":{}}");
    ck_kind_default(deploy, d);
    json_t *strategy = json_object_get(json_object_get(d, "spec"), "strategy");
    assert_string_equal(json_string_value(json_object_get(strategy, "type")), "RollingUpdate");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(strategy, "rollingUpdate"), "maxSurge")),
        "25%");
    json_decref(d);

    d = load(
        "{\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":1}}}}");
    ck_kind_default(deploy, d);
    strategy = json_object_get(json_object_get(d, "spec"), "strategy");
    json_t *rolling = json_object_get(strategy, "rollingUpdate");
    assert_int_equal(json_integer_value(json_object_get(rolling, "maxSurge")), 1);
    assert_string_equal(json_string_value(json_object_get(rolling, "maxUnavailable")), "25%");
    json_decref(d);

    d = load("{\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}");
    ck_kind_default(deploy, d);
    assert_null(
        json_object_get(json_object_get(json_object_get(d, "spec"), "strategy"), "rollingUpdate"));
    json_decref(d);
}

/* A PodTemplate's template is defaulted and checked as a workload's; its cells as kubectl's. */
/* A pod with containers a and b and the ephemeral containers given (a JSON array, or ""). */
static json_t *pod_with_ephemeral(const char *ephemeral)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"labels\":{\"l\":\"1\"}},"
             "\"spec\":{\"initContainers\":[{\"name\":\"i\",\"image\":\"x\"}],"
             "\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]%s%s}}",
             *ephemeral ? ",\"ephemeralContainers\":" : "", ephemeral);
    json_t *pod = load(body);
    assert_int_equal(ck_kind_default(kind("", "pods"), pod), 0);
    return pod;
}

/* pods/ephemeralcontainers: EphemeralContainersStrategy and ValidatePodEphemeralContainersUpdate */
static void test_pod_ephemeral_containers(void **state)
{
    (void)state;
    const struct ck_kind *k = kind("", "pods");
    const struct ck_subresource *sub = ck_kind_subresource(k, "ephemeralcontainers");
    assert_non_null(sub);
    assert_int_equal(sub->part, CK_SUBRESOURCE_CUSTOM);
    assert_true(ck_subresource_allows(sub, "get"));
    assert_true(ck_subresource_allows(sub, "patch"));
    assert_true(ck_subresource_allows(sub, "update"));
    assert_false(ck_subresource_allows(sub, "create"));

    /* the update keeps everything of the stored pod but spec.ephemeralContainers */
    json_t *old = pod_with_ephemeral("");
    json_t *body = pod_with_ephemeral("[{\"name\":\"dbg\",\"image\":\"busybox\"}]");
    json_object_set_new(json_object_get(json_object_get(body, "metadata"), "labels"), "l",
                        json_string("2"));
    json_object_set_new(json_object_get(body, "spec"), "nodeName", json_string("n"));
    struct ck_field_errors errs = {0};
    struct ck_err err = {0};
    json_t *next = sub->update("p", body, old, &errs, &err);
    assert_non_null(next);
    assert_string_equal(str(next, "metadata", "labels", "l"), "1");
    assert_null(str(next, "spec", "nodeName", NULL));
    json_t *eph = json_object_get(json_object_get(next, "spec"), "ephemeralContainers");
    assert_int_equal(json_array_size(eph), 1);
    /* defaulted as other containers are */
    assert_int_equal(ck_kind_default(k, next), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(eph, 0), "imagePullPolicy")), "Always");
    /* the subresource may add it; a pod update may not, and a create may not have one */
    expect_validation_by(k, sub, next, old, NULL);
    expect_validation(k, next, old, "spec: Forbidden: pod updates may not change fields");
    expect_validation(k, next, NULL,
                      "spec.ephemeralContainers: Forbidden: cannot be set on create");
    json_decref(body);

    /* existing ones may be neither changed nor removed */
    json_t *changed = pod_with_ephemeral("[{\"name\":\"dbg\",\"image\":\"other\"}]");
    expect_validation_by(k, sub, changed, next,
                         "spec.ephemeralContainers[dbg]: Forbidden: existing ephemeral "
                         "containers \"dbg\" may not be changed");
    json_decref(changed);
    expect_validation_by(k, sub, old, next,
                         "spec.ephemeralContainers: Forbidden: existing ephemeral containers "
                         "\"dbg\" may not be removed");
    json_decref(next);

    /* names unique across every container; a target that exists; no forbidden fields */
    json_t *bad = pod_with_ephemeral(
        "[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"e\",\"image\":\"x\","
        "\"targetContainerName\":\"nope\",\"ports\":[{\"containerPort\":80}],"
        "\"resources\":{\"limits\":{\"cpu\":\"1\"}},\"restartPolicy\":\"Always\","
        "\"readinessProbe\":{\"tcpSocket\":{\"port\":1}},\"lifecycle\":{\"preStop\":"
        "{\"exec\":{\"command\":[\"x\"]}}},\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":"
        "\"/v\",\"subPath\":\"s\"}]},{\"name\":\"e\",\"image\":\"x\",\"resources\":{}}]");
    expect_validation_by(k, sub, bad, old,
                         "spec.ephemeralContainers[0].name: Duplicate value: \"a\"");
    expect_validation_by(k, sub, bad, old,
                         "spec.ephemeralContainers[2].name: Duplicate value: \"e\"");
    expect_validation_by(k, sub, bad, old,
                         "spec.ephemeralContainers[1].targetContainerName: Not found: \"nope\"");
    static const char *const fields[] = {"ports",          "resources", "restartPolicy",
                                         "readinessProbe", "lifecycle", "volumeMounts[0].subPath"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        char want[160];
        snprintf(want, sizeof(want),
                 "spec.ephemeralContainers[1].%s: Forbidden: cannot be set for an Ephemeral "
                 "Container",
                 fields[i]);
        expect_validation_by(k, sub, bad, old, want);
    }
    /* an empty resources is no resources */
    struct ck_field_errors all = {0};
    ck_meta_validate_subresource(k, sub, bad, old, &all);
    for (size_t i = 0; i < all.len; i++) {
        char *s = ck_field_error_string(&all.items[i]);
        assert_null(strstr(s, "ephemeralContainers[2].resources"));
        free(s);
    }
    ck_field_errors_release(&all);
    json_decref(bad);
    json_decref(old);
}

static void test_podtemplate(void **state)
{
    (void)state;
    const struct ck_kind *k = kind("", "podtemplates");
    json_t *o = load("{\"metadata\":{\"name\":\"t\",\"namespace\":\"default\"},\"template\":{"
                     "\"metadata\":{\"labels\":{\"tier\":\"b\",\"app\":\"w\"}},\"spec\":{"
                     "\"containers\":[{\"name\":\"a\",\"image\":\"x:latest\"},{\"name\":\"b\","
                     "\"image\":\"y:1\"}]}}}");
    assert_int_equal(k->defaults(o), 0);
    json_t *c0 = json_array_get(
        json_object_get(json_object_get(json_object_get(o, "template"), "spec"), "containers"), 0);
    assert_string_equal(json_string_value(json_object_get(c0, "imagePullPolicy")), "Always");
    expect_validation(k, o, NULL, NULL);
    json_t *t = ck_table_build(k, &o, 1, true, CK_INCLUDE_NONE, "1", NULL, NOW);
    json_t *row = json_object_get(json_array_get(json_object_get(t, "rows"), 0), "cells");
    assert_string_equal(json_string_value(json_array_get(row, 1)), "a,b");
    assert_string_equal(json_string_value(json_array_get(row, 2)), "x:latest,y:1");
    assert_string_equal(json_string_value(json_array_get(row, 3)), "app=w,tier=b");
    json_decref(t);
    json_object_set_new(json_object_get(json_object_get(o, "template"), "spec"), "containers",
                        json_array());
    expect_validation(k, o, NULL, "template.spec.containers: Required value");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_create_resets_status_with_qos),
        cmocka_unit_test(test_lease_validation),
        cmocka_unit_test(test_image_pull_policy_defaults),
        cmocka_unit_test(test_pod_validation),
        cmocka_unit_test(test_pod_ephemeral_containers),
        cmocka_unit_test(test_namespace_create_and_update),
        cmocka_unit_test(test_workload_validation),
        cmocka_unit_test(test_deployment_strategy_defaults),
        cmocka_unit_test(test_podtemplate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
