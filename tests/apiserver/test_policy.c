/*
 * test_policy.c - tests for lib/apiserver/admission/policy.c (the ValidatingAdmissionPolicy
 * plugin), match.c (matchConstraints, excludeResourceRules, resourceNames, a binding's
 * matchResources) and cel.c (the activation, matchConditions' verdicts), through a real
 * server: refusals in Kubernetes' words with the code of the validation's reason, Warn's
 * header, failurePolicy Fail and Ignore, parameters by name and by selector with
 * parameterNotFoundAction, variables and messageExpression.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/apiserver/internal.h"
#include "ckube/auth.h"
#include "ckube/internal/util.h"
#include "httptest.h"

#define POLICIES   "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
#define BINDINGS   "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
#define CONFIGMAPS "/api/v1/namespaces/default/configmaps"

/* POSTs body to path, expecting status; returns the response for more checks (release it). */
static struct response post(struct ck_apiserver *s, const char *path, const char *body, long status)
{
    struct response r;
    http_call(s, "POST", path, body, NULL, &r);
    if (r.status != status)
        fail_msg("POST %s: %ld, want %ld: %s", path, r.status, status, r.body);
    return r;
}

static void created(struct ck_apiserver *s, const char *path, const char *body)
{
    struct response r = post(s, path, body, 201);
    response_release(&r);
}

/* A ConfigMap create named name with labels (JSON object text) and data, expecting status. */
static struct response configmap(struct ck_apiserver *s, const char *name, const char *labels,
                                 const char *data, long status)
{
    char body[512];
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\",\"labels\":%s},\"data\":%s}", name,
             labels, data);
    return post(s, CONFIGMAPS, body, status);
}

static void expect_body(struct response *r, const char *want)
{
    if (!strstr(r->body, want))
        fail_msg("no \"%s\" in %s", want, r->body);
    response_release(r);
}

static void test_deny_match_and_reason(void **state)
{
    struct ck_apiserver *s = served(state);
    /* configmaps whose data.size is over 8 or 7, but not "spared" (excluded by name) */
    created(s, POLICIES,
            "{\"metadata\":{\"name\":\"small\"},\"spec\":{\"matchConstraints\":{"
            "\"resourceRules\":[{\"operations\":[\"CREATE\",\"UPDATE\"],\"apiGroups\":[\"\"],"
            "\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"]}],"
            "\"excludeResourceRules\":[{\"operations\":[\"*\"],\"apiGroups\":[\"\"],"
            "\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"],\"resourceNames\":"
            "[\"spared\"]}]},"
            "\"variables\":[{\"name\":\"n\",\"expression\":\"int(object.data.size)\"}],"
            "\"validations\":[{\"expression\":\"variables.n <= 8\"},"
            "{\"expression\":\"variables.n != 7\",\"reason\":\"Forbidden\","
            "\"message\":\"seven is right out\"}]}}");
    /* only objects labelled checked=yes */
    created(s, BINDINGS,
            "{\"metadata\":{\"name\":\"small-b\"},\"spec\":{\"policyName\":\"small\","
            "\"validationActions\":[\"Deny\"],\"matchResources\":{\"objectSelector\":"
            "{\"matchLabels\":{\"checked\":\"yes\"}}}}}");
    struct response r = configmap(s, "big", "{\"checked\":\"yes\"}", "{\"size\":\"9\"}", 422);
    expect_body(&r, "configmaps \\\"big\\\" is forbidden: ValidatingAdmissionPolicy 'small' with "
                    "binding 'small-b' denied request: failed expression: variables.n <= 8");
    /* the reason's code: Forbidden, 403, with the validation's message */
    r = configmap(s, "seven", "{\"checked\":\"yes\"}", "{\"size\":\"7\"}", 403);
    expect_body(&r, "denied request: seven is right out");
    r = configmap(s, "unchecked", "{}", "{\"size\":\"9\"}", 201);
    response_release(&r);
    r = configmap(s, "spared", "{\"checked\":\"yes\"}", "{\"size\":\"9\"}", 201);
    response_release(&r);
    r = configmap(s, "fine", "{\"checked\":\"yes\"}", "{\"size\":\"1\"}", 201);
    response_release(&r);
    /* an error under failurePolicy Fail refuses with the evaluation's words; a variable's
     * error is that of the expression reading it */
    r = configmap(s, "nosize", "{\"checked\":\"yes\"}", "{}", 422);
    expect_body(&r, "denied request: expression 'variables.n <= 8' resulted in error: no such "
                    "key: size");
}

static void test_warn_ignore_and_params(void **state)
{
    struct ck_apiserver *s = served(state);
    created(s, CONFIGMAPS,
            "{\"metadata\":{\"name\":\"p1\",\"labels\":{\"limits\":\"on\"}},\"data\":"
            "{\"max\":\"5\"}}");
    created(s, CONFIGMAPS,
            "{\"metadata\":{\"name\":\"p2\",\"labels\":{\"limits\":\"on\"}},\"data\":"
            "{\"max\":\"3\"}}");
    created(s, POLICIES,
            "{\"metadata\":{\"name\":\"limit\"},\"spec\":{\"failurePolicy\":\"Ignore\","
            "\"paramKind\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"},"
            "\"matchConstraints\":{\"resourceRules\":[{\"operations\":[\"CREATE\"],"
            "\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"]}]},"
            "\"matchConditions\":[{\"name\":\"has-n\",\"expression\":\"has(object.data) && "
            "'n' in object.data\"}],"
            "\"validations\":[{\"expression\":\"int(object.data.n) <= int(params.data.max)\","
            "\"messageExpression\":\"'n over ' + params.data.max + ' of ' + "
            "params.metadata.name\"}]}}");
    created(s, BINDINGS,
            "{\"metadata\":{\"name\":\"limit-warn\"},\"spec\":{\"policyName\":\"limit\","
            "\"validationActions\":[\"Warn\"],\"paramRef\":{\"selector\":{\"matchLabels\":"
            "{\"limits\":\"on\"}},\"parameterNotFoundAction\":\"Allow\"}}}");
    /* evaluated once per parameter: p2's limit (3) fails, p1's (5) does not */
    struct response r = configmap(s, "four", "{}", "{\"n\":\"4\"}", 201);
    if (!strstr(r.headers, "Validation failed for ValidatingAdmissionPolicy 'limit' with "
                           "binding 'limit-warn': n over 3 of p2"))
        fail_msg("no warning in %s", r.headers);
    if (strstr(r.headers, "of p1"))
        fail_msg("p1 warned: %s", r.headers);
    response_release(&r);
    /* an error under Ignore lets the request through, without a warning */
    r = configmap(s, "nan", "{}", "{\"n\":\"x\"}", 201);
    if (strstr(r.headers, "Validation failed"))
        fail_msg("warned on an ignored error: %s", r.headers);
    response_release(&r);
    /* a false match condition: not evaluated at all */
    r = configmap(s, "other", "{}", "{\"m\":\"9\"}", 201);
    if (strstr(r.headers, "Validation failed"))
        fail_msg("warned without a match: %s", r.headers);
    response_release(&r);

    /* a Deny binding whose parameter is missing: Allow lets through, Deny refuses */
    created(s, POLICIES,
            "{\"metadata\":{\"name\":\"strict\"},\"spec\":{"
            "\"paramKind\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"},"
            "\"matchConstraints\":{\"resourceRules\":[{\"operations\":[\"CREATE\"],"
            "\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"secrets\"]}]},"
            "\"validations\":[{\"expression\":\"params != null\"}]}}");
    created(s, BINDINGS,
            "{\"metadata\":{\"name\":\"strict-b\"},\"spec\":{\"policyName\":\"strict\","
            "\"validationActions\":[\"Deny\"],\"paramRef\":{\"name\":\"gone\","
            "\"parameterNotFoundAction\":\"Deny\"}}}");
    r = post(s, "/api/v1/namespaces/default/secrets", "{\"metadata\":{\"name\":\"s\"}}", 422);
    expect_body(&r, "ValidatingAdmissionPolicy 'strict' with binding 'strict-b' denied request: "
                    "failed to configure binding: no params found for policy binding with "
                    "`Deny` parameterNotFoundAction");
    created(s, CONFIGMAPS, "{\"metadata\":{\"name\":\"gone\"}}");
    r = post(s, "/api/v1/namespaces/default/secrets", "{\"metadata\":{\"name\":\"s\"}}", 201);
    response_release(&r);
    /* the configuration kinds themselves never pass policies */
    created(s, POLICIES,
            "{\"metadata\":{\"name\":\"no-policies\"},\"spec\":{\"matchConstraints\":{"
            "\"resourceRules\":[{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],"
            "\"apiVersions\":[\"*\"],\"resources\":[\"*\"]}]},"
            "\"validations\":[{\"expression\":\"false\"}]}}");
    created(s, BINDINGS,
            "{\"metadata\":{\"name\":\"no-policies\"},\"spec\":{\"policyName\":\"no-policies\","
            "\"validationActions\":[\"Deny\"]}}");
    r = post(s, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"n\"}}", 422);
    expect_body(&r, "failed expression: false");
    http_call(s, "DELETE", POLICIES "/no-policies", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
}

/* Validations read `authorizer`; a messageExpression cannot (Kubernetes compiles it
 * without), so it fails and the message is used. */
static void test_authorizer_in_validations_only(void **state)
{
    struct ck_apiserver *s = served(state);
    /* every configmap create: a validation that is false when the check is allowed */
    static const char policy[] =
        "{\"metadata\":{\"name\":\"authz\"},\"spec\":{\"matchConstraints\":{\"resourceRules\":"
        "[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
        "\"resources\":[\"configmaps\"]}]},\"validations\":[{\"expression\":"
        "\"!authorizer.path('/x').check('get').allowed()\",\"message\":\"the fallback\","
        "\"messageExpression\":\"authorizer.path('/x').check('get').allowed() ? 'allowed' : "
        "'denied'\"}]}}";
    created(s, POLICIES, policy);
    created(s, BINDINGS,
            "{\"metadata\":{\"name\":\"authz-b\"},\"spec\":{\"policyName\":"
            "\"authz\",\"validationActions\":[\"Deny\"]}}");
    struct response r = configmap(s, "c", "{}", "{}", 422);
    expect_body(&r, "ValidatingAdmissionPolicy 'authz' with binding 'authz-b' denied request: "
                    "the fallback");
}

/* The verdict of conditions (a JSON array) over a create of obj, and reterr's words. */
static int verdict(const char *conditions, const char *obj, bool ignore, char *why, size_t size)
{
    json_t *conds = json_loads(conditions, 0, NULL);
    json_t *o = json_loads(obj, 0, NULL);
    assert_non_null(conds);
    assert_non_null(o);
    struct ck__admission_attrs a = {.op = CK__ADMISSION_CREATE,
                                    .kind = ck_kind_lookup("", "v1", "configmaps"),
                                    .namespace = "default",
                                    .name = "c",
                                    .obj = o};
    struct ck__cel_input in = {.a = &a};
    struct ck_err err = {0};
    int r = ck__admission_match_conditions(conds, &in, ignore, &err);
    snprintf(why, size, "%s", ck_err_message(&err));
    ck_err_release(&err);
    ck__cel_input_release(&in);
    json_decref(conds);
    json_decref(o);
    return r;
}

static void test_match_conditions(void **state)
{
    (void)state;
    char why[512];
    static const char obj[] = "{\"metadata\":{\"name\":\"c\"},\"data\":{\"a\":\"1\"}}";
    assert_int_equal(verdict("[{\"name\":\"a\",\"expression\":\"request.operation == 'CREATE' "
                             "&& request.namespace == 'default' && object.data.a == '1'\"}]",
                             obj, false, why, sizeof(why)),
                     1);
    assert_int_equal(verdict("[{\"name\":\"a\",\"expression\":\"oldObject == null\"},"
                             "{\"name\":\"b\",\"expression\":\"object.data.a == '2'\"}]",
                             obj, false, why, sizeof(why)),
                     0);
    /* one false wins over another's error */
    assert_int_equal(verdict("[{\"name\":\"a\",\"expression\":\"object.data.zz == 1\"},"
                             "{\"name\":\"b\",\"expression\":\"false\"}]",
                             obj, false, why, sizeof(why)),
                     0);
    /* errors and trues: Fail refuses with every error, Ignore does not match */
    assert_int_equal(verdict("[{\"name\":\"a\",\"expression\":\"object.data.zz == 1\"},"
                             "{\"name\":\"b\",\"expression\":\"true\"},"
                             "{\"name\":\"c\",\"expression\":\"params.x\"}]",
                             obj, false, why, sizeof(why)),
                     CK_EINVAL);
    assert_string_equal(why, "[expression 'object.data.zz == 1' resulted in error: no such key: "
                             "zz, expression 'params.x' resulted in error: undeclared reference "
                             "to 'params' (in container '')]");
    assert_int_equal(verdict("[{\"name\":\"a\",\"expression\":\"object.data.zz == 1\"}]", obj, true,
                             why, sizeof(why)),
                     0);
}

/* expr over a create of a ConfigMap by user (NULL: the server's own write) with reg's RBAC. */
static char *authz_eval(struct ck__registry *reg, const struct ck_auth_user *user, const char *expr)
{
    struct ck__admission_attrs a = {.op = CK__ADMISSION_CREATE,
                                    .kind = ck_kind_lookup("", "v1", "configmaps"),
                                    .namespace = "default",
                                    .name = "c",
                                    .user = user};
    struct ck__cel_input in = {.a = &a, .reg = reg, .policy = true};
    struct ck_cel_result *res = NULL;
    struct ck_err err = {0};
    int r = ck__admission_cel_eval(expr, &in, &res, &err);
    char *out = r == 0 ? ck_cel_result_format(res) : ck__strdup(ck_err_message(&err));
    ck_cel_result_free(res);
    ck_err_release(&err);
    ck__cel_input_release(&in);
    assert_non_null(out);
    return out;
}

static void expect_authz(struct ck__registry *reg, const struct ck_auth_user *user,
                         const char *expr, const char *want)
{
    char *got = authz_eval(reg, user, expr);
    if (strcmp(got, want))
        fail_msg("%s: got %s, want %s", expr, got, want);
    free(got);
}

/* An authorizer of the RBAC policy of ClusterRoles and ClusterRoleBindings (JSON arrays). */
static struct ck_rbac_authorizer *rbac_of(const char *cluster_roles, const char *bindings)
{
    json_t *r = json_loads(cluster_roles, 0, NULL), *b = json_loads(bindings, 0, NULL);
    struct ck_rbac_policy *policy = NULL;
    struct ck_err err = {0};
    assert_true(r && b && ck_rbac_policy_new(NULL, r, NULL, b, &policy, &err) == 0);
    json_decref(r);
    json_decref(b);
    return ck_rbac_authorizer_new(policy);
}

/* The `authorizer` variable asks RBAC about the request's user (or a service account). */
static void test_authorizer_variable(void **state)
{
    (void)state;
    struct ck__registry reg = {
        .authorizer = rbac_of(
            "[{\"metadata\":{\"name\":\"secret-lister\"},\"rules\":[{\"apiGroups\":[\"\"],"
            "\"resources\":[\"secrets\"],\"verbs\":[\"list\"]}]},"
            "{\"metadata\":{\"name\":\"cm-getter\"},\"rules\":[{\"apiGroups\":[\"\"],"
            "\"resources\":[\"configmaps\"],\"verbs\":[\"get\"],\"resourceNames\":[\"c\"]}]}]",
            "[{\"metadata\":{\"name\":\"a\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
            "\"kind\":\"ClusterRole\",\"name\":\"secret-lister\"},\"subjects\":[{\"kind\":\"User\","
            "\"name\":\"alice\"},{\"kind\":\"ServiceAccount\",\"namespace\":\"ci\",\"name\":"
            "\"builder\"}]},"
            "{\"metadata\":{\"name\":\"b\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
            "\"kind\":\"ClusterRole\",\"name\":\"cm-getter\"},\"subjects\":[{\"kind\":\"User\","
            "\"name\":\"alice\"}]},"
            "{\"metadata\":{\"name\":\"c\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
            "\"kind\":\"ClusterRole\",\"name\":\"gone\"},\"subjects\":[{\"kind\":\"User\","
            "\"name\":\"bob\"}]}]")};
    struct ck_err err = {0};
    struct ck_auth_user *alice = ck_auth_user_new("alice", NULL);
    struct ck_auth_user *bob = ck_auth_user_new("bob", NULL);
    struct ck_auth_user *admin = ck_auth_user_new("admin", NULL);
    assert_int_equal(ck_auth_user_add_group(admin, "system:masters"), 0);

    static const char list_secrets[] =
        "authorizer.group('').resource('secrets').namespace('default').check('list').allowed()";
    expect_authz(&reg, alice, list_secrets, "true");
    expect_authz(&reg, bob, list_secrets, "false");
    expect_authz(&reg, admin, list_secrets, "true");
    expect_authz(&reg, NULL, list_secrets, "true"); /* the server's own write */
    /* RBAC's reason for a binding to a missing role */
    expect_authz(&reg, bob, "authorizer.group('').resource('secrets').check('list').reason()",
                 "\"RBAC: clusterrole.rbac.authorization.k8s.io \\\"gone\\\" not found\"");
    /* the request's own resource: configmaps "c" in "default" */
    expect_authz(&reg, alice, "authorizer.requestResource.check('get').allowed()", "true");
    expect_authz(&reg, alice, "authorizer.requestResource.name('d').check('get').allowed()",
                 "false");
    /* a service account's rights, not the user's */
    expect_authz(&reg, bob,
                 "authorizer.serviceAccount('ci', 'builder').group('').resource('secrets')"
                 ".check('list').allowed()",
                 "true");
    expect_authz(&reg, alice,
                 "authorizer.serviceAccount('ci', 'other').group('').resource('secrets')"
                 ".check('list').allowed()",
                 "false");
    /* without authorization every check is allowed */
    struct ck__registry open = {0};
    expect_authz(&open, bob, list_secrets, "true");
    /* an input without a registry has no authorizer */
    struct ck__admission_attrs a = {.op = CK__ADMISSION_CREATE,
                                    .kind = ck_kind_lookup("", "v1", "configmaps")};
    struct ck__cel_input in = {.a = &a};
    struct ck_cel_result *res = NULL;
    assert_int_equal(ck__admission_cel_eval(list_secrets, &in, &res, &err), CK_EINVAL);
    assert_non_null(strstr(ck_err_message(&err), "undeclared reference to 'authorizer'"));
    ck_err_release(&err);
    ck__cel_input_release(&in);

    ck_auth_user_free(alice);
    ck_auth_user_free(bob);
    ck_auth_user_free(admin);
    ck_rbac_authorizer_free(reg.authorizer);
}

/* The Forbidden error a write of a policy (JSON text) by user gets, "" when none. */
static void param_kind_error(struct ck__registry *reg, const struct ck_auth_user *user,
                             const char *obj_json, const char *old_json, char *why, size_t size)
{
    const struct ck_kind *kind =
        ck_kind_lookup("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies");
    json_t *obj = json_loads(obj_json, 0, NULL),
           *old = old_json ? json_loads(old_json, 0, NULL) : NULL;
    assert_non_null(obj);
    struct ck_field_errors errs = {0};
    ck__admission_authorize_params(reg, kind, obj, old, user, &errs);
    assert_false(errs.nomem);
    snprintf(why, size, "%s", errs.len ? errs.items[0].detail : "");
    if (errs.len)
        assert_string_equal(errs.items[0].field, "spec.paramKind");
    ck_field_errors_release(&errs);
    json_decref(obj);
    json_decref(old);
}

/* A policy's paramKind needs `get` of every object of its resource. */
static void test_param_kind_authorization(void **state)
{
    (void)state;
    struct ck__registry reg = {
        .authorizer = rbac_of("[{\"metadata\":{\"name\":\"cm-reader\"},\"rules\":[{\"apiGroups\":"
                              "[\"\"],\"resources\":[\"configmaps\"],\"verbs\":[\"get\"]}]}]",
                              "[{\"metadata\":{\"name\":\"a\"},\"roleRef\":{\"apiGroup\":"
                              "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":"
                              "\"cm-reader\"},\"subjects\":[{\"kind\":\"User\",\"name\":"
                              "\"alice\"}]}]")};
    struct ck_auth_user *alice = ck_auth_user_new("alice", NULL);
    struct ck_auth_user *bob = ck_auth_user_new("bob", "u-1");
    assert_int_equal(ck_auth_user_add_group(bob, "system:authenticated"), 0);
    assert_int_equal(ck_auth_user_add_group(bob, "dev"), 0);
    assert_int_equal(ck_auth_user_add_extra(bob, "scopes", "a"), 0);
    assert_int_equal(ck_auth_user_add_extra(bob, "scopes", "b"), 0);
    assert_int_equal(ck_auth_user_add_extra(bob, "team", "x"), 0);
    static const char cm_policy[] =
        "{\"spec\":{\"paramKind\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}}}";
    char why[512];
    param_kind_error(&reg, alice, cm_policy, NULL, why, sizeof(why));
    assert_string_equal(why, "");
    param_kind_error(&reg, bob, cm_policy, NULL, why, sizeof(why));
    assert_string_equal(why,
                        "user &{bob u-1 [system:authenticated dev] map[scopes:[a b] team:[x]]} "
                        "must have \"get\" permission on all objects of the referenced "
                        "paramKind (kind=ConfigMap, apiVersion=v1)");
    /* an update that keeps the paramKind is not asked again; one that changes it is */
    param_kind_error(&reg, bob, cm_policy, cm_policy, why, sizeof(why));
    assert_string_equal(why, "");
    param_kind_error(&reg, alice,
                     "{\"spec\":{\"paramKind\":{\"apiVersion\":\"v1\",\"kind\":\"Secret\"}}}",
                     cm_policy, why, sizeof(why));
    assert_non_null(strstr(why, "user &{alice  [] map[]} must have \"get\" permission"));
    /* no paramKind, the server's own write: nothing asked */
    param_kind_error(&reg, bob, "{\"spec\":{}}", NULL, why, sizeof(why));
    assert_string_equal(why, "");
    param_kind_error(&reg, NULL, cm_policy, NULL, why, sizeof(why));
    assert_string_equal(why, "");
    ck_auth_user_free(alice);
    ck_auth_user_free(bob);
    ck_rbac_authorizer_free(reg.authorizer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_deny_match_and_reason, test_serve, test_unserve),
        cmocka_unit_test_setup_teardown(test_warn_ignore_and_params, test_serve, test_unserve),
        cmocka_unit_test_setup_teardown(test_authorizer_in_validations_only, test_serve,
                                        test_unserve),
        cmocka_unit_test(test_match_conditions),
        cmocka_unit_test(test_authorizer_variable),
        cmocka_unit_test(test_param_kind_authorization),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
