/*
 * rolebinding.c - the RoleBinding kind (rbac.authorization.k8s.io/v1):
 * grants a Role or a ClusterRole to users, groups and ServiceAccounts
 * within its namespace.
 *
 * Mirrors Kubernetes' pkg/registry/rbac/rolebinding: roleRef.apiGroup and
 * the apiGroup of User and Group subjects default to
 * rbac.authorization.k8s.io; roleRef must name a Role or ClusterRole and
 * never changes once created ("cannot change roleRef"); subjects are User,
 * Group or ServiceAccount (an account without namespace is one of the
 * binding's). kubectl prints NAME, ROLE (Kind/name) and AGE, and with -o
 * wide USERS, GROUPS and SERVICEACCOUNTS. Whether the writer may grant that
 * role at all (the bind/escalate check) is libckube-auth's
 * ck_rbac_check_binding_write().
 *
 * Tests: tests/auth/test_kinds.c, tests/api/test_kinds.c.
 * Threading: the descriptor is static and immutable; the hooks are pure.
 */
#include "../internal.h"

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    ck__rbac_validate_binding(obj, old, true, errs);
}

const struct ck_kind ck__kind_rolebinding = {
    .group = "rbac.authorization.k8s.io",
    .version = "v1",
    .kind = "RoleBinding",
    .list_kind = "RoleBindingList",
    .resource = "rolebindings",
    .singular = "rolebinding",
    .namespaced = true,
    .role = CK_KIND_ROLE_RBAC_ROLE_BINDING,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .schema = "io.k8s.api.rbac.v1.RoleBinding",
    CK__KIND_COLUMNS(ck__rbac_binding_columns),
    .cells = ck__rbac_binding_cells,
    .defaults = ck__rbac_binding_defaults,
    .validate = validate,
};
