/*
 * test_apiservice.c - tests for lib/api/kinds/apiservice.c: the APIService's validation
 * in kube-aggregator's words (the name, group and version, the priorities, local and
 * remote services, caBundle and insecureSkipTLSVerify, condition statuses), the port's
 * default, what a create and an update do to the status, and the printer's cells.
 */
#include "cktest.h"

#include "kindtest.h"

#define GROUP "apiregistration.k8s.io"

static json_t *apiservice(const char *name, const char *group, const char *version, int gp, int vp)
{
    return json_pack("{s:{s:s}, s:{s:s, s:s, s:i, s:i}}", "metadata", "name", name, "spec", "group",
                     group, "version", version, "groupPriorityMinimum", gp, "versionPriority", vp);
}

static void set_service(json_t *o)
{
    json_object_set_new(json_object_get(o, "spec"), "service",
                        json_pack("{s:s, s:s}", "namespace", "wardle", "name", "api"));
}

static void test_valid_local_and_remote(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind(GROUP, "apiservices");
    assert_false(k->namespaced);
    json_t *o = apiservice("v1.apps", "apps", "v1", 17800, 15);
    kt_expect(k, o, NULL, NULL);
    json_decref(o);
    o = apiservice("v1.", "", "v1", 18000, 1); /* the core group */
    kt_expect(k, o, NULL, NULL);
    json_decref(o);
    o = apiservice("v1alpha1.wardle.example.com", "wardle.example.com", "v1alpha1", 20000, 1000);
    set_service(o);
    json_object_set_new(json_object_get(o, "spec"), "insecureSkipTLSVerify", json_true());
    kt_default(k, o);
    kt_expect(k, o, NULL, NULL);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(o, "spec"), "service"), "port")),
                     443);
    json_decref(o);
}

static void test_invalid_in_kubernetes_words(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind(GROUP, "apiservices");
    json_t *o = apiservice("v1.other.example.com", "wardle.example.com", "v1alpha1", 0, 1001);
    kt_expect(k, o, NULL,
              "metadata.name: Invalid value: \"v1.other.example.com\": must be "
              "`spec.version+\".\"+spec.group`: \"v1alpha1.wardle.example.com\"");
    kt_expect(k, o, NULL,
              "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000");
    kt_expect(k, o, NULL,
              "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000");
    json_decref(o);

    o = apiservice("v2.", "", "v2", 1, 1);
    kt_expect(k, o, NULL,
              "spec.group: Required value: only v1 may have an empty group and it better be "
              "legacy kube");
    json_decref(o);

    o = apiservice("V1.Bad_Group", "Bad_Group", "V1", 1, 1);
    kt_expect(k, o, NULL, "spec.group: Invalid value: \"Bad_Group\": a lowercase RFC 1123");
    kt_expect(k, o, NULL, "spec.version: Invalid value: \"V1\": a DNS-1035 label must consist");
    json_decref(o);

    /* local: no caBundle, no insecureSkipTLSVerify */
    o = apiservice("v1.wardle.example.com", "wardle.example.com", "v1", 1, 1);
    json_object_set_new(json_object_get(o, "spec"), "caBundle", json_string("YWJjZA=="));
    json_object_set_new(json_object_get(o, "spec"), "insecureSkipTLSVerify", json_true());
    kt_expect(k, o, NULL,
              "spec.caBundle: Invalid value: \"4 bytes\": local APIServices may not have a "
              "caBundle");
    kt_expect(k, o, NULL,
              "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have "
              "insecureSkipTLSVerify");
    /* remote: both together are refused, and the service is named */
    json_object_set_new(json_object_get(o, "spec"), "service", json_object());
    kt_expect(k, o, NULL,
              "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is "
              "present");
    kt_expect(k, o, NULL, "spec.service.namespace: Required value");
    kt_expect(k, o, NULL, "spec.service.name: Required value");
    json_decref(o);

    o = apiservice("v1.apps", "apps", "v1", 1, 1);
    json_object_set_new(
        o, "status",
        json_pack("{s:[{s:s, s:s}]}", "conditions", "type", "Available", "status", "Maybe"));
    kt_expect(k, o, NULL,
              "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: "
              "\"False\", \"True\", \"Unknown\"");
    json_decref(o);
}

static void test_status_on_create_and_update_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind(GROUP, "apiservices");
    /* a local APIService is Available at once */
    json_t *o = apiservice("v1.apps", "apps", "v1", 17800, 15);
    json_object_set_new(o, "status", json_pack("{s:[]}", "conditions"));
    assert_int_equal(k->prepare_for_create(o), 0);
    json_t *c = json_array_get(json_object_get(json_object_get(o, "status"), "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "type")), "Available");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "Local");
    /* a metav1.Time: whole seconds */
    assert_int_equal(strlen(json_string_value(json_object_get(c, "lastTransitionTime"))), 20);
    kt_expect_cell(k, o, "Service", "Local");
    kt_expect_cell(k, o, "Available", "True");
    /* an update keeps the status it had */
    json_t *next = apiservice("v1.apps", "apps", "v1", 17800, 16);
    assert_int_equal(k->prepare_for_update(next, o), 0);
    assert_true(json_equal(json_object_get(next, "status"), json_object_get(o, "status")));
    json_decref(next);
    json_decref(o);

    /* a remote one starts with no condition: Unknown */
    o = apiservice("v1alpha1.wardle.example.com", "wardle.example.com", "v1alpha1", 1000, 15);
    set_service(o);
    assert_int_equal(k->prepare_for_create(o), 0);
    assert_int_equal(json_object_size(json_object_get(o, "status")), 0);
    kt_expect_cell(k, o, "Service", "wardle/api");
    kt_expect_cell(k, o, "Available", "Unknown");
    json_object_set_new(o, "status",
                        json_pack("{s:[{s:s, s:s, s:s}]}", "conditions", "type", "Available",
                                  "status", "False", "reason", "MissingEndpoints"));
    kt_expect_cell(k, o, "Available", "False (MissingEndpoints)");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_local_and_remote),
        cmocka_unit_test(test_invalid_in_kubernetes_words),
        cmocka_unit_test(test_status_on_create_and_update_and_cells),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
