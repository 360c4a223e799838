/*
 * test_kinds.c - the kinds RBAC and ServiceAccount tokens rest on, as
 * lib/api serves them: Role, ClusterRole, RoleBinding, ClusterRoleBinding
 * and ServiceAccount. Their validation (Kubernetes' pkg/apis/rbac/validation
 * messages), binding defaults, the immutable roleRef and the printer cells
 * kubectl shows.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ckube/api.h>

static const struct ck_kind *kind(const char *group, const char *resource)
{
    const struct ck_kind *k = ck_kind_lookup(group, "v1", resource);
    assert_non_null(k);
    return k;
}

#define RBAC "rbac.authorization.k8s.io"

/* The field errors of validating obj (against old) as one newline-joined string. */
static char *errors_of(const struct ck_kind *k, json_t *obj, const json_t *old)
{
    struct ck_field_errors errs = {0};
    if (k->defaults)
        k->defaults(obj);
    ck_meta_validate(k, obj, old, &errs);
    size_t cap = 4096, off = 0;
    char *out = calloc(1, cap);
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        off += (size_t)snprintf(out + off, cap - off, "%s%s", i ? "\n" : "", s);
        free(s);
    }
    ck_field_errors_release(&errs);
    return out;
}

static void expect(const char *resource, const char *json, const char *old_json, const char *want)
{
    json_t *obj = json_loads(json, 0, NULL);
    json_t *old = old_json ? json_loads(old_json, 0, NULL) : NULL;
    assert_non_null(obj);
    char *got = errors_of(kind(RBAC, resource), obj, old);
    if (strcmp(got, want) != 0)
        fail_msg("%s: want [%s] got [%s]", json, want, got);
    free(got);
    json_decref(obj);
    json_decref(old);
}

static void test_role_rules_are_validated_as_kubernetes_does(void **state)
{
    (void)state;
    expect(
        "roles",
        "{\"metadata\":{\"name\":\"system:pod-reader\",\"namespace\":\"ns\"},\"rules\":[{\"verbs\":"
        "[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]}",
        NULL, "");
    expect(
        "roles",
        "{\"metadata\":{\"name\":\"r\",\"namespace\":\"ns\"},\"rules\":[{\"verbs\":[],"
        "\"apiGroups\":[\"\"],\"resources\":[\"pods\"]},{\"verbs\":[\"get\"]},{\"verbs\":[\"get\"],"
        "\"nonResourceURLs\":[\"/healthz\"]}]}",
        NULL,
        "rules[0].verbs: Required value: verbs must contain at least one value\n"
        "rules[1].apiGroups: Required value: resource rules must supply at least one api group\n"
        "rules[1].resources: Required value: resource rules must supply at least one resource\n"
        "rules[2].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules "
        "cannot apply to non-resource URLs");
    expect(
        "clusterroles",
        "{\"metadata\":{\"name\":\"c\"},\"rules\":[{\"verbs\":[\"get\"],\"nonResourceURLs\":"
        "[\"/healthz\"]},{\"verbs\":[\"get\"],\"resources\":[\"pods\"],\"nonResourceURLs\":[\"/x\"]}]}",
        NULL,
        "rules[1].nonResourceURLs: Invalid value: []string{\"/x\"}: rules cannot apply to both "
        "regular resources and non-resource URLs");
    expect("clusterroles", "{\"metadata\":{\"name\":\"a/b\"},\"aggregationRule\":{}}", NULL,
           "metadata.name: Invalid value: \"a/b\": may not contain '/'\n"
           "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector "
           "required if aggregationRule is non-nil");
    expect("clusterroles", "{\"metadata\":{\"name\":\"..\"}}", NULL,
           "metadata.name: Invalid value: \"..\": may not be '..'");
}

static void test_bindings_default_validate_and_keep_their_role_ref(void **state)
{
    (void)state;
    const char *ok = "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\"},\"roleRef\":{\"kind\":"
                     "\"ClusterRole\",\"name\":\"view\"},\"subjects\":[{\"kind\":\"User\",\"name\":"
                     "\"jane\"},{\"kind\":\"ServiceAccount\",\"name\":\"robot\"}]}";
    expect("rolebindings", ok, NULL, "");
    /* defaults: roleRef.apiGroup and User subjects' apiGroup; ServiceAccount's stays "" */
    json_t *obj = json_loads(ok, 0, NULL);
    kind(RBAC, "rolebindings")->defaults(obj);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(obj, "roleRef"), "apiGroup")), RBAC);
    json_t *subjects = json_object_get(obj, "subjects");
    assert_string_equal(json_string_value(json_object_get(json_array_get(subjects, 0), "apiGroup")),
                        RBAC);
    assert_null(json_object_get(json_array_get(subjects, 1), "apiGroup"));
    json_decref(obj);

    expect(
        "rolebindings",
        "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\"},\"subjects\":[{\"kind\":\"Robot\","
        "\"name\":\"\"},{\"kind\":\"ServiceAccount\",\"name\":\"Bad_Name\",\"apiGroup\":\"x\"}]}",
        NULL,
        "roleRef.kind: Unsupported value: \"\": supported values: \"Role\", \"ClusterRole\"\n"
        "roleRef.name: Required value\n"
        "subjects[0].name: Required value\n"
        "subjects[0].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", "
        "\"User\", \"Group\"\n"
        "subjects[1].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must "
        "consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')\n"
        "subjects[1].apiGroup: Unsupported value: \"x\": supported values: \"\"");
    expect("clusterrolebindings",
           "{\"metadata\":{\"name\":\"b\"},\"roleRef\":{\"kind\":\"Role\",\"name\":\"r\"},"
           "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"robot\"}]}",
           NULL,
           "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"\n"
           "subjects[0].namespace: Required value");
    const char *old = "{\"metadata\":{\"name\":\"b\"},\"roleRef\":{\"apiGroup\":\"" RBAC
                      "\",\"kind\":\"ClusterRole\",\"name\":\"view\"}}";
    expect("clusterrolebindings", old, old, "");
    expect(
        "clusterrolebindings",
        "{\"metadata\":{\"name\":\"b\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"edit\"}}",
        old,
        "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"" RBAC "\", Kind:\"ClusterRole\", "
        "Name:\"edit\"}: cannot change roleRef");
}

static json_t *cells(const struct ck_kind *k, const char *json)
{
    json_t *obj = json_loads(json, 0, NULL);
    json_t *out = json_array();
    ck_table_row_cells(k, obj, 1700000000 + 3600, out);
    json_decref(obj);
    return out;
}

static void test_printer_columns_as_kubectl_shows_them(void **state)
{
    (void)state;
    const struct ck_kind *cr = kind(RBAC, "clusterroles");
    assert_int_equal(cr->n_columns, 2);
    assert_string_equal(cr->columns[1].name, "Created At");
    assert_string_equal(cr->columns[1].type, "date");
    json_t *c = cells(cr, "{\"metadata\":{\"name\":\"view\",\"creationTimestamp\":"
                          "\"2023-11-14T22:13:20Z\"}}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "view");
    assert_string_equal(json_string_value(json_array_get(c, 1)), "2023-11-14T22:13:20Z");
    json_decref(c);

    const struct ck_kind *rb = kind(RBAC, "rolebindings");
    static const char *const names[] = {"Name",  "Role",   "Age",
                                        "Users", "Groups", "ServiceAccounts"};
    static const int priorities[] = {0, 0, 0, 1, 1, 1};
    assert_int_equal(rb->n_columns, 6);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(rb->columns[i].name, names[i]);
        assert_int_equal(rb->columns[i].priority, priorities[i]);
    }
    c = cells(rb, "{\"metadata\":{\"name\":\"b\",\"creationTimestamp\":\"2023-11-14T22:13:20Z\"},"
                  "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"view\"},\"subjects\":["
                  "{\"kind\":\"User\",\"name\":\"jane\"},{\"kind\":\"User\",\"name\":\"joe\"},"
                  "{\"kind\":\"Group\",\"name\":\"devs\"},{\"kind\":\"ServiceAccount\","
                  "\"namespace\":\"ci\",\"name\":\"robot\"}]}");
    assert_string_equal(json_string_value(json_array_get(c, 1)), "ClusterRole/view");
    assert_string_equal(json_string_value(json_array_get(c, 2)), "60m");
    assert_string_equal(json_string_value(json_array_get(c, 3)), "jane, joe");
    assert_string_equal(json_string_value(json_array_get(c, 4)), "devs");
    assert_string_equal(json_string_value(json_array_get(c, 5)), "ci/robot");
    json_decref(c);

    const struct ck_kind *sa = kind("", "serviceaccounts");
    c = cells(sa, "{\"metadata\":{\"name\":\"default\"},\"secrets\":[{\"name\":\"a\"}]}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "default");
    assert_int_equal(json_integer_value(json_array_get(c, 1)), 1);
    json_decref(c);
    c = cells(sa, "{\"metadata\":{\"name\":\"default\"}}");
    assert_int_equal(json_integer_value(json_array_get(c, 1)), 0);
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_role_rules_are_validated_as_kubernetes_does),
        cmocka_unit_test(test_bindings_default_validate_and_keep_their_role_ref),
        cmocka_unit_test(test_printer_columns_as_kubectl_shows_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
