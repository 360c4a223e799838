/*
 * rbac.c - what the four rbac.authorization.k8s.io/v1 kinds share: rule and
 * binding validation, binding defaults, and the printer cells of roles and
 * bindings.
 *
 * Mirrors Kubernetes' pkg/apis/rbac/validation (ValidatePolicyRule,
 * ValidateRoleBindingSubject, the roleRef checks and "cannot change
 * roleRef"), pkg/apis/rbac/v1 defaults (roleRef.apiGroup and a subject's
 * apiGroup by kind) and pkg/printers/internalversion's printRole and
 * printRoleBinding (CREATED AT as RFC 3339; ROLE as Kind/name; USERS,
 * GROUPS and SERVICEACCOUNTS comma-joined, accounts as namespace/name).
 *
 * Tests: tests/auth/test_kinds.c, tests/api/test_kinds.c.
 * Threading: pure functions.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

void ck__go_string_slice(const json_t *arr, char *buf, size_t size)
{
    size_t off = (size_t)snprintf(buf, size, "[]string{");
    size_t i;
    const json_t *s;
    json_array_foreach(arr, i, s)
    {
        if (off >= size)
            break;
        off += (size_t)snprintf(buf + off, size - off, "%s\"%s\"", i ? ", " : "",
                                json_is_string(s) ? json_string_value(s) : "");
    }
    if (off < size)
        snprintf(buf + off, size - off, "}");
}

void ck__rbac_validate_rules(const json_t *rules, bool namespaced, struct ck_field_errors *errs)
{
    size_t i;
    const json_t *r;
    char path[64], value[256];
    json_array_foreach(rules, i, r)
    {
        if (!json_array_size(json_object_get(r, "verbs"))) {
            snprintf(path, sizeof(path), "rules[%zu].verbs", i);
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false,
                                "verbs must contain at least one value");
        }
        const json_t *urls = json_object_get(r, "nonResourceURLs");
        if (json_array_size(urls)) {
            snprintf(path, sizeof(path), "rules[%zu].nonResourceURLs", i);
            ck__go_string_slice(urls, value, sizeof(value));
            if (namespaced)
                ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, false,
                                    "namespaced rules cannot apply to non-resource URLs");
            if (json_array_size(json_object_get(r, "apiGroups")) ||
                json_array_size(json_object_get(r, "resources")) ||
                json_array_size(json_object_get(r, "resourceNames")))
                ck_field_errors_add(
                    errs, CK_FIELD_INVALID, path, value, false,
                    "rules cannot apply to both regular resources and non-resource URLs");
            continue;
        }
        if (!json_array_size(json_object_get(r, "apiGroups"))) {
            snprintf(path, sizeof(path), "rules[%zu].apiGroups", i);
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false,
                                "resource rules must supply at least one api group");
        }
        if (!json_array_size(json_object_get(r, "resources"))) {
            snprintf(path, sizeof(path), "rules[%zu].resources", i);
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false,
                                "resource rules must supply at least one resource");
        }
    }
}

int ck__rbac_binding_defaults(json_t *obj)
{
    /* roleRef is a struct in Go: a body without one still gets its apiGroup */
    json_t *ref = ck__object_at(obj, "roleRef");
    const char *g = json_string_value(json_object_get(ref, "apiGroup"));
    if ((!g || !*g) && json_object_set_new(ref, "apiGroup", json_string(RBAC_GROUP)) < 0)
        return CK_ENOMEM;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(obj, "subjects"), i, s)
    {
        const char *kind = json_string_value(json_object_get(s, "kind"));
        const char *sg = json_string_value(json_object_get(s, "apiGroup"));
        if (!json_is_object(s) || (sg && *sg) || !kind)
            continue;
        if ((strcmp(kind, "User") == 0 || strcmp(kind, "Group") == 0) &&
            json_object_set_new(s, "apiGroup", json_string(RBAC_GROUP)) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

static bool is_path_segment(const char *name)
{
    return strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && !strchr(name, '/') &&
           !strchr(name, '%');
}

static const char *str(const json_t *obj, const char *member)
{
    const char *s = json_string_value(json_object_get(obj, member));
    return s ? s : "";
}

void ck__rbac_validate_binding(const json_t *obj, const json_t *old, bool namespaced,
                               struct ck_field_errors *errs)
{
    const json_t *ref = json_object_get(obj, "roleRef");
    const char *group = str(ref, "apiGroup"), *kind = str(ref, "kind"), *name = str(ref, "name");
    if (strcmp(group, RBAC_GROUP) != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "roleRef.apiGroup", group, true,
                            "supported values: \"" RBAC_GROUP "\"");
    if (namespaced && strcmp(kind, "Role") != 0 && strcmp(kind, "ClusterRole") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "roleRef.kind", kind, true,
                            "supported values: \"Role\", \"ClusterRole\"");
    if (!namespaced && strcmp(kind, "ClusterRole") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "roleRef.kind", kind, true,
                            "supported values: \"ClusterRole\"");
    if (!*name)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "roleRef.name", NULL, false, NULL);
    else if (!is_path_segment(name))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "roleRef.name", name, true,
                            "may not be '.' or '..' or contain '/' or '%%'");
    size_t i;
    const json_t *s;
    char path[64];
    json_array_foreach(json_object_get(obj, "subjects"), i, s)
    {
        const char *sname = str(s, "name"), *skind = str(s, "kind"), *sgroup = str(s, "apiGroup");
        if (!*sname) {
            snprintf(path, sizeof(path), "subjects[%zu].name", i);
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, NULL);
        }
        if (strcmp(skind, "ServiceAccount") == 0) {
            if (*sname) {
                snprintf(path, sizeof(path), "subjects[%zu].name", i);
                ck_validate_dns1123_subdomain(sname, path, errs);
            }
            if (*sgroup) {
                snprintf(path, sizeof(path), "subjects[%zu].apiGroup", i);
                ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, path, sgroup, true,
                                    "supported values: \"\"");
            }
            if (!namespaced && !*str(s, "namespace")) {
                snprintf(path, sizeof(path), "subjects[%zu].namespace", i);
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, NULL);
            }
        } else if (strcmp(skind, "User") == 0 || strcmp(skind, "Group") == 0) {
            if (strcmp(sgroup, RBAC_GROUP) != 0) {
                snprintf(path, sizeof(path), "subjects[%zu].apiGroup", i);
                ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, path, sgroup, true,
                                    "supported values: \"" RBAC_GROUP "\"");
            }
        } else {
            snprintf(path, sizeof(path), "subjects[%zu].kind", i);
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, path, skind, true,
                                "supported values: \"ServiceAccount\", \"User\", \"Group\"");
        }
    }
    const json_t *old_ref = old ? json_object_get(old, "roleRef") : NULL;
    if (old && !json_equal(ref, old_ref)) {
        char value[512];
        snprintf(value, sizeof(value), "rbac.RoleRef{APIGroup:\"%s\", Kind:\"%s\", Name:\"%s\"}",
                 group, kind, name);
        ck_field_errors_add(errs, CK_FIELD_INVALID, "roleRef", value, false,
                            "cannot change roleRef");
    }
}

void ck__rbac_role_cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const char *ts = ck__str_at(obj, "metadata.creationTimestamp");
    cells[1] = ts ? json_string(ts) : json_null();
}

/* Appends s to buf (comma-separated). */
static void join(char *buf, size_t size, const char *s)
{
    size_t l = strlen(buf);
    if (l < size)
        snprintf(buf + l, size - l, "%s%s", l ? ", " : "", s);
}

void ck__rbac_binding_cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    char role[300], users[1024] = "", groups[1024] = "", sas[1024] = "", sa[300];
    snprintf(role, sizeof(role), "%s/%s", str(json_object_get(obj, "roleRef"), "kind"),
             str(json_object_get(obj, "roleRef"), "name"));
    cells[CK__RBAC_COL_ROLE] = json_string(role);
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(obj, "subjects"), i, s)
    {
        const char *kind = str(s, "kind");
        if (strcmp(kind, "User") == 0) {
            join(users, sizeof(users), str(s, "name"));
        } else if (strcmp(kind, "Group") == 0) {
            join(groups, sizeof(groups), str(s, "name"));
        } else if (strcmp(kind, "ServiceAccount") == 0) {
            snprintf(sa, sizeof(sa), "%s/%s", str(s, "namespace"), str(s, "name"));
            join(sas, sizeof(sas), sa);
        }
    }
    cells[CK__RBAC_COL_USERS] = json_string(users);
    cells[CK__RBAC_COL_GROUPS] = json_string(groups);
    cells[CK__RBAC_COL_SERVICEACCOUNTS] = json_string(sas);
}

const struct ck_table_column ck__rbac_role_columns[2] = {
    CK__NAME_COLUMN(0),
    CK__COMPUTED_COLUMN("Created At", "date", CK__AGE_DOC, 0),
};

const struct ck_table_column ck__rbac_binding_columns[6] = {
    [CK__RBAC_COL_NAME] = CK__NAME_COLUMN(0),
    [CK__RBAC_COL_ROLE] =
        CK__COMPUTED_COLUMN("Role", "string", "The role this binding grants, as Kind/name.", 0),
    [CK__RBAC_COL_AGE] = CK__AGE_COLUMN,
    [CK__RBAC_COL_USERS] = CK__COMPUTED_COLUMN("Users", "string", "Users in the binding.", 1),
    [CK__RBAC_COL_GROUPS] = CK__COMPUTED_COLUMN("Groups", "string", "Groups in the binding.", 1),
    [CK__RBAC_COL_SERVICEACCOUNTS] =
        CK__COMPUTED_COLUMN("ServiceAccounts", "string", "ServiceAccounts in the binding.", 1),
};
