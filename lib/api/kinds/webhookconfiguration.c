/*
 * webhookconfiguration.c - what the two admission webhook configuration kinds
 * (admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and
 * ValidatingWebhookConfiguration) share: their validation and their printer.
 *
 * Mirrors Kubernetes 1.32's pkg/apis/admissionregistration/validation
 * (validateMutatingWebhook, validateValidatingWebhook, validateRuleWithOperations,
 * validateResources, validateAdmissionReviewVersions) and
 * k8s.io/apiserver/pkg/util/webhook's ValidateWebhookURL and ValidateWebhookService,
 * with their words. The defaults (SetDefaults_ValidatingWebhook, _MutatingWebhook,
 * _Rule, _ServiceReference) are the schema's (schemas/admissionregistration-v1.json):
 * failurePolicy Fail, matchPolicy Equivalent, empty selectors, timeoutSeconds 10,
 * reinvocationPolicy Never, rule scope "*", service port 443. v1 has no default
 * sideEffects: it is required, None or NoneOnDryRun. The printer shows NAME,
 * WEBHOOKS (how many) and AGE, as kube-apiserver's table convertor does.
 *
 * The rules an update relaxes in Kubernetes (an old object that already broke a rule
 * may keep breaking it) are not relaxed here; docs/differences.md says so.
 *
 * Threading: pure functions over their arguments.
 *
 * Tested by tests/api/test_webhookconfiguration.c.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "ckube/cel.h"

static bool list_has(const json_t *list, const char *s)
{
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

/* A list as Go's %v of a slice shows it in field errors: [a b c]. */
static void list_text(const json_t *list, char *buf, size_t size)
{
    size_t used = 0, i;
    const json_t *v;
    buf[0] = '\0';
    json_array_foreach(list, i, v)
    {
        int w = snprintf(buf + used, size - used, "%s%s", i ? " " : "[",
                         json_string_value(v) ? json_string_value(v) : "");
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
    snprintf(buf + used, size - used, "%s", used ? "]" : "[]");
}

bool ck__str_in(const char *v, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(v, *set) == 0)
            return true;
    return false;
}

/* An optional string member that must be one of set (sorted, as sets.List() gives). */
static void check_enum(const json_t *hook, const char *member, const char *at,
                       const char *const *set, const char *supported, struct ck_field_errors *errs)
{
    const char *v = ck__str_at(hook, member);
    char f[160];
    if (!v || ck__str_in(v, set))
        return;
    snprintf(f, sizeof(f), "%s.%s", at, member);
    ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, v, true, "supported values: %s",
                        supported);
}

/* apiGroups, apiVersions: required, and "*" alone. */
static void check_wild_list(const json_t *rule, const char *member, const char *what,
                            const char *at, struct ck_field_errors *errs)
{
    const json_t *list = json_object_get(rule, member);
    char f[192], text[512];
    snprintf(f, sizeof(f), "%s.%s", at, member);
    if (json_array_size(list) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
    if (json_array_size(list) > 1 && list_has(list, "*")) {
        list_text(list, text, sizeof(text));
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, text, false,
                            "if '*' is present, must not specify other %s", what);
    }
}

/* validateResources: x, x/y, x/ *, * / y, * / *, and which combinations clash. */
static void check_resources(const json_t *list, const char *at, struct ck_field_errors *errs)
{
    char f[192], fi[224], text[512], why[600];
    snprintf(f, sizeof(f), "%s.resources", at);
    if (json_array_size(list) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
    bool double_wild = false, single_wild = false, plain = false;
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        const char *rs = json_string_value(v) ? json_string_value(v) : "";
        snprintf(fi, sizeof(fi), "%s[%zu]", f, i);
        if (!*rs) {
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, fi, NULL, false, NULL);
            continue;
        }
        double_wild |= strcmp(rs, "*/*") == 0;
        single_wild |= strcmp(rs, "*") == 0;
        const char *slash = strchr(rs, '/');
        if (!slash) {
            plain = strcmp(rs, "*") != 0;
            continue;
        }
        /* a resource with every subresource, or a subresource of every resource, given before */
        size_t res_len = (size_t)(slash - rs);
        const char *sub = slash + 1;
        size_t j;
        const json_t *w;
        bool by_res = false, by_sub = false;
        json_array_foreach(list, j, w)
        {
            if (j >= i)
                break;
            const char *o = json_string_value(w) ? json_string_value(w) : "";
            const char *os = strchr(o, '/');
            if (!os)
                continue;
            if (strcmp(os + 1, "*") == 0 && (size_t)(os - o) == res_len &&
                strncmp(o, rs, res_len) == 0)
                by_res = true;
            if (os - o == 1 && o[0] == '*' && strcmp(os + 1, sub) == 0)
                by_sub = true;
        }
        if (by_res) {
            snprintf(why, sizeof(why), "if '%.*s/*' is present, must not specify %s", (int)res_len,
                     rs, rs);
            ck_field_errors_add(errs, CK_FIELD_INVALID, fi, rs, true, "%s", why);
        }
        if (by_sub)
            ck_field_errors_add(errs, CK_FIELD_INVALID, fi, rs, true,
                                "if '*/%s' is present, must not specify %s", sub, rs);
    }
    list_text(list, text, sizeof(text));
    if (json_array_size(list) > 1 && double_wild)
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, text, false,
                            "if '*/*' is present, must not specify other resources");
    if (single_wild && plain)
        ck_field_errors_add(
            errs, CK_FIELD_INVALID, f, text, false,
            "if '*' is present, must not specify other resources without subresources");
}

void ck__validate_webhook_rule(const json_t *rule, const char *at, struct ck_field_errors *errs)
{
    static const char *const ops[] = {"*", "CONNECT", "CREATE", "DELETE", "UPDATE", NULL};
    static const char *const scopes[] = {"*", "Cluster", "Namespaced", NULL};
    const json_t *operations = json_object_get(rule, "operations");
    char f[192], fi[224], text[512];
    snprintf(f, sizeof(f), "%s.operations", at);
    if (json_array_size(operations) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
    if (json_array_size(operations) > 1 && list_has(operations, "*")) {
        list_text(operations, text, sizeof(text));
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, text, false,
                            "if '*' is present, must not specify other operations");
    }
    size_t i;
    const json_t *v;
    json_array_foreach(operations, i, v)
    {
        const char *op = json_string_value(v) ? json_string_value(v) : "";
        snprintf(fi, sizeof(fi), "%s[%zu]", f, i);
        if (!ck__str_in(op, ops))
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, fi, op, true,
                                "supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", "
                                "\"UPDATE\"");
    }
    check_wild_list(rule, "apiGroups", "API groups", at, errs);
    check_wild_list(rule, "apiVersions", "API versions", at, errs);
    json_array_foreach(json_object_get(rule, "apiVersions"), i, v)
    {
        snprintf(fi, sizeof(fi), "%s.apiVersions[%zu]", at, i);
        if (!json_string_value(v) || !*json_string_value(v))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, fi, NULL, false, NULL);
    }
    check_resources(json_object_get(rule, "resources"), at, errs);
    const char *scope = ck__str_at(rule, "scope");
    snprintf(f, sizeof(f), "%s.scope", at);
    if (scope && !ck__str_in(scope, scopes))
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, scope, true,
                            "supported values: \"*\", \"Cluster\", \"Namespaced\"");
}

/* ValidateWebhookURL with https forced: a URL the client can call, without user, query, fragment.
 */
void ck__validate_webhook_url(const char *url, const char *f, struct ck_field_errors *errs)
{
    static const char form[] = "; desired format: https://host[/path]";
    const char *colon = strstr(url, "://");
    char scheme[32] = "";
    if (colon && (size_t)(colon - url) < sizeof(scheme))
        snprintf(scheme, sizeof(scheme), "%.*s", (int)(colon - url), url);
    if (strcmp(scheme, "https") != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, scheme, true,
                            "'https' is the only allowed URL scheme%s", form);
    const char *authority = colon ? colon + 3 : url;
    size_t alen = strcspn(authority, "/?#");
    const char *at = memchr(authority, '@', alen);
    const char *host = at ? at + 1 : authority;
    size_t hlen = alen - (size_t)(host - authority);
    if (hlen == 0 || !colon)
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, "", true, "host must be specified%s", form);
    if (at)
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, NULL, false,
                            "user information is not permitted in the URL");
    const char *hash = strchr(url, '#');
    if (hash && hash[1])
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, hash + 1, true,
                            "fragments are not permitted in the URL");
    const char *query = strchr(url, '?');
    if (query && query[1] && (!hash || query < hash))
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, NULL, false,
                            "query parameters are not permitted in the URL");
}

void ck__validate_webhook_service(const json_t *svc, const char *at, struct ck_field_errors *errs)
{
    char f[192], v[32];
    const char *name = ck__str_at(svc, "name"), *ns = ck__str_at(svc, "namespace");
    const char *path = ck__str_at(svc, "path");
    if (!name || !*name) {
        snprintf(f, sizeof(f), "%s.name", at);
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, "service name is required");
    }
    if (!ns || !*ns) {
        snprintf(f, sizeof(f), "%s.namespace", at);
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "service namespace is required");
    }
    const json_t *port = json_object_get(svc, "port");
    if (port && (json_integer_value(port) < 1 || json_integer_value(port) > 65535)) {
        snprintf(f, sizeof(f), "%s.port", at);
        snprintf(v, sizeof(v), "%lld", (long long)json_integer_value(port));
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, v, false,
                            "port is not valid: must be between 1 and 65535, inclusive");
    }
    if (path && *path && strcmp(path, "/") != 0 && path[0] != '/') {
        snprintf(f, sizeof(f), "%s.path", at);
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, path, true, "must start with a '/'");
    }
}

void ck__validate_selector_member(const json_t *hook, const char *member, const char *at,
                                  struct ck_field_errors *errs)
{
    const json_t *sel = json_object_get(hook, member);
    struct ck_label_selector *ls = NULL;
    struct ck_err err = {0};
    char f[160];
    if (!sel)
        return;
    snprintf(f, sizeof(f), "%s.%s", at, member);
    if (ck_label_selector_from_object(sel, &ls, &err) < 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, NULL, false, "%s", err.msg);
    ck_label_selector_free(ls);
    ck_err_release(&err);
}

/* validateAdmissionReviewVersions, with a recognised version required (v1, v1beta1). */
static void check_review_versions(const json_t *hook, const char *at, struct ck_field_errors *errs)
{
    const json_t *list = json_object_get(hook, "admissionReviewVersions");
    char f[160], fi[192], text[512];
    snprintf(f, sizeof(f), "%s.admissionReviewVersions", at);
    if (json_array_size(list) == 0) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "must specify one of v1, v1beta1");
        return;
    }
    bool known = false;
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        const char *s = json_string_value(v) ? json_string_value(v) : "";
        snprintf(fi, sizeof(fi), "%s[%zu]", f, i);
        bool dup = false;
        for (size_t j = 0; j < i; j++)
            dup |= json_equal(json_array_get(list, j), v);
        if (dup) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, fi, s, true, "duplicate version");
            continue;
        }
        known |= strcmp(s, "v1") == 0 || strcmp(s, "v1beta1") == 0;
    }
    if (!known) {
        list_text(list, text, sizeof(text));
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, text, false,
                            "must include at least one of v1, v1beta1");
    }
}

static void check_hook(const json_t *hook, const char *at, bool mutating,
                       struct ck_field_errors *errs)
{
    static const char *const failure[] = {"Fail", "Ignore", NULL};
    static const char *const match[] = {"Equivalent", "Exact", NULL};
    static const char *const side[] = {"None", "NoneOnDryRun", NULL};
    static const char *const reinvocation[] = {"IfNeeded", "Never", NULL};
    char f[160];
    const char *name = ck__str_at(hook, "name");
    /* IsFullyQualifiedName: a DNS subdomain of at least three segments */
    snprintf(f, sizeof(f), "%s.name", at);
    if (!name || !*name) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
    } else {
        char trimmed[256];
        snprintf(trimmed, sizeof(trimmed), "%s", name);
        size_t len = strlen(trimmed);
        if (len && trimmed[len - 1] == '.')
            trimmed[len - 1] = '\0';
        if (ck_validate_dns1123_subdomain(trimmed, f, errs)) {
            int dots = 0;
            for (const char *p = trimmed; *p; p++)
                dots += *p == '.';
            if (dots < 2)
                ck_field_errors_add(errs, CK_FIELD_INVALID, f, trimmed, true,
                                    "should be a domain with at least three segments separated "
                                    "by dots");
        }
    }
    size_t i;
    const json_t *rule;
    json_array_foreach(json_object_get(hook, "rules"), i, rule)
    {
        char r[176];
        snprintf(r, sizeof(r), "%s.rules[%zu]", at, i);
        ck__validate_webhook_rule(rule, r, errs);
    }
    check_enum(hook, "failurePolicy", at, failure, "\"Fail\", \"Ignore\"", errs);
    check_enum(hook, "matchPolicy", at, match, "\"Equivalent\", \"Exact\"", errs);
    snprintf(f, sizeof(f), "%s.sideEffects", at);
    if (!ck__str_at(hook, "sideEffects"))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "must specify one of None, NoneOnDryRun");
    else
        check_enum(hook, "sideEffects", at, side, "\"None\", \"NoneOnDryRun\"", errs);
    const json_t *timeout = json_object_get(hook, "timeoutSeconds");
    if (json_is_integer(timeout) &&
        (json_integer_value(timeout) < 1 || json_integer_value(timeout) > 30)) {
        char v[32];
        snprintf(f, sizeof(f), "%s.timeoutSeconds", at);
        snprintf(v, sizeof(v), "%lld", (long long)json_integer_value(timeout));
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, v, false,
                            "the timeout value must be between 1 and 30 seconds");
    }
    ck__validate_selector_member(hook, "namespaceSelector", at, errs);
    ck__validate_selector_member(hook, "objectSelector", at, errs);
    ck__validate_match_conditions(json_object_get(hook, "matchConditions"), at, errs);
    if (mutating)
        check_enum(hook, "reinvocationPolicy", at, reinvocation, "\"IfNeeded\", \"Never\"", errs);
    const json_t *cc = json_object_get(hook, "clientConfig");
    const char *url = ck__str_at(cc, "url");
    const json_t *svc = json_object_get(cc, "service");
    if (!url == !json_is_object(svc)) {
        snprintf(f, sizeof(f), "%s.clientConfig", at);
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "exactly one of url or service is required");
    } else if (url) {
        snprintf(f, sizeof(f), "%s.clientConfig.url", at);
        ck__validate_webhook_url(url, f, errs);
    } else {
        snprintf(f, sizeof(f), "%s.clientConfig.service", at);
        ck__validate_webhook_service(svc, f, errs);
    }
    check_review_versions(hook, at, errs);
}

/*
 * An expression compiled as Kubernetes compiles it when the object is written
 * (validateCELCondition): a syntax error or an unknown function is Invalid at f.
 */
void ck__validate_cel_expression(const char *expr, const char *f, struct ck_field_errors *errs)
{
    struct ck_cel_program *prog = NULL;
    struct ck_err err = {0};
    if (ck_cel_compile(expr, strlen(expr), &prog, &err) < 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, expr, true, "compilation failed: %s",
                            ck_err_message(&err));
    ck_cel_program_free(prog);
    ck_err_release(&err);
}

/* strings.TrimSpace's emptiness: nothing but Go's ASCII white space. */
bool ck__is_blank(const char *s)
{
    for (; s && *s; s++)
        if (!strchr(" \t\n\v\f\r", *s))
            return false;
    return true;
}

void ck__validate_match_conditions(const json_t *list, const char *at, struct ck_field_errors *errs)
{
    char f[192], fi[240];
    snprintf(f, sizeof(f), "%s.matchConditions", at);
    if (json_array_size(list) > 64) {
        char n[32];
        snprintf(n, sizeof(n), "%zu", json_array_size(list));
        ck_field_errors_add(errs, CK_FIELD_TOO_MANY, f, n, false, "must have at most 64 items");
    }
    size_t i;
    const json_t *cond;
    json_array_foreach(list, i, cond)
    {
        const char *expr = ck__str_at(cond, "expression");
        const char *name = ck__str_at(cond, "name");
        snprintf(fi, sizeof(fi), "%s[%zu].expression", f, i);
        if (ck__is_blank(expr))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, fi, NULL, false, NULL);
        else
            ck__validate_cel_expression(expr, fi, errs);
        snprintf(fi, sizeof(fi), "%s[%zu].name", f, i);
        if (!name || !*name) {
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, fi, NULL, false, NULL);
            continue;
        }
        ck_validate_qualified_name(name, fi, errs);
        for (size_t j = 0; j < i; j++) {
            const char *other = ck__str_at(json_array_get(list, j), "name");
            if (other && strcmp(other, name) == 0) {
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, fi, name, true, NULL);
                break;
            }
        }
    }
}

static void validate_webhooks(const json_t *obj, bool mutating, struct ck_field_errors *errs)
{
    const json_t *hooks = json_object_get(obj, "webhooks");
    size_t i;
    const json_t *hook;
    json_array_foreach(hooks, i, hook)
    {
        char at[64];
        snprintf(at, sizeof(at), "webhooks[%zu]", i);
        check_hook(hook, at, mutating, errs);
        const char *name = ck__str_at(hook, "name");
        if (!name || !*name)
            continue;
        for (size_t j = 0; j < i; j++) {
            const char *other = ck__str_at(json_array_get(hooks, j), "name");
            if (other && strcmp(other, name) == 0) {
                char f[80];
                snprintf(f, sizeof(f), "%s.name", at);
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, f, name, true, NULL);
                break;
            }
        }
    }
}

void ck__validate_mutating_webhooks(const json_t *obj, const json_t *old,
                                    struct ck_field_errors *errs)
{
    (void)old; /* an update is validated as a create (docs/differences.md) */
    validate_webhooks(obj, true, errs);
}

void ck__validate_validating_webhooks(const json_t *obj, const json_t *old,
                                      struct ck_field_errors *errs)
{
    (void)old;
    validate_webhooks(obj, false, errs);
}

const struct ck_table_column ck__webhook_columns[CK__WEBHOOK_COLUMNS] = {
    CK__NAME_COLUMN(0),
    CK__COMPUTED_COLUMN("Webhooks", "integer",
                        "Webhooks indicates the number of webhooks registered in this "
                        "configuration.",
                        0),
    CK__AGE_COLUMN,
};

void ck__cells_webhooks(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    cells[1] = json_integer((json_int_t)json_array_size(json_object_get(obj, "webhooks")));
}
