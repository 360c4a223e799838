/*
 * validatingadmissionpolicybinding.c - the ValidatingAdmissionPolicyBinding kind
 * (admissionregistration.k8s.io/v1): binds a ValidatingAdmissionPolicy to the requests
 * its matchResources select, with its parameters (paramRef) and what a failed
 * validation does (validationActions: Deny, Warn, Audit).
 *
 * Mirrors Kubernetes 1.32's
 * pkg/registry/admissionregistration/validatingadmissionpolicybinding: cluster-scoped,
 * no status, the generation counts changes of the spec. Validation is admissionpolicy.c's.
 * Kubernetes also refuses a binding whose writer may not read the policy's paramKind
 * (an authorization check at create); ckube does not (docs/differences.md).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_admissionpolicy.c.
 */
#include "../internal.h"

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    CK__AGE_COLUMN,
};

static const char *const categories[] = {"api-extensions", NULL};

const struct ck_kind ck__kind_validatingadmissionpolicybinding = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "ValidatingAdmissionPolicyBinding",
    .list_kind = "ValidatingAdmissionPolicyBindingList",
    .resource = "validatingadmissionpolicybindings",
    .singular = "validatingadmissionpolicybinding",
    .categories = categories,
    .namespaced = false,
    .has_generation = true,
    .configures_admission = true,
    .schema = "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
    .columns = columns,
    .n_columns = CK__COUNT(columns),
    .validate = ck__validate_validating_admission_policy_binding,
};
