/*
 * admissionpolicy.c - the validation of the admission policy kinds
 * (admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
 * ValidatingAdmissionPolicyBinding).
 *
 * Mirrors Kubernetes 1.32's pkg/apis/admissionregistration/validation
 * (validateValidatingAdmissionPolicySpec, validateParamKind, validateMatchResources,
 * validateNamedRuleWithOperations, validateVariable, validateValidation,
 * validateAuditAnnotation, validateValidatingAdmissionPolicyBindingSpec, validateParamRef,
 * validateValidationActions) with its words. Every expression is compiled when the
 * policy is written, as Kubernetes compiles it, so a syntax error or an unknown function
 * is a 422 (`compilation failed: ERROR: <input>:1:5: ...`); what only Kubernetes' type
 * checker finds (a variable that is not declared, a result that is not a bool) is no
 * refusal: it is a warning in the policy's status.typeChecking (written by
 * lib/apiserver/policy_status.c) and an error when the policy is evaluated
 * (docs/differences.md). The rules, selectors and match
 * conditions are checked by the webhook configurations' code (webhookconfiguration.c).
 * The defaults (failurePolicy Fail, matchPolicy Equivalent, empty selectors, rule scope
 * "*") are the schema's.
 *
 * As for the webhook configurations, an update is validated as a create.
 *
 * Threading: pure functions over their arguments.
 *
 * Tested by tests/api/test_admissionpolicy.c.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

/* A member that must be set and be one of set (whose words, supported, Kubernetes lists). */
static void check_required_enum(const json_t *obj, const char *member, const char *at,
                                const char *const *set, const char *supported,
                                struct ck_field_errors *errs)
{
    char f[192];
    const char *v = ck__str_at(obj, member);
    snprintf(f, sizeof(f), "%s.%s", at, member);
    if (!v || !*v)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
    else if (!ck__str_in(v, set))
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, v, true, "supported values: %s",
                            supported);
}

/* IsDNS1035Label's words. */
#define DNS1035_MSG                                                                                \
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "   \
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "           \
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"

static void check_param_kind(const json_t *pk, struct ck_field_errors *errs)
{
    const char *av = ck__str_at(pk, "apiVersion");
    const char *kind = ck__str_at(pk, "kind");
    static const char f_av[] = "spec.paramKind.apiVersion", f_kind[] = "spec.paramKind.kind";
    if (!av || !*av) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f_av, NULL, false, NULL);
    } else if (strcmp(av, "/") != 0) {
        const char *slash = strchr(av, '/');
        char group[256] = "";
        const char *version = av;
        if (slash && strchr(slash + 1, '/')) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, f_av, av, true,
                                "unexpected GroupVersion string: %s", av);
        } else {
            if (slash) {
                snprintf(group, sizeof(group), "%.*s", (int)(slash - av), av);
                version = slash + 1;
            }
            if (*group)
                ck_validate_dns1123_subdomain(group, f_av, errs);
            if (!*version)
                ck_field_errors_add(errs, CK_FIELD_INVALID, f_av, av, true,
                                    "version must be specified");
            else if (!ck__dns1035_label(version))
                ck_field_errors_add(errs, CK_FIELD_INVALID, f_av, version, true, DNS1035_MSG);
        }
    }
    if (!kind || !*kind) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f_kind, NULL, false, NULL);
        return;
    }
    char lower[128];
    size_t n = strlen(kind);
    for (size_t i = 0; i < n && i < sizeof(lower) - 1; i++)
        lower[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] + 32 : kind[i]);
    lower[n < sizeof(lower) ? n : sizeof(lower) - 1] = '\0';
    if (n >= sizeof(lower) || !ck__dns1035_label(lower))
        ck_field_errors_add(errs, CK_FIELD_INVALID, f_kind, kind, true,
                            "may have mixed case, but should otherwise match: " DNS1035_MSG);
}

static void check_named_rules(const json_t *list, const char *at, struct ck_field_errors *errs)
{
    size_t i;
    const json_t *rule;
    json_array_foreach(list, i, rule)
    {
        char r[256], f[320];
        snprintf(r, sizeof(r), "%s[%zu]", at, i);
        const json_t *names = json_object_get(rule, "resourceNames");
        size_t j;
        const json_t *v;
        json_array_foreach(names, j, v)
        {
            const char *name = json_string_value(v) ? json_string_value(v) : "";
            snprintf(f, sizeof(f), "%s.resourceNames[%zu]", r, j);
            ck__validate_path_segment(name, f, errs);
            for (size_t k = 0; k < j; k++)
                if (json_equal(json_array_get(names, k), v)) {
                    ck_field_errors_add(errs, CK_FIELD_DUPLICATE, f, name, true, NULL);
                    break;
                }
        }
        ck__validate_webhook_rule(rule, r, errs);
    }
}

/* validateMatchResources (mr NULL: nothing to check). */
static void check_match_resources(const json_t *mr, const char *at, struct ck_field_errors *errs)
{
    static const char *const policies[] = {"Equivalent", "Exact", NULL};
    char f[192];
    if (!mr)
        return;
    check_required_enum(mr, "matchPolicy", at, policies, "\"Equivalent\", \"Exact\"", errs);
    static const char *const selectors[] = {"namespaceSelector", "objectSelector"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(f, sizeof(f), "%s.%s", at, selectors[i]);
        if (!json_object_get(mr, selectors[i]))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
        else
            ck__validate_selector_member(mr, selectors[i], at, errs);
    }
    snprintf(f, sizeof(f), "%s.resourceRules", at);
    check_named_rules(json_object_get(mr, "resourceRules"), f, errs);
    snprintf(f, sizeof(f), "%s.excludeResourceRules", at);
    check_named_rules(json_object_get(mr, "excludeResourceRules"), f, errs);
}

/* isCELIdentifier: [_a-zA-Z][_a-zA-Z0-9]* and not a reserved word. */
static bool is_cel_identifier(const char *s)
{
    static const char *const reserved[] = {
        "true",      "false",  "null",     "in",   "as",     "break", "const", "continue",
        "else",      "for",    "function", "if",   "import", "let",   "loop",  "package",
        "namespace", "return", "var",      "void", "while",  NULL};
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return !ck__str_in(s, reserved);
}

static void check_variable(const json_t *v, const char *at, struct ck_field_errors *errs)
{
    char f[192];
    const char *name = ck__str_at(v, "name"), *expr = ck__str_at(v, "expression");
    snprintf(f, sizeof(f), "%s.name", at);
    if (ck__is_blank(name))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, "name is not specified");
    else if (!is_cel_identifier(name))
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, name, true,
                            "name is not a valid CEL identifier");
    snprintf(f, sizeof(f), "%s.expression", at);
    if (ck__is_blank(expr))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, "expression is not specified");
    else
        ck__validate_cel_expression(expr, f, errs);
}

static void check_validation(const json_t *v, const char *at, struct ck_field_errors *errs)
{
    static const char *const reasons[] = {"Forbidden", "Invalid", "RequestEntityTooLarge",
                                          "Unauthorized", NULL};
    char f[192];
    const char *expr = ck__str_at(v, "expression"), *msg = ck__str_at(v, "message");
    const char *msg_expr = ck__str_at(v, "messageExpression");
    snprintf(f, sizeof(f), "%s.expression", at);
    if (ck__is_blank(expr))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, "expression is not specified");
    else
        ck__validate_cel_expression(expr, f, errs);
    snprintf(f, sizeof(f), "%s.messageExpression", at);
    if (msg_expr && *msg_expr && ck__is_blank(msg_expr))
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, msg_expr, true,
                            "must be non-empty if specified");
    else if (!ck__is_blank(msg_expr))
        ck__validate_cel_expression(msg_expr, f, errs);
    snprintf(f, sizeof(f), "%s.message", at);
    if (msg && *msg && ck__is_blank(msg))
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, msg, true,
                            "message must be non-empty if specified");
    else if (msg && strpbrk(msg, "\r\n")) {
        /* line breaks inside the message, once its ends are trimmed */
        const char *end = msg + strlen(msg);
        while (end > msg && strchr(" \t\n\v\f\r", end[-1]))
            end--;
        const char *start = msg;
        while (start < end && strchr(" \t\n\v\f\r", *start))
            start++;
        for (const char *p = start; p < end; p++)
            if (*p == '\n' || *p == '\r') {
                ck_field_errors_add(errs, CK_FIELD_INVALID, f, msg, true,
                                    "message must not contain line breaks");
                break;
            }
    }
    const char *reason = ck__str_at(v, "reason");
    snprintf(f, sizeof(f), "%s.reason", at);
    if (reason && !ck__str_in(reason, reasons))
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, reason, true,
                            "supported values: \"Forbidden\", \"Invalid\", "
                            "\"RequestEntityTooLarge\", \"Unauthorized\"");
}

static void check_audit_annotation(const json_t *obj, const json_t *a, const char *at,
                                   struct ck_field_errors *errs)
{
    char f[192], qualified[600];
    const char *name = ck__str_at(obj, "metadata.name");
    const char *key = ck__str_at(a, "key"), *expr = ck__str_at(a, "valueExpression");
    snprintf(f, sizeof(f), "%s.key", at);
    if (name && *name) {
        snprintf(qualified, sizeof(qualified), "%s/%s", name, key ? key : "");
        ck_validate_qualified_name(qualified, f, errs);
    } else {
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, key ? key : "", true,
                            "requires metadata.name be non-empty");
    }
    snprintf(f, sizeof(f), "%s.valueExpression", at);
    if (ck__is_blank(expr))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "valueExpression is not specified");
    else if (strlen(expr) > 5 * 1024)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "must not exceed 5120 bytes in length");
    else
        ck__validate_cel_expression(expr, f, errs);
}

void ck__validate_validating_admission_policy(const json_t *obj, const json_t *old,
                                              struct ck_field_errors *errs)
{
    static const char *const failure[] = {"Fail", "Ignore", NULL};
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    char at[64];
    check_required_enum(spec, "failurePolicy", "spec", failure, "\"Fail\", \"Ignore\"", errs);
    if (json_object_get(spec, "paramKind"))
        check_param_kind(json_object_get(spec, "paramKind"), errs);
    const json_t *mc = json_object_get(spec, "matchConstraints");
    if (!mc) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.matchConstraints", NULL, false, NULL);
    } else {
        check_match_resources(mc, "spec.matchConstraints", errs);
        if (json_array_size(json_object_get(mc, "resourceRules")) == 0)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.matchConstraints.resourceRules",
                                NULL, false, NULL);
    }
    ck__validate_match_conditions(json_object_get(spec, "matchConditions"), "spec", errs);
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(spec, "variables"), i, v)
    {
        snprintf(at, sizeof(at), "spec.variables[%zu]", i);
        check_variable(v, at, errs);
    }
    const json_t *validations = json_object_get(spec, "validations");
    const json_t *annotations = json_object_get(spec, "auditAnnotations");
    if (json_array_size(validations) == 0 && json_array_size(annotations) == 0) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.validations", NULL, false,
                            "validations or auditAnnotations must contain at least one item");
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.auditAnnotations", NULL, false,
                            "validations or auditAnnotations must contain at least one item");
        return;
    }
    json_array_foreach(validations, i, v)
    {
        snprintf(at, sizeof(at), "spec.validations[%zu]", i);
        check_validation(v, at, errs);
    }
    if (json_array_size(annotations) > 20)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.auditAnnotations", NULL, false,
                            "must not have more than 20 auditAnnotations");
    json_array_foreach(annotations, i, v)
    {
        snprintf(at, sizeof(at), "spec.auditAnnotations[%zu]", i);
        check_audit_annotation(obj, v, at, errs);
        const char *key = ck__str_at(v, "key");
        for (size_t j = 0; key && j < i; j++) {
            const char *other = ck__str_at(json_array_get(annotations, j), "key");
            if (other && strcmp(other, key) == 0) {
                char f[96];
                snprintf(f, sizeof(f), "%s.key", at);
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, f, key, true, NULL);
                break;
            }
        }
    }
}

static void check_param_ref(const json_t *pr, struct ck_field_errors *errs)
{
    static const char *const actions[] = {"Allow", "Deny", NULL};
    if (!pr)
        return;
    const char *name = ck__str_at(pr, "name");
    const json_t *selector = json_object_get(pr, "selector");
    if (name && *name) {
        ck__validate_path_segment(name, "spec.paramRef.name", errs);
        if (selector)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.paramRef.name", NULL, false,
                                "name and selector are mutually exclusive");
    }
    if (selector) {
        ck__validate_selector_member(pr, "selector", "spec.paramRef", errs);
        if (name && *name)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.paramRef.selector", NULL, false,
                                "name and selector are mutually exclusive");
    }
    if ((!name || !*name) && !selector)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.paramRef", NULL, false,
                            "one of name or selector must be specified");
    check_required_enum(pr, "parameterNotFoundAction", "spec.paramRef", actions,
                        "\"Deny\", \"Allow\"", errs);
}

static void check_validation_actions(const json_t *list, struct ck_field_errors *errs)
{
    static const char *const valid[] = {"Audit", "Deny", "Warn", NULL};
    static const char f[] = "spec.validationActions";
    bool deny = false, warn = false;
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        const char *a = json_string_value(v) ? json_string_value(v) : "";
        char fi[64];
        snprintf(fi, sizeof(fi), "%s[%zu]", f, i);
        if (!ck__str_in(a, valid))
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, fi, a, true,
                                "supported values: \"Audit\", \"Deny\", \"Warn\"");
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(list, j), v)) {
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, fi, a, true, NULL);
                break;
            }
        deny |= strcmp(a, "Deny") == 0;
        warn |= strcmp(a, "Warn") == 0;
    }
    if (deny && warn)
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, NULL, false,
                            "must not contain both Deny and Warn (repeating the same validation "
                            "failure information in the API response and headers serves no "
                            "purpose)");
    if (json_array_size(list) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "at least one validation action is required");
}

void ck__validate_validating_admission_policy_binding(const json_t *obj, const json_t *old,
                                                      struct ck_field_errors *errs)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    const char *policy = ck__str_at(spec, "policyName");
    if (!policy || !*policy)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.policyName", NULL, false, NULL);
    else
        ck_validate_dns1123_subdomain(policy, "spec.policyName", errs);
    check_param_ref(json_object_get(spec, "paramRef"), errs);
    /* Kubernetes 1.32 names the path so, with its typo */
    check_match_resources(json_object_get(spec, "matchResources"), "spec.matchResouces", errs);
    check_validation_actions(json_object_get(spec, "validationActions"), errs);
}
