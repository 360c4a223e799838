/*
 * clusterrolebinding.c - the ClusterRoleBinding kind
 * (rbac.authorization.k8s.io/v1): grants a ClusterRole to users, groups and
 * ServiceAccounts everywhere.
 *
 * Mirrors Kubernetes' pkg/registry/rbac/clusterrolebinding: roleRef.apiGroup
 * and the apiGroup of User and Group subjects default to
 * rbac.authorization.k8s.io; roleRef must name a ClusterRole and never
 * changes once created ("cannot change roleRef"); subjects are User, Group
 * or ServiceAccount, an account always with its namespace. kubectl prints
 * NAME, ROLE (Kind/name) and AGE, and with -o wide USERS, GROUPS and
 * SERVICEACCOUNTS. Whether the writer may grant that role at all (the
 * bind/escalate check) is libckube-auth's ck_rbac_check_binding_write().
 *
 * Tests: tests/auth/test_kinds.c, tests/api/test_kinds.c.
 * Threading: the descriptor is static and immutable; the hooks are pure.
 */
#include "../internal.h"

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    ck__rbac_validate_binding(obj, old, false, errs);
}

const struct ck_kind ck__kind_clusterrolebinding = {
    .group = "rbac.authorization.k8s.io",
    .version = "v1",
    .kind = "ClusterRoleBinding",
    .list_kind = "ClusterRoleBindingList",
    .resource = "clusterrolebindings",
    .singular = "clusterrolebinding",
    .namespaced = false,
    .role = CK_KIND_ROLE_RBAC_CLUSTER_ROLE_BINDING,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .schema = "io.k8s.api.rbac.v1.ClusterRoleBinding",
    CK__KIND_COLUMNS(ck__rbac_binding_columns),
    .cells = ck__rbac_binding_cells,
    .defaults = ck__rbac_binding_defaults,
    .validate = validate,
};
