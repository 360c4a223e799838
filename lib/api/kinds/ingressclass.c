/*
 * ingressclass.c - the IngressClass kind (networking.k8s.io/v1): which
 * controller implements the Ingresses that name the class.
 *
 * Mirrors Kubernetes' pkg/registry/networking/ingressclass/strategy.go and
 * ValidateIngressClass in pkg/apis/networking/validation: cluster-scoped, with
 * a generation; spec.controller is required, a domain-prefixed path of at most
 * 250 characters, and never changes; spec.parameters names a kind and an
 * object, with scope Cluster (the default, from the schema) or Namespace (then
 * with a namespace). The printer shows NAME, CONTROLLER, PARAMETERS and AGE as
 * kube-apiserver's table does (parameters as Kind.apiGroup/name).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_networking.c and tests/e2e/test_kinds.sh.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

/* apimachinery's IsPathSegmentName: no "." or "..", no "/" or "%". */
void ck__validate_path_segment(const char *value, const char *path, struct ck_field_errors *errs)
{
    if (strcmp(value, ".") == 0 || strcmp(value, "..") == 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, true, "may not be '%s'", value);
    if (strchr(value, '/'))
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, true, "may not contain '/'");
    if (strchr(value, '%'))
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, true, "may not contain '%%'");
}

static void validate_parameters(const json_t *params, struct ck_field_errors *errs)
{
    if (!json_is_object(params))
        return;
    const char *group = json_string_value(json_object_get(params, "apiGroup"));
    const char *kind = json_string_value(json_object_get(params, "kind"));
    const char *name = json_string_value(json_object_get(params, "name"));
    const char *scope = json_string_value(json_object_get(params, "scope"));
    const json_t *ns = json_object_get(params, "namespace");
    if (group)
        ck_validate_dns1123_subdomain(group, "spec.parameters.apiGroup", errs);
    if (!kind || !*kind)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.parameters.kind", NULL, false, NULL);
    else
        ck__validate_path_segment(kind, "spec.parameters.kind", errs);
    if (!name || !*name)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.parameters.name", NULL, false, NULL);
    else
        ck__validate_path_segment(name, "spec.parameters.name", errs);
    if (!scope) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.parameters.scope", NULL, false, NULL);
        return;
    }
    if (strcmp(scope, "Cluster") != 0 && strcmp(scope, "Namespace") != 0) {
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.parameters.scope", scope, true,
                            "supported values: \"Cluster\", \"Namespace\"");
    } else if (strcmp(scope, "Namespace") == 0) {
        if (!ns)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.parameters.namespace", NULL, false,
                                "`parameters.scope` is set to 'Namespace'");
        else
            ck_validate_dns1123_label(json_string_value(ns), "spec.parameters.namespace", errs);
    } else if (ns) {
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.parameters.namespace", NULL, false,
                            "`parameters.scope` is set to 'Cluster'");
    }
}

/* apimachinery's IsDomainPrefixedPath: a DNS subdomain, then a path of
 * [A-Za-z0-9/-._~%!$&'()*+,;=:]. */
static void validate_controller(const char *c, struct ck_field_errors *errs)
{
    const char *slash = strchr(c, '/');
    if (!slash) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.controller", c, true,
                            "must be a domain-prefixed path (such as \"acme.io/foo\")");
        return;
    }
    char host[256];
    size_t n = (size_t)(slash - c);
    if (n >= sizeof(host))
        n = sizeof(host) - 1;
    memcpy(host, c, n);
    host[n] = 0;
    struct ck_field_errors local = {0};
    if (!ck_validate_dns1123_subdomain(host, "spec.controller", &local))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.controller", host, true, "%s",
                            local.len ? local.items[0].detail : "invalid domain");
    ck_field_errors_release(&local);
    for (const char *p = slash + 1; *p; p++) {
        if (!strchr(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/-._~%!$&'()*+,;=:",
                *p)) {
            ck_field_errors_add(
                errs, CK_FIELD_INVALID, "spec.controller", slash + 1, true,
                "Invalid path: must match the regex [A-Za-z0-9/\\-._~%%!$&'()*+,;=:]+");
            break;
        }
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const char *controller = ck__str_at(obj, "spec.controller");
    if (!controller || !*controller) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.controller", NULL, false, NULL);
    } else {
        if (strlen(controller) > 250)
            ck_field_errors_add(errs, CK_FIELD_TOO_LONG, "spec.controller", NULL, false,
                                "must have at most 250 bytes");
        validate_controller(controller, errs);
    }
    validate_parameters(ck__json_path(obj, "spec.parameters"), errs);
    if (old) {
        const char *was = ck__str_at(old, "spec.controller");
        if (strcmp(controller ? controller : "", was ? was : "") != 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.controller",
                                controller ? controller : "", true, "field is immutable");
    }
}

enum {
    COL_NAME,
    COL_CONTROLLER,
    COL_PARAMETERS,
    COL_AGE,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const json_t *p = ck__json_path(obj, "spec.parameters");
    if (!json_is_object(p)) {
        cells[COL_PARAMETERS] = json_string("<none>");
        return;
    }
    const char *group = json_string_value(json_object_get(p, "apiGroup"));
    char buf[768];
    snprintf(buf, sizeof(buf), "%s%s%s/%s", ck__or_none(ck__str_at(p, "kind")), group ? "." : "",
             group ? group : "", ck__or_none(ck__str_at(p, "name")));
    cells[COL_PARAMETERS] = json_string(buf);
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_CONTROLLER] = {"Controller", "string", "",
                        "Controller that is responsible for handling this class", 0,
                        ".spec.controller", CK_CELL_ABSENT_EMPTY, false},
    [COL_PARAMETERS] = CK__COMPUTED_COLUMN(
        "Parameters", "string", "A reference to a resource with additional parameters", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_ingressclass = {
    .group = "networking.k8s.io",
    .version = "v1",
    .kind = "IngressClass",
    .list_kind = "IngressClassList",
    .resource = "ingressclasses",
    .singular = "ingressclass",
    .namespaced = false,
    .has_generation = true,
    .admission_lists_all = true,
    .schema = "io.k8s.api.networking.v1.IngressClass",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
