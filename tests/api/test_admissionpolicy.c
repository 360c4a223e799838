/*
 * test_admissionpolicy.c - tests for lib/api/kinds/admissionpolicy.c and the two kinds it
 * validates, ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding: the schema's
 * defaults, Kubernetes' validation rules with their messages, expressions compiled when
 * written (a syntax error or an unknown function is refused), and the webhooks'
 * matchConditions, checked by the same code.
 */
#include "cktest.h"

#include "kindtest.h"

static const char *const policy =
    "{\"metadata\":{\"name\":\"limit\"},\"spec\":{"
    "\"paramKind\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"},"
    "\"matchConstraints\":{\"resourceRules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":"
    "[\"apps\"],\"apiVersions\":[\"v1\"],\"resources\":[\"deployments\"]}]},"
    "\"matchConditions\":[{\"name\":\"a\",\"expression\":\"true\"}],"
    "\"variables\":[{\"name\":\"limit\",\"expression\":\"int(params.data.max)\"}],"
    "\"validations\":[{\"expression\":\"object.spec.replicas <= variables.limit\","
    "\"reason\":\"Forbidden\",\"messageExpression\":\"'too many'\"}],"
    "\"auditAnnotations\":[{\"key\":\"replicas\",\"valueExpression\":\"'x'\"}]}}";

static const char *const binding =
    "{\"metadata\":{\"name\":\"limit-b\"},\"spec\":{\"policyName\":\"limit\","
    "\"validationActions\":[\"Deny\"],"
    "\"paramRef\":{\"name\":\"p\",\"parameterNotFoundAction\":\"Deny\"}}}";

/* Sets spec's member (a dotted path one or two deep) to the JSON value, then expects want. */
static void expect_spec(const struct ck_kind *k, const char *text, const char *member,
                        const char *sub, const char *value, const char *want)
{
    json_t *o = load(text);
    kt_default(k, o);
    json_t *at = json_object_get(o, "spec");
    if (sub)
        at = json_object_get(at, member), member = sub;
    if (value)
        json_object_set_new(at, member, load(value));
    else
        json_object_del(at, member);
    kt_expect(k, o, NULL, want);
    json_decref(o);
}

/* text, defaulted, is valid and shows value1 in column col1 and value2 in col2. */
static void expect_valid(const struct ck_kind *k, const char *text, const char *col1,
                         const char *value1, const char *col2, const char *value2)
{
    json_t *o = load(text);
    kt_default(k, o);
    kt_expect(k, o, NULL, NULL);
    kt_expect_cell(k, o, col1, value1);
    kt_expect_cell(k, o, col2, value2);
    json_decref(o);
}

static void test_policy_defaults_and_validation(void **state)
{
    (void)state;
    const struct ck_kind *k =
        kt_kind("admissionregistration.k8s.io", "validatingadmissionpolicies");
    assert_false(k->namespaced);
    json_t *o = load(policy);
    kt_default(k, o);
    const json_t *spec = json_object_get(o, "spec");
    const json_t *mc = json_object_get(spec, "matchConstraints");
    assert_string_equal(json_string_value(json_object_get(spec, "failurePolicy")), "Fail");
    assert_string_equal(json_string_value(json_object_get(mc, "matchPolicy")), "Equivalent");
    assert_true(json_is_object(json_object_get(mc, "namespaceSelector")));
    json_decref(o);
    expect_valid(k, policy, "Validations", "1", "ParamKind", "v1/ConfigMap");

    expect_spec(k, policy, "failurePolicy", NULL, "\"Never\"",
                "spec.failurePolicy: Unsupported value: \"Never\": supported values: \"Fail\", "
                "\"Ignore\"");
    expect_spec(k, policy, "matchConstraints", NULL, NULL, "spec.matchConstraints: Required value");
    expect_spec(k, policy, "matchConstraints", "resourceRules", "[]",
                "spec.matchConstraints.resourceRules: Required value");
    expect_spec(k, policy, "paramKind", "kind", "\"Config_Map\"",
                "spec.paramKind.kind: Invalid value: \"Config_Map\": may have mixed case, but "
                "should otherwise match: a DNS-1035 label");
    expect_spec(k, policy, "validations", NULL, "[{\"expression\":\"object.spec.replicas <=\"}]",
                "spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": "
                "compilation failed: ERROR: <input>:1:");
    expect_spec(k, policy, "validations", NULL, "[{\"expression\":\"nope(1)\"}]",
                "undeclared reference to 'nope'");
    expect_spec(k, policy, "validations", NULL, "[{\"expression\":\"true\",\"reason\":\"Gone\"}]",
                "spec.validations[0].reason: Unsupported value: \"Gone\": supported values: "
                "\"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"");
    expect_spec(k, policy, "validations", NULL,
                "[{\"expression\":\"true\",\"message\":\"two\\nlines\"}]",
                "message must not contain line breaks");
    expect_spec(k, policy, "variables", NULL, "[{\"name\":\"in\",\"expression\":\"1\"}]",
                "spec.variables[0].name: Invalid value: \"in\": name is not a valid CEL "
                "identifier");
    expect_spec(k, policy, "auditAnnotations", NULL,
                "[{\"key\":\"a\",\"valueExpression\":\"'x'\"},"
                "{\"key\":\"a\",\"valueExpression\":\"'y'\"}]",
                "spec.auditAnnotations[1].key: Duplicate value: \"a\"");
    expect_spec(
        k, policy, "matchConditions", NULL,
        "[{\"name\":\"a\",\"expression\":\"true\"},{\"name\":\"a\",\"expression\":\"1 +\"}]",
        "spec.matchConditions[1].name: Duplicate value: \"a\"");
    json_t *none = load(policy);
    kt_default(k, none);
    json_object_del(json_object_get(none, "spec"), "validations");
    json_object_del(json_object_get(none, "spec"), "auditAnnotations");
    kt_expect(k, none, NULL,
              "spec.validations: Required value: validations or auditAnnotations must contain at "
              "least one item");
    json_decref(none);
}

static void test_binding_validation(void **state)
{
    (void)state;
    const struct ck_kind *k =
        kt_kind("admissionregistration.k8s.io", "validatingadmissionpolicybindings");
    expect_valid(k, binding, "PolicyName", "limit", "ParamRef", "*/p");
    expect_spec(k, binding, "validationActions", NULL, "[\"Deny\",\"Warn\"]",
                "must not contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)");
    expect_spec(k, binding, "validationActions", NULL, "[]",
                "spec.validationActions: Required value: at least one validation action is "
                "required");
    expect_spec(k, binding, "validationActions", NULL, "[\"Audit\",\"Audit\"]",
                "spec.validationActions[1]: Duplicate value: \"Audit\"");
    expect_spec(k, binding, "policyName", NULL, NULL, "spec.policyName: Required value");
    expect_spec(k, binding, "paramRef", NULL, "{\"parameterNotFoundAction\":\"Deny\"}",
                "spec.paramRef: Required value: one of name or selector must be specified");
    expect_spec(k, binding, "paramRef", NULL, "{\"name\":\"p\",\"selector\":{}}",
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive");
    expect_spec(k, binding, "paramRef", "parameterNotFoundAction", NULL,
                "spec.paramRef.parameterNotFoundAction: Required value");
    expect_spec(k, binding, "matchResources", NULL, "{\"matchPolicy\":\"Fuzzy\"}",
                "spec.matchResouces.matchPolicy: Unsupported value: \"Fuzzy\"");
}

static void test_webhook_match_conditions(void **state)
{
    (void)state;
    const struct ck_kind *k =
        kt_kind("admissionregistration.k8s.io", "validatingwebhookconfigurations");
    json_t *o = load("{\"metadata\":{\"name\":\"w\"},\"webhooks\":[{\"name\":\"a.b.c\","
                     "\"clientConfig\":{\"url\":\"https://h/x\"},\"sideEffects\":\"None\","
                     "\"admissionReviewVersions\":[\"v1\"],\"matchConditions\":["
                     "{\"name\":\"ok\",\"expression\":\"request.operation == 'CREATE'\"},"
                     "{\"name\":\"bad\",\"expression\":\"object.x ==\"},"
                     "{\"name\":\"Not Qualified!\",\"expression\":\"true\"}]}]}");
    kt_default(k, o);
    kt_expect(k, o, NULL,
              "webhooks[0].matchConditions[1].expression: Invalid value: \"object.x ==\": "
              "compilation failed: ERROR: <input>:1:");
    kt_expect(k, o, NULL, "webhooks[0].matchConditions[2].name: Invalid value: \"Not Qualified!\"");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_defaults_and_validation),
        cmocka_unit_test(test_binding_validation),
        cmocka_unit_test(test_webhook_match_conditions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
