/*
 * test_webhookconfiguration.c - tests for lib/api/kinds/webhookconfiguration.c and the two
 * admissionregistration.k8s.io/v1 kinds it serves: the schema's defaults (SetDefaults of
 * Kubernetes' admissionregistration v1), the validation rules with Kubernetes' messages,
 * and the WEBHOOKS column.
 */
#include "cktest.h"

#include "kindtest.h"

static const char *const valid =
    "{\"metadata\":{\"name\":\"policy\"},\"webhooks\":[{\"name\":\"deny.example.com\","
    "\"clientConfig\":{\"url\":\"https://127.0.0.1:9443/validate\"},"
    "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
    "\"resources\":[\"configmaps\"]}],\"sideEffects\":\"None\","
    "\"admissionReviewVersions\":[\"v1\"]}]}";

static json_t *hook0(json_t *o)
{
    return json_array_get(json_object_get(o, "webhooks"), 0);
}

static void test_defaults_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *m =
        kt_kind("admissionregistration.k8s.io", "mutatingwebhookconfigurations");
    const struct ck_kind *v =
        kt_kind("admissionregistration.k8s.io", "validatingwebhookconfigurations");
    assert_false(m->namespaced);
    assert_false(v->namespaced);
    json_t *o = load(valid);
    kt_default(m, o);
    json_t *h = hook0(o);
    assert_string_equal(json_string_value(json_object_get(h, "failurePolicy")), "Fail");
    assert_string_equal(json_string_value(json_object_get(h, "matchPolicy")), "Equivalent");
    assert_string_equal(json_string_value(json_object_get(h, "reinvocationPolicy")), "Never");
    assert_int_equal(json_integer_value(json_object_get(h, "timeoutSeconds")), 10);
    assert_true(json_is_object(json_object_get(h, "namespaceSelector")));
    assert_true(json_is_object(json_object_get(h, "objectSelector")));
    const json_t *rule = json_array_get(json_object_get(h, "rules"), 0);
    assert_string_equal(json_string_value(json_object_get(rule, "scope")), "*");
    kt_expect(m, o, NULL, NULL);
    kt_expect_cell(m, o, "Webhooks", "1");
    json_decref(o);

    o = load(valid);
    kt_default(v, o);
    assert_null(json_object_get(hook0(o), "reinvocationPolicy"));
    json_array_append(json_object_get(o, "webhooks"), hook0(o));
    json_object_set_new(json_array_get(json_object_get(o, "webhooks"), 1), "name",
                        json_string("other.example.com"));
    kt_expect_cell(v, o, "Webhooks", "2");
    json_decref(o);

    o = load("{\"metadata\":{\"name\":\"svc\"},\"webhooks\":[{\"name\":\"a.b.c\",\"clientConfig\":"
             "{\"service\":{\"namespace\":\"ns\",\"name\":\"hook\"}},\"sideEffects\":\"None\","
             "\"admissionReviewVersions\":[\"v1beta1\"]}]}");
    kt_default(v, o);
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(hook0(o), "clientConfig"), "service"), "port")),
        443);
    kt_expect(v, o, NULL, NULL);
    json_decref(o);
}

/* Sets member of the first webhook to the JSON text value (NULL: removes it), then expects. */
static void expect_with(const struct ck_kind *k, const char *member, const char *value,
                        const char *want)
{
    json_t *o = load(valid);
    kt_default(k, o);
    if (value)
        json_object_set_new(hook0(o), member, load(value));
    else
        json_object_del(hook0(o), member);
    kt_expect(k, o, NULL, want);
    json_decref(o);
}

static void test_validation(void **state)
{
    (void)state;
    const struct ck_kind *m =
        kt_kind("admissionregistration.k8s.io", "mutatingwebhookconfigurations");
    const struct ck_kind *v =
        kt_kind("admissionregistration.k8s.io", "validatingwebhookconfigurations");
    expect_with(v, "name", "\"deny.example\"",
                "webhooks[0].name: Invalid value: \"deny.example\": should be a domain with at "
                "least three segments separated by dots");
    expect_with(v, "name", "\"Deny.example.com\"",
                "webhooks[0].name: Invalid value: \"Deny.example.com\": a lowercase RFC 1123 "
                "subdomain");
    expect_with(v, "clientConfig", "{}",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is "
                "required");
    expect_with(v, "clientConfig",
                "{\"url\":\"https://h/x\",\"service\":{\"namespace\":\"a\",\"name\":\"b\"}}",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is "
                "required");
    expect_with(v, "clientConfig", "{\"url\":\"http://h/x\"}",
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only "
                "allowed URL scheme; desired format: https://host[/path]");
    expect_with(v, "clientConfig", "{\"url\":\"https://h/x?a=b\"}",
                "webhooks[0].clientConfig.url: Invalid value");
    expect_with(v, "sideEffects", NULL,
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun");
    expect_with(v, "sideEffects", "\"Some\"",
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", "
                "\"NoneOnDryRun\"");
    expect_with(v, "admissionReviewVersions", NULL,
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, "
                "v1beta1");
    expect_with(v, "admissionReviewVersions", "[\"v2\"]",
                "webhooks[0].admissionReviewVersions: Invalid value: [v2]: must include at least "
                "one of v1, v1beta1");
    expect_with(v, "failurePolicy", "\"Sometimes\"",
                "webhooks[0].failurePolicy: Unsupported value: \"Sometimes\": supported values: "
                "\"Fail\", \"Ignore\"");
    expect_with(v, "matchPolicy", "\"Loose\"",
                "webhooks[0].matchPolicy: Unsupported value: \"Loose\"");
    expect_with(v, "timeoutSeconds", "31",
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between "
                "1 and 30 seconds");
    expect_with(v, "timeoutSeconds", "30", NULL);
    expect_with(m, "reinvocationPolicy", "\"Always\"",
                "webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: "
                "\"IfNeeded\", \"Never\"");
    expect_with(m, "reinvocationPolicy", "\"IfNeeded\"", NULL);
    expect_with(v, "rules",
                "[{\"operations\":[\"*\",\"CREATE\"],\"apiGroups\":[\"\"],"
                "\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"]}]",
                "webhooks[0].rules[0].operations: Invalid value: [* CREATE]: if '*' is present, "
                "must not specify other operations");
    expect_with(v, "rules",
                "[{\"operations\":[\"PATCH\"],\"apiGroups\":[\"\"],"
                "\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"]}]",
                "webhooks[0].rules[0].operations[0]: Unsupported value: \"PATCH\"");
    expect_with(v, "rules",
                "[{\"operations\":[\"CREATE\"],\"apiVersions\":[\"v1\"],"
                "\"resources\":[\"pods\"]}]",
                "webhooks[0].rules[0].apiGroups: Required value");
    expect_with(v, "rules",
                "[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"*\",\"apps\"],"
                "\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"]}]",
                "webhooks[0].rules[0].apiGroups: Invalid value: [* apps]: if '*' is present, must "
                "not specify other API groups");
    expect_with(v, "rules",
                "[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],"
                "\"apiVersions\":[\"v1\"],\"resources\":[\"*/*\",\"pods\"]}]",
                "webhooks[0].rules[0].resources: Invalid value: [*/* pods]: if '*/*' is present, "
                "must not specify other resources");
    expect_with(v, "rules",
                "[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],"
                "\"apiVersions\":[\"v1\"],\"resources\":[\"pods/*\",\"pods/status\"]}]",
                "webhooks[0].rules[0].resources[1]: Invalid value: \"pods/status\": if 'pods/*' "
                "is present, must not specify pods/status");
    expect_with(v, "rules",
                "[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],"
                "\"apiVersions\":[\"v1\"],\"resources\":[\"*\",\"pods/status\"]}]",
                NULL);
    expect_with(v, "rules",
                "[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],"
                "\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"],\"scope\":\"All\"}]",
                "webhooks[0].rules[0].scope: Unsupported value: \"All\"");

    json_t *o = load(valid);
    kt_default(v, o);
    json_array_append(json_object_get(o, "webhooks"), hook0(o));
    kt_expect(v, o, NULL, "webhooks[1].name: Duplicate value: \"deny.example.com\"");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_cells),
        cmocka_unit_test(test_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
