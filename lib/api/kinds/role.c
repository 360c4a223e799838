/*
 * role.c - the Role kind (rbac.authorization.k8s.io/v1): a namespaced set
 * of permissions.
 *
 * Mirrors Kubernetes' pkg/registry/rbac/role: names are path segments
 * (system:kube-scheduler is valid), every rule is validated as
 * ValidatePolicyRule does (no non-resource URLs in a namespace), and kubectl
 * prints NAME and CREATED AT. The escalation check on writes needs the
 * requesting user and the RBAC policy, so it lives with the authorizer in
 * libckube-auth (ck_rbac_check_role_write()), not here.
 *
 * Tests: tests/auth/test_kinds.c, tests/api/test_kinds.c.
 * Threading: the descriptor is static and immutable; the hooks are pure.
 */
#include "../internal.h"

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    ck__rbac_validate_rules(json_object_get(obj, "rules"), true, errs);
}

const struct ck_kind ck__kind_role = {
    .group = "rbac.authorization.k8s.io",
    .version = "v1",
    .kind = "Role",
    .list_kind = "RoleList",
    .resource = "roles",
    .singular = "role",
    .namespaced = true,
    .role = CK_KIND_ROLE_RBAC_ROLE,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .schema = "io.k8s.api.rbac.v1.Role",
    CK__KIND_COLUMNS(ck__rbac_role_columns),
    .cells = ck__rbac_role_cells,
    .validate = validate,
};
