/*
 * test_policy_typecheck.c - tests for lib/apiserver/admission/typecheck.c: the warnings
 * Kubernetes writes to a ValidatingAdmissionPolicy's status.typeChecking, over the
 * built-in kinds' schemas with their $refs (DeploymentSpec, PodTemplateSpec, ObjectMeta),
 * params of the paramKind's type.
 */
#include "cktest.h"

#include <string.h>

#include "../../lib/apiserver/internal.h"

static const struct ck_schemas *schemas(void)
{
    static struct ck_schemas *set;
    if (!set) {
        struct ck_err err = {0};
        assert_int_equal(ck_api_builtin_schemas(&set, &err), 0);
    }
    return set;
}

/* The warnings of a policy matching deployments (and rules, a JSON array text, when set). */
static json_t *warnings_of(const char *validations, const char *rules)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"spec\":{\"matchConstraints\":{\"resourceRules\":%s},\"validations\":%s}}",
             rules ? rules
                   : "[{\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"],"
                     "\"resources\":[\"deployments\"],\"operations\":[\"CREATE\"]}]",
             validations);
    json_t *policy = json_loads(text, 0, NULL);
    assert_non_null(policy);
    json_t *w = NULL;
    assert_int_equal(ck__policy_typecheck(policy, schemas(), &w), 0);
    json_decref(policy);
    return w;
}

static const char *warning(const json_t *w, size_t i, const char *field_ref)
{
    const json_t *e = json_array_get(w, i);
    assert_string_equal(json_string_value(json_object_get(e, "fieldRef")), field_ref);
    return json_string_value(json_object_get(e, "warning"));
}

static void test_mistyped_expressions_warn(void **state)
{
    (void)state;
    json_t *w = warnings_of(
        "[{\"expression\":\"object.spec.replicas + 'x'\"},"
        "{\"expression\":\"object.spec.nosuchfield\"},"
        "{\"expression\":\"object.spec.template.spec.containers.all(c, c.image != '')\","
        "\"messageExpression\":\"object.metadata.name + 1\"}]",
        NULL);
    assert_int_equal(json_array_size(w), 3);
    assert_string_equal(
        warning(w, 0, "spec.validations[0].expression"),
        "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_+_' "
        "applied to '(int, string)'\n | object.spec.replicas + 'x'\n | .....................^\n");
    assert_string_equal(warning(w, 1, "spec.validations[1].expression"),
                        "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field "
                        "'nosuchfield'\n | object.spec.nosuchfield\n | ...........^\n");
    assert_non_null(strstr(warning(w, 2, "spec.validations[2].messageExpression"),
                           "found no matching overload for '_+_' applied to '(string, int)'"));
    json_decref(w);
}

static void test_well_typed_policy_has_no_warnings(void **state)
{
    (void)state;
    json_t *w = warnings_of(
        "[{\"expression\":\"object.spec.replicas <= 5 && request.userInfo.username != '' && "
        "object.spec.template.metadata.labels['app'] == 'x' && oldObject.kind == 'Deployment'\","
        "\"messageExpression\":\"'replicas: ' + string(object.spec.replicas)\"}]",
        NULL);
    assert_int_equal(json_array_size(w), 0);
    json_decref(w);
}

/* Each kind is checked on its own, sorted by group, version and kind; params without a
 * paramKind is undeclared; wildcard groups give up. */
static void test_every_kind_and_wildcards(void **state)
{
    (void)state;
    json_t *w = warnings_of(
        "[{\"expression\":\"object.spec.replicas > 1\"},{\"expression\":\"params.x\"}]",
        "[{\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"],\"resources\":[\"replicasets\","
        "\"deployments\",\"daemonsets\",\"deployments/scale\"]}]");
    assert_int_equal(json_array_size(w), 2);
    assert_string_equal(warning(w, 0, "spec.validations[0].expression"),
                        "apps/v1, Kind=DaemonSet: ERROR: <input>:1:12: undefined field "
                        "'replicas'\n | object.spec.replicas > 1\n | ...........^\n");
    const char *p = warning(w, 1, "spec.validations[1].expression");
    assert_non_null(strstr(p, "apps/v1, Kind=DaemonSet: ERROR: <input>:1:1: undeclared "
                              "reference to 'params' (in container '')"));
    assert_non_null(strstr(p, "\n\napps/v1, Kind=Deployment: "));
    assert_non_null(strstr(p, "\n\napps/v1, Kind=ReplicaSet: "));
    json_decref(w);
    w = warnings_of("[{\"expression\":\"object.nosuch\"}]",
                    "[{\"apiGroups\":[\"*\"],\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"]}]");
    assert_int_equal(json_array_size(w), 0);
    json_decref(w);
    w = warnings_of("[{\"expression\":\"object.nosuch\"}]",
                    "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"]}]");
    assert_non_null(strstr(warning(w, 0, "spec.validations[0].expression"),
                           "/v1, Kind=Pod: ERROR: <input>:1:7: undefined field 'nosuch'"));
    json_decref(w);
}

/* params has the paramKind's type; the other variables are declared as Kubernetes does. */
static void test_params_of_the_param_kind(void **state)
{
    (void)state;
    json_t *policy = json_loads(
        "{\"spec\":{\"paramKind\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"},"
        "\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"apps\"],"
        "\"apiVersions\":[\"v1\"],\"resources\":[\"deployments\"]}]},"
        "\"validations\":[{\"expression\":\"int(params.data['max']) >= object.spec.replicas && "
        "namespaceObject.metadata.name != '' && authorizer.group('apps').resource('deployments')"
        ".check('create').allowed() && variables.x\"},"
        "{\"expression\":\"params.data['max'] > 1\"}]}}",
        0, NULL);
    assert_non_null(policy);
    json_t *w = NULL;
    assert_int_equal(ck__policy_typecheck(policy, schemas(), &w), 0);
    assert_int_equal(json_array_size(w), 1);
    assert_non_null(strstr(warning(w, 0, "spec.validations[1].expression"),
                           "apps/v1, Kind=Deployment: ERROR: <input>:1:20: found no matching "
                           "overload for '_>_' applied to '(string, int)'"));
    json_decref(w);
    json_decref(policy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mistyped_expressions_warn),
        cmocka_unit_test(test_well_typed_policy_has_no_warnings),
        cmocka_unit_test(test_every_kind_and_wildcards),
        cmocka_unit_test(test_params_of_the_param_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
