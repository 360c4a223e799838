/*
 * test_meta.c - tests for lib/api/meta.c: what the server sets on create
 * (uid, creationTimestamp, generation, generateName, namespace), what an
 * update may not change, generation bumps, and ObjectMeta validation.
 */
#include "cktest.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

#define NOW 1800000000LL

static const char *meta_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static bool matches(const char *text, const char *pattern)
{
    regex_t re;
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    bool ok = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

static const struct ck_kind *kind(const char *group, const char *resource)
{
    return ck_kind_lookup(group, "v1", resource);
}

static void test_create_sets_server_owned_metadata(void **state)
{
    (void)state;
    json_t *rs = load("{\"metadata\":{\"name\":\"web\",\"resourceVersion\":\"7\","
                      "\"uid\":\"client-made\",\"deletionTimestamp\":\"2020-01-01T00:00:00Z\"}}");
    struct ck_err err = {0};
    assert_int_equal(ck_meta_prepare_create(kind("apps", "replicasets"), rs, "ns1", NOW, &err), 0);
    assert_string_equal(json_string_value(json_object_get(rs, "apiVersion")), "apps/v1");
    assert_string_equal(json_string_value(json_object_get(rs, "kind")), "ReplicaSet");
    assert_string_equal(meta_str(rs, "namespace"), "ns1");
    assert_true(matches(meta_str(rs, "uid"),
                        "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"));
    assert_string_equal(meta_str(rs, "creationTimestamp"), "2027-01-15T08:00:00Z");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(rs, "metadata"), "generation")), 1);
    assert_null(meta_str(rs, "resourceVersion"));
    assert_null(meta_str(rs, "deletionTimestamp"));
    json_decref(rs);
}

static void test_generate_name_and_namespace_rules(void **state)
{
    (void)state;
    struct ck_err err = {0};
    json_t *pod = load("{\"metadata\":{\"generateName\":\"web-7d4b9c-\"},\"spec\":{}}");
    assert_int_equal(ck_meta_prepare_create(kind("", "pods"), pod, "default", NOW, &err), 0);
    assert_true(matches(meta_str(pod, "name"), "^web-7d4b9c-[bcdfghjklmnpqrstvwxz2456789]{5}$"));
    assert_null(json_object_get(json_object_get(pod, "metadata"), "generation"));
    json_decref(pod);

    char long_prefix[80];
    memset(long_prefix, 'a', 70);
    long_prefix[70] = '\0';
    char body[200];
    snprintf(body, sizeof(body), "{\"metadata\":{\"generateName\":\"%s\"}}", long_prefix);
    pod = load(body);
    assert_int_equal(ck_meta_prepare_create(kind("", "pods"), pod, "default", NOW, &err), 0);
    assert_int_equal(strlen(meta_str(pod, "name")), 63);
    json_decref(pod);

    pod = load("{\"metadata\":{\"name\":\"p\",\"namespace\":\"other\"}}");
    assert_int_equal(ck_meta_prepare_create(kind("", "pods"), pod, "default", NOW, &err),
                     CK_EINVAL);
    assert_non_null(strstr(err.msg, "does not match the namespace sent on the request"));
    json_decref(pod);

    json_t *node = load("{\"metadata\":{\"name\":\"n1\",\"namespace\":\"x\"}}");
    assert_int_equal(ck_meta_prepare_create(kind("", "nodes"), node, NULL, NOW, &err), 0);
    assert_null(meta_str(node, "namespace")); /* cluster-scoped */
    json_decref(node);
}

static void test_update_keeps_immutable_fields_and_status(void **state)
{
    (void)state;
    json_t *old = load("{\"metadata\":{\"name\":\"web\",\"namespace\":\"ns\",\"uid\":\"u1\","
                       "\"creationTimestamp\":\"2020-01-01T00:00:00Z\",\"generation\":4},"
                       "\"spec\":{\"replicas\":1},\"status\":{\"replicas\":1}}");
    json_t *obj =
        load("{\"metadata\":{\"name\":\"other\",\"uid\":\"u2\",\"generation\":99,"
             "\"labels\":{\"a\":\"b\"}},\"spec\":{\"replicas\":1},\"status\":{\"replicas\":7}}");
    ck_meta_prepare_update(kind("apps", "replicasets"), obj, old);
    assert_string_equal(meta_str(obj, "name"), "web");
    assert_string_equal(meta_str(obj, "uid"), "u1");
    assert_string_equal(meta_str(obj, "creationTimestamp"), "2020-01-01T00:00:00Z");
    assert_non_null(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), "a"));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(obj, "status"), "replicas")), 1);
    /* labels changed, spec did not: generation stays */
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation")), 4);
    json_decref(obj);

    obj = load("{\"metadata\":{},\"spec\":{\"replicas\":3}}");
    ck_meta_prepare_update(kind("apps", "replicasets"), obj, old);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation")), 5);
    json_decref(obj);
    json_decref(old);
}

static void test_deployment_generation_follows_annotations(void **state)
{
    (void)state;
    json_t *old =
        load("{\"metadata\":{\"name\":\"d\",\"generation\":2,\"annotations\":{\"a\":\"1\"}},"
             "\"spec\":{\"replicas\":1}}");
    json_t *obj = load("{\"metadata\":{\"annotations\":{\"a\":\"2\"}},\"spec\":{\"replicas\":1}}");
    ck_meta_prepare_update(kind("apps", "deployments"), obj, old);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation")), 3);
    json_decref(obj);
    obj = load("{\"metadata\":{\"annotations\":{\"a\":\"2\"}},\"spec\":{\"replicas\":1}}");
    ck_meta_prepare_update(kind("apps", "replicasets"), obj, old); /* not for ReplicaSets */
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation")), 2);
    json_decref(obj);
    json_decref(old);
}

static size_t count_errors(const struct ck_kind *k, const char *obj_json, const char *old_json,
                           const char *want_substring)
{
    json_t *obj = load(obj_json);
    json_t *old = old_json ? load(old_json) : NULL;
    struct ck_field_errors errs = {0};
    ck_meta_validate(k, obj, old, &errs);
    bool found = want_substring == NULL;
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        if (want_substring && strstr(s, want_substring))
            found = true;
        free(s);
    }
    if (!found) {
        char *first = errs.len ? ck_field_error_string(&errs.items[0]) : NULL;
        fail_msg("no error containing \"%s\" for %s (first: %s)", want_substring, obj_json,
                 first ? first : "none");
    }
    size_t n = errs.len;
    ck_field_errors_release(&errs);
    json_decref(obj);
    json_decref(old);
    return n;
}

static void test_object_meta_validation(void **state)
{
    (void)state;
    const struct ck_kind *ns = kind("", "namespaces");
    const struct ck_kind *sa = kind("", "serviceaccounts");
    assert_int_equal(count_errors(ns, "{\"metadata\":{\"name\":\"team-a\"}}", NULL, NULL), 0);
    count_errors(ns, "{\"metadata\":{\"name\":\"team.a\"}}", NULL, "RFC 1123 label");
    count_errors(ns, "{\"metadata\":{}}", NULL, "metadata.name: Required value");
    assert_int_equal(count_errors(sa,
                                  "{\"metadata\":{\"name\":\"web.17a\",\"namespace\":\"default\"}}",
                                  NULL, NULL),
                     0);
    count_errors(sa, "{\"metadata\":{\"name\":\"Web\",\"namespace\":\"default\"}}", NULL,
                 "RFC 1123 subdomain");
    count_errors(sa, "{\"metadata\":{\"name\":\"e\"}}", NULL, "metadata.namespace: Required value");
    count_errors(sa,
                 "{\"metadata\":{\"name\":\"e\",\"namespace\":\"d\",\"labels\":{\"-bad\":\"x\"}}}",
                 NULL, "metadata.labels: Invalid value: \"-bad\"");
    count_errors(
        sa, "{\"metadata\":{\"name\":\"e\",\"namespace\":\"d\",\"labels\":{\"ok\":\"bad value\"}}}",
        NULL, "metadata.labels: Invalid value: \"bad value\"");
    count_errors(sa,
                 "{\"metadata\":{\"name\":\"e\",\"namespace\":\"d\",\"ownerReferences\":"
                 "[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"p\"}]}}",
                 NULL, "metadata.ownerReferences[0].uid: Required value");
    count_errors(
        sa,
        "{\"metadata\":{\"name\":\"e\",\"namespace\":\"d\",\"ownerReferences\":["
        "{\"apiVersion\":\"v1\",\"kind\":\"A\",\"name\":\"a\",\"uid\":\"1\",\"controller\":true},"
        "{\"apiVersion\":\"v1\",\"kind\":\"B\",\"name\":\"b\",\"uid\":\"2\",\"controller\":true}]}}",
        NULL, "Only one reference can have Controller set to true");
    count_errors(
        sa,
        "{\"metadata\":{\"name\":\"e\",\"namespace\":\"d\",\"finalizers\":[\"bad finalizer\"]}}",
        NULL, "metadata.finalizers[0]");
    assert_int_equal(
        count_errors(sa,
                     "{\"metadata\":{\"name\":\"e\",\"namespace\":\"d\",\"finalizers\":"
                     "[\"kubernetes\",\"example.com/x\",\"orphan\"]}}",
                     NULL, NULL),
        0);
}

static void test_no_new_finalizers_while_deleting(void **state)
{
    (void)state;
    const struct ck_kind *sa = kind("", "serviceaccounts");
    const char *old =
        "{\"metadata\":{\"name\":\"e\",\"namespace\":\"d\",\"deletionTimestamp\":"
        "\"2027-01-01T00:00:00Z\",\"finalizers\":[\"example.com/a\",\"example.com/b\"]}}";
    count_errors(sa,
                 "{\"metadata\":{\"name\":\"e\",\"namespace\":\"d\",\"finalizers\":"
                 "[\"example.com/a\",\"example.com/c\"]}}",
                 old, "no new finalizers can be added if the object is being deleted");
    /* removing is always allowed */
    assert_int_equal(
        count_errors(sa,
                     "{\"metadata\":{\"name\":\"e\",\"namespace\":\"d\",\"finalizers\":"
                     "[\"example.com/b\"]}}",
                     old, NULL),
        0);
}

static void test_annotations_size_limit(void **state)
{
    (void)state;
    size_t big = 300 * 1024;
    char *value = malloc(big + 1);
    assert_non_null(value);
    memset(value, 'x', big);
    value[big] = '\0';
    json_t *obj = json_pack("{s:{s:s, s:s, s:{s:s}}}", "metadata", "name", "e", "namespace", "d",
                            "annotations", "a", value);
    free(value);
    struct ck_field_errors errs = {0};
    ck_meta_validate(kind("", "serviceaccounts"), obj, NULL, &errs);
    assert_int_equal(errs.len, 1);
    assert_int_equal(errs.items[0].type, CK_FIELD_TOO_LONG);
    ck_field_errors_release(&errs);
    json_decref(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_sets_server_owned_metadata),
        cmocka_unit_test(test_generate_name_and_namespace_rules),
        cmocka_unit_test(test_update_keeps_immutable_fields_and_status),
        cmocka_unit_test(test_deployment_generation_follows_annotations),
        cmocka_unit_test(test_object_meta_validation),
        cmocka_unit_test(test_no_new_finalizers_while_deleting),
        cmocka_unit_test(test_annotations_size_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
