/*
 * policy.c - the ValidatingAdmissionPolicy admission plugin: the CEL validations of the
 * cluster's ValidatingAdmissionPolicies, run on the requests their bindings select.
 *
 * Mirrors k8s.io/apiserver 1.32 pkg/admission/plugin/policy/validating (dispatcher.go:
 * config errors and failure policies, the actions Deny, Warn and Audit, the audit
 * annotations, the refusal; validator.go: matchConditions, validations with message,
 * messageExpression and reason, auditAnnotations) and pkg/admission/plugin/policy/generic
 * (CollectParams: paramRef by name or selector, in the request's or the given namespace,
 * parameterNotFoundAction), with their words.
 *
 * For every request (but those about the admission configuration kinds, which Kubernetes
 * exempts) the policies are taken sorted by name; a policy whose matchConstraints match
 * (match.c, shared with the webhooks) is evaluated once per binding that names it and
 * matches too (its matchResources), once per parameter object the binding selects (or
 * once with `params` null when the policy has no paramKind or the binding no paramRef).
 * The expressions see object, oldObject, request, params, namespaceObject and variables
 * (cel.c, shared with the webhooks' matchConditions). A validation that is not true, and
 * an error under failurePolicy Fail, is a failure, which each of the binding's
 * validationActions handles: Deny refuses the request (the first refusal is answered,
 * `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: why`, with the code of
 * the validation's reason, Invalid 422 by default), Warn adds a Warning header, Audit an
 * audit annotation. ckube has no audit log: audit annotations (those of Audit and of
 * spec.auditAnnotations) are logged at verbosity 2 (docs/differences.md).
 *
 * Policies, bindings and parameters are read from the store at each request, as the
 * webhook configurations are; compiled expressions are cached by text (cel.c).
 *
 * Threading: no state of its own (the cache in cel.c is shared safely), so it runs on
 * any request thread at once.
 *
 * Tested by tests/apiserver/test_policy.c and tests/e2e/test_admission_policy.sh.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/auth.h"
#include "ckube/internal/util.h"

/* obj[member] when it is a string, else NULL (NULL-safe). */
static const char *str_of(const json_t *obj, const char *member)
{
    return json_string_value(json_object_get(obj, member));
}

/* obj.spec[member] when it is a string, else NULL. */
static const char *spec_str(const json_t *obj, const char *member)
{
    return str_of(json_object_get(obj, "spec"), member);
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = ck__vformat(fmt, ap);
    va_end(ap);
    return s;
}

/* The first refusal of the request. */
struct verdict {
    char *msg;          /* NULL: nothing refused yet */
    const char *reason; /* a StatusReason, static */
};

/* Records a refusal unless one was already recorded. CK_ENOMEM or 0. */
static int deny(struct verdict *v, const char *policy, const char *binding, const char *reason,
                const char *msg)
{
    if (v->msg)
        return 0;
    struct ck__buf b = {0};
    if (binding)
        ck__buf_printf(&b, "ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s",
                       policy, binding, msg);
    else
        ck__buf_printf(&b, "ValidatingAdmissionPolicy '%s' denied request: %s", policy, msg);
    v->msg = ck__buf_take(&b);
    /* a static copy of the reason (validation admits only these four); none: Invalid */
    static const char *const reasons[] = {"Forbidden", "Unauthorized", "RequestEntityTooLarge"};
    v->reason = "Invalid";
    for (size_t i = 0; reason && i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (strcmp(reason, reasons[i]) == 0)
            v->reason = reasons[i];
    return v->msg ? 0 : CK_ENOMEM;
}

/* An audit annotation: ckube has no audit log, so it is logged. */
static void audit(const char *key, const char *value)
{
    CK_LOGS(2, "Admission audit annotation", "key", key, "value", value);
}

/* dispatcher.go's addConfigError: nothing under Ignore, a refusal under Fail. */
static int config_error(struct verdict *v, const json_t *policy, const char *binding,
                        const char *why)
{
    const char *name = ck__meta_str(policy, "name");
    const char *fp = spec_str(policy, "failurePolicy");
    if (fp && strcmp(fp, "Ignore") == 0)
        return 0;
    char *msg = format("failed to configure %s: %s", binding ? "binding" : "policy", why);
    int r = msg ? deny(v, name ? name : "", binding, NULL, msg) : CK_ENOMEM;
    free(msg);
    return r;
}

/* What the binding's validationActions do with a failed validation (index idx). */
static int act(struct verdict *v, const char *policy, const json_t *binding, size_t idx,
               const char *reason, const char *msg)
{
    const char *bname = ck__meta_str(binding, "name");
    const json_t *actions = json_object_get(json_object_get(binding, "spec"), "validationActions");
    size_t i;
    const json_t *action;
    json_array_foreach(actions, i, action)
    {
        const char *s = json_string_value(action) ? json_string_value(action) : "";
        if (strcmp(s, "Deny") == 0 && deny(v, policy, bname, reason, msg) < 0)
            return CK_ENOMEM;
        if (strcmp(s, "Warn") == 0)
            ck__admission_warn("Validation failed for ValidatingAdmissionPolicy '%s' with "
                               "binding '%s': %s",
                               policy, bname ? bname : "", msg);
        if (strcmp(s, "Audit") == 0) {
            json_t *value = json_pack("[{s:s, s:s, s:s, s:I, s:O}]", "message", msg, "policy",
                                      policy, "binding", bname ? bname : "", "expressionIndex",
                                      (json_int_t)idx, "validationActions", actions);
            char *text = value ? ck__json_dumps(value, JSON_COMPACT, NULL) : NULL;
            json_decref(value);
            if (!text)
                return CK_ENOMEM;
            audit("validation.policy.admission.k8s.io/validation_failure", text);
            free(text);
        }
    }
    return 0;
}

/* A CEL type's name as cel-go prints it. */
static const char *type_name(enum ck_cel_type t)
{
    static const char *const names[] = {
        [CK_CEL_NULL] = "null_type",
        [CK_CEL_BOOL] = "bool",
        [CK_CEL_INT] = "int",
        [CK_CEL_UINT] = "uint",
        [CK_CEL_DOUBLE] = "double",
        [CK_CEL_STRING] = "string",
        [CK_CEL_BYTES] = "bytes",
        [CK_CEL_LIST] = "list",
        [CK_CEL_MAP] = "map",
        [CK_CEL_TYPE] = "type",
        [CK_CEL_DURATION] = "google.protobuf.Duration",
        [CK_CEL_TIMESTAMP] = "google.protobuf.Timestamp",
        [CK_CEL_OPTIONAL] = "optional_type",
        [CK_CEL_IP] = "net.IP",
        [CK_CEL_CIDR] = "net.CIDR",
        [CK_CEL_QUANTITY] = "kubernetes.Quantity",
    };
    return (size_t)t < sizeof(names) / sizeof(names[0]) && names[t] ? names[t] : "unknown";
}

/* strings.TrimSpace into a new string (NULL when out of memory). */
static char *trimmed(const char *s)
{
    while (*s && strchr(" \t\n\v\f\r", *s))
        s++;
    size_t n = strlen(s);
    while (n && strchr(" \t\n\v\f\r", s[n - 1]))
        n--;
    char *t = ck__malloc(n + 1);
    if (t) {
        memcpy(t, s, n);
        t[n] = '\0';
    }
    return t;
}

/* The words of a validation that failed (validator.go's message, messageExpression, fallback). */
static char *failure_message(const json_t *validation, struct ck__cel_input *in)
{
    const char *msg_expr = json_string_value(json_object_get(validation, "messageExpression"));
    char *msg = NULL;
    if (msg_expr && *msg_expr) {
        struct ck_cel_result *res = NULL;
        struct ck_err err = {0};
        /* a messageExpression has no `authorizer` (compilePolicy's expressionOptionalVars) */
        struct ck__registry *reg = in->reg;
        in->reg = NULL;
        int r = ck__admission_cel_eval(msg_expr, in, &res, &err);
        in->reg = reg;
        if (r == 0 && ck_cel_result_string(res, NULL)) {
            msg = trimmed(ck_cel_result_string(res, NULL));
            /* too long (MaxEvaluatedMessageExpressionSizeBytes) or several lines: not used */
            if (msg && (strlen(msg) > 5 * 1024 || strchr(msg, '\n') || !*msg))
                free(msg), msg = NULL;
        } else if (err.code) {
            CK_LOGS(2, "error while evaluating messageExpression", "err", ck_err_message(&err));
        }
        ck_cel_result_free(res);
        ck_err_release(&err);
    }
    const char *message = json_string_value(json_object_get(validation, "message"));
    if (!msg && message && *message) {
        msg = trimmed(message);
        if (msg && !*msg)
            free(msg), msg = NULL;
    }
    if (!msg) {
        const char *text = str_of(validation, "expression");
        char *expr = trimmed(text ? text : "");
        msg = expr ? format("failed expression: %s", expr) : NULL;
        free(expr);
    }
    return msg;
}

/* One audit annotation value of a policy, collected over its bindings. */
struct annotations {
    json_t *values; /* key -> [value, ...] (distinct) */
};

/* validator.go's Validate with one binding and one parameter. 0 or CK_ENOMEM. */
static int evaluate(struct verdict *v, const json_t *policy, const json_t *binding,
                    struct ck__cel_input *in, struct annotations *ann)
{
    const char *pname = ck__meta_str(policy, "name");
    const json_t *spec = json_object_get(policy, "spec");
    const char *fp = str_of(spec, "failurePolicy");
    bool ignore = fp && strcmp(fp, "Ignore") == 0;
    if (!pname)
        pname = "";
    if (ck__admission_cel_variables(json_object_get(spec, "variables"), in) < 0)
        return CK_ENOMEM;
    struct ck_err err = {0};
    const json_t *conds = json_object_get(spec, "matchConditions");
    if (json_array_size(conds)) {
        int m = ck__admission_match_conditions(conds, in, ignore, &err);
        if (m == CK_ENOMEM)
            return m;
        if (m < 0) {
            int r = act(v, pname, binding, 0, NULL, ck_err_message(&err));
            ck_err_release(&err);
            return r;
        }
        if (m == 0)
            return 0;
    }
    size_t i;
    const json_t *val;
    json_array_foreach(json_object_get(spec, "validations"), i, val)
    {
        const char *expr = str_of(val, "expression");
        struct ck_cel_result *res = NULL;
        int r = ck__admission_cel_eval(expr ? expr : "", in, &res, &err);
        if (r == CK_ENOMEM)
            return r;
        if (r < 0) {
            r = ignore ? 0 : act(v, pname, binding, i, NULL, ck_err_message(&err));
        } else if (!(ck_cel_result_type(res) == CK_CEL_BOOL && ck_cel_result_bool(res))) {
            char *msg = failure_message(val, in);
            r = msg ? act(v, pname, binding, i, str_of(val, "reason"), msg) : CK_ENOMEM;
            free(msg);
        }
        ck_cel_result_free(res);
        ck_err_release(&err);
        if (r < 0)
            return r;
    }
    json_array_foreach(json_object_get(spec, "auditAnnotations"), i, val)
    {
        const char *key = str_of(val, "key");
        const char *expr = str_of(val, "valueExpression");
        struct ck_cel_result *res = NULL;
        int r = ck__admission_cel_eval(expr ? expr : "", in, &res, &err);
        if (r == CK_ENOMEM)
            return r;
        char *why = NULL;
        if (r < 0) {
            why = ignore ? NULL : ck__strdup(ck_err_message(&err));
            r = ignore || why ? 0 : CK_ENOMEM;
        } else if (ck_cel_result_type(res) == CK_CEL_STRING) {
            char *value = trimmed(ck_cel_result_string(res, NULL));
            if (value && strlen(value) > 10 * 1024)
                value[10 * 1024] = '\0';
            json_t *list = json_object_get(ann->values, key ? key : "");
            if (!list && value && *value) {
                list = json_array();
                json_object_set_new(ann->values, key ? key : "", list);
            }
            bool seen = false;
            size_t j;
            const json_t *e;
            json_array_foreach(list, j, e)
            {
                seen |= value && strcmp(json_string_value(e), value) == 0;
            }
            if (value && *value && !seen)
                json_array_append_new(list, json_string(value));
            r = value ? 0 : CK_ENOMEM;
            free(value);
        } else if (ck_cel_result_type(res) != CK_CEL_NULL) {
            why = format("valueExpression '%s' resulted in unsupported return type: %s. "
                         "Return type must be either string or null.",
                         expr ? expr : "", type_name(ck_cel_result_type(res)));
            r = why ? 0 : CK_ENOMEM;
        }
        ck_cel_result_free(res);
        ck_err_release(&err);
        if (why) /* an audit annotation's error refuses under Fail, whatever the actions */
            r = deny(v, pname, ck__meta_str(binding, "name"), NULL, why);
        free(why);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The kind paramKind names ("group/version", kind), or NULL. */
static const struct ck_kind *param_kind(const json_t *pk)
{
    const char *av = str_of(pk, "apiVersion"), *kind = str_of(pk, "kind");
    if (!av || !kind)
        return NULL;
    const char *slash = strchr(av, '/');
    size_t glen = slash ? (size_t)(slash - av) : 0;
    const char *version = slash ? slash + 1 : av;
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; i < n; i++) {
        const struct ck_kind *k = kinds[i];
        if (strlen(k->group) == glen && strncmp(k->group, av, glen) == 0 &&
            strcmp(k->version, version) == 0 && strcmp(k->kind, kind) == 0)
            return k;
    }
    return NULL;
}

struct selected {
    const struct ck_label_selector *selector;
    json_t *out;
};

static int collect_selected(const json_t *obj, void *arg)
{
    struct selected *s = arg;
    if (!ck_label_selector_matches(s->selector,
                                   json_object_get(json_object_get(obj, "metadata"), "labels")))
        return 0;
    return json_array_append((json_t *)s->out, (json_t *)obj) < 0 ? CK_ENOMEM : 0;
}

/*
 * CollectParams: the parameter objects of binding in *ret (a new array; one null when the
 * policy has no paramKind or the binding no paramRef). 0; CK_EINVAL with *why (free it)
 * for a configuration error; CK_ENOMEM; another negative code with reterr filled.
 */
static int collect_params(struct ck__registry *reg, const struct ck_kind *pk, const json_t *binding,
                          const struct ck__admission_attrs *a, json_t **ret, char **why,
                          struct ck_err *reterr)
{
    const json_t *ref = json_object_get(json_object_get(binding, "spec"), "paramRef");
    json_t *params = json_array();
    *ret = NULL;
    *why = NULL;
    if (!params)
        return CK_ENOMEM;
    if (!pk || !ref) {
        *ret = params;
        return json_array_append_new(params, json_null()) < 0 ? CK_ENOMEM : 0;
    }
    const char *ns = str_of(ref, "namespace"), *name = str_of(ref, "name");
    const json_t *selector = json_object_get(ref, "selector");
    int r = 0;
    if (pk->namespaced && (!ns || !*ns)) {
        ns = a->namespace;
        if (!ns || !*ns)
            *why = ck__strdup("cannot use namespaced paramRef in policy binding that matches "
                              "cluster-scoped resources");
    } else if (!pk->namespaced && ns && *ns) {
        *why = ck__strdup("paramRef.namespace must not be provided for a cluster-scoped "
                          "`paramKind`");
    }
    if (!*why && name && *name) {
        json_t *obj = NULL;
        r = ck__admission_get(reg, pk, pk->namespaced ? ns : "", name, &obj, reterr);
        if (r == 0)
            r = json_array_append_new(params, obj) < 0 ? CK_ENOMEM : 0;
        else if (r == CK_ENOENT)
            r = 0;
    } else if (!*why && selector) {
        struct ck_label_selector *ls = NULL;
        struct ck_err err = {0};
        if (ck_label_selector_from_object(selector, &ls, &err) < 0) {
            *why = ck__strdup(ck_err_message(&err));
        } else {
            struct selected s = {ls, params};
            r = ck__admission_list(reg, pk, pk->namespaced ? ns : NULL, collect_selected, &s,
                                   reterr);
        }
        ck_label_selector_free(ls);
        ck_err_release(&err);
    } else if (!*why) {
        *why = ck__strdup("one of name or selector must be provided");
    }
    const char *action = str_of(ref, "parameterNotFoundAction");
    if (r == 0 && !*why && json_array_size(params) == 0 && action && strcmp(action, "Deny") == 0)
        *why = ck__strdup("no params found for policy binding with `Deny` "
                          "parameterNotFoundAction");
    if (r < 0 || *why) {
        json_decref(params);
        return r < 0 ? r : CK_EINVAL;
    }
    *ret = params;
    return 0;
}

/* Sets the policy's collected audit annotations on the request (policy/key = values). */
static void publish(const char *policy, struct annotations *ann)
{
    const char *key;
    json_t *values;
    json_object_foreach(ann->values, key, values)
    {
        struct ck__buf b = {0};
        size_t i;
        json_t *e;
        json_array_foreach(values, i, e)
        {
            ck__buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(e));
        }
        char *value = ck__buf_take(&b);
        char *full = format("%s/%s", policy, key);
        if (value && full)
            audit(full, value);
        free(value);
        free(full);
    }
}

/* One policy: its match, its bindings, their parameters. 0, or a negative code. */
static int dispatch_policy(struct ck__registry *reg, const struct ck__admission_attrs *a,
                           const json_t *policy, const json_t *bindings, struct verdict *v,
                           struct ck_err *reterr)
{
    const char *pname = ck__meta_str(policy, "name");
    const json_t *spec = json_object_get(policy, "spec");
    const json_t *mc = json_object_get(spec, "matchConstraints");
    char what[300];
    snprintf(what, sizeof(what), "ValidatingAdmissionPolicy '%s'", pname ? pname : "");
    struct ck_err err = {0};
    int r = ck__admission_matches(reg, json_object_get(mc, "namespaceSelector"),
                                  json_object_get(mc, "objectSelector"),
                                  json_object_get(mc, "resourceRules"), true,
                                  json_object_get(mc, "excludeResourceRules"), what, a, &err);
    ck_err_release(&err);
    if (r <= 0) /* a policy whose definition cannot be matched is passed over, as there */
        return r == CK_ENOMEM ? r : 0;
    const json_t *pkj = json_object_get(spec, "paramKind");
    const struct ck_kind *pk = pkj ? param_kind(pkj) : NULL;
    if (pkj && !pk) {
        const char *av = str_of(pkj, "apiVersion"), *kind = str_of(pkj, "kind");
        if (!av)
            av = "";
        const char *slash = strchr(av, '/');
        char *why =
            format("failed to find resource referenced by paramKind: '%.*s/%s, "
                   "Kind=%s'",
                   slash ? (int)(slash - av) : 0, av, slash ? slash + 1 : av, kind ? kind : "");
        r = why ? config_error(v, policy, NULL, why) : CK_ENOMEM;
        free(why);
        return r;
    }
    struct annotations ann = {json_object()};
    json_t *ns = NULL;
    bool ns_read = false;
    size_t i;
    const json_t *binding;
    r = ann.values ? 0 : CK_ENOMEM;
    json_array_foreach(bindings, i, binding)
    {
        const char *target = spec_str(binding, "policyName");
        const char *bname = ck__meta_str(binding, "name");
        if (r < 0 || !target || !pname || strcmp(target, pname) != 0)
            continue;
        const json_t *mr = json_object_get(json_object_get(binding, "spec"), "matchResources");
        if (mr) {
            snprintf(what, sizeof(what), "ValidatingAdmissionPolicyBinding '%s'",
                     bname ? bname : "");
            r = ck__admission_matches(reg, json_object_get(mr, "namespaceSelector"),
                                      json_object_get(mr, "objectSelector"),
                                      json_object_get(mr, "resourceRules"), true,
                                      json_object_get(mr, "excludeResourceRules"), what, a, &err);
            if (r < 0 && r != CK_ENOMEM)
                r = config_error(v, policy, bname, ck_err_message(&err));
            ck_err_release(&err);
            if (r <= 0)
                continue;
        }
        json_t *params = NULL;
        char *why = NULL;
        r = collect_params(reg, pk, binding, a, &params, &why, reterr);
        if (r == CK_EINVAL && why)
            r = config_error(v, policy, bname, why);
        free(why);
        if (!params)
            continue;
        /* the namespace of the request, read once (a namespace's own request has none) */
        if (!ns_read && !ck__admission_is_namespace_request(a) && a->namespace && *a->namespace) {
            r = ck__admission_namespace_object(reg, a, &ns, reterr);
            if (r == CK_ENOENT)
                r = ck_err_status(reterr, "NotFound", "namespaces \"%s\" not found", a->namespace);
        }
        ns_read = true;
        size_t j;
        const json_t *param;
        json_array_foreach(params, j, param)
        {
            if (r < 0)
                break;
            struct ck__cel_input in = {.a = a, .reg = reg, .policy = true, .params = param};
            r = ck__cel_input_set_namespace(&in, ns);
            if (r == 0)
                r = evaluate(v, policy, binding, &in, &ann);
            ck__cel_input_release(&in);
        }
        json_decref(params);
    }
    if (r == 0 && pname)
        publish(pname, &ann);
    json_decref(ann.values);
    json_decref(ns);
    return r;
}

static int validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    if (a->kind && a->kind->configures_admission)
        return 0; /* IsExemptAdmissionConfigurationResource */
    json_t *policies = NULL, *bindings = NULL;
    int r = ck__admission_configurations(reg, "validatingadmissionpolicies", &policies, reterr);
    if (r == 0 && json_array_size(policies))
        r = ck__admission_configurations(reg, "validatingadmissionpolicybindings", &bindings,
                                         reterr);
    struct verdict v = {0};
    size_t i;
    const json_t *policy;
    json_array_foreach(json_array_size(bindings) ? policies : NULL, i, policy)
    {
        if (r < 0)
            break;
        r = dispatch_policy(reg, a, policy, bindings, &v, reterr);
    }
    json_decref(policies);
    json_decref(bindings);
    if (r == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    if (r < 0)
        return r;
    if (!v.msg)
        return 0;
    /* admission.NewForbidden's words, with the reason's code and the message as a cause */
    r = ck__admission_forbidden(a, reterr, "%s", v.msg);
    const char *reason = v.reason;
    int code = ck_err_reason_http(reason);
    reterr->reason = reason;
    reterr->http_status = code == 403 || code == 401 || code == 413 ? code : 422;
    ck_err_add_cause(reterr, "", v.msg, "");
    free(v.msg);
    return r;
}

/* ---- who may name a paramKind or a paramRef (the registry's authz.go) ---------- */

static int by_text(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* A user as Go's %v prints a *user.DefaultInfo: &{name uid [groups] map[key:[values]]}. */
static char *go_user(const struct ck_auth_user *user)
{
    struct ck__buf b = {0};
    ck__buf_printf(&b, "&{%s %s [", user->name, user->uid ? user->uid : "");
    for (size_t i = 0; i < user->n_groups; i++)
        ck__buf_printf(&b, "%s%s", i ? " " : "", user->groups[i]);
    ck__buf_adds(&b, "] map[");
    json_t *keys = json_array();
    const char *key;
    json_t *values;
    json_object_foreach(user->extra, key, values)
    {
        json_array_append_new(keys, json_string(key));
    }
    ck__json_array_sort(keys, by_text); /* Go prints a map by sorted keys */
    size_t i, j;
    json_t *k, *v;
    json_array_foreach(keys, i, k)
    {
        ck__buf_printf(&b, "%s%s:[", i ? " " : "", json_string_value(k));
        json_array_foreach(json_object_get(user->extra, json_string_value(k)), j, v)
        {
            ck__buf_printf(&b, "%s%s", j ? " " : "", json_string_value(v));
        }
        ck__buf_adds(&b, "]");
    }
    json_decref(keys);
    ck__buf_adds(&b, "]}");
    return ck__buf_take(&b);
}

/*
 * Whether user may get name in namespace of the resource paramKind names: the group and
 * version of its apiVersion and the resource of its kind, "*" for what does not resolve.
 */
static bool may_get_params(struct ck__registry *reg, const struct ck_auth_user *user,
                           const json_t *param_kind_obj, const char *namespace, const char *name)
{
    const char *av = str_of(param_kind_obj, "apiVersion");
    const char *group = "*", *resource = "*";
    char gbuf[256];
    if (av && strchr(av, '/') == strrchr(av, '/')) { /* schema.ParseGroupVersion */
        const char *slash = strchr(av, '/');
        snprintf(gbuf, sizeof(gbuf), "%.*s", slash ? (int)(slash - av) : 0, av);
        group = gbuf;
        const struct ck_kind *k = param_kind(param_kind_obj);
        if (k)
            resource = k->resource;
    }
    struct ck_rbac_request req = {.user = user,
                                  .verb = "get",
                                  .is_resource_request = true,
                                  .api_group = group,
                                  .resource = resource,
                                  .name = name,
                                  .namespace = namespace};
    return ck__admission_authorize(reg, &req, NULL, 0);
}

void ck__admission_authorize_params(struct ck__registry *reg, const struct ck_kind *kind,
                                    const json_t *obj, const json_t *old,
                                    const struct ck_auth_user *user, struct ck_field_errors *errs)
{
    bool policy = kind->role == CK_KIND_ROLE_VALIDATING_ADMISSION_POLICY;
    bool binding = kind->role == CK_KIND_ROLE_VALIDATING_ADMISSION_POLICY_BINDING;
    if (!policy && !binding)
        return;
    const json_t *spec = json_object_get(obj, "spec"), *old_spec = json_object_get(old, "spec");
    const json_t *pk = json_object_get(spec, "paramKind"), *ref = json_object_get(spec, "paramRef");
    if (policy && pk) {
        /* an update that keeps the paramKind is not asked again */
        if (old && json_equal(pk, json_object_get(old_spec, "paramKind")))
            return;
        if (may_get_params(reg, user, pk, "*", "*"))
            return;
        char *who = go_user(user);
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.paramKind", NULL, false,
                            "user %s must have \"get\" permission on all objects of the "
                            "referenced paramKind (kind=%s, apiVersion=%s)",
                            who ? who : "", str_of(pk, "kind") ? str_of(pk, "kind") : "",
                            str_of(pk, "apiVersion") ? str_of(pk, "apiVersion") : "");
        errs->nomem |= !who;
        free(who);
    } else if (binding && ref) {
        const char *pname = str_of(spec, "policyName");
        const char *old_pname = str_of(old_spec, "policyName");
        if (old && json_equal(ref, json_object_get(old_spec, "paramRef")) && pname && old_pname &&
            strcmp(pname, old_pname) == 0)
            return;
        /* the policy's paramKind: none, or no such policy, asks about every resource */
        json_t *p = NULL;
        struct ck_err err = {0};
        const struct ck_kind *vap = ck_kind_with_role(CK_KIND_ROLE_VALIDATING_ADMISSION_POLICY);
        if (vap && pname)
            ck__admission_get(reg, vap, "", pname, &p, &err);
        ck_err_release(&err);
        const json_t *ppk = json_object_get(json_object_get(p, "spec"), "paramKind");
        json_t *any = ppk ? NULL : json_object();
        const char *ns = str_of(ref, "namespace"), *name = str_of(ref, "name");
        bool ok = may_get_params(reg, user, ppk ? ppk : any, ns ? ns : "", name ? name : "");
        json_decref(any);
        json_decref(p);
        if (ok)
            return;
        char *who = go_user(user);
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.paramRef", NULL, false,
                            "user %s does not have \"get\" permission on the object referenced "
                            "by paramRef",
                            who ? who : "");
        errs->nomem |= !who;
        free(who);
    }
}

const struct ck__admission_plugin ck__admission_validating_policy = {
    .name = "ValidatingAdmissionPolicy", .validate = validate, .connect = true};
