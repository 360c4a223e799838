/*
 * clusterrole.c - the ClusterRole kind (rbac.authorization.k8s.io/v1): a
 * cluster-wide set of permissions, usable in one namespace through a
 * RoleBinding. With an aggregationRule its rules are the union of those of
 * the ClusterRoles it selects (libckube-auth's ck_rbac_aggregate()).
 *
 * Mirrors Kubernetes' pkg/registry/rbac/clusterrole: names are path
 * segments (system:kube-scheduler is valid), every rule is validated as
 * ValidatePolicyRule does, an aggregationRule needs a valid selector, and
 * kubectl prints NAME and CREATED AT. The escalation check on writes needs
 * the requesting user and the RBAC policy, so it lives with the authorizer
 * in libckube-auth (ck_rbac_check_role_write()), not here.
 *
 * Tests: tests/auth/test_kinds.c, tests/api/test_kinds.c.
 * Threading: the descriptor is static and immutable; the hooks are pure.
 */
#include <stdio.h>

#include "../internal.h"

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    ck__rbac_validate_rules(json_object_get(obj, "rules"), false, errs);
    const json_t *agg = json_object_get(obj, "aggregationRule");
    if (!agg || json_is_null(agg))
        return;
    const json_t *selectors = json_object_get(agg, "clusterRoleSelectors");
    if (!json_array_size(selectors))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "aggregationRule.clusterRoleSelectors", NULL,
                            false,
                            "at least one clusterRoleSelector required if aggregationRule "
                            "is non-nil");
    size_t i;
    const json_t *sel;
    json_array_foreach(selectors, i, sel)
    {
        struct ck_label_selector *ls = NULL;
        struct ck_err err = {0};
        if (ck_label_selector_from_object(sel, &ls, &err) == 0) {
            ck_label_selector_free(ls);
            continue;
        }
        char path[64];
        snprintf(path, sizeof(path), "aggregationRule.clusterRoleSelectors[%zu]", i);
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, NULL, false, "%s", err.msg);
    }
}

const struct ck_kind ck__kind_clusterrole = {
    .group = "rbac.authorization.k8s.io",
    .version = "v1",
    .kind = "ClusterRole",
    .list_kind = "ClusterRoleList",
    .resource = "clusterroles",
    .singular = "clusterrole",
    .namespaced = false,
    .role = CK_KIND_ROLE_RBAC_CLUSTER_ROLE,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .schema = "io.k8s.api.rbac.v1.ClusterRole",
    CK__KIND_COLUMNS(ck__rbac_role_columns),
    .cells = ck__rbac_role_cells,
    .validate = validate,
};
