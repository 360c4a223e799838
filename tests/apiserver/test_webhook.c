/*
 * test_webhook.c - tests for lib/apiserver/admission/webhook.c and match.c: which
 * requests a webhook rule matches (operations, groups, versions, resources and their
 * subresource forms, scope, namespaces as cluster-scoped objects) and the AdmissionReview
 * sent about a request. The calls themselves are tested end to end by
 * tests/e2e/test_webhook.sh, against a real HTTPS webhook.
 */
#include "cktest.h"

#include <string.h>

#include "../../lib/apiserver/internal.h"

static json_t *rule(const char *text)
{
    json_t *r = json_loads(text, 0, NULL);
    assert_non_null(r);
    return r;
}

static struct ck__admission_attrs attrs(enum ck__admission_op op, const char *group,
                                        const char *resource, const char *sub, const char *ns)
{
    const struct ck_kind *k = ck_kind_lookup(group, "v1", resource);
    assert_non_null(k);
    return (struct ck__admission_attrs){
        .op = op, .kind = k, .subresource = sub, .namespace = ns, .name = "x"};
}

static bool matches(const char *rule_text, struct ck__admission_attrs a)
{
    json_t *r = rule(rule_text);
    bool m = ck__admission_rule_matches(r, &a);
    json_decref(r);
    return m;
}

static void test_operations_groups_versions(void **state)
{
    (void)state;
    const char *pods = "{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
                       "\"resources\":[\"pods\"]}";
    assert_true(matches(pods, attrs(CK__ADMISSION_CREATE, "", "pods", NULL, "default")));
    assert_false(matches(pods, attrs(CK__ADMISSION_UPDATE, "", "pods", NULL, "default")));
    assert_false(matches(pods, attrs(CK__ADMISSION_CREATE, "apps", "deployments", NULL, "d")));
    const char *any = "{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
                      "\"resources\":[\"*\"]}";
    assert_true(matches(any, attrs(CK__ADMISSION_DELETE, "apps", "deployments", NULL, "d")));
    assert_true(matches(any, attrs(CK__ADMISSION_CONNECT, "", "pods", NULL, "d")));
    const char *connect = "{\"operations\":[\"CONNECT\"],\"apiGroups\":[\"\"],"
                          "\"apiVersions\":[\"v1\"],\"resources\":[\"pods/exec\"]}";
    assert_true(matches(connect, attrs(CK__ADMISSION_CONNECT, "", "pods", "exec", "d")));
    assert_false(matches(connect, attrs(CK__ADMISSION_CONNECT, "", "pods", "attach", "d")));
    const char *v2 = "{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"v2\"],"
                     "\"resources\":[\"*\"]}";
    assert_false(matches(v2, attrs(CK__ADMISSION_CREATE, "", "pods", NULL, "d")));
}

static void test_resources_and_subresources(void **state)
{
    (void)state;
    /* "*": every resource, no subresource */
    const char *star = "{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
                       "\"resources\":[\"*\"]}";
    assert_false(matches(star, attrs(CK__ADMISSION_UPDATE, "", "pods", "status", "d")));
    /* "* / *": everything */
    const char *all = "{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
                      "\"resources\":[\"*/*\"]}";
    assert_true(matches(all, attrs(CK__ADMISSION_UPDATE, "", "pods", "status", "d")));
    assert_true(matches(all, attrs(CK__ADMISSION_UPDATE, "", "pods", NULL, "d")));
    /* "pods/status": that subresource only */
    const char *status = "{\"operations\":[\"*\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
                         "\"resources\":[\"pods/status\"]}";
    assert_true(matches(status, attrs(CK__ADMISSION_UPDATE, "", "pods", "status", "d")));
    assert_false(matches(status, attrs(CK__ADMISSION_UPDATE, "", "pods", NULL, "d")));
    assert_false(matches(status, attrs(CK__ADMISSION_UPDATE, "", "pods", "binding", "d")));
    /* "* /status": the status of every resource; "pods/ *": every subresource of pods */
    const char *any_status = "{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],"
                             "\"apiVersions\":[\"*\"],\"resources\":[\"*/status\"]}";
    assert_true(
        matches(any_status, attrs(CK__ADMISSION_UPDATE, "apps", "deployments", "status", "d")));
    assert_false(
        matches(any_status, attrs(CK__ADMISSION_UPDATE, "apps", "deployments", NULL, "d")));
    const char *pods_any = "{\"operations\":[\"*\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
                           "\"resources\":[\"pods/*\"]}";
    assert_true(matches(pods_any, attrs(CK__ADMISSION_CREATE, "", "pods", "eviction", "d")));
    /* as Kubernetes splits it, "pods/ *" is ("pods", "*"): the pod itself matches too */
    assert_true(matches(pods_any, attrs(CK__ADMISSION_CREATE, "", "pods", NULL, "d")));
    assert_false(matches(pods_any, attrs(CK__ADMISSION_CREATE, "", "nodes", NULL, "")));
}

static void test_scope(void **state)
{
    (void)state;
    const char *ns = "{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
                     "\"resources\":[\"*\"],\"scope\":\"Namespaced\"}";
    const char *cl = "{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
                     "\"resources\":[\"*\"],\"scope\":\"Cluster\"}";
    assert_true(matches(ns, attrs(CK__ADMISSION_CREATE, "", "configmaps", NULL, "d")));
    assert_false(matches(ns, attrs(CK__ADMISSION_CREATE, "", "nodes", NULL, "")));
    assert_false(matches(cl, attrs(CK__ADMISSION_CREATE, "", "configmaps", NULL, "d")));
    assert_true(matches(cl, attrs(CK__ADMISSION_CREATE, "", "nodes", NULL, "")));
    /* a namespace is cluster-scoped, even though its requests name it as their namespace */
    assert_true(matches(cl, attrs(CK__ADMISSION_CREATE, "", "namespaces", NULL, "x")));
    assert_false(matches(ns, attrs(CK__ADMISSION_CREATE, "", "namespaces", NULL, "x")));
}

static void test_review(void **state)
{
    (void)state;
    json_t *obj = json_pack("{s:{s:s, s:s}}", "metadata", "name", "web", "namespace", "d");
    json_t *old = json_pack("{s:{s:s}}", "metadata", "name", "web");
    struct ck__admission_attrs a = attrs(CK__ADMISSION_UPDATE, "apps", "deployments", "scale", "d");
    a.name = "web";
    a.obj = obj;
    a.old = old;
    a.dry_run = true;
    json_t *r = ck__webhook_review(&a, "v1", "u-1");
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "apiVersion")), "admission.k8s.io/v1");
    json_t *req = json_object_get(r, "request");
    assert_string_equal(json_string_value(json_object_get(req, "uid")), "u-1");
    assert_string_equal(json_string_value(json_object_get(req, "operation")), "UPDATE");
    assert_string_equal(json_string_value(json_object_get(req, "subResource")), "scale");
    /* the scale subresource speaks autoscaling/v1 Scale */
    assert_string_equal(json_string_value(json_object_get(json_object_get(req, "kind"), "kind")),
                        "Scale");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(req, "resource"), "resource")),
        "deployments");
    assert_true(json_is_true(json_object_get(req, "dryRun")));
    assert_true(json_equal(json_object_get(req, "oldObject"), old));
    /* the server's own writes are the loopback user's */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(req, "userInfo"), "username")),
        "system:apiserver");
    json_decref(r);
    json_decref(obj);
    json_decref(old);

    /* a namespace's own request names it as its namespace; v1beta1 when asked */
    json_t *ns = json_pack("{s:{s:s}}", "metadata", "name", "team-a");
    struct ck__admission_attrs b = attrs(CK__ADMISSION_CREATE, "", "namespaces", NULL, "");
    b.name = "team-a";
    b.obj = ns;
    r = ck__webhook_review(&b, "v1beta1", "u-2");
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "apiVersion")),
                        "admission.k8s.io/v1beta1");
    req = json_object_get(r, "request");
    assert_string_equal(json_string_value(json_object_get(req, "namespace")), "team-a");
    assert_null(json_object_get(req, "subResource"));
    assert_true(json_is_null(json_object_get(req, "oldObject")));
    assert_true(json_is_false(json_object_get(req, "dryRun")));
    json_decref(r);
    json_decref(ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operations_groups_versions),
        cmocka_unit_test(test_resources_and_subresources),
        cmocka_unit_test(test_scope),
        cmocka_unit_test(test_review),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
